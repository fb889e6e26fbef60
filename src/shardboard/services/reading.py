"""Reading a board: the use cases behind ``GET /leaderboard``, ``/rank`` and ``/around``, the CLI's ``top``, ``rank``
and ``around`` and the library's :class:`~shardboard.client.Leaderboard`.

Each entry point parses its own input, calls one function here and shapes the answer; every input rule (board,
period, time, limit, ids, k) is checked here once, through :mod:`shardboard.domain.validation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from shardboard.domain import validation
from shardboard.domain.clock import Clock
from shardboard.domain.periods import ALL, HOUR, kind_of, previous_bucket
from shardboard.domain.ports import AggregateReads, ItemCatalog, PeriodKey, RankedVersions, Snapshots
from shardboard.domain.publishing.head import Head
from shardboard.domain.publishing.snapshot import not_found, opening_head, period_at
from shardboard.domain.reading.pages import (
    Around,
    around,
    around_document,
    leaderboard_page,
    page_document,
    parse_k,
    walk_cursor,
)
from shardboard.domain.reading.percentiles import MAX_RANK_IDS, RankAnswer
from shardboard.domain.reading.ranks import lookup_ranks
from shardboard.domain.windows import window_bucket
from shardboard.schema import AroundMe, Item, Leaderboard, Ranks
from shardboard.services.clock import system_clock
from shardboard.settings import Settings


class NoSnapshot(LookupError):
    """The period has no snapshot (HTTP 404): no views yet, the snapshot job has not run since, or it expired."""

    def __init__(self, period: PeriodKey) -> None:
        super().__init__(not_found(period))
        self.period = period


class NoItem(LookupError):
    """An id with no views and no record (HTTP 404)."""


class ReadableBoard(Snapshots, RankedVersions, AggregateReads, Protocol):
    """What the reads read: heads, ranked versions, and an item's counts."""


@dataclass(frozen=True)
class BoardReads:
    """What a read needs: the board table's port, the items' (the takedown status of an id the ranking does not
    hold) and the stack's settings (its boards' N and D, its periods)."""

    board: ReadableBoard
    items: ItemCatalog
    settings: Settings
    clock: Clock = system_clock  # "now" of a read that names no time (the current period, a window)


@dataclass(frozen=True)
class Top:
    """A board's top entries: the period read, its head (for the ETag) and the document GET /leaderboard answers."""

    period: PeriodKey
    head: Head
    limit: int  # the entries asked for (the board's N by default)
    document: Leaderboard


Moment = datetime | str | None


def period_named(settings: Settings, board: str | None, period: str | None, at: Moment, *, now: datetime) -> PeriodKey:
    """The period that ``board`` (None or empty: the global board), ``period`` (``all`` or a configured kind) and
    ``at`` (a datetime, naive meaning UTC, or an ISO-8601 string; None or empty: ``now``, the caller's clock) name."""
    name = validation.board_name(board or settings.board)
    kind = validation.period_kind(period or "", settings.policy.periods.kinds)
    if not (at is None or isinstance(at, (str, datetime))):
        raise validation.BadInput(f"at must be a datetime or an ISO-8601 string, got {type(at).__name__}")
    return period_at(name, kind, validation.moment(at) or now, half_life=settings.trending_half_life_hours)


def head_of(reads: BoardReads, period: PeriodKey) -> Head:
    """The period's snapshot head (one GetItem), or NoSnapshot."""
    head = live(reads.board.get_snapshot(period), reads.clock())
    if head is None:
        raise NoSnapshot(period)
    return head


def opening(reads: BoardReads, period: PeriodKey) -> Head:
    """The head of a board's current calendar period before the snapshot job's first run in it: empty, as of the
    period's start (the job's next run, within its interval, fills it). A board without views, a past or future
    period without a head, and all time before the first run stay NoSnapshot (one more GetItem, only then)."""
    half_life = reads.settings.trending_half_life_hours
    now = reads.clock()
    if kind_of(period.kind).pick(all_time=True, period=False) or period != period_at(
        period.board, period.kind, now, half_life=half_life
    ):
        raise NoSnapshot(period)
    if live(reads.board.get_snapshot(PeriodKey(period.board, ALL, ALL)), now) is None:
        raise NoSnapshot(period)
    return opening_head(period, half_life=half_life)


def live(head: Head | None, now: datetime) -> Head | None:
    """The head unless its period is past retention at ``now``: TTL deletes it days later at most, and takedowns
    patch the retained periods only, so an expired head is never served."""
    expired = head is not None and head.expires_at is not None and head.expires_at <= now.timestamp()
    return None if expired else head


def top(
    reads: BoardReads,
    *,
    board: str | None = None,
    period: str | None = None,
    at: Moment = None,
    limit: int | str | None = None,
    window: str | None = None,
) -> Top:
    """The first ``limit`` entries (None: the board's N) of the period's snapshot: one GetItem. With ``window``, the
    rolling window's head instead (``period`` and ``at`` must then be absent)."""
    if window:
        return window_top(reads, board=board, window=window, period=period, at=at, limit=limit)
    wanted = period_named(reads.settings, board, period, at, now=reads.clock())
    count = validation.limit(_text(limit), reads.settings.top_n_of(wanted.board))
    head = live(reads.board.get_snapshot(wanted), reads.clock()) or opening(reads, wanted)
    document = Leaderboard.of_snapshot(head, count)
    document.walk = walk_cursor(head, wanted, reads.settings.page_size)
    return Top(wanted, head, count, document)


