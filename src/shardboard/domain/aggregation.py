"""Apply a stream batch to the aggregates: one compare-and-set write per (board, item), exactly once, every period.

An aggregate holds one board's counts of one item: all time and the current period of each configured kind, and
the per-write-shard applied values of its *anchor bucket* (the finest period, e.g. today). Views of the aggregate's
anchor bucket are one conditional UpdateItem (``move``). Views of a newer bucket first copy the periods that end
into past entries (``archive``), then move the aggregate on (``roll``). Views of an older bucket (an import, a
stream retried for hours) move that bucket's entry and, in the same transaction, the aggregate and past entries
(``move_late``). docs/boards-and-periods.md has the argument; domain/batch.py the fold.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

from shardboard.domain.batch import (
    DeltaKey,
    ItemDelta,
    ShardMove,
    ViewRecord,
    catch_up_moves,
    fold,
    lower_bound_after,
    optimistic_moves,
)
from shardboard.domain.deep_tier import deep_bucket, deep_tier_on
from shardboard.domain.periods import ALL, anchor_kind, coarser_bucket, expires_at
from shardboard.domain.ports import AggregateState, Board, BoardState, LateMove, PastEntry, PeriodKey
from shardboard.domain.sharding import board_shard_of, period_shard_value
from shardboard.settings import Settings

# A refused compare-and-set is retried against the values it found. Only a concurrent writer on the same write
# shard (two runners on one stream by mistake) or a concurrent roll can refuse it again; eight rounds is far beyond.
MAX_CAS_ATTEMPTS = 8


class AggregateContention(RuntimeError):
    """The compare-and-set kept losing; the item's records are reported failed and Lambda retries them."""


class ItemOutcome(NamedTuple):  # immutable and, built once per item per batch, cheaper than a frozen dataclass
    views_added: int = 0
    writes: int = 0
    replay_absorbed: bool = False  # some of the batch had been applied before (a replay, a re-split batch)
    gap_healed: bool = False  # records before this batch never arrived (failure destination); NEW values healed it
    joined_index: bool = False
    rolled: bool = False  # the aggregate moved to a newer period (its ended periods were archived)
    late: bool = False  # views of a period older than the aggregate's (applied by transaction)

    def plus(self, other: ItemOutcome) -> ItemOutcome:
        return ItemOutcome(
            self.views_added + other.views_added,
            self.writes + other.writes,
            self.replay_absorbed or other.replay_absorbed,
            self.gap_healed or other.gap_healed,
            self.joined_index or other.joined_index,
            self.rolled or other.rolled,
            self.late or other.late,
        )


@dataclass
class BatchOutcome:
    items: dict[DeltaKey, ItemOutcome] = field(default_factory=dict)
    failures: dict[tuple[str, str], BaseException] = field(default_factory=dict)  # (board, item) -> error
    threshold: int = 0  # the global board's all-time threshold this batch used (logged)
    changed: set[PeriodKey] = field(default_factory=set)

    @property
    def views_added(self) -> int:
        return sum(o.views_added for o in self.items.values())

    @property
    def aggregate_writes(self) -> int:
        return sum(o.writes for o in self.items.values())

    @property
    def replays_absorbed(self) -> int:
        return sum(o.replay_absorbed for o in self.items.values())

    @property
    def gaps_healed(self) -> int:
        return sum(o.gap_healed for o in self.items.values())

    @property
    def index_joins(self) -> int:
        return sum(o.joined_index for o in self.items.values())

    @property
    def late_moves(self) -> int:
        return sum(o.late for o in self.items.values())

    def failed(self, board: str, item_id: str) -> BaseException | None:
        return self.failures.get((board, item_id))


