"""A re-put item document reaches the snapshot heads at once (issue 13: frontends render titles and thumbnails from
the head's ``meta``, domain/publishing/head_meta.py): every head that carries the item's document, on every board and
retained period the item counts in, gets the new one in a conditional put, the same patch a takedown makes
(services/takedowns.py). Without it a head would keep the old document until the snapshot job rewrites it for another
reason and its documents are due again (``META_REFRESH_SECONDS``), which a board whose top never changes never is.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from shardboard.domain.items.records import ItemRecord, iso_ms
from shardboard.domain.ports import ItemCatalog, PeriodKey, Snapshots
from shardboard.domain.publishing.head_size import fit
from shardboard.services.takedowns import PATCH_ATTEMPTS, ItemPeriods, affected_periods, for_each_period
from shardboard.settings import Settings


class RepublishingBoard(ItemPeriods, Snapshots, Protocol):
    """What a re-put patches: the heads of the periods the item counts in."""


def put_item(  # noqa: PLR0917 - the stores, the settings and the put
    catalog: ItemCatalog,
    board: RepublishingBoard,
    settings: Settings,
    item_id: str,
    meta: str,
    at: datetime,
) -> tuple[ItemRecord, list[PeriodKey]]:
    """Create the item or replace its document (``meta``: compact JSON, checked by ``records.meta``), then give every
    head that carries its document the new one (``at``: the put's time): the record and the periods whose heads were
    patched."""
    record = catalog.put(item_id, meta, iso_ms(at))
    return record, republish(board, settings, record, at)


def republish(board: RepublishingBoard, settings: Settings, record: ItemRecord, moment: datetime) -> list[PeriodKey]:
    """Patch the item's document into every head of its periods that carries one (a head that only lists it
    without a document, past its first PageSize entries, is left alone)."""
    document = record.document()
    periods = affected_periods(board, settings, record.item_id, moment)
    outcomes = for_each_period(periods, lambda period: _patch_meta(board, period, record.item_id, document))
    return [period for period, outcome in outcomes if outcome == "patched"]


def _patch_meta(board: Snapshots, period: PeriodKey, item_id: str, document: dict[str, Any]) -> str:
    """One head: "patched", "absent" (no head, no document of the item in it, or the same one already), or "lost"
    (the snapshot job kept rewriting it: its own read of the catalog, or its next due one, brings the document)."""
    for _ in range(PATCH_ATTEMPTS):
        head = board.get_snapshot(period, consistent=True)
        meta = (head.meta if head else None) or {}
        if head is None or item_id not in meta or meta[item_id] == document:
            return "absent"
        patched, _ = fit(replace(head, meta={**meta, item_id: document}, version=head.version + 1))
        if board.put_snapshot(patched, head.version):
            return "patched"
    return "lost"
