"""The in-memory implementation of each port (``shardboard.domain.ports``), charging every request to a
CapacityEmulator: ``MemoryViewStore`` (ViewCounters), ``MemoryBoardStore`` (Board), ``MemoryShardMetadataStore``.

Items are kept in DynamoDB's wire format and every condition is the adapter's ConditionExpression evaluated in
Python, so the real domain code (recording, the batch fold, ``apply_batch``, ``take_snapshot``) decides every request
while the emulator prices it; tests/contract runs the same cases against these and the DynamoDB adapters. With a
``VirtualClock`` a benchmark runs hundreds of thousands of views in simulated time.

``MemoryViewStore.stream`` collects the base table's stream (NEW_AND_OLD_IMAGES) as Lambda delivers it, so the
real aggregator handler can consume it.
"""

from __future__ import annotations

import bisect
import functools
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from botocore.exceptions import ClientError

from shardboard.adapters.board_table import (
    BoardStore,
    aggregate_state,
    board_state_from_item,
    snapshot_from_item,
    snapshot_item,
)
from shardboard.adapters.dynamodb import Item, throttle_scope
from shardboard.adapters.keys import (
    BOARD_SHARD,
    BY_VIEWS_INDEX,
    ITEM_ID,
    LAST_UPDATED,
    MAX_SHARDS,
    NUMBER_OF_SHARDS,
    PK,
    QUIET_SINCE,
    REVIEWED_AT,
    REVIEWED_VIEWS,
    SHARD,
    SHARD_HISTORY,
    VIEWS,
    aggregate_pk,
    applied_attr,
    shards_pk,
    snapshot_pk,
    threshold_pk,
    view_pk,
)
from shardboard.adapters.shards_table import ShardMetadataStore, shard_metadata_from_item
from shardboard.adapters.views_table import ViewStore
from shardboard.domain import ports
from shardboard.domain.batch import ShardMove
from shardboard.domain.ports import AggregateState, BoardState, Cursor, MoveResult, ShardMetadata, Throttled
from shardboard_tools.capacity.emulator import CapacityEmulator, Charge
from shardboard_tools.capacity.schema import IndexSchema, TableSchema
from shardboard_tools.capacity.units import item_size, query_units, read_units

# A Query or Scan page stops at 1 MB of items read.
PAGE_BYTES = 1024 * 1024
STREAM_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/memory-views/stream/1970-01-01T00:00:00.000"


def views_schema(table: str) -> TableSchema:
    return TableSchema(table, PK)


def board_schema(table: str) -> TableSchema:
    """template.yaml's board table: the by-views GSI projects item_id (keys are always projected)."""
    return TableSchema(table, PK, None, (IndexSchema(BY_VIEWS_INDEX, BOARD_SHARD, VIEWS, frozenset({ITEM_ID})),))


_Method = TypeVar("_Method", bound=Callable[..., Any])


def metered(method: _Method) -> _Method:
    """Add the CPU time spent inside a store method to ``self.cpu_seconds``: in Lambda that time belongs to the
    DynamoDB client and the network, so the benchmark subtracts it from the aggregator's CPU per record.
    Accurate only when one thread uses the store (the benchmark runs the aggregator with write_concurrency=1)."""

    @functools.wraps(method)
    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return method(self, *args, **kwargs)
        finally:
            self.cpu_seconds += time.process_time() - started
            self.metered_calls += 1

    return cast(_Method, timed)


class _Calibration:
    cpu_seconds = 0.0
    metered_calls = 0

    @metered
    def nothing(self) -> None:
        """An empty metered call: what metering itself costs outside the window it measures."""


@functools.cache
def metering_overhead_seconds(calls: int = 20_000) -> float:
    """CPU seconds one metered call adds that ``cpu_seconds`` does not see (subtracted along with it)."""
    probe = _Calibration()
    started = time.process_time()
    for _ in range(calls):
        probe.nothing()
    return max(0.0, (time.process_time() - started - probe.cpu_seconds) / calls)


