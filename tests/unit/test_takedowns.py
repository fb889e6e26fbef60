"""Hide and unhide (issue 13 slice 6) against a brute-force truth: the real record_views, aggregator (Lambda's
delivery model) and snapshot job on the in-memory stores, with random interleavings of views, drains, refreshes,
hides and unhides, on the all-time board and a day period."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.domain.items.records import DeletedItem
from shardboard.domain.items.taken_down import TakenDown
from shardboard.domain.periods import ALL, DAY, bucket_of, from_epoch
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.head import Head, rows
from shardboard.domain.publishing.snapshot import RefreshRun, leaderboard_json
from shardboard.domain.reading.pages import NotRanked, around, leaderboard_page
from shardboard.domain.reading.ranks import lookup_ranks
from shardboard.services.snapshots import refresh_changed
from shardboard.services.takedowns import NothingToTakeDown, delete, hide, unhide, without
from shardboard_tools.bench.designs import ShardboardDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity import CapacityEmulator, VirtualClock
from tests.conftest import examples
from tests.heads import head_of_pairs
from tests.unit.test_taken_down import past_the_listing_limit


class World:
    """The pipeline, the items table and the truth: every view recorded, and who is hidden."""

    def __init__(self, top_n: int, spare: int, board_shards: int, batch_size: int, depth: int = 0) -> None:
        workload = Workload(
            top_n=top_n,
            gsi_shards=board_shards,
            write_shards=3,
            batch_size=batch_size,
            periods=(DAY,),
            rank_depth=depth,
        )
        self.design = ShardboardDesign(workload, CapacityEmulator(VirtualClock()))
        self.design.settings = dataclasses.replace(self.design.settings, snapshot_spare=spare)
        self.catalog = self.design.items  # the adapter on the design's engine
        self.counts: Counter[str] = Counter()
        self.hidden: set[str] = set()

    @property
    def config(self):
        return self.design.settings

    @property
    def moment(self):
        return from_epoch(self.design._epoch())

    def periods(self) -> list[PeriodKey]:
        board = self.config.board
        return [PeriodKey(board, ALL, ALL), PeriodKey(board, DAY, bucket_of(DAY, self.moment))]

    def heads(self) -> dict[PeriodKey, Head]:
        found = {period: self.design.board.get_snapshot(period, consistent=True) for period in self.periods()}
        return {period: head for period, head in found.items() if head is not None}

    def refresh(self) -> RefreshRun:
        """The snapshot job as the handler runs it: every gather drops the hidden and the deleted ids."""
        dropped = TakenDown.read(self.catalog)
        return refresh_changed(self.design.board, self.config, always=self.periods()[:1], hidden=dropped)

    def aggregated(self) -> dict[str, int]:
        """What the aggregates hold now (all time; the day's count is the same: the run stays within one day)."""
        return {item: views for item, (views, _) in self.design.board.scan_aggregates().items()}

    def keyed(self, period: PeriodKey, depth: int) -> bool:
        """Whether the best ``depth`` visible items are all at or above the period's published T, so all keyed in
        the sparse index and a gather sees them. T is the (N+R)-th best visible when published; more than R hides
        above it break this until views raise the visible items (the limit the report and README name)."""
        state = self.design.board.thresholds([period]).get(period)
        threshold = state.threshold if state else 0
        return all(views >= threshold for _, views in self.best_visible(depth))

    def best_visible(self, depth: int) -> list[tuple[str, int]]:
        visible = {item: views for item, views in self.aggregated().items() if item not in self.hidden}
        return [(i, v) for i, v in sorted(visible.items(), key=lambda pair: (-pair[1], pair[0]))[:depth]]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("view"), st.integers(0, 30)),
        st.tuples(st.just("drain"), st.just(0)),
        st.tuples(st.just("snapshot"), st.just(0)),
        st.tuples(st.just("hide"), st.integers(0, 8)),
        st.tuples(st.just("unhide"), st.integers(0, 8)),
    ),
    min_size=10,
    max_size=120,
)


