"""``shardboard bench --scenario boards``: many boards and calendar periods, the baselines' figures.

``run_boards`` runs each design (``boards_designs``) on the workload (``boards_workload``) in virtual time and
returns, per design, its write units per view (and their breakdown: base table, aggregates, GSI entries,
snapshots), its refresh reads, its worst refresh read ratio, its throttled requests, an on-demand price per million
views (at ``prices``), and whether its final top N of every (board, period bucket) equals a brute-force count of the
workload.
Per-view figures divide by the views offered (a throttled write costs nothing and its view is lost).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from shardboard.domain.periods import ALL
from shardboard_tools.bench.boards_designs import (
    BOARDS_DESIGNS,
    BREAKDOWN,
    SEED_PER_BOARD,
    SHARDBOARD_BOARDS,
    SHARDBOARD_WINDOWED,
    STRAIGHTFORWARD,
    BoardsDesign,
    BoardsRun,
    SeedPerBoardDesign,
    StraightforwardDesign,
)
from shardboard_tools.bench.boards_shardboard import ShardboardBoardsDesign
from shardboard_tools.bench.boards_workload import BoardsWorkload, BucketKey, brute_force_tops
from shardboard_tools.bench.prices import on_demand_dollars


def make_boards_design(name: str, workload: BoardsWorkload) -> BoardsDesign:
    if name == SEED_PER_BOARD:
        return SeedPerBoardDesign(workload)
    if name == STRAIGHTFORWARD:
        return StraightforwardDesign(workload)
    if name == SHARDBOARD_BOARDS:
        return ShardboardBoardsDesign(workload)
    if name == SHARDBOARD_WINDOWED:
        return ShardboardBoardsDesign(workload, windows=("24h",))
    raise ValueError(f"unknown boards design {name!r}; choose from {', '.join(BOARDS_DESIGNS)}")


def summarize(run: BoardsRun, truth: dict[BucketKey, list[tuple[str, int]]]) -> dict[str, Any]:
    """One design's figures as JSON (per view = per view offered)."""
    views = max(1, run.views_offered)
    writes = sum(run.write_units.values())
    breakdown: dict[str, float] = {role: run.write_units[role] / views for role in BREAKDOWN}
    breakdown["refresh_reads"] = run.refresh_read_units / views
    breakdown["other_reads"] = run.other_read_units / views
    reads = run.refresh_read_units + run.other_read_units
    mismatched = sorted("/".join(key) for key, best in truth.items() if run.tops.get(key) != best)
    mismatched += window_mismatches(run, truth)
    return {
        "write_units_per_view": writes / views,
        "base_writes_per_view": breakdown["base"],
        "breakdown": breakdown,
        "read_units_per_view": reads / views,
        "max_refresh_read_ratio": run.max_refresh_read_ratio,
        "max_refresh_read_at": run.max_refresh_read_at,
        "mean_refresh_read_ratio": run.refresh_items_read / max(1, run.refresh_minimum_items),
        "refreshes": run.refreshes,
        "refresh_items_read": run.refresh_items_read,
        "throttled_requests": run.throttled_requests,
        "views_offered": run.views_offered,
        "views_recorded": run.views_recorded,
        "cost_per_million_views": 1_000_000 * on_demand_dollars(writes, reads) / views,
        "exact": not mismatched,
        "buckets": len(truth),
        "mismatched_buckets": mismatched,
        "seconds": run.seconds,
        **run.extra,
    }


def window_mismatches(run: BoardsRun, truth: dict[BucketKey, list[tuple[str, int]]]) -> list[str]:
    """Each board's last 24 h window head against the brute force: the run is shorter than a day, so the window
    holds every view, and its top is the board's all-time top."""
    last: dict[str, BucketKey] = {}
    for key in run.tops:
        if key[1] == "24h" and (key[0] not in last or key[2] > last[key[0]][2]):
            last[key[0]] = key
    return sorted("/".join(key) for board, key in last.items() if run.tops[key] != truth.get((board, ALL, ALL)))


def run_boards(
    workload: BoardsWorkload,
    designs: tuple[str, ...] = BOARDS_DESIGNS,
    on_progress: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """The boards scenario's comparison as a JSON document."""
    started = time.perf_counter()
    views = workload.view_arrays()
    generated = time.perf_counter()
    truth = brute_force_tops(workload, views)
    counted = time.perf_counter()
    results = {}
    for name in designs:
        progress = (lambda done, name=name: on_progress(name, done)) if on_progress else None
        run = make_boards_design(name, workload).run(views, progress)
        results[name] = summarize(run, truth)
    return {
        "scenario": "boards",
        "workload": workload.as_json(),
        "timing": {
            "generate_views_s": generated - started,
            "brute_force_s": counted - generated,
            "total_s": time.perf_counter() - started,
        },
        "designs": results,
    }
