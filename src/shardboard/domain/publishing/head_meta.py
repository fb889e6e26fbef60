"""Metadata in the snapshot head (issue 13, design section 1): ``meta`` = ``{id: document or null}`` for the head's
first P entries (``PageSize``), so a frontend renders a board, titles and thumbnails included, with one GetItem.

Cost: a run that writes a head reuses the previous head's documents and BatchGets only the ids new among its first
P (null records "asked, never put", so such ids are not asked again). A re-put document does not wait for that: the
put patches every head that carries the item's document (services/republishing.py). Every ``META_REFRESH_SECONDS`` a
written head still re-reads all P, which heals a run that read a document just before its re-put (an eventually
consistent BatchGet) on a board whose top changes.

Size: documents are the first part a head too large for its item gives up (domain/publishing/head_size.py ``fit``):
the lowest-ranked entries lose their inline documents until it fits (their ids are then simply absent from ``meta``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from shardboard.domain.periods import parse_time
from shardboard.domain.publishing.head import Head, Meta

if TYPE_CHECKING:  # ports imports items, which imports validation -> settings -> ... -> ports
    from shardboard.domain.items.records import ItemRecord

# A re-put document reaches heads that are being rewritten within this long (the staleness bound above).
META_REFRESH_SECONDS = 300


@dataclass(frozen=True)
class MetaAsk:
    """Which documents a head about to be written needs from the catalog (``asked``; all its first P when ``due``)."""

    first: list[str]  # the ids of its first P entries
    known: Meta  # the previous head's documents
    asked: list[str]
    due: bool
    refreshed_at: str | None


def meta_ask(snapshot: Head, previous: Head | None, page_size: int) -> MetaAsk:
    """Reuse the previous head's documents; ask only for ids new among the first P, or for all P when they are due."""
    now = snapshot.generated_at
    first = [entry.id for entry in snapshot.items[:page_size]]
    known: Meta = dict((previous.meta if previous else None) or {})
    refreshed_at = previous.meta_at if previous else None
    due = refreshed_at is None or _seconds(refreshed_at, now) >= META_REFRESH_SECONDS
    asked = first if due else [item_id for item_id in first if item_id not in known]
    return MetaAsk(first, known, asked, due, refreshed_at)


def with_meta(snapshot: Head, ask: MetaAsk, found: Mapping[str, ItemRecord]) -> Head:
    """``snapshot`` with its ``meta`` and ``meta_at`` from what the catalog ``found`` of ``ask.asked`` (null: "asked,
    never put", so such ids are not asked again). Its size is ``fit``'s to keep (head_size.py)."""
    fresh: Meta = {item_id: found[item_id].document() if item_id in found else None for item_id in ask.asked}
    meta = {item_id: fresh[item_id] if item_id in fresh else ask.known[item_id] for item_id in ask.first}
    return replace(snapshot, meta=meta, meta_at=snapshot.generated_at if ask.due else ask.refreshed_at)


def compact(value: Any) -> str:
    """The stored text of a head attribute (adapters.board_table.snapshot_item writes the same)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _seconds(earlier: str, later: str) -> float:
    return (parse_time(later) - parse_time(earlier)).total_seconds()
