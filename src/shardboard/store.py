"""The one module that knows DynamoDB: keys, attribute names, expressions and error codes.

Two tables (both defined in template.yaml):

* views (base): one counter item per (item, write shard). ``pk`` is built from both but never parsed: the item id
  and shard number are stored as their own attributes, so any id (``a#1``, ``x/y.jpg``) is safe.
* board: one aggregate per item (``views`` plus ``applied_<k>``, the last base value applied per write shard) that
  joins the ``by-views`` GSI (hash ``board_shard``, range ``views``) when it can reach the top N; one snapshot item
  and one threshold item per board.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from shardboard.domain.batch import ShardMove, ViewRecord
from shardboard.domain.dynamic_sharding import ShardMetadata, ThrottleScope

PK = "pk"
ITEM_ID = "item_id"
SHARD = "shard"
VIEWS = "views"
BOARD_SHARD = "board_shard"
BY_VIEWS_INDEX = "by-views"
APPLIED_PREFIX = "applied_"

CONDITION_FAILED = "ConditionalCheckFailedException"
THROTTLING_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
# DynamoDB names why it throttled in ``ThrottlingReasons`` (<Table|Index><Read|Write><LimitType>); only a key-range
# (partition) limit is helped by more write shards. The others are table-level: provisioned capacity, the account's
# per-table quota, an on-demand table's maximum throughput.
KEY_RANGE_LIMIT = "KeyRangeThroughputExceeded"
# Board state on the threshold item: the GSI layout (S) and, while a reshard is moving items, the previous S.
BOARD_SHARDS_ATTR = "board_shards"
PREVIOUS_BOARD_SHARDS_ATTR = "previous_board_shards"

Item = dict[str, Any]


def view_pk(item_id: str, shard: int) -> str:
    return f"view#{shard}#{item_id}"


def aggregate_pk(item_id: str) -> str:
    return f"item#{item_id}"


def snapshot_pk(board: str) -> str:
    return f"snapshot#{board}"


def threshold_pk(board: str) -> str:
    return f"threshold#{board}"


def shards_pk(item_id: str) -> str:
    return f"shards#{item_id}"


def board_layout_prefix(board: str, shards: int) -> str:
    """What every GSI key of one layout starts with (``board_shard_value`` minus the shard number)."""
    return f"{board}#{shards}#"


def board_shard_value(board: str, shard: int, shards: int) -> str:
    """GSI partition key of board shard ``shard`` of ``shards``: naming the layout lets S change without collisions."""
    return f"{board}#{shards}#{shard}"


def applied_attr(shard: int) -> str:
    return f"{APPLIED_PREFIX}{shard}"


def client_config(max_connections: int = 64) -> Config:
    """Standard retry mode retries throttling and 5xx with backoff; the pool covers our worker threads."""
    return Config(
        retries={"mode": "standard", "total_max_attempts": 8},
        max_pool_connections=max_connections,
        connect_timeout=5,
        read_timeout=10,
    )


def dynamodb_client(config: Config | None = None) -> Any:
    """A DynamoDB client; ``AWS_ENDPOINT_URL_DYNAMODB`` points it at DynamoDB Local or moto."""
    return boto3.client("dynamodb", region_name=_region(), config=config or client_config())


def streams_client(config: Config | None = None) -> Any:
    return boto3.client("dynamodbstreams", region_name=_region(), config=config or client_config())


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def throttle_scope(error: ClientError) -> ThrottleScope | None:
    """Partition or table throttling, or None when ``error`` is not a throttle at all.

    ``ThrottlingReasons`` decides when DynamoDB sends it. Without it (older endpoints, the local emulator),
    ``ThrottlingException``/``RequestLimitExceeded`` are table or account limits, and a
    ``ProvisionedThroughputExceededException`` on an on-demand table can only come from a partition; on a provisioned
    table, seed 004's CloudWatch test (consumed below provisioned capacity) tells them apart (docs/dynamic-sharding.md).
    """
    code = error_code(error)
    if code not in THROTTLING_CODES:
        return None
    # The service model names the member ThrottlingReasons, except on ThrottlingException (throttlingReasons).
    listed = error.response.get("ThrottlingReasons") or error.response.get("throttlingReasons") or []
    reasons = [str(r.get("reason", "")) for r in cast(list[Any], listed)]
    if reasons:
        return ThrottleScope.PARTITION if any(KEY_RANGE_LIMIT in r for r in reasons) else ThrottleScope.TABLE
    return ThrottleScope.PARTITION if code == "ProvisionedThroughputExceededException" else ThrottleScope.TABLE


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _int(attribute: Mapping[str, str] | None) -> int:
    return int(attribute["N"]) if attribute else 0


def applied_values(item: Mapping[str, Any]) -> dict[int, int]:
    """The per-write-shard applied values stored on an aggregate."""
    return {
        int(name[len(APPLIED_PREFIX) :]): int(value["N"])
        for name, value in item.items()
        if name.startswith(APPLIED_PREFIX)
    }


# ----------------------------------------------------------------------------------------------- base views table
class ViewStore:
    """The base table: write-sharded view counters."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def add_view(self, item_id: str, shard: int) -> float:
        """Count one view on one write shard; returns the write units consumed."""
        response = self.client.update_item(
            TableName=self.table,
            Key={PK: _s(view_pk(item_id, shard))},
            UpdateExpression="ADD #views :one SET #item = :item, #shard = :shard",
            ExpressionAttributeNames={"#views": VIEWS, "#item": ITEM_ID, "#shard": SHARD},
            ExpressionAttributeValues={":one": _n(1), ":item": _s(item_id), ":shard": _n(shard)},
            ReturnConsumedCapacity="TOTAL",
        )
        return float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 1.0))

    def item_total(self, item_id: str, write_shards: int) -> int:
        """Exact views of one item: the sum of its shard counters (strongly consistent)."""
        keys = [{PK: _s(view_pk(item_id, k))} for k in range(write_shards)]
        total = 0
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {
                self.table: {
                    "Keys": keys[start : start + 100],
                    "ConsistentRead": True,
                    "ProjectionExpression": "#v",
                    "ExpressionAttributeNames": {"#v": VIEWS},
                }
            }
            while request:
                response = self.client.batch_get_item(RequestItems=request)
                total += sum(_int(item.get(VIEWS)) for item in response["Responses"].get(self.table, []))
                request = response.get("UnprocessedKeys") or {}
        return total

    def shard_counts(self, item_id: str, shards: Iterable[int]) -> dict[int, int]:
        """The counters of ``item_id`` on ``shards`` (strongly consistent); shards never written are left out."""
        keys = [{PK: _s(view_pk(item_id, k))} for k in sorted(set(shards))]
        counts: dict[int, int] = {}
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {
                self.table: {
                    "Keys": keys[start : start + 100],
                    "ConsistentRead": True,
                    "ProjectionExpression": "#s, #v",
                    "ExpressionAttributeNames": {"#s": SHARD, "#v": VIEWS},
                }
            }
            while request:
                response = self.client.batch_get_item(RequestItems=request)
                for item in response["Responses"].get(self.table, []):
                    counts[_int(item.get(SHARD))] = _int(item.get(VIEWS))
                request = response.get("UnprocessedKeys") or {}
        return counts

    def scan_counters(
        self, segment: int, segments: int, start: Item | None = None
    ) -> tuple[list[tuple[str, int, int]], Item | None]:
        """One page of segment ``segment`` of a segmented scan: (item, shard, views) per counter, and the cursor.

        Only view counters are returned (their pk is the key built from their own item and shard).
        """
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "Segment": segment,
            "TotalSegments": segments,
            "ProjectionExpression": "#pk, #item, #s, #v",
            "ExpressionAttributeNames": {"#pk": PK, "#item": ITEM_ID, "#s": SHARD, "#v": VIEWS},
            "ConsistentRead": True,
        }
        if start:
            kwargs["ExclusiveStartKey"] = start
        response = self.client.scan(**kwargs)
        rows = []
        for item in response.get("Items", []):
            name, shard = item.get(ITEM_ID, {}).get("S"), item.get(SHARD)
            if name is not None and shard is not None and item[PK].get("S") == view_pk(name, _int(shard)):
                rows.append((name, _int(shard), _int(item.get(VIEWS))))
        return rows, response.get("LastEvaluatedKey")

    def scan_totals(self, segments: int = 4) -> dict[str, int]:
        """Every item's exact views, from a parallel segmented scan of the counters."""
        totals: dict[str, int] = {}
        for part in _parallel_scan(self.client, self.table, segments, "#item, #v", {"#item": ITEM_ID, "#v": VIEWS}):
            for item in part:
                if ITEM_ID in item:
                    name = item[ITEM_ID]["S"]
                    totals[name] = totals.get(name, 0) + _int(item.get(VIEWS))
        return totals


