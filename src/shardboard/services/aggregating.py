"""Apply a stream batch: the use case behind the aggregator function, ``shardboard process``'s runner, the benchmark
and the operator tools (rebuild, redrive).

The decisions are domain/aggregating/aggregation.py's pure plans; this module reads what they need, executes the writes
they return, feeds back what the table answered, and owns the thread pools. docs/exactly-once.md has the argument.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol, TypeVar

from shardboard.adapters.stream_records import UnexpectedRecord, counter_steps
from shardboard.domain.aggregating.aggregation import (
    MAX_CAS_ATTEMPTS,
    AggregateContention,
    BatchOutcome,
    Context,
    IndexJoin,
    ItemOutcome,
    Step,
    by_item,
    catch_up,
    late_periods,
    marks,
    periods_to_read,
    plan_entry_join,
    plan_joins,
    plan_late,
    plan_move,
    plan_roll,
    possible_rolls,
    step_for,
    threshold_lifts,
)
from shardboard.domain.aggregating.batch import (
    CounterStep,
    DeltaKey,
    ItemDelta,
    ShardMove,
    fold,
    optimistic_moves,
    views_added,
)
from shardboard.domain.aggregating.countable import Refusal, board_refusal, bucket_refusal, id_refusal
from shardboard.domain.aggregating.window import AggregationWindow
from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.policy import Periods
from shardboard.domain.ports import Aggregates, AggregateState, BoardIndex, Erasure, PeriodLedger, Thresholds
from shardboard.settings import Settings


class CountingBoard(Aggregates, BoardIndex, Thresholds, Protocol):
    """What applying a batch's deltas needs: the aggregates and past entries, the index they join and the
    published thresholds that decide the joins."""


class AggregatorBoard(CountingBoard, PeriodLedger, Erasure, Protocol):
    """The aggregator's board table: counting, the ledger of changed periods, and a deleted item's sweep."""


# -- one delta: the compare-and-set loop, each turn a pure decision and its write

_Turn = tuple[ItemOutcome, AggregateState | None, list[ShardMove]]
# Outcomes are immutable: the common ones are shared, not built per delta.
_NOTHING = ItemOutcome()
_ONE_WRITE = ItemOutcome(writes=1)
_Run = list[tuple[DeltaKey, ItemOutcome]]  # one (board, item)'s deltas, applied
# Aggregates one peek request reads (BatchGetItem's limit).
PEEK_CHUNK = 100


def apply_delta(
    board: CountingBoard, delta: ItemDelta, ctx: Context, seen: AggregateState | None = None
) -> ItemOutcome:
    """Advance one (board, item) by what this batch saw of one anchor bucket, exactly once. ``seen``: the aggregate
    as a read before the batch's writes found it (a hint; every write stays conditioned)."""
    moves = optimistic_moves(delta)
    if not moves:
        return _NOTHING
    outcome = _NOTHING
    # Seen in an older anchor bucket: roll at once (the optimistic move would be refused). Otherwise the move goes
    # first as if unseen (a stale read never stands in for the state a refused write returns), ``seen`` only
    # vouching for counts its write may join the indexes with.
    state = seen if seen is not None and step_for(delta, seen) is Step.ROLL else None
    for _ in range(MAX_CAS_ATTEMPTS):
        step = step_for(delta, state)
        if step is Step.MOVE:
            turn, state, moves = _move(board, delta, ctx, moves, state, seen=seen)
        elif step is Step.ROLL:
            assert state is not None
            turn, state, moves = _roll(board, delta, ctx, state)
        else:
            assert state is not None
            turn, state, moves = _late(board, delta, ctx, state, moves)
        outcome = turn if outcome is _NOTHING else outcome.plus(turn)
        if not moves:
            return outcome
    raise AggregateContention(f"{delta.board}/{delta.item_id!r}: {MAX_CAS_ATTEMPTS} compare-and-set attempts lost")