@dataclass(frozen=True)
class Context:
    """What every delta of one batch shares: the settings and the published thresholds and layouts it read."""

    settings: Settings
    states: dict[PeriodKey, BoardState]

    @property
    def anchor(self) -> str:
        return self.settings.anchor

    @property
    def kinds(self) -> tuple[str, ...]:
        """The configured period kinds, finest (the anchor) first."""
        return self.settings.periods

    def coarse_kinds(self) -> tuple[str, ...]:
        return tuple(kind for kind in self.kinds if kind != self.anchor)

    def period(self, board: str, kind: str, anchor_bucket: str) -> PeriodKey:
        return PeriodKey(board, kind, coarser_bucket(kind, self.anchor, anchor_bucket))

    def periods(self, board: str, anchor_bucket: str) -> tuple[PeriodKey, ...]:
        """Every period a view of ``anchor_bucket`` counts in: the configured kinds, then all time."""
        return periods_of(self.settings.periods, board, anchor_bucket)

    def threshold(self, period: PeriodKey) -> int:
        if not self.settings.sparse_index:
            return 0
        state = self.states.get(period)
        return state.threshold if state else 0

    def deep_threshold(self, board: str) -> int | None:
        """T_D of a board's all-time deep tier, or None when the deep tier is off (docs/proposals/deep-tier.md)."""
        everything = PeriodKey(board, ALL, ALL)
        if not deep_tier_on(self.settings, everything):
            return None
        state = self.states.get(everything)
        return state.deep_threshold if state else 0

    def index_key(self, period: PeriodKey, item_id: str) -> str:
        board_state = self.states.get(PeriodKey(period.board, ALL, ALL))
        shards = (board_state.shards if board_state else None) or self.settings.board_shards
        return period_shard_value(period.board, period.kind, period.bucket, board_shard_of(item_id, shards), shards)

    def expires(self, period: PeriodKey) -> int | None:
        return expires_at(period.kind, period.bucket, self.settings.retention(period.kind))


@functools.lru_cache(maxsize=65_536)  # every delta asks; a batch has few distinct (board, bucket) pairs
def periods_of(kinds: tuple[str, ...], board: str, anchor_bucket: str) -> tuple[PeriodKey, ...]:
    anchor = anchor_kind(kinds)
    return tuple(PeriodKey(board, kind, coarser_bucket(kind, anchor, anchor_bucket)) for kind in (*kinds, ALL))


def read_context(board: Board, deltas: Iterable[ItemDelta], settings: Settings) -> Context:
    """One read per batch: the thresholds and layouts of every period the batch's views count in."""
    probe = Context(settings, {})
    wanted = {period for delta in deltas for period in probe.periods(delta.board, delta.bucket)}
    return Context(settings, board.thresholds(sorted(wanted)) if wanted else {})


def joins_for(ctx: Context, periods: Sequence[PeriodKey], item_id: str, lower_bound: int) -> dict[PeriodKey, str]:
    """Index keys to set in the same write: every period whose threshold the count is sure to reach."""
    return {p: ctx.index_key(p, item_id) for p in periods if lower_bound >= ctx.threshold(p)}


def deep_join_for(ctx: Context, board: str, item_id: str, lower_bound: int) -> tuple[str, int] | None:
    """The deep key and bucket to set in the move's write: the count is sure to reach T_D but not T_N (at or above
    T_N the same write keys it into the head, which the gather reads with exact views)."""
    deep_threshold = ctx.deep_threshold(board)
    everything = PeriodKey(board, ALL, ALL)
    if deep_threshold is None or lower_bound <= 0 or not deep_threshold <= lower_bound < ctx.threshold(everything):
        return None
    return ctx.index_key(everything, item_id), deep_bucket(lower_bound)


def apply_delta(board: Board, delta: ItemDelta, ctx: Context) -> ItemOutcome:
    """Advance one (board, item) by what this batch saw of one anchor bucket, exactly once."""
    moves = optimistic_moves(delta)
    if not moves:
        return ItemOutcome()
    outcome = ItemOutcome()
    state: AggregateState | None = None
    for _ in range(MAX_CAS_ATTEMPTS):
        if state is None or state.bucket in (None, delta.bucket):
            step, state, moves = _move(board, delta, ctx, moves, state)
        elif delta.bucket > state.bucket:
            step, state, moves = _roll(board, delta, ctx, state)
        else:
            step, state, moves = _late(board, delta, ctx, state, moves)
        outcome = outcome.plus(step)
        if not moves:
            return outcome
    raise AggregateContention(f"{delta.board}/{delta.item_id!r}: {MAX_CAS_ATTEMPTS} compare-and-set attempts lost")


