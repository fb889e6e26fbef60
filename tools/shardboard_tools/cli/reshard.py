"""Shard counts: ``reshard`` (the board's GSI shards) and ``shards`` (items' dynamic write shards)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import click
from rich.table import Table

from shardboard.domain import validation
from shardboard.domain.writing.dynamic_sharding import readable_shards
from shardboard.services import sharding
from shardboard_tools.cli.common import console, fail, one_line_errors, runtime
from shardboard_tools.local.stream_runner import default_state_dir, handled_everything
from shardboard_tools.operations import resharding
from shardboard_tools.template import Template


def aggregator_grace_seconds(template: Template) -> int:
    """How long a batch that read the old layout may still run: the aggregator's timeout plus its batching window."""
    resources = template.body.get("Resources", {})
    function = resources.get("AggregatorFunction", {}).get("Properties", {})
    timeout = function.get("Timeout") or template.body.get("Globals", {}).get("Function", {}).get("Timeout", 30)
    window = template.parameters.get("StreamBatchingWindowSeconds", "0")
    return int(timeout) + int(window)


@click.command()
@click.option("--gsi-shards", "target", required=True, type=click.IntRange(1, 100), help="New board shard count S2.")
@click.option("--board", default=None, metavar="NAME", help="The board to move (default: the global board).")
@click.option(
    "--grace-seconds",
    type=click.FloatRange(0),
    help="Wait after switching layouts, for batches that read the old one (default: aggregator timeout + window).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def reshard(ctx: click.Context, target: int, board: str | None, grace_seconds: float | None, as_json: bool) -> None:
    """Move one board's GSIs (every period's) from its S board shards to S2; snapshots stay exact during the move.

    Each board has its own S (`shardboard plan --boards FILE` recommends them). Resumable: run it again with the same
    S2 after an interruption.
    """
    rt = runtime(ctx)
    with one_line_errors():
        settings = replace(rt.settings, board=validation.board_name(board or rt.settings.board))
    grace = aggregator_grace_seconds(rt.template) if grace_seconds is None else grace_seconds
    console.print(
        f"board {settings.board}: {target} GSI shards (in-flight batches get up to {grace:g}s first; no wait once"
        " the local stream runner has handled every record)"
    )

    def settled() -> bool:
        # Deployed, Lambda reads the stream and this directory has no checkpoint of it: the whole grace then.
        return handled_everything(rt.dynamodb, rt.streams, rt.settings.views_table, default_state_dir())

    def progress(report: resharding.ReshardReport) -> None:
        console.print(f"pass {report.passes}: {report.moved} aggregates moved from layout {report.previous}")

    with one_line_errors():
        try:
            report = resharding.reshard(
                rt.board, settings, target, grace_seconds=grace, settled=settled, on_pass=progress
            )
        except resharding.ReshardConflict as conflict:
            fail(str(conflict))
    if as_json:
        click.echo(json.dumps(report.__dict__))
    else:
        console.print(
            f"board {settings.board}: {report.previous} -> {report.target} GSI shards, "
            f"{report.moved} aggregates moved in {report.passes} pass(es) after {report.waited:g}s of grace"
        )


@click.command()
@click.option("--review", is_flag=True, help="Run the shrink review now (the snapshot schedule runs it too).")
@click.option("--json", "as_json", is_flag=True, help="Print the metadata as JSON.")
@click.pass_context
def shards(ctx: click.Context, review: bool, as_json: bool) -> None:
    """Items whose write shards grew past the default (the shard metadata table: docs/dynamic-sharding.md)."""
    rt = runtime(ctx)
    policy = rt.settings.shard_policy
    with one_line_errors():
        if review:
            for outcome in sharding.review(sharding.ShardReview.of(rt.stores()), even_when_off=True):
                if outcome.shrunk_to is not None:
                    console.print(f"{outcome.item_id!r}: shrunk to {outcome.shrunk_to}", markup=False)
        grown = sorted(rt.shard_metadata.scan(), key=lambda m: (-m.number_of_shards, m.item_id))
    rows: list[dict[str, Any]] = [
        {
            "id": m.item_id,
            "shards": m.number_of_shards,
            "readable_shards": readable_shards(m, policy.default_shards),
            "last_updated": m.last_updated,
            "history": [f"{epoch}:{count}" for epoch, count in m.history_counts()],
        }
        for m in grown
    ]
    if as_json:
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    table = Table(title=f"grown items (default {policy.default_shards}, max {policy.max_shards} write shards)")
    for column in ("id", "shards", "readers read", "last change", "history (epoch:count)"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row["id"],
            str(row["shards"]),
            str(row["readable_shards"]),
            str(row["last_updated"]),
            " ".join(row["history"]),
        )
    console.print(table)


COMMANDS = [reshard, shards]
