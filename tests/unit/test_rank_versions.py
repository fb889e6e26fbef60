"""Ranked versions (docs/proposals/items-and-ranks.md section 3) on the in-memory stores, through the real pipeline.

Views, drains, head refreshes and rank refreshes interleave at random: every ranked version is exactly the top D of
the aggregates as they stood at its gather, and retired versions are deleted once CursorTtlSeconds have passed. All
time runs the deep tier (docs/proposals/deep-tier.md): T stays the (N+R)-th best (every aggregate at or above it has
the head key), T_D is the D-th best of a deep gather, and after every drain every aggregate at or above T_D has the
head key or a deep key whose bucket is deep_bucket(views).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.adapters.keys import (
    BOARD_SHARD,
    DEEP_BUCKET,
    DEEP_KEY,
    PK,
    RANK_ENTRIES,
    RANK_PAGE_PREFIX,
    RANK_SHARD_PREFIX,
    aggregate_pk,
    rank_page_pk,
)
from shardboard.domain.periods import ALL, iso
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.deep_tier import deep_bucket
from shardboard.domain.publishing.gather import Entry
from shardboard.domain.publishing.head import RankBlock
from shardboard.domain.publishing.ranked_versions import build_parts, rank_shard_of
from shardboard.services.snapshots import take_snapshot
from shardboard_tools.bench.designs import ShardboardDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity import CapacityEmulator, VirtualClock
from tests.conftest import examples

EVERYTHING = PeriodKey("global", ALL, ALL)
START = datetime(2026, 11, 24, 6, 20, tzinfo=UTC)


def pipeline(top_n: int, depth: int, board_shards: int, batch_size: int) -> ShardboardDesign:
    workload = Workload(top_n=top_n, gsi_shards=board_shards, write_shards=3, batch_size=batch_size, rank_depth=depth)
    design = ShardboardDesign(workload, CapacityEmulator(VirtualClock()))
    design.settings = dataclasses.replace(design.settings, rank_refresh_seconds=60, cursor_ttl_seconds=120)
    return design


def ranking(design: ShardboardDesign) -> list[list[Any]]:
    """Brute force: every aggregate as it stands, in board order (views desc, id asc)."""
    views = {item: count for item, (count, _) in design.board.scan_aggregates().items()}
    return [[item, count] for item, count in sorted(views.items(), key=lambda pair: (-pair[1], pair[0]))]


def stored(design: ShardboardDesign, pk: str) -> dict[str, Any]:
    """An item of the board table as the adapters wrote it (read from the engine, unpriced)."""
    item = design.engine.peek(design.settings.board_table, {PK: {"S": pk}})
    assert item is not None, pk
    return item


def stored_version(design: ShardboardDesign, block: RankBlock) -> list[list[Any]]:
    entries: list[list[Any]] = []
    for page in range(len(block.pages)):
        item = stored(design, rank_page_pk(*EVERYTHING, block.rv, page))
        entries += json.loads(item[RANK_ENTRIES]["S"])
    return entries


def index_misses(design: ShardboardDesign) -> list[str]:
    threshold = design.board.get_threshold("global")
    return [item for item, (views, keyed) in design.board.scan_aggregates().items() if views >= threshold and not keyed]


def deep_misses(design: ShardboardDesign) -> list[str]:
    """Aggregates at or above T_D without all time's key at or above the bucket of their views."""
    deep_threshold = design.board.get_board_state("global").deep_threshold
    missing = []
    for item, (views, _) in design.board.scan_aggregates().items():
        aggregate = stored(design, aggregate_pk("global", item))
        deep_keyed = DEEP_KEY in aggregate and int(aggregate.get(DEEP_BUCKET, {"N": "-1"})["N"]) >= deep_bucket(views)
        if views >= deep_threshold and BOARD_SHARD not in aggregate and not deep_keyed:
            missing.append(item)
    return missing


