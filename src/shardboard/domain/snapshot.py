"""The snapshot job: exact top N by scatter-gather over the board shards, stored as one item for the frontend."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shardboard.domain.deep_tier import deep_tier_on, gather_deep
from shardboard.domain.head_meta import inline_meta
from shardboard.domain.periods import ALL, bucket_of, expires_at, period_from_bucket
from shardboard.domain.ports import Board, Cursor, ItemCatalog, PeriodKey
from shardboard.domain.rank_versions import RankRefresh, refresh_rank_version
from shardboard.domain.ranking import Entry, Gathered, Page, gather_top_n, top, with_ranks
from shardboard.domain.sharding import period_shard_value
from shardboard.domain.taken_down import Dropped, dropped_among
from shardboard.settings import Settings


@dataclass(frozen=True)
class SnapshotResult:
    snapshot: dict[str, Any]
    written: bool  # False when the content had not changed (or a newer snapshot won the race)
    gathered: Gathered
    # False when hides above the sparse index's T outran the spares and no deeper index could make up for them: the
    # head is the exact top of the *keyed* visible items only (``proven_exact``; `shardboard refill` repairs it).
    proven: bool = True


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def gather_layout(
    board: Board,
    period: PeriodKey,
    top_n: int,
    shards: int,
    previous_hits: Mapping[int, int] | None,
    *,
    hidden: Dropped = frozenset(),
) -> Gathered:
    """Exact top N of one period among the *visible* items keyed in one GSI layout (``shards`` board shards).

    Hidden items keep their index keys and counts; dropping them from each page before the threshold rule sees it
    keeps the rule exact on the visible sorted lists (and is required: the GSI may still show a just-hidden item).
    """
    cursors: dict[int, Cursor | None] = {}

    def fetch(shard: int, limit: int, first_page: bool) -> Page:
        rows, cursors[shard] = board.query_shard(
            period.kind,
            period_shard_value(period.board, period.kind, period.bucket, shard, shards),
            limit,
            None if first_page else cursors.get(shard),
        )
        gone = dropped_among(hidden, [item for item, _ in rows]) if hidden else frozenset()
        visible = [Entry(id=item, views=views) for item, views in rows if item not in gone]
        return Page(visible, more=cursors[shard] is not None)

    return gather_top_n(top_n, shards, fetch, previous_hits)


def gather_board(
    board: Board,
    settings: Settings,
    previous_hits: Mapping[int, int] | None,
    period: PeriodKey | None = None,
    hidden: Dropped = frozenset(),
    *,
    top_n: int | None = None,
) -> Gathered:
    """Exact top N (or ``top_n``) of a period over the board's layouts: one, or during a reshard the old one first,
    then the new.

    An item only ever moves from the old layout to the new one, so reading the whole old layout before the new
    one sees every item at least once (before its move or after it); duplicates keep their larger views.
    """
    period = period or PeriodKey(settings.board, ALL, ALL)
    top_n = top_n or gather_depth(settings, period.board)
    layouts = board.get_board_state(period.board, consistent=True).layouts(settings.board_shards)
    if len(layouts) == 1:
        return gather_layout(board, period, top_n, layouts[0], previous_hits, hidden=hidden)
    parts = [gather_layout(board, period, top_n, shards, None, hidden=hidden) for shards in layouts]
    best: dict[str, Entry] = {}
    for entry in (e for part in parts for e in part.top):
        if entry.id not in best or entry.views > best[entry.id].views:
            best[entry.id] = entry
    return Gathered(
        top(best.values(), top_n),
        items_read=sum(p.items_read for p in parts),
        rounds=sum(p.rounds for p in parts),
        shard_hits=parts[-1].shard_hits,  # page sizes for the layout that stays
    )


def gather_depth(settings: Settings, board: str) -> int:
    """How deep a head gather reads: N, and the R spares a hide refills from."""
    return settings.top_n_of(board) + settings.snapshot_spare


def head_digest(items: list[list[Any]], spare: list[list[Any]]) -> str:
    """What a snapshot's content is compared by: its top N and its spares (a stale spare would refill wrongly)."""
    return hashlib.sha256(json.dumps(items + spare, ensure_ascii=False).encode()).hexdigest()


