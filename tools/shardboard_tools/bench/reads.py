"""``shardboard bench --scenario reads``: what ranked versions (docs/proposals/items-and-ranks.md section 3)
cost in writes, and what a rank lookup costs in reads.

The benchmark's workload (``bench.workload.Workload``: 100,000 items, Zipf 1.0, 400,000 views, N = 1,000) is driven
through the real pipeline (``bench.run.drive``: record_views, the aggregator on its stream, the snapshot job) once per
depth, side by side in one run: D = N (no ranked versions: the snapshot is the ranking, today's cost) and D = 10,000
(a deep gather at most every RankRefreshSeconds through the all-time deep tier, docs/proposals/deep-tier.md: T stays
the (N+R)-th best, T_D is published from the D-th best). Every write is priced by the
capacity emulator; the units of the ranked versions' own items (pages and rank shards, written and deleted) are
tallied apart by the in-memory board. After the run a last ranked version is taken and checked against the
brute-force ranking of every view, and rank lookups are priced on it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from shardboard.adapters.dynamodb import s_attr
from shardboard.adapters.keys import PK, RANK_ENTRIES, rank_page_pk, snapshot_pk
from shardboard.domain.periods import ALL, from_epoch, iso
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.head import Head, RankBlock
from shardboard.domain.reading.pages import Cursor, around, encode_cursor, leaderboard_page
from shardboard.domain.reading.ranks import lookup_ranks
from shardboard.services.snapshots import take_snapshot
from shardboard.settings import Settings
from shardboard_tools.bench.designs import SHARDBOARD, ShardboardDesign
from shardboard_tools.bench.run import drive
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity.engine import InProcessEngine
from shardboard_tools.capacity.units import item_size

INDEX = "memory-board/by-deep"  # all time's index
# The extra write units per view that keeping D ranked may add (docs/proposals/items-and-ranks.md section 8).
EXTRA_TARGET = 0.15


@dataclass(frozen=True)
class ReadsWorkload:
    # Every column runs with the deployed takedown spares (SnapshotSpare's default): "today's figure" the issue's
    # budget is measured against is a stack as deployed, whose T already sits at the (N + R)-th best.
    base: Workload = field(default_factory=lambda: Workload(snapshot_spare=Settings().snapshot_spare))
    depth: int = 10_000
    # RankRefreshSeconds of the D runs: the template's 60 s, and 10 s (a deep gather at every run of the job, as
    # often as T can be published) to show how much of the extra is T lagging behind the D-th best.
    refresh_seconds: tuple[int, ...] = (60, 10)

    def runs(self) -> dict[str, tuple[int, int]]:
        """Run name -> (D, RankRefreshSeconds); the first is D = N."""
        named = {f"D = N = {self.base.top_n:,}": (self.base.top_n, 60)}
        for seconds in self.refresh_seconds:
            named[f"D = {self.depth:,}, every {seconds} s"] = (self.depth, seconds)
        return named

    def as_json(self) -> dict[str, Any]:
        return {"base": self.base.as_json(), "depth": self.depth, "refresh_seconds": self.refresh_seconds}


def truth_ranking(workload: Workload) -> list[tuple[str, int]]:
    ids = workload.item_ids()
    counts: dict[str, int] = {}
    for index in workload.view_sequence().tolist():
        counts[ids[index]] = counts.get(ids[index], 0) + 1
    return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))


def run_depth(
    workload: ReadsWorkload,
    variant: tuple[int, int],
    truth: list[tuple[str, int]],
    on_progress: Callable[[int], None] | None,
) -> dict[str, Any]:
    """One run of the pipeline with ranked versions to D every RankRefreshSeconds (``variant``; D = N: none)."""
    depth, seconds = variant
    base = dataclasses.replace(workload.base, rank_depth=depth, rank_refresh_seconds=seconds)
    run = drive(
        SHARDBOARD, base, base.item_ids(), base.view_sequence().tolist(), base.views_per_s, on_progress=on_progress
    )
    design = run.design
    assert isinstance(design, ShardboardDesign)
    usage, board, views = design.emulator.usage, design.board, max(1, run.views_recorded)
    period = PeriodKey(design.settings.board, ALL, ALL)
    head = board.get_snapshot(period)
    figures: dict[str, Any] = {
        "depth": design.settings.rank_depth_of(design.settings.board),
        "ranked_versions": design.settings.ranked_versions(design.settings.board),
        "views_recorded": run.views_recorded,
        "write_units_per_view": usage.units("write") / views,
        "index_write_units_per_view": usage.units("write", INDEX) / views,
        "rank_version_write_units_per_view": design.engine.write_units.get("BatchWriteItem", 0.0) / views,
        "rank_versions_written": rank_versions_written(head),
        "head_bytes": item_size(design.engine.peek(design.settings.board_table, {PK: s_attr(snapshot_pk(*period))})),
        "frontend_read_units": design.frontend_read_units(),
        "threshold": board.get_threshold(period.board),
        "deep_threshold": board.get_board_state(period.board).deep_threshold,
        "exact_top_n": design.top() == truth[: base.top_n],
        "throttled_requests": usage.throttled_requests,
    }
    figures |= final_version(design, period, truth)
    return figures


def rank_versions_written(head: Head | None) -> int:
    rank = head.rank if head else None
    return 0 if rank is None else 1 + len(rank.retired)


def final_version(design: ShardboardDesign, period: PeriodKey, truth: list[tuple[str, int]]) -> dict[str, Any]:
    """After the drain: a ranked version taken once RankRefreshSeconds have passed, compared with the truth."""
    if not design.settings.ranked_versions(period.board):
        return {"exact_ranked_version": None, "lookups": [], "gather_read_units": None}
    later = from_epoch(design.start_epoch + design.emulator.clock.now()) + timedelta(
        seconds=design.settings.rank_refresh_seconds
    )
    units = design.emulator.usage.units("read")
    result = take_snapshot(design.board, design.settings, iso(later), period)
    gather_read_units = design.emulator.usage.units("read") - units
    block = result.snapshot.rank
    assert block is not None, "a board with ranked versions names one in its head"
    depth = block.depth
    stored = ranked_entries(design.engine, design.settings.board_table, period, block)
    return {
        "exact_ranked_version": stored == [list(pair) for pair in truth[:depth]],
        "gather_read_units": gather_read_units,  # the whole refresh: head gather, deep buckets, exact views
        "lookups": price_lookups(design, period, truth),
    }


def lookup_positions(top_n: int, depth: int) -> tuple[int, ...]:
    """Board positions whose lookup the scenario prices: N, D/2, D and 2D (the issue's 1,000 / 5,000 / 10,000 at
    the defaults, and one past D)."""
    return (top_n, depth // 2, depth, 2 * depth)


def price_lookups(design: ShardboardDesign, period: PeriodKey, truth: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """Requests and read units of ``GET /rank`` for one id at each position: the head's GetItem (eventually
    consistent, as the API reads it), then what ``lookup_ranks`` reads."""
    priced = []
    usage = design.emulator.usage
    depth = design.settings.rank_depth_of(period.board)
    for position in lookup_positions(design.settings.top_n_of(period.board), depth):
        if position > len(truth):
            continue
        item = truth[position - 1][0]
        requests, units = usage.requests, usage.units("read")
        head = design.board.get_snapshot(period)
        assert head is not None, "the drain wrote the head"
        [answer] = lookup_ranks(design.board, design.settings.policy, period, head, [item], catalog=design.items)
        shown = f"rank {answer.rank:,}" if answer.rank else f"beyond {answer.beyond:,}, ~{answer.approximate_rank:,}"
        priced.append(
            {
                "where": f"position {position:,} ({answer.source})",
                "position": position,
                "true_rank": 1 + sum(1 for _, views in truth if views > truth[position - 1][1]),
                "requests": usage.requests - requests,
                "read_units": usage.units("read") - units,
                "answer": f"{shown}, percentile {answer.percentile:g} of {answer.of:,}"
                + ("" if answer.of_exact else " (modelled)"),
            }
        )
    return priced + price_around(design, period, truth) + price_page(design, period, truth)


Row = dict[str, Any]


def priced_read(design: ShardboardDesign, read: Callable[[], str]) -> tuple[int, float, str]:
    """(requests, read units, what it answered) of one read on the emulated table."""
    usage = design.emulator.usage
    requests, units = usage.requests, usage.units("read")
    answer = read()
    return usage.requests - requests, usage.units("read") - units, answer


def price_around(design: ShardboardDesign, period: PeriodKey, truth: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """``GET /around`` with k = 5 at positions D/10 and D/2 (the issue's 1,000 and 5,000): the head, then what
    ``around`` reads."""
    depth = design.settings.rank_depth_of(period.board)
    rows = []
    for position in (depth // 10, depth // 2):
        if not 0 < position <= len(truth):
            continue

        def read(item: str = truth[position - 1][0]) -> str:
            head = design.board.get_snapshot(period)
            assert head is not None, "the drain wrote the head"
            answer = around(design.board, period, head, item, k=5, catalog=design.items)
            return f"{len(answer.entries)} entries ({answer.above} above, {answer.below} below), {answer.source}"

        requests, units, answer = priced_read(design, read)
        rows.append(priced_row("around", f"around k=5 at position {position:,}", position, truth, (requests, units)))
        rows[-1]["answer"] = answer
    return rows


def price_page(design: ShardboardDesign, period: PeriodKey, truth: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """A page of 100 at offset D/2 (the issue's depth 5,000): cold (``?offset=``: the head and the pages) and with
    a cursor (``?cursor=``: the same reads, the cursor naming the version)."""
    settings = design.settings
    depth, limit = settings.rank_depth_of(period.board), min(100, settings.page_size)
    offset = depth // 2
    if offset + limit > min(depth, len(truth)):
        return []
    now = iso(from_epoch(design.start_epoch + design.emulator.clock.now()))
    rows = []
    walk: list[str] = []
    for kind in ("cold", "cursor"):

        def read(kind: str = kind) -> str:
            _, page = leaderboard_page(
                design.board,
                settings.policy,
                None if kind == "cursor" else period,
                offset="" if kind == "cursor" else str(offset),
                limit=str(limit),
                cursor=walk[0] if kind == "cursor" else "",
                now=now,
            )
            walk.append(encode_cursor(Cursor(period, page.rv or "", offset, limit)))
            exact = [[e.id, e.views] for e in page.entries] == [list(p) for p in truth[offset : offset + limit]]
            return f"{len(page.entries)} entries from rank {page.entries[0].rank:,}, exact: {exact}"

        requests, units, answer = priced_read(design, read)
        rows.append(
            priced_row("page", f"page of {limit} at offset {offset:,} ({kind})", offset + 1, truth, (requests, units))
        )
        rows[-1]["answer"] = answer
    return rows


def priced_row(read: str, where: str, position: int, truth: list[tuple[str, int]], cost: tuple[int, float]) -> Row:
    """A priced read as the reads report shows it: ``cost`` is (requests, read units)."""
    true_rank = 1 + sum(1 for _, views in truth if views > truth[position - 1][1])
    requests, units = cost
    return {
        "where": where,
        "position": position,
        "true_rank": true_rank,
        "requests": requests,
        "read_units": units,
        "read": read,
    }


def ranked_entries(engine: InProcessEngine, table: str, period: PeriodKey, block: RankBlock) -> list[list[Any]]:
    """Every entry of a ranked version, page after page (read straight from the engine's table, unpriced)."""
    entries: list[list[Any]] = []
    for page in range(len(block.pages)):
        item = engine.peek(table, {PK: s_attr(rank_page_pk(*period, block.rv, page))})
        assert item is not None, "a ranked version's pages are stored before its head names them"
        entries += json.loads(item[RANK_ENTRIES]["S"])
    return entries


def run_reads(workload: ReadsWorkload, on_progress: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    truth = truth_ranking(workload.base)
    runs: dict[str, dict[str, Any]] = {}
    for name, variant in workload.runs().items():
        progress = (lambda done, name=name: on_progress(name, done)) if on_progress else None
        runs[name] = run_depth(workload, variant, truth, progress)
    today, ranked, *others = runs.values()
    extra = ranked["write_units_per_view"] - today["write_units_per_view"]
    for figures in runs.values():
        figures["extra_write_units_per_view"] = figures["write_units_per_view"] - today["write_units_per_view"]
    lookups = ranked.pop("lookups")
    for figures in (today, *others):
        figures.pop("lookups")
    return {
        "workload": workload.as_json(),
        "runs": runs,
        "extra_write_units_per_view": extra,
        "lookups": lookups,
        "targets": [
            {
                "name": f"extra write units per view ({list(runs)[1]} over D = N)",
                "wanted": f"<= {EXTRA_TARGET}",
                "found": round(extra, 3),
                "met": extra <= EXTRA_TARGET,
            },
            *lookup_targets(lookups, workload.base),
        ],
    }


def lookup_targets(lookups: list[dict[str, Any]], base: Workload) -> list[dict[str, Any]]:
    """The issue's targets for a rank lookup: one GetItem inside the top N, at most S + 2 requests inside D."""
    found = []
    for row in lookups:
        if row.get("read") in {"around", "page"}:
            # The targets: around-me <= 2S + 2 requests, a page <= S + 1
            wanted = 2 * base.gsi_shards + 2 if row["read"] == "around" else base.gsi_shards + 1
            found.append(
                {
                    "name": f"{row['where']} requests",
                    "wanted": f"<= {wanted}",
                    "found": row["requests"],
                    "met": row["requests"] <= wanted,
                }
            )
            continue
        inside_n = row["position"] <= base.top_n
        wanted = 1 if inside_n else base.gsi_shards + 2
        found.append(
            {
                "name": f"rank lookup requests at {row['where']}",
                "wanted": f"{'=' if inside_n else '<='} {wanted}",
                "found": row["requests"],
                "met": row["requests"] <= wanted,
            }
        )
    return found
