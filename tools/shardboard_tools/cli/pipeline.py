"""The pipeline commands: init, record, process, snapshot, top, verify."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor

import click
from rich.table import Table

from shardboard.domain import validation
from shardboard.domain.recording import record_views
from shardboard.domain.snapshot import leaderboard_json
from shardboard_tools.cli.common import console, fail, one_line_errors, runtime
from shardboard_tools.local.scheduler import scheduled_event
from shardboard_tools.operations.verification import verify


@click.command()
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create the tables of template.yaml (idempotent)."""
    from shardboard_tools.template import create_tables

    rt = runtime(ctx)
    with one_line_errors():
        created = create_tables(rt.dynamodb, rt.template)
    for name in rt.template.create_table_requests().values():
        state = "created" if name["TableName"] in created else "exists"
        console.print(f"{name['TableName']}: {state}")


@click.command()
@click.argument("items", nargs=-1, required=True)
@click.option("-n", "--count", default=1, show_default=True, type=int, help="Views of each ITEM (one write per ITEM).")
@click.pass_context
def record(ctx: click.Context, items: tuple[str, ...], count: int) -> None:
    """Record COUNT views of each ITEM: one write per ITEM (ADD views COUNT) on a random write shard."""
    rt = runtime(ctx)
    with one_line_errors():
        # Validate everything first: bad input writes nothing.
        for item in items:
            validation.item_id(item)
        validation.view_count(count)
        with ThreadPoolExecutor(max_workers=min(16, len(items))) as pool:
            results = list(
                pool.map(
                    lambda item: record_views(rt.views, item, count, rt.settings.write_shards, router=rt.router), items
                )
            )
    units = sum(r.write_units for r in results)
    console.print(f"recorded {count * len(items)} views of {len(items)} item(s) ({units:g} write units)")


@click.command()
@click.option("--drain", is_flag=True, help="Exit once the stream is caught up instead of following it.")
@click.option("--batch-size", type=click.IntRange(1, 10000), help="Records per batch (default: the template's).")
@click.pass_context
def process(ctx: click.Context, drain: bool, batch_size: int | None) -> None:
    """Deliver the base table's stream to the aggregator, as the Lambda event source mapping does.

    Settings come from the template's event source; checkpoints and dead letters live in SHARDBOARD_STATE_DIR
    (default .shardboard/), so a stopped or killed runner resumes where it left off.
    """
    from shardboard.handlers import aggregate
    from shardboard_tools.lambda_model.mapping import EventSourceMapping
    from shardboard_tools.local.stream_runner import StreamRunner, default_state_dir

    rt = runtime(ctx)
    rt.export_to_handlers()
    with one_line_errors():
        mapping = EventSourceMapping.from_template(rt.template)
        runner = StreamRunner(
            rt.dynamodb,
            rt.streams,
            rt.settings.views_table,
            aggregate.handler,
            batch_size=batch_size,
            mapping=mapping,
            state_dir=default_state_dir(),
        )
        if drain:
            stats = runner.drain()
            console.print(f"processed {stats.records} records in {stats.batches} batches")
            if stats.dead_letter_batches:
                console.print(f"{stats.dead_letter_batches} batch(es) sent to {default_state_dir()}/dead-letters.jsonl")
        else:
            console.print("following the stream (Ctrl-C to stop)")
            try:
                runner.run_forever()
            except KeyboardInterrupt:
                console.print(f"stopped after {runner.stats.records} records")


@click.command()
@click.pass_context
def snapshot(ctx: click.Context) -> None:
    """Refresh the snapshot item now (what the scheduled function does)."""
    from shardboard.handlers import snapshot as snapshot_handler

    rt = runtime(ctx)
    rt.export_to_handlers()
    with one_line_errors():
        summary = rt.invoke(snapshot_handler.handler, scheduled_event())
    state = "written" if summary["written"] else "unchanged"
    console.print(
        f"snapshot v{summary['version']} {state}: {summary['items']} items, "
        f"{summary['items_read']} read in {summary['rounds']} round(s)"
    )


@click.command()
@click.option("-n", "limit", type=int, help="How many entries (default: the board's TopN).")
@click.option("--json", "as_json", is_flag=True, help="Print the leaderboard JSON of the read API.")
@click.pass_context
def top(ctx: click.Context, limit: int | None, as_json: bool) -> None:
    """Show the leaderboard from the snapshot item (one GetItem)."""
    rt = runtime(ctx)
    with one_line_errors():
        count = validation.limit(None if limit is None else str(limit), rt.settings.top_n)
        stored = rt.board.get_snapshot(rt.settings.board)
    if stored is None:
        fail("no snapshot yet: run `shardboard snapshot` first")
    board = leaderboard_json(stored, count)
    if as_json:
        click.echo(json.dumps(board, ensure_ascii=False, indent=2))
        return
    table = Table(title=f"{board['board']} · {board['generated_at']}")
    table.add_column("rank", justify="right")
    table.add_column("id")
    table.add_column("views", justify="right")
    for entry in board["items"]:
        table.add_row(str(entry["rank"]), entry["id"], f"{entry['views']:,}")
    console.print(table)


@click.command(name="verify")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.pass_context
def verify_command(ctx: click.Context, as_json: bool) -> None:
    """Compare every aggregate with the sum of its base shards; exit 1 on any difference."""
    rt = runtime(ctx)
    with one_line_errors():
        report = verify(rt.views, rt.board, rt.settings)
    if as_json:
        click.echo(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
    else:
        verdict = "exact" if report.exact else "NOT exact"
        console.print(f"verify: {verdict} ({report.items} items, {report.views} views)")
        for diff in report.differences[:20]:
            console.print(f"  {diff.item_id!r}: expected {diff.expected}, found {diff.found}", markup=False)
        for item in report.index_misses[:20]:
            console.print(f"  {item!r}: reached the threshold {report.threshold} but is not in the index", markup=False)
        if report.snapshot_exact is not None:
            console.print(f"snapshot: {'matches' if report.snapshot_exact else 'differs from'} the exact top N")
    if not report.exact:
        sys.exit(1)


COMMANDS = [init, record, process, snapshot, top, verify_command]