Step = tuple[ItemOutcome, AggregateState | None, list[ShardMove]]


def _move(board: Board, delta: ItemDelta, ctx: Context, moves: list[ShardMove], known: AggregateState | None) -> Step:
    """The common case: views of the aggregate's own anchor bucket, one conditional UpdateItem."""
    if known is not None:  # a previous attempt read the aggregate: continue from what it holds
        found = [(known.applied.get(shard, 0), step.before) for shard, step in delta.shards.items()]
        moves = catch_up_moves(delta, known.applied)
        outcome = ItemOutcome(
            replay_absorbed=any(applied > before for applied, before in found),
            gap_healed=any(applied < before for applied, before in found),
        )
        if not moves:  # a replay: everything was applied; still heal a crash between count and index writes
            return outcome.plus(join_indexes(board, ctx, delta.board, delta.item_id, known)), known, []
    else:
        outcome = ItemOutcome()
    periods = ctx.periods(delta.board, delta.bucket)
    lower_bound = lower_bound_after(moves)
    joins = joins_for(ctx, periods, delta.item_id, lower_bound)
    result = board.move(
        delta.board,
        delta.item_id,
        delta.bucket,
        moves,
        kinds=ctx.kinds,
        joins={p.kind: k for p, k in joins.items()},
        deep=deep_join_for(ctx, delta.board, delta.item_id, lower_bound),
    )
    outcome = outcome.plus(ItemOutcome(writes=1))
    if not result.applied:
        return outcome, result.state or board.state(delta.board, delta.item_id), moves
    assert result.state is not None
    added = sum(m.target - m.expected for m in moves)
    outcome = outcome.plus(ItemOutcome(views_added=added))
    return outcome.plus(join_indexes(board, ctx, delta.board, delta.item_id, result.state)), result.state, []


def join_indexes(board: Board, ctx: Context, board_name: str, item_id: str, state: AggregateState) -> ItemOutcome:
    """Key the aggregate into every period index whose threshold its count reached (sparse index)."""
    if state.bucket is None:
        return ItemOutcome()
    writes, joined = 0, False
    for period in ctx.periods(board_name, state.bucket):
        keyed = state.in_index if period.kind == ALL else period.kind in state.keyed
        if not keyed and state.count(period.kind) >= ctx.threshold(period) and state.count(period.kind) > 0:
            joined |= board.join_index(board_name, item_id, period.kind, ctx.index_key(period, item_id))
            writes += 1
    writes += join_deep(board, ctx, board_name, item_id, state)
    return ItemOutcome(writes=writes, joined_index=joined)


def join_deep(board: Board, ctx: Context, board_name: str, item_id: str, state: AggregateState) -> int:
    """Keep the deep tier's invariant for one aggregate (docs/proposals/deep-tier.md): with views >= T_D it has the
    head key or a deep key whose bucket is deep_bucket(views). An item at or above T_N was keyed into the head by
    ``join_indexes`` just before; one below it gets the deep key or a higher bucket (one conditional UpdateItem)."""
    deep_threshold = ctx.deep_threshold(board_name)
    everything = PeriodKey(board_name, ALL, ALL)
    if deep_threshold is None or state.in_index or state.views <= 0 or state.views >= ctx.threshold(everything):
        return 0
    bucket = deep_bucket(state.views)
    if state.views < deep_threshold or (state.deep_bucket is not None and state.deep_bucket >= bucket):
        return 0
    board.join_deep(board_name, item_id, ctx.index_key(everything, item_id), bucket)
    return 1