def item_of(value: int) -> str:
    return f"i{value % 6 if value % 3 else value}"  # a few hot items and a long tail


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=steps,
    top_n=st.integers(1, 4),
    spare=st.integers(0, 3),
    board_shards=st.integers(1, 3),
    batch_size=st.integers(1, 7),
    depth=st.sampled_from([0, 12]),
    per_id=st.booleans(),
)
def test_hide_and_unhide_keep_every_board_exact_and_full(  # noqa: PLR0917 - one parameter per strategy
    steps, top_n, spare, board_shards, batch_size, depth, per_id
):
    # Given the pipeline (with or without ranked versions to depth D) and a random interleaving of views, drains,
    # refreshes, hides and unhides; every reader of the takedowns lists them whole, or (``per_id``: as on a site with
    # more takedowns than a listing reads) asks about the ids at hand, one marker each
    world = World(top_n, spare, board_shards, batch_size, depth)
    with past_the_listing_limit(per_id):
        takedowns_keep_every_board_exact(world, steps, top_n, spare)


def takedowns_keep_every_board_exact(world: World, steps, top_n: int, spare: int) -> None:
    for action, value in steps:
        item = item_of(value)
        if action == "view":
            world.design.view(item)
            world.counts[item] += 1
            world.design.settle()
        elif action == "drain":
            world.design.settle(final=True)
        else:
            {"snapshot": refreshed, "hide": hidden, "unhide": unhidden}[action](world, item, top_n, spare)
        assert world.catalog.hidden() == frozenset(world.hidden)
        ranked_reads_skip_the_hidden(world)
    # When the stream is drained and the job runs
    world.design.settle(final=True)
    world.refresh()
    # Then hidden items kept counting exactly, and every head is the exact top N of the visible counts
    assert world.aggregated() == dict(world.counts)
    visible = sorted(((i, v) for i, v in world.counts.items() if i not in world.hidden), key=lambda p: (-p[1], p[0]))
    for period, head in world.heads().items():
        assert world.hidden.isdisjoint(entry.id for entry in head.items + head.spare)
        if world.keyed(period, top_n):
            assert list(head.items) == visible[:top_n]


def ranked_reads_skip_the_hidden(world: World) -> None:
    """Rank, around-me and pages of every head's ranked version never show a hidden item, and show every other
    item of the version, in its order (an unhidden item's position came back)."""
    board, config = world.design.board, world.config
    for period, head in world.heads().items():
        block = head.rank
        if block is None:
            continue
        stored = [
            row.id for page in board.get_rank_pages(period, block.rv, range(len(block.pages))).values() for row in page
        ]
        depth = config.rank_depth_of(period.board)
        now = head.generated_at
        _, page = leaderboard_page(board, config.policy, period, offset="0", limit=str(depth), cursor="", now=now)
        assert [entry.id for entry in page.entries] == [item for item in stored if item not in world.hidden]
        for answer in lookup_ranks(board, config.policy, period, head, sorted(world.hidden), catalog=world.catalog):
            assert answer.rank is None
            if answer.id in stored:
                assert answer.source == "hidden"
                with pytest.raises(NotRanked, match="hidden"):
                    around(board, period, head, answer.id, k=2, catalog=world.catalog)


def refreshed(world: World, _: str, top_n: int, spare: int) -> None:
    """The job runs: each head is the exact top N+R of the visible aggregates, the top N shown; every head the job
    proves exact is (all time with ranked versions always is: the deep tier makes up for hides above T)."""
    run = world.refresh()
    for period, result in run.results.items():
        assert result.proven or (period.kind != ALL or not world.config.ranked_versions(period.board))
        if result.proven:
            assert list(result.snapshot.items + result.snapshot.spare) == world.best_visible(top_n + spare)
    for period, head in world.heads().items():
        if world.keyed(period, top_n + spare):
            assert list(head.items + head.spare) == world.best_visible(top_n + spare)
        # (the public document never shows the spares)
        shown = [(r["id"], r["views"]) for r in leaderboard_json(head)["items"]]
        assert shown == list(head.items)
        if world.keyed(period, top_n):
            assert shown == world.best_visible(top_n)


