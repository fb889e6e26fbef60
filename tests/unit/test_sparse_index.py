"""Sparse GSI: the top N stays exact, and long-tail updates pay no index writes (docs/sparse-index.md).

The real pipeline code (record_views, the aggregator processor, take_snapshot) runs on the in-memory stores.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard_tools.bench.designs import ShardboardDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity import CapacityEmulator, VirtualClock
from tests.conftest import examples

INDEX = "memory-board/by-deep"  # all time's index


def pipeline(top_n: int, board_shards: int, batch_size: int, sparse: bool = True) -> ShardboardDesign:
    workload = Workload(top_n=top_n, gsi_shards=board_shards, write_shards=3, batch_size=batch_size)
    design = ShardboardDesign(workload, CapacityEmulator(VirtualClock()))
    design.settings = dataclasses.replace(design.settings, sparse_index=sparse)
    return design


def index_misses(design: ShardboardDesign) -> list[str]:
    """Aggregates at or above the published threshold without the GSI key (what `verify` reports)."""
    threshold = design.board.get_threshold(design.settings.board)
    return [
        item for item, (views, indexed) in design.board.scan_aggregates().items() if views >= threshold and not indexed
    ]


def brute_force_top(counts: Counter[str], n: int) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))[:n]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("view"), st.integers(0, 40)),  # a view of item i (low ids drawn more often below)
        st.tuples(st.just("drain"), st.just(0)),
        st.tuples(st.just("snapshot"), st.just(0)),
    ),
    min_size=1,
    max_size=250,
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=steps, top_n=st.integers(1, 6), board_shards=st.integers(1, 4), batch_size=st.integers(1, 9))
def test_sparse_index_keeps_the_top_n_exact(steps, top_n, board_shards, batch_size):
    # Given the pipeline with a sparse index and a random interleaving of views, drains and snapshots
    design = pipeline(top_n, board_shards, batch_size)
    counts: Counter[str] = Counter()
    for action, value in steps:
        if action == "view":
            item = f"i{value % 7 if value % 3 else value}"  # a skewed catalogue: a few hot items, a long tail
            design.view(item)
            counts[item] += 1
            design.settle()
        elif action == "drain":
            design.settle(final=True)
            # Then no item that could reach the top N is ever missing from the index
            assert index_misses(design) == []
        else:
            design.refresh()
    # When the stream is drained and a snapshot taken
    design.settle(final=True)
    design.refresh()
    # Then the leaderboard is exactly the top N of everything recorded, although the tail is not indexed
    assert design.top() == brute_force_top(counts, top_n)
    assert index_misses(design) == []


def test_long_tail_updates_pay_no_index_writes():
    for sparse, expected_index_units in ((True, 0), (False, 1)):
        # Given a board whose published threshold T is 4 (N = 2: a=5, b=4, c=3)
        design = pipeline(top_n=2, board_shards=2, batch_size=1, sparse=sparse)
        # (no spares: with SnapshotSpare R the published T is the (N+R)-th best, snapshot.index_threshold)
        design.settings = dataclasses.replace(design.settings, snapshot_spare=0)
        for item, views in (("a", 5), ("b", 4), ("c", 3)):
            for _ in range(views):
                design.view(item)
        design.settle(final=True)
        design.refresh()
        before = design.emulator.usage.units("write", INDEX)
        # When a long-tail item gets three views, one batch each (it stays below T)
        for _ in range(3):
            design.view("tail")
            design.settle(final=True)
        # Then with the sparse index its updates cost no index write; without it, a join (its count stays in bucket
        # 0, so its updates cost none either: the index sorts by the bucket of the count)
        assert design.emulator.usage.units("write", INDEX) - before == expected_index_units
        # And the tail item is counted exactly either way
        assert design.board.aggregate_views("tail") == 3


def test_an_item_reaching_the_threshold_joins_and_enters_the_top_n():
    # Given T = 4 published while "late" had 1 view
    design = pipeline(top_n=2, board_shards=3, batch_size=1)
    for item, views in (("a", 5), ("b", 4), ("late", 1)):
        for _ in range(views):
            design.view(item)
    design.settle(final=True)
    design.refresh()
    # When "late" overtakes everyone
    for _ in range(9):
        design.view("late")
    design.settle(final=True)
    design.refresh()
    # Then it joined the index and leads the board
    assert design.top() == [("late", 10), ("a", 5)]
