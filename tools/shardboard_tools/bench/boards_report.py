"""The boards scenario's report: a table side by side, its targets, and docs/benchmarks-boards.md."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from shardboard_tools.bench.boards_workload import BoardsWorkload
from shardboard_tools.bench.prices import READ_REQUEST_UNIT_DOLLARS, WRITE_REQUEST_UNIT_DOLLARS
from shardboard_tools.bench.report import Target, reads_or_cost

# The targets for shardboard in this scenario (docs/benchmarks-boards.md): 2.0 write units per view, 2.5 at
# the very least, and a cost below the straightforward design's.
MAX_WRITE_UNITS_PER_VIEW = 2.0
LEAST_WRITE_UNITS_PER_VIEW = 2.5
BASE_WRITES_PER_VIEW = 1.0
MAX_REFRESH_READ_RATIO = 1.15

ROWS = (
    ("write units per view", "write_units_per_view", "{:.3f}"),
    ("  base table", ("breakdown", "base"), "{:.3f}"),
    ("  aggregates (and past entries)", ("breakdown", "aggregates"), "{:.3f}"),
    ("  GSI entries", ("breakdown", "index"), "{:.3f}"),
    ("  snapshots and thresholds", ("breakdown", "snapshots"), "{:.4f}"),
    ("refresh read units per view", ("breakdown", "refresh_reads"), "{:.4f}"),
    ("worst refresh read ratio (items / (N + S))", "max_refresh_read_ratio", "{:.2f}"),
    ("mean refresh read ratio", "mean_refresh_read_ratio", "{:.2f}"),
    ("throttled requests", "throttled_requests", "{:,}"),
    ("cost per million views (on-demand, reads included)", "cost_per_million_views", "${:.2f}"),
    ("exact on every (board, period)", "exact", "{}"),
)
# What only shardboard's designs do: "n/a" for the others. Events are EventBridge entries (PutEvents), not DynamoDB
# units; the reads closing makes are kept out of the units and the cost above.
SHARDBOARD_ROWS = (
    ("events published (PutEvents entries)", ("events", "published"), "{:,}"),
    ("  events per refresh run, mean", ("events", "per_refresh_mean"), "{:,.1f}"),
    ("  events per refresh run, max", ("events", "per_refresh_max"), "{:,}"),
    ("  entered events", ("events", "entered"), "{:,}"),
    ("  left events", ("events", "left"), "{:,}"),
    ("  closed events", ("events", "closed"), "{:,}"),
    ("  PutEvents requests (10 entries, 256 KB at most)", ("events", "put_events_requests"), "{:,}"),
    ("  billed events (64 KB chunks)", ("events", "billed_events"), "{:,}"),
    ("  read units closing ended periods (not in the cost)", ("events", "closing_read_units"), "{:,.1f}"),
    ("window scan fallbacks (sums proven by a table scan)", "scan_fallbacks", "{:,}"),
)


PRICES_NOTE = (
    f"Dollars at DynamoDB's on-demand prices, ${WRITE_REQUEST_UNIT_DOLLARS * 1e6:g} per million write request units "
    f"and ${READ_REQUEST_UNIT_DOLLARS * 1e6:g} per million read request units (us-east-1, Standard table class; "
    "tools/shardboard_tools/bench/prices.py)."
)
EVENTS_NOTE = (
    "Events are what the snapshot job publishes to EventBridge (one PutEvents entry each, priced by EventBridge, not "
    "in the units or the cost above): the shardboard designs refresh with an announcer over an in-memory sink and "
    "close the ended periods after each run, as the deployed job does; closing reads the ledger and the ended heads, "
    "booked apart. Window scan fallbacks: window and trending sums the hours' thresholds could not prove, counted "
    "from a scan of the board table instead (docs/rolling-windows.md)."
)
WORKLOAD_NOTE = (
    f"The scenario's defaults (`BoardsWorkload`): {BoardsWorkload.views:,} views unless `--views` is given, sized to "
    "finish within 10 minutes on a 2-core machine; `start` puts a UTC midnight halfway through the views."
)


def _value(figures: dict[str, Any], key: str | tuple[str, str]) -> Any:
    if isinstance(key, tuple):
        return figures.get(key[0], {}).get(key[1])
    return figures.get(key)


def _rows() -> list[tuple[str, str | tuple[str, str], str, str]]:
    """Every row with what it shows for a design without the figure."""
    return [*((*row, "-") for row in ROWS), *((*row, "n/a") for row in SHARDBOARD_ROWS)]


def table(result: dict[str, Any]) -> Table:
    designs = result["designs"]
    shown = Table(
        title=f"boards scenario: {result['workload']['views']:,} views, {len(result['workload']['boards'])} boards"
    )
    shown.add_column("metric")
    for name in designs:
        shown.add_column(name, justify="right")
    for label, key, form, missing in _rows():
        cells = []
        for figures in designs.values():
            value = _value(figures, key)
            cells.append(missing if value is None else form.format(value))
        shown.add_row(label, *cells)
    return shown


def _below_straightforward(designs: dict[str, Any], ours: dict[str, Any]) -> list[Target]:
    plain = designs.get("straightforward")
    if plain is None:
        return []
    found, theirs = ours["cost_per_million_views"], plain["cost_per_million_views"]
    return [Target("cost per million views", f"< straightforward's ${theirs:.2f}", f"${found:.2f}", found < theirs)]


def targets(result: dict[str, Any]) -> list[Target]:
    ours = result["designs"].get("shardboard")
    if ours is None:
        return []
    return [
        Target(
            "one base-table write per view",
            f"= {BASE_WRITES_PER_VIEW:g}",
            f"{ours['base_writes_per_view']:.3f}",
            abs(ours["base_writes_per_view"] - BASE_WRITES_PER_VIEW) < 1e-9,
        ),
        *(
            Target(
                f"write units per view{label}",
                f"<= {limit:g}",
                f"{ours['write_units_per_view']:.3f}",
                ours["write_units_per_view"] <= limit,
            )
            for label, limit in (("", MAX_WRITE_UNITS_PER_VIEW), (" (at the very least)", LEAST_WRITE_UNITS_PER_VIEW))
        ),
        *_below_straightforward(result["designs"], ours),
        reads_or_cost(
            "worst refresh read ratio",
            f"<= {MAX_REFRESH_READ_RATIO:g}",
            f"{ours['max_refresh_read_ratio']:.2f} (mean {ours['mean_refresh_read_ratio']:.2f})",
            ours["max_refresh_read_ratio"] <= MAX_REFRESH_READ_RATIO,
            result["designs"],
        ),
        Target("exact on every board and period", "yes", "yes" if ours["exact"] else "no", bool(ours["exact"])),
    ]


def markdown(result: dict[str, Any], command: str, notes: str) -> str:
    designs = result["designs"]
    lines = [
        "# Benchmark: many boards and calendar periods",
        "",
        f"Made by `{command}` (virtual time on the capacity emulator, as docs/benchmarks.md describes).",
        "",
        "| metric | " + " | ".join(designs) + " |",
        "|---|" + "---:|" * len(designs),
    ]
    for label, key, form, missing in _rows():
        cells = [(missing if (v := _value(f, key)) is None else form.format(v)) for f in designs.values()]
        lines.append(f"| {label.strip()} | " + " | ".join(cells) + " |")
    lines += ["", PRICES_NOTE, "", EVENTS_NOTE]
    ours = designs.get("shardboard")
    if ours and ours.get("index_write_units_by_index"):
        lines += ["", "## shardboard's index writes per view, by index", "", "| index | write units per view |"]
        lines.append("|---|---:|")
        lines += [f"| `{name}` | {units:.3f} |" for name, units in sorted(ours["index_write_units_by_index"].items())]
    lines += ["", "## Targets", "", "| target | wanted | found | met |", "|---|---|---:|:---:|"]
    lines += [f"| {t.name} | {t.wanted} | {t.found} | {'yes' if t.met else 'no'} |" for t in targets(result)]
    lines += ["", "## Workload", "", WORKLOAD_NOTE, ""]
    lines += [f"- `{key}`: {value}" for key, value in result["workload"].items()]
    lines += ["", notes.strip(), ""]
    return "\n".join(lines)
