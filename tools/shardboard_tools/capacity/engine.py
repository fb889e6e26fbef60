"""DynamoDB in process: the client methods the adapters call, executed on dicts and priced by a CapacityEmulator.

:class:`InProcessEngine` takes and returns DynamoDB's wire format (``{"S": ...}``) and raises botocore's
``ClientError`` with DynamoDB's codes, so ``shardboard.adapters`` run on it unchanged: the adapters are the only
statement of each storage rule, and the benchmark, the fast tests and the contract suite run them. Tables, key
schemas and GSIs (sparse, projected) come from CreateTable requests (template.yaml's, see
``Template.create_table_requests``); expressions are ``capacity.expressions``.

Pricing (``capacity.units``, ``capacity.schema``): a write is admitted before it applies, priced by the item before
and after it, plus each GSI entry it adds, moves or removes; a refused condition is charged as a write of the item as
it stands; a transaction charges twice the base-table units of each item (GSI entries once), a cancelled one twice
the units of the items whose condition failed; GetItem and each BatchGetItem key by item size; a Query or Scan page
(1 MB) by the summed size of the items (index entries) it read. A throttled request raises the emulator's error and
changes nothing. A table with a stream (the views table) keeps its records (NEW_AND_OLD_IMAGES) in ``stream``, in
the shape Lambda receives them.

Refused as DynamoDB refuses them (``ValidationException``): a missing or mistyped key attribute, an item over
400 KB, a path in an update that does not resolve, overlapping update paths, an undefined ``#name`` or ``:value``,
an unknown function, ``Limit`` below 1. Not executed (``ValidationException`` naming it): PartiQL, ``Select`` other
than ``ALL_ATTRIBUTES``/``COUNT``/``ALL_PROJECTED_ATTRIBUTES``, legacy parameters (``AttributeUpdates``,
``Expected``, ``KeyConditions``, ``QueryFilter``), LSIs, TTL expiry (items stay until deleted).
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import functools
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any, TypeVar, cast

from botocore.exceptions import ClientError

from shardboard_tools.capacity.emulator import CapacityEmulator, Charge
from shardboard_tools.capacity.expressions import (
    Between,
    Call,
    Compare,
    Evaluator,
    ExpressionError,
    Logical,
    Path,
    Placeholder,
    get_path,
    parse_condition,
    parse_projection,
    parse_update,
    project,
)
from shardboard_tools.capacity.schema import IndexSchema, TableSchema
from shardboard_tools.capacity.units import item_size, query_units, read_units, write_units

Item = dict[str, Any]
# A Query or Scan page stops at 1 MB of items read; an item is at most 400 KB.
PAGE_BYTES = 1024 * 1024
MAX_ITEM_BYTES = 400 * 1024
STREAM_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/{table}/stream/1970-01-01T00:00:00.000"
CONDITION_FAILED = "ConditionalCheckFailedException"
_SELECTS = frozenset({"ALL_ATTRIBUTES", "COUNT", "ALL_PROJECTED_ATTRIBUTES"})
_LEGACY = ("AttributeUpdates", "Expected", "KeyConditions", "QueryFilter", "ScanFilter", "AttributesToGet")


_Method = TypeVar("_Method", bound=Callable[..., Any])


def metered(method: _Method) -> _Method:
    """Add the CPU time spent inside a request to ``self.cpu_seconds``: in Lambda that time belongs to DynamoDB and
    the network, so the benchmark subtracts it from the aggregator's CPU per record. Accurate only when one thread
    uses the engine (the benchmark runs the aggregator with write_concurrency=1)."""

    @functools.wraps(method)
    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.metering:  # reading the CPU clock costs a system call: only while a benchmark measures
            return method(self, *args, **kwargs)
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
    metering = True

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


def client_error(code: str, message: str, operation: str, **extra: Any) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": message}, **extra}
    return ClientError(response, operation)  # type: ignore[arg-type]


def validation(message: str, operation: str) -> ClientError:
    return client_error("ValidationException", message, operation)


def _scalar(value: Mapping[str, Any]) -> Any:
    """A key attribute's comparable value: numbers by value, strings and binaries as they are."""
    raw = value.get("S")
    if raw is not None:
        return raw
    raw = value.get("N")
    if raw is not None:
        return Decimal(raw)
    return value["B"]