def index_threshold(gathered: list[Entry], depth: int) -> int:
    """The T published to the sparse index: the (N+R)-th best visible, so that every spare is exact too (an item
    below T may be missing from the index) and up to R hides leave N visible items at or above T (proposal
    section 2's argument with N+R for D)."""
    return gathered[depth - 1].views if len(gathered) >= depth else 0


def proven_exact(top: Sequence[Entry], depth: int, threshold: int) -> bool:
    """Whether a gather of the keyed items is the exact top ``depth`` of every visible item. Every item at or above
    the published T is keyed (docs/sparse-index.md), so the gather is exact when its ``depth``-th entry is at or
    above T, or when T is 0 (everything is keyed). Only takedowns break it: more hides above T than spares."""
    return threshold <= 0 or (len(top) >= depth and top[depth - 1].views >= threshold)


def gather_head(
    board: Board,
    settings: Settings,
    period: PeriodKey,
    previous_hits: Mapping[int, int] | None,
    hidden: Dropped,
) -> tuple[Gathered, bool]:
    """The head's exact top N+R visible, and whether it is proven exact. With takedowns in play the gather is
    checked against the published T; when it falls short and the period has the deep tier (all time with ranked
    versions), the deep gather, exact down to T_D, takes over (docs/sparse-index.md, "Takedowns")."""
    depth = gather_depth(settings, period.board)
    gathered = gather_board(board, settings, previous_hits, period, hidden)
    if not hidden or not settings.sparse_index:
        return gathered, True  # nothing was ever taken down: every visible item at or above T is in the gather
    state = board.thresholds([period], consistent=True).get(period)
    if state is None or proven_exact(gathered.top, depth, state.threshold):
        return gathered, True
    if not deep_tier_on(settings, period):
        return gathered, False
    deep = gather_deep_board(board, settings, period, depth, previous_hits, hidden=hidden, head=gathered)
    return deep, proven_exact(deep.top, depth, state.deep_threshold)


def take_snapshot(
    board: Board,
    settings: Settings,
    now: str | None = None,
    period: PeriodKey | None = None,
    hidden: Dropped = frozenset(),
    *,
    catalog: ItemCatalog | None = None,
) -> SnapshotResult:
    """Gather the exact top N+R visible items of one period (the global board's all time by default); write the
    snapshot item (top N in ``items``, the R spares in ``spare``) only when its content changed. With the items
    ``catalog``, the head carries its first entries' metadata. When due, also write a new ranked version
    (``rank_versions``)."""
    period = period or PeriodKey(settings.board, ALL, ALL)
    now = now or iso_now()
    top_n = settings.top_n_of(period.board)
    previous = board.get_snapshot(period, consistent=True)
    gathered, proven = gather_head(board, settings, period, previous["shard_hits"] if previous else None, hidden)
    items = [[e.id, e.views] for e in gathered.top[:top_n]]
    spare = [[e.id, e.views] for e in gathered.top[top_n:]]
    digest = head_digest(items, spare)
    expires = expires_at(period.kind, period.bucket, settings.retention(period.kind))
    rank = ranked_version(board, settings, period, previous, now=now, expires=expires, hidden=hidden)
    if previous is not None and previous["digest"] == digest and rank.block == previous.get("rank"):
        return SnapshotResult(previous, written=False, gathered=gathered, proven=proven)
    snapshot: dict[str, Any] = {
        "board": period.board,
        "period": period_json(period),
        "bucket": period.bucket,
        "version": previous["version"] + 1 if previous else 1,
        "generated_at": now,
        "items": items,
        "spare": spare,
        "items_read": gathered.items_read,
        # T, the N-th best views: an item below it can never reach the top N (docs/sparse-index.md).
        "threshold": items[-1][1] if len(items) >= top_n else 0,
        "shard_hits": gathered.shard_hits,
        "digest": digest,
        "expires_at": expires,
    }
    inline_meta(snapshot, previous, catalog, settings.page_size)
    if rank.block is not None:
        snapshot["rank"] = rank.block
    written = board.put_snapshot(snapshot, previous["version"] if previous else None)
    publish_threshold(board, settings, period, gathered, rank=rank, written=written)
    return SnapshotResult(snapshot, written, gathered, proven)


