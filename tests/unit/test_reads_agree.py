"""Every read of one item at one moment agrees with the others and with the head: the real record_views, aggregator
and snapshot job on the in-memory stores, with random interleavings of views, drains, hides, unhides, deletes and
snapshot runs at random times (often past RankRefreshSeconds, so a new ranked version is due and its gather leaves
the taken-down items out), on the all-time board and a day period. After every step, for every item:

- a hidden or deleted item answers so everywhere: GET /rank's source, GET /around's 404, absent from the head and
  from the pages of the ranked version;
- an item the head holds has the head's rank on GET /rank and on GET /around (whose entries the head holds carry
  the head's ranks too); an item ranked from the ranked version has that rank on GET /around and on its pages;
- an item past the ranking (or without views) has no neighbours, and is on neither the head nor the pages; its
  model rank is below every head entry with more views;
- ``of`` is never below a rank (or model rank) answered nor below what the head shows, and is the head's count,
  exactly, when the head holds the whole board; each percentile is its rank's, so a better rank never has a lower
  one.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.domain.items.records import DeletedItem
from shardboard.domain.periods import ALL, DAY, bucket_of, from_epoch, iso
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.head import Head
from shardboard.domain.reading.pages import NotRanked, around, leaderboard_page
from shardboard.domain.reading.percentiles import head_entries, head_ranks, percentile
from shardboard.domain.reading.ranks import lookup_ranks
from shardboard.services.snapshots import refresh_changed
from shardboard.services.takedowns import NothingToTakeDown, delete, hide, unhide
from shardboard_tools.bench.designs import ShardboardDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity import CapacityEmulator, VirtualClock
from tests.conftest import examples

REFRESH_SECONDS = 60  # RankRefreshSeconds


class World:
    """The pipeline and the items table on one virtual clock, and who is taken down."""

    def __init__(self, top_n: int, spare: int, depth: int, board_shards: int, batch_size: int) -> None:
        workload = Workload(
            top_n=top_n,
            gsi_shards=board_shards,
            write_shards=2,
            batch_size=batch_size,
            periods=(DAY,),
            rank_depth=depth,
            rank_refresh_seconds=REFRESH_SECONDS,
            snapshot_spare=spare,
        )
        self.clock = VirtualClock()
        self.design = ShardboardDesign(workload, CapacityEmulator(self.clock))
        self.design.settings = dataclasses.replace(self.design.settings, snapshot_spare=spare)
        self.catalog = self.design.items  # the aggregator reads this table's deny sets
        self.status: dict[str, str] = {}  # id -> "hidden" / "deleted"
        self.seen: set[str] = set()

    @property
    def config(self):
        return self.design.settings

    @property
    def moment(self):
        return from_epoch(self.design._epoch())

    def now(self) -> str:
        return iso(self.moment)

    def periods(self) -> list[PeriodKey]:
        board = self.config.board
        return [PeriodKey(board, ALL, ALL), PeriodKey(board, DAY, bucket_of(DAY, self.moment))]

    def step(self, action: str, value: int) -> None:
        item = item_of(value)
        if action == "view":
            self.design.view(item)
            self.seen.add(item)
            self.design.settle()
        elif action == "drain":
            self.design.settle(final=True)
        elif action == "snapshot":
            self.clock.advance(value)
            dropped = self.catalog.hidden() | self.catalog.denied()
            refresh_changed(self.design.board, self.config, self.now(), always=self.periods(), hidden=dropped)
        else:
            self.take_down(action, item)

    def take_down(self, action: str, item: str) -> None:
        operation = {"hide": hide, "unhide": unhide, "delete": delete}[action]
        try:
            operation(self.catalog, self.design.board, self.config, item, by="t", reason="", at=self.moment)
        except NothingToTakeDown:
            return
        except DeletedItem:  # a delete is for good: a hide or unhide of a deleted item is refused, nothing written
            assert action != "delete" and self.status.get(item) == "deleted"
            return
        if action == "unhide":
            self.status.pop(item, None)
        elif self.status.get(item) != "deleted":
            self.status[item] = "hidden" if action == "hide" else "deleted"


def item_of(value: int) -> str:
    return f"i{value % 6 if value % 3 else value}"  # a few hot items and a long tail


steps = st.lists(
    st.one_of(
        st.tuples(st.just("view"), st.integers(0, 30)),
        st.tuples(st.just("drain"), st.just(0)),
        # seconds since the last run: often more than RankRefreshSeconds, so a new ranked version is due
        st.tuples(st.just("snapshot"), st.sampled_from([0, 5, REFRESH_SECONDS, 3 * REFRESH_SECONDS])),
        st.tuples(st.just("hide"), st.integers(0, 12)),
        st.tuples(st.just("unhide"), st.integers(0, 12)),
        st.tuples(st.just("delete"), st.integers(0, 12)),
    ),
    min_size=10,
    max_size=100,
)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=steps,
    top_n=st.integers(1, 4),
    spare=st.integers(0, 3),
    extra=st.integers(1, 8),
    board_shards=st.integers(1, 3),
    batch_size=st.integers(1, 7),
)
def test_rank_around_pages_and_the_head_agree_on_every_item_at_every_moment(  # noqa: PLR0917 - one per strategy
    steps, top_n, spare, extra, board_shards, batch_size
):
    world = World(top_n, spare, top_n + extra, board_shards, batch_size)
    for action, value in steps:
        world.step(action, value)
        for period in world.periods():
            head = world.design.board.get_snapshot(period, consistent=True)
            if head is not None:
                reads_agree(world, period, head)


def reads_agree(world: World, period: PeriodKey, head: Head) -> None:
    board, config, catalog = world.design.board, world.config, world.catalog
    top_n, depth = config.top_n_of(period.board), config.rank_depth_of(period.board)
    items = sorted(world.seen | set(world.status))
    answers = {answer.id: answer for answer in lookup_ranks(board, config.policy, period, head, items, catalog=catalog)}
    in_head = head_ranks(head_entries(head))
    shown = [entry.id for entry in head.items]
    _, page = leaderboard_page(board, config.policy, period, offset="0", limit=str(depth), cursor="", now=world.now())
    paged = {entry.id: entry.rank for entry in page.entries}
    for item in items:
        answer = answers[item]
        # of: never below a rank answered nor below what the head shows; the head's own count when it is short
        ranked = answer.rank if answer.rank is not None else answer.approximate_rank
        assert answer.of >= len(shown)
        if len(shown) < top_n:
            assert (answer.of, answer.of_exact) == (len(shown), True) or answer.source == "beyond"
        if ranked is not None:
            assert ranked <= answer.of and answer.percentile == percentile(ranked, answer.of)
            assert 0 < answer.percentile <= 100
        status = world.status.get(item)
        if status:
            # Taken down: no rank anywhere, and every read says why
            assert (answer.source, answer.rank, answer.percentile) == (status, None, None), answer
            assert item not in in_head and item not in paged
            with pytest.raises(NotRanked, match=f"is {status}"):
                around(board, period, head, item, k=2, catalog=catalog)
        elif answer.source == "snapshot":
            assert item in in_head and answer.rank == in_head[item][0]
            near = around(board, period, head, item, k=2, catalog=catalog)
            assert near.entries[near.above].id == item and near.entries[near.above].rank == answer.rank
            for entry in near.entries:  # every neighbour the head holds has the head's rank
                assert entry.id not in in_head or entry.rank == in_head[entry.id][0]
        elif answer.source == "ranked":
            assert item not in in_head and paged.get(item) == answer.rank
            near = around(board, period, head, item, k=2, catalog=catalog)
            assert near.entries[near.above].id == item and near.entries[near.above].rank == answer.rank
        else:
            assert answer.source in {"beyond", "none"} and answer.rank is None
            assert item not in in_head and item not in paged
            if answer.source == "beyond":  # the model never ranks it above a head entry with more views
                above = sum(1 for views in in_head.values() if views[1] > answer.views)
                assert answer.approximate_rank is not None and answer.approximate_rank > above
            with pytest.raises(NotRanked, match="not in the top"):
                around(board, period, head, item, k=2, catalog=catalog)
    # A better exact rank never has a lower percentile (one `of` for every exact answer of one read)
    exact = sorted((a.rank, a.percentile, a.of) for a in answers.values() if a.rank is not None)
    assert len({of for _, _, of in exact}) <= 1
    assert all(higher[1] >= lower[1] for higher, lower in itertools.pairwise(exact))
