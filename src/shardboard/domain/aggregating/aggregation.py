"""What a stream batch writes to the aggregates, decided without a single call: one compare-and-set write per
(board, item), exactly once, every period. ``services/aggregating.py`` executes these plans and feeds back what the
table answered.

An aggregate holds one board's counts of one item: all time and the current period of each configured kind, and
the per-write-shard applied values of its *anchor bucket* (the finest period, e.g. today). Views of the aggregate's
anchor bucket are one conditional UpdateItem (``Move``). Views of a newer bucket first copy the periods that end
into past entries, then move the aggregate on (``Roll``). Views of an older bucket (an import, a stream retried for
hours) move that bucket's entry and, in the same transaction, the aggregate and past entries (``LateMove``).
docs/boards-and-periods.md has the argument; domain/aggregating/batch.py the fold.
"""

from __future__ import annotations

import functools
import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import NamedTuple

from shardboard.domain.aggregating.batch import (
    DeltaKey,
    ItemDelta,
    ShardMove,
    catch_up_moves,
    lower_bound_after,
    optimistic_lower_bound,
    views_added,
)
from shardboard.domain.periods import ALL, anchor_kind, coarser_bucket, kind_of, previous_bucket
from shardboard.domain.policy import Leaderboards
from shardboard.domain.ports import AggregateState, BoardState, LateMove, PastEntry, PeriodKey
from shardboard.domain.publishing.deep_tier import deep_bucket, index_bucket
from shardboard.domain.sharding import board_shard_of, period_shard_value
from shardboard.domain.trending import DEFAULT_HALF_LIFE_HOURS

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
    # The past periods a roll archived the item into (even if the roll itself then lost): a batch that wrote for an
    # item deleted meanwhile erases these entries too.
    archived: tuple[PeriodKey, ...] = ()

    def plus(self, other: ItemOutcome) -> ItemOutcome:
        return ItemOutcome(
            self.views_added + other.views_added,
            self.writes + other.writes,
            self.replay_absorbed or other.replay_absorbed,
            self.gap_healed or other.gap_healed,
            self.joined_index or other.joined_index,
            self.rolled or other.rolled,
            self.late or other.late,
            self.archived + other.archived,
        )


@dataclass
class BatchOutcome:
    items: dict[DeltaKey, ItemOutcome] = field(default_factory=dict)
    failures: dict[tuple[str, str], BaseException] = field(default_factory=dict)  # (board, item) -> error
    threshold: int = 0  # the global board's all-time threshold this batch used (logged)
    changed: set[PeriodKey] = field(default_factory=set)
    aggregates_read: int = 0  # read before the writes, as aggregates that may roll (``possible_rolls``)

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

    def add(self, ctx: Context, key: DeltaKey, item: ItemOutcome) -> None:
        """One delta applied: its outcome, and the periods whose snapshots must be refreshed."""
        self.items[key] = item
        # A replay marks too: the delivery that applied it may have died before its marks (``marks``).
        if item.views_added or item.replay_absorbed:
            self.changed.update(ctx.periods(key[0], key[2]))


