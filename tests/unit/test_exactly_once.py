"""apply_item under at-least-once delivery: duplicates, re-splits, replays from checkpoints and lost records."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain.aggregating.aggregation import AggregateContention, Context, ItemOutcome
from shardboard.domain.aggregating.batch import (
    ItemDelta,
    ShardMove,
    ShardStep,
    ViewRecord,
    catch_up_moves,
    fold,
    optimistic_moves,
)
from shardboard.domain.ports import AggregateState, BoardState, MoveResult, PeriodKey
from shardboard.services.aggregating import StreamAggregator, _erase_deleted, apply_delta, apply_deltas
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryBoardStore
from tests.conftest import examples

MON, TUE = "2026-11-23", "2026-11-24"


def memory_board() -> MemoryBoardStore:
    """The in-memory Board (tests/contract holds it to DynamoDB's compare-and-set semantics)."""
    return MemoryBoardStore(CapacityEmulator(VirtualClock()))


def requests(board: MemoryBoardStore) -> int:
    """Requests the board has served (reads and writes)."""
    return board.data.emulator.usage.requests


def views(board: MemoryBoardStore, item_id: str) -> int:
    return board.state("global", item_id).views


def apply_item(board: MemoryBoardStore, delta: ItemDelta, threshold: int = 0) -> ItemOutcome:
    """The aggregator's per-item step on the global board, all time only (no ranked versions), with a published
    threshold."""
    state = BoardState(threshold, None, None)
    policy = Settings(periods=(), rank_depth=0).policy
    return apply_delta(board, delta, Context(policy, {PeriodKey("global", "all", "all"): state}))


def one(records: list[ViewRecord], item: str = "a") -> ItemDelta:
    return fold(records)[("global", item, "all")]


def stream_of(increments: list[tuple[str, int]]) -> list[ViewRecord]:
    """The records DynamoDB Streams emits for a sequence of `ADD views 1` on (item, shard) counters."""
    counters: dict[tuple[str, int], int] = {}
    records = []
    for item, shard in increments:
        old = counters.get((item, shard), 0)
        counters[(item, shard)] = old + 1
        records.append(ViewRecord("global", item, "all", shard, old, old + 1))
    return records


def deliver(board: MemoryBoardStore, batch: list[ViewRecord]) -> None:
    for delta in fold(batch).values():
        apply_item(board, delta)


increments = st.lists(st.tuples(st.sampled_from(["a", "b#1", "ü"]), st.integers(0, 3)), min_size=1, max_size=60)


@settings(max_examples=examples(300), deadline=None)
@given(increments=increments, seed=st.integers(0, 10**6))
def test_at_least_once_delivery_counts_exactly_once(increments, seed):
    # Given the stream of a random history of views
    rng = random.Random(seed)
    records = stream_of(increments)
    board = memory_board()
    # When Lambda delivers it at least once: random batches, each maybe duplicated, re-split, or replayed
    # from an earlier checkpoint (a partial-failure restart), in stream order
    position = 0
    while position < len(records):
        end = min(len(records), position + rng.randint(1, 8))
        batch = records[position:end]
        mode = rng.choice(["once", "twice", "resplit", "replay"])
        if mode == "resplit":
            half = len(batch) // 2
            deliver(board, batch[:half] or batch)
            deliver(board, batch)
        elif mode == "replay":
            deliver(board, records[max(0, position - rng.randint(1, 6)) : end])
        else:
            deliver(board, batch)
            if mode == "twice":
                deliver(board, batch)
        position = end
    # Then every item's count equals the base table's truth
    truth: dict[str, int] = {}
    for item, _ in increments:
        truth[item] = truth.get(item, 0) + 1
    assert {item: views(board, item) for item in truth} == truth


@settings(max_examples=examples(200), deadline=None)
@given(increments=increments, seed=st.integers(0, 10**6))
def test_lost_records_are_healed_by_the_next_record_of_their_shard(increments, seed):
    # Given a stream where random records never reach the function (sent to the failure destination) ...
    rng = random.Random(seed)
    records = stream_of(increments)
    last_of_shard = {(r.item_id, r.shard): r.new for r in records}
    # ... except each shard's last record, which arrives later
    survivors = [r for r in records if r.new == last_of_shard[(r.item_id, r.shard)] or rng.random() < 0.5]
    board = memory_board()
    for start in range(0, len(survivors), 5):
        deliver(board, survivors[start : start + 5])
    truth: dict[str, int] = {}
    for item, _ in increments:
        truth[item] = truth.get(item, 0) + 1
    assert {item: views(board, item) for item in truth} == truth


def test_one_write_per_item_per_batch_in_order():
    board = memory_board()
    deliver(board, stream_of([("a", 0), ("a", 1), ("a", 0), ("b", 2), ("a", 1)]))
    assert requests(board) == 2  # one compare-and-set per distinct item, covering all its shards; no reads
    assert views(board, "a") == 4 and views(board, "b") == 1


def test_catch_up_skips_shards_already_applied():
    delta = one(stream_of([("a", 0), ("a", 0), ("a", 1)]))
    assert optimistic_moves(delta) == [ShardMove(0, 0, 2), ShardMove(1, 0, 1)]
    assert catch_up_moves(delta, {0: 2, 1: 0}) == [ShardMove(1, 0, 1)]
    assert catch_up_moves(delta, {0: 5, 1: 1}) == []


def test_replay_is_reported_and_writes_nothing_new():
    board = memory_board()
    batch = stream_of([("a", 0), ("a", 0)])
    deliver(board, batch)
    outcome = apply_item(board, one(batch))
    assert outcome.replay_absorbed and outcome.views_added == 0
    assert views(board, "a") == 2


def test_sparse_index_joins_only_at_the_threshold():
    board = memory_board()
    records = stream_of([("a", 0)] * 3)
    apply_item(board, one(records[:2]), threshold=3)
    assert not board.state("global", "a").in_index
    apply_item(board, one(records[2:]), threshold=3)
    assert board.state("global", "a").in_index


def test_a_crash_between_count_and_index_join_is_healed_by_the_replay():
    # Given an aggregate that reached the threshold but whose index join never happened
    board = memory_board()
    records = stream_of([("a", 0)] * 4)
    board.move("global", "a", "all", [ShardMove(0, 0, 4)], kinds=(), joins={})
    # When the batch is replayed
    outcome = apply_item(board, one(records), threshold=2)
    # Then nothing is counted twice and the item joins the index
    assert outcome.replay_absorbed and outcome.joined_index
    assert views(board, "a") == 4 and board.state("global", "a").in_index


def test_a_crash_between_a_move_and_its_bucket_raise_is_healed_by_the_replay():
    # Given an aggregate keyed in its day's index at bucket 0, whose count then reached 40 (bucket 1) by a move whose
    # process died before it raised the bucket (docs/coarse-index.md): the index sorts it below its count
    day, board = "2026-11-25", memory_board()
    ctx = Context(Settings(periods=("day",)).policy, {})
    key = ctx.index_key(PeriodKey("global", "day", day), "a")
    board.move("global", "a", day, [ShardMove(0, 0, 3)], kinds=("day",), joins={"day": key}, buckets={"day": 0})
    board.move("global", "a", day, [ShardMove(0, 3, 40)], kinds=("day",), joins={})
    assert board.state("global", "a").buckets == {"day": 0}
    # When the batch is replayed
    records = [ViewRecord("global", "a", day, 0, n, n + 1) for n in range(40)]
    outcome = apply_delta(board, fold(records)[("global", "a", day)], ctx)
    # Then nothing is counted twice and the bucket is raised (to one above its count's), the key kept
    assert outcome.replay_absorbed and outcome.views_added == 0
    state = board.state("global", "a")
    assert state.count("day") == 40 and state.buckets["day"] == 2 and "day" in state.keyed


def test_endless_contention_fails_the_item_not_the_process():
    class AlwaysRefused(MemoryBoardStore):
        """Another writer always got there first (two runners on one stream by mistake)."""

        def move(self, board, item_id, bucket, moves, *, kinds, joins, deep=None, weights=None, buckets=None):  # type: ignore[no-untyped-def]
            return MoveResult(applied=False, state=AggregateState({0: 0}, 0, "all"))

    board = AlwaysRefused(CapacityEmulator(VirtualClock()))
    with pytest.raises(AggregateContention):
        apply_item(board, one(stream_of([("a", 0)])))


def test_a_roll_that_archives_after_a_deletes_sweep_is_erased_by_its_batch():
    """Found by `shardboard chaos --seed 7 --short`: the batch read the aggregate (yesterday's), the delete's sweep
    erased it, the roll archived yesterday's entry anyway (a PutItem) and lost its compare-and-set; the batch's own
    erase of what it wrote for the deleted item must take that entry too."""

    class SweptBeforeArchive(MemoryBoardStore):
        def archive(self, entry):  # type: ignore[no-untyped-def]
            if entry.item_id == "x":  # the delete's sweep lands here, between the read and the archive
                self.erase(entry.period.board, "x", [entry.period])
            super().archive(entry)

    settings = Settings(periods=("day",))
    board = SweptBeforeArchive(CapacityEmulator(VirtualClock()))
    day1 = [ViewRecord("global", "x", "2026-11-24", 0, n, n + 1) for n in range(3)]
    apply_deltas(board, fold(day1), settings)
    day2 = [ViewRecord("global", "x", "2026-11-25", 0, 0, 1)]
    outcome = apply_deltas(board, fold(day2), settings)
    assert outcome.items[("global", "x", "2026-11-25")].archived == (PeriodKey("global", "day", "2026-11-24"),)
    aggregator = StreamAggregator(
        lambda: board, lambda: settings, lambda ids, consistent: frozenset({"x"}), lambda: 1_795_000_000.0
    )
    erased = _erase_deleted(aggregator, board, outcome)
    assert [(e.item_id, e.erased) for e in erased] == [("x", 2)]  # the new aggregate and the entry archived late
    assert [row for row in board.scan_counts() if row["item_id"]["S"] == "x"] == []


class Refusals(MemoryBoardStore):
    """Counts the moves the table refused (each a write unit spent)."""

    refused = 0

    def move(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        result = super().move(*args, **kwargs)
        self.refused += not result.applied
        return result


def by_day(*steps: tuple[str, str, int, int, int]) -> dict[tuple[str, str, str], ItemDelta]:
    """Folded deltas on the global board from (item, day, shard, OLD, NEW) counter steps."""
    deltas: dict[tuple[str, str, str], ItemDelta] = {}
    for item, day, shard, old, new in steps:
        delta = deltas.setdefault(("global", item, day), ItemDelta(item, {}, "global", day))
        delta.shards[shard] = ShardStep(old, new)
    return deltas


def test_an_aggregate_seen_in_an_older_day_rolls_without_a_refused_move():
    # Given items a and b counted on Monday, and a window of Tuesday's first views (every shard starting from 0)
    settings, board = Settings(periods=("day",)), Refusals(CapacityEmulator(VirtualClock()))
    apply_deltas(board, by_day(("a", MON, 0, 0, 3), ("b", MON, 1, 0, 2)), settings)
    reads = board.data.emulator.usage.units("read")
    # When the window is applied
    outcome = apply_deltas(board, by_day(("a", TUE, 0, 0, 1), ("a", TUE, 4, 0, 2), ("c", TUE, 0, 0, 1)), settings)
    # Then the aggregates were read first (one request), a rolled with no refused write, c was created
    assert board.refused == 0 and board.data.emulator.usage.units("read") > reads and outcome.aggregates_read == 2
    assert outcome.items[("global", "a", TUE)].rolled and outcome.views_added == 4
    assert board.entry_state(PeriodKey("global", "day", MON), "a").count("day") == 3
    a = board.state("global", "a")
    assert (a.bucket, a.views, a.count("day"), a.applied) == (TUE, 6, 3, {0: 1, 4: 2})
    # (unseen, the same roll costs the refused move that finds the older day)
    unseen = Refusals(CapacityEmulator(VirtualClock()))
    apply_deltas(unseen, by_day(("a", MON, 0, 0, 3)), settings)
    ctx = Context(settings.policy, {})
    apply_delta(unseen, by_day(("a", TUE, 0, 0, 1))[("global", "a", TUE)], ctx)
    assert unseen.refused == 1


def test_a_stale_sight_of_the_aggregate_costs_a_refused_write_never_a_count():
    # Given an aggregate seen on Monday, then rolled to Tuesday by another writer (another stream shard)
    settings, board = Settings(periods=("day",)), Refusals(CapacityEmulator(VirtualClock()))
    ctx = Context(settings.policy, {})
    apply_deltas(board, by_day(("a", MON, 0, 0, 3)), settings)
    stale = board.state("global", "a")
    apply_deltas(board, by_day(("a", TUE, 1, 0, 2)), settings)
    # When a delta of Tuesday is applied with the stale sight
    outcome = apply_delta(board, by_day(("a", TUE, 0, 0, 4))[("global", "a", TUE)], ctx, stale)
    # Then its roll is refused, it reads the aggregate again and moves: every view counted once, Monday kept whole
    a = board.state("global", "a")
    assert outcome.views_added == 4 and not outcome.rolled
    assert (a.bucket, a.views, a.count("day"), a.applied) == (TUE, 9, 6, {0: 4, 1: 2})
    assert board.entry_state(PeriodKey("global", "day", MON), "a").count("day") == 3


def test_a_batch_whose_read_of_its_aggregates_fails_still_counts_exactly():
    class Unreadable(Refusals):
        def states(self, keys):  # type: ignore[no-untyped-def]
            raise RuntimeError("throttled")

    settings, board = Settings(periods=("day",)), Unreadable(CapacityEmulator(VirtualClock()))
    apply_deltas(board, by_day(("a", MON, 0, 0, 3)), settings)
    outcome = apply_deltas(board, by_day(("a", TUE, 0, 0, 2)), settings)
    assert outcome.views_added == 2 and not outcome.failures and board.refused == 1  # the move that found Monday
    assert board.state("global", "a").views == 5
