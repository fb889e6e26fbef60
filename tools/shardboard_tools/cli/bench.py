"""``shardboard bench`` (``make bench``): seed 002's two designs and shardboard, side by side, on the emulator."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

from shardboard_tools.bench.boards_workload import BoardsWorkload
from shardboard_tools.bench.designs import DESIGNS
from shardboard_tools.bench.notes import NOTES
from shardboard_tools.bench.report import chart, markdown, table, targets
from shardboard_tools.bench.run import run_benchmark
from shardboard_tools.bench.sections import write_keeping_sections
from shardboard_tools.bench.workload import Workload
from shardboard_tools.cli.common import require_extra


def command_line(ctx: click.Context) -> str:
    """How to reproduce this run: ``make bench`` for the defaults, else the options that differ."""
    changed = []
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        given = ctx.get_parameter_source(param.name or "") == click.core.ParameterSource.COMMANDLINE
        skipped = param.name in ("as_json", "no_files", "out") or value in ((), None)
        if skipped or (value == param.default and not given):
            continue  # a default given on the command line stays: a scenario may have its own (BoardsWorkload.views)
        flag = param.opts[0] if isinstance(param, click.Option) else ""
        for one in value if isinstance(value, tuple) else (value,):
            changed.append(f"{flag} {one:g}" if isinstance(one, float) else f"{flag} {one}")
    return "shardboard bench " + " ".join(changed) if changed else "make bench"


def with_progress(
    names: tuple[str, ...] | list[str], total: int, run: Callable[[Callable[[str, int], None]], Any]
) -> Any:
    """Run ``run(on_progress)`` with one progress bar per named run on stderr (stdout stays for ``--json``)."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        tasks = {name: progress.add_task(name, total=total) for name in names}
        return run(lambda name, done: progress.update(tasks[name], completed=done))


def given(ctx: click.Context, names: dict[str, str]) -> dict[str, Any]:
    """The options given on the command line, renamed for a scenario's workload (others keep its defaults)."""
    return {
        name: ctx.params[option]
        for option, name in names.items()
        if ctx.get_parameter_source(option) == click.core.ParameterSource.COMMANDLINE
    }


def print_targets(screen: Console, found: list[Any]) -> None:
    for target in found:
        screen.print(
            f"target {target.name}: {target.wanted}, found {target.found}: {'met' if target.met else 'MISSED'}"
        )