def _roll(board: Board, delta: ItemDelta, ctx: Context, old: AggregateState) -> Step:
    """Views of a newer anchor bucket: archive each period that ends, then move the aggregate on.

    Nothing of a newer bucket was ever applied anywhere (entries exist only for buckets older than the aggregate's),
    so its moves start from zero, which also heals records lost before this batch (NEW values are absolute).
    """
    assert old.bucket is not None
    moves = catch_up_moves(delta, {})
    added = sum(m.target for m in moves)
    writes = 0
    counts: dict[str, int] = {}
    keys: dict[str, str | None] = {}
    for kind in ctx.kinds:
        before, after = ctx.period(delta.board, kind, old.bucket), ctx.period(delta.board, kind, delta.bucket)
        if before == after:
            counts[kind] = old.count(kind) + added
            continue
        counts[kind] = added
        board.archive(_past_entry(ctx, before, delta.item_id, old))
        writes += 1
        keys[kind] = ctx.index_key(after, delta.item_id) if added >= max(1, ctx.threshold(after)) else None
    new = AggregateState(
        applied={m.shard: m.target for m in moves},
        views=old.views + added,
        in_index=old.in_index,
        bucket=delta.bucket,
        counts=counts,
        keyed=frozenset(kind for kind in old.keyed if kind not in keys) | {k for k, v in keys.items() if v},
        deep_bucket=old.deep_bucket,
    )
    rolled = board.roll(delta.board, delta.item_id, old, new, keys)
    writes += 1
    if not rolled:  # the aggregate changed meanwhile: read it and decide again
        return ItemOutcome(writes=writes), board.state(delta.board, delta.item_id), moves
    outcome = ItemOutcome(views_added=added, writes=writes, rolled=True)
    return outcome.plus(join_indexes(board, ctx, delta.board, delta.item_id, new)), new, []


def _past_entry(ctx: Context, period: PeriodKey, item_id: str, old: AggregateState) -> PastEntry:
    count = old.count(period.kind)
    reaches = count > 0 and count >= ctx.threshold(period)
    return PastEntry(
        period=period,
        item_id=item_id,
        count=count,
        applied=dict(old.applied) if period.kind == ctx.anchor else None,
        index_key=ctx.index_key(period, item_id) if reaches else None,
        source_views=old.views,
        expires_at=ctx.expires(period),
    )


def _late(board: Board, delta: ItemDelta, ctx: Context, aggregate: AggregateState, moves: list[ShardMove]) -> Step:
    """Views of an anchor bucket older than the aggregate's: one transaction moves the bucket's entry (conditioned on
    its applied values, so it happens once), the aggregate's all-time count and its periods that still contain the
    bucket, and the past entries of those that do not."""
    assert aggregate.bucket is not None
    entry = ctx.period(delta.board, ctx.anchor, delta.bucket)
    same = [
        kind
        for kind in ctx.coarse_kinds()
        if ctx.period(delta.board, kind, delta.bucket) == ctx.period(delta.board, kind, aggregate.bucket)
    ]
    late_periods = [entry, *(ctx.period(delta.board, k, delta.bucket) for k in ctx.coarse_kinds() if k not in same)]
    outcome = ItemOutcome()
    for _ in range(MAX_CAS_ATTEMPTS):
        result = board.move_late(
            LateMove(
                board=delta.board,
                item_id=delta.item_id,
                bucket=delta.bucket,
                moves=moves,
                anchor_kind=ctx.anchor,
                aggregate_bucket=aggregate.bucket,
                aggregate_kinds=same,
                past=late_periods[1:],
                joins=joins_for(ctx, late_periods, delta.item_id, lower_bound_after(moves)),
                expires_at={p: ctx.expires(p) for p in late_periods},
            )
        )
        outcome = outcome.plus(ItemOutcome(writes=1, late=True))
        if result.applied:
            added = sum(m.target - m.expected for m in moves)
            outcome = outcome.plus(ItemOutcome(views_added=added))
            break
        if result.aggregate_moved:
            return outcome, board.state(delta.board, delta.item_id), moves
        found = result.entry or board.entry_state(entry, delta.item_id)
        outcome = outcome.plus(
            ItemOutcome(
                replay_absorbed=any(found.applied.get(k, 0) > s.before for k, s in delta.shards.items()),
                gap_healed=any(found.applied.get(k, 0) < s.before for k, s in delta.shards.items()),
            )
        )
        moves = catch_up_moves(delta, found.applied)
        if not moves:
            break
    else:
        raise AggregateContention(f"{delta.board}/{delta.item_id!r}: late move kept losing")
    # Join whatever reached its threshold (also after a pure replay: a crash between the move and a join heals here).
    for period in late_periods:
        state = board.entry_state(period, delta.item_id)
        if period.kind not in state.keyed and state.count(period.kind) >= max(1, ctx.threshold(period)):
            joined = board.join_entry(period, delta.item_id, ctx.index_key(period, delta.item_id))
            outcome = outcome.plus(ItemOutcome(writes=1, joined_index=joined))
    current = board.state(delta.board, delta.item_id)
    return outcome.plus(join_indexes(board, ctx, delta.board, delta.item_id, current)), current, []