@dataclass(frozen=True)
class Context:
    """What every delta of one batch shares: the policy and the published thresholds and layouts it read."""

    policy: Leaderboards
    states: Mapping[PeriodKey, BoardState]
    # All time's join threshold per board, asked for every delta: decided once per batch.
    _all_time: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # The periods of each (board, anchor bucket), asked several times per delta: a batch has a handful.
    _periods: dict[tuple[str, str], tuple[PeriodKey, ...]] = field(default_factory=dict, compare=False, repr=False)
    _board_shards: dict[str, int] = field(default_factory=dict, compare=False, repr=False)  # S of each board's index

    @property
    def anchor(self) -> str:
        return self.policy.periods.anchor

    @property
    def kinds(self) -> tuple[str, ...]:
        """The configured period kinds, finest (the anchor) first."""
        return self.policy.periods.kinds

    def coarse_kinds(self) -> tuple[str, ...]:
        return self.policy.periods.coarse

    def period(self, board: str, kind: str, anchor_bucket: str) -> PeriodKey:
        return PeriodKey(board, kind, self.policy.periods.bucket(kind, anchor_bucket))

    def periods(self, board: str, anchor_bucket: str) -> tuple[PeriodKey, ...]:
        """Every period a view of ``anchor_bucket`` counts in: the configured kinds, then all time."""
        found = self._periods.get((board, anchor_bucket))
        if found is None:
            periods = self.policy.periods
            found = self._periods[(board, anchor_bucket)] = periods_of(
                periods.kinds, board, anchor_bucket, periods.half_life_hours
            )
        return found

    def gain(self, kind: str, anchor_bucket: str, views: int) -> int:
        """What ``views`` views of ``anchor_bucket`` add to its ``kind`` count (a trending score is weighted)."""
        return self.policy.periods.increment(kind, anchor_bucket, views)

    def weights(self, kinds: Iterable[str], anchor_bucket: str) -> dict[str, int]:
        """What one view of ``anchor_bucket`` adds to each of ``kinds`` whose count is weighted (the others add 1):
        a write's storage multiplies its delta by these."""
        if not self.policy.periods.weighted:
            return {}
        found = {kind: self.gain(kind, anchor_bucket, 1) for kind in kinds}
        return {kind: weight for kind, weight in found.items() if weight != 1}

    def threshold(self, period: PeriodKey) -> int:
        """The count from which an item is keyed in the period's index. All time with ranked versions keys down to
        T_D (the D-th best): its ranked versions read the same index as its head."""
        if not self.policy.index.sparse:
            return 0
        if kind_of(period.kind).pick(all_time=True, period=False):
            found = self._all_time.get(period.board)
            if found is None:
                found = self._all_time[period.board] = self._all_time_threshold(period)
            return found
        state = self.states.get(period)
        return state.threshold if state else 0

    def _all_time_threshold(self, period: PeriodKey) -> int:
        state = self.states.get(period)
        if state is None:
            return 0
        return min(state.threshold, state.deep_threshold) if self.policy.deep_tier_on(period) else state.threshold

    def index_key(self, period: PeriodKey, item_id: str) -> str:
        shards = self._board_shards.get(period.board)
        if shards is None:
            board_state = self.states.get(PeriodKey(period.board, ALL, ALL))
            shards = (board_state.shards if board_state else None) or self.policy.index.board_shards
            self._board_shards[period.board] = shards
        return period_shard_value(period.board, period.kind, period.bucket, board_shard_of(item_id, shards), shards)

    def expires(self, period: PeriodKey) -> int | None:
        return self.policy.periods.expires(period)

    def main_threshold(self) -> int:
        """The deployment's board's all-time threshold this batch used (logged)."""
        return self.threshold(PeriodKey(self.policy.board, ALL, ALL))

    def raised(self, lifts: Iterable[Lift]) -> Context:
        """This context with the lifted thresholds in place of the ones read."""
        states = dict(self.states)
        for lift in lifts:
            state = states.get(lift.period)
            states[lift.period] = (
                replace(state, threshold=lift.threshold) if state else BoardState(lift.threshold, None, None)
            )
        return Context(self.policy, states)


@dataclass(frozen=True)
class Lift:
    """A batch's own proof that a period's T can rise: K of its items (``witnesses``, K the period's threshold
    depth) are sure to hold at least ``threshold`` once their writes succeed, since counts only grow. Applied
    first and published before the rest of the batch, it keeps a period's first batches (T still 0: no snapshot
    yet) from keying every item they touch (docs/sparse-index.md, "The batch's own threshold")."""

    period: PeriodKey
    threshold: int
    witnesses: frozenset[tuple[str, str]]  # (board, item)


def threshold_lifts(ctx: Context, deltas: Iterable[ItemDelta]) -> list[Lift]:
    """The periods without a published T whose K-th best lower bound in this batch is above 0, with their
    witnesses."""
    if not ctx.policy.index.sparse:
        return []
    bounds: dict[PeriodKey, dict[str, int]] = defaultdict(dict)
    for delta in deltas:
        bound = optimistic_lower_bound(delta)  # the shards' NEW values: held once the delta applied
        if bound <= 0:
            continue
        for period in ctx.periods(delta.board, delta.bucket):
            # Only where no T was published yet: a hidden witness (the aggregator cannot tell) then costs one
            # repair, not one per batch; once the job publishes, its T counts visible items only.
            if ctx.threshold(period) > 0:
                continue
            held, gained = bounds[period], ctx.gain(period.kind, delta.bucket, bound)
            if gained > held.get(delta.item_id, 0):
                held[delta.item_id] = gained
    lifts = []
    for period, held in bounds.items():
        depth = ctx.policy.threshold_depth(period)
        if len(held) < depth:
            continue
        best = heapq.nlargest(depth, held.items(), key=_bound)
        lifts.append(Lift(period, best[-1][1], frozenset((period.board, item_id) for item_id, _ in best)))
    return lifts


def _bound(entry: tuple[str, int]) -> int:
    return entry[1]


