"""The library scenario's table and its section of docs/benchmarks.md ("Client library").

docs/benchmarks.md is written by ``make bench`` (the designs scenario) and this section by ``--scenario library``;
each keeps the other's part: the section lives between two markers and is carried over when the rest is rewritten.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

from rich.table import Table

from shardboard_tools.bench.library import API
from shardboard_tools.bench.sections import Section

SECTION = Section("library")
START, END = SECTION.start, SECTION.end


def table(result: dict[str, Any]) -> Table:
    runs = result["runs"]
    workload = result["workload"]
    shown = Table(
        title=f"library: {workload['base']['views']:,} Zipf views at {workload['base']['views_per_s']:,.0f}/s, "
        f"{workload['processes']} processes"
    )
    shown.add_column("figure")
    for name in runs:
        shown.add_column(name, justify="right")
    for label, show in ROWS:
        shown.add_row(label, *(show(run) for run in runs.values()))
    viral = result["viral"]
    shown.add_row(
        f"viral item at {workload['viral_views_per_s']:,.0f}/s: base writes/s per process (api: in all)",
        *(_viral_writes(name, viral[name]) for name in runs),
    )
    shown.add_row("viral item: throttled requests", *(f"{viral[name]['throttled_requests']:,}" for name in runs))
    return shown


def _exact(run: dict[str, Any]) -> str:
    return "yes" if run["exact_base"] and run["exact_aggregates"] and run["exact_top_n"] else "NO"


def _board_units(run: dict[str, Any]) -> float:
    return float(run["write_units_per_view"] - run["base_write_units_per_view"])


Row = tuple[str, Callable[[dict[str, Any]], str]]
ROWS: tuple[Row, ...] = (
    ("base writes per view", lambda run: f"{run['base_writes_per_view']:.4f}"),
    ("floor (distinct keys per flush per process) per view", lambda run: f"{run['floor_writes'] / run['views']:.4f}"),
    ("write units per view (base + aggregates + index)", lambda run: f"{run['write_units_per_view']:.3f}"),
    ("  of which aggregates + index", lambda run: f"{_board_units(run):.3f}"),
    ("exact after the drain (base, aggregates, top N)", _exact),
)


def section(result: dict[str, Any], command: str) -> str:
    """The "Client library" section, between its markers."""
    runs, viral, workload = result["runs"], result["viral"], result["workload"]
    names = list(runs)
    base = workload["base"]
    lines = [
        START,
        "## Client library",
        "",
        *_wrapped(
            f"Made by `{command}` (virtual time on the capacity emulator). The benchmark's workload "
            f"({base['views']:,} views, {base['distribution']}, {base['views_per_s']:,.0f} views/s) offered to "
            f"{workload['processes']} application processes, each view to one of them at random, each with its own "
            "`Recorder`; `api` is one write per view (the `POST /views` path, fixed write shards) on the same views. "
            "Every run feeds the real aggregator (its tumbling windows) and snapshot job; write units count base "
            "table, aggregates and index."
        ),
        "",
        "| figure | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    lines += [f"| {label} | " + " | ".join(show(runs[n]) for n in names) + " |" for label, show in ROWS]
    lines.append(
        f"| viral item at {workload['viral_views_per_s']:,.0f} views/s: base writes/s per process (api: in all) | "
        + " | ".join(_viral_writes(n, viral[n]) for n in names)
        + " |"
    )
    throttled = " | ".join(f"{viral[n]['throttled_requests']:,}" for n in names)
    lines.append(f"| viral item: throttled requests | {throttled} |")
    lines += ["", "| target | found | met |", "|---|---:|:---:|"]
    lines += [f"| {t['name']} | {t['found']} | {'yes' if t['met'] else '**no**'} |" for t in result["targets"]]
    lines += [
        "",
        *_wrapped(
            "Base writes equal the floor, not just come within 5 % of it: a recorder writes each buffered key once "
            "per flush, and no run had a size-triggered flush or a failed write. The aggregates and index cost about "
            "the same in every run: the aggregator's tumbling windows already make one aggregate write per item per "
            "window, however many base writes fed it; what the library saves is the base table's writes (and the "
            "stream records the aggregator reads)."
        ),
        "",
        *_wrapped(
            "What is simulated: the four processes are four `Recorder`s in one process, on in-memory tables priced "
            "by the capacity emulator (5,000 views/s of real time is beyond this machine's two cores, and the "
            "emulator's tables live in one process). Each recorder counts its views at their virtual arrival time "
            "(`Recorder(clock=...)`) and is flushed at its own virtual ticks (`flush_interval=None` and `flush()`), "
            f"process p first at (p + 1) x interval / {workload['processes']}. The floor is computed from the views "
            "generated: the distinct (process, flush window, item) keys, one counter write each at best (the "
            "workload names no category board). The recorders' writes, the aggregator and the snapshot job are the "
            "real code; the flush schedule and the arrival times are the simulation's. The viral item's `api` run "
            "throttles because its write shards are fixed (dynamic sharding is the viral-ramp scenario's subject). "
            "Four real processes recording at once on DynamoDB Local, and one killed with SIGKILL, are "
            "tests/e2e/test_client_local.py's: every view counted once, far fewer base writes than views."
        ),
        END,
        "",
    ]
    return "\n".join(lines)


def _viral_writes(name: str, run: dict[str, Any]) -> str:
    if name == API:
        return f"{run['base_writes_per_s']:,.0f}"
    return f"{run['base_writes_per_s_per_process']:,.2f}"


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, width=120, break_on_hyphens=False)
