"""Item commands (issue 13): ``shardboard item put ITEM --meta JSON``, ``shardboard item get ITEM [--json]``,
``shardboard item hide ITEM [--reason TEXT]``, ``shardboard item unhide ITEM`` and ``shardboard items --since T1
[--until T2] [-n L] [--json]`` (the newest items, as GET /items walks them)."""

from __future__ import annotations

import getpass
import json
import os
from typing import Any

import boto3
import click
from botocore.exceptions import BotoCoreError, ClientError

from shardboard.domain import newest, validation
from shardboard.domain.items import ItemRecord, meta_text, reason
from shardboard.schema import Item, ItemPut, NewestPage
from shardboard.services import takedowns as takedown
from shardboard.services.republishing import put_item
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
        record, _ = put_item(rt.items, rt.board, rt.settings, *checked)  # (heads carrying its document: patched)
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
        item_id = validation.lookup_item_id(item_id)
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


@item.command("delete")
@click.argument("item_id", metavar="ITEM")
@click.option("--reason", "why", default="", metavar="TEXT", help="Why (kept in the audit rows, at most 500 chars).")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as DELETE /item gives it.")
@click.pass_context
def delete(ctx: click.Context, item_id: str, why: str, as_json: bool) -> None:
    """Erase ITEM's counts on every board and period now; later views of it are refused. Run it again to finish a
    delete that was cut short."""
    _takedown(ctx, item_id, why, as_json, takedown.delete)


def _takedown(ctx: click.Context, item_id: str, why: str, as_json: bool, operation: takedown.Operation) -> None:
    rt = runtime(ctx)
    with one_line_errors():
        checked, why = validation.lookup_item_id(item_id), reason(why)
        try:
            done = operation(rt.items, rt.board, rt.settings, checked, by=caller(), reason=why)
        except takedown.NothingToTakeDown as missing:
            fail(str(missing))
    if as_json:
        click.echo(json.dumps(done.as_json(), ensure_ascii=False, indent=2))
        return
    status = done.as_json()["status"]
    note = "" if done.changed else f" (it was {status} already)"
    state = "visible again" if status == "visible" else status
    line = (
        f"{done.item_id}: {state}{note}; {len(done.patched)} snapshot(s) patched, {len(done.refreshed)} gathered again"
    )
    if isinstance(done, takedown.Deletion):
        line += f"; {done.erased} aggregate(s) and entries erased"
    console.print(line, markup=False, highlight=False)


def caller() -> str:
    """Who the audit rows name: the STS caller ARN on AWS, ``local:<user>`` against a local endpoint."""
    if os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"):
        return f"local:{getpass.getuser()}"
    try:
        return str(boto3.client("sts").get_caller_identity()["Arn"])
    except (BotoCoreError, ClientError):
        return f"cli:{getpass.getuser()}"


@click.command("items")
@click.option("--since", required=True, metavar="TIME", help="ISO-8601: items created at or after this time.")
@click.option("--until", default="", metavar="TIME", help="ISO-8601: items created before this time (default: now on).")
@click.option(
    "-n",
    "--limit",
    "most",
    default="100",
    metavar="L",
    show_default=True,
    help="Show at most L items (pages of up to 100 are walked until then).",
)
@click.option("--json", "as_json", is_flag=True, help="Print GET /items' shape: the walk's items and its cursor.")
@click.pass_context
def items(ctx: click.Context, since: str, until: str, most: str, as_json: bool) -> None:
    """The items created in [--since, --until), newest first, exact across the by-created shards."""
    rt = runtime(ctx)
    with one_line_errors():
        wanted = newest.window(since, until, names=("--since", "--until"))
        count = validation.limit(most, 1_000_000)
        found, cursor = walk(rt.items, wanted, count)
    if as_json:
        click.echo(json.dumps(NewestPage.of(found, cursor).as_json(), ensure_ascii=False, indent=2))
        return
    for record in found:
        title = record.document().get("title")
        shown = f"{record.created_at}  {record.item_id}" + (f"  {title}" if isinstance(title, str) else "")
        console.print(shown, markup=False, highlight=False)
    more = " (more: raise -n)" if cursor else ""
    console.print(f"{len(found)} item(s){more}", markup=False, highlight=False)


def walk(catalog: Any, wanted: newest.Window, most: int) -> tuple[list[ItemRecord], str | None]:
    """Pages of GET /items (up to 100 each) until ``most`` items or the end: the items and the cursor after them."""
    found: list[ItemRecord] = []
    cursor: str | None = None
    while len(found) < most:
        size = min(newest.MAX_NEWEST_LIMIT, most - len(found))
        page = newest.newest_items(catalog.newest, catalog.created_shards, wanted, size, cursor)
        found += page.items
        cursor = page.cursor
        if cursor is None:
            break
    return found, cursor


COMMANDS = [item, items]
