"""``shardboard plan``: write shards, GSI shards and the computed overload risk for a traffic estimate."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from shardboard.domain.periods import kind_of
from shardboard_tools.cli.common import console, fail
from shardboard_tools.planning import HEADROOM, PARTITION_WRITE_UNITS
from shardboard_tools.planning import plan as make_plan
from shardboard_tools.planning_boards import (
    DEFAULT_INDEX_WRITES_PER_VIEW,
    GLOBAL_BOARD,
    BoardPlan,
    BoardsFileError,
    parse_boards,
    plan_boards,
)


@click.command()
@click.option(
    "--views-per-sec", type=click.FloatRange(min=0), default=10_000, show_default=True, help="Site-wide views/s."
)
@click.option(
    "--hot-item-share",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Share of all views that go to the single hottest item.",
)
@click.option(
    "--item-kb", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True, help="Base item size."
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Partitions the GSI keys spread over.",
)
@click.option(
    "--top",
    "top_n",
    type=click.IntRange(min=1),
    help="Leaderboard size N (with --boards: the global board's; default: the stack's TopN, as -p TopN=... sets it).",
)
@click.option(
    "--max-overload-probability",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Accepted chance that some partition holds more than 1.5x its fair share of GSI keys.",
)
@click.option(
    "--boards",
    "boards_file",
    metavar="FILE",
    help="Plan S for many boards from FILE (JSON or CSV, see above) instead of one leaderboard.",
)
@click.option(
    "--total-shards",
    type=click.IntRange(min=1),
    help="With --boards: a budget of GSI shards to share out by index writes (default: each board's minimum).",
)
@click.option(
    "--index-writes-per-view",
    type=click.FloatRange(min=0),
    default=DEFAULT_INDEX_WRITES_PER_VIEW,
    show_default=True,
    help="With --boards: GSI writes per view (2 = every view moves an indexed item; the sparse index writes less).",
)
@click.option(
    "--category-top",
    type=click.IntRange(min=1),
    help="With --boards: N of the category boards (default: the stack's CategoryTopN).",
)
@click.option(
    "--head",
    "head_size",
    is_flag=True,
    help="Instead: the snapshot head's size bound per board and period of the stack's configuration (-p, --stack).",
)
@click.option(
    "--id-bytes",
    type=click.IntRange(1, 1024),
    default=512,
    show_default=True,
    help="With --head: the ids' length as stored (UTF-8 bytes, JSON-escaped; 512 is the longest an id may be).",
)
@click.option(
    "--document-bytes",
    type=click.IntRange(0, 4096),
    default=2048,
    show_default=True,
    help="With --head: an inline document's compact JSON (0: none; 2048 is the largest PUT /item takes).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_context
def plan(
    ctx: click.Context,
    *,
    views_per_sec: float,
    hot_item_share: float,
    item_kb: float,
    partitions: int,
    top_n: int | None,
    max_overload_probability: float,
    boards_file: str | None,
    total_shards: int | None,
    index_writes_per_view: float,
    category_top: int | None,
    head_size: bool,
    id_bytes: int,
    document_bytes: int,
    as_json: bool,
) -> None:
    """Plan shard counts: write shards per hot item, GSI shards S, overload probability, refresh cost.

    With --boards FILE, plan the GSI shards S of many leaderboards instead: the global board, which every view
    counts on, and the category boards in FILE with their shares of the views. Each board gets enough shards that
    no GSI partition key takes more than 1,000 write units/s with 2x headroom; with --total-shards the budget is
    shared out by each board's share of index writes, between that minimum and the board's N. FILE is either JSON:

    \b
        {"views_per_s": 5000, "boards": {"cats": 0.35, "dogs": 0.1, "user:123": 0.001}}

    or CSV lines board,share (the rate then comes from --views-per-sec, which also overrides views_per_s):

    \b
        cats,0.35
        dogs,0.1

    Board names match [a-z0-9_.:-]{1,64}; shares are between 0 and 1. A board's N may be given as
    {"share": 0.35, "top": 50} in JSON or a third CSV column; otherwise --top (global) and --category-top.

    With --head, print instead the most bytes a snapshot head of each board and period can take with the stack's
    TopN, CategoryTopN, SnapshotSpare, PageSize and RankDepth (``shardboard -p TopN=5000 plan --head``), and the
    largest N each holds whole (docs/head-size.md); past it a head degrades, documents first.
    """
    if head_size:
        _plan_heads(ctx, id_bytes, document_bytes, as_json)
        return
    # N is a setting of the stack (template.yaml, -p, --stack): the plan derives it unless asked another.
    if top_n is None or category_top is None:
        from shardboard.settings import Settings
        from shardboard_tools.cli.common import RuntimeSource, runtime

        # Outside the command group (a program embedding the command) the template's defaults are the settings'.
        grouped = isinstance(ctx.find_root().obj, RuntimeSource) or ctx.find_root() is not ctx
        settings = runtime(ctx, published=False).settings if grouped else Settings()
        top_n = settings.top_n if top_n is None else top_n
        category_top = settings.category_top_n if category_top is None else category_top
    if boards_file is not None:
        rate = None
        if ctx.get_parameter_source("views_per_sec") is click.core.ParameterSource.COMMANDLINE:
            rate = views_per_sec
        _plan_boards(
            boards_file, rate, views_per_sec, total_shards, index_writes_per_view, top_n, category_top, as_json
        )
        return
    try:
        result = make_plan(
            views_per_sec=views_per_sec,
            hot_item_share=hot_item_share,
            item_kb=item_kb,
            partitions=partitions,
            top_n=top_n,
            max_overload_probability=max_overload_probability,
        )
    except ValueError as error:
        fail(str(error), 2)
    if as_json:
        click.echo(json.dumps(result.as_json(), indent=2))
        return
    table = Table(title=f"plan: {views_per_sec:,.0f} views/s, hot item {hot_item_share:.0%}, top {top_n:,}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("why", overflow="fold")
    table.add_row(
        "write shards per hot item",
        str(result.write_shards),
        f"seed 001: {views_per_sec * hot_item_share:,.0f} writes/s x ceil({item_kb:g} KB) / 1000 x 2 headroom",
    )
    table.add_row(
        "GSI shards S",
        str(result.gsi_shards),
        f"writes need {result.gsi_shards_for_writes}; placement on {partitions} partitions",
    )
    table.add_row(
        "overload probability",
        f"{result.overload_probability:.2%}",
        f"exact, some partition > 1.5x its fair share (limit {max_overload_probability:.0%})",
    )
    table.add_row(
        "seed 003's rule (S = 10 x partitions)",
        f"{result.seed_rule_overload_probability:.2%}",
        f"S = {result.seed_rule_gsi_shards}: the rule of thumb promises < 5%",
    )
    table.add_row(
        "items read per refresh", f"{result.refresh_items_read:,.0f}", f"N + S = {top_n + result.gsi_shards:,}"
    )
    table.add_row("read units per refresh", f"{result.refresh_read_units:,.1f}", "eventually consistent GSI queries")
    console.print(table)


def _plan_heads(ctx: click.Context, id_bytes: int, document_bytes: int, as_json: bool) -> None:
    """The head size bound of every board and period kind of the stack's configuration (docs/head-size.md)."""
    from shardboard.domain.periods import ALL
    from shardboard.domain.publishing.head_size import HEAD_BUDGET_BYTES, HeadShape, head_size_bound, largest_top_n
    from shardboard_tools.cli.common import runtime

    settings = runtime(ctx, published=False).settings
    rows = []
    for board, top_n, depth in (
        ("global", settings.top_n, settings.rank_depth),
        ("categories", settings.category_top_n, settings.category_rank_depth),
    ):
        for kind in (ALL, *settings.periods):
            shape = HeadShape(
                top_n,
                settings.snapshot_spare,
                settings.page_size,
                id_bytes,
                document_bytes,
                trending=kind_of(kind).decays,
                rank_depth=depth,
            )
            bound = head_size_bound(shape)
            rows.append(
                {
                    "board": board,
                    "period": kind,
                    "top_n": top_n,
                    "bound_bytes": bound,
                    "budget_bytes": HEAD_BUDGET_BYTES,
                    "whole": bound <= HEAD_BUDGET_BYTES,
                    "largest_top_n": largest_top_n(shape),
                }
            )
    if as_json:
        click.echo(json.dumps({"id_bytes": id_bytes, "document_bytes": document_bytes, "heads": rows}, indent=2))
        return
    table = Table(
        title=f"head size: ids of {id_bytes} bytes, documents of {document_bytes} bytes, "
        f"R {settings.snapshot_spare}, P {settings.page_size} (budget {HEAD_BUDGET_BYTES:,} bytes)"
    )
    for column in ("board", "period", "N", "bound (bytes)", "fits whole", "largest N whole"):
        table.add_column(column, justify="left" if column in {"board", "period"} else "right")
    for row in rows:
        table.add_row(
            str(row["board"]),
            str(row["period"]),
            f"{row['top_n']:,}",
            f"{row['bound_bytes']:,}",
            "yes" if row["whole"] else "no: degrades (docs/head-size.md)",
            f"{row['largest_top_n']:,}",
        )
    console.print(table)


