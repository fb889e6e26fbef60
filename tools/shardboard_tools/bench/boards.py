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
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.periods import ALL, HOUR, bucket_of, from_epoch, kind_of, previous_bucket, weight_of
from shardboard.domain.trending import TRENDING, carried_score
from shardboard_tools.bench.boards_designs import (
    BOARDS_DESIGNS,
    BREAKDOWN,
    SEED_PER_BOARD,
    SHARDBOARD_BOARDS,
    SHARDBOARD_TRENDING,
    SHARDBOARD_WINDOWED,
    STRAIGHTFORWARD,
    BoardsDesign,
    BoardsRun,
    SeedPerBoardDesign,
    StraightforwardDesign,
)
from shardboard_tools.bench.boards_shardboard import ShardboardBoardsDesign
from shardboard_tools.bench.boards_workload import BoardsWorkload, BucketKey, Views, brute_force_tops, category_board
from shardboard_tools.bench.prices import on_demand_dollars


def make_boards_design(name: str, workload: BoardsWorkload) -> BoardsDesign:
    if name == SEED_PER_BOARD:
        return SeedPerBoardDesign(workload)
    if name == STRAIGHTFORWARD:
        return StraightforwardDesign(workload)
    if name == SHARDBOARD_BOARDS:
        return ShardboardBoardsDesign(workload)
    if name == SHARDBOARD_WINDOWED:
        return ShardboardBoardsDesign(workload, extra=("24h",))
    if name == SHARDBOARD_TRENDING:
        return ShardboardBoardsDesign(workload, extra=(TRENDING,))
    raise ValueError(f"unknown boards design {name!r}; choose from {', '.join(BOARDS_DESIGNS)}")


def summarize(
    run: BoardsRun, truth: dict[BucketKey, list[tuple[str, int]]], trending: TrendingTruth | None = None
) -> dict[str, Any]:
    """One design's figures as JSON (per view = per view offered)."""
    views = max(1, run.views_offered)
    writes = sum(run.write_units.values())
    breakdown: dict[str, float] = {role: run.write_units[role] / views for role in BREAKDOWN}
    breakdown["refresh_reads"] = run.refresh_read_units / views
    breakdown["other_reads"] = run.other_read_units / views
    reads = run.refresh_read_units + run.other_read_units
    mismatched = sorted("/".join(key) for key, best in truth.items() if run.tops.get(key) != best)
    mismatched += window_mismatches(run, truth)
    mismatched += trending.mismatches(run) if trending is not None else []
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


class TrendingTruth:
    """The brute-force trending scores of the workload (each view weighs its hour's W(k), default half-life) and each
    board's last trending head against them: its epoch's score plus the epoch before's, carried."""

    def __init__(self, workload: BoardsWorkload, views: Views) -> None:
        import numpy as np

        hours = np.floor((workload.start.timestamp() + views.offsets) / 3600).astype(np.int64)
        keys, counts = np.unique(np.stack([hours, views.ranks, views.categories]), axis=1, return_counts=True)
        ids = workload.item_ids()
        self.workload = workload
        self.scores: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for (hour, rank, category), count in zip(keys.T.tolist(), counts.tolist(), strict=True):
            moment = from_epoch(hour * 3600)
            epoch = bucket_of(TRENDING, moment)
            weight = weight_of(TRENDING, HOUR, bucket_of(HOUR, moment))
            for board in (GLOBAL_BOARD, category_board(category)):
                self.scores[(board, epoch)][ids[rank]] += count * weight

    def mismatches(self, run: BoardsRun) -> list[str]:
        last: dict[str, BucketKey] = {}
        for key in run.tops:
            if kind_of(key[1]).decays and (key[0] not in last or key[2] > last[key[0]][2]):
                last[key[0]] = key
        wrong = []
        for board, key in last.items():
            own, before = self.scores[(board, key[2])], self.scores[(board, previous_bucket(TRENDING, key[2]))]
            ranked = {
                item: own.get(item, 0) + carried_score(before.get(item, 0)) for item in own.keys() | before.keys()
            }
            best = sorted(((i, v) for i, v in ranked.items() if v), key=lambda entry: (-entry[1], entry[0]))
            top_n = self.workload.global_top_n if board == GLOBAL_BOARD else self.workload.category_top_n
            if run.tops[key] != best[:top_n]:
                wrong.append("/".join(key))
        return sorted(wrong)


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
    trending = TrendingTruth(workload, views) if SHARDBOARD_TRENDING in designs else None
    for name in designs:
        progress = (lambda done, name=name: on_progress(name, done)) if on_progress else None
        run = make_boards_design(name, workload).run(views, progress)
        results[name] = summarize(run, truth, trending)
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