@click.command()
@click.option(
    "--views",
    type=click.IntRange(min=1000),
    default=Workload.views,
    show_default=True,
    help=f"Views offered (--scenario boards: {BoardsWorkload.views:,} unless given, its day boundary halfway).",
)
@click.option("--views-per-sec", type=click.FloatRange(min=1), default=Workload.views_per_s, show_default=True)
@click.option("--items", type=click.IntRange(min=10), default=Workload.items, show_default=True, help="Catalogue size.")
@click.option("--zipf-s", type=click.FloatRange(min=0), default=Workload.zipf_s, show_default=True)
@click.option("--top", "top_n", type=click.IntRange(min=1), default=Workload.top_n, show_default=True)
@click.option("--gsi-shards", type=click.IntRange(min=1), default=Workload.gsi_shards, show_default=True)
@click.option("--write-shards", type=click.IntRange(min=1), default=Workload.write_shards, show_default=True)
@click.option("--batch-size", type=click.IntRange(min=1), default=Workload.batch_size, show_default=True)
@click.option("--refresh-seconds", type=click.FloatRange(min=0.1), default=Workload.refresh_seconds, show_default=True)
@click.option(
    "--aggregation-window",
    type=click.FloatRange(min=0, max=900),
    default=Workload.aggregation_window_seconds,
    show_default=True,
    help="shardboard's tumbling window in simulated seconds (AggregationWindowSeconds; 0 = apply every batch).",
)
@click.option(
    "--probe-seconds",
    type=click.FloatRange(min=0.1),
    default=Workload.probe_seconds,
    show_default=True,
    help="Simulated seconds of each probe of the viral-item rate search (--scenario library: of the viral run).",
)
@click.option(
    "--design",
    "designs",
    multiple=True,
    type=click.Choice([*DESIGNS, "seed-per-board", "straightforward", "shardboard+24h", "shardboard+trending"]),
    help="Only these designs (repeatable); --scenario boards knows seed-per-board, straightforward, shardboard, "
    "shardboard+24h (with a 24 h rolling window) and shardboard+trending.",
)
@click.option(
    "--scenario",
    type=click.Choice(
        [
            "designs",
            "boards",
            "many-boards",
            "library",
            "honest-counts",
            "reads",
            "visitors",
            "traffic",
            "viral-ramp",
            "viral-ramp-additive",
        ]
    ),
    default="designs",
    show_default=True,
    help="designs: the side-by-side run; boards: 20 category boards and day/week/month periods "
    "(docs/benchmarks-boards.md); many-boards: one snapshot run over 1,000 changed boards "
    "(docs/boards-and-periods.md); library: the client library's coalesced writes against one write per view, "
    "4 processes, 1 s and 5 s flushes (docs/benchmarks.md, Client library); honest-counts: base-table write units "
    "per view without viewer, with viewer (duplicates) and in public mode (rate limits), and with and without "
    "retry safety (Idempotency-Key, the Recorder's retry-safe writes) under lost responses (docs/benchmarks.md); "
    "reads: ranked versions at D = N and D = 10,000 side by side (write units per view) and the cost of rank "
    "lookups (docs/benchmarks.md, Ranked versions); visitors: the crawler match's microseconds per view and a CDN's "
    "origin requests and dollars per million page loads (docs/benchmarks.md, Visitors); "
    "traffic: one site's month's bill at 10^3 to 10^9 views a day, beside the straightforward design and a managed "
    "Redis (docs/benchmarks-traffic.md; with --json it writes no files); "
    "viral-ramp: dynamic write sharding under a ramp (docs/dynamic-sharding.md).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as JSON on stdout (the table goes to stderr); writes no file unless --out is given.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("docs"),
    show_default=True,
    help="Where benchmarks.md and benchmarks.png go (`make bench` regenerates the checkout's docs).",
)
@click.option("--no-files", is_flag=True, help="Do not write docs/benchmarks.md and the chart.")
def bench(
    *,
    views: int,
    views_per_sec: float,
    items: int,
    zipf_s: float,
    top_n: int,
    gsi_shards: int,
    write_shards: int,
    batch_size: int,
    refresh_seconds: float,
    aggregation_window: float,
    probe_seconds: float,
    designs: tuple[str, ...],
    scenario: str,
    as_json: bool,
    out: Path,
    no_files: bool,
) -> None:
    """Same workload, same emulator: seed-unsharded, seed-sharded and shardboard; table, JSON, chart, markdown."""
    # JSON is for a script: the checkout's tracked docs are rewritten by `make bench`, never as a side effect of it.
    out_given = click.get_current_context().get_parameter_source("out") == click.core.ParameterSource.COMMANDLINE
    no_files = no_files or (as_json and not out_given)
    require_extra("bench", "bench", "numpy", *(() if no_files else ("matplotlib",)))
    if scenario == "boards":
        run_boards_scenario(click.get_current_context(), designs, as_json=as_json, out=None if no_files else out)
        return
    if scenario == "many-boards":
        run_many_boards_scenario(as_json=as_json)
        return
    sections = {
        "library": run_library_scenario,
        "honest-counts": run_honest_counts_scenario,
        "reads": run_reads_scenario,
        "visitors": run_visitors_scenario,
    }
    if scenario in sections:
        sections[scenario](click.get_current_context(), as_json=as_json, out=None if no_files else out)
        return
    if scenario == "traffic":
        run_traffic_scenario(click.get_current_context(), as_json=as_json, out=None if no_files or as_json else out)
        return
    if scenario != "designs":
        from shardboard_tools.scenarios.report import run_scenario

        run_scenario(scenario, as_json, out, write_files=not no_files)
        return
    workload = Workload(
        items=items,
        zipf_s=zipf_s,
        views=views,
        views_per_s=views_per_sec,
        batch_size=batch_size,
        top_n=top_n,
        gsi_shards=gsi_shards,
        write_shards=write_shards,
        refresh_seconds=refresh_seconds,
        aggregation_window_seconds=aggregation_window,
        probe_seconds=probe_seconds,
    )
    chosen = designs or DESIGNS
    screen = Console(stderr=True) if as_json else Console()
    result = with_progress(chosen, views, lambda on_progress: run_benchmark(workload, chosen, on_progress))
    screen.print(table(result))
    print_targets(screen, targets(result))
    if not no_files:
        png = chart(result, out / "benchmarks.png")
        document = markdown(result, command_line(click.get_current_context()), png.name, NOTES)
        write_keeping_sections(out / "benchmarks.md", document)
        screen.print(f"wrote {out / 'benchmarks.md'} and {png}")
    if as_json:
        click.echo(json.dumps(result, indent=2))