def window_top(
    reads: BoardReads, *, board: str | None, window: str, period: str | None, at: Moment, limit: int | str | None
) -> Top:
    """A rolling window's head: the current hour's, or while the job has not yet refreshed it this hour, the hour
    before's (its ``period`` says which hours it sums). At most two GetItems."""
    name = validation.board_name(board or reads.settings.board)
    chosen = validation.window_name(window, reads.settings.policy.periods.windows)
    if period not in (None, "") or at not in (None, ""):
        raise validation.BadInput("a window is read as of now: send window without period or at")
    count = validation.limit(_text(limit), reads.settings.top_n_of(name))
    now = reads.clock()
    wanted = PeriodKey(name, chosen.name, window_bucket(now))
    head = live(reads.board.get_snapshot(wanted), now) or live(
        reads.board.get_snapshot(wanted._replace(bucket=previous_bucket(HOUR, wanted.bucket))), now
    )
    if head is None:
        raise NoSnapshot(wanted)
    document = Leaderboard.of_snapshot(head, count)
    document.window = chosen.name
    return Top(wanted, head, count, document)


def page(
    reads: BoardReads,
    *,
    board: str | None = None,
    period: str | None = None,
    at: Moment = None,
    offset: int | str | None = None,
    limit: int | str | None = None,
    cursor: str | None = None,
) -> Leaderboard:
    """A page of the period's ranked version from ``offset``, or the next page of the version ``cursor`` pins (a
    cursor alone names its own period): the head and one BatchGetItem of the stored pages."""
    moment = reads.clock()
    named = (
        None
        if (cursor and not (board or period or at))
        else period_named(reads.settings, board, period, at, now=moment)
    )
    now = moment.isoformat()
    head, found = leaderboard_page(
        reads.board,
        reads.settings.policy,
        named,
        offset=_text(offset),
        limit=_text(limit),
        cursor=cursor or "",
        now=now,
    )
    if head is None:
        raise NoSnapshot(named or PeriodKey(reads.settings.board, "all", "all"))
    return Leaderboard.model_validate(page_document(head, found))


@dataclass(frozen=True)
class RankAnswers:
    """Ranks of some ids in a period, in the order asked."""

    period: PeriodKey
    head: Head
    answers: list[RankAnswer]

    def document(self) -> Ranks:
        """What GET /rank answers."""
        shown = self.head.period or {"kind": "all"}
        ranks = [answer.as_json() for answer in self.answers]
        return Ranks.model_validate({"board": self.period.board, "period": shown, "ranks": ranks})


@dataclass(frozen=True)
class Neighbourhood:
    """An item's neighbours in a period."""

    period: PeriodKey
    head: Head
    item_id: str
    around: Around

    def document(self) -> AroundMe:
        """What GET /around answers."""
        return AroundMe.model_validate(around_document(self.head, self.item_id, self.around))


def ranks(
    reads: BoardReads, ids: Sequence[str], *, board: str | None = None, period: str | None = None, at: Moment = None
) -> RankAnswers:
    """Each id's rank (1 to MAX_RANK_IDS ids, in the order given): exact within the ranked depth D, approximate
    past it; the snapshot (one GetItem) and, past the head, its ranked version."""
    if isinstance(ids, str):
        raise validation.BadInput("ids must be a sequence of ids, not one string")
    checked = [validation.lookup_item_id(one) for one in ids]
    if not checked:
        raise validation.BadInput(f"between 1 and {MAX_RANK_IDS} ids per request, got 0")
    if len(checked) > MAX_RANK_IDS:
        raise validation.BadInput(f"at most {MAX_RANK_IDS} ids per request, got {len(checked)}")
    wanted = period_named(reads.settings, board, period, at, now=reads.clock())
    head = head_of(reads, wanted)
    answers = lookup_ranks(reads.board, reads.settings.policy, wanted, head, checked, catalog=reads.items)
    return RankAnswers(wanted, head, answers)


def neighbours(
    reads: BoardReads,
    item_id: str,
    *,
    k: int | str | None = None,
    board: str | None = None,
    period: str | None = None,
    at: Moment = None,
) -> Neighbourhood:
    """The ``k`` entries above and below ``item_id`` with exact ranks (NotRanked past the depth D)."""
    item = validation.lookup_item_id(item_id)
    depth_k = parse_k(_text(k))
    wanted = period_named(reads.settings, board, period, at, now=reads.clock())
    head = head_of(reads, wanted)
    answer = around(reads.board, wanted, head, item, k=depth_k, catalog=reads.items)
    return Neighbourhood(wanted, head, item, answer)


def item(reads: BoardReads, item_id: str) -> Item:
    """The item's record (if it was put, with its takedown status) and its all-time views: two GetItems, one per table,
    and for an item never put one more read for its status (a deleted item's views are erased: it still says deleted;
    NoItem for an id with no views, no record and no status)."""
    checked = validation.lookup_item_id(item_id)
    views = reads.board.aggregate_views(checked)
    record = reads.items.get(checked)
    status = reads.items.statuses([checked]).get(checked) if record is None else None
    if views is None and record is None and status is None:
        raise NoItem(f"no views recorded for item {checked!r} and it was never created")
    return Item.of(checked, views, record, status)


def _text(value: int | str | None) -> str:
    """A whole number as the query string carries it ("" when absent), so the library, the CLI and HTTP share the
    text rules of :mod:`shardboard.domain.validation` (a bool or a float is refused as any other non-number)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise validation.BadInput(f"expected a whole number, got {value!r}")
    return str(value)
