"""Exact counts of given items in given periods, read from their aggregates and past entries: what a rolling window's
sum reads back (services/snapshots.py) and a trending entry's recent views, its views in the last hour and the last
24 hours beside the decayed score it ranks by (docs/trending.md "Recent views").

A trending head's recent views cost about one aggregate read per entry and refresh, not one per entry and hour: an
hour's counts are kept per process with the hour's change count (the ledger's, read first), and only hours whose
count changed since are read again (the current one, and a past one that took late views).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from threading import Lock
from typing import Protocol
from weakref import WeakKeyDictionary

from shardboard.adapters.board_counts import Counts, Stored, stored_counts
from shardboard.domain.periods import HOUR
from shardboard.domain.ports import AggregateReads, AggregateState, PeriodKey, Thresholds
from shardboard.domain.windows import RECENT, window_bucket
from shardboard.settings import Settings

# A scan's counts as the board table stores them (the snapshot job's refill, `verify`, bot views) are read here too.
__all__ = ["Counts", "RecentReads", "Stored", "count_in", "period_counts", "recent_views", "stored_counts"]

# Aggregates read at once (one GetItem each).
READ_PARALLELISM = 32


class RecentReads(AggregateReads, Thresholds, Protocol):
    """What recent views read: the hours' ledger items (their change counts), aggregates and past entries."""


def count_in(board: AggregateReads, settings: Settings, period: PeriodKey, item_id: str, state: AggregateState) -> int:
    """An item's exact count in one period, given its aggregate's ``state``: the aggregate's while that period is
    its current one, else the past entry archived when it moved on (none when its views all came later)."""
    current = settings.policy.periods.bucket(period.kind, state.bucket) if state.bucket is not None else None
    if current == period.bucket:
        return state.count(period.kind)
    if current is None or current < period.bucket:
        return 0
    return board.entry_state(period, item_id).views


# Per process and board store, per board (the BOARDS_KEPT most recently read): hour period -> (the hour's change
# count when read, {item: its count in the hour}). ~170 KB a board at N = 100: at most ~40 MB of a 512 MB function;
# a board evicted pays its 24 past hours again.
Hours = dict[PeriodKey, tuple[int, dict[str, int]]]
_hours: WeakKeyDictionary[object, OrderedDict[str, Hours]] = WeakKeyDictionary()
_hours_lock = Lock()
BOARDS_KEPT = 256


def recent_views(
    board: RecentReads, settings: Settings, board_name: str, at: datetime, item_ids: Sequence[str]
) -> dict[str, tuple[int, ...]]:
    """Each item's views on ``board_name`` in each of the ``RECENT`` windows as read at ``at`` (the whole hours before
    plus the current one, as ``?window=`` reads them), in that order."""
    if not item_ids:
        return {}
    bucket = window_bucket(at)
    hours = [PeriodKey(board_name, HOUR, hour) for hour in RECENT[-1].hour_buckets(bucket)]
    # The change counts before the counts: the aggregator counts first and marks after, so a count read after an
    # equal mark is at least as new as the mark, and a change after it is seen by the next refresh.
    ledger = board.thresholds(hours, consistent=True)
    known: dict[PeriodKey, dict[str, int]] = {}
    asks: list[tuple[PeriodKey, str]] = []
    with _hours_lock:
        boards = _hours.setdefault(board, OrderedDict())
        kept = {hour: entry for hour, entry in boards.pop(board_name, {}).items() if hour in ledger}  # in the window
        boards[board_name] = kept
        while len(boards) > BOARDS_KEPT:
            boards.popitem(last=False)
        for hour, state in ledger.items():
            changes, counts = kept.get(hour, (-1, {}))
            if changes != state.changes:
                counts = {}
                kept[hour] = (state.changes, counts)
            known[hour] = counts
            asks += [(hour, item) for item in item_ids if item not in counts]
    for (hour, item), count in zip(asks, period_counts(board, settings, board_name, asks), strict=True):
        known[hour][item] = count
    return {
        item: tuple(
            sum(known.get(PeriodKey(board_name, HOUR, hour), {}).get(item, 0) for hour in window.hour_buckets(bucket))
            for window in RECENT
        )
        for item in item_ids
    }


def period_counts(
    board: AggregateReads,
    settings: Settings,
    board_name: str,
    asks: Sequence[tuple[PeriodKey, str]],
    aggregates: dict[str, AggregateState] | None = None,
) -> list[int]:
    """The count of each (period, item) asked: each item's aggregate read once (``aggregates``: those read already,
    kept for the caller's next asks), then the past entries it points to."""
    if not asks:
        return []
    aggregates = {} if aggregates is None else aggregates
    missing = sorted({item for _, item in asks} - aggregates.keys())
    with ThreadPoolExecutor(max_workers=min(READ_PARALLELISM, len(asks))) as pool:
        aggregates.update(zip(missing, pool.map(lambda item: board.state(board_name, item), missing), strict=True))
        return list(pool.map(lambda ask: count_in(board, settings, ask[0], ask[1], aggregates[ask[1]]), asks))