def hidden(world: World, item: str, top_n: int, _: int) -> None:
    """A hide: the item leaves every head at once, each refilled from its spares to a full N (or, out of spares,
    gathered again); an id with no views and no record is refused and nothing is written."""
    before = world.heads()
    if item not in world.aggregated() and world.catalog.get(item) is None:
        with pytest.raises(NothingToTakeDown):
            hide(world.catalog, world.design.board, world.config, item, by="t", reason="", at=world.moment)
        return
    done = hide(world.catalog, world.design.board, world.config, item, by="t", reason="spam", at=world.moment)
    assert done.changed == (item not in world.hidden)
    world.hidden.add(item)
    for period, head in world.heads().items():
        assert item not in [entry.id for entry in head.items + head.spare]
        old = before[period]
        refill = [e for e in old.items + old.spare if e.id != item]
        if len(refill) == len(old.items + old.spare):
            # A head without the item keeps its entries; only its ranked version (deeper than N + R) may have held
            # the item, and then gained the hide event in the same put.
            assert dataclasses.replace(head, version=0, rank=None) == dataclasses.replace(old, version=0, rank=None)
            if head.version != old.version:
                assert head.rank is not None
                assert head.rank.events[-1][:2] == ("hide", item)
        elif len(refill) >= top_n:
            assert list(head.items) == refill[:top_n]
        elif world.keyed(period, top_n):
            assert list(head.items) == world.best_visible(top_n)


def unhidden(world: World, item: str, top_n: int, spare: int) -> None:
    """An unhide: every head is gathered again at once, the item back where its counts put it; an item that is
    not hidden changes nothing (the heads are checked again: an unhide cut short is finished by a repeat); an id
    with no views and no record is refused."""
    if item not in world.aggregated() and world.catalog.get(item) is None:
        with pytest.raises(NothingToTakeDown, match="no views and was never created"):
            unhide(world.catalog, world.design.board, world.config, item, by="t", reason="", at=world.moment)
        return
    done = unhide(world.catalog, world.design.board, world.config, item, by="t", reason="ok", at=world.moment)
    assert done.changed == (item in world.hidden)
    world.hidden.discard(item)
    for period, head in world.heads().items():
        if world.keyed(period, top_n + spare):
            assert list(head.items + head.spare) == world.best_visible(top_n + spare)
        assert world.hidden.isdisjoint(entry.id for entry in head.items + head.spare)


def events(head: Head) -> list[list]:
    """A head's ranked-version events as stored."""
    assert head.rank is not None
    return [event.as_json() for event in head.rank.events]


def test_without_refills_from_the_spares_in_order():
    head = dataclasses.replace(head_of_pairs([["a", 9], ["b", 7]], spare=[["c", 5], ["d", 5]], version=3), digest="x")
    patched = without(head, "a", 2)
    assert patched is not None
    assert (patched.items, patched.spare, patched.version) == (rows([["b", 7], ["c", 5]]), rows([["d", 5]]), 4)
    assert patched.threshold == 5 and patched.digest != "x"
    assert without(head, "zz", 2) is None


def test_the_audit_rows_say_who_and_why():
    world = World(top_n=2, spare=1, board_shards=1, batch_size=1)
    world.design.view("a")
    world.design.settle(final=True)
    hide(
        world.catalog,
        world.design.board,
        world.config,
        "a",
        by="arn:aws:iam::1:user/ed",
        reason="spam",
        at=world.moment,
    )
    again = hide(
        world.catalog,
        world.design.board,
        world.config,
        "a",
        by="arn:aws:iam::1:user/ed",
        reason="again",
        at=world.moment,
    )
    unhide(
        world.catalog,
        world.design.board,
        world.config,
        "a",
        by="arn:aws:iam::1:user/al",
        reason="appeal",
        at=world.moment,
    )
    rows = world.design.stores.audit_rows("a")
    assert [(r["op"]["S"], r["by"]["S"], r["reason"]["S"]) for r in rows] == [
        ("hide", "arn:aws:iam::1:user/ed", "spam"),
        ("unhide", "arn:aws:iam::1:user/al", "appeal"),
    ]
    assert not again.changed  # a repeat writes no status and no audit row


