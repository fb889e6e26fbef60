"""Recovery commands: ``rebuild`` (every aggregate from the base table), ``redrive`` (the failure destination) and
``refill`` (the sparse index after more takedowns than spares)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from shardboard.domain.periods import kind_of
from shardboard_tools.cli.chaos import chaos
from shardboard_tools.cli.common import console, fail, one_line_errors, runtime
from shardboard_tools.local.stream_runner import DEAD_LETTERS_FILE, default_state_dir
from shardboard_tools.operations import recovery
from shardboard_tools.operations.refill import refill as refill_periods

segments_option = click.option(
    "--segments",
    type=click.IntRange(1, 1000),
    default=recovery.DEFAULT_SEGMENTS,
    show_default=True,
    help="Parallel scan segments (each one thread).",
)


def rebuild_state_path(board_table: str) -> Path:
    return default_state_dir() / "rebuild" / f"{board_table}.json"


def print_skips(skipped: recovery.Skips, prefix: str = "") -> None:
    """A line per reason: what a repair left alone (the aggregator skips the same), how many, the first one."""
    for reason, count in sorted(skipped.counts.items()):
        first = skipped.examples[reason]
        console.print(f"{prefix}skipped {reason}: {count} (first: {first})", markup=False, soft_wrap=True)


def print_failures(failed: dict[str, str], prefix: str = "") -> None:
    """A line per (board, item) whose repair failed (the others were repaired): run the command again."""
    for pair, error in sorted(failed.items()):
        console.print(f"{prefix}failed {pair}: {error}", markup=False, soft_wrap=True)


@click.command()
@segments_option
@click.pass_context
def migrate(ctx: click.Context, segments: int) -> None:
    """Convert the tables an earlier release wrote to this release's shape, once after `sam deploy` of it.

    The board table: aggregates and past entries whose ``v_<kind>`` still hold counts (before the coarse index,
    docs/coarse-index.md) get ``n_<kind>`` and the buckets. The items table: hidden and deleted ids kept in String
    Sets move to their own markers, and each deleted id gets the skeleton marker that refuses its look-alikes
    (docs/bad-input.md, "Look-alike ids"). The functions read and write either shape meanwhile (a write converts the
    item it touches first), so nothing waits for it; a second run converts nothing.
    """
    rt = runtime(ctx)
    with one_line_errors():
        moved = rt.items.migrate_takedown_sets()
        marked = rt.items.mark_skeletons(sorted(rt.items.denied(consistent=True)))
        converted = rt.board.migrate(segments)
    console.print(f"migrated: {converted} aggregate(s) and past entries converted, {moved} takedown id(s) moved")
    if marked:
        console.print(f"look-alikes: {marked} deleted id(s) marked by their skeleton")


@click.command()
@segments_option
@click.pass_context
def rebuild(ctx: click.Context, segments: int) -> None:
    """Recompute every aggregate, past entry and index membership, on every board and period, from the base table.

    For recovery after an outage longer than the stream's 24-hour retention, or a lost leaderboard table. Safe while
    traffic flows (the aggregator's own compare-and-set) and safe to run twice, so an interrupted rebuild is resumed
    by running it again. It first moves the hidden and deleted ids an earlier release kept in String Sets to their
    own markers (docs/deploy.md, "Upgrading": takedown markers) and marks the skeleton of each deleted id that has
    no marker of it (docs/bad-input.md, "Look-alike ids").
    """
    rt = runtime(ctx)
    with one_line_errors():
        moved = rt.items.migrate_takedown_sets()
        if moved:
            console.print(f"takedowns: {moved} id(s) moved from the sets of an earlier release to markers")
        marked = rt.items.mark_skeletons(sorted(rt.items.denied(consistent=True)))
        if marked:
            console.print(f"look-alikes: {marked} deleted id(s) marked by their skeleton")
        progress = recovery.RebuildProgress.fresh(segments)
        columns = [TextColumn("rebuild"), BarColumn(), MofNCompleteColumn(), TextColumn("items"), TimeElapsedColumn()]
        with Progress(*columns, console=console, transient=True) as bar:
            task = bar.add_task("rebuild", total=None)

            def repaired(state: recovery.RebuildProgress) -> None:
                bar.update(task, completed=state.items_repaired)

            recovery.rebuild(rt.views, rt.board, rt.settings, progress, on_page=repaired, denied=rt.items.denied)
    console.print(
        f"rebuilt: {progress.counters_scanned} counters scanned, {progress.items_repaired} (board, item) pairs "
        f"checked, {progress.views_added} views restored, {progress.aggregates_rebuilt} aggregates rebuilt, "
        f"{progress.index_joins} index joins"
    )
    print_skips(progress.skipped)
    print_failures(progress.failed)
    if progress.failed:
        fail(f"{len(progress.failed)} (board, item) pair(s) not repaired (listed above); the rest were")
    if progress.ahead:
        shown = ", ".join(repr(item) for item in progress.ahead[:10])
        fail(f"{len(progress.ahead)} aggregate(s) ahead of the base table (were counters lowered?): {shown}")


@click.command()
@click.option(
    "--file",
    "letters_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"Failure destination messages, one JSON per line (default: SHARDBOARD_STATE_DIR/{DEAD_LETTERS_FILE}).",
)
@click.pass_context
def redrive(ctx: click.Context, letters_path: Path | None) -> None:
    """Repair exactly the items of the batches the failure destination received (safe to run twice)."""
    rt = runtime(ctx)
    path = letters_path or default_state_dir() / DEAD_LETTERS_FILE
    with one_line_errors():
        letters = recovery.parse_letters(path.read_text(encoding="utf-8") if path.exists() else "", str(path))
        if not letters:
            console.print(f"nothing to redrive: {path} holds no failed batches")
            return
        results = recovery.redrive(rt.views, rt.board, rt.streams, rt.settings, letters, denied=rt.items.denied)
    for result in results:
        batch = result.batch
        where = f"{batch.shard_id} {batch.start}..{batch.end}"
        if result.expired:
            console.print(f"{where}: no longer in the stream: run `shardboard rebuild`", markup=False)
        else:
            console.print(
                f"{where}: {result.records} records, {len(result.items)} items, {result.views_added} views restored",
                markup=False,
            )
            print_skips(result.skipped, f"{where}: ")
            print_failures(result.failed, f"{where}: ")
    if any(result.expired or result.failed for result in results):
        sys.exit(1)


@click.command()
@click.option("--board", "boards", multiple=True, help="Only this board (repeatable); every board by default.")
@click.pass_context
def refill(ctx: click.Context, boards: tuple[str, ...]) -> None:
    """Give the sparse index back the items that more takedowns than spares left out (UnprovenSnapshotsAlarm).

    Lowers the threshold T of each period whose best visible items are not all at or above it, keys every item the
    lower T admits, and gathers those heads again (docs/sparse-index.md, "Takedowns"). Two scans of the board table;
    safe while traffic flows and to run twice. The snapshot job runs the same repair by itself; this is for what it
    could not finish (docs/operations.md).
    """
    rt = runtime(ctx)
    with one_line_errors():
        repaired = refill_periods(
            rt.board, rt.settings, rt.items.hidden(), rt.items.denied(), catalog=rt.items, boards=boards or None
        )
    for done in repaired:
        period = done.period
        where = kind_of(period.kind).pick(all_time=period.board, period=f"{period.board} {period.kind} {period.bucket}")
        console.print(
            f"{where}: threshold {done.threshold_was} -> {done.threshold}, {done.keyed} item(s) keyed, head gathered"
            + ("" if done.proven else " (still not proven exact: run `shardboard verify`)"),
            markup=False,
        )
    console.print(f"refill: {len(repaired)} period(s) repaired" if repaired else "refill: every period is proven")


# `chaos` proves what these commands repair; registered with them.
COMMANDS = [migrate, rebuild, redrive, refill, chaos]