@dataclasses.dataclass
class _Partition:
    """One partition key value's items (of the table or of one index), in sort key order on demand."""

    items: dict[Any, Item] = dataclasses.field(default_factory=dict)
    ordered: list[tuple[Any, Any]] | None = None


class Table:
    """One table's items and GSI partitions."""

    def __init__(self, schema: TableSchema, types: Mapping[str, str], stream: bool) -> None:
        self.schema = schema
        self.types = dict(types)  # key attribute -> S/N/B (table and index keys)
        self.partitions: dict[Any, _Partition] = {}
        self.indexes: dict[str, dict[Any, _Partition]] = {index.name: {} for index in schema.indexes}
        self.stream: list[dict[str, Any]] | None = [] if stream else None
        self.stream_arn = STREAM_ARN.format(table=schema.name)
        self.sequence = 0

    def key_of(self, key: Mapping[str, Any], operation: str, whole_key: bool = True) -> tuple[Any, Any]:
        """(partition value, sort value) of a request's Key (or an Item), validated as DynamoDB does."""
        names = self.schema.keys
        if whole_key and len(key) != len(names):
            raise validation("The provided key element does not match the schema", operation)
        values = []
        for name in names:
            value = key.get(name)
            if value is None:
                raise validation("One of the required keys was not given a value", operation)
            wanted = self.types.get(name, "S")
            if wanted not in value:
                raise validation("The provided key element does not match the schema", operation)
            if wanted in ("S", "B") and not value[wanted]:
                raise validation(
                    "One or more parameter values are not valid. The AttributeValue for a key attribute cannot "
                    f"contain an empty {'string' if wanted == 'S' else 'binary'} value. Key: {name}",
                    operation,
                )
            values.append(_scalar(value))
        return values[0], values[1] if len(values) > 1 else None

    def get(self, key: tuple[Any, Any]) -> Item | None:
        partition = self.partitions.get(key[0])
        return partition.items.get(key[1]) if partition else None

    def store(self, key: tuple[Any, Any], old: Item | None, new: Item | None) -> None:
        """Replace the item under ``key`` (None deletes), keeping the GSI partitions in step, and stream it."""
        partition = self.partitions.get(key[0])
        if new is None:
            if partition is not None and partition.items.pop(key[1], None) is not None:
                partition.ordered = None
        else:
            if partition is None:
                partition = self.partitions[key[0]] = _Partition()
            if key[1] not in partition.items:
                partition.ordered = None
            partition.items[key[1]] = new
        for index in self.schema.indexes:
            self._reindex(index, key, old, new)
        if self.stream is not None and (old is not None or new is not None):
            self._emit(old, new)

    def _reindex(self, index: IndexSchema, key: tuple[Any, Any], old: Item | None, new: Item | None) -> None:
        partitions = self.indexes[index.name]
        before = _index_keys(index, old)
        after = _index_keys(index, new)
        if before is not None and before != after:
            partition = partitions.get(before[0])
            if partition is not None:
                partition.items.pop(key, None)
                partition.ordered = None
        if after is not None:
            partition = partitions.get(after[0])
            if partition is None:
                partition = partitions[after[0]] = _Partition()
            partition.items[key] = new  # type: ignore[assignment]
            if before != after:
                partition.ordered = None

    def _emit(self, old: Item | None, new: Item | None) -> None:
        assert self.stream is not None
        self.sequence += 1
        image = new if new is not None else old
        assert image is not None
        change: dict[str, Any] = {
            "Keys": {name: image[name] for name in self.schema.keys},
            "SequenceNumber": f"{self.sequence:021d}",
            "SizeBytes": item_size(new) + item_size(old),
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        }
        if new is not None:
            change["NewImage"] = new
        if old is not None:
            change["OldImage"] = old
        self.stream.append(
            {
                "eventID": f"{self.sequence:x}",
                "eventName": "REMOVE" if new is None else ("MODIFY" if old is not None else "INSERT"),
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "dynamodb": change,
                "eventSourceARN": self.stream_arn,
            }
        )

    def ordered(self, index: IndexSchema | None, hash_value: Any) -> tuple[list[tuple[Any, Any]], dict[Any, Item]]:
        """A partition's (sort value, table key) pairs in ascending order, and its items by table key."""
        if index is None:
            partition = self.partitions.get(hash_value)
            if partition is None:
                return [], {}
            if partition.ordered is None:
                partition.ordered = sorted((sort, (hash_value, sort)) for sort in partition.items)
            return partition.ordered, {key: partition.items[key[1]] for _, key in partition.ordered}
        partition = self.indexes[index.name].get(hash_value)
        if partition is None:
            return [], {}
        if partition.ordered is None:
            range_key = index.range_key
            partition.ordered = sorted(
                (_scalar(item[range_key]) if range_key else None, key) for key, item in partition.items.items()
            )
        return partition.ordered, partition.items

    def all_items(self) -> Iterator[Item]:
        for hash_value in sorted(self.partitions, key=_hash_order):
            partition = self.partitions[hash_value]
            yield from (partition.items[sort] for sort in sorted(partition.items, key=_sort_order))


