"""Refresh snapshots: the use case behind the scheduled snapshot function, ``shardboard snapshot``, the takedown
patches that gather a head again, ``refill`` and the benchmark.

It reads (the previous head, the exact top N+R by scatter-gather over the board shards, the deep tier, the items'
documents), calls the pure decisions of domain/publishing/snapshot.py, domain/publishing/ranked_versions.py and
domain/publishing/head_meta.py, and executes the writes they return. The thread pools live here: periods in parallel, a
round's shard Queries in parallel.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Protocol
from weakref import WeakKeyDictionary

from shardboard.adapters.board_counts import stored_counts
from shardboard.domain.clock import Clock
from shardboard.domain.items.taken_down import Dropped, TakenDown, dropped_among
from shardboard.domain.periods import ALL, HOUR, PeriodError, kind_of, next_bucket, parse_time, previous_bucket
from shardboard.domain.ports import (
    AggregateReads,
    AggregateState,
    BoardIndex,
    BoardScans,
    IndexRow,
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
from shardboard.domain.publishing.gather import Entry, Gathered, ShardRead, first_page_size, gather_top_n, top
from shardboard.domain.publishing.head import Head, RankBlock
from shardboard.domain.publishing.head_meta import meta_ask, with_meta
from shardboard.domain.publishing.head_size import fit
from shardboard.domain.publishing.ranked_versions import RankRefresh, due, plan_rank_version, previous_hits, unchanged
from shardboard.domain.publishing.snapshot import RefreshRun, SnapshotResult, plan_head, plan_publish, proven_exact
from shardboard.domain.publishing.sums import Carry, Part, Summed, same, sum_top
from shardboard.domain.sharding import period_shard_value
from shardboard.domain.trending import TRENDING, carried_score
from shardboard.domain.windows import Window, is_window, summed_by_windows, window_bucket
from shardboard.services.clock import system_clock
from shardboard.services.counts import period_counts, recent_views
from shardboard.services.events import Announcer, moment
from shardboard.services.stores import Container
from shardboard.settings import Settings

# Periods refreshed at once by one run, and a gather's shard Queries in flight at once.
PERIOD_PARALLELISM = 16
SHARD_PARALLELISM = 32
# Keys per BatchGetItem request (DynamoDB's limit).
COUNTS_PER_REQUEST = 100
# Deep keys per Query page: KEYS_ONLY entries are ~100 bytes, so a page stays far below 1 MB.
DEEP_PAGE = 1000

# gather(n, previous_hits) -> exact top n of the period
Gather = Callable[[int, Mapping[int, int] | None], Gathered]


class GatherSource(BoardIndex, Thresholds, AggregateReads, Protocol):
    """What a threshold gather reads: the index (its rows and the candidates' counts) and the published thresholds
    and layout; the aggregates' own reads ride along for the boards built on it (takedowns, republishing)."""


class SnapshotBoard(GatherSource, BoardScans, Snapshots, RankCheckpoints, RankedVersions, Protocol):
    """What one period's snapshot reads and writes: the gather's sources (and the table's counts, when a sum cannot
    be proven from them), the head, its ranks checkpoints and its ranked versions."""


class RefreshingBoard(SnapshotBoard, PeriodLedger, Protocol):
    """The snapshot job's board table: a snapshot's roles and the ledger of the periods that changed."""


def iso_millis(at: datetime) -> str:
    """``at`` as the snapshot job stamps its heads: ISO-8601 UTC to the millisecond, with a Z."""
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
    Every index sorts by the bucket of the count (``gather_buckets``); all time also reads what the index of the
    releases before still holds (``gather_views_index``), until `shardboard migrate` has emptied it.
    """
    if kind_of(period.kind).pick(all_time=False, period=True):
        return gather_buckets(board, period, top_n, shards, previous_hits, hidden=hidden)
    # Read beside the first pages (its first round overlaps theirs); the coarse index's gather needs it only after them.
    with ThreadPoolExecutor(max_workers=1) as beside:
        previous = beside.submit(gather_views_index, board, period, top_n, shards, hidden=hidden)
        found = gather_buckets(
            board, period, top_n, shards, previous_hits, hidden=hidden, head=lambda: previous.result().top
        )
        old = previous.result()
    return replace(found, items_read=found.items_read + old.items_read, rounds=found.rounds + old.rounds - 1)


def gather_views_index(
    board: BoardIndex, period: PeriodKey, top_n: int, shards: int, *, hidden: Dropped = frozenset()
) -> Gathered:
    """The exact top N of the items that all time's index of the releases before (sorted by the views) still holds:
    empty once `shardboard migrate` has moved them, when it costs one empty Query per shard."""
    cursors: dict[int, ResumeToken | None] = {}

    def fetch(shard: int, limit: int, first_page: bool) -> ShardRead:
        rows, cursors[shard] = board.query_views_index(
            period_shard_value(period.board, period.kind, period.bucket, shard, shards),
            limit,
            None if first_page else cursors.get(shard),
        )
        visible = [Entry(id=row.item_id, views=row.sort) for row in visible_rows(rows, hidden)]
        return ShardRead(visible, more=cursors[shard] is not None)

    with ThreadPoolExecutor(max_workers=min(shards, SHARD_PARALLELISM)) as pool:
        return gather_top_n(top_n, shards, fetch, None, each=pool.map)


def visible_rows(rows: list[IndexRow], hidden: Dropped) -> list[IndexRow]:
    """An index page without its hidden items (the GSI may still show a just-hidden one)."""
    gone = dropped_among(hidden, [row.item_id for row in rows]) if hidden else frozenset()
    return [row for row in rows if row.item_id not in gone] if gone else rows


def gather_buckets(
    board: BoardIndex,
    period: PeriodKey,
    top_n: int,
    shards: int,
    previous_hits: Mapping[int, int] | None,
    *,
    hidden: Dropped = frozenset(),
    head: Callable[[], Sequence[Entry]] | None = None,
) -> Gathered:
    """Exact top N of one period from an index sorted by the bucket of the count (docs/coarse-index.md): whole
    buckets best first over every shard, the exact counts of what they hold by BatchGetItem, stopping before a
    bucket that cannot reach the N-th best in hand (domain/publishing/deep_tier.py has the argument). Each shard's
    first page is read at once, sized by its share of the last top N; later pages grow. ``head``: the exact top N
    of the items another index holds with their counts (all time's index of the releases before), asked for once
    the first pages are in."""
    keys = [period_shard_value(period.board, period.kind, period.bucket, shard, shards) for shard in range(shards)]
    items: dict[str, str] = {}  # ref -> item id
    origin: dict[str, int] = {}  # item id -> shard

    def page(shard: int, limit: int, start: ResumeToken | None) -> tuple[list[IndexRow], ResumeToken | None]:
        rows, cursor = board.query_shard(period.kind, keys[shard], limit, start)
        visible = visible_rows(rows, hidden)
        for row in visible:
            items[row.ref] = row.item_id
            origin.setdefault(row.item_id, shard)
        return visible, cursor

    def counts(refs: Sequence[str]) -> dict[str, int]:
        """BatchGetItem takes 100 keys: a ranked version's thousands of candidates go out in parallel requests."""
        chunks = [refs[start : start + COUNTS_PER_REQUEST] for start in range(0, len(refs), COUNTS_PER_REQUEST)]
        if len(chunks) <= 1:
            return board.read_counts(period.kind, refs) if refs else {}
        with ThreadPoolExecutor(max_workers=min(len(chunks), SHARD_PARALLELISM)) as reads:
            return {
                ref: n
                for part in reads.map(lambda c: board.read_counts(period.kind, c), chunks)
                for ref, n in part.items()
            }

    sizes = [first_page_size(top_n, shards, previous_hits, shard) for shard in range(shards)]
    with ThreadPoolExecutor(max_workers=min(shards, SHARD_PARALLELISM)) as pool:
        first = list(pool.map(lambda shard: page(shard, sizes[shard], None), range(shards)))

    later_pages = 0

    def read_buckets(shard: int) -> Iterator[tuple[int, list[str]]]:
        nonlocal later_pages
        rows, cursor = first[shard]
        limit = sizes[shard]
        while True:
            for bucket in dict.fromkeys(row.sort for row in rows):  # rows come best bucket first
                yield bucket, [row.ref for row in rows if row.sort == bucket]
            if cursor is None:
                return
            limit = min(2 * limit, DEEP_PAGE)
            later_pages += 1
            rows, cursor = page(shard, limit, cursor)

    # The first pages hold about the top N (their sizes are each shard's share of it): their counts are read at once,
    # so a refresh usually takes one BatchGetItem round, not one per bucket.
    known = counts([row.ref for rows, _ in first for row in rows])

    def read_views(refs: Sequence[str]) -> Mapping[str, int]:
        missing = [ref for ref in refs if ref not in known]
        if missing:
            known.update(counts(missing))
        return {ref: known[ref] for ref in refs if ref in known}

    deep = gather_deep(
        top_n,
        head() if head else (),
        shards=shards,
        read_buckets=read_buckets,
        read_views=read_views,
        id_of=items.__getitem__,
    )
    hits: dict[int, int] = {}
    for entry in deep.top:
        if entry.id in origin:
            hits[origin[entry.id]] = hits.get(origin[entry.id], 0) + 1
    items_read = deep.deep_keys_read + deep.views_read
    # Rounds of Queries: the first pages at once, then each later page on its own (the counts' reads are apart).
    return Gathered(deep.top, items_read=items_read, rounds=1 + later_pages, shard_hits=hits)


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
    checked against the published T (all time with ranked versions: T_D, down to which it keys items), since hidden
    items may push the visible N+R-th below it (docs/sparse-index.md, "Takedowns")."""
    policy = settings.policy
    depth = policy.keep(period.board).gather_depth
    gathered = gather_board(board, settings, previous_hits, period, hidden, top_n=policy.head_depth(period))
    if not hidden or not policy.index.sparse:
        return gathered, True  # nothing was ever taken down: every visible item at or above T is in the gather
    state = board.thresholds([period], consistent=True).get(period)
    if state is None:
        return gathered, True
    keyed_from = min(state.threshold, state.deep_threshold) if policy.deep_tier_on(period) else state.threshold
    return gathered, proven_exact(gathered.top, depth, keyed_from)


# -- one period


def take_snapshot(
    board: SnapshotBoard,
    settings: Settings,
    now: str | None = None,
    period: PeriodKey | None = None,
    hidden: Dropped = frozenset(),
    *,
    catalog: ItemCatalog | None = None,
    clock: Clock = system_clock,
) -> SnapshotResult:
    """Gather the exact top N+R visible items of one period (the global board's all time by default); write the
    snapshot item (top N in ``items``, the R spares in ``spare``) only when its content changed. With the items
    ``catalog``, the head carries its first entries' metadata. When due, also write a new ranked version. ``now``
    (ISO-8601): the run's time; None: ``clock``'s."""
    policy = settings.policy
    period = period or PeriodKey(settings.board, ALL, ALL)
    now = now or iso_millis(clock())
    if is_window(period.kind):
        return take_window_snapshot(board, settings, now, period, hidden, catalog=catalog)
    previous = board.get_snapshot(period, consistent=True)
    gathered, proven = gather_head(board, settings, period, previous.shard_hits if previous else None, hidden)
    expires = policy.periods.expires(period)
    rank = ranked_version(board, settings, period, previous, now=now, expires=expires, hidden=hidden)
    decays = kind_of(period.kind).decays
    shown = trending_head(board, settings, period, gathered, hidden) if decays else gathered
    gathered = replace(gathered, scans=shown.scans)  # the result names the epoch's own gather, and the sum's scans
    snapshot = plan_head(policy, period, previous, shown, rank, now)
    if snapshot is None:
        assert previous is not None
        return SnapshotResult(previous, written=False, gathered=gathered, proven=proven, previous=previous)
    snapshot = day_before(board, snapshot, previous, period)
    if decays:
        snapshot = with_recent(board, settings, snapshot)
    if catalog is not None:
        snapshot = inline_meta(snapshot, previous, catalog, policy.keeping.page_size)
    snapshot, degraded = fit(snapshot)  # never a write refused for its size (domain/publishing/head_size.py)
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
    return SnapshotResult(snapshot, written, gathered, proven, previous, degraded)


# -- rolling windows: sums of hour periods (domain/windows.py, domain/publishing/sums.py)


def trending_head(
    board: SnapshotBoard, settings: Settings, period: PeriodKey, gathered: Gathered, hidden: Dropped
) -> Gathered:
    """A trending head ranks by the epoch's score plus the previous epoch's, carried (decayed by 2^28, what its
    views weigh against the new landmark): the sum of two periods, the epoch's own gather read once. The epoch's
    own gather still publishes its T (docs/trending.md)."""
    half_life = settings.trending_half_life_hours
    before = period._replace(bucket=previous_bucket(TRENDING, period.bucket, half_life=half_life))
    merged = sum_periods(board, settings, [period, before], hidden, carries=[same, carried_score], first=gathered)
    return Gathered(
        merged.top,
        items_read=gathered.items_read + merged.items_read - len(gathered.top) + merged.counts_read,
        rounds=gathered.rounds + merged.rounds - 1,
        shard_hits=gathered.shard_hits,
        scans=gathered.scans + merged.scans,
    )


def with_recent(board: SnapshotBoard, settings: Settings, snapshot: Head) -> Head:
    """A trending head (about to be written) with its entries' views in the last hour and the last 24, as of its
    ``generated_at`` (services/counts.py)."""
    at, ids = parse_time(snapshot.generated_at), [row.id for row in snapshot.items]
    return replace(snapshot, recent=recent_views(board, settings, snapshot.board, at, ids))


def take_window_snapshot(
    board: SnapshotBoard,
    settings: Settings,
    now: str,
    period: PeriodKey,
    hidden: Dropped = frozenset(),
    *,
    catalog: ItemCatalog | None = None,
) -> SnapshotResult:
    """The head of a rolling window ending in the hour ``period.bucket``: the exact top N+R visible items by their
    views summed over the window's hours. A window's first head of an hour takes its movement (``previous_rank``)
    from the head of the hour before."""
    window = settings.policy.periods.window(period.kind)
    if window is None:
        raise ValueError(f"{period.kind!r} is not a window of this stack")
    previous = board.get_snapshot(period, consistent=True)
    before = previous
    if before is None:
        earlier = board.get_snapshot(period._replace(bucket=previous_bucket(HOUR, period.bucket)), consistent=True)
        before = replace(earlier, digest="") if earlier else None  # a new hour's head is always written
    summed = sum_window(board, settings, window, period, hidden)
    gathered = Gathered(
        summed.top,
        items_read=summed.items_read + summed.counts_read,
        rounds=summed.rounds,
        shard_hits={},
        scans=summed.scans,
    )
    snapshot = plan_head(settings.policy, period, before, gathered, unchanged(None), now)
    if snapshot is None:
        assert previous is not None
        return SnapshotResult(previous, written=False, gathered=gathered, previous=previous)
    snapshot, degraded = fit(inline_meta(snapshot, before, catalog, settings.policy.keeping.page_size))
    written = board.put_snapshot(snapshot, previous.version if previous else None)
    return SnapshotResult(snapshot, written, gathered, previous=before, degraded=degraded)


def sum_window(
    board: SnapshotBoard, settings: Settings, window: Window, period: PeriodKey, hidden: Dropped = frozenset()
) -> Summed:
    """The exact top N+R visible of a window: the sum of its hour periods (``sum_periods``)."""
    hours = [PeriodKey(period.board, HOUR, bucket) for bucket in window.hour_buckets(period.bucket)]
    return sum_periods(board, settings, hours, hidden)


def sum_periods(  # noqa: PLR0917 - one sum's inputs
    board: SnapshotBoard,
    settings: Settings,
    periods: Sequence[PeriodKey],
    hidden: Dropped = frozenset(),
    carries: Sequence[Carry] | None = None,
    first: Gathered | None = None,
) -> Summed:
    """The exact top N+R visible by counts summed over ``periods`` of one board (each through its carry): the
    threshold algorithm over their indexes (domain/publishing/sums.py) or, when their thresholds cannot prove it,
    every count from one scan. ``first``: the first period's gather, when the caller made it already."""
    board_name = periods[0].board if periods else settings.board
    depth = settings.policy.keep(board_name).gather_depth
    carry = list(carries) if carries is not None else [same] * len(periods)
    # A period with views has its ledger item (the aggregator marks it before its counts are gathered): the others
    # are left out, a window of a quiet board reads a few hours, not H + 1.
    states = board.thresholds(periods, consistent=True)
    chosen = [n for n, period in enumerate(periods) if period in states]
    parts, carry = [periods[n] for n in chosen], [carry[n] for n in chosen]
    sparse = settings.policy.index.sparse
    aggregates: dict[str, AggregateState] = {}
    first_depth = settings.policy.head_depth(periods[0]) if periods else 0

    def gather(part: int, top_n: int) -> Part:
        if (
            first is not None
            and parts[part] == periods[0]
            and (top_n <= len(first.top) or len(first.top) < first_depth)
        ):
            found = first.top[:top_n]  # the head's own gather (deep enough, or it read every keyed item), read once
        else:
            found = gather_board(board, settings, None, parts[part], hidden, top_n=top_n).top
        return Part(found, more=len(found) >= top_n, threshold=states[parts[part]].threshold if sparse else 0)

    def read(wanted: Mapping[int, Sequence[str]]) -> dict[int, dict[str, int]]:
        asks = [(part, item) for part, ids in wanted.items() for item in ids]
        # One read of an item's aggregate for all its periods, across the sum's rounds.
        counts = period_counts(board, settings, board_name, [(parts[p], item) for p, item in asks], aggregates)
        found: dict[int, dict[str, int]] = {}
        for (part, item), views in zip(asks, counts, strict=True):
            found.setdefault(part, {})[item] = views
        return found

    summed = sum_top(depth, len(parts), gather, read, carries=carry)
    if summed.proven:
        return summed
    return counted_sum(board, settings, parts, carry, hidden, tried=summed)


def counted_sum(
    board: SnapshotBoard,
    settings: Settings,
    periods: Sequence[PeriodKey],
    carry: Sequence[Carry],
    hidden: Dropped,
    *,
    tried: Summed,
) -> Summed:
    """The sum's top from every count of the board table (one scan): exact when the indexes cannot prove it."""
    stored = stored_counts(board, settings.policy.periods)
    totals: dict[str, int] = {}
    for period, through in zip(periods, carry, strict=True):
        for item, count in stored.counts.get(period, {}).items():
            totals[item] = totals.get(item, 0) + through(count)
    gone = dropped_among(hidden, list(totals)) if hidden else frozenset()
    entries = [Entry(id=item, views=total) for item, total in totals.items() if total > 0 and item not in gone]
    depth = settings.policy.keep(periods[0].board).gather_depth
    read = tried.items_read + len(totals)
    return Summed(top(entries, depth), True, read, tried.counts_read, tried.rounds + 1, scans=tried.scans + 1)


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
    clock: Clock = system_clock,
) -> RefreshRun:
    """Refresh every period whose counts changed since its last refresh (and ``always``), in parallel.

    A period is marked refreshed up to the change count read *before* its gather, so a change counted during the
    gather leaves it dirty for the next run: nothing is missed, at worst refreshed twice. With an ``announcer``, a
    period's events are published after its head write and before its mark: a failed publish leaves it dirty, and
    the next run publishes them again. ``now`` (ISO-8601): the run's time, None: ``clock``'s; the ledger's refresh
    and failure times are ``clock``'s.
    """
    now = now or iso_millis(clock())
    stamps = {status.period: status.changes for status in board.changed_periods()}
    for period in always:
        stamps.setdefault(period, -1)
    # The head after a changed epoch is refreshed in the changed epoch's task, before its mark: if either fails, the
    # changed epoch stays dirty and the next run refreshes both (the head after has no mark of its own to keep).
    following = following_epochs(board, settings, stamps)
    results: dict[PeriodKey, SnapshotResult] = {}
    failures: dict[PeriodKey, BaseException] = {}

    def snapshot(period: PeriodKey) -> SnapshotResult:
        result = take_snapshot(board, settings, now, period, hidden, catalog=catalog)
        if announcer is not None:
            announcer.refreshed(period, result)
        return result

    def refresh(period: PeriodKey) -> dict[PeriodKey, SnapshotResult]:
        done = {period: snapshot(period)}
        after = following.get(period)
        if after is not None:
            try:
                done[after] = snapshot(after)
            except Exception as error:  # the changed epoch keeps its mark; its own head is written
                failures[after] = error
                return done
        if stamps[period] >= 0:
            board.mark_refreshed(period, stamps[period], int(clock().timestamp()))
        return done

    def run(periods: Iterable[PeriodKey]) -> None:
        periods = sorted(periods)
        if not periods:
            return
        with ThreadPoolExecutor(max_workers=max(1, min(parallelism, len(periods)))) as pool:
            futures = {period: pool.submit(refresh, period) for period in periods}
        for period, future in futures.items():
            error = future.exception()
            if error is not None:
                failures[period] = error
                continue
            results.update(future.result())
            if is_window(period.kind):
                _remember_window(board, period, results[period])

    run(period for period in stamps if not is_window(period.kind))
    # Windows after their hours: a window's sum reads the hours' thresholds as this run published them.
    windows = windows_due(board, settings, stamps, moment(now))
    for period in windows:
        stamps.setdefault(period, -1)
    run(period for period in stamps if is_window(period.kind))
    marked = {period for period, changes in stamps.items() if changes >= 0}
    return RefreshRun(results, failures, record_failures(board, failures, marked, int(clock().timestamp())))


def record_failures(
    board: PeriodLedger, failures: Mapping[PeriodKey, BaseException], marked: Collection[PeriodKey], at: int
) -> dict[PeriodKey, int]:
    """Each failed period's refreshes failed in a row, as its ledger counts them (its ``mark_refreshed`` ends the
    count). Only periods the ledger marked keep a count (a window or a period refreshed ``always`` has no mark to
    end it: it counts once); a ledger write that fails too counts the period once. ``at``: epoch seconds."""
    failing: dict[PeriodKey, int] = {}
    for period in sorted(failures):
        failing[period] = 1
        if period in marked:
            with suppress(Exception):  # the failure itself is reported by the caller; its count is a lower bound
                failing[period] = board.mark_failed(period, at)
    return failing


def following_epochs(
    board: Snapshots, settings: Settings, stamps: Mapping[PeriodKey, int]
) -> dict[PeriodKey, PeriodKey]:
    """The trending heads changed epochs feed, by changed epoch: the next epoch's carries its scores, so a late view
    of an ended epoch changes the head after it too (when that head exists and is not changed itself)."""
    half_life = settings.trending_half_life_hours
    after = {}
    for period in stamps:
        if kind_of(period.kind).decays:
            with suppress(PeriodError):  # the last epoch of 9999 has none after it
                after[period] = period._replace(bucket=next_bucket(TRENDING, period.bucket, half_life=half_life))
    return {
        period: head
        for period, head in sorted(after.items())
        if head not in stamps and board.get_snapshot(head) is not None
    }


# Per process and board store: the window heads with entries it last wrote, (board, window) -> hour bucket. A window
# slides every hour even without views: these are refreshed at the next hour without a read to find them.
_window_heads: WeakKeyDictionary[object, dict[tuple[str, str], str]] = WeakKeyDictionary()


def windows_due(
    board: RefreshingBoard, settings: Settings, stamps: Mapping[PeriodKey, int], at: datetime
) -> set[PeriodKey]:
    """The window heads a run refreshes: every window of a board whose hours in it changed, and those that hold
    entries and were last written for an earlier hour. A process's first run finds the latter from the ledger (the
    boards whose counts changed within the longest window)."""
    windows = settings.policy.periods.windows
    if not windows:
        return set()
    bucket = window_bucket(at)
    changed = {(period.board, period.bucket) for period in stamps if summed_by_windows(period.kind)}
    known = dict(_window_heads.get(board, {}))
    boards = {name for name, _ in changed} | {name for name, _ in known}
    if not known:
        since = (at - timedelta(hours=max(window.hours for window in windows) + 2)).timestamp()
        lasting = (s for s in board.periods() if kind_of(s.period.kind).pick(all_time=True, period=False))
        boards |= {s.period.board for s in lasting if s.changed_at >= since}
    due = set()
    for name in boards:
        for window in windows:
            touched = any((name, hour) in changed for hour in window.hour_buckets(bucket))
            if touched or known.get((name, window.name), "") < bucket:
                due.add(PeriodKey(name, window.name, bucket))
    return due


def _remember_window(board: RefreshingBoard, period: PeriodKey, result: SnapshotResult) -> None:
    heads = _window_heads.setdefault(board, {})
    if result.snapshot.items:
        heads[period.board, period.kind] = period.bucket
    else:
        heads.pop((period.board, period.kind), None)


def refresh_snapshots(stores: Container, now: str | None = None, dropped: Dropped | None = None) -> RefreshRun:
    """One run of the snapshot job: every board and period whose counts changed, and the deployment's board all time.

    The hidden and the deleted ids are read once per run: every gather drops both (a deleted item's aggregates may
    outlive its tombstone until its delete has swept them). Listed while few, else each candidate a gather meets is
    looked up once per run (``dropped``: that read, when the caller made it for its own use too)."""
    settings = stores.settings
    now = now or iso_millis(stores.clock())
    dropped = TakenDown.read(stores.items) if dropped is None else dropped
    everything = PeriodKey(settings.board, ALL, ALL)
    announcer = stores.announcer
    run = refresh_changed(
        stores.board,
        settings,
        now,
        always=[everything],
        hidden=dropped,
        catalog=stores.items,
        announcer=announcer,
        clock=stores.clock,
    )
    if announcer is not None:  # after the refreshes: a period's last changes come before its closed event
        announcer.close_ended(stores.board, moment(now))
    return run
