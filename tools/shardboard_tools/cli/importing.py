"""``shardboard import FILE``: backfill historical views from JSON Lines (shardboard_tools.operations.importing)."""

from __future__ import annotations

from typing import BinaryIO

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from shardboard.domain.ports import Throttled
from shardboard_tools.cli.common import console, errors, fail, one_line_errors, runtime
from shardboard_tools.operations import importing

RESUME = "run the same import again to finish it (what was written is not counted twice)"
COLUMNS = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())


@click.command(name="import")
@click.argument("source", metavar="FILE", type=click.File("rb"))
@click.option("--skip-bad", is_flag=True, help="Import the good lines, list the bad ones (exit 1 if any).")
@click.option(
    "--workers", type=click.IntRange(1, 64), default=8, show_default=True, help="Counter writes in flight at once."
)
@click.pass_context
def import_views(ctx: click.Context, source: BinaryIO, skip_bad: bool, workers: int) -> None:
    """Backfill views from FILE (JSON Lines; - reads stdin), one object a line:
    {"id": "images/1.jpg", "time": "2026-11-23T14:05:00Z", "count": 1, "boards": ["cats"]}.

    Views land in the periods of their own time, however old. The whole file is validated first: by default any
    bad line imports nothing (exit 2, naming the first one); --skip-bad imports the good lines and lists the bad.
    Each (item, anchor bucket) is one write of its totals on the import's own write shard, created only if absent:
    running the same import again, or again after an interruption, never counts a view twice.

    A line counts 1 to 1000 views (as POST /views; split larger counts over lines) at a time from 1970 to now.
    After --skip-bad, import the corrected lines as a file of their own: the corrected whole file would be another
    import and count its good lines again.
    """
    rt = runtime(ctx)
    data = source.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    screen = Console(stderr=True)
    quiet = not screen.is_terminal  # a pipe or a log gets the summary lines only
    # Every line, and the Boards policy, before the first write: by default any bad line imports nothing.
    refusal = ""
    with one_line_errors(), Progress(*COLUMNS, console=screen, transient=True, disable=quiet) as bar:
        task = bar.add_task("validating lines", total=len(lines))
        try:
            parsed = importing.prepare(
                lines, rt.settings.anchor, rt.stores().boards, skip_bad=skip_bad, on_line=lambda _: bar.advance(task)
            )
        except importing.ImportRefused as refused:
            refusal = str(refused)  # said once the bar is gone
    if refusal:
        fail(refusal, 2)
    for bad in parsed.bad:
        errors.print(f"shardboard: skipped {bad}", markup=False, highlight=False, soft_wrap=True)
    identity = importing.import_id(parsed.counters)
    with one_line_errors(), Progress(*COLUMNS, console=screen, transient=True, disable=quiet) as bar:
        task = bar.add_task("writing counters", total=len(parsed.counters))
        try:
            done = importing.run_import(
                rt.views, parsed.counters, identity, workers=workers, on_write=lambda _: bar.advance(task)
            )
        except importing.ImportConflict as conflict:
            fail(f"import conflict: {conflict}")
        except Throttled as throttled:
            fail(f"{throttled} after {importing.MAX_WRITE_ATTEMPTS} attempts: {RESUME}")
        except KeyboardInterrupt:
            fail(f"interrupted: {RESUME}", 130)
    console.print(importing.summary(parsed, done), markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"import {identity[:12]} on write shard {importing.import_shard(identity)}"
        f" ({len(lines)} lines read, {len(parsed.bad)} bad)",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if parsed.bad:
        fail(f"{len(parsed.bad)} bad line(s) skipped (first: {parsed.bad[0]})", 1)


COMMANDS = [import_views]
