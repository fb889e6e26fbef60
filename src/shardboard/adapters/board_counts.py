"""Every period's counts as the board table holds them, from one scan: what `verify` checks and the refill repairs.

An aggregate holds its item's current periods; a past entry (``entry#``) one past period. Which of them carry their
period's index key tells the refill what to key.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from shardboard.adapters.board_table import aggregate_state
from shardboard.adapters.keys import BUCKET, ITEM_ID, PERIOD_KIND, PK, aggregate_pk, count_attr, index_key_attr
from shardboard.domain.periods import ALL
from shardboard.domain.policy import Periods
from shardboard.domain.ports import BoardScans, PeriodKey

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
        for kind in (*periods.kinds, ALL):
            if kind != ALL and state.bucket is None:
                continue
            period = PeriodKey(owner, kind, periods.bucket(kind, state.bucket or ALL))
            counts[period][item] = state.count(kind)
            current.add((period, item))
            if index_key_attr(kind) in row:
                keyed[period].add(item)
    for row in rows:
        if PERIOD_KIND not in row or BUCKET not in row:
            continue
        kind, item = row[PERIOD_KIND]["S"], row[ITEM_ID]["S"]
        period = PeriodKey(row["board"]["S"], kind, row[BUCKET]["S"])
        if (period, item) in current:
            continue
        counts[period][item] = int(row[count_attr(kind)]["N"]) if count_attr(kind) in row else 0
        if index_key_attr(kind) in row:
            keyed[period].add(item)
    return Stored(counts, keyed, current)
