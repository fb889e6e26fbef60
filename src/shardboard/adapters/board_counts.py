"""Every period's counts as the board table holds them, from one scan: what `verify` checks and the refill repairs.

An aggregate holds its item's current periods; a past entry (``entry#``) one past period. Which of them carry their
period's index key, at a bucket not below their count's (docs/coarse-index.md), tells the refill what to key.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shardboard.adapters.board_table import aggregate_state, entry_state
from shardboard.adapters.keys import BOARD_SHARD, BUCKET, ITEM_ID, PERIOD_KIND, PK, aggregate_pk, index_key_attr
from shardboard.domain.periods import ALL, kind_of
from shardboard.domain.policy import Periods
from shardboard.domain.ports import AggregateState, BoardScans, PeriodKey
from shardboard.domain.publishing.deep_tier import deep_bucket

# Counts per period: period -> item -> views.
Counts = dict[PeriodKey, dict[str, int]]


@dataclass
class Stored:
    """The board table's counts per period, which items carry each period's index key, and which counts an
    aggregate holds (its current periods; the rest are past entries)."""

    counts: Counts
    keyed: dict[PeriodKey, set[str]]
    current: set[tuple[PeriodKey, str]]


def stored_counts(board: BoardScans, periods: Periods, deadline: float | None = None) -> Stored:
    """Every period's counts, keys and aggregates (one scan of the board table; ScanDeadline past ``deadline``)."""
    counts: Counts = defaultdict(dict)
    keyed: dict[PeriodKey, set[str]] = defaultdict(set)
    current: set[tuple[PeriodKey, str]] = set()
    rows = board.scan_counts(deadline=deadline)
    for row in rows:  # aggregates first: they hold their current periods even when an entry was archived already
        item, owner = row[ITEM_ID]["S"], row.get("board", {}).get("S")
        if owner is None or row[PK]["S"] != aggregate_pk(owner, item):
            continue
        state = aggregate_state(row)
        # Without an anchor bucket the aggregate holds all time only (views before any period was configured).
        for kind in (*periods.kinds, ALL) if state.bucket is not None else (ALL,):
            period = PeriodKey(owner, kind, periods.bucket(kind, state.bucket or ALL))
            counts[period][item] = state.count(kind)
            current.add((period, item))
            if _found(row, state, kind):
                keyed[period].add(item)
    for row in rows:
        if PERIOD_KIND not in row or BUCKET not in row:
            continue
        kind, item = row[PERIOD_KIND]["S"], row[ITEM_ID]["S"]
        period = PeriodKey(row["board"]["S"], kind, row[BUCKET]["S"])
        if (period, item) in current:
            continue
        state = entry_state(row, kind)
        counts[period][item] = state.count(kind)
        if _found(row, state, kind):
            keyed[period].add(item)
    return Stored(counts, keyed, current)


def _found(row: Mapping[str, Any], state: AggregateState, kind: str) -> bool:
    """Whether a gather finds the item in ``kind``'s index: it carries the key, and (a period kind) a bucket at or
    above its count's; a bucket left lower (a crash between a move and its raise) is a miss to key again. All time's
    index of the releases before (``board_shard``, sorted by the views) is read too until `shardboard migrate`."""
    if BOARD_SHARD in row and kind_of(kind).pick(all_time=True, period=False):
        return True
    if index_key_attr(kind) not in row:
        return False
    return state.buckets.get(kind, -1) >= deep_bucket(state.count(kind))
