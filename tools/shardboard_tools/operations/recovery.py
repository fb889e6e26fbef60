"""Recovery without a runbook: rebuild aggregates from the base table, redrive what the failure destination holds.

Both repair one item the same way (:func:`repair_item`): read the item's base counters (the truth) and move each
``applied_k`` forward to them through the aggregator's own compare-and-set (``apply_item``). A counter value read
here is one the counter really had, so the invariant of docs/exactly-once.md holds; a stream record delivered later
finds ``applied_k`` already at or past its NEW value and is absorbed as a replay, and a record applied meanwhile makes
the compare-and-set refuse and catch up from what it finds. So repairs are safe while traffic flows, safe to run
twice, and a wiped aggregate simply starts again from 0.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.dynamodb import Item, error_code
from shardboard.adapters.stream_records import UnexpectedRecord, view_record
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.aggregation import ItemOutcome, apply_item
from shardboard.domain.batch import ItemDelta, ShardStep
from shardboard.domain.sharding import board_shard_of, board_shard_value
from shardboard.domain.validation import BadInput
from shardboard.settings import Settings

# Segments of the parallel scan: each is read by its own thread, so this is also the rebuild's concurrency.
DEFAULT_SEGMENTS = 8


@dataclass(frozen=True)
class Repair:
    """What repairing one item did."""

    item_id: str
    views_added: int = 0
    writes: int = 0
    joined_index: bool = False
    ahead: bool = False  # some applied_k is past its counter: the base table was lowered (a broken precondition)


@dataclass(frozen=True)
class Placement:
    """Where aggregates go in the sparse GSI right now: the published threshold and the board layout."""

    threshold: int
    board_shards: int

    @classmethod
    def read(cls, board: BoardStore, settings: Settings) -> Placement:
        state = board.get_board_state(settings.board, consistent=True)
        threshold = state.threshold if settings.sparse_index else 0
        return cls(threshold, state.shards or settings.board_shards)

    def key(self, item_id: str, settings: Settings) -> str:
        return board_shard_value(settings.board, board_shard_of(item_id, self.board_shards), self.board_shards)


def repair_item(
    views: ViewStore,
    board: BoardStore,
    settings: Settings,
    placement: Placement,
    item_id: str,
    *,
    shards: Iterable[int] = (),
) -> Repair:
    """Bring one aggregate up to its base counters (and into the GSI if it reached the threshold), exactly once.

    ``shards`` adds counters beyond the template's WriteShards (an item that grew, or a counter a scan just saw).
    """
    state = board.state(item_id)
    wanted = set(range(settings.write_shards)) | set(state.applied) | set(shards)
    counts = views.shard_counts(item_id, wanted)
    # The fold's view of "this batch": from what the aggregate holds to what the base table holds, per shard.
    delta = ItemDelta(item_id, {k: ShardStep(state.applied.get(k, 0), c) for k, c in counts.items()})
    outcome: ItemOutcome = apply_item(board, delta, placement.key(item_id, settings), placement.threshold)
    joined, writes = outcome.joined_index, outcome.writes
    if outcome.writes == 0 and not state.in_index and state.views >= placement.threshold and state.applied:
        # Already counted but left out of the index (a crash between the count and the join): join it now.
        # False when another writer keyed it first (it keeps that key): nothing for this repair to report.
        joined, writes = board.join_index(item_id, placement.key(item_id, settings)), writes + 1
    ahead = any(applied > counts.get(k, 0) for k, applied in state.applied.items())
    return Repair(item_id, outcome.views_added, writes, joined, ahead)


# ----------------------------------------------------------------------------------------------- rebuild
@dataclass
class RebuildProgress:
    """Totals of a rebuild so far; ``cursors`` is where each segment resumes ({}: its start, None: finished)."""

    segments: int
    cursors: dict[int, Item | None] = field(default_factory=dict)
    counters_scanned: int = 0
    items_repaired: int = 0
    views_added: int = 0
    index_joins: int = 0
    ahead: list[str] = field(default_factory=list)

    @classmethod
    def fresh(cls, segments: int) -> RebuildProgress:
        return cls(segments, {segment: {} for segment in range(segments)})

    @property
    def finished(self) -> bool:
        return all(cursor is None for cursor in self.cursors.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "segments": self.segments,
            "cursors": {str(s): c for s, c in self.cursors.items()},
            "counters_scanned": self.counters_scanned,
            "items_repaired": self.items_repaired,
            "views_added": self.views_added,
            "index_joins": self.index_joins,
            "ahead": self.ahead,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RebuildProgress:
        return cls(
            int(data["segments"]),
            {int(s): c for s, c in data["cursors"].items()},
            int(data["counters_scanned"]),
            int(data["items_repaired"]),
            int(data["views_added"]),
            int(data["index_joins"]),
            list(data["ahead"]),
        )


# Called after every scanned page, with the progress so far (under a lock): persist it, update a progress bar.
OnPage = Callable[[RebuildProgress], None]


def rebuild(
    views: ViewStore,
    board: BoardStore,
    settings: Settings,
    progress: RebuildProgress,
    on_page: OnPage | None = None,
) -> RebuildProgress:
    """Repair every item of the base table: a parallel segmented scan, each segment resumed from its cursor.

    Every counter seen leads to its item's repair (once per item and shard per run; a repeat is a no-op), so an
    interrupted run resumed from the saved cursors repairs everything, and items written meanwhile are the stream's.
    """
    placement = Placement.read(board, settings)
    lock = threading.Lock()
    seen: dict[str, set[int]] = {}

    def scan_segment(segment: int) -> None:
        cursor = progress.cursors[segment]
        while cursor is not None:
            rows, cursor = views.scan_counters(segment, progress.segments, cursor or None)
            repairs = [
                repair_item(views, board, settings, placement, item, shards=shards)
                for item, shards in _unseen(rows, seen, lock)
            ]
            with lock:
                progress.cursors[segment] = cursor
                progress.counters_scanned += len(rows)
                progress.items_repaired += len(repairs)
                progress.views_added += sum(r.views_added for r in repairs)
                progress.index_joins += sum(r.joined_index for r in repairs)
                progress.ahead.extend(r.item_id for r in repairs if r.ahead and r.item_id not in progress.ahead)
                if on_page:
                    on_page(progress)

    pending = [s for s, cursor in progress.cursors.items() if cursor is not None]
    if pending:
        with ThreadPoolExecutor(max_workers=len(pending)) as pool:
            list(pool.map(scan_segment, pending))  # list(): re-raise the first failure
    return progress


def _unseen(
    rows: Iterable[tuple[str, int, int]], seen: dict[str, set[int]], lock: threading.Lock
) -> list[tuple[str, set[int]]]:
    """Items of a page whose counter was not covered by an earlier repair of this run, with the shards seen."""
    fresh: dict[str, set[int]] = {}
    with lock:
        for item, shard, _ in rows:
            done = seen.setdefault(item, set())
            if shard not in done:
                fresh.setdefault(item, set()).add(shard)
        for item, shards in fresh.items():
            seen[item] |= shards
    return list(fresh.items())


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
    # The write shards each item's records were on: with dynamic sharding, shards up to MaxWriteShards.
    shards: dict[str, set[int]] = field(default_factory=dict)
    repairs: list[Repair] = field(default_factory=list)
    expired: bool = False  # the range fell off the stream's 24-hour retention: only `rebuild` can repair it

    @property
    def views_added(self) -> int:
        return sum(r.views_added for r in self.repairs)


def items_in_range(streams: Any, batch: BatchRange) -> tuple[dict[str, set[int]], int] | None:
    """The items the records of ``batch`` touched (stream order), each with the write shards its records were on, and
    how many records; None when the range is no longer retained."""
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
    items: dict[str, set[int]] = {}
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
                items.setdefault(counter[0], set()).add(counter[1])
        iterator = response.get("NextShardIterator") if page else None
    return items, records


_deserializer = TypeDeserializer()


def _counter_of(record: Mapping[str, Any]) -> tuple[str, int] | None:
    """The item and write shard a raw stream record counts for, or None for a record that changes no count (as the
    aggregator)."""
    stream = record.get("dynamodb", {})

    def image(name: str) -> dict[str, Any] | None:
        raw = stream.get(name)
        return None if raw is None else {k: _deserializer.deserialize(v) for k, v in raw.items()}

    try:
        step = view_record(record.get("eventName"), image("NewImage"), image("OldImage"), "")
        return step.item_id, step.shard
    except (UnexpectedRecord, TypeError, ValueError):
        return None


def redrive(
    views: ViewStore,
    board: BoardStore,
    streams: Any,
    settings: Settings,
    letters: Iterable[Mapping[str, Any]],
    *,
    concurrency: int = DEFAULT_SEGMENTS,
) -> list[RedriveResult]:
    """Repair exactly the items the failed batches touched; an item in several batches is repaired once.

    Each item is repaired on every write shard its records were on, in any of the batches: a shard at or above
    WriteShards (an item grown by dynamic sharding) that no record reached has no ``applied_k`` that would name it.
    """
    placement = Placement.read(board, settings)
    results = [RedriveResult(BatchRange.of(letter)) for letter in letters]
    shards: dict[str, set[int]] = {}
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

    def repair(item: str) -> Repair:
        return repair_item(views, board, settings, placement, item, shards=shards[item])

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(shards)))) as pool:
        for done in pool.map(repair, list(shards)):
            first_batch[done.item_id].repairs.append(done)
    return results
