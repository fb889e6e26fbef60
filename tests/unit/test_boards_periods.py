"""Boards and periods against a brute-force truth: random views on random boards at random times (across hour, day,
ISO-week and month boundaries), delivered at least once, out of order across stream shards, late by days."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.adapters.stream_records import stream_view_records
from shardboard.domain.periods import bucket_of
from shardboard.domain.ports import PeriodKey
from shardboard.services.aggregating import apply_batch, note_changes
from shardboard.services.snapshots import refresh_changed
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryBoardStore, MemoryViewStore
from shardboard_tools.operations.verification import stored, truth, verify
from tests.conftest import examples

# Sunday 2026-11-29 23:00 UTC: the next hours cross a day, an ISO week (W48 -> W49) and a month (Nov -> Dec).
EDGE = datetime(2026, 11, 29, 23, 0, tzinfo=UTC)
ITEMS = ["a", "b#1", "images/c.jpg", "ü"]
BOARDS = ["cats", "bw", "user:1"]


class LaggingBoard(MemoryBoardStore):
    """Its reads before a batch's writes (``states``) are eventually consistent: each aggregate as it was at any
    earlier read of it, or not there yet."""

    def __init__(self, emulator: CapacityEmulator, rng: random.Random) -> None:
        super().__init__(emulator)
        self.rng = rng
        self.seen: dict[tuple[str, str], list] = {}

    def states(self, keys):  # type: ignore[no-untyped-def]
        current = super().states(keys)
        found = {}
        for key in keys:
            history = self.seen.setdefault(key, [None])
            history.append(current.get(key))
            state = self.rng.choice(history)
            if state is not None:
                found[key] = state
        return found


class World:
    """A base table and a board table in memory, and the stream between them split over three stream shards."""

    def __init__(self, config: Settings, lagging: random.Random | None = None) -> None:
        emulator = CapacityEmulator(VirtualClock())
        self.views = MemoryViewStore(emulator)
        self.board = MemoryBoardStore(emulator) if lagging is None else LaggingBoard(emulator, lagging)
        self.config = config
        self.shards: list[list[dict]] = [[], [], []]

    def record(self, item: str, boards: tuple[str, ...], at: datetime, shard: int, count: int = 1) -> None:
        self.views.add_view(item, shard, count, bucket_of(self.config.anchor, at), boards)
        for record in self.views.take_stream(10):
            # Records of one base item stay in order on one stream shard; shards are delivered independently.
            self.shards[hash(record["dynamodb"]["Keys"]["pk"]["S"]) % 3].append(record)

    def deliver(self, records: list[dict]) -> None:
        steps = [step for record in records for step in stream_view_records(record)]
        outcome = apply_batch(self.board, steps, self.config)
        assert not outcome.failures, outcome.failures
        note_changes(self.board, outcome, self.config, now=1)


views_strategy = st.lists(
    st.tuples(
        st.sampled_from(ITEMS),
        st.lists(st.sampled_from(BOARDS), max_size=2, unique=True).map(tuple),
        st.integers(-30 * 24, 3),  # hours from EDGE: up to a month early (late data), a few hours past the edges
        st.integers(0, 2),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=40,
)


def deliver_at_least_once(world: World, rng: random.Random) -> None:
    """Each stream shard in order, in random batches, interleaved; batches duplicated, re-split or replayed."""
    positions = [0, 0, 0]
    while any(p < len(s) for p, s in zip(positions, world.shards, strict=True)):
        lane = rng.choice([i for i, s in enumerate(world.shards) if positions[i] < len(s)])
        records, start = world.shards[lane], positions[lane]
        end = min(len(records), start + rng.randint(1, 6))
        mode = rng.choice(["once", "twice", "resplit", "replay"])
        if mode == "resplit":
            world.deliver(records[start : start + max(1, (end - start) // 2)])
        elif mode == "replay":
            world.deliver(records[max(0, start - rng.randint(1, 5)) : start])
        world.deliver(records[start:end])
        if mode == "twice":
            world.deliver(records[start:end])
        positions[lane] = end


@settings(max_examples=examples(40), deadline=None)
@given(
    views=views_strategy,
    seed=st.integers(0, 10**6),
    periods=st.sampled_from([("day", "week", "month"), ("hour", "day", "week", "month"), ()]),
    lagging=st.booleans(),
)
def test_every_board_and_period_counts_exactly_once(views, seed, periods, lagging):
    # Given views of random items on random boards, at random times around a day, week and month boundary (and a
    # board table whose reads before the writes may return any earlier state of an aggregate)
    config = Settings(periods=periods, write_concurrency=1, top_n=3, category_top_n=2)
    world = World(config, random.Random(seed) if lagging else None)
    for item, boards, hours, shard, count in views:
        world.record(item, boards, EDGE + timedelta(hours=hours, minutes=30), shard, count)
    # When the stream is delivered at least once, out of order across stream shards
    deliver_at_least_once(world, random.Random(seed))
    # Then every count of every board and period equals the base table's truth
    expected = {p: {i: v for i, v in c.items() if v} for p, c in truth(world.views, config).items()}
    found, _ = stored(world.board, config)
    assert {p: {i: v for i, v in c.items() if v} for p, c in found.items() if any(c.values())} == expected
    # And after a refresh of the changed periods, every snapshot is the exact top N of its period
    refresh_changed(world.board, config, always=[PeriodKey("global", "all", "all")])
    report = verify(world.views, world.board, config)
    assert report.exact, (report.differences, report.index_misses)
    assert not report.snapshots_inexact
    # (every one still within its retention: a head past it is no longer read, and its TTL deletes it)
    live = [p for p in expected if (config.policy.periods.expires(p) or time.time() + 1) > time.time()]
    assert report.snapshots_checked == len(live)


def test_brute_force_truth_of_one_view_per_period_kind():
    config = Settings(periods=("hour", "day", "week", "month"), write_concurrency=1)
    world = World(config)
    world.record("a", ("cats",), EDGE + timedelta(minutes=59, seconds=59, microseconds=999_000), 0)
    world.record("a", ("cats",), EDGE + timedelta(hours=1), 1)
    world.deliver(world.shards[0] + world.shards[1] + world.shards[2])
    found, _ = stored(world.board, config)
    assert found[PeriodKey("cats", "day", "2026-11-29")] == {"a": 1}
    assert found[PeriodKey("cats", "day", "2026-11-30")] == {"a": 1}
    assert found[PeriodKey("cats", "week", "2026-W48")] == {"a": 1}
    assert found[PeriodKey("cats", "week", "2026-W49")] == {"a": 1}
    assert found[PeriodKey("cats", "month", "2026-11")] == {"a": 2}
    assert found[PeriodKey("global", "all", "all")] == {"a": 2}
    assert found[PeriodKey("global", "hour", "2026-11-30T00")] == {"a": 1}