def ranked_version(
    board: Board,
    settings: Settings,
    period: PeriodKey,
    previous: Mapping[str, Any] | None,
    *,
    now: str,
    expires: int | None,
    hidden: Dropped = frozenset(),
) -> RankRefresh:
    """The head's ``rank`` block: a new ranked version when one is due (a deep gather to D of the visible items),
    else the previous."""

    def gather(depth: int, hits: Mapping[int, int] | None) -> Gathered:
        if deep_tier_on(settings, period):
            return gather_deep_board(board, settings, period, depth, hits, hidden=hidden)
        return gather_board(board, settings, hits, period, hidden, top_n=depth)

    block = previous.get("rank") if previous else None
    return refresh_rank_version(board, settings, period, block, now=now, gather=gather, expires_at=expires)


# Deep keys per Query page: KEYS_ONLY entries are ~100 bytes, so a page stays far below 1 MB.
DEEP_PAGE = 1000


def gather_deep_board(
    board: Board,
    settings: Settings,
    period: PeriodKey,
    depth: int,
    previous_hits: Mapping[int, int] | None,
    *,
    hidden: Dropped = frozenset(),
    head: Gathered | None = None,
) -> Gathered:
    """The exact top ``depth`` visible of all time with the deep tier (domain/deep_tier.py): the head GSI's exact top
    ``depth`` (``head``, when the caller gathered it already), then whole deep buckets over every shard of every
    layout (a reshard moves deep keys like head keys), the found ids' exact views by BatchGetItem. Hidden ids are
    dropped wherever they are read."""
    head = head or gather_board(board, settings, previous_hits, period, hidden, top_n=depth)
    layouts = board.get_board_state(period.board, consistent=True).layouts(settings.board_shards)
    keys = [period_shard_value(period.board, ALL, ALL, shard, shards) for shards in layouts for shard in range(shards)]

    def read_buckets(shard: int) -> Iterator[tuple[int, list[str]]]:
        start: Cursor | None = None
        while True:
            rows, start = board.query_deep(period.board, keys[shard], DEEP_PAGE, start)
            gone = dropped_among(hidden, [item for item, _ in rows]) if hidden else frozenset()
            for bucket in dict.fromkeys(b for _, b in rows):  # rows come best bucket first
                yield bucket, [item for item, b in rows if b == bucket and item not in gone]
            if start is None:
                return

    def read_views(ids: Sequence[str]) -> Mapping[str, int]:
        return board.all_time_views(period.board, ids) if ids else {}

    deep = gather_deep(depth, head.top, shards=len(keys), read_buckets=read_buckets, read_views=read_views)
    items_read = head.items_read + deep.deep_keys_read + deep.views_read
    return Gathered(deep.top, items_read=items_read, rounds=head.rounds, shard_hits=head.shard_hits)


def publish_threshold(
    board: Board,
    settings: Settings,
    period: PeriodKey,
    gathered: Gathered,
    *,
    rank: RankRefresh,
    written: bool,
) -> None:
    """Raise the sparse-index T once the head is written: the (N+R)-th best visible, or with ranked versions on
    only the D-th best visible of a deep gather (D >= N+R; a head refresh then publishes nothing). All time with
    ranked versions has the deep tier instead: T stays the (N+R)-th best, and a deep gather raises T_D to its D-th
    best. A head that lost its race takes its ranked version's items back with it: the winner's head names its own."""
    if not written:
        if rank.written is not None:
            board.delete_rank_parts(period, rank.written.rv, len(rank.written.pages), len(rank.written.shards))
        return
    deep = deep_tier_on(settings, period)
    if settings.ranked_versions(period.board) and not deep:
        threshold = rank.threshold
    else:
        threshold = index_threshold(gathered.top, gather_depth(settings, period.board))
    if settings.sparse_index and threshold > 0:
        board.raise_threshold(period, threshold)
    if deep and rank.threshold > 0:
        board.raise_deep_threshold(period.board, rank.threshold)