def _hash_order(value: Any) -> int:
    # A Scan returns items in the order of their partitions' hashes: stable, and not the keys' order.
    return zlib.crc32(str(value).encode())


def _sort_order(value: Any) -> Any:
    return (0, "") if value is None else (1, value)


def _index_keys(index: IndexSchema, item: Item | None) -> tuple[Any, Any] | None:
    if item is None:
        return None
    hash_value = item.get(index.hash_key)
    if hash_value is None:
        return None
    if index.range_key is None:
        return _scalar(hash_value), None
    range_value = item.get(index.range_key)
    return None if range_value is None else (_scalar(hash_value), _scalar(range_value))


class InProcessEngine:
    """The DynamoDB client methods the adapters call; see the module docstring."""

    def __init__(self, create_table_requests: Sequence[Mapping[str, Any]], emulator: CapacityEmulator) -> None:
        self.emulator = emulator
        self.tables: dict[str, Table] = {}
        self.lock = threading.RLock()
        self.cpu_seconds, self.metered_calls = 0.0, 0
        self.metering = False  # a benchmark turns it on around what it measures (``metered``)
        # Write units by operation (BatchWriteItem: the ranked versions' parts, which the reads benchmark reports).
        self.write_units: dict[str, float] = {}
        for request in create_table_requests:
            self.create_table(**request)

    # -- tables
    def create_table(self, **request: Any) -> dict[str, Any]:
        schema = TableSchema.from_create_table(request)
        types = {a["AttributeName"]: a["AttributeType"] for a in request.get("AttributeDefinitions", [])}
        stream = bool(request.get("StreamSpecification", {}).get("StreamEnabled", "StreamSpecification" in request))
        self.tables[schema.name] = Table(schema, types, stream)
        return {"TableDescription": self._description(schema.name)}

    def describe_table(self, TableName: str) -> dict[str, Any]:
        return {"Table": self._description(TableName)}

    def _description(self, name: str) -> dict[str, Any]:
        table = self._table(name, "DescribeTable")
        return {
            "TableName": name,
            "TableStatus": "ACTIVE",
            "ItemCount": sum(len(p.items) for p in table.partitions.values()),
            "GlobalSecondaryIndexes": [{"IndexName": i.name, "IndexStatus": "ACTIVE"} for i in table.schema.indexes],
            **({"LatestStreamArn": table.stream_arn} if table.stream is not None else {}),
        }

    def stream(self, table: str) -> list[dict[str, Any]]:
        """The stream records of ``table`` so far (the list itself: a consumer may take from it)."""
        records = self._table(table, "DescribeStream").stream
        if records is None:
            raise ValueError(f"table {table} has no stream")
        return records

    def _admit_writes(self, operation: str, charges: Sequence[Charge]) -> None:
        self.emulator.admit(operation, charges)
        self.write_units[operation] = self.write_units.get(operation, 0.0) + sum(c.units for c in charges)

    def peek(self, table: str, key: Mapping[str, Any]) -> Item | None:
        """The item under ``key`` as stored, neither charged nor copied (benchmarks and tests look, never change)."""
        stored = self._table(table, "GetItem")
        return stored.get(stored.key_of(key, "GetItem"))

    def items(self, table: str) -> Iterator[Item]:
        """Every item of ``table`` as stored, unpriced (tests and benchmarks look at what the adapters wrote)."""
        return self._table(table, "Scan").all_items()

    def _table(self, name: str, operation: str) -> Table:
        try:
            return self.tables[name]
        except KeyError:
            raise client_error("ResourceNotFoundException", "Requested resource not found", operation) from None

    # -- single-item writes
    @metered
    def put_item(self, **request: Any) -> dict[str, Any]:
        return self._write("PutItem", request)

    @metered
    def update_item(self, **request: Any) -> dict[str, Any]:
        return self._write("UpdateItem", request)

    @metered
    def delete_item(self, **request: Any) -> dict[str, Any]:
        return self._write("DeleteItem", request)

    def _write(self, operation: str, request: Mapping[str, Any]) -> dict[str, Any]:
        _refuse_legacy(request, operation)
        table = self._table(request["TableName"], operation)
        with self.lock:
            key, old, new = self._prepared(table, operation, request)
            if not self._condition_holds(request, old, operation):
                charges = table.schema.write_charges(_key_item(table, key, request, operation), old, old)
                self._admit_writes(operation, charges)
                extra = {}
                if request.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and old is not None:
                    extra["Item"] = copy.deepcopy(old)
                raise client_error(CONDITION_FAILED, "The conditional request failed", operation, **extra)
            charges = table.schema.write_charges(_key_item(table, key, request, operation), old, new)
            self._admit_writes(operation, charges)
            table.store(key, old, new)
        response: dict[str, Any] = {}
        returned = _returned(request, old, new, operation)
        if returned is not None:
            response["Attributes"] = returned
        if request.get("ReturnConsumedCapacity", "NONE") != "NONE":
            response["ConsumedCapacity"] = _consumed(table.schema.name, charges)
        return response

    def _prepared(self, table: Table, operation: str, request: Mapping[str, Any]) -> tuple[Any, Item | None, Any]:
        """(key, item before, item after) of one write request; raises ValidationException for a bad one."""
        if operation == "PutItem":
            new = request["Item"]
            key = table.key_of(new, operation, whole_key=False)
            new = copy.deepcopy(dict(new))
        else:
            key = table.key_of(request["Key"], operation)
            new = None
        old = table.get(key)
        if operation == "UpdateItem":
            evaluator = Evaluator(request.get("ExpressionAttributeNames"), request.get("ExpressionAttributeValues"))
            base = dict(old) if old is not None else dict(copy.deepcopy(request["Key"]))
            text = request.get("UpdateExpression")
            try:
                new = evaluator.update(parse_update(text), base, table.schema.keys) if text else base
            except ExpressionError as error:
                raise validation(str(error), operation) from None
        if new is not None:
            self._check_item(table, new, operation)
        return key, old, new

    def _check_item(self, table: Table, item: Item, operation: str) -> None:
        if item_size(item) > MAX_ITEM_BYTES:
            raise validation("Item size has exceeded the maximum allowed size", operation)
        for name, wanted in table.types.items():
            value = item.get(name)
            if value is not None and wanted not in value:
                raise validation(
                    "One or more parameter values were invalid: Type mismatch for Index Key "
                    f"{name} Expected: {wanted} Actual: {next(iter(value))}",
                    operation,
                )

    def _condition_holds(self, request: Mapping[str, Any], item: Item | None, operation: str) -> bool:
        text = request.get("ConditionExpression")
        if not text:
            return True
        evaluator = Evaluator(request.get("ExpressionAttributeNames"), request.get("ExpressionAttributeValues"))
        try:
            return evaluator.holds(parse_condition(text), item)
        except ExpressionError as error:
            raise validation(str(error), operation) from None

    # -- transactions and batches
    @metered
    def transact_write_items(self, TransactItems: Sequence[Mapping[str, Any]], **options: Any) -> dict[str, Any]:
        operation = "TransactWriteItems"
        if not 1 <= len(TransactItems) <= 100:
            raise validation("Member must have length less than or equal to 100", operation)
        with self.lock:
            planned = self._planned(TransactItems, operation)
            self._check_transaction(planned, operation)
            charges = []
            for verb, request, table, key, old, new in planned:
                key_item = _key_item(table, key, request, operation)
                for charge in table.schema.write_charges(key_item, old, old if verb == "ConditionCheck" else new):
                    base = charge.resource == table.schema.name
                    charges.append(dataclasses.replace(charge, units=charge.units * 2) if base else charge)
            self._admit_writes(operation, charges)
            for verb, _, table, key, old, new in planned:
                if verb != "ConditionCheck":
                    table.store(key, old, new)
        response: dict[str, Any] = {}
        if options.get("ReturnConsumedCapacity", "NONE") != "NONE":
            by_table: dict[str, float] = {}
            for charge in charges:
                by_table[charge.table] = by_table.get(charge.table, 0.0) + charge.units
            response["ConsumedCapacity"] = [
                {"TableName": name, "CapacityUnits": units} for name, units in by_table.items()
            ]
        return response

    def _planned(self, entries: Sequence[Mapping[str, Any]], operation: str) -> list[tuple[Any, ...]]:
        """(verb, request, table, key, item before, item after) of each write of a transaction."""
        planned, keys = [], set()
        for entry in entries:
            (verb, request), *_ = entry.items()
            table = self._table(request["TableName"], operation)
            write = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}.get(verb)
            if write is None:  # ConditionCheck
                key = table.key_of(request["Key"], operation)
                old = new = table.get(key)
            else:
                key, old, new = self._prepared(table, write, request)
            if (table.schema.name, key) in keys:
                raise validation("Transaction request cannot include multiple operations on one item", operation)
            keys.add((table.schema.name, key))
            planned.append((verb, request, table, key, old, new))
        return planned

    def _check_transaction(self, planned: list[tuple[Any, ...]], operation: str) -> None:
        """Every condition first: one that fails cancels the transaction, charged twice its item's write units."""
        reasons: list[dict[str, Any]] = []
        charges: list[Charge] = []
        for _, request, table, key, old, _ in planned:
            if self._condition_holds(request, old, operation):
                reasons.append({"Code": "None"})
                continue
            reason: dict[str, Any] = {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
            if request.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and old is not None:
                reason["Item"] = copy.deepcopy(old)
            reasons.append(reason)
            charge = table.schema.write_charges(_key_item(table, key, request, operation), old, old)[0]
            charges.append(dataclasses.replace(charge, units=charge.units * 2))
        if charges:
            self._admit_writes(operation, charges)
            raise client_error(
                "TransactionCanceledException",
                "Transaction cancelled, please refer cancellation reasons for specific reasons "
                f"[{', '.join(r['Code'] for r in reasons)}]",
                operation,
                CancellationReasons=reasons,
            )

    @metered
    def batch_write_item(self, RequestItems: Mapping[str, Sequence[Mapping[str, Any]]], **_: Any) -> dict[str, Any]:
        operation = "BatchWriteItem"
        if sum(len(requests) for requests in RequestItems.values()) > 25:
            raise validation("Too many items requested for the BatchWriteItem call", operation)
        unprocessed: dict[str, list[Mapping[str, Any]]] = {}
        throttled: ClientError | None = None
        written = 0
        for name, requests in RequestItems.items():
            table = self._table(name, operation)
            for entry in requests:
                with self.lock:
                    if "PutRequest" in entry:
                        key, old, new = self._prepared(table, "PutItem", entry["PutRequest"])
                    else:
                        key, old, new = self._prepared(table, "DeleteItem", entry["DeleteRequest"])
                    key_item = _key_item(table, key, entry.get("PutRequest") or entry["DeleteRequest"], operation)
                    try:
                        self._admit_writes(operation, table.schema.write_charges(key_item, old, new))
                    except ClientError as error:
                        throttled = error
                        unprocessed.setdefault(name, []).append(entry)
                        continue
                    table.store(key, old, new)
                    written += 1
        if throttled is not None and not written:
            raise throttled
        return {"UnprocessedItems": unprocessed}

    @metered
    def batch_get_item(self, RequestItems: Mapping[str, Mapping[str, Any]], **_: Any) -> dict[str, Any]:
        operation = "BatchGetItem"
        if sum(len(request["Keys"]) for request in RequestItems.values()) > 100:
            raise validation("Too many items requested for the BatchGetItem call", operation)
        responses: dict[str, list[Item]] = {}
        charges: list[Charge] = []
        with self.lock:
            for name, request in RequestItems.items():
                table = self._table(name, operation)
                projection = _projection(request, operation)
                consistent = bool(request.get("ConsistentRead"))
                found = responses.setdefault(name, [])
                for key_value in request["Keys"]:
                    item = table.get(table.key_of(key_value, operation))
                    units = read_units(item_size(item), consistent)
                    charges.append(Charge(name, name, table.schema.partition_of(key_value), "read", units))
                    if item is not None:
                        found.append(_shaped(item, projection, request.get("ExpressionAttributeNames")))
            self.emulator.admit(operation, charges)
        return {"Responses": responses, "UnprocessedKeys": {}}

    # -- reads
    @metered
    def get_item(self, **request: Any) -> dict[str, Any]:
        operation = "GetItem"
        _refuse_legacy(request, operation)
        table = self._table(request["TableName"], operation)
        with self.lock:
            key = table.key_of(request["Key"], operation)
            item = table.get(key)
            units = read_units(item_size(item), bool(request.get("ConsistentRead")))
            charge = Charge(
                table.schema.name, table.schema.name, table.schema.partition_of(request["Key"]), "read", units
            )
            self.emulator.admit(operation, [charge])
            if item is None:
                return {}
            return {"Item": _shaped(item, _projection(request, operation), request.get("ExpressionAttributeNames"))}

    @metered
    def query(self, **request: Any) -> dict[str, Any]:
        operation = "Query"
        _refuse_legacy(request, operation)
        table = self._table(request["TableName"], operation)
        index = table.schema.index(request["IndexName"]) if request.get("IndexName") else None
        hash_key = index.hash_key if index else table.schema.hash_key
        range_key = index.range_key if index else table.schema.range_key
        evaluator = Evaluator(request.get("ExpressionAttributeNames"), request.get("ExpressionAttributeValues"))
        try:
            condition = parse_condition(request["KeyConditionExpression"])
            hash_value = _key_condition(condition, evaluator, hash_key, range_key)
        except ExpressionError as error:
            raise validation(str(error), operation) from None
        with self.lock:
            ordered, items = table.ordered(index, _scalar(hash_value))
            forward = request.get("ScanIndexForward", True)
            start = request.get("ExclusiveStartKey")
            position = self._start(
                table=table, index=index, ordered=ordered, start=start, forward=forward, operation=operation
            )
            sequence = range(position, len(ordered)) if forward else range(position, -1, -1)
            candidates = (items[ordered[i][1]] for i in sequence)
            page, last, sizes = self._page(
                table=table,
                index=index,
                candidates=candidates,
                evaluator=evaluator,
                key_condition=condition,
                request=request,
                operation=operation,
            )
            consistent = bool(request.get("ConsistentRead"))
            if consistent and index is not None:
                raise validation("Consistent reads are not supported on global secondary indexes", operation)
            resource = table.schema.resource(index) if index else table.schema.name
            units = query_units(sizes, consistent)
            self.emulator.admit(
                operation, [Charge(table.schema.name, resource, str(_scalar(hash_value)), "read", units)]
            )
        return self._read_response(table, index, page, last, len(sizes), request, units)

    def _start(
        self,
        *,
        table: Table,
        index: IndexSchema | None,
        ordered: list[tuple[Any, Any]],
        start: Mapping[str, Any] | None,
        forward: bool,
        operation: str,
    ) -> int:
        if not start:
            return 0 if forward else len(ordered) - 1
        table_key = table.key_of(start, operation, whole_key=False)
        sort_name = index.range_key if index else table.schema.range_key
        sort = _scalar(start[sort_name]) if sort_name else None
        marker = (sort, table_key)
        if forward:
            return bisect.bisect_right(ordered, marker)
        return bisect.bisect_left(ordered, marker) - 1

    def _page(
        self,
        *,
        table: Table,
        index: IndexSchema | None,
        candidates: Iterator[Item],
        evaluator: Evaluator,
        key_condition: Any,
        request: Mapping[str, Any],
        operation: str,
    ) -> tuple[list[Item], Item | None, list[int]]:
        """The items a Query or Scan page returns, its LastEvaluatedKey and the sizes it read."""
        limit = request.get("Limit")
        if limit is not None and limit < 1:
            raise validation("Limit must be greater than or equal to 1", operation)
        text = request.get("FilterExpression")
        try:
            selected = parse_condition(text) if text else None
        except ExpressionError as error:
            raise validation(str(error), operation) from None
        page: list[Item] = []
        sizes: list[int] = []
        total = 0
        last: Item | None = None
        for item in candidates:
            if key_condition is not None and not evaluator.holds(key_condition, item):
                continue
            entry = index.entry(item, table.schema.keys) if index else item
            assert entry is not None
            size = item_size(entry)
            sizes.append(size)
            total += size
            try:
                if selected is None or evaluator.holds(selected, entry):
                    page.append(entry)
            except ExpressionError as error:
                raise validation(str(error), operation) from None
            if (limit is not None and len(sizes) == limit) or total >= PAGE_BYTES:
                last = _last_key(table, index, entry)
                break
        return page, last, sizes

    def _read_response(  # noqa: PLR0917 - one response from a Query's or Scan's parts
        self,
        table: Table,
        index: IndexSchema | None,
        page: list[Item],
        last: Item | None,
        scanned: int,
        request: Mapping[str, Any],
        units: float,
    ) -> dict[str, Any]:
        select = request.get("Select", "ALL_ATTRIBUTES")
        if select not in _SELECTS:
            raise validation(f"Select {select} is not executed by the in-process engine", "Query")
        response: dict[str, Any] = {"Count": len(page), "ScannedCount": scanned}
        if select != "COUNT":
            projection = _projection(request, "Query")
            names = request.get("ExpressionAttributeNames")
            response["Items"] = [_shaped(item, projection, names) for item in page]
        if last is not None:
            response["LastEvaluatedKey"] = last
        if request.get("ReturnConsumedCapacity", "NONE") != "NONE":
            response["ConsumedCapacity"] = {"TableName": table.schema.name, "CapacityUnits": units}
        return response

    @metered
    def scan(self, **request: Any) -> dict[str, Any]:
        operation = "Scan"
        _refuse_legacy(request, operation)
        table = self._table(request["TableName"], operation)
        index = table.schema.index(request["IndexName"]) if request.get("IndexName") else None
        segment, segments = request.get("Segment", 0), request.get("TotalSegments", 1)
        evaluator = Evaluator(request.get("ExpressionAttributeNames"), request.get("ExpressionAttributeValues"))
        with self.lock:
            items = [
                item
                for item in table.all_items()
                if segments == 1 or _hash_order(_scalar(item[table.schema.hash_key])) % segments == segment
            ]
            keys = [
                (_scalar(i[table.schema.hash_key]), _scalar(i[r]) if (r := table.schema.range_key) else None)
                for i in items
            ]
            start = request.get("ExclusiveStartKey")
            position = keys.index(table.key_of(start, operation, whole_key=False)) + 1 if start else 0
            candidates = iter(items[position:])
            if index is not None:
                candidates = (i for i in candidates if index.entry(i, table.schema.keys) is not None)
            page, last, sizes = self._page(
                table=table,
                index=None,
                candidates=candidates,
                evaluator=evaluator,
                key_condition=None,
                request=request,
                operation=operation,
            )
            if last is not None and index is None:
                last = {name: last[name] for name in table.schema.keys}
            units = query_units(sizes, bool(request.get("ConsistentRead")))
            self.emulator.admit(operation, [Charge(table.schema.name, table.schema.name, None, "read", units)])
        return self._read_response(table, index, page, last, len(sizes), request, units)

    def get_paginator(self, operation_name: str) -> _Paginator:
        methods: dict[str, Callable[..., dict[str, Any]]] = {"query": self.query, "scan": self.scan}
        return _Paginator(methods[operation_name])


class _Paginator:
    """``client.get_paginator("query")``: pages until no LastEvaluatedKey."""

    def __init__(self, method: Callable[..., dict[str, Any]]) -> None:
        self.method = method

    def paginate(self, **request: Any) -> Iterator[dict[str, Any]]:
        config = request.pop("PaginationConfig", {}) or {}
        if config.get("PageSize"):
            request["Limit"] = config["PageSize"]
        while True:
            page = self.method(**request)
            yield page
            if "LastEvaluatedKey" not in page:
                return
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _refuse_legacy(request: Mapping[str, Any], operation: str) -> None:
    for name in _LEGACY:
        if name in request:
            raise validation(f"{name} (a legacy parameter) is not executed by the in-process engine", operation)


def _key_item(table: Table, key: Any, request: Mapping[str, Any], operation: str) -> Mapping[str, Any]:
    source = request.get("Key") or request.get("Item") or {}
    return {name: source[name] for name in table.schema.keys}


def _returned(request: Mapping[str, Any], old: Item | None, new: Item | None, operation: str) -> Item | None:
    wanted = request.get("ReturnValues", "NONE")
    if wanted == "NONE":
        return None
    if wanted == "ALL_OLD":
        return copy.deepcopy(old) if old else None
    if wanted == "ALL_NEW":
        return copy.deepcopy(new) if new else None
    if wanted in ("UPDATED_NEW", "UPDATED_OLD") and operation == "UpdateItem":
        # The paths the update expression names, as they are after (or were before) it.
        names = request.get("ExpressionAttributeNames") or {}
        paths = tuple(action.path for action in parse_update(request["UpdateExpression"]))
        changed = tuple(p for p in paths if get_path(old, p.resolve(names)) != get_path(new, p.resolve(names)))
        shown = project((new if wanted == "UPDATED_NEW" else old) or {}, changed, names)
        return copy.deepcopy(shown) or None
    raise validation(f"ReturnValues {wanted} is not valid here", operation)


def _consumed(table: str, charges: Sequence[Charge]) -> dict[str, Any]:
    return {"TableName": table, "CapacityUnits": float(sum(charge.units for charge in charges))}


def _projection(request: Mapping[str, Any], operation: str) -> tuple[Path, ...] | None:
    text = request.get("ProjectionExpression")
    if not text:
        return None
    try:
        return parse_projection(text)
    except ExpressionError as error:
        raise validation(str(error), operation) from None


def _shaped(item: Item, projection: tuple[Path, ...] | None, names: Mapping[str, str] | None) -> Item:
    """A copy of ``item`` for a response (the caller may change it), projected when asked."""
    if projection is None:
        return copy.deepcopy(item)
    try:
        return copy.deepcopy(project(item, projection, names or {}))
    except ExpressionError as error:
        raise validation(str(error), "Query") from None


def _last_key(table: Table, index: IndexSchema | None, item: Item) -> Item:
    names = list(table.schema.keys)
    if index is not None:
        names += [index.hash_key] + ([index.range_key] if index.range_key else [])
    return {name: item[name] for name in dict.fromkeys(names)}


def _key_condition(condition: Any, evaluator: Evaluator, hash_key: str, range_key: str | None) -> Mapping[str, Any]:
    """The partition key value a KeyConditionExpression names; refuses conditions DynamoDB would refuse."""
    parts = (
        [condition.left, condition.right] if isinstance(condition, Logical) and condition.op == "AND" else [condition]
    )
    if len(parts) > 2 or any(isinstance(p, Logical) for p in parts):
        raise ExpressionError("Invalid KeyConditionExpression: only one condition on each key")
    hash_value = None
    for part in parts:
        subject = (
            part.subject
            if isinstance(part, Between)
            else (part.args[0] if isinstance(part, Call) else getattr(part, "left", None))
        )
        if not isinstance(subject, Path) or len(subject.elements) != 1:
            raise ExpressionError("Invalid KeyConditionExpression: a key condition names a key attribute")
        name = subject.resolve(evaluator.names)[0]
        if name == hash_key and isinstance(part, Compare) and part.op == "=" and isinstance(part.right, Placeholder):
            hash_value = evaluator.operand(part.right, None)
        elif name != range_key or (isinstance(part, Call) and part.function != "begins_with"):
            raise ExpressionError(f"Query condition missed key schema element: {hash_key}")
    if hash_value is None:
        raise ExpressionError(f"Query condition missed key schema element: {hash_key}")
    return hash_value


__all__ = ["PAGE_BYTES", "InProcessEngine", "Table", "write_units"]
