"""Pages of a ranked version with a pinned cursor, and around-me (docs/proposals/items-and-ranks.md
sections 4 and 5). Reads only: versions are written by domain/publishing/ranked_versions.py.

A page reads the head (it names the current version and the retired ones still readable) and one BatchGetItem of
the 1-2 stored pages covering the range; a cursor on a retired version reads one rank shard more, for the
competition rank of its first page's first entry (the head's page index, which holds it, is the current version's
only). A walk follows one version: views only ever produce new versions, so its pages never repeat or skip an entry.

Takedowns append events to the version (``["hide", id, pos]``...; ``percentiles.exclusions``): every read skips the
positions they take out, and a cursor pins how many events its walk applies (``ev``), so a hide in the middle of a
walk changes neither its list nor its ranks (the walk's later pages may still show the item; a new walk does not).
A retired version keeps its events in the head's ``retired`` entry.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from shardboard.domain.errors import BadInput
from shardboard.domain.policy import Leaderboards
from shardboard.domain.ports import ItemCatalog, PeriodKey, RankedHeads, RankedVersions, RankShard
from shardboard.domain.publishing.gather import RankedEntry
from shardboard.domain.publishing.head import Head, PageBounds, RankBlock, RankEvent, Retired, day_before_rank
from shardboard.domain.publishing.ranked_versions import RANK_PAGE_SIZE, rank_shard_of, seconds_between
from shardboard.domain.reading.percentiles import (
    exclusions,
    head_entries,
    head_ranks,
    holds_whole_board,
    rank_of,
    taken_down,
    visible_index,
    visible_positions,
)
from shardboard.domain.validation import board_name, limit_of, offset_of, period_kind

# k of around-me: 1..50, so its 2k + 1 entries span at most two stored pages of 100.
MAX_AROUND_K = 50
DEFAULT_AROUND_K = 5
EXPIRED = "cursor expired: restart at offset 0"
_CURSOR_FIELDS = {"b", "k", "u", "rv", "o", "l", "ev"}
_CURSOR_TEXT = re.compile(r"[A-Za-z0-9_-]{1,1024}")


class NotRanked(LookupError):
    """Around-me of an id the ranking does not hold (past the depth D, or without views): HTTP 404 not_found."""


@dataclass(frozen=True)
class Cursor:
    period: PeriodKey
    rv: str
    offset: int  # among the entries visible under the first ``events`` events
    limit: int
    events: int = 0  # how many of the version's events the walk applies (``ev``)


@dataclass(frozen=True)
class Version:
    """One ranked version as a read needs it: the current one (from the head's ``rank`` block) or a retired one
    (from its ``retired`` entry: [rv, retired at, pages, shards, events, count], the last two absent in entries
    written before events existed)."""

    rv: str
    pages: int
    shards: int
    index: Sequence[PageBounds] | None  # the head's page index; None for a retired version
    count: int | None  # entries stored; None: unknown (an old retired entry)
    events: Sequence[RankEvent]

    @classmethod
    def current(cls, block: RankBlock) -> Version:
        return cls(block.rv, len(block.pages), block.shards, block.pages, block.count, block.events)

    @classmethod
    def retired(cls, entry: Retired) -> Version:
        return cls(entry.rv, entry.pages, entry.shards, None, entry.entries, entry.events)


@dataclass(frozen=True)
class Page:
    entries: list[RankedEntry]
    offset: int
    rv: str | None  # None: no ranked versions (D = N), the page is the head's
    cursor: str | None  # the next page; None: the walk is over


@dataclass(frozen=True)
class Around:
    entries: list[RankedEntry]
    above: int  # entries shown above the item
    below: int
    position: int  # the item's 1-based position in board order
    source: str  # "snapshot" (the head alone: it holds the item) or "ranked" (the ranked version)
    as_of: str


def encode_cursor(cursor: Cursor) -> str:
    board, kind, bucket = cursor.period
    document = {
        "b": board,
        "k": kind,
        "u": bucket,
        "rv": cursor.rv,
        "o": cursor.offset,
        "l": cursor.limit,
        "ev": cursor.events,
    }
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(text).rstrip(b"=").decode()


def decode_cursor(text: str, max_limit: int) -> Cursor:
    """The cursor's fields, or BadInput. Strict: only the canonical encoding of a well-formed cursor is taken, so
    any edit that does not re-encode a valid cursor is refused."""
    if not _CURSOR_TEXT.fullmatch(text):
        raise BadInput("cursor is malformed: not a cursor this API gave")
    try:
        document = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BadInput("cursor is malformed: not a cursor this API gave") from None
    if not isinstance(document, dict) or set(document) != _CURSOR_FIELDS:
        raise BadInput("cursor is malformed: not a cursor this API gave")
    strings = [document[name] for name in ("b", "k", "u", "rv")]
    numbers = [document[name] for name in ("o", "l", "ev")]
    if not all(isinstance(value, str) and value for value in strings) or not all(
        type(value) is int for value in numbers
    ):
        raise BadInput("cursor is malformed: not a cursor this API gave")
    cursor = Cursor(PeriodKey(*strings[:3]), strings[3], numbers[0], numbers[1], numbers[2])
    valid = cursor.offset >= 0 and 1 <= cursor.limit <= max_limit and cursor.events >= 0
    if not valid or encode_cursor(cursor) != text:
        raise BadInput("cursor is malformed: not a cursor this API gave")
    return cursor


def parse_k(value: str) -> int:
    """around-me's k: 1..50 (default 5)."""
    return DEFAULT_AROUND_K if value == "" else limit_of(value, MAX_AROUND_K, "k")


def leaderboard_page(
    board: RankedHeads,
    policy: Leaderboards,
    requested: PeriodKey | None,
    *,
    offset: str,
    limit: str,
    cursor: str,
    now: str,
) -> tuple[Head | None, Page]:
    """``GET /leaderboard?offset=&limit=`` or ``?cursor=[&limit=]``: (the head, the page); the head is None when
    the period has no snapshot (404). ``requested`` is the period the request named (None: it named none, so a
    cursor's own period is read). Every parameter is checked before the first read."""
    if cursor and offset:
        raise BadInput("give offset or cursor, not both")
    if not cursor:
        wanted = requested or PeriodKey(policy.board, "all", "all")
        depth = policy.keep(wanted.board).depth
        start = offset_of(offset, depth)
        count = limit_of(limit, policy.keeping.page_size, "limit") if limit else policy.keeping.page_size
        check_range(start, count, depth)
        head = board.get_snapshot(wanted)
        return head, (first_page(head, start, count, board, wanted) if head else Page([], start, None, None))
    pinned = decode_cursor(cursor, policy.keeping.page_size)
    if requested is not None and requested != pinned.period:
        raise BadInput("cursor is for another board or period: send it without board, period and at, or with theirs")
    board_name(pinned.period.board)
    period_kind(pinned.period.kind, policy.periods.kinds)  # all time is always one
    if limit:
        pinned = replace(pinned, limit=limit_of(limit, policy.keeping.page_size, "limit"))
    depth = policy.keep(pinned.period.board).depth
    if pinned.offset >= depth:
        raise BadInput("cursor is malformed: not a cursor this API gave")
    # A walk's last page is shorter: its cursor keeps the walk's limit, so the page stops at the depth.
    pinned = replace(pinned, limit=min(pinned.limit, depth - pinned.offset))
    head = board.get_snapshot(pinned.period)
    if head is None:
        raise BadInput(EXPIRED)
    return head, next_page(head, pinned, board, now=now, ttl_seconds=policy.keeping.cursor_ttl_seconds)


def walk_cursor(head: Head, period: PeriodKey, page_size: int) -> str | None:
    """The cursor at offset 0 of the head's ranked version, for pages of ``page_size`` (P) entries (None without one):
    today's answer carries it."""
    block = head.rank
    if block is None or not block.count:
        return None
    return encode_cursor(Cursor(period, block.rv, 0, min(page_size, block.count), len(block.events)))


def check_range(offset: int, limit: int, depth: int) -> None:
    if offset + limit > depth:
        raise BadInput(f"offset + limit must be at most the depth {depth}, got {offset + limit}")


def page_of_head(head: Head, offset: int, limit: int) -> Page:
    """A page of the head itself, for a board without ranked versions (D = N: the head is the whole ranking)."""
    ranks = head_ranks(head.items)
    chosen = head.items[offset : offset + limit]
    entries = [
        RankedEntry(ranks[item][0], item, views, head.previous.get(item), day_before_rank(head, item))
        for item, views in chosen
    ]
    return Page(entries, offset, None, None)


def first_page(head: Head, offset: int, limit: int, board: RankedVersions, period: PeriodKey) -> Page:
    """``?offset=&limit=``: a page of the head's current ranked version with all its events applied (of the head
    when it has none)."""
    block = head.rank
    if block is None:
        return page_of_head(head, offset, limit)
    version = Version.current(block)
    return read_page(board, Cursor(period, version.rv, offset, limit, len(version.events)), version)


def next_page(head: Head, cursor: Cursor, board: RankedVersions, *, now: str, ttl_seconds: int) -> Page:
    """``?cursor=``: the page the cursor names, of the version it pins (the current one, or a retired one younger
    than CursorTtlSeconds), with the events it pins."""
    block = head.rank
    if block is None:
        raise BadInput(EXPIRED)
    if block.rv == cursor.rv:
        return read_page(board, cursor, Version.current(block))
    for entry in block.retired:
        if entry.rv == cursor.rv and seconds_between(entry.retired_at, now) < ttl_seconds:
            return read_page(board, cursor, Version.retired(entry))
    raise BadInput(EXPIRED)


def read_page(board: RankedVersions, cursor: Cursor, version: Version) -> Page:
    """The visible entries ``offset .. offset+limit-1`` of one version under the cursor's events. A retired
    version of unknown length is read up to its stored pages; the walk ends at the first short page."""
    if cursor.events > len(version.events):
        raise BadInput("cursor is malformed: not a cursor this API gave")
    excluded = exclusions(version.events[: cursor.events])
    count = version.count if version.count is not None else version.pages * RANK_PAGE_SIZE
    start, stop = cursor.offset, cursor.offset + cursor.limit
    entries = read_positions(board, cursor.period, version, visible_positions(start, stop, excluded, count), excluded)
    following = None
    more = stop < count - len(excluded) if version.count is not None else len(entries) == stop - start
    if more:
        following = encode_cursor(replace(cursor, offset=stop))
    return Page(entries, start, cursor.rv, following)


def read_positions(
    board: RankedVersions, period: PeriodKey, version: Version, positions: Sequence[int], excluded: Sequence[int]
) -> list[RankedEntry]:
    """The entries at these 1-based positions of a version (ascending), with their competition ranks under the
    ``excluded`` positions: one BatchGetItem of the stored pages covering them (plus one rank shard for a retired
    version). Positions past the stored entries are left out."""
    if not positions:
        return []
    first = (positions[0] - 1) // RANK_PAGE_SIZE
    last = min((positions[-1] - 1) // RANK_PAGE_SIZE, version.pages - 1)
    if first > last:
        return []
    found = board.get_rank_pages(period, version.rv, list(range(first, last + 1)))
    if any(page not in found for page in range(first, last + 1)):
        raise BadInput(EXPIRED)  # deleted since the head was read: the version retired and expired meanwhile
    rows = [row for page in range(first, last + 1) for row in found[page]]
    if not rows:
        return []
    tie = first_tie(board, period, version, first, rows[0].id)
    wanted = set(positions)
    ranked = []
    base = first * RANK_PAGE_SIZE  # 0-based position of rows[0]
    for index, (item, views) in enumerate(rows):
        if index > 0 and rows[index - 1].views != views:
            tie = base + index + 1
        if base + index + 1 in wanted:
            ranked.append(RankedEntry(rank_of(tie, excluded), item, views))
    return ranked


def first_tie(board: RankedVersions, period: PeriodKey, version: Version, page: int, item: str) -> int:
    """The tie start (1-based) of a stored page's first entry: the head's page index holds it for the current
    version; a retired version's rank shard of that entry holds it too."""
    if version.index is not None:
        return version.index[page].tie_start
    shard = rank_shard_of(item, version.shards)
    found = board.get_rank_shards(period, version.rv, [shard]).get(shard, {})
    if item not in found:
        raise BadInput(EXPIRED)
    return found[item].tie_start


def window(position: int, k: int, count: int) -> tuple[int, int]:
    """1-based [first, last] of the 2k + 1 entries around ``position`` among ``count``, shifted at the top and
    bottom so that it still holds 2k + 1 when the board does."""
    first = max(1, min(position - k, count - 2 * k))
    return first, min(count, first + 2 * k)


def around(board: RankedVersions, period: PeriodKey, head: Head, item: str, *, k: int, catalog: ItemCatalog) -> Around:
    """The k visible entries above and below ``item`` in board order with exact ranks: for an item the head holds,
    from the head (``around_head``); else from the ranked version (one rank shard, then the stored pages), skipping
    the positions its events take out. A hidden or deleted item has no neighbours (NotRanked, saying so): the
    version's events say so of an item it holds, the item's record of any other."""
    block = head.rank
    version = Version.current(block) if block is not None else None
    excluded = exclusions(version.events) if version else []
    if item in {entry.id for entry in head_entries(head)}:
        return around_head(board, period, head, item, k=k)
    found: RankShard = {}
    if version is not None:
        shard = rank_shard_of(item, version.shards)
        found = board.get_rank_shards(period, version.rv, [shard]).get(shard, {})
    taken = taken_down(version.events, item) if version and item in found else None
    if item not in found:
        taken = catalog.statuses([item]).get(item)
    if taken:
        raise NotRanked(f"item {item!r} is {taken}: it has no rank and no neighbours")
    if version is None or block is None:
        depth = len(head.items)
        raise NotRanked(f"item {item!r} is not in the top {depth} of this period (no views, or ranked past it)")
    if item not in found:
        depth = block.depth
        raise NotRanked(
            f"item {item!r} is not in the top {depth} of this period (no views, or ranked past the depth D = {depth}); "
            "GET /rank gives its approximate rank"
        )
    count = version.count or 0
    position = visible_index(found[item].position, excluded)
    first, last = window(position, k, count - len(excluded))
    entries = read_positions(board, period, version, visible_positions(first - 1, last, excluded, count), excluded)
    return framed(entries, position, first, "ranked", block.generated_at)


def around_head(board: RankedVersions, period: PeriodKey, head: Head, item: str, *, k: int) -> Around:
    """Around-me of an item the head holds, with the head's ranks (those GET /rank and the board give it). The window
    is framed on the whole ranking; when it passes the head's end it takes the ranked version's entries past it if
    the version agrees with the head on every entry of the window the head holds (both were gathered alike since),
    else it stops at the head's end: fewer below, never a rank that contradicts the head."""
    entries = head_entries(head)
    ranks = head_ranks(entries)
    position = next(index for index, entry in enumerate(entries, start=1) if entry.id == item)
    held = len(entries)
    block = head.rank
    version = Version.current(block) if block is not None else None
    excluded = exclusions(version.events) if version else []
    count = (version.count or 0) if version else 0
    # A head short of N holds the whole visible board; else the board goes on past it (as far as the version knows).
    short = holds_whole_board(head)
    first, last = window(position, k, held if short or version is None else max(held, count - len(excluded)))
    shown = [RankedEntry(ranks[one][0], one, views) for one, views in entries[first - 1 : last]]
    from_head = [
        replace(entry, previous_rank=head.previous.get(entry.id), day_before_rank=day_before_rank(head, entry.id))
        for entry in shown
    ]
    if last <= held:
        return framed(from_head, position, first, "snapshot", head.generated_at)
    if version is not None and block is not None:
        ranked = read_positions(board, period, version, visible_positions(first - 1, last, excluded, count), excluded)
        ids = {entry.id for entry in entries}
        if ranked[: len(shown)] == shown and not any(entry.id in ids for entry in ranked[len(shown) :]):
            return framed(ranked, position, first, "ranked", block.generated_at)
    return framed(from_head, position, first, "snapshot", head.generated_at)


def framed(entries: list[RankedEntry], position: int, first: int, source: str, as_of: str) -> Around:
    above = position - first
    return Around(entries, above, len(entries) - above - 1, position, source, as_of)


def page_document(head: Head, page: Page) -> dict[str, Any]:
    """The page as GET /leaderboard answers it. ``generated_at`` is the version's gathering time; a retired
    version's head block is gone, so it is then the time it was superseded (it was gathered before)."""
    block = head.rank
    as_of = block.generated_at if block is not None else head.generated_at
    for entry in block.retired if block is not None else ():
        if entry.rv == page.rv:
            as_of = entry.retired_at
    return {
        "board": head.board,
        "generated_at": as_of,
        "period": head.period or {"kind": "all"},
        "items": [entry.as_json() for entry in page.entries],
        "offset": page.offset,
        "rv": page.rv,
        "cursor": page.cursor,
    }


def around_document(head: Head, item: str, answer: Around) -> dict[str, Any]:
    """Around-me as GET /around answers it."""
    return {
        "board": head.board,
        "period": head.period or {"kind": "all"},
        "id": item,
        "position": answer.position,
        "above": answer.above,
        "below": answer.below,
        "source": answer.source,
        "as_of": answer.as_of,
        "items": [entry.as_json() for entry in answer.entries],
    }
