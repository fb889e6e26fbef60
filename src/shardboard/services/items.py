"""Items: the use cases behind ``PUT /item``, ``POST /item/hide`` and ``/item/unhide``, ``DELETE /item`` and ``GET
/items``, and the CLI's ``item put|hide|unhide|delete`` and ``items`` (an item's read, ``GET /item``, is
:func:`shardboard.services.reading.item`).

Each entry point parses its own input (an id from the query string or an argument, a document from a body or an
option), calls one function here and shapes the answer; the id, document, reason, window, limit and cursor rules are
checked here once, through the domain's rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from shardboard.domain import validation
from shardboard.domain.clock import Clock
from shardboard.domain.items import lookalike, newest
from shardboard.domain.items import records as items
from shardboard.domain.items.records import ItemRecord, ShardPage
from shardboard.domain.ports import ItemCatalog, PeriodKey
from shardboard.services import republishing as republish
from shardboard.services import takedowns as takedown
from shardboard.services.clock import system_clock
from shardboard.services.stores import Container
from shardboard.services.takedowns import TakedownBoard
from shardboard.settings import Settings

# The most items the CLI's walk shows (its -n): pages of MAX_NEWEST_LIMIT are read until then.
MAX_WALKED = 1_000_000


@dataclass(frozen=True)
class ItemEdits:
    """What a put or a takedown needs: the items table, the board table (the heads it patches, the counts a
    delete erases) and the stack's settings (its boards and periods)."""

    items: ItemCatalog
    board: TakedownBoard
    settings: Settings
    clock: Clock = system_clock  # the time whose periods are current

    @classmethod
    def of(cls, stores: Container) -> ItemEdits:
        return cls(stores.items, stores.board, stores.settings, stores.clock)


class CreatedIndex(Protocol):
    """The items' by-created index as the newest items are read from it: its created shards, each sorted by creation."""

    created_shards: int

    def newest(self, shard: str, low: str, high: str, limit: int) -> ShardPage: ...


def put(
    edits: ItemEdits, item_id: str, document: str | dict[str, Any], at: datetime | None = None
) -> tuple[ItemRecord, list[PeriodKey]]:
    """Create the item with ``document`` (a JSON object, or its JSON text), or replace its document (created_at is
    kept), then patch it into every head that carries the old one (``at``: the put's time; None: the clock's): the
    record and the periods patched. Bad input raises BadInput and writes nothing."""
    checked = validation.item_id(item_id)
    meta = items.meta_text(document) if isinstance(document, str) else items.meta(document)
    lookalike.refuse_put_of_look_alike(edits.items, checked)
    return republish.put_item(edits.items, edits.board, edits.settings, checked, meta, at or edits.clock())


def hide(edits: ItemEdits, item_id: str, *, by: str, reason: str | None = None) -> takedown.Takedown:
    """Take the item off every board and period now (its heads are patched); its views go on counting."""
    return _take_down(takedown.hide, edits, item_id, by, reason)


def unhide(edits: ItemEdits, item_id: str, *, by: str, reason: str | None = None) -> takedown.Takedown:
    """Put a hidden item back on its boards with its exact counts (its heads are gathered again now)."""
    return _take_down(takedown.unhide, edits, item_id, by, reason)


def delete(edits: ItemEdits, item_id: str, *, by: str, reason: str | None = None) -> takedown.Takedown:
    """Erase the item's counts on every board and period; later views of it are refused. Running it again finishes
    a delete that was cut short."""
    return _take_down(takedown.delete, edits, item_id, by, reason)


def _take_down(
    operation: takedown.Operation, edits: ItemEdits, item_id: str, by: str, reason: str | None
) -> takedown.Takedown:
    """The id and the reason checked (BadInput before anything is read), then the takedown (NothingToTakeDown for
    an id with no views and no record)."""
    checked, why = validation.lookup_item_id(item_id), items.reason(reason)
    return operation(edits.items, edits.board, edits.settings, checked, by=by, reason=why, at=edits.clock())


def newest_page(
    index: CreatedIndex,
    created_after: str | None = None,
    created_before: str | None = None,
    limit: str | None = None,
    cursor: str | None = None,
) -> newest.NewestPage:
    """One page (``limit``: 1 to MAX_NEWEST_LIMIT, 100 when empty) of the items created in [``created_after``,
    ``created_before``), newest first, and the cursor to the next: a Query per created shard. Every input, the cursor
    included, is checked before the first read."""
    wanted = newest.window(created_after, created_before)
    count = validation.limit(limit, newest.MAX_NEWEST_LIMIT)
    return newest.newest_items(index.newest, index.created_shards, wanted, count, cursor or None)


def newest_walk(
    index: CreatedIndex,
    since: str | None,
    until: str | None,
    most: str | None,
    names: tuple[str, str] = ("--since", "--until"),
) -> newest.NewestPage:
    """Pages of :func:`newest_page` until ``most`` items (1 to MAX_WALKED) or the end: the items and the cursor after
    them. ``names``: the two times as the caller's user knows them (errors name them)."""
    wanted = newest.window(since, until, names=names)
    count = validation.limit(most, MAX_WALKED)
    found: list[ItemRecord] = []
    cursor: str | None = None
    while len(found) < count:
        size = min(newest.MAX_NEWEST_LIMIT, count - len(found))
        page = newest.newest_items(index.newest, index.created_shards, wanted, size, cursor)
        found += page.items
        cursor = page.cursor
        if cursor is None:
            break
    return newest.NewestPage(found, cursor)
