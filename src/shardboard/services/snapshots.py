"""Refresh snapshots: the use case behind the scheduled snapshot function, ``shardboard snapshot``, the takedown
patches that gather a head again, ``refill`` and the benchmark.

It reads (the previous head, the exact top N+R by scatter-gather over the board shards, the deep tier, the items'
documents), calls the pure decisions of domain/publishing/snapshot.py, domain/publishing/ranked_versions.py and
domain/publishing/head_meta.py, and executes the writes they return. The thread pools live here: periods in parallel, a
round's shard Queries in parallel.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Protocol

from shardboard.domain.items.taken_down import Dropped, TakenDown, dropped_among
from shardboard.domain.periods import ALL
from shardboard.domain.ports import (
    AggregateReads,
    BoardIndex,
    ItemCatalog,
    PeriodKey,
    PeriodLedger,
    RankCheckpoints,
    RankedVersions,
    ResumeToken,
    Snapshots,
    Thresholds,
)
from shardboard.domain.publishing.day_before import carried, checkpoint_of, day_back, with_day_before
from shardboard.domain.publishing.deep_tier import gather_deep
from shardboard.domain.publishing.gather import Entry, Gathered, ShardRead, gather_top_n, top
from shardboard.domain.publishing.head import Head, RankBlock
from shardboard.domain.publishing.head_meta import meta_ask, with_meta
from shardboard.domain.publishing.ranked_versions import RankRefresh, due, plan_rank_version, previous_hits, unchanged
from shardboard.domain.publishing.snapshot import RefreshRun, SnapshotResult, plan_head, plan_publish, proven_exact
from shardboard.domain.sharding import period_shard_value
from shardboard.services.events import Announcer, moment
from shardboard.services.stores import Container
from shardboard.settings import Settings

# Periods refreshed at once by one run, and a gather's shard Queries in flight at once.
PERIOD_PARALLELISM = 16
SHARD_PARALLELISM = 32
# Deep keys per Query page: KEYS_ONLY entries are ~100 bytes, so a page stays far below 1 MB.
DEEP_PAGE = 1000

# gather(n, previous_hits) -> exact top n of the period
Gather = Callable[[int, Mapping[int, int] | None], Gathered]


class GatherSource(BoardIndex, Thresholds, AggregateReads, Protocol):
    """What a threshold gather reads: the index, the published thresholds and layout, and all-time views (the deep
    tier's buckets hold no counts)."""


class SnapshotBoard(GatherSource, Snapshots, RankCheckpoints, RankedVersions, Protocol):
    """What one period's snapshot reads and writes: the gather's sources, the head, its ranks checkpoints and its
    ranked versions."""


class RefreshingBoard(SnapshotBoard, PeriodLedger, Protocol):
    """The snapshot job's board table: a snapshot's roles and the ledger of the periods that changed."""


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- the gathers (reads only)


def gather_layout(
    board: BoardIndex,
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
    cursors: dict[int, ResumeToken | None] = {}

    def fetch(shard: int, limit: int, first_page: bool) -> ShardRead:
        rows, cursors[shard] = board.query_shard(
            period.kind,
            period_shard_value(period.board, period.kind, period.bucket, shard, shards),
            limit,
            None if first_page else cursors.get(shard),
        )
        gone = dropped_among(hidden, [item for item, _ in rows]) if hidden else frozenset()
        visible = [Entry(id=item, views=views) for item, views in rows if item not in gone]
        return ShardRead(visible, more=cursors[shard] is not None)

    with ThreadPoolExecutor(max_workers=min(shards, SHARD_PARALLELISM)) as pool:
        return gather_top_n(top_n, shards, fetch, previous_hits, each=pool.map)


def gather_board(
    board: GatherSource,
    settings: Settings,
    previous_hits: Mapping[int, int] | None,
    period: PeriodKey | None = None,
    hidden: Dropped = frozenset(),
    *,
    top_n: int | None = None,
) -> Gathered:
    """Exact top N+R (or ``top_n``) of a period over the board's layouts: one, or during a reshard the old one
    first, then the new.

    An item only ever moves from the old layout to the new one, so reading the whole old layout before the new
    one sees every item at least once (before its move or after it); duplicates keep their larger views.
    """
    period = period or PeriodKey(settings.board, ALL, ALL)
    top_n = top_n or settings.policy.keep(period.board).gather_depth
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


def gather_head(
    board: GatherSource,
    settings: Settings,
    period: PeriodKey,
    previous_hits: Mapping[int, int] | None,
    hidden: Dropped,
) -> tuple[Gathered, bool]:
    """The head's exact top N+R visible, and whether it is proven exact. With takedowns in play the gather is
    checked against the published T; when it falls short and the period has the deep tier (all time with ranked
    versions), the deep gather, exact down to T_D, takes over (docs/sparse-index.md, "Takedowns")."""
    policy = settings.policy
    depth = policy.keep(period.board).gather_depth
    gathered = gather_board(board, settings, previous_hits, period, hidden)
    if not hidden or not policy.index.sparse:
        return gathered, True  # nothing was ever taken down: every visible item at or above T is in the gather
    state = board.thresholds([period], consistent=True).get(period)
    if state is None or proven_exact(gathered.top, depth, state.threshold):
        return gathered, True
    if not policy.deep_tier_on(period):
        return gathered, False
    deep = gather_deep_board(board, settings, period, depth, previous_hits, hidden=hidden, head=gathered)
    return deep, proven_exact(deep.top, depth, state.deep_threshold)


def gather_deep_board(
    board: GatherSource,
    settings: Settings,
    period: PeriodKey,
    depth: int,
    previous_hits: Mapping[int, int] | None,
    *,
    hidden: Dropped = frozenset(),
    head: Gathered | None = None,
) -> Gathered:
    """The exact top ``depth`` visible of all time with the deep tier (domain/publishing/deep_tier.py): the head GSI's
    exact top ``depth`` (``head``, when the caller gathered it already), then whole deep buckets over every shard of
    every layout (a reshard moves deep keys like head keys), the found ids' exact views by BatchGetItem. Hidden ids are
    dropped wherever they are read."""
    head = head or gather_board(board, settings, previous_hits, period, hidden, top_n=depth)
    layouts = board.get_board_state(period.board, consistent=True).layouts(settings.board_shards)
    keys = [period_shard_value(period.board, ALL, ALL, shard, shards) for shards in layouts for shard in range(shards)]

    def read_buckets(shard: int) -> Iterator[tuple[int, list[str]]]:
        start: ResumeToken | None = None
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


# -- one period


def take_snapshot(
    board: SnapshotBoard,
    settings: Settings,
    now: str | None = None,
    period: PeriodKey | None = None,
    hidden: Dropped = frozenset(),
    *,
    catalog: ItemCatalog | None = None,
) -> SnapshotResult:
    """Gather the exact top N+R visible items of one period (the global board's all time by default); write the
    snapshot item (top N in ``items``, the R spares in ``spare``) only when its content changed. With the items
    ``catalog``, the head carries its first entries' metadata. When due, also write a new ranked version."""
    policy = settings.policy
    period = period or PeriodKey(settings.board, ALL, ALL)
    now = now or iso_now()
    previous = board.get_snapshot(period, consistent=True)
    gathered, proven = gather_head(board, settings, period, previous.shard_hits if previous else None, hidden)
    expires = policy.periods.expires(period)
    rank = ranked_version(board, settings, period, previous, now=now, expires=expires, hidden=hidden)
    snapshot = plan_head(policy, period, previous, gathered, rank, now)
    if snapshot is None:
        assert previous is not None
        return SnapshotResult(previous, written=False, gathered=gathered, proven=proven, previous=previous)
    snapshot = day_before(board, snapshot, previous, period)
    if catalog is not None:
        snapshot = inline_meta(snapshot, previous, catalog, policy.keeping.page_size)
    checkpoint = checkpoint_of(previous, snapshot)
    if checkpoint is not None:
        # Before the head that records it: a failed write leaves the head as it was, and the next run writes both.
        board.put_ranks_checkpoint(checkpoint.period, checkpoint.hour, checkpoint.ranks, checkpoint.expires_at)
    written = board.put_snapshot(snapshot, previous.version if previous else None)
    if not written:
        # A head that lost its race takes its ranked version's items back with it: the winner's head names its own.
        if rank.written is not None:
            board.delete_rank_parts(period, rank.written.rv, len(rank.written.pages), len(rank.written.shards))
    else:
        publish = plan_publish(policy, period, gathered, rank)
        if publish.threshold:
            board.raise_threshold(period, publish.threshold)
        if publish.deep_threshold:
            board.raise_deep_threshold(period.board, publish.deep_threshold)
    return SnapshotResult(snapshot, written, gathered, proven, previous)


def day_before(board: RankCheckpoints, snapshot: Head, previous: Head | None, period: PeriodKey) -> Head:
    """``snapshot`` (about to be written) with the ranks a day before (domain/publishing/day_before.py): the previous
    head's when they are of the same hour, else one read of that hour's checkpoint."""
    ranks = carried(previous, snapshot)
    if ranks is None:
        back = day_back(period, snapshot.generated_at)
        ranks = board.get_ranks_checkpoint(back.period, back.hour) or {}
    return with_day_before(snapshot, ranks)


def inline_meta(snapshot: Head, previous: Head | None, catalog: ItemCatalog | None, page_size: int) -> Head:
    """``snapshot`` (about to be written) with its ``meta`` and ``meta_at`` (domain/publishing/head_meta.py); no
    catalog: the head carries none."""
    if catalog is None:
        return snapshot
    ask = meta_ask(snapshot, previous, page_size)
    found = catalog.get_many(ask.asked) if ask.asked else {}
    return with_meta(snapshot, ask, found)


def ranked_version(
    board: SnapshotBoard,
    settings: Settings,
    period: PeriodKey,
    previous: Head | None,
    *,
    now: str,
    expires: int | None,
    hidden: Dropped = frozenset(),
) -> RankRefresh:
    """The head's ``rank`` block: a new ranked version when one is due (a deep gather to D of the visible items),
    else the previous."""

    def gather(depth: int, hits: Mapping[int, int] | None) -> Gathered:
        if settings.policy.deep_tier_on(period):
            return gather_deep_board(board, settings, period, depth, hits, hidden=hidden)
        return gather_board(board, settings, hits, period, hidden, top_n=depth)

    block = previous.rank if previous else None
    return refresh_rank_version(board, settings, period, block, now=now, gather=gather, expires_at=expires)


def refresh_rank_version(
    board: RankedVersions,
    settings: Settings,
    period: PeriodKey,
    previous: RankBlock | None = None,
    *,
    now: str,
    gather: Gather,
    expires_at: int | None,
) -> RankRefresh:
    """Gather the exact top D and write it as a new ranked version when one is due and the ranking changed
    (domain/publishing/ranked_versions.py decides; expired versions are deleted before the head that drops them is
    written)."""
    keeping = settings.policy.keeping
    keep = keeping.of(period.board)
    if not keep.ranked_versions or not due(previous, now, keeping):
        return unchanged(previous)
    gathered = gather(keep.depth, previous_hits(previous))
    refresh = plan_rank_version(keep, keeping, previous, gathered, now=now, rv=uuid.uuid4().hex[:12])
    for retired in refresh.expired:
        board.delete_rank_parts(period, retired.rv, retired.pages, retired.shards)
    if refresh.written is not None:
        board.put_rank_parts(period, refresh.written, expires_at)
    return refresh


# -- a run


def refresh_changed(  # noqa: PLR0917 - the job's inputs, each with a default
    board: RefreshingBoard,
    settings: Settings,
    now: str | None = None,
    parallelism: int = PERIOD_PARALLELISM,
    always: Iterable[PeriodKey] = (),
    hidden: Dropped = frozenset(),
    *,
    catalog: ItemCatalog | None = None,
    announcer: Announcer | None = None,
) -> RefreshRun:
    """Refresh every period whose counts changed since its last refresh (and ``always``), in parallel.

    A period is marked refreshed up to the change count read *before* its gather, so a change counted during the
    gather leaves it dirty for the next run: nothing is missed, at worst refreshed twice. With an ``announcer``, a
    period's events are published after its head write and before its mark: a failed publish leaves it dirty, and
    the next run publishes them again.
    """
    stamps = {status.period: status.changes for status in board.changed_periods()}
    for period in always:
        stamps.setdefault(period, -1)
    results: dict[PeriodKey, SnapshotResult] = {}
    failures: dict[PeriodKey, BaseException] = {}

    def refresh(period: PeriodKey) -> SnapshotResult:
        result = take_snapshot(board, settings, now, period, hidden, catalog=catalog)
        if announcer is not None:
            announcer.refreshed(period, result)
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


def refresh_snapshots(stores: Container, now: str | None = None, dropped: Dropped | None = None) -> RefreshRun:
    """One run of the snapshot job: every board and period whose counts changed, and the deployment's board all time.

    The hidden and the deleted ids are read once per run: every gather drops both (a deleted item's aggregates may
    outlive its tombstone until its delete has swept them). Listed while few, else each candidate a gather meets is
    looked up once per run (``dropped``: that read, when the caller made it for its own use too)."""
    settings = stores.settings
    dropped = TakenDown.read(stores.items) if dropped is None else dropped
    everything = PeriodKey(settings.board, ALL, ALL)
    announcer = stores.announcer
    run = refresh_changed(
        stores.board, settings, now, always=[everything], hidden=dropped, catalog=stores.items, announcer=announcer
    )
    if announcer is not None:  # after the refreshes: a period's last changes come before its closed event
        announcer.close_ended(stores.board, moment(now))
    return run
