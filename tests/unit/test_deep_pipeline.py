"""The all-time deep tier (docs/proposals/deep-tier.md) through the real aggregator and snapshot code, under
at-least-once delivery: after every drain, every aggregate at or above T_D has the head key or a deep key whose
bucket is deep_bucket(views), T and T_D never pass the (N+R)-th and D-th best, and every ranked version equals
sorting everything."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.adapters.keys import BOARD_SHARD, DEEP_BUCKET, DEEP_KEY, RANK_ENTRIES, aggregate_pk, rank_page_pk
from shardboard.domain.aggregating.batch import ViewRecord, fold
from shardboard.domain.periods import ALL, iso
from shardboard.domain.ports import BoardState, PeriodKey
from shardboard.domain.publishing.deep_tier import DEEP_BUCKET_BASE, deep_bucket
from shardboard.domain.publishing.head import RankBlock
from shardboard.services.aggregating import apply_deltas
from shardboard.services.snapshots import take_snapshot
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryBoardStore
from tests.conftest import examples
from tests.heads import pairs

EVERYTHING = PeriodKey("global", ALL, ALL)
START = datetime(2026, 11, 24, 6, 20, tzinfo=UTC)
DEEP_INDEX = "memory-board/by-deep"


def deep_settings(top_n: int, depth: int, board_shards: int, spare: int = 0) -> Settings:
    """All time only, ranked versions to D > N: the deep tier is on."""
    return Settings(
        periods=(),
        top_n=top_n,
        rank_depth=depth,
        board_shards=board_shards,
        snapshot_spare=spare,
        rank_refresh_seconds=60,
        cursor_ttl_seconds=120,
        write_concurrency=1,
    )


class Stream:
    """The records DynamoDB Streams emits for `ADD views k` on (item, write shard) counters, and their truth."""

    def __init__(self) -> None:
        self.counters: dict[tuple[str, int], int] = {}
        self.records: list[ViewRecord] = []
        self.truth: Counter[str] = Counter()

    def add(self, item: str, shard: int, views: int) -> None:
        old = self.counters.get((item, shard), 0)
        self.counters[(item, shard)] = old + views
        self.records.append(ViewRecord("global", item, ALL, shard, old, old + views))
        self.truth[item] += views

    def ranking(self) -> list[list[Any]]:
        return [[item, views] for item, views in sorted(self.truth.items(), key=lambda pair: (-pair[1], pair[0]))]


def deliver(board: MemoryBoardStore, config: Settings, batch: list[ViewRecord]) -> None:
    outcome = apply_deltas(board, fold(batch), config)
    assert not outcome.failures


def deep_misses(board: MemoryBoardStore) -> list[str]:
    """Aggregates at or above T_D without all time's key at or above the bucket of their views."""
    deep_threshold = board.get_board_state("global").deep_threshold
    missing = []
    for item, (views, _) in board.scan_aggregates().items():
        stored = board.data.items[aggregate_pk("global", item)]
        deep_keyed = DEEP_KEY in stored and int(stored.get(DEEP_BUCKET, {"N": "-1"})["N"]) >= deep_bucket(views)
        if views >= deep_threshold and BOARD_SHARD not in stored and not deep_keyed:
            missing.append(item)
    return missing


def head_misses(board: MemoryBoardStore) -> list[str]:
    threshold = board.get_threshold("global")
    return [item for item, (views, keyed) in board.scan_aggregates().items() if views >= threshold and not keyed]


def stored_version(board: MemoryBoardStore, block: RankBlock) -> list[list[Any]]:
    entries: list[list[Any]] = []
    for page in range(len(block.pages)):
        entries += json.loads(board.data.items[rank_page_pk(*EVERYTHING, block.rv, page)][RANK_ENTRIES]["S"])
    return entries


def nth_views(ranking: list[list[Any]], n: int) -> int:
    return int(ranking[n - 1][1]) if len(ranking) >= n else 0