def _plan_boards(  # noqa: PLR0917 (the command's options, passed on)
    path: str,
    rate: float | None,
    default_rate: float,
    total_shards: int | None,
    index_writes_per_view: float,
    global_top: int,
    category_top: int,
    as_json: bool,
) -> None:
    """``plan --boards``: read FILE, print one row per board."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        fail(f"--boards {path}: cannot read it ({getattr(error, 'strerror', None) or error})", 2)
    try:
        parsed = parse_boards(text, path)
        views_per_sec = rate if rate is not None else parsed.views_per_sec
        if views_per_sec is None:
            views_per_sec = default_rate
        rows = plan_boards(
            {board.name: board.share for board in parsed.boards},
            views_per_sec=views_per_sec,
            index_writes_per_view=index_writes_per_view,
            top_n={board.name: board.top_n for board in parsed.boards if board.top_n is not None},
            global_top_n=global_top,
            category_top_n=category_top,
            total_shards=total_shards,
        )
    except BoardsFileError as error:
        fail(f"--boards {path}: {error}", 2)
    except ValueError as error:
        fail(str(error), 2)
    total = sum(row.shards for row in rows)
    if as_json:
        document = {
            "views_per_sec": views_per_sec,
            "index_writes_per_view": index_writes_per_view,
            "total_shards": total,
            "shard_budget": total_shards,
            "boards": [row.as_json() for row in rows],
        }
        click.echo(json.dumps(document, indent=2))
        return
    console.print(_boards_table(rows, views_per_sec, index_writes_per_view, total, total_shards))


def _boards_table(
    rows: list[BoardPlan], views_per_sec: float, index_writes_per_view: float, total: int, budget: int | None
) -> Table:
    limit = PARTITION_WRITE_UNITS / HEADROOM
    title = f"plan: {views_per_sec:,.0f} views/s, {index_writes_per_view:g} index writes/view, {len(rows)} boards"
    caption = f"S total {total:,}" + (f" (budget {budget:,})" if budget is not None else " (each board's minimum)")
    caption += f"; writes per key <= {limit:,.0f}/s keeps {HEADROOM:g}x headroom under {PARTITION_WRITE_UNITS:,}"
    table = Table(title=title, caption=caption)
    for name in ("board", "views", "index writes/s", "of writes", "N", "S", "min S", "items/refresh", "writes/s/key"):
        table.add_column(name, justify="left" if name == "board" else "right")
    for row in rows:
        table.add_row(
            row.board + (" (all views)" if row.board == GLOBAL_BOARD else ""),
            f"{row.share * 100:.3g}%",
            f"{row.index_writes_per_sec:,.0f}",
            f"{row.index_write_share * 100:.3g}%",
            f"{row.top_n:,}",
            str(row.shards),
            str(row.min_shards),
            f"{row.refresh_items_read:,.0f}",
            f"{row.peak_writes_per_key:,.0f}",
        )
    return table
