"""``shardboard demo`` (the whole pipeline on DynamoDB Local, with a report) and ``shardboard local`` (the engine)."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace

import click
from rich.table import Table

from shardboard_tools.cli.common import console, errors, fail, one_line_errors, runtime
from shardboard_tools.local.engine import ENDPOINT_VARIABLES, EngineError, local_engine, start_engine


@click.command()
@click.option("--duration", type=click.FloatRange(min=1), default=40.0, show_default=True, help="Seconds of load.")
@click.option("--views", "total_views", type=click.IntRange(min=1), help="Stop after this many views instead.")
@click.option("--rate", type=click.FloatRange(min=0), default=300.0, show_default=True, help="Views/s (0: max).")
@click.option("--items", type=click.IntRange(min=1), default=2000, show_default=True, help="Distinct items.")
@click.option("--zipf", type=click.FloatRange(min=0), default=1.0, show_default=True, help="Zipf exponent s.")
@click.option("--viral-share", type=click.FloatRange(0, 1), default=0.1, show_default=True, help="Viral item share.")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Writer threads.")
@click.option("--refresh", type=click.FloatRange(min=0.1), default=2.0, show_default=True, help="Snapshot every s.")
@click.option("--live/--no-live", default=None, help="Live table (default: when the output is a terminal).")
@click.option("--web/--no-web", default=True, show_default=True, help="Serve the leaderboard page on localhost.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port of the page (default: a free one).")
@click.option("--seed", type=int, help="Seed of the load generator, for a repeatable workload.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def demo(  # noqa: PLR0917 - one parameter per click option
    ctx: click.Context,
    duration: float,
    total_views: int | None,
    rate: float,
    items: int,
    zipf: float,
    viral_share: float,
    concurrency: int,
    refresh: float,
    live: bool | None,
    web: bool,
    port: int,
    seed: int | None,
    as_json: bool,
) -> None:
    """Run everything locally: DynamoDB Local, load, stream runner, snapshots, live view; then report and verify."""
    from shardboard_tools.local.demo import DemoOptions, run_demo
    from shardboard_tools.local.loadgen import LoadSpec
    from shardboard_tools.local.stream_runner import default_state_dir
    from shardboard_tools.local.webapp import listen_error, port_refusal

    taken = listen_error(port) if web else None
    if taken is not None:  # said before the engine and the load take their minute
        fail(port_refusal(port, taken), 2)
    rt = runtime(ctx, published=False)  # its own stack, in an engine of its own
    spec = LoadSpec(
        items=items,
        zipf_exponent=zipf,
        viral_share=viral_share,
        views_per_second=rate,
        concurrency=concurrency,
        duration_seconds=duration,
        total_views=total_views,
        seed=seed,
    )
    options = DemoOptions(
        load=spec,
        refresh_seconds=refresh,
        live=console.is_terminal if live is None else live,
        web=web,
        web_port=port,
        state_dir=default_state_dir(),
    )
    with one_line_errors():
        try:
            with local_engine(announce=lambda notice: errors.print(notice, markup=False)) as engine:
                console.print(f"engine: {engine.kind} at {engine.endpoint}")
                report = run_demo(rt, replace(options, measures_capacity=engine.kind != "moto"), console)
        except EngineError as error:
            fail(str(error))
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
    else:
        where = f" in {report.events_file}" if report.events_file else ""
        console.print(f"board events: {report.events:,} published{where} (docs/events.md)", soft_wrap=True)
        console.print(_leaderboards(report))
        console.print(_report_table(report))
        console.print(
            f"verify: {'exact' if report.verify_exact else 'NOT exact'} ({report.boards} boards, "
            f"{report.periods} leaderboards; snapshots {report.snapshots_checked - report.snapshots_inexact}/"
            f"{report.snapshots_checked} exact)"
        )
    if not report.verify_exact:
        sys.exit(1)


def _report_table(report: object) -> Table:
    from shardboard_tools.local.demo import DemoReport

    assert isinstance(report, DemoReport)

    def seconds(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f} s"

    table = Table(title="shardboard demo", show_header=False)
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("views written", f"{report.views:,} ({report.views_per_second:,.0f}/s)"),
        ("write units per view", _write_units(report.write_units_per_view)),
        (
            "aggregate writes",
            f"{report.aggregate_writes:,} ({report.aggregate_writes / max(report.views, 1):.3f}/view)",
        ),
        ("aggregator invocations", f"{report.aggregator_invocations:,}"),
        (
            "items read per refresh",
            f"{report.items_read_per_refresh:,.1f} (N+R+S = {report.refresh_floor}; whole buckets)",
        ),  # global, all time: the coarse index sorts by bucket, so a gather reads whole buckets (docs/coarse-index.md)
        ("snapshot refreshes", f"{report.refreshes}"),
        ("freshness p50 / p99", f"{seconds(report.freshness_p50_seconds)} / {seconds(report.freshness_p99_seconds)}"),
        ("failure destination", f"{report.dead_letter_batches} batch(es)"),
        ("snapshot = exact top N", "yes" if report.snapshot_exact else "no"),
        ("every snapshot exact", f"{report.snapshots_checked - report.snapshots_inexact}/{report.snapshots_checked}"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _leaderboards(report: object) -> Table:
    """The final leaderboards: the global board and the busiest category, today and all time."""
    from shardboard_tools.local.demo import DemoReport
    from shardboard_tools.local.live import Panel, board_grid

    assert isinstance(report, DemoReport)
    return board_grid([Panel(shown["title"], shown) for shown in report.leaderboards])


def _write_units(per_view: float | None) -> str:
    return "not measured on moto" if per_view is None else f"{per_view:.2f}"


@click.command(name="local")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port on 127.0.0.1 (default: a free one).")
def local_command(port: int) -> None:
    """Run the DynamoDB Local that `make dynamodb-local` installed until Ctrl-C; print the variables to export."""

    def announce(notice: str) -> None:
        errors.print(notice, markup=False)

    # DynamoDB Local takes seconds to answer: say so at once (stderr: stdout carries only the line to paste).
    click.echo("shardboard local: starting DynamoDB Local on 127.0.0.1...", err=True)
    try:
        engine = start_engine(port=port or None, adopt_endpoint=False, announce=announce)
    except EngineError as error:
        fail(str(error))
    try:
        # stdout carries only the line to paste (or eval); the rest goes to stderr.
        click.echo("export " + " ".join(f"{name}={engine.endpoint}" for name in ENDPOINT_VARIABLES))
        sys.stdout.flush()  # a pipe or file buffers it, and the reader waits for this line
        errors.print(f"{engine.kind} at {engine.endpoint}, in memory: Ctrl-C stops it", markup=False)
        while engine.running:
            time.sleep(0.5)
        fail(f"{engine.kind} stopped on its own")
    except KeyboardInterrupt:
        pass
    finally:
        engine.stop()


COMMANDS = [demo, local_command]
