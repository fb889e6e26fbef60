"""Delete (issue 13 slice 7) against a brute-force truth: the real record_views, aggregator (Lambda's delivery model,
plus replayed and duplicated deliveries) and snapshot job on the in-memory stores, with random interleavings of views,
drains, refreshes, days passing and deletes, some of them cut short mid-sweep and finished by a repeat."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from shardboard.adapters.board_table import snapshot_from_item
from shardboard.domain.items.taken_down import TakenDown
from shardboard.domain.periods import ALL, DAY, from_epoch
from shardboard.domain.ports import PeriodKey
from shardboard.services.snapshots import refresh_changed
from shardboard.services.takedowns import NothingToTakeDown, delete, hide
from shardboard_tools.bench.designs import ShardboardDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity import CapacityEmulator, VirtualClock
from tests.conftest import examples
from tests.heads import pairs
from tests.unit.test_taken_down import past_the_listing_limit


class SweepCrashed(RuntimeError):
    """The injected fault: the process died while erasing (after the tombstone and the head patch)."""


class World:
    """The pipeline, its items table and the truth: every view recorded, every delivered batch (for replays), and
    which ids are deleted (``pending``: the tombstone is written, the sweep was cut short)."""

    def __init__(self, top_n: int, spare: int, board_shards: int, batch_size: int) -> None:
        workload = Workload(top_n=top_n, gsi_shards=board_shards, write_shards=3, batch_size=batch_size, periods=(DAY,))
        self.design = ShardboardDesign(workload, CapacityEmulator(VirtualClock()))
        self.design.settings = dataclasses.replace(self.design.settings, snapshot_spare=spare, retention_days=3)
        self.catalog = self.design.items  # the aggregator reads this table's deny markers
        self.counts: Counter[str] = Counter()
        self.deleted: set[str] = set()
        self.pending: set[str] = set()
        self.delivered: list[list[dict]] = []
        invoke = self.design.delivery.function  # the tumbling-window path (the workload's default)

        def remembered(event, context):
            if event["Records"]:  # (a tumbling window's closing invocation may carry none)
                self.delivered.append(event["Records"])
            return invoke(event, context)

        self.design.delivery.function = remembered  # every batch Lambda delivers, kept for replays

    @property
    def config(self):
        return self.design.settings

    @property
    def moment(self):
        return from_epoch(self.design._epoch())

    @property
    def board(self):
        return self.design.board

    def delete(self, item: str):
        return delete(self.catalog, self.board, self.config, item, by="t", reason="gdpr", at=self.moment)

    def refresh(self) -> None:
        """The snapshot job as the handler runs it: every gather drops the hidden and the deleted ids."""
        refresh_changed(self.board, self.config, always=[self.all_time()], hidden=TakenDown.read(self.catalog))

    def all_time(self) -> PeriodKey:
        return PeriodKey(self.config.board, ALL, ALL)

    def live(self, prefix: str) -> list[dict]:
        """The stored items whose key starts with ``prefix``, but those past their TTL (a past period older than its
        retention: DynamoDB deletes them, the in-process engine keeps them; a delete sweeps the retained periods)."""
        now = self.design._epoch()
        stored = self.design.engine.items(self.config.board_table)
        items = [item for item in stored if item["pk"]["S"].startswith(prefix)]
        return [item for item in items if "expires_at" not in item or int(item["expires_at"]["N"]) > now]

    def heads(self) -> list[dict]:
        """Every snapshot head stored, of every period still retained."""
        return [snapshot_from_item(item) for item in self.live("snapshot#")]

    def holders(self) -> list[dict]:
        """Every aggregate and retained past entry stored."""
        return self.live("item#") + self.live("entry#")

    def aggregated(self) -> dict[str, int]:
        return {item: views for item, (views, _) in self.board.scan_aggregates().items()}

    def truth(self) -> dict[str, int]:
        return {item: views for item, views in self.counts.items() if item not in self.deleted}

    def best(self, depth: int) -> list[list]:
        return [[i, v] for i, v in sorted(self.truth().items(), key=lambda pair: (-pair[1], pair[0]))[:depth]]

    def keyed(self, depth: int) -> bool:
        """The best ``depth`` items are all at or above the published all-time T (so a gather sees them: more than R
        takedowns above T break this until views raise the others, the limit the hide tests name too)."""
        state = self.board.thresholds([self.all_time()]).get(self.all_time())
        threshold = state.threshold if state else 0
        return all(views >= threshold for _, views in self.best(depth))

    def assert_gone(self, item: str) -> None:
        """Nowhere on any head, and (unless its sweep is pending) no aggregate or entry left."""
        for head in self.heads():
            assert item not in [entry.id for entry in head.items + head.spare]
        if item not in self.pending:
            assert all(row["item_id"]["S"] != item for row in self.holders())


steps = st.lists(
    st.one_of(
        st.tuples(st.just("view"), st.integers(0, 30)),
        st.tuples(st.just("drain"), st.just(0)),
        st.tuples(st.just("replay"), st.integers(0, 1000)),
        st.tuples(st.just("snapshot"), st.just(0)),
        st.tuples(st.just("later"), st.integers(1, 30)),
        st.tuples(st.just("delete"), st.integers(0, 8)),
        st.tuples(st.just("crash"), st.integers(0, 8)),
    ),
    min_size=10,
    max_size=100,
)


def item_of(value: int) -> str:
    return f"i{value % 6 if value % 3 else value}"  # a few hot items and a long tail


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=steps,
    top_n=st.integers(1, 4),
    spare=st.integers(0, 3),
    board_shards=st.integers(1, 3),
    batch_size=st.integers(1, 7),
    per_id=st.booleans(),
)
def test_deletes_erase_the_item_everywhere_and_move_nothing_else(  # noqa: PLR0917 - one parameter per strategy
    steps, top_n, spare, board_shards, batch_size, per_id
):
    # Given the pipeline and a random interleaving of views (deleted ids too), drains, replayed deliveries,
    # refreshes, hours passing and deletes (some cut short); the aggregator, the job and the deletes list the
    # deleted ids whole, or (``per_id``: as on a site with more than a listing reads) ask about the ids at hand
    world = World(top_n, spare, board_shards, batch_size)
    with past_the_listing_limit(per_id):
        deletes_erase_the_item_everywhere(world, steps, top_n)


def deletes_erase_the_item_everywhere(world: World, steps, top_n: int) -> None:
    for action, value in steps:
        note(f"{action} {value}")
        item = item_of(value)
        if action == "view":
            world.design.view(item)  # the base counter is written; the aggregator must refuse a deleted id's
            world.counts[item] += 1
            world.design.settle()
        elif action == "drain":
            world.design.settle(final=True)
        elif action == "replay" and world.delivered:
            batch = world.delivered[value % len(world.delivered)]
            world.design._invoke_batch({"Records": batch}, None)  # a duplicate (or a replay from a checkpoint)
        elif action == "snapshot":
            world.refresh()
        elif action == "later":
            # Hours pass (the stream delivered first: the benchmark's mapping drops records older than its age
            # limit); a day ends now and then, so aggregates roll and past entries are archived
            world.design.settle(final=True)
            world.design.emulator.clock.advance(value * 3600)
        elif action in {"delete", "crash"}:
            # (a crash needs something to erase: an id swept already has no aggregate left to fail on)
            deleted(world, item, top_n, crash=action == "crash" and item in world.aggregated())
        for gone in world.deleted:
            world.assert_gone(gone)
    # When the stream is drained, every sweep cut short is run again, and the job runs
    world.design.settle(final=True)
    for item in sorted(world.pending):
        assert world.delete(item).changed is False
        world.pending.discard(item)
    world.refresh()
    # Then every other item's count is exact, the deleted ids are nowhere, and the head is the exact top N
    assert world.aggregated() == world.truth()
    assert world.catalog.denied() == frozenset(world.deleted)
    for item in world.deleted:
        world.assert_gone(item)
    head = world.board.get_snapshot(world.all_time(), consistent=True)
    if world.keyed(top_n):
        assert pairs(head.items) == world.best(top_n)


def deleted(world: World, item: str, top_n: int, *, crash: bool) -> None:
    """A delete (``crash``: the process dies at the sweep's last erase, after the heads were patched): the item
    leaves every head at once, each refilled to a full N; an id with no views and no record is refused."""
    if item not in world.aggregated() and item not in world.deleted:
        with pytest.raises(NothingToTakeDown):
            world.delete(item)
        assert item not in world.catalog.denied()
        return
    before = world.board.get_snapshot(world.all_time(), consistent=True)
    if crash:
        with pytest.raises(SweepCrashed), crash_at_the_aggregate(world):
            world.delete(item)
        world.pending.add(item)
    else:
        done = world.delete(item)
        assert done.changed == (item not in world.deleted)
        assert done.as_json()["status"] == "deleted"
        world.pending.discard(item)
    world.deleted.add(item)
    head = world.board.get_snapshot(world.all_time(), consistent=True)
    if before is not None and head is not None:
        refill = [e for e in before.items + before.spare if e.id != item]
        if len(refill) >= top_n and len(refill) < len(before.items + before.spare):
            assert list(head.items) == refill[:top_n]  # patched from the spares, nothing else moved


class crash_at_the_aggregate:
    """Makes the board table's DeleteItem (of an aggregate: entries go by BatchWriteItem) raise once on the
    in-process engine: entries erased, the aggregate not."""

    def __init__(self, world: World) -> None:
        self.engine = world.design.engine
        self.table = world.config.board_table

    def __enter__(self) -> None:
        delete_item = self.engine.delete_item

        def failing(**request):
            if request["TableName"] == self.table:
                raise SweepCrashed(request["Key"]["pk"]["S"])
            return delete_item(**request)

        self.engine.delete_item = failing

    def __exit__(self, *_) -> None:
        del self.engine.delete_item  # the class's method again


def test_a_delete_cut_short_is_finished_by_running_it_again():
    # Given an item with views on two days (so a past entry too) and a head that holds it
    world = World(top_n=2, spare=1, board_shards=1, batch_size=1)
    for item in ("a", "a", "b", "c"):
        world.design.view(item)
    world.design.settle(final=True)
    world.design.emulator.clock.advance(86_400)
    world.design.view("a")
    world.design.settle(final=True)
    world.refresh()
    assert any(row["pk"]["S"].startswith("entry#") and row["item_id"]["S"] == "a" for row in world.holders())
    # When the delete dies at the aggregate's DeleteItem
    with pytest.raises(SweepCrashed), crash_at_the_aggregate(world):
        world.delete("a")
    # Then the tombstone holds, the heads are patched, and only its aggregate is left
    assert world.catalog.denied() == {"a"}
    assert [e.id for e in world.board.get_snapshot(world.all_time()).items] == ["b", "c"]
    assert [row["pk"]["S"] for row in world.holders() if row["item_id"]["S"] == "a"] == ["item#global#a"]
    # When it runs again: no new tombstone or audit row, the sweep finished
    again = world.delete("a")
    assert (again.changed, again.erased) == (False, 1)
    assert all(row["item_id"]["S"] != "a" for row in world.holders())
    assert [row["op"]["S"] for row in world.design.stores.audit_rows("a")] == ["delete"]
    # And a third run is a plain 200 with nothing left to do, later views are refused by the aggregator
    assert (world.delete("a").changed, world.delete("a").erased) == (False, 0)
    world.design.view("a")
    world.design.settle(final=True)
    assert "a" not in world.aggregated()


def test_a_delete_of_an_item_never_created_and_never_viewed_writes_nothing():
    world = World(top_n=2, spare=1, board_shards=1, batch_size=1)
    with pytest.raises(NothingToTakeDown, match="no views and was never created"):
        world.delete("ghost")
    assert world.catalog.denied() == frozenset() and world.design.stores.audit_rows("ghost") == []


def test_a_hidden_item_can_be_deleted_and_leaves_the_hidden_set():
    world = World(top_n=2, spare=0, board_shards=1, batch_size=1)
    world.design.view("a")
    world.design.settle(final=True)
    hide(world.catalog, world.board, world.config, "a", by="t", reason="spam", at=world.moment)
    done = world.delete("a")
    assert done.changed and done.erased == 1
    assert (world.catalog.hidden(), world.catalog.denied()) == (frozenset(), frozenset({"a"}))


def test_a_tumbling_window_open_across_a_delete_does_not_bring_the_item_back():
    # Given an item counted, and one more view folded into a tumbling window that is still open
    world = World(top_n=2, spare=1, board_shards=1, batch_size=1)
    for _ in range(6):
        world.design.view("a")
    world.design.settle(final=True)
    world.design.view("a")
    world.design.settle()
    # When the item is deleted before the window closes
    world.delete("a")
    world.design.settle(final=True)
    # Then the window's close asks again: its delta is skipped, no aggregate comes back
    assert "a" not in world.aggregated()


def test_a_delete_landing_between_a_batchs_deny_read_and_its_writes_is_erased_by_the_batch():
    # Given views of two items, and an aggregator whose (eventually consistent) reads of the deny markers before its
    # writes miss a delete that lands right after the first of them: the delete's own erase comes before the writes
    world = World(top_n=2, spare=1, board_shards=2, batch_size=50)
    for views in (("a", "a", "b"), ("a", "b")):  # counted once, then more views on the stream
        if views == ("a", "b"):
            world.design.settle(final=True)
        for item in views:
            world.design.view(item)
            world.counts[item] += 1
    assert world.aggregated() == {"a": 2, "b": 1}
    aggregator = world.design.aggregator
    fresh = aggregator.denied
    landed: list[str] = []

    def stale_before_writes(item_ids, consistent: bool) -> frozenset[str]:
        if consistent:
            return fresh(item_ids, consistent)
        if not landed:
            landed.append("a")
            world.delete("a")  # tombstone, head patch, erase: nothing is there to erase yet
            world.deleted.add("a")
        return frozenset()

    aggregator.denied = stale_before_writes
    # When the stream is drained (the batch writes "a" after its delete's erase)
    world.design.settle(final=True)
    # Then the batch's strongly consistent read after its writes finds the tombstone and erases what it wrote
    assert landed == ["a"]
    world.assert_gone("a")
    assert world.aggregated() == {"b": 2}


def test_a_takedown_keeps_a_past_periods_head_expiring():
    # Given a day's head (it expires with its retention) and the day over
    world = World(top_n=2, spare=0, board_shards=1, batch_size=5)
    for item in ("i0", "i4"):
        world.design.view(item)
    world.design.settle(final=True)
    world.refresh()
    world.design.emulator.clock.advance(30 * 3600)

    def expiries() -> dict[str, str | None]:
        return {
            row["pk"]["S"]: row.get("expires_at", {}).get("N")
            for row in world.live("snapshot#")
            if "#day#" in row["pk"]["S"]
        }

    (before,) = expiries().values()
    # When an item of that day is deleted (its head is patched)
    world.delete("i4")
    # Then the patched head still expires when the day's retention ends: a head without a TTL would outlive it,
    # and a later delete (which patches retained periods only) would leave its id there for good
    assert before is not None
    assert list(expiries().values()) == [before]
    assert all("i4" not in [entry.id for entry in head.items] for head in world.heads())
