"""Recovery without a runbook: rebuild aggregates from the base table, redrive what the failure destination holds.

Both repair one (board, item) the same way (:func:`repair_item`): read its base counters (the truth) and feed them
to the aggregator's own code as counter steps from 0 to their value (``apply_deltas``). Every compare-and-set then
finds what is applied and moves it on to the value read, bucket by bucket, oldest first. A counter value read here is
one the counter really had, so the invariant of docs/exactly-once.md holds; a stream record delivered later is
absorbed as a replay, and a record applied meanwhile makes the compare-and-set refuse and catch up. So repairs are
safe while traffic flows and safe to run twice.

A lost aggregate is rebuilt without touching its past entries, which survived it (and which late views may be
changing meanwhile): replaying its buckets brings the current one back and recreates any entry that was lost too;
then the views of the surviving entries that the recreated aggregate lacks are added back in one conditional write
(:func:`restore_history`; docs/boards-and-periods.md, "Recovery").
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import error_code
from shardboard.adapters.stream_records import UnexpectedRecord, counter_steps
from shardboard.domain.aggregating.aggregation import AggregateContention, Context, periods_of
from shardboard.domain.aggregating.batch import fold
from shardboard.domain.aggregating.countable import Refusal, board_refusal, bucket_refusal, id_refusal
from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.periods import ALL
from shardboard.domain.ports import AggregateState, CounterReads, PeriodKey
from shardboard.domain.validation import BadInput
from shardboard.services.aggregating import AggregatorBoard, apply_deltas, join_indexes, note_changes
from shardboard.services.takedowns import affected_periods
from shardboard.settings import Settings

# Fresh reads and conditional writes a history restore tries before it reports contention (each refusal means the
# aggregate moved meanwhile, which a busy item does every batch window).
MAX_RESTORE_ATTEMPTS = 10
# Segments of the parallel scan, and the number of repairs run at once.
DEFAULT_SEGMENTS = 8
# (anchor bucket, write shard) -> the counter's value on one board.
Counters = dict[tuple[str, int], int]
# The deleted ids (ItemCatalog.denied): eventually consistent (False) or strongly consistent (True).
Denied = Callable[[bool], frozenset[str]]


def no_deletes(consistent: bool) -> frozenset[str]:
    return frozenset()


@dataclass
class Skips:
    """Base counters a repair left alone because the aggregator would not count them either (an id or a board name
    the API refuses, a bucket out of range: domain/aggregating/countable.py), or records it could not decode: per
    reason, how many and the first one's detail. A repair reports them and goes on."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, refusal: Refusal) -> None:
        self.counts[refusal.reason] = self.counts.get(refusal.reason, 0) + 1
        self.examples.setdefault(refusal.reason, refusal.detail)

    def merge(self, other: Skips) -> None:
        for reason, count in other.counts.items():
            self.counts[reason] = self.counts.get(reason, 0) + count
            self.examples.setdefault(reason, other.examples[reason])

    def __bool__(self) -> bool:
        return bool(self.counts)

    def as_json(self) -> dict[str, Any]:
        counts = sorted(self.counts.items())
        return {reason: {"count": count, "first": self.examples[reason]} for reason, count in counts}


class CounterRules:
    """The aggregator's rules for one counter (:mod:`shardboard.domain.aggregating.countable`), each bucket's verdict
    kept: a scan meets a handful of buckets many times."""

    def __init__(self, settings: Settings) -> None:
        self.periods = settings.policy.periods
        self.buckets: dict[str, Refusal | None] = {}

    def item(self, item_id: str, bucket: str) -> Refusal | None:
        """Why no counter of ``item_id`` in ``bucket`` is counted, or None."""
        refusal = id_refusal(item_id)
        if refusal is None and bucket not in self.buckets:
            self.buckets[bucket] = bucket_refusal(self.periods, bucket)
        return refusal or self.buckets[bucket]

    @staticmethod
    def board(board_name: str) -> Refusal | None:
        """Why a counter on ``board_name`` is not counted, or None."""
        return None if board_name == GLOBAL_BOARD else board_refusal(board_name)


def erase_deleted(
    board: AggregatorBoard, settings: Settings, repaired: Iterable[tuple[str, str]], denied: Denied
) -> int:
    """Erase what the repairs wrote for items deleted while they ran, as the aggregator does after its writes: either
    this strongly consistent read sees the tombstone, or the delete's own erase comes after the repairs' writes."""
    now_denied = denied(True)
    gone = sorted({pair for pair in repaired if pair[1] in now_denied})
    moment = datetime.now(UTC)
    for board_name, item_id in gone:
        periods = [p for p in affected_periods(board, settings, item_id, moment) if p.board == board_name]
        board.erase(board_name, item_id, periods)
    return len(gone)


