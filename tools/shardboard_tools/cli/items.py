"""Item commands (issue 13): ``shardboard item put ITEM --meta JSON``, ``shardboard item get ITEM [--json]``,
``shardboard item hide ITEM [--reason TEXT]`` and ``shardboard item unhide ITEM``."""

from __future__ import annotations

import getpass
import json
import os
from datetime import UTC, datetime

import boto3
import click
from botocore.exceptions import BotoCoreError, ClientError

from shardboard.domain import takedown, validation
from shardboard.domain.items import iso_ms, meta_text, reason
from shardboard.schema import Item, ItemPut
from shardboard_tools.cli.common import console, fail, one_line_errors, runtime


@click.group()
def item() -> None:
    """Create, replace and read items (their metadata and views)."""


@item.command("put")
@click.argument("item_id", metavar="ITEM")
@click.option(
    "--meta",
    "document",
    required=True,
    metavar="JSON",
    help='The item\'s metadata: a JSON object of at most 2 KB, e.g. \'{"title": "A cat", "url": "https://..."}\'.',
)
@click.option("--json", "as_json", is_flag=True, help="Print the stored item as PUT /item answers it.")
@click.pass_context
def put(ctx: click.Context, item_id: str, document: str, as_json: bool) -> None:
    """Create ITEM with this metadata, or replace its metadata (created_at is kept). Bad input writes nothing."""
    rt = runtime(ctx)
    with one_line_errors():
        checked = (validation.item_id(item_id), meta_text(document))
        record = rt.items.put(*checked, iso_ms(datetime.now(UTC)))
    if as_json:
        click.echo(json.dumps(ItemPut.of(record).model_dump(mode="json"), ensure_ascii=False, indent=2))
        return
    state = "created" if record.rev == 1 else f"replaced (revision {record.rev})"
    console.print(f"{record.item_id}: {state}, created {record.created_at}", markup=False, highlight=False)


@item.command("get")
@click.argument("item_id", metavar="ITEM")
@click.option("--json", "as_json", is_flag=True, help="Print the item as GET /item answers it.")
@click.pass_context
def get(ctx: click.Context, item_id: str, as_json: bool) -> None:
    """Show ITEM's metadata and its exact all-time views on the global board."""
    rt = runtime(ctx)
    with one_line_errors():
        item_id = validation.item_id(item_id)
        views = rt.board.aggregate_views(item_id)
        record = rt.items.get(item_id)
    if views is None and record is None:
        fail(f"no views recorded for item {item_id!r} and it was never created")
    answer = Item.of(item_id, views, record)
    if as_json:
        click.echo(json.dumps(answer.model_dump(mode="json"), ensure_ascii=False, indent=2))
        return
    console.print(f"{answer.id}: {answer.views} views", markup=False, highlight=False)
    if answer.meta is not None:
        console.print(f"created {answer.created_at}, updated {answer.updated_at}", markup=False, highlight=False)
        console.print(json.dumps(answer.meta, ensure_ascii=False, indent=2), markup=False, highlight=False)
    else:
        console.print("no metadata (never put)", markup=False, highlight=False)


@item.command("hide")
@click.argument("item_id", metavar="ITEM")
@click.option("--reason", "why", default="", metavar="TEXT", help="Why (kept in the audit rows, at most 500 chars).")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as POST /item/hide gives it.")
@click.pass_context
def hide(ctx: click.Context, item_id: str, why: str, as_json: bool) -> None:
    """Take ITEM off every board and period now (its snapshots are patched); its views go on counting."""
    _takedown(ctx, item_id, why, as_json, takedown.hide)


@item.command("unhide")
@click.argument("item_id", metavar="ITEM")
@click.option("--reason", "why", default="", metavar="TEXT", help="Why (kept in the audit rows, at most 500 chars).")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as POST /item/unhide gives it.")
@click.pass_context
def unhide(ctx: click.Context, item_id: str, why: str, as_json: bool) -> None:
    """Put a hidden ITEM back on its boards with its exact counts (its snapshots are gathered again now)."""
    _takedown(ctx, item_id, why, as_json, takedown.unhide)


def _takedown(ctx: click.Context, item_id: str, why: str, as_json: bool, operation: takedown.Operation) -> None:
    rt = runtime(ctx)
    with one_line_errors():
        checked, why = validation.item_id(item_id), reason(why)
        try:
            done = operation(rt.items, rt.board, rt.settings, checked, by=caller(), reason=why)
        except takedown.NothingToTakeDown as missing:
            fail(str(missing))
    if as_json:
        click.echo(json.dumps(done.as_json(), ensure_ascii=False, indent=2))
        return
    state = "hidden" if done.hidden else "visible again"
    note = "" if done.changed else " (it was hidden already)"
    console.print(
        f"{done.item_id}: {state}{note}; {len(done.patched)} snapshot(s) patched, {len(done.refreshed)} gathered again",
        markup=False,
        highlight=False,
    )


def caller() -> str:
    """Who the audit rows name: the STS caller ARN on AWS, ``local:<user>`` against a local endpoint."""
    if os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"):
        return f"local:{getpass.getuser()}"
    try:
        return str(boto3.client("sts").get_caller_identity()["Arn"])
    except (BotoCoreError, ClientError):
        return f"cli:{getpass.getuser()}"


COMMANDS = [item]