# ----------------------------------------------------------------------------------------------- board table
@dataclass(frozen=True)
class AggregateState:
    """What an aggregate holds: per-shard applied values, total views, and whether it carries the GSI key."""

    applied: dict[int, int]
    views: int
    in_index: bool

    @classmethod
    def of(cls, item: Mapping[str, Any] | None) -> AggregateState:
        item = item or {}
        return cls(applied_values(item), _int(item.get(VIEWS)), BOARD_SHARD in item)


@dataclass(frozen=True)
class MoveResult:
    """Outcome of one compare-and-set on an aggregate: the state after it, or the state that refused it."""

    applied: bool
    state: AggregateState | None  # None only when a refused write did not return the item


@dataclass(frozen=True)
class BoardState:
    """The threshold item: sparse-index threshold T, GSI layout S and, during a reshard, the previous S."""

    threshold: int
    shards: int | None  # None until the first reshard: the template's BoardShards holds
    previous_shards: int | None

    def layouts(self, default_shards: int) -> list[int]:
        """Board shard counts to read, oldest first (two while a reshard is moving items)."""
        current = self.shards or default_shards
        return [self.previous_shards, current] if self.previous_shards else [current]


def board_state_from_item(item: Mapping[str, Any] | None) -> BoardState:
    item = item or {}
    shards, previous = item.get(BOARD_SHARDS_ATTR), item.get(PREVIOUS_BOARD_SHARDS_ATTR)
    return BoardState(
        _int(item.get("threshold")), _int(shards) if shards else None, _int(previous) if previous else None
    )