@dataclass(frozen=True)
class Repair:
    """What repairing one (board, item) did."""

    item_id: str
    views_added: int = 0
    writes: int = 0
    joined_index: bool = False
    ahead: bool = False  # some applied value is past its counter: the base table was lowered (a broken precondition)
    board: str = "global"
    rebuilt: bool = False  # the aggregate had been lost: the views of its surviving past entries were added back


def repair_item(
    board: AggregatorBoard, settings: Settings, board_name: str, item_id: str, counters: Counters
) -> Repair:
    """Bring one (board, item) up to its base counters in every period, exactly once (see the module docstring)."""
    state = board.state(board_name, item_id)
    steps = [(board_name, item_id, bucket, shard, 0, value) for (bucket, shard), value in counters.items() if value]
    outcome = apply_deltas(board, fold(steps), replace(settings, write_concurrency=1))
    if outcome.failures:
        raise next(iter(outcome.failures.values()))
    restored, periods = restore_history(board, settings, board_name, item_id, {bucket for bucket, _ in counters})
    outcome.changed.update(periods)
    # The periods it changed (or found changed by a delivery that may have died before its marks) get refreshed.
    note_changes(board, outcome, settings, int(time.time()))
    ahead = state.bucket is not None and any(
        applied > counters.get((state.bucket, shard), 0) for shard, applied in state.applied.items()
    )
    return Repair(
        item_id,
        outcome.views_added + restored.get(ALL, 0),
        outcome.aggregate_writes + bool(restored),
        outcome.index_joins > 0,
        ahead,
        board_name,
        bool(restored),
    )


def restore_history(
    board: AggregatorBoard, settings: Settings, board_name: str, item_id: str, buckets: Iterable[str]
) -> tuple[dict[str, int], list[PeriodKey]]:
    """Give an aggregate back the views of its surviving past entries that it lacks; returns what was added, per
    kind (``"all"``: all-time views), and the periods whose counts that changed.

    A whole aggregate holds, in all time and in each current period, its applied values plus its past anchor
    entries in that period (a late move changes an entry and the aggregate in one transaction, a roll archives
    before it moves on), so it holds less only when it was lost and recreated from its current bucket. The entries
    and the aggregate are read apart: the write is conditioned on the aggregate's bucket and all-time views as read,
    which every move, late move and roll changes, and is retried on a fresh read when refused.
    """
    buckets = sorted(set(buckets))
    for _ in range(MAX_RESTORE_ATTEMPTS):
        state = board.state(board_name, item_id)
        if state.bucket is None:
            return {}, []
        past = {
            bucket: board.entry_state(PeriodKey(board_name, settings.anchor, bucket), item_id).views
            for bucket in buckets
            if bucket < state.bucket
        }
        adds = {kind: count for kind, count in missing_history(state, past, settings).items() if count > 0}
        if not adds:
            return {}, []
        if board.add_history(board_name, item_id, state, adds):
            half_life = settings.trending_half_life_hours
            periods = list(periods_of(settings.policy.periods.kinds, board_name, state.bucket, half_life))
            ctx = Context(settings.policy, board.thresholds(periods))
            join_indexes(board, ctx, board_name, item_id, board.state(board_name, item_id))  # counts grew: sparse index
            return adds, periods
    raise AggregateContention(f"{board_name}/{item_id!r}: {MAX_RESTORE_ATTEMPTS} history restores lost the race")


def missing_history(state: AggregateState, past: Mapping[str, int], settings: Settings) -> dict[str, int]:
    """Per kind, the views of the past anchor entries ``past`` (bucket -> views, buckets older than the aggregate's)
    that the aggregate does not hold, in the kind's unit (a trending score weighs each bucket's views): 0 for a
    whole aggregate, negative when entries expired."""
    current = sum(state.applied.values())
    assert state.bucket is not None
    periods = settings.policy.periods
    missing = {ALL: sum(past.values()) - (state.views - current)}
    for kind in periods.coarse:  # the anchor's current period is the aggregate's own bucket: no entry lies in it
        period = periods.bucket(kind, state.bucket)
        held = sum(
            periods.increment(kind, bucket, views)
            for bucket, views in past.items()
            if periods.bucket(kind, bucket) == period
        )
        missing[kind] = held - (state.count(kind) - periods.increment(kind, state.bucket, current))
    return missing


