"""Takedowns (docs/proposals/items-and-ranks.md section 2): hide, unhide and delete an item.

A hidden item keeps its aggregates, index keys and counting (the aggregator never looks at its status); every gather
drops it (``snapshots.gather_layout``). A hide also patches, at once, every snapshot head that holds it: the head keeps
the exact top N+R visible items of one gather, so removing the item leaves the exact refill as of that gather. A head
left with fewer than N is gathered again on the spot. In the same conditional put, the head's ranked version (the top D
that rank, around-me and pages read) gets the event ``[kind, id, pos]`` when it holds the item, so those reads skip it
at once too (``percentiles.exclusions``). Unhide appends ``["unhide", id]`` and gathers the item's heads again (its
counts were never touched, so it returns exactly). Both mark the periods changed, so the next run re-gathers them too.

A delete is a hide that also erases: after the tombstone (the id's deny marker, which every gather and the
aggregator honour) and the same head patch, the item's aggregates and past entries are deleted on every board.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from shardboard.domain.items.records import DELETED, HIDDEN, DeletedItem, iso_ms
from shardboard.domain.items.taken_down import TakenDown
from shardboard.domain.periods import ALL, HOUR, retained_buckets
from shardboard.domain.ports import (
    AggregateReads,
    Erasure,
    ItemCatalog,
    PeriodKey,
    PeriodLedger,
    RankedHeads,
    RankedVersions,
)
from shardboard.domain.publishing.events import patch_changes
from shardboard.domain.publishing.head import Head, RankEvent
from shardboard.domain.publishing.head_size import fit
from shardboard.domain.publishing.ranked_versions import rank_shard_of
from shardboard.domain.publishing.snapshot import head_digest
from shardboard.domain.reading.percentiles import taken_down
from shardboard.services.snapshots import RefreshingBoard, take_snapshot
from shardboard.settings import Settings


class ItemPeriods(AggregateReads, PeriodLedger, Protocol):
    """Which periods an item counts in: its aggregates' boards and the periods the ledger holds."""


class TakedownBoard(RefreshingBoard, Erasure, Protocol):
    """What a put or a takedown touches: the heads and ranked versions it patches (or gathers again), the periods it
    marks changed, and a delete's sweep of the item's counts."""


# What each event kind leaves the item as in a ranked version (``percentiles.taken_down``).
STATUS_AFTER = {"hide": "hidden", "delete": "deleted", "unhide": None}
# A head patch that lost a race with the snapshot job (or another patch) re-reads and re-patches this many times.
PATCH_ATTEMPTS = 5
PARALLELISM = 16


class NothingToTakeDown(LookupError):
    """A takedown of an id with no views and no record: HTTP 404 not_found, CLI exit 1, nothing written (a hide or
    unhide of a deleted item raises records.DeletedItem, answered alike)."""


@dataclass(frozen=True)
class Takedown:
    """What a hide or unhide did: whether the status changed (False: it was so already, the heads were still
    checked), the heads patched in place and the periods gathered again."""

    item_id: str
    hidden: bool
    changed: bool
    patched: list[PeriodKey] = field(default_factory=list)
    refreshed: list[PeriodKey] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.item_id,
            "status": "hidden" if self.hidden else "visible",
            "changed": self.changed,
            "patched": len(self.patched),
            "refreshed": len(self.refreshed),
        }


@dataclass(frozen=True)
class Deletion(Takedown):
    """What a delete did: a takedown (``changed`` False: it was deleted already, the sweep ran again) plus how many
    aggregates and past entries this sweep erased."""

    erased: int = 0

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "status": "deleted", "erased": self.erased}


def without(snapshot: Head, item_id: str, top_n: int) -> Head | None:
    """The head with ``item_id`` dropped and the top N refilled from its spares, or None when it does not hold it.

    The head's items and spares are the exact top N+R visible of one gather, so the rest, in order, is the exact
    top N+R-1 of the visible items without this one, as of that gather.
    """
    entries = [*snapshot.items, *snapshot.spare]
    kept = tuple(entry for entry in entries if entry.id != item_id)
    if len(kept) == len(entries):
        return None
    items, spare = kept[:top_n], kept[top_n:]
    return replace(
        snapshot,
        items=items,
        spare=spare,
        version=snapshot.version + 1,
        digest=head_digest(items, spare),
        threshold=items[-1].views if len(items) >= top_n else 0,
        patched=patch_changes(snapshot, kept, snapshot.version + 1, top_n),
    )