steps = st.lists(
    st.one_of(
        st.tuples(st.just("view"), st.integers(0, 60)),
        st.tuples(st.just("drain"), st.just(0)),
        st.tuples(st.just("head"), st.integers(1, 30)),  # a head refresh that many seconds later
        st.tuples(st.just("rank"), st.integers(55, 200)),  # a refresh late enough for a ranked version
    ),
    min_size=1,
    max_size=200,
)


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=steps,
    top_n=st.integers(1, 4),
    extra_depth=st.integers(1, 8),
    board_shards=st.integers(1, 4),
    batch_size=st.integers(1, 9),
)
def test_every_ranked_version_is_exact_as_of_its_gather_and_t_stays_at_d(
    steps, top_n, extra_depth, board_shards, batch_size
):
    # Given the pipeline keeping ranked versions to D > N, and a random interleaving of views and refreshes
    depth = top_n + extra_depth
    design = pipeline(top_n, depth, board_shards, batch_size)
    clock, counts = START, Counter[str]()
    for action, value in steps:
        if action == "view":
            item = f"i{value % 9 if value % 3 else value}"  # a few hot items, a long tail, many ties
            design.view(item)
            counts[item] += 1
            design.settle()
            continue
        if action == "drain":
            design.settle(final=True)
            # Then every aggregate that can reach the top N+R has the head key, and every one that can reach the top
            # D has the head key or a deep key in its bucket
            assert index_misses(design) == []
            assert deep_misses(design) == []
            continue
        deep_before = design.board.get_board_state("global").deep_threshold
        clock += timedelta(seconds=value)
        before = ranking(design)
        result = take_snapshot(design.board, design.settings, iso(clock), EVERYTHING)
        block = result.snapshot.rank
        head_depth = top_n + design.settings.snapshot_spare
        # Then T never passes the (N+R)-th best (the head's T_N), nor T_D the D-th best
        assert design.board.get_threshold("global") <= (before[head_depth - 1][1] if len(before) >= head_depth else 0)
        assert design.board.get_board_state("global").deep_threshold <= (
            before[depth - 1][1] if len(before) >= depth else 0
        )
        if action == "head" and (block is None or block.generated_at != iso(clock)):
            # And a head refresh publishes no T_D (only a deep gather does)
            assert design.board.get_board_state("global").deep_threshold == deep_before
        if block is not None and block.generated_at == iso(clock):
            # Then a ranked version just written is exactly the top D of the aggregates at its gather
            assert stored_version(design, block) == before[:depth]
            expected_t = before[depth - 1][1] if len(before) >= depth else 0
            assert block.threshold == expected_t
            assert design.board.get_board_state("global").deep_threshold >= expected_t
        # And the head is the top N of the same aggregates
        assert [list(entry) for entry in result.snapshot.items] == before[:top_n]
    design.settle(final=True)
    assert index_misses(design) == []
    assert deep_misses(design) == []
    assert sum(views for _, views in ranking(design)) == sum(counts.values())


def test_retired_versions_are_deleted_after_the_cursor_ttl():
    # Given ranked versions written at 0 s, 60 s, 120 s and 180 s (TTL 120 s), each after a view that changed them
    design = pipeline(top_n=1, depth=3, board_shards=2, batch_size=1)
    rvs = []
    for step, item in enumerate(("a", "b", "c", "d")):
        for _ in range(step + 1):  # each new item leads the board
            design.view(item)
        design.settle(final=True)
        result = take_snapshot(design.board, design.settings, iso(START + timedelta(seconds=60 * step)), EVERYTHING)
        rvs.append(result.snapshot.rank.rv)
    # Then at 180 s the version retired at 60 s has outlived the TTL: its items are gone, the others stay
    block = design.board.get_snapshot(EVERYTHING).rank
    assert [retired.rv for retired in block.retired] == rvs[1:3]
    parts = [i[PK]["S"] for i in design.engine.items(design.settings.board_table)]
    kept = {pk.split("#")[4] for pk in parts if pk.startswith((RANK_PAGE_PREFIX, RANK_SHARD_PREFIX))}
    assert kept == set(rvs[1:])


def test_a_version_is_not_rewritten_before_rank_refresh_seconds_nor_when_nothing_changed():
    design = pipeline(top_n=1, depth=3, board_shards=2, batch_size=1)
    design.view("a")
    design.settle(final=True)
    first = take_snapshot(design.board, design.settings, iso(START), EVERYTHING).snapshot.rank
    # When a view arrives and the job runs 30 s later: no new version (not due), the head still names the first
    design.view("b")
    design.settle(final=True)
    assert (
        take_snapshot(design.board, design.settings, iso(START + timedelta(seconds=30)), EVERYTHING).snapshot.rank
        == first
    )
    # When it runs again past RankRefreshSeconds: a new version
    later = take_snapshot(design.board, design.settings, iso(START + timedelta(seconds=61)), EVERYTHING)
    assert later.snapshot.rank.rv != first.rv
    units = design.engine.write_units.get("BatchWriteItem")
    # And a due run with nothing changed writes no version
    again = take_snapshot(design.board, design.settings, iso(START + timedelta(seconds=200)), EVERYTHING)
    assert again.snapshot.rank.rv == later.snapshot.rank.rv and design.engine.write_units.get("BatchWriteItem") == units


def test_rank_shard_entries_carry_position_and_competition_rank():
    ranked = [Entry("a", 9), Entry("b", 7), Entry("c", 7), Entry("d", 7), Entry("e", 1)]
    parts = build_parts(ranked, depth=5, rv="x")
    found = {item: entry for shard in parts.shards.values() for item, entry in shard.items()}
    assert found == {"a": (1, 1, 9), "b": (2, 2, 7), "c": (3, 2, 7), "d": (4, 2, 7), "e": (5, 5, 1)}
    assert all(rank_shard_of(item, len(parts.shards)) == shard for shard, s in parts.shards.items() for item in s)
    assert parts.pages == [[("a", 9), ("b", 7), ("c", 7), ("d", 7), ("e", 1)]]
