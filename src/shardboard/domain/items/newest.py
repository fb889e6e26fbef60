"""Newest items: an exact, newest-first walk of the items created in a time window (docs/proposals/items-and-ranks.md
section 6).

Items are spread over the created shards (``c#<j>``, ``records.created_shard``) of the by-created index, each one
sorted by its range key ``<created_at>#<id>`` (``records.created_key``: unique, so the order is total). A page asks
every shard for its newest ``limit + 1`` keys at or below the resume key, newest first, and merges them in memory
(``heapq.merge``). No shard can hold more than ``limit`` of the merged first ``limit``, so a request per created shard
a page gives the exact page; the cursor is the last key emitted, so the next page resumes every shard exactly (no
duplicate, no gap), and items created during a walk have later keys and never enter it.

The window is half-open: ``created_after`` <= created_at < ``created_before`` (ISO-8601; either may be absent), so
adjacent windows never share an item.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import itertools
import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from shardboard.domain import validation
from shardboard.domain.errors import BadInput
from shardboard.domain.items.records import ItemRecord, ShardPage, created_key, iso_ms
from shardboard.domain.periods import PeriodError, parse_time

# The most items one page holds (the route's limit, 1..100): a page then stays far under Lambda's 6 MB answer with
# 2 KB documents, and a created shard's 101 keys are at most one Query page of ~200 KB.
MAX_NEWEST_LIMIT = 100
# Range-key bounds of an open window: every created_at starts with a digit, so "0" sorts before every key and "~"
# (0x7E) after every key. Neither is ever a key, so an inclusive BETWEEN on them is exact.
LOWEST_KEY = "0"
HIGHEST_KEY = "~"
_CURSOR_FIELDS = {"a", "b", "k"}


@dataclass(frozen=True)
class Window:
    """``created_after`` <= created_at < ``created_before`` as ISO ms text (None: open on that side)."""

    after: str | None = None
    before: str | None = None

    @property
    def low(self) -> str:
        """The inclusive lower range key: ``T1`` is never a key and sorts before every ``T1#<id>``."""
        return self.after or LOWEST_KEY

    @property
    def high(self) -> str:
        """The inclusive upper range key: ``T2`` is never a key and sorts after every key created before T2."""
        return self.before or HIGHEST_KEY

    def holds(self, key: str) -> bool:
        return self.low <= key < self.high


@dataclass(frozen=True)
class NewestPage:
    items: list[ItemRecord]
    cursor: str | None  # None: the walk is over


# (shard, low, high, limit) -> that shard's newest records with low <= key <= high, newest first
FetchShard = Callable[[str, str, str, int], ShardPage]


def key_of(record: ItemRecord) -> str:
    return created_key(record.created_at, record.item_id)


def window(
    created_after: str | None, created_before: str | None, names: tuple[str, str] = ("created_after", "created_before")
) -> Window:
    """The route's two times (ISO-8601 date or date-time, naive = UTC; empty = absent), or BadInput naming them as
    the caller's user knows them (``names``: the query parameters, or the CLI's ``--since``/``--until``)."""
    after = _time(names[0], created_after)
    before = _time(names[1], created_before)
    if after is not None and before is not None and after >= before:
        raise BadInput(f"{names[0]} ({after}) must be earlier than {names[1]} ({before})")
    return Window(after, before)


def created_shards(shards: int) -> list[str]:
    """Every partition value of the by-created index (``records.created_shard`` hashes ids onto these)."""
    return [f"c#{j}" for j in range(shards)]


def merge_newest(pages: Iterable[ShardPage], limit: int, resume: str | None = None) -> tuple[list[ItemRecord], bool]:
    """The newest ``limit`` records of all shards' pages (each newest first), dropping the ``resume`` key itself
    (the previous page's last); and whether a next page may hold more."""
    pages = list(pages)
    merged = heapq.merge(*(page.records for page in pages), key=key_of, reverse=True)
    fresh = (record for record in merged if key_of(record) != resume)
    taken = list(itertools.islice(fresh, limit + 1))
    more = len(taken) > limit or (len(taken) == limit and any(page.more for page in pages))
    return taken[:limit], more


def newest_items(fetch: FetchShard, shards: int, wanted: Window, limit: int, cursor: str | None = None) -> NewestPage:
    """One page of the walk: the created shards read in parallel and their ordered merge."""
    resume = read_cursor(cursor, wanted) if cursor else None
    high = resume or wanted.high
    # limit + 1: the shard holding the resume key returns it again (BETWEEN is inclusive) and it is dropped.
    with ThreadPoolExecutor(max_workers=min(shards, 16)) as pool:
        pages = list(pool.map(lambda shard: fetch(shard, wanted.low, high, limit + 1), created_shards(shards)))
    items, more = merge_newest(pages, limit, resume)
    return NewestPage(items, write_cursor(wanted, key_of(items[-1])) if more and items else None)


def write_cursor(wanted: Window, last_key: str) -> str:
    """base64url compact JSON ``{"a": after, "b": before, "k": last key emitted}``, without padding."""
    text = json.dumps({"a": wanted.after, "b": wanted.before, "k": last_key}, separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def read_cursor(cursor: str, wanted: Window) -> str:
    """The resume key of a cursor this window wrote, or BadInput: a cursor is checked field by field, never
    trusted (it is client input)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        if base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=") != cursor:
            raise ValueError("not canonical base64url")
        fields = json.loads(raw.decode("utf-8"))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        raise BadInput("cursor is not one this route wrote (restart the walk without it)") from None
    if not isinstance(fields, dict) or set(fields) != _CURSOR_FIELDS or not isinstance(fields["k"], str):
        raise BadInput("cursor is not one this route wrote (restart the walk without it)")
    if fields["a"] != wanted.after or fields["b"] != wanted.before:
        raise BadInput("cursor belongs to another created_after/created_before: send the same times, or no cursor")
    key = fields["k"]
    if not _well_formed(key) or not wanted.holds(key):
        raise BadInput("cursor is not one this route wrote (restart the walk without it)")
    return key


def _well_formed(key: str) -> bool:
    """``<created_at as ISO ms>#<valid id>``: what ``records.created_key`` writes (a lone surrogate or a control
    character would fail at DynamoDB, not here)."""
    created_at, sep, item_id = key.partition("#")
    try:
        validation.lookup_item_id(item_id)
        return bool(sep) and iso_ms(parse_time(created_at)) == created_at
    except (BadInput, PeriodError, ValueError, OverflowError):
        return False


def _time(name: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    try:
        return iso_ms(parse_time(value))
    except (PeriodError, ValueError, OverflowError):
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise BadInput(
            f"{name} must be an ISO-8601 date or date-time from 0001-01-01 to 9999-12-31 in UTC, like "
            f"2026-11-23T17:00:00Z, got {shown!r}"
        ) from None