def _move(
    board: CountingBoard,
    delta: ItemDelta,
    ctx: Context,
    moves: list[ShardMove],
    known: AggregateState | None,
    *,
    seen: AggregateState | None = None,
) -> _Turn:
    outcome = _NOTHING
    if known is not None:  # a previous attempt read the aggregate: continue from what it holds
        outcome, moves = catch_up(delta, known.applied)
        if not moves:  # a replay: everything was applied; still heal a crash between count and index writes
            return outcome.plus(join_indexes(board, ctx, delta.board, delta.item_id, known)), known, []
    move = plan_move(delta, ctx, moves, known or seen)
    result = board.move(
        move.board,
        move.item_id,
        move.bucket,
        move.moves,
        kinds=move.kinds,
        joins=move.joins,
        weights=move.weights,
        buckets=move.buckets,
    )
    if not result.applied:
        return outcome.plus(_ONE_WRITE), result.state or board.state(delta.board, delta.item_id), moves
    assert result.state is not None
    joined = join_indexes(board, ctx, delta.board, delta.item_id, result.state)
    # The write, its views and its joins as one outcome: the common path builds one, not a chain of sums.
    done = ItemOutcome(views_added=move.added, writes=1 + joined.writes, joined_index=joined.joined_index)
    return (done if outcome is _NOTHING else outcome.plus(done)), result.state, []


def join_indexes(
    board: CountingBoard, ctx: Context, board_name: str, item_id: str, state: AggregateState
) -> ItemOutcome:
    """Key the aggregate into every index whose threshold its count reached and raise the buckets its counts
    outgrew (sparse index; rebuild calls it too). A write refused by a concurrent one is planned again from what
    the aggregate holds then (counts only grow, so this ends)."""
    outcome = _NOTHING
    for _ in range(MAX_CAS_ATTEMPTS):
        joins = plan_joins(ctx, board_name, item_id, state)
        if not joins:
            return outcome
        turn, refused = _join(board, joins)
        outcome = turn if outcome is _NOTHING else outcome.plus(turn)
        if not refused:
            return outcome
        state = board.state(board_name, item_id)
    raise AggregateContention(f"{board_name}/{item_id!r}: index joins kept losing")


def _join(board: BoardIndex, joins: Sequence[IndexJoin]) -> tuple[ItemOutcome, bool]:
    """One write for the index keys and buckets an aggregate lacks (every kind at once, all time too), and whether
    it was refused."""
    joined = board.join_index(
        joins[0].board, joins[0].item_id, {j.kind: j.key for j in joins}, {j.kind: j.bucket for j in joins}
    )
    return ItemOutcome(writes=1, joined_index=joined), not joined


def _roll(board: CountingBoard, delta: ItemDelta, ctx: Context, old: AggregateState) -> _Turn:
    roll = plan_roll(delta, ctx, old)
    for entry in roll.archives:
        board.archive(entry)
    writes = len(roll.archives) + 1
    archived = tuple(entry.period for entry in roll.archives)
    if not board.roll(roll.board, roll.item_id, roll.old, roll.new, roll.keys):
        # The aggregate changed meanwhile: read it and decide again.
        return ItemOutcome(writes=writes, archived=archived), board.state(delta.board, delta.item_id), roll.moves
    outcome = ItemOutcome(views_added=roll.added, writes=writes, rolled=True, archived=archived)
    return outcome.plus(join_indexes(board, ctx, delta.board, delta.item_id, roll.new)), roll.new, []


def _late(
    board: CountingBoard, delta: ItemDelta, ctx: Context, aggregate: AggregateState, moves: list[ShardMove]
) -> _Turn:
    periods = late_periods(delta, ctx, aggregate)
    outcome = ItemOutcome()
    for _ in range(MAX_CAS_ATTEMPTS):
        late = plan_late(delta, ctx, aggregate, moves)
        result = board.move_late(late)
        outcome = outcome.plus(ItemOutcome(writes=1, late=True))
        if result.applied:
            outcome = outcome.plus(ItemOutcome(views_added=views_added(moves)))
            break
        if result.aggregate_moved:
            return outcome, board.state(delta.board, delta.item_id), moves
        found = result.entry or board.entry_state(periods[0], delta.item_id)
        seen, moves = catch_up(delta, found.applied)
        outcome = outcome.plus(seen)
        if not moves:
            break
    else:
        raise AggregateContention(f"{delta.board}/{delta.item_id!r}: late move kept losing")
    # Join whatever reached its threshold (also after a pure replay: a crash between the move and a join heals here).
    for period in periods:
        for _ in range(MAX_CAS_ATTEMPTS):  # refused only by a concurrent join or raise: plan again from the entry
            join = plan_entry_join(ctx, period, delta.item_id, board.entry_state(period, delta.item_id))
            if join is None:
                break
            joined = board.join_entry(join.period, join.item_id, join.key, join.bucket)
            outcome = outcome.plus(ItemOutcome(writes=1, joined_index=joined))
            if joined:
                break
    current = board.state(delta.board, delta.item_id)
    return outcome.plus(join_indexes(board, ctx, delta.board, delta.item_id, current)), current, []