@functools.lru_cache(maxsize=65_536)  # every delta asks; a batch has few distinct (board, bucket) pairs
def periods_of(
    kinds: tuple[str, ...], board: str, anchor_bucket: str, half_life: int = DEFAULT_HALF_LIFE_HOURS
) -> tuple[PeriodKey, ...]:
    anchor = anchor_kind(kinds)
    return tuple(
        PeriodKey(board, kind, coarser_bucket(kind, anchor, anchor_bucket, half_life=half_life))
        for kind in (*kinds, ALL)
    )


def periods_to_read(deltas: Iterable[ItemDelta], policy: Leaderboards) -> list[PeriodKey]:
    """The periods whose thresholds and layouts a batch needs (one read per batch): every period its views count in,
    and those of the anchor bucket before (an aggregate that rolls keys its archived entries only at or above their
    period's T)."""
    kinds = policy.periods.kinds
    anchor = policy.periods.anchor
    half_life = policy.periods.half_life_hours
    buckets = {(delta.board, delta.bucket) for delta in deltas}
    return sorted(
        {
            period
            for board, bucket in buckets
            for anchor_bucket in dict.fromkeys((bucket, previous_bucket(anchor, bucket)))
            for period in periods_of(kinds, board, anchor_bucket, half_life)
        }
    )


def by_item(deltas: Mapping[DeltaKey, ItemDelta]) -> dict[tuple[str, str], list[ItemDelta]]:
    """The deltas of each (board, item), oldest anchor bucket first: one worker applies them in that order."""
    groups: dict[tuple[str, str], list[ItemDelta]] = {}
    several = []
    for (board, item_id, _), delta in deltas.items():  # from the keys: the deltas themselves are not read here
        key = (board, item_id)
        group = groups.get(key)
        if group is None:
            groups[key] = [delta]
        else:
            group.append(delta)
            several.append(group)
    for group in several:  # most items have one bucket in a batch: nothing to sort
        group.sort(key=_by_bucket)
    return groups


def _by_bucket(delta: ItemDelta) -> str:
    return delta.bucket


# -- the writes a delta needs, one decision at a time


class Step(Enum):
    """Which write a delta needs next, given the aggregate's anchor bucket."""

    MOVE = "move"  # the aggregate's own bucket (or no aggregate yet)
    ROLL = "roll"  # a newer bucket: archive the periods that end, move the aggregate on
    LATE = "late"  # an older bucket: its entry, by transaction


def step_for(delta: ItemDelta, state: AggregateState | None) -> Step:
    if state is None or state.bucket in (None, delta.bucket):
        return Step.MOVE
    return Step.ROLL if delta.bucket > state.bucket else Step.LATE


def possible_rolls(ctx: Context, deltas: Iterable[ItemDelta]) -> list[ItemDelta]:
    """The deltas whose aggregate may still hold an older anchor bucket, so that reading it first beats an optimistic
    move (refused, that costs a write unit; the read costs a tenth as much). A newer bucket's first views start every
    write shard they touch from 0; a delta with a shard past 0 follows views its aggregate already took."""
    if not ctx.kinds:  # all time only: one bucket for ever, nothing rolls
        return []
    return [delta for delta in deltas if all(step.before == 0 for step in delta.shards.values())]


class Move(NamedTuple):  # immutable; a NamedTuple because one is built per delta (a frozen dataclass costs 4x)
    """One conditional UpdateItem of an aggregate in its own anchor bucket: the ``moves`` of its applied values, the
    index keys its count is sure to earn (``joins``, per kind, all time too) with the buckets of that sure count
    (``buckets``, set if the aggregate has none) and what one view adds to each weighted kind's count (``weights``:
    trending)."""

    board: str
    item_id: str
    bucket: str
    moves: list[ShardMove]
    kinds: tuple[str, ...]
    joins: dict[str, str]
    weights: dict[str, int]
    buckets: dict[str, int]

    @property
    def added(self) -> int:
        return views_added(self.moves)


class IndexJoin(NamedTuple):
    """Key an aggregate into a kind's index (sparse index: its count reached the period's threshold), or raise the
    bucket its index sorts it by to ``bucket``."""

    board: str
    item_id: str
    kind: str
    key: str
    bucket: int


class EntryJoin(NamedTuple):
    """Key a past period's entry into its kind's index, or raise its bucket there."""

    period: PeriodKey
    item_id: str
    key: str
    bucket: int


@dataclass(frozen=True)
class Roll:
    """Views of a newer anchor bucket: copy each period that ends into a past entry (``archives``), then replace the
    aggregate's state ``old`` by ``new`` (``keys``: each changed kind's index key, None to remove it)."""

    board: str
    item_id: str
    archives: list[PastEntry]
    old: AggregateState
    new: AggregateState
    keys: dict[str, str | None]
    moves: list[ShardMove]
    added: int