class MemoryTable:
    """One table's items (wire format) and the bookkeeping shared by both stores."""

    def __init__(self, schema: TableSchema, emulator: CapacityEmulator) -> None:
        self.schema = schema
        self.emulator = emulator
        self.items: dict[str, Item] = {}
        self.lock = threading.RLock()

    def write(self, operation: str, pk: str, new: Item | None) -> Item | None:
        """Replace item ``pk`` by ``new`` (None deletes) after the emulator admits the write; returns the old item."""
        old = self.items.get(pk)
        self.emulator.admit(operation, self.schema.write_charges({self.schema.hash_key: {"S": pk}}, old, new))
        if new is None:
            self.items.pop(pk, None)
        else:
            self.items[pk] = new
        return old

    def refuse(self, operation: str, pk: str) -> Item | None:
        """A failed condition still consumes write units (of the item as it stands) and changes nothing."""
        old = self.items.get(pk)
        self.emulator.admit(operation, self.schema.write_charges({self.schema.hash_key: {"S": pk}}, old, old))
        return old

    def read(self, operation: str, pk: str, consistent: bool) -> Item | None:
        item = self.items.get(pk)
        self.emulator.admit(
            operation, [Charge(self.schema.name, self.schema.name, pk, "read", read_units(item_size(item), consistent))]
        )
        return item

    def scan(self) -> list[Item]:
        """Every item, charged page by page (1 MB each) against the table-level limit only: a Scan spans partitions."""
        items = list(self.items.values())
        page: list[int] = []
        for item in items:
            page.append(item_size(item))
            if sum(page) >= PAGE_BYTES:
                self._charge_scan_page(page)
                page = []
        self._charge_scan_page(page)
        return items

    def _charge_scan_page(self, sizes: Sequence[int]) -> None:
        units = query_units(sizes, consistent=True)
        self.emulator.admit("Scan", [Charge(self.schema.name, self.schema.name, None, "read", units)])


class MemoryViewStore:
    """The base table in memory (the ViewCounters port): write-sharded counters plus their stream."""

    def __init__(self, emulator: CapacityEmulator, table: str = "memory-views") -> None:
        self.table = table
        self.cpu_seconds, self.metered_calls = 0.0, 0
        self.data = MemoryTable(views_schema(table), emulator)
        self.stream: list[dict[str, Any]] = []
        self._sequence = 0

    @metered
    def add_view(self, item_id: str, shard: int, count: int = 1) -> float:
        """``ADD views :count`` on one counter; a throttled write raises ``Throttled`` and changes nothing."""
        pk = view_pk(item_id, shard)
        with self.data.lock:
            old = self.data.items.get(pk)
            views = int(old[VIEWS]["N"]) + count if old else count
            new = {PK: {"S": pk}, VIEWS: {"N": str(views)}, ITEM_ID: {"S": item_id}, SHARD: {"N": str(shard)}}
            try:
                self.data.write("UpdateItem", pk, new)
            except ClientError as error:
                scope = throttle_scope(error)
                if scope is None:
                    raise
                raise Throttled(scope) from error
            self._emit(pk, old, new)
        return float(self.data.schema.write_charges({PK: {"S": pk}}, old, new)[0].units)

    def _emit(self, pk: str, old: Item | None, new: Item) -> None:
        self._sequence += 1
        change: dict[str, Any] = {
            "Keys": {PK: {"S": pk}},
            "NewImage": new,
            "SequenceNumber": f"{self._sequence:021d}",
            "SizeBytes": item_size(new) + item_size(old),
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        }
        if old is not None:
            change["OldImage"] = old
        self.stream.append(
            {
                "eventID": f"{self._sequence:x}",
                "eventName": "MODIFY" if old else "INSERT",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "dynamodb": change,
                "eventSourceARN": STREAM_ARN,
            }
        )

    def take_stream(self, limit: int) -> list[dict[str, Any]]:
        """Remove and return the oldest ``limit`` stream records (one Lambda batch)."""
        with self.data.lock:
            batch, self.stream = self.stream[:limit], self.stream[limit:]
        return batch

    @metered
    def item_total(self, item_id: str, write_shards: int) -> int:
        """Exact views of one item: the sum of its shard counters (strongly consistent)."""
        return sum(self._counters(item_id, range(write_shards)).values())

    @metered
    def shard_counts(self, item_id: str, shards: Iterable[int]) -> dict[int, int]:
        """The counters of ``item_id`` on ``shards``; shards never written are left out."""
        return self._counters(item_id, sorted(set(shards)))

    def _counters(self, item_id: str, shards: Iterable[int]) -> dict[int, int]:
        with self.data.lock:
            items = {k: self.data.read("BatchGetItem", view_pk(item_id, k), True) for k in shards}
        return {k: int(item[VIEWS]["N"]) for k, item in items.items() if item}

    @metered
    def scan_totals(self, segments: int = 4) -> dict[str, int]:
        totals: dict[str, int] = {}
        with self.data.lock:
            for item in self.data.scan():
                name = item[ITEM_ID]["S"]
                totals[name] = totals.get(name, 0) + int(item[VIEWS]["N"])
        return totals


