"""The snapshot job: exact top N by scatter-gather over the board shards, stored as one item for the frontend."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shardboard.domain.ports import Board, Cursor
from shardboard.domain.ranking import Entry, Gathered, Page, gather_top_n, top, with_ranks
from shardboard.domain.sharding import board_shard_value
from shardboard.settings import Settings


@dataclass(frozen=True)
class SnapshotResult:
    snapshot: dict[str, Any]
    written: bool  # False when the content had not changed (or a newer snapshot won the race)
    gathered: Gathered


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def gather_layout(board: Board, settings: Settings, shards: int, previous_hits: dict[int, int] | None) -> Gathered:
    """Exact top N of the aggregates keyed in one GSI layout (``shards`` board shards)."""
    cursors: dict[int, Cursor | None] = {}

    def fetch(shard: int, limit: int, first_page: bool) -> Page:
        rows, cursors[shard] = board.query_shard(
            board_shard_value(settings.board, shard, shards),
            limit,
            None if first_page else cursors.get(shard),
        )
        return Page([Entry(id=item, views=views) for item, views in rows], more=cursors[shard] is not None)

    return gather_top_n(settings.top_n, shards, fetch, previous_hits)


def gather_board(board: Board, settings: Settings, previous_hits: dict[int, int] | None) -> Gathered:
    """Exact top N over the board's layouts: one, or during a reshard the old one first, then the new one.

    An item only ever moves from the old layout to the new one, so reading the whole old layout before the new
    one sees every item at least once (before its move or after it); duplicates keep their larger views.
    """
    layouts = board.get_board_state(settings.board, consistent=True).layouts(settings.board_shards)
    if len(layouts) == 1:
        return gather_layout(board, settings, layouts[0], previous_hits)
    parts = [gather_layout(board, settings, shards, None) for shards in layouts]
    best: dict[str, Entry] = {}
    for entry in (e for part in parts for e in part.top):
        if entry.id not in best or entry.views > best[entry.id].views:
            best[entry.id] = entry
    return Gathered(
        top(best.values(), settings.top_n),
        items_read=sum(p.items_read for p in parts),
        rounds=sum(p.rounds for p in parts),
        shard_hits=parts[-1].shard_hits,  # page sizes for the layout that stays
    )


def take_snapshot(board: Board, settings: Settings, now: str | None = None) -> SnapshotResult:
    """Gather the exact top N; write the snapshot item only when its content changed."""
    previous = board.get_snapshot(settings.board, consistent=True)
    gathered = gather_board(board, settings, previous["shard_hits"] if previous else None)
    items = [[e.id, e.views] for e in gathered.top]
    digest = hashlib.sha256(json.dumps(items, ensure_ascii=False).encode()).hexdigest()
    if previous is not None and previous["digest"] == digest:
        return SnapshotResult(previous, written=False, gathered=gathered)
    snapshot: dict[str, Any] = {
        "board": settings.board,
        "version": previous["version"] + 1 if previous else 1,
        "generated_at": now or iso_now(),
        "items": items,
        "items_read": gathered.items_read,
        # T, the N-th best views: an item below it can never reach the top N (docs/sparse-index.md).
        "threshold": items[-1][1] if len(items) >= settings.top_n else 0,
        "shard_hits": gathered.shard_hits,
        "digest": digest,
    }
    written = board.put_snapshot(snapshot, previous["version"] if previous else None)
    if written and settings.sparse_index and snapshot["threshold"] > 0:
        board.raise_threshold(settings.board, snapshot["threshold"])
    return SnapshotResult(snapshot, written, gathered)


def leaderboard_json(snapshot: dict[str, Any], limit: int | None = None) -> dict[str, Any]:
    """The public leaderboard document: ``{"board", "generated_at", "items": [{"rank", "id", "views"}]}``."""
    entries = [Entry(id=item, views=views) for item, views in snapshot["items"][:limit]]
    return {
        "board": snapshot["board"],
        "generated_at": snapshot["generated_at"],
        "items": [ranked.as_json() for ranked in with_ranks(entries)],
    }