def rank_event(board: RankedVersions, period: PeriodKey, head: Head, item_id: str, kind: str) -> RankEvent | None:
    """The event to append to the head's ranked version: ``[kind, id, pos]`` for a hide or delete of an item the
    version holds (its position from its rank shard, one GetItem), ``["unhide", id]`` for an item it has hidden;
    None when there is no version or nothing changes in it."""
    block = head.rank
    if block is None:
        return None
    status = taken_down(block.events, item_id)
    if status == STATUS_AFTER[kind] or (kind == "unhide" and status != "hidden"):
        return None
    if kind == "unhide":
        return RankEvent("unhide", item_id)
    shard = rank_shard_of(item_id, block.shards)
    found = board.get_rank_shards(period, block.rv, [shard]).get(shard, {})
    return RankEvent(kind, item_id, found[item_id].position) if item_id in found else None


def with_event(head: Head, event: RankEvent | None) -> Head:
    """The head with ``event`` (if any) appended to its ranked version's events (append-only: a cursor pins a
    prefix of them)."""
    if event is None or head.rank is None:
        return head
    return replace(head, rank=replace(head.rank, events=(*head.rank.events, event)))


def affected_periods(board: ItemPeriods, settings: Settings, item_id: str, moment: datetime) -> list[PeriodKey]:
    """Every period whose head may hold the item: on each board where it has an aggregate, all time, every
    retained bucket of each configured kind and each window's readable heads (one consistent GetItem per board, in
    parallel)."""
    boards = sorted({status.period.board for status in board.periods()} | {settings.board})
    with ThreadPoolExecutor(max_workers=PARALLELISM) as pool:
        states = list(pool.map(lambda name: board.state(name, item_id), boards))
    periods = []
    for name, state in zip(boards, states, strict=True):
        if state.views == 0 and not state.applied:
            continue
        periods.append(PeriodKey(name, ALL, ALL))
        half_life = settings.trending_half_life_hours
        for kind in settings.policy.periods.kinds:
            retained = retained_buckets(kind, moment, settings.retention(kind), half_life=half_life)
            periods.extend(PeriodKey(name, kind, b) for b in retained)
        # A window's head of this hour, and the hour before's, which reads fall back on until the job writes this one
        hours = retained_buckets(HOUR, moment, 1)
        periods.extend(PeriodKey(name, window.name, b) for window in settings.policy.periods.windows for b in hours)
    return periods


class Operation(Protocol):
    """``hide``, ``unhide`` or ``delete``, as the CLI and the handler call them."""

    def __call__(
        self,
        catalog: ItemCatalog,
        board: TakedownBoard,
        settings: Settings,
        item_id: str,
        *,
        by: str,
        reason: str,
        at: datetime,
    ) -> Takedown: ...


def hide(
    catalog: ItemCatalog,
    board: TakedownBoard,
    settings: Settings,
    item_id: str,
    *,
    by: str,
    reason: str,
    at: datetime,
) -> Takedown:
    """Hide the item: status, audit row and hidden marker in one transaction, then patch every head that holds it
    (``at``: the time whose periods are current, the caller's clock). A deleted item raises DeletedItem."""
    refuse_deleted(catalog, item_id)
    if catalog.get(item_id) is None and board.state(settings.board, item_id).views == 0:
        raise NothingToTakeDown(f"item {item_id!r} has no views and was never created")
    return _skeleton(
        board,
        settings,
        item_id,
        at,
        status=lambda now: catalog.set_hidden(item_id, True, by, reason, now),
        heads=lambda periods, now: _take_off(board, catalog, settings, periods, item_id, "hide", now),
    )


