"""Item commands: ``shardboard item put ITEM --meta JSON``, ``shardboard item get ITEM [--json]``,
``shardboard item hide ITEM [--reason TEXT]``, ``shardboard item unhide ITEM`` and ``shardboard items --since T1
[--until T2] [-n L] [--json]`` (the newest items, as GET /items walks them)."""

from __future__ import annotations

import getpass
import json
import os

import boto3
import click
from botocore.exceptions import BotoCoreError, ClientError

from shardboard.domain.items.records import DeletedItem
from shardboard.schema import ItemPut, NewestPage
from shardboard.services import items as service
from shardboard.services import reading
from shardboard.services import takedowns as takedown
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
        try:
            record, _ = service.put(service.ItemEdits.of(rt.stores()), item_id, document)  # (heads patched)
        except DeletedItem as refused:
            fail(str(refused))
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
    stores = rt.stores()
    with one_line_errors():
        try:
            answer = reading.item(reading.BoardReads(stores.board, stores.items, stores.settings), item_id)
        except reading.NoItem as missing:
            fail(str(missing))
    if as_json:
        click.echo(json.dumps(answer.model_dump(mode="json"), ensure_ascii=False, indent=2))
        return
    taken_down = f", {answer.status}" + (f" at {answer.taken_down_at}" if answer.taken_down_at else "")
    console.print(
        f"{answer.id}: {answer.views} views{taken_down if answer.status else ''}", markup=False, highlight=False
    )
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
    _takedown(ctx, item_id, why, as_json, "hide")


@item.command("unhide")
@click.argument("item_id", metavar="ITEM")
@click.option("--reason", "why", default="", metavar="TEXT", help="Why (kept in the audit rows, at most 500 chars).")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as POST /item/unhide gives it.")
@click.pass_context
def unhide(ctx: click.Context, item_id: str, why: str, as_json: bool) -> None:
    """Put a hidden ITEM back on its boards with its exact counts (its snapshots are gathered again now)."""
    _takedown(ctx, item_id, why, as_json, "unhide")


@item.command("delete")
@click.argument("item_id", metavar="ITEM")
@click.option("--reason", "why", default="", metavar="TEXT", help="Why (kept in the audit rows, at most 500 chars).")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as DELETE /item gives it.")
@click.pass_context
def delete(ctx: click.Context, item_id: str, why: str, as_json: bool) -> None:
    """Erase ITEM's counts on every board and period now; later views of it are refused. Run it again to finish a
    delete that was cut short."""
    _takedown(ctx, item_id, why, as_json, "delete")


def _takedown(ctx: click.Context, item_id: str, why: str, as_json: bool, operation: str) -> None:
    rt = runtime(ctx)
    run = {"hide": service.hide, "unhide": service.unhide, "delete": service.delete}[operation]
    with one_line_errors():
        try:
            done = run(service.ItemEdits.of(rt.stores()), item_id, by=caller(), reason=why)
        except (takedown.NothingToTakeDown, DeletedItem) as missing:
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
        walked = service.newest_walk(rt.items, since, until, most, names=("--since", "--until"))
    found, cursor = walked.items, walked.cursor
    if as_json:
        click.echo(json.dumps(NewestPage.of(found, cursor).as_json(), ensure_ascii=False, indent=2))
        return
    for record in found:
        title = record.document().get("title")
        shown = f"{record.created_at}  {record.item_id}" + (f"  {title}" if isinstance(title, str) else "")
        console.print(shown, markup=False, highlight=False)
    more = " (more: raise -n)" if cursor else ""
    console.print(f"{len(found)} item(s){more}", markup=False, highlight=False)


COMMANDS = [item, items]
