"""The pipeline commands: init, record, process, snapshot, top, rank, around, boards, verify."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from shardboard.domain.boards import BOTS_BOARD, is_reserved
from shardboard.domain.periods import ALL, KINDS, from_epoch, iso, kind_of, known_kind
from shardboard.domain.reading.pages import (
    MAX_AROUND_K,
    NotRanked,
)
from shardboard.domain.windows import parse_window
from shardboard_tools.cli.common import console, fail, one_line_errors, runtime

if TYPE_CHECKING:  # the models (pydantic) and the verifier (boto3) load in the commands that use them
    from shardboard.schema import RankedItem


@click.command()
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create the tables of template.yaml and publish the stack's settings, as a deploy does (idempotent: a re-run
    keeps the published settings a -p does not change)."""
    from shardboard.services.stack import publish_settings
    from shardboard_tools.template import create_tables

    rt = runtime(ctx)
    with one_line_errors():
        created = create_tables(rt.dynamodb, rt.template)
        publish_settings(rt.dynamodb, rt.settings, by="shardboard init", clock=rt.clock)
    for name in rt.template.create_table_requests().values():
        state = "created" if name["TableName"] in created else "exists"
        console.print(f"{name['TableName']}: {state}")
    periods = ", ".join(("all", *rt.settings.periods))
    console.print(f"settings: published (write shards {rt.settings.write_shards}; periods {periods})")


@click.command()
@click.argument("items", nargs=-1, required=True)
@click.option("-n", "--count", default=1, show_default=True, type=int, help="Views of each ITEM (one write per ITEM).")
@click.option(
    "--board",
    "boards",
    multiple=True,
    metavar="NAME",
    help="A category board the views also count on (repeatable, at most 8; the global board is implied; the"
    " stack's Boards policy decides which boards may be created).",
)
@click.option(
    "--viewer",
    metavar="V",
    help="Who viewed (a user id or a hashed IP, 1-128 printable characters): each ITEM counts once per viewer and"
    " DedupeWindow; a view seen already is reported as a duplicate and writes nothing. Needs --count 1.",
)
@click.option(
    "--user-agent",
    metavar="UA",
    help="The visitor's User-Agent: a known crawler's views count on the reserved board bots only.",
)
@click.pass_context
def record(  # noqa: PLR0917 (click passes every option by position)
    ctx: click.Context,
    items: tuple[str, ...],
    count: int,
    boards: tuple[str, ...],
    viewer: str | None,
    user_agent: str | None,
) -> None:
    """Record COUNT views of each ITEM: one write per ITEM (ADD views COUNT, and each board's counter) on a random
    write shard, in today's anchor bucket. With --viewer, one transaction per ITEM that also puts the viewer's
    dedupe marker (docs/honest-counts.md). With --user-agent of a known crawler, on the board bots only."""
    from shardboard.services import recording

    rt = runtime(ctx)
    with one_line_errors():
        # Every ITEM passes every rule (RequireItems and the Boards policy included) before the first write.
        writes = recording.ViewWrites.of(rt.stores())
        done = recording.record_each(writes, items, count, list(boards), viewer, user_agent=user_agent)
    results = done.recorded
    units = sum(r.write_units for r in results)
    on = ", ".join(done.boards)
    recorded = sum(r.views for r in results)
    duplicates = sum(r.duplicate for r in results)
    line = f"recorded {recorded} views of {len(items)} item(s) on {on} ({units:g} write units)"
    if viewer is not None:
        line += f"; {duplicates} duplicate(s) of viewer {viewer!r} not counted"
    console.print(line)