def run_boards_scenario(ctx: click.Context, designs: tuple[str, ...], *, as_json: bool, out: Path | None) -> None:
    """``--scenario boards``: BoardsWorkload's views (``--views`` when given) on 20 skewed category boards,
    day/week/month and all time."""
    from shardboard_tools.bench.boards import run_boards
    from shardboard_tools.bench.boards_designs import BOARDS_DESIGNS
    from shardboard_tools.bench.boards_report import markdown, table, targets

    workload = BoardsWorkload.straddling_midnight(**given(ctx, {"views": "views"}))
    chosen = tuple(d for d in designs if d in BOARDS_DESIGNS) or BOARDS_DESIGNS
    screen = Console(stderr=True) if as_json else Console()
    result = with_progress(chosen, workload.views, lambda on_progress: run_boards(workload, chosen, on_progress))
    screen.print(table(result))
    print_targets(screen, targets(result))
    if out is not None:
        from shardboard_tools.bench.notes import BOARDS_NOTES

        path = out / "benchmarks-boards.md"
        path.write_text(markdown(result, command_line(ctx), BOARDS_NOTES), encoding="utf-8")
        screen.print(f"wrote {path}")
    if as_json:
        ours = result["designs"].get("shardboard", {})
        click.echo(json.dumps({**result, **{k: ours[k] for k in SUMMARY_KEYS if k in ours}}, indent=2, default=str))


def run_honest_counts_scenario(ctx: click.Context, *, as_json: bool, out: Path | None) -> None:
    """``--scenario honest-counts``: base-table write units per view without viewer, with it, rate-limited, and with
    and without retry safety under lost responses."""
    from shardboard_tools.bench.honest_counts import RUNS, HonestWorkload, run_honest_counts
    from shardboard_tools.bench.honest_counts_report import SECTION, section, table

    workload = HonestWorkload(base=dataclasses.replace(HonestWorkload().base, **given(ctx, SIZES)))
    screen = Console(stderr=True) if as_json else Console()
    result = with_progress(RUNS, workload.base.views, lambda on_progress: run_honest_counts(workload, on_progress))
    screen.print(table(result))
    if out is not None:
        SECTION.write(out / "benchmarks.md", section(result, command_line(ctx)))
        screen.print(f"wrote {out / 'benchmarks.md'}")
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))


def run_reads_scenario(ctx: click.Context, *, as_json: bool, out: Path | None) -> None:
    """``--scenario reads``: the benchmark's workload at D = N and D = 10,000, and rank lookups priced."""
    from shardboard_tools.bench.reads import ReadsWorkload, run_reads
    from shardboard_tools.bench.reads_report import SECTION, section, table

    base = dataclasses.replace(ReadsWorkload().base, **given(ctx, {**SIZES, "top_n": "top_n"}))
    workload = ReadsWorkload(base=base)
    screen = Console(stderr=True) if as_json else Console()
    names = list(workload.runs())
    result = with_progress(names, base.views, lambda on_progress: run_reads(workload, on_progress))
    screen.print(table(result))
    print_targets(screen, [Target(**target) for target in result["targets"]])
    if out is not None:
        SECTION.write(out / "benchmarks.md", section(result, command_line(ctx)))
        screen.print(f"wrote {out / 'benchmarks.md'}")
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))