class BoardStore:
    """The leaderboard table: aggregates, the sharded ``by-views`` GSI, snapshot and threshold items."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    # -- aggregates
    def move(self, item_id: str, moves: Sequence[ShardMove], board_shard: str | None) -> MoveResult:
        """Advance ``applied_k`` from expected to target for each move and add the difference to ``views``.

        One UpdateItem, conditioned on every expected value (0 = never applied), so it happens at most once.
        ``board_shard`` (when given) puts the aggregate into the GSI in the same write.
        """
        names = {"#views": VIEWS, "#item": ITEM_ID}
        values: dict[str, Any] = {
            ":delta": _n(sum(m.target - m.expected for m in moves)),
            ":item": _s(item_id),
        }
        sets = ["#item = :item"]
        conditions = []
        for m in moves:
            names[f"#a{m.shard}"] = applied_attr(m.shard)
            values[f":t{m.shard}"] = _n(m.target)
            sets.append(f"#a{m.shard} = :t{m.shard}")
            if m.expected == 0:
                conditions.append(f"attribute_not_exists(#a{m.shard})")
            else:
                values[f":e{m.shard}"] = _n(m.expected)
                conditions.append(f"#a{m.shard} = :e{m.shard}")
        if board_shard is not None:
            names["#bs"] = BOARD_SHARD
            values[":bs"] = _s(board_shard)
            # An aggregate already in the index keeps its key: only `reshard` moves items between layouts, which
            # is what lets a snapshot read the old layout before the new one and miss nothing during a move.
            sets.append("#bs = if_not_exists(#bs, :bs)")
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key={PK: _s(aggregate_pk(item_id))},
                UpdateExpression=f"ADD #views :delta SET {', '.join(sets)}",
                ConditionExpression=" AND ".join(conditions),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            old = cast(Item | None, error.response.get("Item"))
            return MoveResult(applied=False, state=AggregateState.of(old) if old is not None else None)
        return MoveResult(applied=True, state=AggregateState.of(response["Attributes"]))

    def state(self, item_id: str) -> AggregateState:
        """An aggregate's state, strongly consistent (empty when it does not exist yet)."""
        response = self.client.get_item(TableName=self.table, Key={PK: _s(aggregate_pk(item_id))}, ConsistentRead=True)
        return AggregateState.of(response.get("Item"))

    def join_index(self, item_id: str, board_shard: str) -> None:
        """Give an existing aggregate its GSI key (sparse index: it reached the published threshold)."""
        self.client.update_item(
            TableName=self.table,
            Key={PK: _s(aggregate_pk(item_id))},
            UpdateExpression="SET #bs = :bs",
            ConditionExpression="attribute_exists(#pk)",
            ExpressionAttributeNames={"#bs": BOARD_SHARD, "#pk": PK},
            ExpressionAttributeValues={":bs": _s(board_shard)},
        )

    def delete_aggregate(self, item_id: str) -> None:
        """Remove one aggregate (chaos runs and tests use it to lose the board table; `rebuild` restores it)."""
        self.client.delete_item(TableName=self.table, Key={PK: _s(aggregate_pk(item_id))})

    def aggregate_views(self, item_id: str) -> int | None:
        response = self.client.get_item(
            TableName=self.table,
            Key={PK: _s(aggregate_pk(item_id))},
            ProjectionExpression="#v",
            ExpressionAttributeNames={"#v": VIEWS},
        )
        item = response.get("Item")
        return None if item is None else _int(item.get(VIEWS))

    def scan_aggregates(self, segments: int = 4) -> dict[str, tuple[int, bool]]:
        """Every aggregate: item id -> (views, carries the GSI key)."""
        result: dict[str, tuple[int, bool]] = {}
        for part in _parallel_scan(
            self.client,
            self.table,
            segments,
            "#item, #v, #bs",
            {"#item": ITEM_ID, "#v": VIEWS, "#bs": BOARD_SHARD},
        ):
            for item in part:
                if ITEM_ID in item:
                    result[item[ITEM_ID]["S"]] = (_int(item.get(VIEWS)), BOARD_SHARD in item)
        return result

    # -- the GSI
    def query_shard(
        self, board_shard: str, limit: int, start: Item | None
    ) -> tuple[list[tuple[str, int]], Item | None]:
        """Best ``limit`` (id, views) of one board shard, resuming after ``start``; returns the next cursor."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": BY_VIEWS_INDEX,
            "KeyConditionExpression": "#bs = :bs",
            "ExpressionAttributeNames": {"#bs": BOARD_SHARD},
            "ExpressionAttributeValues": {":bs": _s(board_shard)},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if start:
            kwargs["ExclusiveStartKey"] = start
        response = self.client.query(**kwargs)
        rows = [(item[ITEM_ID]["S"], _int(item.get(VIEWS))) for item in response.get("Items", [])]
        return rows, response.get("LastEvaluatedKey")

    # -- snapshot and threshold
    def get_snapshot(self, board: str, consistent: bool = False) -> Item | None:
        """The snapshot item as plain values, or None before the first snapshot."""
        response = self.client.get_item(
            TableName=self.table, Key={PK: _s(snapshot_pk(board))}, ConsistentRead=consistent
        )
        item = response.get("Item")
        return None if item is None else snapshot_from_item(item)

    def put_snapshot(self, snapshot: Mapping[str, Any], previous_version: int | None) -> bool:
        """Write the snapshot unless another job wrote a newer one first; returns whether it was written."""
        kwargs: dict[str, Any] = {"TableName": self.table, "Item": snapshot_item(snapshot)}
        if previous_version is None:
            kwargs["ConditionExpression"] = "attribute_not_exists(#pk)"
            kwargs["ExpressionAttributeNames"] = {"#pk": PK}
        else:
            kwargs["ConditionExpression"] = "#version = :previous"
            kwargs["ExpressionAttributeNames"] = {"#version": "version"}
            kwargs["ExpressionAttributeValues"] = {":previous": _n(previous_version)}
        try:
            self.client.put_item(**kwargs)
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        return True

    def get_threshold(self, board: str) -> int:
        """The published sparse-index threshold T (0 before any snapshot)."""
        response = self.client.get_item(TableName=self.table, Key={PK: _s(threshold_pk(board))})
        return _int(response.get("Item", {}).get("threshold"))

    def raise_threshold(self, board: str, threshold: int) -> bool:
        """Publish T; it only ever rises, so a late or concurrent job can never lower it."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key={PK: _s(threshold_pk(board))},
                UpdateExpression="SET #t = :t",
                ConditionExpression="attribute_not_exists(#t) OR #t < :t",
                ExpressionAttributeNames={"#t": "threshold"},
                ExpressionAttributeValues={":t": _n(threshold)},
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        return True

    # -- board layout (resharding)
    def get_board_state(self, board: str, consistent: bool = False) -> BoardState:
        """Threshold and layout in one read (the aggregator reads it once per batch)."""
        response = self.client.get_item(
            TableName=self.table, Key={PK: _s(threshold_pk(board))}, ConsistentRead=consistent
        )
        return board_state_from_item(response.get("Item"))

    def begin_reshard(self, board: str, current: int, target: int, current_is_default: bool) -> bool:
        """Switch the layout to ``target``, remembering ``current`` until the move is done; False if not at current."""
        at_current = "#s = :from"
        if current_is_default:
            at_current = f"(attribute_not_exists(#s) OR {at_current})"
        return self._conditional_update(
            threshold_pk(board),
            "SET #s = :to, #p = :from",
            f"attribute_not_exists(#p) AND {at_current}",
            {"#s": BOARD_SHARDS_ATTR, "#p": PREVIOUS_BOARD_SHARDS_ATTR},
            {":to": _n(target), ":from": _n(current)},
        )

    def finish_reshard(self, board: str, previous: int, target: int) -> bool:
        """End the move: snapshots read one layout again. False if the state is not that move."""
        return self._conditional_update(
            threshold_pk(board),
            "REMOVE #p",
            "#s = :to AND #p = :from",
            {"#s": BOARD_SHARDS_ATTR, "#p": PREVIOUS_BOARD_SHARDS_ATTR},
            {":to": _n(target), ":from": _n(previous)},
        )

    def scan_layout(self, board: str, shards: int) -> list[tuple[str, str]]:
        """(item id, GSI key) of every aggregate still keyed in layout ``shards``, from a consistent scan."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "ProjectionExpression": "#item, #bs",
            "FilterExpression": "begins_with(#bs, :prefix)",
            "ExpressionAttributeNames": {"#item": ITEM_ID, "#bs": BOARD_SHARD},
            "ExpressionAttributeValues": {":prefix": _s(board_layout_prefix(board, shards))},
            "ConsistentRead": True,
        }
        found: list[Any] = []
        while True:
            response = self.client.scan(**kwargs)
            found.extend((item[ITEM_ID]["S"], item[BOARD_SHARD]["S"]) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return found
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def rekey(self, item_id: str, old_key: str, new_key: str) -> bool:
        """Move one aggregate to another GSI key if it still has ``old_key``; False if it had moved already."""
        return self._conditional_update(
            aggregate_pk(item_id),
            "SET #bs = :new",
            "#bs = :old",
            {"#bs": BOARD_SHARD},
            {":new": _s(new_key), ":old": _s(old_key)},
        )

    def _conditional_update(
        self, pk: str, update: str, condition: str, names: Mapping[str, str], values: Mapping[str, Any]
    ) -> bool:
        try:
            self.client.update_item(
                TableName=self.table,
                Key={PK: _s(pk)},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=dict(names),
                ExpressionAttributeValues=dict(values),
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        return True


def snapshot_item(snapshot: Mapping[str, Any]) -> Item:
    """The snapshot as the item stored in the board table."""
    return {
        PK: _s(snapshot_pk(snapshot["board"])),
        "board": _s(snapshot["board"]),
        "version": _n(snapshot["version"]),
        "generated_at": _s(snapshot["generated_at"]),
        # Compact JSON pairs keep the item (and the frontend's one read) small.
        "items": _s(json.dumps(snapshot["items"], separators=(",", ":"), ensure_ascii=False)),
        "items_read": _n(snapshot["items_read"]),
        "threshold": _n(snapshot["threshold"]),
        "shard_hits": _s(json.dumps({str(k): v for k, v in snapshot["shard_hits"].items()})),
        "digest": _s(snapshot["digest"]),
    }


def snapshot_from_item(item: Mapping[str, Any]) -> Item:
    """The snapshot as plain values, from its stored item."""
    return {
        "board": item["board"]["S"],
        "version": _int(item["version"]),
        "generated_at": item["generated_at"]["S"],
        "items": json.loads(item["items"]["S"]),
        "items_read": _int(item["items_read"]),
        "threshold": _int(item.get("threshold")),
        "shard_hits": {int(k): v for k, v in json.loads(item["shard_hits"]["S"]).items()},
        "digest": item["digest"]["S"],
    }


def _parallel_scan(
    client: Any, table: str, segments: int, projection: str, names: Mapping[str, str]
) -> Iterator[list[Item]]:
    """Yield pages of a segmented scan, the segments read in parallel threads."""

    def scan_segment(segment: int) -> list[Item]:
        items: list[Item] = []
        kwargs: dict[str, Any] = {
            "TableName": table,
            "Segment": segment,
            "TotalSegments": segments,
            "ProjectionExpression": projection,
            "ExpressionAttributeNames": dict(names),
            "ConsistentRead": True,
        }
        while True:
            response = client.scan(**kwargs)
            items.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return items
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    with ThreadPoolExecutor(max_workers=segments) as pool:
        yield from pool.map(scan_segment, range(segments))


# ----------------------------------------------------------------------------------------------- shards table
NUMBER_OF_SHARDS = "number_of_shards"
LAST_UPDATED = "last_updated"
MAX_SHARDS = "max_shards"
SHARD_HISTORY = "shard_history"
REVIEWED_VIEWS = "reviewed_views"
REVIEWED_AT = "reviewed_at"
QUIET_SINCE = "quiet_since"


def shard_metadata_from_item(item: Mapping[str, Any]) -> ShardMetadata:
    quiet = item.get(QUIET_SINCE)
    return ShardMetadata(
        item_id=item[ITEM_ID]["S"],
        number_of_shards=_int(item[NUMBER_OF_SHARDS]),
        last_updated=_int(item[LAST_UPDATED]),
        max_shards=_int(item.get(MAX_SHARDS) or item[NUMBER_OF_SHARDS]),
        history=frozenset(item.get(SHARD_HISTORY, {}).get("SS", [])),
        reviewed_views=_int(item.get(REVIEWED_VIEWS)),
        reviewed_at=_int(item.get(REVIEWED_AT)),
        quiet_since=_int(quiet) if quiet else None,
    )


class ShardMetadataStore:
    """seed 004's partition key metadata table: one item per item that needed more than the default shards."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def get(self, item_id: str, consistent: bool = False) -> ShardMetadata | None:
        response = self.client.get_item(
            TableName=self.table, Key={PK: _s(shards_pk(item_id))}, ConsistentRead=consistent
        )
        item = response.get("Item")
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
        """Set the shard count if nobody changed it since ``expected`` and the cooldown has passed; None if refused.

        The condition on ``last_updated`` is seed 004's optimistic lock; the cutoff re-checks the cooldown on the
        server, so writers with skewed clocks or stale caches still make at most one change per cooldown window.
        """
        names = {
            "#n": NUMBER_OF_SHARDS,
            "#u": LAST_UPDATED,
            "#m": MAX_SHARDS,
            "#h": SHARD_HISTORY,
            "#item": ITEM_ID,
        }
        history = [f"{now}:{count}"]
        values: dict[str, Any] = {":n": _n(count), ":now": _n(now), ":item": _s(item_id)}
        if expected is None:
            condition = "attribute_not_exists(#u)"
            history.append(f"0:{default}")  # epoch 0: the item had the default since it first took a view
            values[":m"] = _n(max(count, default))
        else:
            condition = "#u = :seen AND #n = :seen_n AND #u <= :cutoff"
            values[":seen"] = _n(expected.last_updated)
            values[":seen_n"] = _n(expected.number_of_shards)
            values[":cutoff"] = _n(math.floor(now - cooldown_seconds))
            values[":m"] = _n(max(count, expected.max_shards))
        values[":h"] = {"SS": history}
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key={PK: _s(shards_pk(item_id))},
                UpdateExpression="SET #n = :n, #u = :now, #m = :m, #item = :item ADD #h :h",
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return None
            raise
        return shard_metadata_from_item(response["Attributes"])

    def note_review(self, metadata: ShardMetadata, views: int, now: int, quiet_since: int | None) -> None:
        """Remember what the shrink review measured (never touches the count or the lock)."""
        names = {"#v": REVIEWED_VIEWS, "#a": REVIEWED_AT, "#q": QUIET_SINCE, "#pk": PK}
        values = {":v": _n(views), ":a": _n(now)}
        update = "SET #v = :v, #a = :a REMOVE #q"
        if quiet_since is not None:
            values[":q"] = _n(quiet_since)
            update = "SET #v = :v, #a = :a, #q = :q"
        self.client.update_item(
            TableName=self.table,
            Key={PK: _s(shards_pk(metadata.item_id))},
            UpdateExpression=update,
            ConditionExpression="attribute_exists(#pk)",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def scan(self) -> list[ShardMetadata]:
        """Every grown item (a small table: only items that ever needed more than the default)."""
        kwargs: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True}
        found: list[Any] = []
        while True:
            response = self.client.scan(**kwargs)
            found.extend(shard_metadata_from_item(item) for item in response.get("Items", []) if ITEM_ID in item)
            if "LastEvaluatedKey" not in response:
                return found
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]