# -- a batch: every (board, item) in parallel, failures per item


def apply_batch(board: CountingBoard, records: Iterable[CounterStep], settings: Settings) -> BatchOutcome:
    """Fold ``records`` by (board, item, bucket) and apply every (board, item) in parallel; failures are per
    (board, item), never per batch."""
    return apply_deltas(board, fold(records), settings)


def apply_deltas(board: CountingBoard, deltas: Mapping[DeltaKey, ItemDelta], settings: Settings) -> BatchOutcome:
    """Apply folded deltas (one batch's, or a whole tumbling window's): one compare-and-set write per (board, item)
    and anchor bucket; an item's buckets are applied oldest first, by one worker.

    When the batch itself proves a threshold for a period that has none yet (``threshold_lifts``), its witnesses go
    first, the new T is published, and the rest is applied under it: what falls below it is never keyed."""
    outcome = BatchOutcome()
    if not deltas:
        return outcome
    wanted = periods_to_read(deltas.values(), settings.policy)
    ctx = Context(settings.policy, board.thresholds(wanted) if wanted else {})
    outcome.threshold = ctx.main_threshold()
    groups = by_item(deltas)
    rolls = possible_rolls(ctx, (group[0] for group in groups.values()))
    seen = _peek(board, rolls, settings)
    outcome.aggregates_read = len(rolls)
    # Only a period still without a threshold can be lifted: most batches skip the pass over their deltas.
    lifts = threshold_lifts(ctx, deltas.values()) if any(ctx.threshold(p) <= 0 for p in wanted) else []
    if lifts:
        first = {key for lift in lifts for key in lift.witnesses}
        _apply_groups(board, {key: groups.pop(key) for key in first}, ctx, settings, outcome, seen=seen)
        held = [lift for lift in lifts if not any(key in outcome.failures for key in lift.witnesses)]
        for lift in held:
            board.raise_threshold(lift.period, lift.threshold)
        ctx = ctx.raised(held)
    _apply_groups(board, groups, ctx, settings, outcome, seen=seen)
    return outcome


def _peek(
    board: CountingBoard, deltas: Sequence[ItemDelta], settings: Settings
) -> Mapping[tuple[str, str], AggregateState]:
    """The aggregates of the deltas that may roll (``possible_rolls``), read before any write: BatchGetItem, eventually
    consistent, the requests overlapped. Only a hint, so a read that fails leaves its items unseen."""
    keys = [(delta.board, delta.item_id) for delta in deltas]
    chunks = [keys[start : start + PEEK_CHUNK] for start in range(0, len(keys), PEEK_CHUNK)]

    def read(chunk: Sequence[tuple[str, str]]) -> Mapping[tuple[str, str], AggregateState]:
        try:
            return board.states(chunk)
        except Exception:  # a hint lost costs only the refused writes it would have saved
            return {}

    return {key: state for found in _overlapped(read, chunks, settings) for key, state in found.items()}


def _apply_groups(
    board: CountingBoard,
    groups: Mapping[tuple[str, str], list[ItemDelta]],
    ctx: Context,
    settings: Settings,
    outcome: BatchOutcome,
    *,
    seen: Mapping[tuple[str, str], AggregateState],
) -> None:
    """Apply each (board, item)'s deltas, in parallel when the settings allow; failures go to ``outcome``. ``seen``
    (aggregates read before the batch) informs each group's first delta only: the next ones follow its writes."""

    def apply(group: list[ItemDelta]) -> _Run:
        hint = seen.get((group[0].board, group[0].item_id)) if seen else None
        return [
            ((d.board, d.item_id, d.bucket), apply_delta(board, d, ctx, None if n else hint))
            for n, d in enumerate(group)
        ]

    def attempt(group: list[ItemDelta]) -> _Run | Exception:
        try:
            return apply(group)
        except Exception as failure:  # per item: the item's records are retried, the batch goes on
            return failure

    # Collected here, in one thread and in the groups' order, whichever thread applied them.
    for key, run in zip(groups, _overlapped(attempt, list(groups.values()), settings), strict=True):
        if isinstance(run, Exception):
            outcome.failures[key] = run
            continue
        for delta_key, item_outcome in run:
            outcome.add(ctx, delta_key, item_outcome)