def catch_up(delta: ItemDelta, applied: Mapping[int, int]) -> tuple[ItemOutcome, list[ShardMove]]:
    """After a refused compare-and-set, from the applied values it found: whether part of the batch was applied
    before (a replay) or records before it never arrived (a gap), and the moves still to make."""
    found = [(applied.get(shard, 0), step.before) for shard, step in delta.shards.items()]
    seen = ItemOutcome(
        replay_absorbed=any(value > before for value, before in found),
        gap_healed=any(value < before for value, before in found),
    )
    return seen, catch_up_moves(delta, applied)


def joins_for(
    ctx: Context, periods: Sequence[PeriodKey], item_id: str, anchor_bucket: str, lower_bound: int
) -> dict[PeriodKey, str]:
    """Index keys to set in the same write: every period whose threshold the count is sure to reach (``lower_bound``
    views of ``anchor_bucket``, in each period's own unit)."""
    joins = {}
    for period in periods:  # a loop, not a comprehension: asked per delta, mostly of one or two periods
        if ctx.gain(period.kind, anchor_bucket, lower_bound) >= ctx.threshold(period):
            joins[period] = ctx.index_key(period, item_id)
    return joins


def plan_move(delta: ItemDelta, ctx: Context, moves: list[ShardMove], seen: AggregateState | None = None) -> Move:
    """The common case: views of the aggregate's own anchor bucket, one conditional UpdateItem, keying the item into
    every index whose threshold the count it is sure of reaches. That is the moves' own bound; when a read before
    found the aggregate in this bucket (``seen``), also the count seen plus the moves' views (counts only grow), and
    the kinds it was seen keyed in need no key."""
    lower_bound = lower_bound_after(moves)
    known = seen if seen is not None and seen.bucket == delta.bucket else None
    added = 0 if known is None else views_added(moves)
    keys, buckets = {}, {}
    for period in ctx.periods(delta.board, delta.bucket):  # a loop, not comprehensions: built per delta
        sure = ctx.gain(period.kind, delta.bucket, lower_bound)
        if known is not None:
            if period.kind in known.keyed:
                continue
            sure = max(sure, known.count(period.kind) + ctx.gain(period.kind, delta.bucket, added))
        if sure >= ctx.threshold(period):
            keys[period.kind], buckets[period.kind] = ctx.index_key(period, delta.item_id), index_bucket(sure)
    kinds = ctx.kinds
    return Move(delta.board, delta.item_id, delta.bucket, moves, kinds, keys, ctx.weights(kinds, delta.bucket), buckets)


def plan_joins(ctx: Context, board: str, item_id: str, state: AggregateState) -> list[IndexJoin]:
    """The index keys an aggregate lacks: every period index whose threshold its count reached (sparse index), each
    with the bucket of its count, and the buckets of the kinds it is keyed in that its count outgrew. Also after a
    pure replay: a crash between the count and a join heals here."""
    if state.bucket is None:
        return []
    joins: list[IndexJoin] = []
    for period in ctx.periods(board, state.bucket):
        count = state.count(period.kind)
        keyed = period.kind in state.keyed
        reaches = keyed or (count >= ctx.threshold(period) and count > 0)
        if reaches and (not keyed or state.buckets.get(period.kind, -1) < deep_bucket(count)):
            joins.append(IndexJoin(board, item_id, period.kind, ctx.index_key(period, item_id), index_bucket(count)))
    return joins


def plan_roll(delta: ItemDelta, ctx: Context, old: AggregateState) -> Roll:
    """Views of a newer anchor bucket: archive each period that ends, then move the aggregate on.

    Nothing of a newer bucket was ever applied anywhere (entries exist only for buckets older than the aggregate's),
    so its moves start from zero, which also heals records lost before this batch (NEW values are absolute).
    """
    assert old.bucket is not None
    moves = catch_up_moves(delta, {})
    added = sum(m.target for m in moves)
    archives: list[PastEntry] = []
    counts: dict[str, int] = {}
    keys: dict[str, str | None] = {}
    for kind in ctx.kinds:
        before, after = ctx.period(delta.board, kind, old.bucket), ctx.period(delta.board, kind, delta.bucket)
        gained = ctx.gain(kind, delta.bucket, added)
        if before == after:
            counts[kind] = old.count(kind) + gained
            continue
        counts[kind] = gained
        archives.append(_past_entry(ctx, before, delta.item_id, old))
        keys[kind] = ctx.index_key(after, delta.item_id) if gained >= max(1, ctx.threshold(after)) else None
    new = AggregateState(
        applied={m.shard: m.target for m in moves},
        views=old.views + added,
        bucket=delta.bucket,
        counts=counts,
        keyed=frozenset(kind for kind in old.keyed if kind not in keys) | {k for k, v in keys.items() if v},
        buckets=_rolled_buckets(old, counts, keys),
    )
    return Roll(delta.board, delta.item_id, archives, old, new, keys, moves, added)


