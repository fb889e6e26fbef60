"""``shardboard chaos``: the seeded chaos run on DynamoDB Local, and its verdict."""

from __future__ import annotations

import logging
import os
import random
import sys
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from shardboard_tools.cli.common import console, one_line_errors
from shardboard_tools.local.engine import local_engine
from shardboard_tools.local.stream_runner import default_state_dir

if TYPE_CHECKING:
    from shardboard_tools.testing.chaos import ChaosReport

# Mirrors testing.chaos.ChaosPlan, which is imported when the command runs: it loads the handlers, whose
# loggers must be created after `shardboard` has set the log level.
DEFAULT_VIEWS, DEFAULT_ITEMS, DEFAULT_ROUNDS = 3000, 60, 6


@click.command()
@click.option("--seed", type=click.IntRange(min=0), help="Seed of the fault schedule (default: a random one, printed).")
@click.option("--views", type=click.IntRange(10, 1_000_000), default=DEFAULT_VIEWS, show_default=True)
@click.option("--items", type=click.IntRange(1, 100_000), default=DEFAULT_ITEMS, show_default=True)
@click.option("--rounds", type=click.IntRange(1, 1000), default=DEFAULT_ROUNDS, show_default=True)
@click.option(
    "--aggregation-window",
    type=click.IntRange(0, 900),
    default=0,
    show_default=True,
    help="The aggregator's tumbling window in seconds (AggregationWindowSeconds; 0 = apply every batch).",
)
@click.option("--short", is_flag=True, help="The shortened run of `make test` (a tenth of the traffic).")
def chaos(*, seed: int | None, views: int, items: int, rounds: int, aggregation_window: int, short: bool) -> None:
    """Run a workload under a random schedule of every fault, then prove the counts exact (exit 1 if not).

    Uses DynamoDB Local (moto's server without Java), or the endpoint in AWS_ENDPOINT_URL_DYNAMODB.
    """
    from shardboard_tools.testing.chaos import Chaos, ChaosPlan, chaos_runtime, shortened

    seed = random.SystemRandom().randrange(1_000_000) if seed is None else seed
    plan = ChaosPlan(seed, items, views, rounds, aggregation_window)
    plan = shortened(plan) if short else plan
    # `-p Name=Value` reaches the chaos stack too (e.g. -p SnapshotSpare=1 -p RankDepth=0: takedowns past the spares).
    overrides = click.get_current_context().find_root().meta.get("parameters") or {}
    options = (f" --aggregation-window {aggregation_window}" if aggregation_window else "") + (" --short" * short)
    given = "".join(f" -p {name}={value}" for name, value in overrides.items())
    console.print(f"chaos seed {seed}: replay with `shardboard{given} chaos --seed {seed}{options}`")
    from shardboard_tools.local.runtime import set_functions_log_level

    # The function logs every injected failure; a terminal wants the verdict (-v shows them).
    set_functions_log_level(os.environ.get("POWERTOOLS_LOG_LEVEL", "INFO"))
    for name in ("shardboard_tools.local.stream_runner", "shardboard_tools.lambda_model.delivery"):
        logging.getLogger(name).setLevel(logging.ERROR)
    default_state_dir().mkdir(parents=True, exist_ok=True)
    state_dir = tempfile.mkdtemp(prefix=f"chaos-{seed}-", dir=default_state_dir())
    with one_line_errors(), local_engine(announce=console.print):
        rt = chaos_runtime(f"chaos-{seed}-{uuid.uuid4().hex[:6]}", overrides)
        report = Chaos(rt, plan, Path(state_dir), say=console.print).run()
    show(report)
    if not report.exact:
        sys.exit(1)


def show(report: ChaosReport) -> None:
    faults = Table(title=f"faults injected (seed {report.plan.seed})")
    faults.add_column("fault")
    faults.add_column("times", justify="right")
    for name, count in sorted(report.faults.items()):
        faults.add_row(name, str(count))
    console.print(faults)
    totals, runner = report.totals, report.runner
    console.print(
        f"views written {report.views_written} (refused at the writer: {report.views_refused}); "
        f"invocations {totals.invocations}, function errors {runner.function_errors}, retries {runner.retries}, "
        f"bisections {runner.bisections}, runner restarts {report.runner_restarts}",
        markup=False,
    )
    times = ", ".join(f"{label} {report.times[label]}" for label in ("now", "boundary", "late"))
    boards = ", ".join(f"{name} {count}" for name, count in sorted(report.on_boards.items())) or "none"
    console.print(f"views by time: {times}; naming category boards: {boards}", markup=False)
    console.print(
        f"replays absorbed {totals.replays_absorbed}, gaps healed {totals.gaps_healed}, "
        f"failed items retried {totals.failed_items}",
        markup=False,
    )
    if report.rebuilds:
        restored = sum(r.views_added for r in report.rebuilds)
        console.print(f"rebuilds under traffic: {len(report.rebuilds)} ({restored} views restored)")
    if report.takedowns:
        console.print(
            f"takedowns under traffic: {report.takedowns['hide']} hides, {report.takedowns['unhide']} unhides, "
            f"{report.takedowns['delete']} deletes; "
            f"{verified_hidden(report)} hidden at the end, absent from every snapshot checked; "
            f"refill repaired {len(report.refilled)} period(s) past their spares"
        )
    if runner.dead_letter_batches:
        redriven = sum(r.views_added for r in report.redriven)
        console.print(
            f"failure destination: {runner.dead_letter_batches} batch(es), {runner.dead_letter_records} records; "
            f"redrive restored {redriven} views"
        )
    verified = report.verified
    if verified is None:
        return
    console.print(
        f"verify: {verified.boards} boards, {verified.periods} periods: {len(verified.differences)} differences, "
        f"{len(verified.index_misses)} index misses, {len(report.negative)} negative; "
        f"snapshots {verified.snapshots_checked - len(verified.snapshots_inexact)}/{verified.snapshots_checked} "
        f"exact, global all-time exact: {verified.snapshot_exact} ({verified.items} items, {verified.views} views)"
    )
    for difference in verified.differences[:10]:
        console.print(f"  {difference}", markup=False)
    for miss in verified.index_misses[:10]:
        console.print(f"  index miss: {miss}", markup=False)
    for inexact in verified.snapshots_inexact[:10]:
        console.print(f"  snapshot not exact: {inexact}", markup=False)
    console.print("[bold green]EXACT[/]" if report.exact else "[bold red]NOT EXACT[/]")


def verified_hidden(report: ChaosReport) -> int:
    return report.verified.hidden if report.verified else 0