def note_changes(board: PeriodLedger, outcome: BatchOutcome, settings: Settings, now: int) -> None:
    """Tell the snapshot job which periods' counts changed (one small write per period per batch)."""
    changed, expires = marks(outcome, settings.policy)
    if not changed:
        return
    # One write per period: overlapped, a batch touching 30 periods waits about one round trip, not 30. A failed mark
    # fails the batch, which is retried: marking again is harmless.
    workers = min(settings.write_concurrency, len(changed))
    _overlapped(
        lambda share: board.mark_changed(share, now, expires), [changed[i::workers] for i in range(workers)], settings
    )


T = TypeVar("T")
R = TypeVar("R")


def _overlapped(work: Callable[[T], R], tasks: Sequence[T], settings: Settings) -> list[R]:
    """``work`` on every task, overlapped on up to ``write_concurrency`` threads, results in order (the first error
    raised). Serially when there is nothing to overlap (one task, or an in-memory store): a pool's dispatch costs."""
    workers = min(settings.write_concurrency, len(tasks))
    if workers <= 1:
        return [work(task) for task in tasks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(work, tasks))


# -- a stream batch as Lambda delivers it


Denied = Callable[[Collection[str], bool], frozenset[str]]


@dataclass
class StreamAggregator:
    """What the aggregator runs over, resolved at each batch (a Lambda container builds them at its first):
    the board table, the settings, ``denied(ids, consistent)`` (those of the ids that are deleted) and a clock.
    ``last`` is what the last batch did (the local tools and the benchmark read it)."""

    board: Callable[[], AggregatorBoard]
    settings: Callable[[], Settings]
    denied: Denied
    clock: Callable[[], float]  # epoch seconds: the composition root's clock (virtual time in the benchmark)
    last: AppliedBatch | None = None


@dataclass(frozen=True)
class Skipped:
    """A stream record that is not a counter step of this deployment: skipped and counted, never failed."""

    reason: str
    detail: str
    event_id: str | None
    error: tuple[type[BaseException], BaseException, TracebackType] | None = None  # an undecodable record's


@dataclass(frozen=True)
class Erased:
    """What a batch wrote for an item deleted while it ran, erased again."""

    board: str
    item_id: str
    erased: int


@dataclass
class AppliedBatch:
    """What one invocation did: the writes' outcome, the records skipped, the records failed (by the identity of
    the record as delivered: Lambda retries from the lowest of them) and the window, if the event had one."""

    outcome: BatchOutcome = field(default_factory=BatchOutcome)
    skipped: list[Skipped] = field(default_factory=list)
    failed: dict[int, BaseException] = field(default_factory=dict)
    window: AggregationWindow | None = None
    erased: list[Erased] = field(default_factory=list)
    window_skipped: list[DeltaKey] = field(default_factory=list)  # a window's deltas of items deleted meanwhile

    def failure_of(self, record: Mapping[str, Any]) -> BaseException | None:
        """Why a delivered record failed (None: it succeeded, or was skipped)."""
        return self.failed.get(id(record))


def apply_stream_batch(
    aggregator: StreamAggregator, records: Sequence[Mapping[str, Any]], window: AggregationWindow | None
) -> AppliedBatch:
    """Apply one delivered batch (or fold it into its tumbling window, applied whole by the final invocation).

    Records that are not this deployment's counters (foreign buckets, other events, undecodable images) and counters
    of deleted items are skipped, never failed; a failed item write fails exactly that item's records.
    """
    settings = aggregator.settings()
    periods = settings.policy.periods
    applied = AppliedBatch(window=window)
    # A record's steps are (board, item id, bucket, write shard, OLD, NEW): one record has one item and one bucket.
    read: list[tuple[Mapping[str, Any], list[CounterStep]]] = []
    steps: list[CounterStep] = []
    viewed: set[str] = set()
    buckets: dict[str, Refusal | None] = {}  # each anchor bucket's verdict: a batch holds a handful of buckets
    for record in records:
        views = _read(record, periods, applied.skipped, buckets)
        if views:
            read.append((record, views))
            steps += views
            viewed.add(views[0][1])
    denied = aggregator.denied(viewed, False) if viewed else frozenset()
    if denied:
        # A counter written before a delete's tombstone and delivered after its sweep must never recreate the item's
        # aggregate: skipped, never failed, so the batch goes on and nothing is retried.
        for record, views in read:
            if views[0][1] in denied:
                applied.skipped.append(Skipped("deleted", f"{views[0][1]!r} is deleted", _event_id(record)))
        read = [(record, views) for record, views in read if views[0][1] not in denied]
        steps = [view for _, views in read for view in views]
    applied.outcome = _apply(aggregator, settings, steps, window, applied)
    if applied.outcome.failures:  # only then can a record have failed: most batches skip this pass
        for record, views in read:
            error = next((e for v in views if (e := applied.outcome.failed(v[0], v[1]))), None)
            if error is not None:
                applied.failed[id(record)] = error
    return applied