@dataclasses.dataclass(frozen=True)
class Target:
    """A target as the scenarios' JSON carries it (``print_targets`` prints it)."""

    name: str
    wanted: str
    found: Any
    met: bool


def run_visitors_scenario(ctx: click.Context, *, as_json: bool, out: Path | None) -> None:
    """``--scenario visitors``: the crawler match's cost per view and the CDN's origin requests and dollars."""
    from shardboard_tools.bench.sections import Section
    from shardboard_tools.bench.visitors import run_visitors, summary

    result = run_visitors()
    lines = summary(result)
    screen = Console(stderr=True) if as_json else Console()
    screen.print("\n".join(lines), markup=False)
    if out is not None:
        section = Section("visitors")
        part = "\n".join([section.start, *lines, "", f"Measured with `{command_line(ctx)}`.", section.end, ""])
        section.write(out / "benchmarks.md", part)
        screen.print(f"wrote {out / 'benchmarks.md'}")
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))


def run_library_scenario(ctx: click.Context, *, as_json: bool, out: Path | None) -> None:
    """``--scenario library``: the Recorder's coalesced writes on the Zipf workload, 4 processes, 1 s and 5 s."""
    from shardboard_tools.bench.library import LibraryWorkload, run_library
    from shardboard_tools.bench.library_report import SECTION, section, table

    workload = LibraryWorkload(base=Workload(**given(ctx, SIZES)), **given(ctx, {"probe_seconds": "viral_seconds"}))
    screen = Console(stderr=True) if as_json else Console()
    runs = ("api", *(f"library-{interval:g}s" for interval in workload.flush_intervals))
    result = with_progress(runs, workload.base.views, lambda on_progress: run_library(workload, on_progress))
    screen.print(table(result))
    for target in result["targets"]:
        screen.print(f"target {target['name']}: found {target['found']}: {'met' if target['met'] else 'MISSED'}")
    if out is not None:
        SECTION.write(out / "benchmarks.md", section(result, command_line(ctx)))
        screen.print(f"wrote {out / 'benchmarks.md'}")
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))


def run_traffic_scenario(ctx: click.Context, *, as_json: bool, out: Path | None) -> None:
    """``--scenario traffic``: the month's bill per level and design; the page and chart unless ``out`` is None."""
    from shardboard_tools.bench.traffic import run_traffic
    from shardboard_tools.bench.traffic_report import chart, markdown, table

    screen = Console(stderr=True) if as_json else Console()
    with Console(stderr=True).status("traffic") as status:
        result = run_traffic(on_step=lambda step: status.update(f"traffic: {step}"))
    screen.print(table(result))
    if out is not None:
        png = chart(result, out / "benchmarks-traffic.png")
        path = out / "benchmarks-traffic.md"
        path.write_text(markdown(result, command_line(ctx), png.name), encoding="utf-8")
        screen.print(f"wrote {path} and {png}")
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))


def run_many_boards_scenario(*, as_json: bool) -> None:
    """``--scenario many-boards``: one snapshot run over 1,000 changed boards, against the schedule interval."""
    from shardboard_tools.bench.many_boards import run_many_boards
    from shardboard_tools.bench.many_boards_report import scaling, table

    screen = Console(stderr=True) if as_json else Console()
    with Console(stderr=True).status("many-boards") as status:
        result = run_many_boards(on_step=lambda step: status.update(f"many-boards: {step}"))
    screen.print(table(result))
    screen.print(scaling(result))
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))


# The workload options the library and honest-counts scenarios take from the command line.
SIZES = {"views": "views", "items": "items", "views_per_sec": "views_per_s"}

# `bench --scenario boards --json` prints shardboard's headline figures at the top level too.
SUMMARY_KEYS = (
    "write_units_per_view",
    "base_writes_per_view",
    "max_refresh_read_ratio",
    "cost_per_million_views",
    "exact",
)
