"""In-memory ViewStore and BoardStore that charge every request to a CapacityEmulator.

They implement the methods of ``store.ViewStore`` / ``store.BoardStore`` that the domain code calls, with the same
signatures, results and error codes, on items kept in DynamoDB's wire format, so the real domain code (recording,
the batch fold, ``apply_batch``, ``take_snapshot`` / ``gather_top_n``) decides every request while the emulator
prices it. With a ``VirtualClock`` a benchmark runs hundreds of thousands of views in simulated time.

``MemoryViewStore.stream`` collects the base table's stream (NEW_AND_OLD_IMAGES) as Lambda delivers it, so the
real aggregator handler can consume it.
"""

from __future__ import annotations

import bisect
import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from botocore.exceptions import ClientError

from shardboard.adapters.board_table import (
    BoardStore,
    aggregate_state,
    board_state_from_item,
    snapshot_from_item,
    snapshot_item,
)
from shardboard.adapters.dynamodb import CONDITION_FAILED, Item
from shardboard.adapters.keys import (
    BOARD_SHARD,
    BY_VIEWS_INDEX,
    ITEM_ID,
    PK,
    SHARD,
    VIEWS,
    aggregate_pk,
    applied_attr,
    snapshot_pk,
    threshold_pk,
    view_pk,
)
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.batch import ShardMove
from shardboard.domain.ports import AggregateState, BoardState, MoveResult
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


def condition_failed(operation: str, old: Item | None = None) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": CONDITION_FAILED, "Message": "The conditional request failed"}}
    if old is not None:
        response["Item"] = old
    return ClientError(response, operation)  # type: ignore[arg-type]


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


class MemoryViewStore(ViewStore):
    """``store.ViewStore`` in memory: write-sharded counters plus their stream (a subclass, so it type-checks)."""

    def __init__(self, emulator: CapacityEmulator, table: str = "memory-views") -> None:
        super().__init__(client=None, table=table)
        self.cpu_seconds, self.metered_calls = 0.0, 0
        self.data = MemoryTable(views_schema(table), emulator)
        self.stream: list[dict[str, Any]] = []
        self._sequence = 0

    @metered
    def add_view(self, item_id: str, shard: int) -> float:
        pk = view_pk(item_id, shard)
        with self.data.lock:
            old = self.data.items.get(pk)
            views = int(old[VIEWS]["N"]) + 1 if old else 1
            new = {PK: {"S": pk}, VIEWS: {"N": str(views)}, ITEM_ID: {"S": item_id}, SHARD: {"N": str(shard)}}
            self.data.write("UpdateItem", pk, new)
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
        with self.data.lock:
            items = [self.data.read("BatchGetItem", view_pk(item_id, k), True) for k in range(write_shards)]
        return sum(int(item[VIEWS]["N"]) for item in items if item)

    @metered
    def scan_totals(self, segments: int = 4) -> dict[str, int]:
        totals: dict[str, int] = {}
        with self.data.lock:
            for item in self.data.scan():
                name = item[ITEM_ID]["S"]
                totals[name] = totals.get(name, 0) + int(item[VIEWS]["N"])
        return totals


class MemoryBoardStore(BoardStore):
    """``store.BoardStore`` in memory: aggregates, the sharded by-views GSI, snapshot and threshold items."""

    def __init__(self, emulator: CapacityEmulator, table: str = "memory-board") -> None:
        super().__init__(client=None, table=table)
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
    def join_index(self, item_id: str, board_shard: str) -> None:
        pk = aggregate_pk(item_id)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is None:
                self.data.refuse("UpdateItem", pk)
                raise condition_failed("UpdateItem")
            self._write_aggregate("UpdateItem", pk, {**old, BOARD_SHARD: {"S": board_shard}})

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
        self, board_shard: str, limit: int, start: Item | None
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
