"""Pages of a ranked version with a pinned cursor, and around-me (issue 13; docs/proposals/items-and-ranks.md
sections 4 and 5). Reads only: versions are written by domain/rank_versions.py.

A page reads the head (it names the current version and the retired ones still readable) and one BatchGetItem of
the 1-2 stored pages covering the range; a cursor on a retired version reads one rank shard more, for the
competition rank of its first page's first entry (the head's page index, which holds it, is the current version's
only). A walk follows one version: views only ever produce new versions, so its pages never repeat or skip an entry.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shardboard.domain.errors import BadInput
from shardboard.domain.ports import Board, PeriodKey
from shardboard.domain.rank_lookup import excluded_positions
from shardboard.domain.rank_versions import RANK_PAGE_SIZE, rank_shard_of, seconds_between
from shardboard.domain.ranked import head_ranks, rank_of
from shardboard.domain.validation import board_name, limit_of, offset_of, period_kind
from shardboard.settings import Settings

# k of around-me: 1..50, so its 2k + 1 entries span at most two stored pages of 100.
MAX_AROUND_K = 50
DEFAULT_AROUND_K = 5
EXPIRED = "cursor expired: restart at offset 0"
_CURSOR_FIELDS = {"b", "k", "u", "rv", "o", "l"}
_CURSOR_TEXT = re.compile(r"[A-Za-z0-9_-]{1,1024}")


class NotRanked(LookupError):
    """Around-me of an id the ranking does not hold (past the depth D, or without views): HTTP 404 not_found."""


@dataclass(frozen=True)
class Ranked:
    rank: int  # exact competition rank
    id: str
    views: int

    def as_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "id": self.id, "views": self.views}


@dataclass(frozen=True)
class Cursor:
    period: PeriodKey
    rv: str
    offset: int
    limit: int


@dataclass(frozen=True)
class Page:
    entries: list[Ranked]
    offset: int
    rv: str | None  # None: no ranked versions (D = N), the page is the head's
    cursor: str | None  # the next page; None: the walk is over


@dataclass(frozen=True)
class Around:
    entries: list[Ranked]
    above: int  # entries shown above the item
    below: int
    position: int  # the item's 1-based position in board order
    source: str  # "snapshot" (the head alone) or "ranked" (the ranked version)
    as_of: str


def encode_cursor(cursor: Cursor) -> str:
    board, kind, bucket = cursor.period
    document = {"b": board, "k": kind, "u": bucket, "rv": cursor.rv, "o": cursor.offset, "l": cursor.limit}
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
    numbers = [document[name] for name in ("o", "l")]
    if not all(isinstance(value, str) and value for value in strings) or not all(
        type(value) is int for value in numbers
    ):
        raise BadInput("cursor is malformed: not a cursor this API gave")
    cursor = Cursor(PeriodKey(*strings[:3]), strings[3], numbers[0], numbers[1])
    if not (cursor.offset >= 0 and 1 <= cursor.limit <= max_limit) or encode_cursor(cursor) != text:
        raise BadInput("cursor is malformed: not a cursor this API gave")
    return cursor


def parse_k(value: str) -> int:
    """around-me's k: 1..50 (default 5)."""
    return DEFAULT_AROUND_K if value == "" else limit_of(value, MAX_AROUND_K, "k")


def leaderboard_page(
    board: Board,
    settings: Settings,
    requested: PeriodKey | None,
    *,
    offset: str,
    limit: str,
    cursor: str,
    now: str,
) -> tuple[Mapping[str, Any] | None, Page]:
    """``GET /leaderboard?offset=&limit=`` or ``?cursor=[&limit=]``: (the head, the page); the head is None when
    the period has no snapshot (404). ``requested`` is the period the request named (None: it named none, so a
    cursor's own period is read). Every parameter is checked before the first read."""
    if cursor and offset:
        raise BadInput("give offset or cursor, not both")
    if not cursor:
        wanted = requested or PeriodKey(settings.board, "all", "all")
        depth = settings.rank_depth_of(wanted.board)
        start = offset_of(offset, depth)
        count = limit_of(limit, settings.page_size, "limit") if limit else settings.page_size
        check_range(start, count, depth)
        head = board.get_snapshot(wanted)
        return head, (first_page(head, start, count, board, wanted) if head else Page([], start, None, None))
    pinned = decode_cursor(cursor, settings.page_size)
    if requested is not None and requested != pinned.period:
        raise BadInput("cursor is for another board or period: send it without board, period and at, or with theirs")
    board_name(pinned.period.board)
    if pinned.period.kind != "all":
        period_kind(pinned.period.kind, settings.periods)
    if limit:
        pinned = Cursor(pinned.period, pinned.rv, pinned.offset, limit_of(limit, settings.page_size, "limit"))
    depth = settings.rank_depth_of(pinned.period.board)
    if pinned.offset >= depth:
        raise BadInput("cursor is malformed: not a cursor this API gave")
    # A walk's last page is shorter: its cursor keeps the walk's limit, so the page stops at the depth.
    pinned = Cursor(pinned.period, pinned.rv, pinned.offset, min(pinned.limit, depth - pinned.offset))
    head = board.get_snapshot(pinned.period)
    if head is None:
        raise BadInput(EXPIRED)
    return head, next_page(head, pinned, board, now=now, ttl_seconds=settings.cursor_ttl_seconds)