# ----------------------------------------------------------------------------------------------- rebuild
@dataclass
class RebuildProgress:
    """Totals of a rebuild so far. A rebuild is idempotent: an interrupted one is resumed by running it again."""

    segments: int
    counters_scanned: int = 0
    items_repaired: int = 0
    views_added: int = 0
    index_joins: int = 0
    aggregates_rebuilt: int = 0
    ahead: list[str] = field(default_factory=list)
    finished: bool = False
    skipped: Skips = field(default_factory=Skips)  # counters the aggregator would not count: left alone, reported
    # "<board> <item>" -> the error its repair raised (a count DynamoDB cannot store...): the others go on.
    failed: dict[str, str] = field(default_factory=dict)

    @classmethod
    def fresh(cls, segments: int) -> RebuildProgress:
        return cls(segments)

    def as_json(self) -> dict[str, Any]:
        return {
            "segments": self.segments,
            "counters_scanned": self.counters_scanned,
            "items_repaired": self.items_repaired,
            "views_added": self.views_added,
            "index_joins": self.index_joins,
            "aggregates_rebuilt": self.aggregates_rebuilt,
            "ahead": self.ahead,
            "finished": self.finished,
            "skipped": self.skipped.as_json(),
            "failed": self.failed,
        }


# Called after every repaired (board, item), with the progress so far (under a lock): update a progress bar.
OnPage = Callable[[RebuildProgress], None]


def rebuild(
    views: CounterReads,
    board: AggregatorBoard,
    settings: Settings,
    progress: RebuildProgress,
    on_page: OnPage | None = None,
    *,
    denied: Denied = no_deletes,
) -> RebuildProgress:
    """Repair every (board, item) of the base table: a parallel segmented scan of every counter, then one repair
    per (board, item) with all its counters (a lost aggregate needs all of them, oldest bucket first). Deleted
    items (``denied``) are left out: their counters stay in the base table, never counted again. So are counters the
    aggregator would skip (``progress.skipped``)."""
    rows = views.scan_counters_all(progress.segments)
    progress.counters_scanned = len(rows)
    deleted = denied(False)
    rules = CounterRules(settings)
    grouped: dict[tuple[str, str], Counters] = defaultdict(dict)
    for item, bucket, shard, board_name, value in rows:
        if item in deleted:
            continue
        refusal = rules.item(item, bucket) or rules.board(board_name)
        if refusal is not None:
            progress.skipped.add(refusal)
            continue
        grouped[(board_name, item)][(bucket, shard)] = value
    lock = threading.Lock()

    def repair(key: tuple[str, str]) -> None:
        try:
            done = repair_item(board, settings, key[0], key[1], grouped[key])
        except Exception as error:  # this (board, item) only, as the aggregator fails one item, never its batch
            with lock:
                progress.failed[f"{key[0]} {key[1]}"] = repr(error)
            return
        with lock:
            progress.items_repaired += 1
            progress.views_added += done.views_added
            progress.index_joins += done.joined_index
            progress.aggregates_rebuilt += done.rebuilt
            if done.ahead:
                progress.ahead.append(f"{done.board} {done.item_id}")
            if on_page:
                on_page(progress)

    with ThreadPoolExecutor(max_workers=max(1, progress.segments)) as pool:
        futures = [pool.submit(repair, key) for key in sorted(grouped)]
        try:
            for future in futures:
                future.result()  # re-raise the first failure
        except BaseException:
            pool.shutdown(cancel_futures=True)  # an interrupted rebuild stops: the repairs not started never run
            raise
    erase_deleted(board, settings, grouped, denied)
    progress.finished = True
    return progress


# ----------------------------------------------------------------------------------------------- redrive
@dataclass(frozen=True)
class BatchRange:
    """A failure destination's ``DDBStreamBatchInfo``: which records of which stream shard never got applied."""

    stream_arn: str
    shard_id: str
    start: str
    end: str

    @classmethod
    def of(cls, letter: Mapping[str, Any]) -> BatchRange:
        info = letter["DDBStreamBatchInfo"]
        return cls(info["streamArn"], info["shardId"], info["startSequenceNumber"], info["endSequenceNumber"])


def parse_letters(text: str, source: str = "input") -> list[dict[str, Any]]:
    """Failure destination messages, one JSON object per line (blank lines ignored); refuses anything else."""
    letters = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            letter = json.loads(line)
            BatchRange.of(letter)
            int(letter["DDBStreamBatchInfo"]["startSequenceNumber"])
            int(letter["DDBStreamBatchInfo"]["endSequenceNumber"])
        except (ValueError, KeyError, TypeError) as error:
            raise BadInput(
                f"{source} line {number} is not a failure destination message with DDBStreamBatchInfo ({error!r})"
            ) from None
        letters.append(letter)
    return letters


@dataclass
class RedriveResult:
    batch: BatchRange
    records: int = 0
    items: list[str] = field(default_factory=list)
    # The base counters each item's records were on: (anchor bucket, write shard), per item.
    shards: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    repairs: list[Repair] = field(default_factory=list)
    expired: bool = False  # the range fell off the stream's 24-hour retention: only `rebuild` can repair it
    skipped: Skips = field(default_factory=Skips)  # records and counters the aggregator would not count
    failed: dict[str, str] = field(default_factory=dict)  # "<board> <item>" -> the error its repair raised

    @property
    def views_added(self) -> int:
        return sum(r.views_added for r in self.repairs)