def period_json(period: PeriodKey) -> dict[str, Any]:
    return period_from_bucket(period.kind, period.bucket).as_json() if period.kind != ALL else {"kind": ALL}


@dataclass(frozen=True)
class RefreshRun:
    """One run of the snapshot job: the periods it refreshed and what each cost."""

    results: dict[PeriodKey, SnapshotResult]
    failures: dict[PeriodKey, BaseException]

    @property
    def items_read(self) -> int:
        return sum(r.gathered.items_read for r in self.results.values())

    @property
    def written(self) -> int:
        return sum(r.written for r in self.results.values())


def refresh_changed(  # noqa: PLR0917 - the job's inputs, each with a default
    board: Board,
    settings: Settings,
    now: str | None = None,
    parallelism: int = 16,
    always: Iterable[PeriodKey] = (),
    hidden: Dropped = frozenset(),
    *,
    catalog: ItemCatalog | None = None,
) -> RefreshRun:
    """Refresh every period whose counts changed since its last refresh (and ``always``), in parallel.

    A period is marked refreshed up to the change count read *before* its gather, so a change counted during the
    gather leaves it dirty for the next run: nothing is missed, at worst refreshed twice.
    """
    stamps = {status.period: status.changes for status in board.changed_periods()}
    for period in always:
        stamps.setdefault(period, -1)
    results: dict[PeriodKey, SnapshotResult] = {}
    failures: dict[PeriodKey, BaseException] = {}

    def refresh(period: PeriodKey) -> SnapshotResult:
        result = take_snapshot(board, settings, now, period, hidden, catalog=catalog)
        if stamps[period] >= 0:
            board.mark_refreshed(period, stamps[period], int(time.time()))
        return result

    if stamps:
        with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(stamps)))) as pool:
            futures = {period: pool.submit(refresh, period) for period in sorted(stamps)}
        for period, future in futures.items():
            error = future.exception()
            if error is None:
                results[period] = future.result()
            else:
                failures[period] = error
    return RefreshRun(results, failures)


def leaderboard_json(snapshot: dict[str, Any], limit: int | None = None) -> dict[str, Any]:
    """The public leaderboard document: ``{"board", "generated_at", "period", "items": [{"rank", "id", "views"}]}``;
    an entry whose metadata the head carries also has ``"meta"`` (domain/head_meta.py)."""
    entries = [Entry(id=item, views=views) for item, views in snapshot["items"][:limit]]
    meta = snapshot.get("meta") or {}
    return {
        "board": snapshot["board"],
        "generated_at": snapshot["generated_at"],
        "period": snapshot.get("period") or {"kind": ALL},
        "items": [_with_meta(ranked.as_json(), meta.get(ranked.id)) for ranked in with_ranks(entries)],
    }


def _with_meta(entry: dict[str, Any], document: dict[str, Any] | None) -> dict[str, Any]:
    return entry if document is None else {**entry, "meta": document}


def period_at(board: str, kind: str, moment: datetime | None = None) -> PeriodKey:
    """The period of ``kind`` containing ``moment`` (now by default) on ``board``."""
    return PeriodKey(board, kind, bucket_of(kind, moment or datetime.now(UTC)))


def not_found(period: PeriodKey) -> str:
    """Why a period has no snapshot, in one line (HTTP 404, CLI exit 1)."""
    if period.kind == ALL:
        return f"board {period.board!r} has no views yet (or the snapshot job has not run since its first view)"
    return f"board {period.board!r} has no views in the {period.kind} {period.bucket} (or it has expired)"