def apply_batch(board: Board, records: Iterable[ViewRecord], settings: Settings) -> BatchOutcome:
    """Fold ``records`` by (board, item, bucket) and apply every (board, item) in parallel; failures are per
    (board, item), never per batch."""
    return apply_deltas(board, fold(records), settings)


def apply_deltas(board: Board, deltas: dict[DeltaKey, ItemDelta], settings: Settings) -> BatchOutcome:
    """Apply folded deltas (one batch's, or a whole tumbling window's): one compare-and-set write per (board, item)
    and anchor bucket; an item's buckets are applied oldest first, by one worker."""
    outcome = BatchOutcome()
    if not deltas:
        return outcome
    ctx = read_context(board, deltas.values(), settings)
    global_state = ctx.states.get(PeriodKey(settings.board, ALL, ALL))
    outcome.threshold = global_state.threshold if global_state and settings.sparse_index else 0
    groups: dict[tuple[str, str], list[ItemDelta]] = defaultdict(list)
    for delta in deltas.values():
        groups[(delta.board, delta.item_id)].append(delta)

    def apply(group: list[ItemDelta]) -> list[tuple[DeltaKey, ItemOutcome]]:
        return [((d.board, d.item_id, d.bucket), apply_delta(board, d, ctx)) for d in sorted(group, key=_by_bucket)]

    def collect(
        key: tuple[str, str], run: list[tuple[DeltaKey, ItemOutcome]] | None, error: BaseException | None
    ) -> None:
        if error is not None:
            outcome.failures[key] = error
            return
        assert run is not None
        for delta_key, item_outcome in run:
            outcome.items[delta_key] = item_outcome
            # A replay marks too: the delivery that applied it may have died before its marks (note_changes).
            if item_outcome.views_added or item_outcome.replay_absorbed:
                outcome.changed.update(ctx.periods(delta_key[0], delta_key[2]))

    if settings.write_concurrency == 1:  # nothing to overlap (an in-memory store): skip the pool's dispatch cost
        for key, group in groups.items():
            try:
                collect(key, apply(group), None)
            except Exception as failure:  # per item, like a future's exception: the item's records are retried
                collect(key, None, failure)
    else:
        with ThreadPoolExecutor(max_workers=min(settings.write_concurrency, len(groups))) as pool:
            futures = {key: pool.submit(apply, group) for key, group in groups.items()}
        for key, future in futures.items():
            error = future.exception()
            collect(key, None if error else future.result(), error)
    return outcome


def _by_bucket(delta: ItemDelta) -> str:
    return delta.bucket


def note_changes(board: Board, outcome: BatchOutcome, settings: Settings, now: int) -> None:
    """Tell the snapshot job which periods' counts changed (one small write per period per batch)."""
    if outcome.changed:
        ctx = Context(settings, {})
        changed = sorted(outcome.changed)
        expires = {p: ctx.expires(p) for p in changed}
        workers = min(settings.write_concurrency, len(changed))
        if workers == 1:
            board.mark_changed(changed, now, expires)
            return
        # One write per period: overlapped, a batch touching 30 periods waits about one round trip, not 30.
        with ThreadPoolExecutor(max_workers=workers) as pool:
            marks = [pool.submit(board.mark_changed, changed[i::workers], now, expires) for i in range(workers)]
        for mark in marks:
            mark.result()  # a failed mark fails the batch, which is retried: marking again is harmless