views_of = st.tuples(st.integers(0, 60), st.integers(0, 2), st.integers(1, 40))
chunks = st.lists(
    st.tuples(
        st.lists(views_of, min_size=1, max_size=10),
        st.sampled_from(["once", "twice", "resplit", "replay"]),
        st.sampled_from(["none", "head", "rank"]),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    chunks=chunks,
    top_n=st.integers(1, 3),
    extra_depth=st.integers(1, 10),
    board_shards=st.integers(1, 3),
    spare=st.integers(0, 2),
    seed=st.integers(0, 10**6),
)
def test_the_deep_tier_keeps_every_ranked_version_exact_under_replays(
    *, chunks, top_n, extra_depth, board_shards, spare, seed
):
    # Given the aggregator and the snapshot job with the all-time deep tier (D > N + R)
    config = deep_settings(top_n, top_n + spare + extra_depth, board_shards, spare)
    depth = config.rank_depth_of("global")
    board = MemoryBoardStore(CapacityEmulator(VirtualClock()))
    stream, rng, clock, delivered = Stream(), random.Random(seed), START, 0
    for views, mode, refresh in chunks:
        for value, shard, count in views:
            stream.add(f"i{value % 5 if value % 4 else value}", shard, count)  # a few hot items, a long tail
        # When Lambda delivers the new records at least once: duplicated, re-split or replayed from a checkpoint
        batch = stream.records[delivered:]
        if mode == "resplit":
            deliver(board, config, batch[: len(batch) // 2] or batch)
        if mode == "replay":
            batch = stream.records[max(0, delivered - rng.randint(1, 6)) :]
        deliver(board, config, batch)
        if mode == "twice":
            deliver(board, config, batch)
        delivered = len(stream.records)
        # Then, drained, every aggregate at or above T has the head key, and at or above T_D the head key or a
        # deep key in the bucket of its views
        assert head_misses(board) == []
        assert deep_misses(board) == []
        if refresh == "none":
            continue
        clock += timedelta(seconds=61 if refresh == "rank" else 7)
        result = take_snapshot(board, config, iso(clock), EVERYTHING)
        truth = stream.ranking()
        # And T never passes the (N+R)-th best, nor T_D the D-th best
        state = board.get_board_state("global")
        assert state.threshold <= nth_views(truth, top_n + spare)
        assert state.deep_threshold <= nth_views(truth, depth)
        block = result.snapshot.rank
        if block is not None and block.generated_at == iso(clock):
            # And a ranked version just written is exactly the top D of everything counted
            assert stored_version(board, block) == truth[:depth]
            assert state.deep_threshold >= nth_views(truth, depth)
        assert pairs(result.snapshot.items) == truth[:top_n]
    assert {item: views for item, (views, _) in board.scan_aggregates().items()} == dict(stream.truth)


def test_an_item_below_t_n_joins_the_deep_tier_and_its_bucket_follows_its_views():
    # Given T_N = 100 (N = 1: "hot") and T_D = 2 (D = 3) published by a deep gather
    config = deep_settings(top_n=1, depth=3, board_shards=2)
    board = MemoryBoardStore(CapacityEmulator(VirtualClock()))
    stream = Stream()
    for item, views in (("hot", 100), ("b", 3), ("c", 2)):
        stream.add(item, 0, views)
    deliver(board, config, stream.records)
    take_snapshot(board, config, iso(START), EVERYTHING)
    assert board.get_board_state("global") == BoardState(100, None, None, deep_threshold=2)
    # When a new item gets 3 views (below T_N, at or above T_D), then 20 more
    stream.add("late", 1, 3)
    deliver(board, config, stream.records[-1:])
    stored = board.data.items[aggregate_pk("global", "late")]
    # Then it is keyed in all time's index (and not in `by-views`), one bucket above its count's (3: bucket 0)
    assert BOARD_SHARD not in stored and stored[DEEP_BUCKET] == {"N": "1"}
    before = board.data.emulator.usage.units("write", DEEP_INDEX)
    stream.add("late", 1, DEEP_BUCKET_BASE + 4)
    deliver(board, config, stream.records[-1:])
    # And growing into the bucket it is keyed at (23 views: bucket 1) writes nothing to the KEYS_ONLY index
    assert board.data.items[aggregate_pk("global", "late")][DEEP_BUCKET] == {"N": "1"}
    assert board.data.emulator.usage.units("write", DEEP_INDEX) == before
    # And outgrowing it (279 views: bucket 2) raises it to one above (a delete and a put in the index)
    stream.add("late", 1, DEEP_BUCKET_BASE**2)
    deliver(board, config, stream.records[-1:])
    assert board.data.items[aggregate_pk("global", "late")][DEEP_BUCKET] == {"N": "3"}
    assert board.data.emulator.usage.units("write", DEEP_INDEX) - before == 2
    # And a count change inside the bucket writes nothing to the index
    before = board.data.emulator.usage.units("write", DEEP_INDEX)
    stream.add("late", 0, 1)
    deliver(board, config, stream.records[-1:])
    assert board.data.emulator.usage.units("write", DEEP_INDEX) == before
    # And the next ranked version finds it
    result = take_snapshot(board, config, iso(START + timedelta(seconds=61)), EVERYTHING)
    assert stored_version(board, result.snapshot.rank) == stream.ranking()[:3]
    assert stream.ranking()[0][0] == "late"


def test_a_stale_writer_never_moves_a_deep_bucket_back():
    board = MemoryBoardStore(CapacityEmulator(VirtualClock()))
    config = deep_settings(top_n=1, depth=3, board_shards=1)
    stream = Stream()
    stream.add("a", 0, 1)
    deliver(board, config, stream.records)
    # Given an aggregate keyed into all time's index at bucket 2
    assert board.join_index("global", "a", {"all": "global#1#0"}, {"all": 2})
    # When a writer that saw fewer views asks for bucket 1, or the same bucket again
    # Then it is refused and the bucket stays
    assert not board.join_index("global", "a", {"all": "global#1#0"}, {"all": 1})
    assert not board.join_index("global", "a", {"all": "global#1#0"}, {"all": 2})
    assert board.state("global", "a").buckets["all"] == 2
