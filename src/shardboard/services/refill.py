"""Refill: give a period's sparse index back the items that more takedowns than it had room for left out.

A period's published T admits every item that can reach its top: the (N+R)-th best visible when published, or the
D-th with ranked versions. T only rises, so each hide or delete of an item at or above T uses up one of those R (or
D - N - R) places. Past them a period can hold fewer than its depth of visible items at or above T, and an item below T
that never reached it has no index key: the next gather may then come up short, or miss it. The snapshot job
notices (``snapshot.proven_exact``) and runs this repair by itself for the boards of the periods it could not prove
(services/snapshot_job.py); `shardboard refill` runs it by hand. The all-time board with ranked versions makes
up for it from the deep tier by itself, until more than D - N - R takedowns above T_D, its deep threshold, against
which it is measured here (docs/sparse-index.md, "Takedowns"):

1. one scan of the board table finds each period whose best visible items (its depth of them) are not all at or
   above T, and the count of the depth-th of them, the T that holds them all;
2. T is lowered to that count, so the aggregator keys from then on every item that reaches it;
3. a second scan keys every item at or above the new T that lacks its key (one conditional UpdateItem each, as the
   aggregator's own join), and so in each period the caller names as unproven (an index miss there: a crash or a
   race between a count and its key); then each of those periods' head is gathered again, and says whether it is
   now proven exact.

A past period whose every item was deleted is not seen (no counts, and a clean past period is not listed): its head
is empty and exact, the job may call it unproven once. Hidden and deleted items are counted out of the depth; a
hidden item at or above the new T is keyed like any other (an unhide must find it), a deleted one never.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from shardboard.adapters.board_counts import Stored, stored_counts
from shardboard.adapters.dynamodb import ScanDeadline
from shardboard.domain.aggregating.aggregation import Context
from shardboard.domain.items.records import DELETED
from shardboard.domain.items.taken_down import Dropped, TakenDown, dropped_among
from shardboard.domain.periods import ALL
from shardboard.domain.ports import BoardIndex, BoardScans, ItemCatalog, PeriodKey, PeriodLedger
from shardboard.domain.publishing.deep_tier import index_bucket
from shardboard.domain.publishing.refill import holding_threshold, reserve
from shardboard.services.snapshots import SnapshotBoard, take_snapshot
from shardboard.settings import Settings


class RepairableBoard(SnapshotBoard, PeriodLedger, BoardScans, Protocol):
    """The board table as the repair needs it: a snapshot's roles, the periods it holds, and a scan of its counts."""


@dataclass(frozen=True)
class Refill:
    """One period repaired: its T before and after, how many index keys the second scan set, and whether its head,
    gathered again, is proven exact."""

    period: PeriodKey
    threshold_was: int
    threshold: int
    keyed: int
    proven: bool = True


@dataclass(frozen=True)
class Repair:
    """What the snapshot job's repair did: the periods it repaired, those still not proven exact after it (what the
    UnprovenSnapshots metric counts), and why, when the repair could not run to its end."""

    repaired: list[Refill]
    unrepaired: list[PeriodKey]
    why_not: str = ""


def repair_unproven(
    board: RepairableBoard,
    settings: Settings,
    unproven: Iterable[PeriodKey],
    *,
    dropped: Dropped,
    catalog: ItemCatalog,
    deadline: float | None,
) -> Repair:
    """The snapshot job's repair of the periods its run could not prove exact: :func:`refill` of their boards, given
    the run's view of the taken-down ids (``dropped``) and the deleted ones read here, before ``deadline``."""
    periods = sorted(set(unproven))
    if not periods:
        return Repair([], [])
    deleted = TakenDown.read(catalog, (DELETED,))
    try:
        done = refill(
            board,
            settings,
            dropped,
            deleted,
            catalog=catalog,
            boards={period.board for period in periods},
            unproven=periods,
            deadline=deadline,
        )
    except ScanDeadline:
        return Repair([], periods, "the board table's scan did not finish in the function's time")
    proven = {result.period for result in done if result.proven}
    return Repair(done, [period for period in periods if period not in proven])