def delete(
    catalog: ItemCatalog,
    board: TakedownBoard,
    settings: Settings,
    item_id: str,
    *,
    by: str,
    reason: str,
    at: datetime,
) -> Deletion:
    """Delete the item: tombstone, audit row and deny marker in one transaction, then the hide's head patch, then its
    aggregates and past entries erased on every board. A repeat writes no second tombstone but runs the sweep
    again, so a delete cut short (a crash after the transaction) is finished by running it again: the heads are
    patched before anything is erased, and each board's aggregate, which names the board, goes last."""
    if (
        catalog.get(item_id) is None
        and board.state(settings.board, item_id).views == 0
        and item_id not in TakenDown.read(catalog, (DELETED,))
    ):
        raise NothingToTakeDown(f"item {item_id!r} has no views and was never created")
    erased = 0

    def heads(periods: Sequence[PeriodKey], now: str) -> tuple[list[PeriodKey], list[PeriodKey]]:
        nonlocal erased
        done = _take_off(board, catalog, settings, periods, item_id, "delete", now)
        erased = sum(
            board.erase(name, item_id, [period for period in periods if period.board == name])
            for name in dict.fromkeys(period.board for period in periods)
        )
        return done

    status = partial(catalog.set_deleted, item_id, by, reason)
    done = _skeleton(board, settings, item_id, at, status=status, heads=heads)
    return Deletion(item_id, True, done.changed, done.patched, done.refreshed, erased)


def unhide(
    catalog: ItemCatalog,
    board: TakedownBoard,
    settings: Settings,
    item_id: str,
    *,
    by: str,
    reason: str,
    at: datetime,
) -> Takedown:
    """Unhide the item: the transaction reversed, then every existing head of its periods gathered again. Like a
    hide, a repeat (or an unhide of an item that was never hidden) changes nothing but checks the heads again, so an
    unhide cut short after its transaction is finished by running it again."""

    def status(now: str) -> bool:
        changed = catalog.set_hidden(item_id, False, by, reason, now)
        if not changed:
            _check_unhidable(catalog, board, settings, item_id)
        return changed

    def heads(periods: Sequence[PeriodKey], now: str) -> tuple[list[PeriodKey], list[PeriodKey]]:
        hidden = TakenDown.read(catalog, (HIDDEN,)).excluding(item_id) | TakenDown.read(catalog, (DELETED,))

        def refresh(period: PeriodKey) -> str:
            if board.get_snapshot(period, consistent=True) is None:
                return "absent"
            _record_unhide(board, period, item_id)  # the ranked version's position comes back
            take_snapshot(board, settings, now, period, hidden, catalog=catalog)  # the head keeps its metadata
            return "refreshed"

        return [], [period for period, outcome in for_each_period(periods, refresh) if outcome == "refreshed"]

    return _skeleton(board, settings, item_id, at, status=status, heads=heads, hidden=False)


def _skeleton(
    board: TakedownBoard,
    settings: Settings,
    item_id: str,
    at: datetime,
    *,
    status: Callable[[str], bool],
    heads: Callable[[Sequence[PeriodKey], str], tuple[list[PeriodKey], list[PeriodKey]]],
    hidden: bool = True,
) -> Takedown:
    """What hide, unhide and delete share: the item's status transaction at ``at`` (``status(now)``: whether it
    changed), then ``heads`` on every period the item counts in (the heads patched, those gathered again), then
    those periods marked changed, so the next snapshot run gathers them again too."""
    moment, now = _now(at)
    changed = status(now)
    periods = affected_periods(board, settings, item_id, moment)
    patched, refreshed = heads(periods, now)
    _mark(board, settings, patched + refreshed, moment)
    return Takedown(item_id, hidden, changed, patched, refreshed)


def refuse_deleted(catalog: ItemCatalog, item_id: str) -> None:
    """DeletedItem, before anything is written, for a deleted item: its tombstone or its deny marker (written in one
    transaction), read strongly consistent, so a delete just answered is seen."""
    record = catalog.get(item_id, consistent=True)
    if (record is not None and record.status == DELETED) or catalog.taken_down_among([item_id], DELETED, True):
        raise DeletedItem(item_id)


def _check_unhidable(catalog: ItemCatalog, board: AggregateReads, settings: Settings, item_id: str) -> None:
    """An unhide that changed nothing goes on (to finish one cut short) for a visible item; a deleted item, a hidden
    one whose transaction kept losing its race, and an id with no views and no record are refused."""
    record = catalog.get(item_id, consistent=True)
    status = record.status if record else None
    if status == STATUS_AFTER["delete"] or item_id in TakenDown.read(catalog, (DELETED,)):
        raise DeletedItem(item_id)
    if status == STATUS_AFTER["hide"]:
        raise NothingToTakeDown(f"item {item_id!r} is still hidden: a concurrent put kept winning; try again")
    if record is None and board.state(settings.board, item_id).views == 0:
        raise NothingToTakeDown(f"item {item_id!r} has no views and was never created")