def _apply(
    aggregator: StreamAggregator,
    settings: Settings,
    views: list[CounterStep],
    window: AggregationWindow | None,
    applied: AppliedBatch,
) -> BatchOutcome:
    board = aggregator.board()
    if window is None:
        outcome = apply_batch(board, views, settings)
    else:
        window.add(views)
        if not window.final:
            return BatchOutcome()  # nothing is written before the window closes
        deltas = window.deltas()
        # Items deleted while the window was open (asked again at its close): counters folded in before a delete's
        # sweep would otherwise recreate the item's aggregate.
        denied = aggregator.denied({item_id for _, item_id, _ in deltas}, False) if deltas else frozenset()
        if denied:
            applied.window_skipped = [key for key in deltas if key[1] in denied]
            deltas = {key: delta for key, delta in deltas.items() if key[1] not in denied}
        outcome = apply_deltas(board, deltas, settings)
    note_changes(board, outcome, settings, int(aggregator.clock()))
    applied.erased = _erase_deleted(aggregator, board, outcome)
    return outcome


def _erase_deleted(aggregator: StreamAggregator, board: Erasure, outcome: BatchOutcome) -> list[Erased]:
    """Erase what this batch wrote for items deleted while it ran. A delete's own erase may have come before these
    writes (the deny read before them missed its tombstone); a strongly consistent read after them closes the race:
    an id denied by now is erased here, and an id not yet denied is erased by its delete, whose erase comes after
    its tombstone, hence after these writes."""
    written = {item_id for _, item_id, _ in outcome.items}  # unpacked, no pair built: this runs for every item
    denied = aggregator.denied(written, True) if written else frozenset()
    if not denied:
        return []
    erased = []
    for board_name, item_id in sorted({(board, item_id) for board, item_id, _ in outcome.items if item_id in denied}):
        # The periods the batch counted in, and those its rolls archived into: a roll may archive an entry after the
        # delete's own sweep (it read the aggregate before the sweep), then lose its compare-and-set.
        periods = {period for period in outcome.changed if period.board == board_name}
        periods.update(
            p for key, item in outcome.items.items() if key[:2] == (board_name, item_id) for p in item.archived
        )
        erased.append(Erased(board_name, item_id, board.erase(board_name, item_id, sorted(periods))))
    return erased


def _read(
    record: Mapping[str, Any], periods: Periods, skipped: list[Skipped], buckets: dict[str, Refusal | None]
) -> list[CounterStep] | None:
    """A record's counter steps (one per board it counts on), or None for a record that is not ours (noted in
    ``skipped``). A counter of a board name the API refuses is left out and noted; the record's other counters stand.
    ``buckets`` remembers each bucket's verdict: a batch holds a handful of buckets."""
    # The raw wire images, not Powertools' whole-image deserialization: it was most of the CPU per record.
    try:
        views = counter_steps(record)
    except UnexpectedRecord as skip:
        skipped.append(Skipped(skip.reason, str(skip), _event_id(record)))
        return None
    except Exception as error:  # an undecodable image is a foreign record too, not a reason to fail the batch
        trace = (type(error), error, error.__traceback__) if error.__traceback__ else None
        skipped.append(Skipped("malformed", repr(error), _event_id(record), trace))
        return None
    if not views:
        return views
    first = views[0]
    bucket = first[2]
    refusal = id_refusal(first[1])
    if refusal is None:
        if bucket not in buckets:
            buckets[bucket] = bucket_refusal(periods, bucket)
        refusal = buckets[bucket]
    if refusal is not None:
        # A counter written under other Periods, by hand or by no view the API takes: skipped rather than guessed at.
        skipped.append(Skipped(refusal.reason, refusal.detail, _event_id(record)))
        return None
    if len(views) == 1 and views[0][0] == GLOBAL_BOARD:  # the common record: no board name to check
        return views
    kept = []
    for view in views:
        refusal = None if view[0] == GLOBAL_BOARD else board_refusal(view[0])
        if refusal is None:
            kept.append(view)
        else:
            skipped.append(Skipped(refusal.reason, refusal.detail, _event_id(record)))
    return kept


def _event_id(record: Any) -> str | None:
    return record.get("eventID") if isinstance(record, Mapping) else None