def short_periods(
    board: RepairableBoard, settings: Settings, found: Stored, dropped: frozenset[str]
) -> dict[PeriodKey, int]:
    """Each period whose best visible items are not all at or above its published threshold (T_D for all time with
    the deep tier: ``reserve``), with the T that holds them; lowering T to it keys them in the head index, which
    every gather reads."""
    # (a period whose every item was deleted holds no counts, but may still publish a T that nothing can hold)
    periods = sorted(set(found.counts) | {status.period for status in board.periods()})
    states = board.thresholds(periods, consistent=True)
    short: dict[PeriodKey, int] = {}
    for period in periods:
        counts = found.counts.get(period, {})
        holds = holding_threshold(counts, *reserve(settings.policy, period, states.get(period)), dropped)
        if holds is not None:
            short[period] = holds
    return short


def refill(
    board: RepairableBoard,
    settings: Settings,
    hidden: Dropped,
    deleted: Dropped,
    *,
    catalog: ItemCatalog | None = None,
    boards: Iterable[str] | None = None,
    unproven: Iterable[PeriodKey] = (),
    deadline: float | None = None,
) -> list[Refill]:
    """Repair every short period (of ``boards``, else of every board), and key the index misses of the ``unproven``
    periods, given the hidden and the deleted ids (sets, or the snapshot job's views of them). Safe while traffic
    flows and to run twice (a period that is not short is left alone). ``deadline`` (``time.monotonic()``): a scan
    still reading then raises ScanDeadline; a T lowered before is kept (it only keys more) and the next run goes on."""
    wanted = set(boards) if boards is not None else None
    found = stored_counts(board, settings.policy.periods, deadline)
    dropped = _taken_down(found, hidden, deleted)[0]
    short = {
        period: holds
        for period, holds in short_periods(board, settings, found, dropped).items()
        if wanted is None or period.board in wanted
    }
    targets = sorted(set(short) | set(unproven))
    if not targets:
        return []
    before = board.thresholds(targets, consistent=True)
    for period, holds in short.items():
        board.lower_threshold(period, holds)
    found = stored_counts(board, settings.policy.periods, deadline)
    dropped, gone = _taken_down(found, hidden, deleted)
    after = board.thresholds(targets, consistent=True)
    layouts = board.thresholds(sorted({PeriodKey(p.board, ALL, ALL) for p in targets}), consistent=True)
    ctx = Context(settings.policy, layouts)
    repaired = []
    for period in targets:
        threshold_was = before[period].threshold if period in before else 0
        threshold = after[period].threshold if period in after else short.get(period, 0)
        keyed = sum(
            _join(board, ctx, found, period, item)
            for item, count in sorted(found.counts.get(period, {}).items())
            if count >= max(1, threshold) and item not in found.keyed.get(period, set()) and item not in gone
        )
        result = take_snapshot(board, settings, None, period, dropped, catalog=catalog)
        repaired.append(Refill(period, threshold_was, threshold, keyed, result.proven))
    return repaired


def _taken_down(found: Stored, hidden: Dropped, deleted: Dropped) -> tuple[frozenset[str], frozenset[str]]:
    """Of the ids the scan found: those hidden or deleted, and those deleted (one lookup of each view for the lot)."""
    ids = {item for counts in found.counts.values() for item in counts}
    gone = dropped_among(deleted, ids)
    return gone | dropped_among(hidden, ids - gone), gone


def _join(board: BoardIndex, ctx: Context, found: Stored, period: PeriodKey, item_id: str) -> int:
    """Key one item into a period's index: on its aggregate for a current period, else on its past entry."""
    key = ctx.index_key(period, item_id)
    bucket = index_bucket(found.counts[period][item_id])
    if (period, item_id) in found.current:
        return int(board.join_index(period.board, item_id, {period.kind: key}, {period.kind: bucket}))
    return int(board.join_entry(period, item_id, key, bucket))