def test_a_hide_deep_in_the_ranked_version_takes_it_out_of_rank_around_and_pages_and_unhide_restores_its_rank():
    # Given N = 2, R = 1 and D = 12: item i07 is ranked 8th, in the ranked version but in no head's top N+R
    world = World(top_n=2, spare=1, board_shards=2, batch_size=4, depth=12)
    for n in range(10):
        for _ in range(20 - n):
            world.design.view(f"i{n:02}")
    world.design.settle(final=True)
    world.refresh()
    board, config, period = world.design.board, world.config, world.periods()[0]
    before = lookup_ranks(board, config.policy, period, world.heads()[period], ["i07", "i08"], catalog=world.catalog)
    assert [(a.rank, a.source) for a in before] == [(8, "ranked"), (9, "ranked")]
    # When it is hidden
    done = hide(world.catalog, board, config, "i07", by="t", reason="spam", at=world.moment)
    # Then the head's ranked version records it where it stood, in the same patch, and every read skips it
    head = world.heads()[period]
    assert events(head) == [["hide", "i07", 8]] and period in done.patched
    after = lookup_ranks(board, config.policy, period, head, ["i07", "i08"], catalog=world.catalog)
    assert [(a.rank, a.source) for a in after] == [(None, "hidden"), (8, "ranked")]
    assert after[1].of == before[1].of - 1
    with pytest.raises(NotRanked, match="hidden"):
        around(board, period, head, "i07", k=1, catalog=world.catalog)
    assert [e.id for e in around(board, period, head, "i08", k=1, catalog=world.catalog).entries] == [
        "i06",
        "i08",
        "i09",
    ]
    _, page = leaderboard_page(board, config.policy, period, offset="5", limit="4", cursor="", now=head.generated_at)
    assert [(e.rank, e.id) for e in page.entries] == [(6, "i05"), (7, "i06"), (8, "i08"), (9, "i09")]
    # And an unhide puts it back at its exact rank (its counts were kept)
    unhide(world.catalog, board, config, "i07", by="t", reason="appeal", at=world.moment)
    head = world.heads()[period]
    assert events(head) in ([], [["hide", "i07", 8], ["unhide", "i07"]])  # [] if a new version was due
    restored = lookup_ranks(board, config.policy, period, head, ["i07", "i08"], catalog=world.catalog)
    assert [(a.rank, a.views) for a in restored] == [(before[0].rank, 13), (9, 12)]


def test_an_unhide_cut_short_after_its_transaction_is_finished_by_a_repeat():
    # Given a hidden leader, with ranked versions
    world = World(top_n=2, spare=0, board_shards=2, batch_size=3, depth=12)
    for item, count in (("a", 5), ("b", 3), ("c", 2)):
        for _ in range(count):
            world.design.view(item)
        world.counts[item] += count
    world.design.settle(final=True)
    world.refresh()
    hide(world.catalog, world.design.board, world.config, "a", by="t", reason="spam", at=world.moment)
    # When an unhide dies right after its transaction (the status is visible, no head gathered again)
    assert world.catalog.set_hidden("a", False, "t", "appeal", "2026-11-25T00:00:00.000Z")
    assert all("a" not in [e.id for e in head.items] for head in world.heads().values())
    # Then running it again changes no status but puts the item back on every head and in the ranked version
    done = unhide(world.catalog, world.design.board, world.config, "a", by="t", reason="appeal", at=world.moment)
    assert (done.changed, len(done.refreshed)) == (False, 2)
    for period, head in world.heads().items():
        assert head.items == rows([["a", 5], ["b", 3]])
        assert events(head)[-1] == ["unhide", "a"]
        (answer,) = lookup_ranks(world.design.board, world.config.policy, period, head, ["a"], catalog=world.catalog)
        assert answer.rank == 1
    # And a deleted item cannot be unhidden, nor hidden, nor put: nothing is written
    delete(world.catalog, world.design.board, world.config, "c", by="t", reason="", at=world.moment)
    kept = world.catalog.get("c", consistent=True)
    with pytest.raises(DeletedItem, match="is deleted"):
        unhide(world.catalog, world.design.board, world.config, "c", by="t", reason="", at=world.moment)
    with pytest.raises(DeletedItem, match="is deleted"):
        hide(world.catalog, world.design.board, world.config, "c", by="t", reason="", at=world.moment)
    with pytest.raises(DeletedItem, match="is deleted"):
        world.catalog.put("c", '{"title": "back"}', "2026-01-01T00:00:00.000Z")
    assert world.catalog.get("c", consistent=True) == kept