class MemoryBoardStore:
    """The board table in memory (the Board port): aggregates, the sharded by-views GSI, snapshot and threshold."""

    def __init__(self, emulator: CapacityEmulator, table: str = "memory-board") -> None:
        self.table = table
        self.cpu_seconds, self.metered_calls = 0.0, 0
        self.data = MemoryTable(board_schema(table), emulator)
        self.index = self.data.schema.index(BY_VIEWS_INDEX)
        # GSI partitions: board shard -> pk -> views, plus each partition's entries sorted best first (cached).
        self._partitions: dict[str, dict[str, int]] = {}
        self._sorted: dict[str, list[tuple[int, str]]] = {}

    # -- aggregates
    @metered
    def move(self, item_id: str, moves: Sequence[ShardMove], board_shard: str | None) -> MoveResult:
        pk = aggregate_pk(item_id)
        with self.data.lock:
            old = self.data.items.get(pk)
            current = old or {}
            if any(_applied(current, m.shard) != (m.expected or None) for m in moves):
                refused = self.data.refuse("UpdateItem", pk)
                return MoveResult(applied=False, state=aggregate_state(refused) if refused is not None else None)
            new = dict(current)
            new[PK] = {"S": pk}
            new[ITEM_ID] = {"S": item_id}
            new[VIEWS] = {
                "N": str(int(current.get(VIEWS, {"N": "0"})["N"]) + sum(m.target - m.expected for m in moves))
            }
            for m in moves:
                new[applied_attr(m.shard)] = {"N": str(m.target)}
            if board_shard is not None and BOARD_SHARD not in current:  # if_not_exists: only reshard moves keys
                new[BOARD_SHARD] = {"S": board_shard}
            self._write_aggregate("UpdateItem", pk, new)
        return MoveResult(applied=True, state=aggregate_state(new))

    @metered
    def state(self, item_id: str) -> AggregateState:
        with self.data.lock:
            return aggregate_state(self.data.read("GetItem", aggregate_pk(item_id), consistent=True))

    @metered
    def join_index(self, item_id: str, board_shard: str) -> bool:
        """``attribute_exists(pk) AND attribute_not_exists(board_shard)``: an indexed item keeps its key."""
        pk = aggregate_pk(item_id)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is None or BOARD_SHARD in old:
                self.data.refuse("UpdateItem", pk)
                return False
            self._write_aggregate("UpdateItem", pk, {**old, BOARD_SHARD: {"S": board_shard}})
        return True

    @metered
    def aggregate_views(self, item_id: str) -> int | None:
        with self.data.lock:
            item = self.data.read("GetItem", aggregate_pk(item_id), consistent=False)
        return None if item is None else int(item[VIEWS]["N"])

    @metered
    def scan_aggregates(self, segments: int = 4) -> dict[str, tuple[int, bool]]:
        with self.data.lock:
            return {
                item[ITEM_ID]["S"]: (int(item[VIEWS]["N"]), BOARD_SHARD in item)
                for item in self.data.scan()
                if ITEM_ID in item
            }

    def _write_aggregate(self, operation: str, pk: str, new: Item) -> None:
        old = self.data.write(operation, pk, new)
        for item, add in ((old, False), (new, True)):
            if item and BOARD_SHARD in item:
                partition = self._partitions.setdefault(item[BOARD_SHARD]["S"], {})
                if add:
                    partition[pk] = int(item[VIEWS]["N"])
                else:
                    partition.pop(pk, None)
                self._sorted.pop(item[BOARD_SHARD]["S"], None)

    # -- the GSI
    @metered
    def query_shard(
        self, board_shard: str, limit: int, start: Cursor | None
    ) -> tuple[list[tuple[str, int]], Item | None]:
        """Like DynamoDB: best first, resumes after ``start``, returns a cursor whenever ``limit`` was reached."""
        with self.data.lock:
            ordered = self._sorted.get(board_shard)
            if ordered is None:
                members = self._partitions.get(board_shard, {})
                ordered = self._sorted[board_shard] = sorted((-views, pk) for pk, views in members.items())
            first = bisect.bisect_right(ordered, (-int(start[VIEWS]["N"]), start[PK]["S"])) if start else 0
            rows: list[tuple[str, int]] = []
            sizes: list[int] = []
            cursor: Item | None = None
            for negative_views, pk in ordered[first : first + limit]:
                entry = self.index.entry(self.data.items[pk], self.data.schema.keys) or {}
                rows.append((entry[ITEM_ID]["S"], -negative_views))
                sizes.append(item_size(entry))
                if len(rows) == limit or sum(sizes) >= PAGE_BYTES:
                    cursor = {PK: {"S": pk}, BOARD_SHARD: {"S": board_shard}, VIEWS: {"N": str(-negative_views)}}
                    break
            units = query_units(sizes, consistent=False)
            resource = self.data.schema.resource(self.index)
            self.data.emulator.admit("Query", [Charge(self.table, resource, board_shard, "read", units)])
        return rows, cursor

    # -- snapshot and threshold
    @metered
    def get_snapshot(self, board: str, consistent: bool = False) -> Item | None:
        with self.data.lock:
            item = self.data.read("GetItem", snapshot_pk(board), consistent)
        return None if item is None else snapshot_from_item(item)

    @metered
    def put_snapshot(self, snapshot: Mapping[str, Any], previous_version: int | None) -> bool:
        pk = snapshot_pk(snapshot["board"])
        with self.data.lock:
            old = self.data.items.get(pk)
            found = int(old["version"]["N"]) if old else None
            if found != previous_version:
                self.data.refuse("PutItem", pk)
                return False
            self.data.write("PutItem", pk, snapshot_item(snapshot))
        return True

    @metered
    def get_threshold(self, board: str) -> int:
        with self.data.lock:
            item = self.data.read("GetItem", threshold_pk(board), consistent=False)
        return int(item["threshold"]["N"]) if item and "threshold" in item else 0

    @metered
    def get_board_state(self, board: str, consistent: bool = False) -> BoardState:
        with self.data.lock:
            return board_state_from_item(self.data.read("GetItem", threshold_pk(board), consistent))

    @metered
    def raise_threshold(self, board: str, threshold: int) -> bool:
        pk = threshold_pk(board)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is not None and "threshold" in old and int(old["threshold"]["N"]) >= threshold:
                self.data.refuse("UpdateItem", pk)
                return False
            self.data.write("UpdateItem", pk, {**(old or {PK: {"S": pk}}), "threshold": {"N": str(threshold)}})
        return True

    def snapshot_item_size(self, board: str) -> int:
        """Bytes of the stored snapshot item: what one frontend read costs."""
        return item_size(self.data.items.get(snapshot_pk(board)))