def _take_off(  # noqa: PLR0917 - one takedown's inputs
    board: TakedownBoard,
    catalog: ItemCatalog,
    settings: Settings,
    periods: Sequence[PeriodKey],
    item_id: str,
    kind: str,
    now: str,
) -> tuple[list[PeriodKey], list[PeriodKey]]:
    """Drop the item from every head of ``periods`` (``kind``: "hide" or "delete") at ``now`` (the takedown's time,
    which stamps a head gathered again): the heads patched and those gathered again."""
    # The markers are read eventually consistently: the item itself is dropped whatever the read returns. Gathers
    # drop deleted ids too.
    hidden = TakenDown.read(catalog).including(item_id)
    outcomes = for_each_period(
        periods, lambda period: _patch(board, catalog, settings, period, item_id, hidden, kind, now)
    )
    patched = [period for period, outcome in outcomes if outcome == "patched"]
    refreshed = [period for period, outcome in outcomes if outcome == "refreshed"]
    return patched, refreshed


def _patch(  # noqa: PLR0917 - one head's inputs
    board: TakedownBoard,
    catalog: ItemCatalog,
    settings: Settings,
    period: PeriodKey,
    item_id: str,
    hidden: TakenDown,
    kind: str,
    now: str,
) -> str:
    """Drop the item from one head and its ranked version: "absent" (in neither), "patched", or "refreshed" (too
    few left in the head, or the job kept winning the race: gathered again, with the item hidden)."""
    for _ in range(PATCH_ATTEMPTS):
        outcome = _patch_once(board, settings, period, item_id, kind)
        if outcome == "short":
            take_snapshot(board, settings, now, period, hidden, catalog=catalog)
            return "refreshed"
        if outcome is not None:
            return outcome
    # The gather drops the item from the head; a ranked version it did not rewrite still needs the event.
    take_snapshot(board, settings, now, period, hidden, catalog=catalog)
    _patch_once(board, settings, period, item_id, kind)
    return "refreshed"


def _patch_once(board: RankedHeads, settings: Settings, period: PeriodKey, item_id: str, kind: str) -> str | None:
    """One conditional put of the patched head: "absent", "patched", "short" (patched, fewer than N left), or None
    (lost a race: read again)."""
    top_n = settings.top_n_of(period.board)
    head = board.get_snapshot(period, consistent=True)
    if head is None:
        return "absent"
    dropped = without(head, item_id, top_n)
    event = rank_event(board, period, head, item_id, kind)
    if dropped is None and event is None:
        return "absent"
    patched, _ = fit(with_event(dropped or replace(head, version=head.version + 1), event))  # (head_size.py)
    if not board.put_snapshot(patched, head.version):
        return None
    return "short" if dropped is not None and len(dropped.items) < top_n else "patched"


def _record_unhide(board: RankedHeads, period: PeriodKey, item_id: str) -> None:
    """Append ``["unhide", id]`` to the head's ranked version if it has the item hidden (conditional put, retried)."""
    for _ in range(PATCH_ATTEMPTS):
        head = board.get_snapshot(period, consistent=True)
        event = None if head is None else rank_event(board, period, head, item_id, "unhide")
        if head is None or event is None:
            return
        if board.put_snapshot(fit(with_event(replace(head, version=head.version + 1), event))[0], head.version):
            return


def _mark(board: PeriodLedger, settings: Settings, periods: Sequence[PeriodKey], moment: datetime) -> None:
    """The next snapshot run re-gathers these periods (a run that read the markers before the hide heals); they
    changed at ``moment``, the takedown's time."""
    if periods:
        expiry = {p: settings.policy.periods.expires(p) for p in periods}
        board.mark_changed(list(periods), int(moment.timestamp()), expiry)


def for_each_period(periods: Sequence[PeriodKey], work: Callable[[PeriodKey], str]) -> list[tuple[PeriodKey, str]]:
    """``work`` on each period's head, PARALLELISM at a time: each period with its outcome."""
    if not periods:
        return []
    with ThreadPoolExecutor(max_workers=min(PARALLELISM, len(periods))) as pool:
        return list(zip(periods, pool.map(work, periods), strict=True))


def _now(at: datetime) -> tuple[datetime, str]:
    return at, iso_ms(at)
