"""Refill: give a period's sparse index back the items that more takedowns than it had room for left out.

A period's published T admits every item that can reach its top: the (N+R)-th best visible when published, or the
D-th with ranked versions. T only rises, so each hide or delete of an item at or above T uses up one of those R (or
D - N - R) places. Past them a period can hold fewer than its depth of visible items at or above T, and an item below T
that never reached it has no index key: the next gather may then come up short, or miss it. The snapshot job
notices (``snapshot.proven_exact``, logged `snapshot not proven exact`, metric ``UnprovenSnapshots``); the all-time
board with ranked versions makes up for it from the deep tier by itself, until more than D - N - R takedowns above
T_D, its deep threshold, against which it is measured here. This repairs every other case (docs/sparse-index.md,
"Takedowns"):

1. one scan of the board table finds each period whose best visible items (its depth of them) are not all at or
   above T, and the count of the depth-th of them, the T that holds them all;
2. T is lowered to that count, so the aggregator keys from then on every item that reaches it;
3. a second scan keys every item at or above the new T that lacks its key (one conditional UpdateItem each, as the
   aggregator's own join); then each repaired period's head is gathered again.

An aggregator batch that read the old T before step 2 may write a count past the new T without a key after step 3
read it: that item's next count keys it (the aggregator joins on every write), `verify` names it as an index miss
until then, and a second refill keys it. A past period whose every item was deleted is not seen (no counts, and
a clean past period is not listed): its head is empty and exact, the job may call it unproven once. Hidden and
deleted items are counted out of the depth; a hidden item at or above the new T is keyed like any other (an unhide
must find it), a deleted one never.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shardboard.adapters.board_table import BoardStore
from shardboard.domain.aggregation import Context
from shardboard.domain.periods import ALL
from shardboard.domain.ports import ItemCatalog, PeriodKey
from shardboard.services.snapshots import take_snapshot
from shardboard.settings import Settings
from shardboard_tools.operations.verification import Stored, holding_threshold, reserve, stored_counts


@dataclass(frozen=True)
class Refill:
    """One period repaired: its T before and after, and how many index keys the second scan set."""

    period: PeriodKey
    threshold_was: int
    threshold: int
    keyed: int


def short_periods(
    board: BoardStore, settings: Settings, found: Stored, dropped: frozenset[str]
) -> dict[PeriodKey, int]:
    """Each period whose best visible items are not all at or above its published threshold (T_D for all time with
    the deep tier: ``verification.reserve``), with the T that holds them; lowering T to it keys them in the head
    index, which every gather reads."""
    # (a period whose every item was deleted holds no counts, but may still publish a T that nothing can hold)
    periods = sorted(set(found.counts) | {status.period for status in board.periods()})
    states = board.thresholds(periods, consistent=True)
    short: dict[PeriodKey, int] = {}
    for period in periods:
        counts = found.counts.get(period, {})
        holds = holding_threshold(counts, *reserve(settings, period, states.get(period)), dropped)
        if holds is not None:
            short[period] = holds
    return short


def refill(
    board: BoardStore,
    settings: Settings,
    hidden: frozenset[str],
    deleted: frozenset[str],
    *,
    catalog: ItemCatalog | None = None,
    boards: Iterable[str] | None = None,
) -> list[Refill]:
    """Repair every short period (of ``boards``, else of every board), given the hidden and the deleted ids. Safe
    while traffic flows and to run twice (a period that is not short is left alone)."""
    dropped = hidden | deleted
    wanted = set(boards) if boards is not None else None
    short = {
        period: holds
        for period, holds in short_periods(board, settings, stored_counts(board, settings), dropped).items()
        if wanted is None or period.board in wanted
    }
    if not short:
        return []
    before = board.thresholds(sorted(short), consistent=True)
    for period, holds in short.items():
        board.lower_threshold(period, holds)
    found = stored_counts(board, settings)
    layouts = board.thresholds(sorted({PeriodKey(p.board, ALL, ALL) for p in short}), consistent=True)
    ctx = Context(settings.policy, layouts)
    repaired = []
    for period, holds in sorted(short.items()):
        keyed = sum(
            _join(board, ctx, found, period, item)
            for item, count in sorted(found.counts.get(period, {}).items())
            if count >= max(1, holds) and item not in found.keyed.get(period, set()) and item not in deleted
        )
        take_snapshot(board, settings, None, period, dropped, catalog=catalog)
        repaired.append(Refill(period, before[period].threshold if period in before else 0, holds, keyed))
    return repaired


def _join(board: BoardStore, ctx: Context, found: Stored, period: PeriodKey, item_id: str) -> int:
    """Key one item into a period's index: on its aggregate for a current period, else on its past entry."""
    key = ctx.index_key(period, item_id)
    if (period, item_id) in found.current:
        return int(board.join_index(period.board, item_id, period.kind, key))
    return int(board.join_entry(period, item_id, key))