def items_in_range(
    streams: Any, batch: BatchRange, rules: CounterRules | None = None, skipped: Skips | None = None
) -> tuple[dict[str, set[tuple[str, int]]], int] | None:
    """The items the records of ``batch`` touched (stream order), each with the base counters (bucket, write shard)
    its records were on, and how many records; None when the range is no longer retained. Records the aggregator
    would skip (``rules``) are noted in ``skipped`` instead."""
    try:
        iterator = streams.get_shard_iterator(
            StreamArn=batch.stream_arn,
            ShardId=batch.shard_id,
            ShardIteratorType="AT_SEQUENCE_NUMBER",
            SequenceNumber=batch.start,
        ).get("ShardIterator")
    except ClientError as error:
        if error_code(error) in ("TrimmedDataAccessException", "ResourceNotFoundException"):
            return None
        raise
    items: dict[str, set[tuple[str, int]]] = {}
    records, end = 0, int(batch.end)
    while iterator:
        response = streams.get_records(ShardIterator=iterator, Limit=1000)
        page = response.get("Records", [])
        for record in page:
            if int(record["dynamodb"]["SequenceNumber"]) > end:
                return items, records
            records += 1
            counter = _counter_of(record)
            if isinstance(counter, Refusal):
                if skipped is not None:
                    skipped.add(counter)
                continue
            if counter is None:
                continue
            refusal = rules.item(counter[0], counter[1]) if rules else None
            if refusal is not None:
                if skipped is not None:
                    skipped.add(refusal)
                continue
            items.setdefault(counter[0], set()).add((counter[1], counter[2]))
        iterator = response.get("NextShardIterator") if page else None
    return items, records


def _counter_of(record: Mapping[str, Any]) -> tuple[str, str, int] | Refusal | None:
    """The item, anchor bucket and write shard a raw stream record counts for, None for a record that changes no
    count, or a Refusal for one that cannot be decoded: the aggregator's own decoder, with its verdicts."""
    try:
        steps = counter_steps(record)
    except UnexpectedRecord:
        return None  # dedupe markers, rate allowances and the like: the event source filter drops them
    except Exception as error:  # an undecodable image, as the aggregator skips it
        return Refusal("malformed", repr(error))
    return (steps[0][1], steps[0][2], steps[0][3]) if steps else None


def redrive(
    views: CounterReads,
    board: AggregatorBoard,
    streams: Any,
    settings: Settings,
    letters: Iterable[Mapping[str, Any]],
    *,
    concurrency: int = DEFAULT_SEGMENTS,
    denied: Denied = no_deletes,
) -> list[RedriveResult]:
    """Repair exactly the items the failed batches touched, on every board their counters count on; an item in
    several batches is repaired once, on every base counter its records were on in any of the batches. Deleted items
    (``denied``) are not repaired: the aggregator would have skipped their counters.
    """
    results = [RedriveResult(BatchRange.of(letter)) for letter in letters]
    shards: dict[str, set[tuple[str, int]]] = {}
    first_batch: dict[str, RedriveResult] = {}  # a repair is reported under the first batch naming its item
    rules = CounterRules(settings)
    for result in results:
        found = items_in_range(streams, result.batch, rules, result.skipped)
        if found is None:
            result.expired = True
            continue
        result.shards, result.records = found
        result.items = list(result.shards)
        for item, item_shards in result.shards.items():
            shards.setdefault(item, set()).update(item_shards)
            first_batch.setdefault(item, result)

    deleted = denied(False)
    for item in deleted & shards.keys():
        del shards[item]

    def repair(item: str) -> tuple[list[Repair], Skips, dict[str, str]]:
        by_board: dict[str, Counters] = defaultdict(dict)
        skipped, failed = Skips(), {}
        for (bucket, shard), counters in views.counters(item, shards[item]).items():
            for board_name, value in counters.items():
                refusal = rules.board(board_name)
                if refusal is None:
                    by_board[board_name][(bucket, shard)] = value
                else:
                    skipped.add(refusal)
        repairs = []
        for name, found in sorted(by_board.items()):
            try:
                repairs.append(repair_item(board, settings, name, item, found))
            except Exception as error:  # this (board, item) only: the other repairs go on
                failed[f"{name} {item}"] = repr(error)
        return repairs, skipped, failed

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(shards)))) as pool:
        for item, (done, skipped, failed) in zip(list(shards), pool.map(repair, list(shards)), strict=True):
            first_batch[item].skipped.merge(skipped)
            first_batch[item].failed.update(failed)
            for one in done:
                first_batch[one.item_id].repairs.append(one)
    erase_deleted(board, settings, [(r.board, r.item_id) for result in results for r in result.repairs], denied)
    return results
