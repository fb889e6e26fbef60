"""Recovery without a runbook: rebuild aggregates from the base table, redrive what the failure destination holds.

Both repair one (board, item) the same way (:func:`repair_item`): read its base counters (the truth) and feed them
to the aggregator's own code as counter steps from 0 to their value (``apply_deltas``). Every compare-and-set then
finds what is applied and moves it on to the value read, bucket by bucket, oldest first. A counter value read here is
one the counter really had, so the invariant of docs/exactly-once.md holds; a stream record delivered later is
absorbed as a replay, and a record applied meanwhile makes the compare-and-set refuse and catch up. So repairs are
safe while traffic flows and safe to run twice.

A lost aggregate is rebuilt with its past entries: the all-time count of an aggregate includes the views of its past
anchor buckets, which their entries account for, so the repair removes that item's entries and replays every bucket
(docs/boards-and-periods.md, "Recovery").
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.dynamodb import error_code
from shardboard.adapters.stream_records import UnexpectedRecord, view_records
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.aggregation import apply_deltas, note_changes
from shardboard.domain.batch import fold
from shardboard.domain.periods import ALL, coarser_bucket
from shardboard.domain.ports import PeriodKey
from shardboard.domain.validation import BadInput
from shardboard.settings import Settings

# Segments of the parallel scan, and the number of repairs run at once.
DEFAULT_SEGMENTS = 8
# (anchor bucket, write shard) -> the counter's value on one board.
Counters = dict[tuple[str, int], int]


@dataclass(frozen=True)
class Repair:
    """What repairing one (board, item) did."""

    item_id: str
    views_added: int = 0
    writes: int = 0
    joined_index: bool = False
    ahead: bool = False  # some applied value is past its counter: the base table was lowered (a broken precondition)
    board: str = "global"
    rebuilt: bool = False  # the aggregate was missing: its past entries were removed and every bucket replayed


def repair_item(board: BoardStore, settings: Settings, board_name: str, item_id: str, counters: Counters) -> Repair:
    """Bring one (board, item) up to its base counters in every period, exactly once (see the module docstring)."""
    state = board.state(board_name, item_id)
    buckets = {bucket for bucket, _ in counters}
    lost = state.bucket is None and state.views == 0
    rebuilt = lost or _lost_history(board, settings, board_name, item_id, buckets)
    if rebuilt:
        for period in _periods(settings, board_name, buckets):
            board.delete_entry(period, item_id)
    steps = [(board_name, item_id, bucket, shard, 0, value) for (bucket, shard), value in counters.items() if value]
    outcome = apply_deltas(board, fold(steps), replace(settings, write_concurrency=1))
    if outcome.failures:
        raise next(iter(outcome.failures.values()))
    # The periods it changed (or found changed by a delivery that may have died before its marks) get refreshed.
    note_changes(board, outcome, settings, int(time.time()))
    ahead = state.bucket is not None and any(
        applied > counters.get((state.bucket, shard), 0) for shard, applied in state.applied.items()
    )
    return Repair(
        item_id,
        outcome.views_added,
        outcome.aggregate_writes,
        outcome.index_joins > 0,
        ahead,
        board_name,
        rebuilt,
    )


def _lost_history(board: BoardStore, settings: Settings, board_name: str, item_id: str, buckets: set[str]) -> bool:
    """An aggregate lost and recreated (by the stream) before this repair read it: its all-time views lack the past
    anchor buckets whose entries survived. A whole aggregate always holds its applied values plus those entries (a
    late move changes an entry and the aggregate in one transaction), so it holds less only when it lost them.

    Entries and aggregate are read apart: the aggregate is read again, and the test only counts when it did not move.
    """
    for _ in range(3):
        state = board.state(board_name, item_id)
        if state.bucket is None:
            return False
        past = [PeriodKey(board_name, settings.anchor, b) for b in sorted(buckets) if b < state.bucket]
        if not past:
            return False
        held = sum(board.entry_state(period, item_id).views for period in past)
        if board.state(board_name, item_id) == state:
            return state.views < sum(state.applied.values()) + held
    return False


def _periods(settings: Settings, board: str, buckets: Iterable[str]) -> set[PeriodKey]:
    """Every past entry an item's anchor buckets can have produced on ``board``."""
    return {
        PeriodKey(board, kind, coarser_bucket(kind, settings.anchor, bucket))
        for bucket in buckets
        for kind in settings.periods
        if kind != ALL
    }


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
        }