@click.command()
@click.option("--drain", is_flag=True, help="Exit once the stream is caught up instead of following it.")
@click.option("--batch-size", type=click.IntRange(1, 10000), help="Records per batch (default: the template's).")
@click.pass_context
def process(ctx: click.Context, drain: bool, batch_size: int | None) -> None:
    """Deliver the base table's stream to the aggregator, as the Lambda event source mapping does.

    Settings come from the template's event source; checkpoints and dead letters live in SHARDBOARD_STATE_DIR
    (default .shardboard/), so a stopped or killed runner resumes where it left off.
    """
    from shardboard_tools.lambda_model.mapping import EventSourceMapping
    from shardboard_tools.local.stream_runner import StreamRunner, default_state_dir

    rt = runtime(ctx)
    with one_line_errors():
        mapping = EventSourceMapping.from_template(rt.template)
        runner = StreamRunner(
            rt.dynamodb,
            rt.streams,
            rt.settings.views_table,
            rt.aggregator(),
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
    from shardboard.services.snapshot_job import run_snapshot_job

    rt = runtime(ctx)
    with one_line_errors():
        job = run_snapshot_job(rt.stores(), deadline=None)
        job.raise_if_none_refreshed()
    summary = job.summary()
    by_board: dict[str, list[dict[str, Any]]] = {}
    for one in summary["refreshed"]:
        by_board.setdefault(one["board"], []).append(one)
    for board, periods in sorted(by_board.items()):
        kinds = ", ".join(one["kind"] for one in sorted(periods, key=lambda one: listed_order(one["kind"])))
        written = sum(one["written"] for one in periods)
        read = sum(one["items_read"] for one in periods)
        console.print(f"{board}: {kinds} refreshed ({written} written, {read} items read)", markup=False)
    # The job's own refill of heads it could not prove exact (more takedowns above T than spares).
    if summary.get("repaired"):
        console.print(f"repair: {summary['repaired']} head(s) not proven exact repaired (refill)", markup=False)
    if summary.get("unproven"):
        console.print(
            f"repair: {summary['unproven']} head(s) still not proven exact: run `shardboard refill`", markup=False
        )


@click.command()
@click.option("-n", "limit", type=int, help="How many entries (default: the board's N; a page: PageSize).")
@click.option("--board", default=None, metavar="NAME", help="The board (default: the global board).")
@click.option(
    "--period", default=None, metavar="P", help="all (default) or a Periods kind: hour, day, week, month, trending."
)
@click.option("--at", "at", default=None, metavar="DATE", help="A date or time in the period (ISO-8601; default: now).")
@click.option("--offset", default=None, metavar="O", help="A page of the ranked version from this 0-based offset.")
@click.option("--cursor", default=None, metavar="C", help="The next page of the version a cursor pins.")
@click.option("--window", default=None, metavar="W", help="A rolling window of the Periods (24h, 7d), as of now.")
@click.option("--json", "as_json", is_flag=True, help="Print the leaderboard JSON of the read API.")
@click.pass_context
def top(  # noqa: PLR0917 - one parameter per click option
    ctx: click.Context,
    limit: int | None,
    board: str | None,
    period: str | None,
    at: str | None,
    offset: str | None,
    cursor: str | None,
    window: str | None,
    as_json: bool,
) -> None:
    """Show a board's leaderboard for a period from its snapshot item (one GetItem), as GET /leaderboard does; with
    --offset or --cursor, a page of its ranked version (the cursor to go on is printed)."""

    rt = runtime(ctx)
    from shardboard.domain.errors import BadInput
    from shardboard.services import reading  # pydantic: loaded when a read runs, not for --help

    reads = reading.BoardReads(rt.board, rt.items, rt.settings, rt.clock)
    with one_line_errors(), no_snapshot_hint():
        if window is not None and (offset is not None or cursor is not None):
            raise BadInput("a window has no pages: use --window without --offset or --cursor")
        if window is not None:
            answer = reading.top(reads, board=board, period=period, at=at, limit=limit, window=window)
            key, document = answer.period, answer.document
        elif offset is not None or cursor is not None:
            key = reading.period_named(rt.settings, board, period, at, now=rt.clock())
            document = reading.page(reads, board=board, period=period, at=at, offset=offset, limit=limit, cursor=cursor)
        else:
            key = reading.period_named(rt.settings, board, period, at, now=rt.clock())
            document = reading.top(reads, board=board, period=period, at=at, limit=limit).document
    if as_json:
        click.echo(json.dumps(document.as_json(), ensure_ascii=False, indent=2))
        return
    shown = kind_of(key.kind).labelled(key.bucket)
    if document.window:
        shown = f"last {document.window} ({document.period.start} to now)"  # type: ignore[union-attr]
    console.print(ranked_table(f"{document.board} · {shown}", document.generated_at, document.items))
    following = document.cursor  # a walk in progress; a plain `top` starts one with --offset 0 (or --json: walk)
    if following:  # its own line, never wrapped: a cursor split in two reads as malformed
        console.print(f"next: --cursor {following}", markup=False, highlight=False, soft_wrap=True)


@contextmanager
def no_snapshot_hint() -> Iterator[None]:
    """A period without a snapshot: exit 1 with what to run."""
    from shardboard.services import reading

    try:
        yield
    except reading.NoSnapshot as missing:
        fail(f"{missing}: record views, then run `shardboard snapshot`")


def ranked_table(title: str, caption: str, items: list[RankedItem]) -> Table:
    table = Table(title=title, caption=caption)
    table.add_column("rank", justify="right")
    table.add_column("id")
    table.add_column("views", justify="right")
    windows = list(next((entry.recent for entry in items if entry.recent), {}))  # trending's parts
    for window in windows:
        table.add_column(f"last {window}", justify="right")
    for entry in items:
        recent = entry.recent or {}
        parts = [f"{recent[window]:,}" if window in recent else "" for window in windows]
        table.add_row(str(entry.rank), entry.id, f"{entry.views:,}", *parts)
    return table


@click.command(name="around")
@click.argument("item")
@click.option("-k", "k", default=None, metavar="K", help=f"Entries above and below, 1 to {MAX_AROUND_K} (default 5).")
@click.option("--board", default=None, metavar="NAME", help="The board (default: the global board).")
@click.option(
    "--period", default="all", metavar="P", help="all (default) or a Periods kind: hour, day, week, month, trending."
)
@click.option("--at", "at", default=None, metavar="DATE", help="A date or time in the period (ISO-8601; default: now).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON of GET /around.")
@click.pass_context
def around_command(  # noqa: PLR0917 - one parameter per click option
    ctx: click.Context, item: str, k: str | None, board: str | None, period: str, at: str | None, as_json: bool
) -> None:
    """ITEM's neighbours in a period, as GET /around answers: the k entries above and below it, 2k + 1 in all,
    shifted at the top and bottom, with exact ranks."""

    rt = runtime(ctx)
    from shardboard.services import reading  # pydantic: loaded when a read runs, not for --help

    reads = reading.BoardReads(rt.board, rt.items, rt.settings, rt.clock)
    with one_line_errors(), no_snapshot_hint():
        try:
            document = reading.neighbours(reads, item, k=k, board=board, period=period, at=at).document()
        except NotRanked as missing:
            fail(str(missing))
    if as_json:
        click.echo(json.dumps(document.model_dump(mode="json"), ensure_ascii=False, indent=2))
        return
    caption = f"{document.above} above, {document.below} below · {document.source} · {document.as_of}"
    console.print(ranked_table(f"around {item} (#{document.position})", caption, document.items))


@click.command()
@click.argument("items", nargs=-1, required=True)
@click.option("--board", default=None, metavar="NAME", help="The board (default: the global board).")
@click.option(
    "--period", default="all", metavar="P", help="all (default) or a Periods kind: hour, day, week, month, trending."
)
@click.option("--at", "at", default=None, metavar="DATE", help="A date or time in the period (ISO-8601; default: now).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON of GET /rank.")
@click.pass_context
def rank(  # noqa: PLR0917 - one parameter per click option
    ctx: click.Context, items: tuple[str, ...], board: str | None, period: str, at: str | None, as_json: bool
) -> None:
    """Rank and percentile of each ITEM (at most 100) in a period, as GET /rank answers: exact within the ranked
    version's depth D, approximate past it."""

    rt = runtime(ctx)
    from shardboard.services import reading  # pydantic: loaded when a read runs, not for --help

    reads = reading.BoardReads(rt.board, rt.items, rt.settings, rt.clock)
    with one_line_errors(), no_snapshot_hint():
        key = reading.period_named(rt.settings, board, period, at, now=rt.clock())
        document = reading.ranks(reads, items, board=board, period=period, at=at).document()
    if as_json:
        click.echo(json.dumps(document.model_dump(mode="json"), ensure_ascii=False, indent=2))
        return
    table = Table(title=f"{key.board} · {kind_of(key.kind).labelled(key.bucket)}")
    for column in ("id", "views", "rank", "percentile", "of", "source"):
        table.add_column(column, justify="left" if column in ("id", "source") else "right")
    for one in document.ranks:
        shown = (
            str(one.rank)
            if one.rank is not None
            else (f"~{one.approximate_rank} (> {one.beyond})" if one.beyond else "-")
        )
        percent = "-" if one.percentile is None else f"{'~' if one.approximate else ''}{one.percentile:g}"
        table.add_row(one.id, f"{one.views:,}", shown, percent, f"{'' if one.of_exact else '~'}{one.of:,}", one.source)
    console.print(table)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the boards as JSON.")
@click.pass_context
def boards(ctx: click.Context, as_json: bool) -> None:
    """List the boards (a board exists once a view names it) with their GSI shards, N and last refresh, crawlers'
    views per period (counted apart, on the reserved boards), and how many category boards the registry holds under
    the Boards policy's maximum."""
    from shardboard_tools.operations.bot_views import bot_views  # boto3 (the stores): loaded when boards runs

    rt = runtime(ctx)
    with one_line_errors():
        statuses = [s for s in rt.board.periods() if kind_of(s.period.kind).pick(all_time=True, period=False)]
        layouts = {s.period.board: rt.board.get_board_state(s.period.board) for s in statuses}
        policy = rt.settings.board_policy
        registry = {"registered": rt.stores().boards.registry.count(), "max": policy.max_boards, "policy": str(policy)}
        # Crawlers' views (docs/honest-counts.md "Crawlers"): one scan, only once a crawler's view was counted.
        crawled = any(s.period.board == BOTS_BOARD for s in statuses)
        bots = bot_views(rt.stores()) if crawled else {}
    rows = [
        {
            "board": s.period.board,
            "gsi_shards": layouts[s.period.board].shards or rt.settings.board_shards,
            "top_n": rt.settings.top_n_of(s.period.board),
            "threshold": s.threshold,
            "last_change": _iso(s.changed_at),
            "last_refresh": _iso(s.refreshed_at),
            "changes_pending": s.refreshed_at < s.changed_at,
            "bot_views": bots.get(s.period.board, {}),
        }
        for s in sorted(statuses, key=lambda s: s.period.board)
        if not is_reserved(s.period.board)
    ]
    if as_json:
        click.echo(json.dumps({"boards": rows, "periods": list(rt.settings.periods), "registry": registry}, indent=2))
        return
    table = Table(
        title=f"{len(rows)} board(s) · periods: all, {', '.join(rt.settings.periods) or '(none)'}",
        caption=f"category boards registered: {registry['registered']} of {policy.max_boards} (Boards {policy})",
    )
    for column in ("board", "GSI shards", "N", "threshold", "last change", "last refresh", "bot views"):
        table.add_column(column, justify="right" if column in ("GSI shards", "N", "threshold") else "left")
    for row in rows:
        cells = [str(row[name] if row[name] is not None else "-") for name in list(row)[:6]]
        crawled_views: dict[str, int] = bots.get(str(row["board"]), {})
        shown = sorted(crawled_views.items(), key=lambda pair: ("/" in pair[0], pair[0]))  # all time first
        table.add_row(*cells, ", ".join(f"{period} {views:,}" for period, views in shown) or "-")
    console.print(table)


def _iso(epoch: int) -> str | None:
    return iso(from_epoch(epoch)) if epoch else None


@click.command(name="verify")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.pass_context
def verify_command(ctx: click.Context, as_json: bool) -> None:
    """Compare every count with its base counters and every head with its exact top N; exit 1 on any difference.

    A head still refreshing (behind its counts for less than the refresh interval plus the aggregation window)
    passes; a stale or unwritable one does not, and is named with since when."""
    from shardboard.schema import VerifyReport
    from shardboard_tools.operations.verification import verify_stack

    rt = runtime(ctx)
    with one_line_errors():
        report = verify_stack(rt.stores())
    if as_json:
        document = VerifyReport.model_validate(report.as_json())  # shardboard.schema's shape, checked
        click.echo(json.dumps(document.model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        verdict = "exact" if report.exact else "behind the stream" if report.counts_behind else "NOT exact"
        console.print(
            f"verify: {verdict} ({report.items} items, {report.views} views, {report.boards} board(s), "
            f"{report.periods} period(s), {report.hidden} hidden, {report.deleted} deleted)"
        )
        if report.uncountable:
            console.print(
                f"  {report.uncountable} base counter(s) the aggregator skips (an id, board name or bucket no request "
                "could write): not counted, not a difference",
                markup=False,
            )
        if report.counts_behind:
            console.print(
                f"  {len(report.differences)} count(s) below their base counters: the stream has not been processed "
                "yet. Run `shardboard process --drain` (a deployed stack: wait for the aggregator), then verify again.",
                markup=False,
            )
        for diff in report.differences[:20]:
            console.print(
                f"  {diff.board} {diff.period} {diff.item_id!r}: expected {diff.expected}, found {diff.found}",
                markup=False,
            )
        for miss in report.index_misses[:20]:
            console.print(f"  {miss}: reached its period's threshold but is not in the index", markup=False)
        for period in report.refill_needed[:20]:
            console.print(
                f"  {period}: more takedowns above its threshold than spares: run `shardboard refill`", markup=False
            )
        if report.snapshots_checked:
            inexact = len(report.snapshots_inexact)
            console.print(
                f"snapshots: {report.snapshots_checked - inexact} of {report.snapshots_checked} match the exact top N"
            )
        for lag in report.heads_behind[:20]:
            why = (
                f"stale: since {lag.since}, missing what its index does not hold: run `shardboard refill`"
                if lag.head in report.refill_needed
                else head_behind(lag)
            )
            console.print(f"  {lag.head}: {why}", markup=False)
    if not report.exact:
        sys.exit(1)


def head_behind(lag: Any) -> str:
    """One line on a head that does not show its exact top N (verification.HeadLag)."""
    if lag.state == "capped":
        return "capped: the exact top, cut to fit its item (docs/head-size.md)"
    if lag.failures:
        return f"stale: unwritable since {lag.since} ({lag.failures} refreshes failed in a row; the job's log says why)"
    if lag.state == "stale":
        return f"stale: behind its counts since {lag.since}: run `shardboard snapshot`, or check the snapshot job"
    return f"refreshing: behind its counts since {lag.since} (the next refresh brings it)"


# Periods in the order a board lists them: all time first, then finest to coarsest, then windows, shortest first.
PERIOD_ORDER = (ALL, *KINDS)


def listed_order(kind: str) -> tuple[int, int]:
    return (0, PERIOD_ORDER.index(kind)) if known_kind(kind) else (1, parse_window(kind).hours)


COMMANDS = [init, record, process, snapshot, top, rank, around_command, boards, verify_command]
