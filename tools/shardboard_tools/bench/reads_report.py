"""The reads scenario's table and its marked section of docs/benchmarks.md ("Ranked versions and rank lookups")."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

from rich.table import Table

from shardboard_tools.bench.reads import EXTRA_TARGET
from shardboard_tools.bench.sections import Section

SECTION = Section("reads")


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def _units(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


Row = tuple[str, Callable[[dict[str, Any]], str]]
ROWS: tuple[Row, ...] = (
    ("write units per view (total)", lambda run: f"{run['write_units_per_view']:.3f}"),
    ("extra over D = N", lambda run: f"{run['extra_write_units_per_view']:+.3f}"),
    ("of which all time's index (by-deep)", lambda run: f"{run['index_write_units_per_view']:.3f}"),
    ("of which ranked versions (pages + rank shards)", lambda run: f"{run['rank_version_write_units_per_view']:.4f}"),
    ("ranked versions written during the run", lambda run: f"{run['rank_versions_written']}"),
    ("published threshold T at the end", lambda run: f"{run['threshold']:,}"),
    ("published deep threshold T_D at the end", lambda run: f"{run.get('deep_threshold', 0):,}"),
    ("read units of the last ranked version's refresh", lambda run: _units(run.get("gather_read_units"))),
    ("snapshot head bytes (one GetItem)", lambda run: f"{run['head_bytes']:,}"),
    ("head read units (eventually consistent)", lambda run: f"{run['frontend_read_units']:g}"),
    ("top N exact", lambda run: _yes(run["exact_top_n"])),
    ("last ranked version exact (top D vs brute force)", lambda run: _yes(run["exact_ranked_version"])),
    ("throttled requests", lambda run: f"{run['throttled_requests']:,}"),
)


def lookup_rows(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(where, requests, read units, answer) of each priced rank lookup, when the run priced them."""
    return [
        (
            row["where"],
            str(row["requests"]),
            f"{row['read_units']:g}",
            f"{row['answer']}; true rank {row['true_rank']:,}",
        )
        for row in result.get("lookups", [])
    ]


def table(result: dict[str, Any]) -> Table:
    base = result["workload"]["base"]
    shown = Table(title=f"reads: {base['views']:,} views, {base['distribution']}, N = {base['top_n']:,}")
    shown.add_column("figure")
    for name in result["runs"]:
        shown.add_column(name, justify="right")
    for label, show in ROWS:
        shown.add_row(label, *(show(run) for run in result["runs"].values()))
    return shown


def section(result: dict[str, Any], command: str) -> str:
    """The "Ranked versions" section of docs/benchmarks.md, between its markers."""
    runs, base = result["runs"], result["workload"]["base"]
    lines = [
        SECTION.start,
        "## Ranked versions and rank lookups",
        "",
        *_wrapped(
            f"Made by `{command}` (virtual time on the capacity emulator). The benchmark's workload "
            f"({base['views']:,} views, {base['distribution']}, {base['views_per_s']:,.0f} views/s, snapshot job "
            f"every {base['refresh_seconds']:g} s, N = {base['top_n']:,}, R = {base['snapshot_spare']} takedown "
            "spares as deployed) through the real pipeline once per "
            "column, side by side in one run: D = N keeps no ranked versions (the snapshot is the ranking, the "
            "cost the designs above are "
            f"compared at); D = {result['workload']['depth']:,} (`RankDepth`, the template's default) makes the "
            "snapshot job gather the exact top D at most every `RankRefreshSeconds` (the template's 60 s, and 10 s: "
            "every run of the job, to show how much T_D lagging behind the D-th best costs) through the all-time "
            "deep tier (docs/proposals/deep-tier.md), store it as pages and rank shards, and publish T_D, the D-th "
            "best, beside the sparse-index T, which stays the (N+R)-th best. Write "
            "units are every write of the run (base table, aggregates, index, snapshot heads, ranked versions) "
            "over the views recorded; the ranked versions' own items are tallied apart. After the drain one more "
            "ranked version is taken and compared, entry by entry, with the brute-force ranking of every view."
        ),
        "",
        "| figure | " + " | ".join(runs) + " |",
        "|---|" + "---:|" * len(runs),
    ]
    lines += [f"| {label} | " + " | ".join(show(run) for run in runs.values()) + " |" for label, show in ROWS]
    lookups = lookup_rows(result)
    if lookups:
        lines += [
            "",
            *_wrapped(
                "Rank lookups (`GET /rank`, one id each), around-me (`GET /around`) and pages (`GET /leaderboard?"
                "offset=` and `?cursor=`) on the last ranked version of the first D run, the head's GetItem included:"
            ),
            "",
        ]
        lines += ["| read | requests | read units | answer |", "|---|---:|---:|---|"]
        lines += [f"| {where} | {requests} | {units} | {answer} |" for where, requests, units, answer in lookups]
        lines += [
            "",
            *_wrapped(
                "The emulator counts each key of a BatchGetItem as a request: an around-me window that spans two "
                "stored pages shows 4 requests for 3 calls (the head, one rank shard, one BatchGetItem of 2 pages)."
            ),
        ]
    lines += ["", "| target | wanted | found | met |", "|---|---|---|---|"]
    lines += [
        f"| {t['name']} | {t['wanted']} | {t['found']} | {'yes' if t['met'] else 'NO'} |" for t in result["targets"]
    ]
    lines += ["", *_wrapped(note(result)), SECTION.end, ""]
    return "\n".join(lines)


def note(result: dict[str, Any]) -> str:
    """Where the extra goes, from the figures: all time's index and the ranked versions."""
    today, ranked, *others = result["runs"].values()
    index = ranked["index_write_units_per_view"] - today["index_write_units_per_view"]
    versions = ranked["rank_version_write_units_per_view"]
    extra = ranked["extra_write_units_per_view"]
    faster = (
        f" With a deep gather at every run of the job ({list(result['runs'])[2]}) the extra is "
        f"{others[0]['extra_write_units_per_view']:+.3f}: T_D published more often keeps fewer items keyed."
        if others
        else ""
    )
    verdict = "meets" if extra <= EXTRA_TARGET else "misses"
    return (
        f"Of the extra {extra:+.3f} write units per view ({verdict} the issue's {EXTRA_TARGET} budget), "
        f"{index:+.3f} are index writes and {versions:.4f} the ranked versions' own items. All time's index "
        "(by-deep, docs/coarse-index.md) keys the items at or above T_D (the D-th best of the last ranked version) "
        "instead of T (the (N+R)-th best), each with a KEYS_ONLY key whose range is one above floor(log16(views)), "
        "written at the join and, twice, when the count outgrows it, never when it moves inside its bucket. A ranked "
        "version's gather reads whole buckets down to the D-th best's and BatchGets their exact views (the read "
        f"units row: the last refresh of each run).{faster} Period kinds (hour, day, week, month) publish their T "
        "from the D-th best."
    )


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, width=120, break_on_hyphens=False)