def _rolled_buckets(
    old: AggregateState, counts: Mapping[str, int], restarted: Mapping[str, str | None]
) -> dict[str, int]:
    """The buckets a roll writes: a period that restarts gets its new count's; one that goes on keeps its bucket
    while the count has not outgrown it; all time, which does not roll, keeps its own (a join after the roll raises
    it)."""
    buckets = {ALL: old.buckets[ALL]} if ALL in old.buckets else {}
    for kind, count in counts.items():
        stored = old.buckets.get(kind, -1)
        buckets[kind] = stored if kind not in restarted and stored >= deep_bucket(count) else index_bucket(count)
    return buckets


def _past_entry(ctx: Context, period: PeriodKey, item_id: str, old: AggregateState) -> PastEntry:
    count = old.count(period.kind)
    reaches = count > 0 and count >= ctx.threshold(period)
    return PastEntry(
        period=period,
        item_id=item_id,
        count=count,
        applied=dict(old.applied) if ctx.policy.periods.is_anchor(period.kind) else None,
        index_key=ctx.index_key(period, item_id) if reaches else None,
        source_views=old.views,
        expires_at=ctx.expires(period),
    )


def late_periods(delta: ItemDelta, ctx: Context, aggregate: AggregateState) -> list[PeriodKey]:
    """The periods a view of an older anchor bucket moves apart from the aggregate: the bucket's own entry first,
    then each coarser period the aggregate has moved past."""
    assert aggregate.bucket is not None
    coarse = [
        ctx.period(delta.board, kind, delta.bucket)
        for kind in ctx.coarse_kinds()
        if ctx.period(delta.board, kind, delta.bucket) != ctx.period(delta.board, kind, aggregate.bucket)
    ]
    return [ctx.period(delta.board, ctx.anchor, delta.bucket), *coarse]


def plan_late(delta: ItemDelta, ctx: Context, aggregate: AggregateState, moves: list[ShardMove]) -> LateMove:
    """Views of an anchor bucket older than the aggregate's: one transaction moves the bucket's entry (conditioned on
    its applied values, so it happens once), the aggregate's all-time count and its periods that still contain the
    bucket, and the past entries of those that do not."""
    assert aggregate.bucket is not None
    periods = late_periods(delta, ctx, aggregate)
    lower_bound = lower_bound_after(moves)
    joins = joins_for(ctx, periods, delta.item_id, delta.bucket, lower_bound)
    same = [
        kind
        for kind in ctx.coarse_kinds()
        if ctx.period(delta.board, kind, delta.bucket) == ctx.period(delta.board, kind, aggregate.bucket)
    ]
    return LateMove(
        board=delta.board,
        item_id=delta.item_id,
        bucket=delta.bucket,
        moves=moves,
        anchor_kind=ctx.anchor,
        aggregate_bucket=aggregate.bucket,
        aggregate_kinds=same,
        past=periods[1:],
        joins=joins,
        expires_at={p: ctx.expires(p) for p in periods},
        weights=ctx.weights(ctx.kinds, delta.bucket),
        join_buckets={p: index_bucket(ctx.gain(p.kind, delta.bucket, lower_bound)) for p in joins},
    )


def plan_entry_join(ctx: Context, period: PeriodKey, item_id: str, entry: AggregateState) -> EntryJoin | None:
    """A past entry whose count reached its period's threshold and that is not keyed yet, or that is keyed with a
    bucket its count outgrew."""
    count = entry.count(period.kind)
    keyed = period.kind in entry.keyed
    if (not keyed and count >= max(1, ctx.threshold(period))) or (
        keyed and entry.buckets.get(period.kind, -1) < deep_bucket(count)
    ):
        return EntryJoin(period, item_id, ctx.index_key(period, item_id), index_bucket(count))
    return None


def marks(outcome: BatchOutcome, policy: Leaderboards) -> tuple[list[PeriodKey], dict[PeriodKey, int | None]]:
    """The periods to mark changed for the snapshot job (one small write each), and when each mark expires."""
    changed = sorted(outcome.changed)
    return changed, {period: policy.periods.expires(period) for period in changed}