# Called after every repaired (board, item), with the progress so far (under a lock): update a progress bar.
OnPage = Callable[[RebuildProgress], None]


def rebuild(
    views: ViewStore,
    board: BoardStore,
    settings: Settings,
    progress: RebuildProgress,
    on_page: OnPage | None = None,
) -> RebuildProgress:
    """Repair every (board, item) of the base table: a parallel segmented scan of every counter, then one repair
    per (board, item) with all its counters (a lost aggregate needs all of them, oldest bucket first)."""
    rows = views.scan_counters_all(progress.segments)
    progress.counters_scanned = len(rows)
    grouped: dict[tuple[str, str], Counters] = defaultdict(dict)
    for item, bucket, shard, board_name, value in rows:
        grouped[(board_name, item)][(bucket, shard)] = value
    lock = threading.Lock()

    def repair(key: tuple[str, str]) -> None:
        done = repair_item(board, settings, key[0], key[1], grouped[key])
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

    @property
    def views_added(self) -> int:
        return sum(r.views_added for r in self.repairs)


def items_in_range(streams: Any, batch: BatchRange) -> tuple[dict[str, set[tuple[str, int]]], int] | None:
    """The items the records of ``batch`` touched (stream order), each with the base counters (bucket, write shard)
    its records were on, and how many records; None when the range is no longer retained."""
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
            if counter is not None:
                items.setdefault(counter[0], set()).add((counter[1], counter[2]))
        iterator = response.get("NextShardIterator") if page else None
    return items, records


_deserializer = TypeDeserializer()


def _counter_of(record: Mapping[str, Any]) -> tuple[str, str, int] | None:
    """The item, anchor bucket and write shard a raw stream record counts for, or None for a record that changes no
    count (as the aggregator)."""
    stream = record.get("dynamodb", {})

    def image(name: str) -> dict[str, Any] | None:
        raw = stream.get(name)
        return None if raw is None else {k: _deserializer.deserialize(v) for k, v in raw.items()}

    try:
        steps = view_records(record.get("eventName"), image("NewImage"), image("OldImage"), "")
    except (UnexpectedRecord, TypeError, ValueError):
        return None
    return (steps[0].item_id, steps[0].bucket, steps[0].shard) if steps else None


def redrive(
    views: ViewStore,
    board: BoardStore,
    streams: Any,
    settings: Settings,
    letters: Iterable[Mapping[str, Any]],
    *,
    concurrency: int = DEFAULT_SEGMENTS,
) -> list[RedriveResult]:
    """Repair exactly the items the failed batches touched, on every board their counters count on; an item in
    several batches is repaired once, on every base counter its records were on in any of the batches.
    """
    results = [RedriveResult(BatchRange.of(letter)) for letter in letters]
    shards: dict[str, set[tuple[str, int]]] = {}
    first_batch: dict[str, RedriveResult] = {}  # a repair is reported under the first batch naming its item
    for result in results:
        found = items_in_range(streams, result.batch)
        if found is None:
            result.expired = True
            continue
        result.shards, result.records = found
        result.items = list(result.shards)
        for item, item_shards in result.shards.items():
            shards.setdefault(item, set()).update(item_shards)
            first_batch.setdefault(item, result)

    def repair(item: str) -> list[Repair]:
        by_board: dict[str, Counters] = defaultdict(dict)
        for (bucket, shard), counters in views.counters(item, shards[item]).items():
            for board_name, value in counters.items():
                by_board[board_name][(bucket, shard)] = value
        return [repair_item(board, settings, name, item, found) for name, found in sorted(by_board.items())]

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(shards)))) as pool:
        for done in pool.map(repair, list(shards)):
            for one in done:
                first_batch[one.item_id].repairs.append(one)
    return results