def walk_cursor(head: Mapping[str, Any], period: PeriodKey, settings: Settings) -> str | None:
    """The cursor at offset 0 of the head's ranked version (None without one): today's answer carries it."""
    block = head.get("rank")
    if not block or not block["count"]:
        return None
    return encode_cursor(Cursor(period, block["rv"], 0, min(settings.page_size, block["count"])))


def check_range(offset: int, limit: int, depth: int) -> None:
    if offset + limit > depth:
        raise BadInput(f"offset + limit must be at most the depth {depth}, got {offset + limit}")


def page_of_head(head: Mapping[str, Any], offset: int, limit: int) -> Page:
    """A page of the head itself, for a board without ranked versions (D = N: the head is the whole ranking)."""
    ranks = head_ranks(head["items"])
    chosen = head["items"][offset : offset + limit]
    return Page([Ranked(ranks[item][0], item, views) for item, views in chosen], offset, None, None)


def first_page(head: Mapping[str, Any], offset: int, limit: int, board: Board, period: PeriodKey) -> Page:
    """``?offset=&limit=``: a page of the head's current ranked version (of the head when it has none)."""
    block = head.get("rank")
    if block is None:
        return page_of_head(head, offset, limit)
    return read_page(board, Cursor(period, block["rv"], offset, limit), block, block["count"])


def next_page(head: Mapping[str, Any], cursor: Cursor, board: Board, *, now: str, ttl_seconds: int) -> Page:
    """``?cursor=``: the page the cursor names, of the version it pins (the current one, or a retired one younger
    than CursorTtlSeconds)."""
    block = head.get("rank")
    if block is None:
        raise BadInput(EXPIRED)
    if block["rv"] == cursor.rv:
        return read_page(board, cursor, block, block["count"])
    for rv, retired_at, pages, shards in block.get("retired", []):
        if rv == cursor.rv and seconds_between(retired_at, now) < ttl_seconds:
            return read_page(board, cursor, {"rv": rv, "pages": pages, "shards": shards}, None)
    raise BadInput(EXPIRED)


def read_page(board: Board, cursor: Cursor, block: Mapping[str, Any], count: int | None) -> Page:
    """Entries ``offset .. offset+limit-1`` of one version; ``count`` is None for a retired version (its head
    block is gone), whose length is then known from its last stored page when the range reaches it."""
    pages = block["pages"] if isinstance(block["pages"], int) else len(block["pages"])
    start, stop = cursor.offset, cursor.offset + cursor.limit
    entries, read_to = read_positions(board, cursor.period, block, pages, (start, stop))
    if count is None:  # past the pages read there is more exactly when the last stored page was not among them
        count = read_to if (stop - 1) // RANK_PAGE_SIZE >= pages - 1 else stop + 1
    following = None
    if stop < count:
        following = encode_cursor(Cursor(cursor.period, cursor.rv, stop, cursor.limit))
    return Page(entries, start, cursor.rv, following)


def read_positions(
    board: Board, period: PeriodKey, block: Mapping[str, Any], pages: int, span: tuple[int, int]
) -> tuple[list[Ranked], int]:
    """Entries at 0-based positions [start, stop) of a version, with their competition ranks, and the position
    after the last stored entry read: one BatchGetItem of the stored pages covering them (plus one rank shard for
    a retired version)."""
    start, stop = span
    first, last = start // RANK_PAGE_SIZE, min((stop - 1) // RANK_PAGE_SIZE, pages - 1)
    if first > last:
        return [], start
    found = board.get_rank_pages(period, block["rv"], list(range(first, last + 1)))
    if any(page not in found for page in range(first, last + 1)):
        raise BadInput(EXPIRED)  # deleted since the head was read: the version retired and expired meanwhile
    rows = [row for page in range(first, last + 1) for row in found[page]]
    if not rows:
        return [], start
    tie = first_tie(board, period, block, first, rows[0][0])
    excluded = excluded_positions(block) if isinstance(block["pages"], list) else []
    ranked = []
    base = first * RANK_PAGE_SIZE  # 0-based position of rows[0]
    for index, (item, views) in enumerate(rows):
        if index > 0 and rows[index - 1][1] != views:
            tie = base + index + 1
        if start <= base + index < stop:
            ranked.append(Ranked(rank_of(tie, excluded), item, views))
    return ranked, base + len(rows)