# ----------------------------------------------------------------------------------------------- stream records
class UnexpectedRecord(ValueError):
    """A stream record that is not a base view counter update; ``reason`` names the metric dimension."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def view_record(
    event_name: str | None,
    new_image: Mapping[str, Any] | None,
    old_image: Mapping[str, Any] | None,
    sequence_number: str,
) -> ViewRecord:
    """Read a base-table stream record (images already deserialized) as a counter step, or raise UnexpectedRecord."""
    if event_name == "REMOVE":
        raise UnexpectedRecord("remove", "base counters are never deleted; a REMOVE changes no count")
    if event_name not in ("INSERT", "MODIFY"):
        raise UnexpectedRecord("unknown_event", f"event name {event_name!r}")
    if not new_image:
        raise UnexpectedRecord("missing_image", "no NewImage (the stream must be NEW_AND_OLD_IMAGES)")
    item_id, shard, new = new_image.get(ITEM_ID), _whole(new_image.get(SHARD)), _whole(new_image.get(VIEWS))
    if not isinstance(item_id, str) or shard is None or new is None:
        raise UnexpectedRecord("missing_attribute", f"NewImage lacks a valid {ITEM_ID}/{SHARD}/{VIEWS}")
    if new_image.get(PK) != view_pk(item_id, shard):
        raise UnexpectedRecord("foreign_key", f"pk {new_image.get(PK)!r} is not a view counter key")
    if event_name == "INSERT":
        old = 0
    elif old_image is None:
        raise UnexpectedRecord("missing_image", "MODIFY without OldImage (the stream must be NEW_AND_OLD_IMAGES)")
    else:
        old_views = _whole(old_image.get(VIEWS, 0))
        if old_views is None:
            raise UnexpectedRecord("missing_attribute", "OldImage views is not a whole number")
        old = old_views
    return ViewRecord(item_id, shard, old, new, sequence_number)


def stream_view_record(record: Mapping[str, Any]) -> ViewRecord:
    """A raw Lambda stream record (wire-format images) as a counter step, or raise UnexpectedRecord.

    The aggregator's hottest call: a record as this table writes it is read with a handful of lookups, and anything
    else takes the careful path (``stream_image`` + ``view_record``), which gives the precise reason.
    """
    try:
        stream = record["dynamodb"]
        new_image = stream["NewImage"]
        item_id, shard, new = new_image[ITEM_ID]["S"], new_image[SHARD]["N"], new_image[VIEWS]["N"]
        event_name = record["eventName"]
        old = stream["OldImage"][VIEWS]["N"] if event_name == "MODIFY" else "0"
        # isdigit: DynamoDB's canonical whole numbers only (int() alone would take "-1", " 1" or "1_0").
        if (
            event_name in ("INSERT", "MODIFY")
            and type(item_id) is str
            and shard.isdigit()
            and new.isdigit()
            and old.isdigit()
            and new_image[PK]["S"] == view_pk(item_id, int(shard))
        ):
            return ViewRecord(item_id, int(shard), int(old), int(new), str(stream.get("SequenceNumber") or ""))
    except (KeyError, TypeError, AttributeError):
        pass
    stream = record.get("dynamodb")
    if not isinstance(stream, dict):
        raise UnexpectedRecord("malformed", "record has no dynamodb section")
    return view_record(
        record.get("eventName"),
        stream_image(stream.get("NewImage")),
        stream_image(stream.get("OldImage"), (VIEWS,)),  # only the previous count is read from OldImage
        str(stream.get("SequenceNumber") or ""),
    )


def stream_image(image: Mapping[str, Any] | None, names: Sequence[str] = (PK, ITEM_ID, SHARD, VIEWS)) -> Item | None:
    """The attributes ``view_record`` reads, from a stream record's wire-format image ({"N": "5"} -> 5).

    Deserializing only these attributes, not the whole image, was most of the aggregator's CPU per record.
    A value of an unexpected type is left out, so ``view_record`` reports it as ``missing_attribute``.
    """
    if image is None:
        return None
    plain: Item = {}
    for name in names:
        value = image.get(name)
        if isinstance(value, dict):  # a concrete type check: an ABC check costs more than the rest together
            text = value.get("S")
            if isinstance(text, str):
                plain[name] = text
                continue
            text = value.get("N")
            if isinstance(text, str):
                plain[name] = int(text) if text.isdigit() else Decimal(text)
    return plain


def _whole(value: Any) -> int | None:
    """A non-negative whole number as the deserializer yields it (Decimal) or as Python int; else None."""
    if type(value) is int:  # the common case (stream_image yields ints; bool is not int here): no generic checks
        return value if value >= 0 else None
    try:
        if value is None or isinstance(value, bool) or value < 0 or int(value) != value:
            return None
        return int(value)
    except (TypeError, ValueError, ArithmeticError):
        return None