def _applied(item: Mapping[str, Any], shard: int) -> int | None:
    value = item.get(applied_attr(shard))
    return int(value["N"]) if value else None


class MemoryShardMetadataStore:
    """The shard metadata table in memory (the ShardMetadataStore port), every GetItem and UpdateItem priced.

    Same conditions as the adapter's expressions (optimistic lock on ``last_updated``, server-side cooldown cutoff),
    so the viral ramp exercises the real races, and a hot metadata key would throttle.
    """

    def __init__(self, emulator: CapacityEmulator, table: str = "memory-shards") -> None:
        self.data = MemoryTable(TableSchema(table, PK), emulator)

    def get(self, item_id: str, consistent: bool = False) -> ShardMetadata | None:
        with self.data.lock:
            item = self.data.read("GetItem", shards_pk(item_id), consistent)
        return None if item is None else shard_metadata_from_item(item)

    def change_count(
        self,
        item_id: str,
        expected: ShardMetadata | None,
        count: int,
        now: int,
        *,
        cooldown_seconds: float,
        default: int,
    ) -> ShardMetadata | None:
        pk = shards_pk(item_id)
        with self.data.lock:
            old = self.data.items.get(pk)
            if not _condition_holds(old, expected, now, cooldown_seconds):
                self.data.refuse("UpdateItem", pk)
                return None
            history = set(old[SHARD_HISTORY]["SS"]) if old and SHARD_HISTORY in old else set()
            history.add(f"{now}:{count}")
            if expected is None:
                history.add(f"0:{default}")
            most = max(count, default if expected is None else expected.max_shards)
            new: dict[str, Any] = {
                **(old or {PK: {"S": pk}}),
                ITEM_ID: {"S": item_id},
                NUMBER_OF_SHARDS: {"N": str(count)},
                LAST_UPDATED: {"N": str(now)},
                MAX_SHARDS: {"N": str(most)},
                SHARD_HISTORY: {"SS": sorted(history)},
            }
            self.data.write("UpdateItem", pk, new)
        return shard_metadata_from_item(new)

    def note_review(self, metadata: ShardMetadata, views: int, now: int, quiet_since: int | None) -> None:
        pk = shards_pk(metadata.item_id)
        with self.data.lock:
            old = self.data.items[pk]
            new = {**old, REVIEWED_VIEWS: {"N": str(views)}, REVIEWED_AT: {"N": str(now)}}
            new.pop(QUIET_SINCE, None)
            if quiet_since is not None:
                new[QUIET_SINCE] = {"N": str(quiet_since)}
            self.data.write("UpdateItem", pk, new)

    def scan(self) -> list[ShardMetadata]:
        with self.data.lock:
            return [shard_metadata_from_item(item) for item in self.data.scan() if ITEM_ID in item]


def _condition_holds(old: dict[str, Any] | None, expected: ShardMetadata | None, now: int, cooldown: float) -> bool:
    """The ConditionExpression of ``adapters.shards_table.ShardMetadataStore.change_count``."""
    if expected is None:
        return old is None or LAST_UPDATED not in old
    if old is None or LAST_UPDATED not in old:
        return False
    last_updated = int(old[LAST_UPDATED]["N"])
    return (
        last_updated == expected.last_updated
        and int(old[NUMBER_OF_SHARDS]["N"]) == expected.number_of_shards
        and last_updated <= math.floor(now - cooldown)
    )


# The type checker holds both implementations of each port to it: a method missing or typed differently in either
# fails `make lint` (the behaviour is held to DynamoDB's by tests/contract).
IMPLEMENTATIONS: tuple[
    tuple[type[ports.ViewCounters], ...], tuple[type[ports.Board], ...], tuple[type[ports.ShardMetadataStore], ...]
] = (
    (MemoryViewStore, ViewStore),
    (MemoryBoardStore, BoardStore),
    (MemoryShardMetadataStore, ShardMetadataStore),
)