def first_tie(board: Board, period: PeriodKey, block: Mapping[str, Any], page: int, item: str) -> int:
    """The tie start (1-based) of a stored page's first entry: the head's page index holds it for the current
    version; a retired version's rank shard of that entry holds it too."""
    if isinstance(block["pages"], list):
        return int(block["pages"][page][3])
    shard = rank_shard_of(item, block["shards"])
    found = board.get_rank_shards(period, block["rv"], [shard]).get(shard, {})
    if item not in found:
        raise BadInput(EXPIRED)
    return found[item][1]


def window(position: int, k: int, count: int) -> tuple[int, int]:
    """1-based [first, last] of the 2k + 1 entries around ``position`` among ``count``, shifted at the top and
    bottom so that it still holds 2k + 1 when the board does."""
    first = max(1, min(position - k, count - 2 * k))
    return first, min(count, first + 2 * k)


def around(board: Board, period: PeriodKey, head: Mapping[str, Any], item: str, *, k: int, depth: int) -> Around:
    """The k entries above and below ``item`` in board order with exact ranks: from the head alone when its
    window lies inside the head, else from the ranked version (one rank shard, then 1-2 stored pages)."""
    items: Sequence[Sequence[Any]] = head["items"]
    block = head.get("rank")
    positions = {entry[0]: index + 1 for index, entry in enumerate(items)}
    if item in positions:
        # The head is the ranking's top only: the window is framed on the whole ranking, and the head answers it
        # when it lies inside the head (near the top, padding shifts the window down, possibly past the head's end).
        total = len(items) if block is None else max(len(items), block["count"])
        first, last = window(positions[item], k, total)
        if last <= len(items):
            ranks = head_ranks(items)
            entries = [Ranked(ranks[one][0], one, views) for one, views in items[first - 1 : last]]
            return framed(entries, positions[item], first, "snapshot", head["generated_at"])
    if block is None:
        raise NotRanked(f"item {item!r} is not in the top {len(items)} of this period (no views, or ranked past it)")
    shard = rank_shard_of(item, block["shards"])
    found = board.get_rank_shards(period, block["rv"], [shard]).get(shard, {})
    if item not in found:
        raise NotRanked(
            f"item {item!r} is not in the top {depth} of this period (no views, or ranked past the depth D = {depth}); "
            "GET /rank gives its approximate rank"
        )
    position = found[item][0]
    first, last = window(position, k, block["count"])
    entries, _ = read_positions(board, period, block, len(block["pages"]), (first - 1, last))
    return framed(entries, position, first, "ranked", block["generated_at"])


def framed(entries: list[Ranked], position: int, first: int, source: str, as_of: str) -> Around:
    above = position - first
    return Around(entries, above, len(entries) - above - 1, position, source, as_of)


def page_document(head: Mapping[str, Any], page: Page) -> dict[str, Any]:
    """The page as GET /leaderboard answers it. ``generated_at`` is the version's gathering time; a retired
    version's head block is gone, so it is then the time it was superseded (it was gathered before)."""
    block = head.get("rank") or {}
    as_of = block.get("generated_at", head["generated_at"])
    for rv, retired_at, _, _ in block.get("retired", []):
        if rv == page.rv:
            as_of = retired_at
    return {
        "board": head["board"],
        "generated_at": as_of,
        "period": head.get("period") or {"kind": "all"},
        "items": [entry.as_json() for entry in page.entries],
        "offset": page.offset,
        "rv": page.rv,
        "cursor": page.cursor,
    }


def around_document(head: Mapping[str, Any], item: str, answer: Around) -> dict[str, Any]:
    """Around-me as GET /around answers it."""
    return {
        "board": head["board"],
        "period": head.get("period") or {"kind": "all"},
        "id": item,
        "position": answer.position,
        "above": answer.above,
        "below": answer.below,
        "source": answer.source,
        "as_of": answer.as_of,
        "items": [entry.as_json() for entry in answer.entries],
    }
