"""The base (views) table: one write-sharded counter item per (item, write shard)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import Item, int_of, n_attr, parallel_scan, s_attr, throttle_scope
from shardboard.adapters.keys import ITEM_ID, PK, SHARD, VIEWS, view_pk
from shardboard.domain.dynamic_sharding import retry_delay
from shardboard.domain.ports import Throttled

# BatchGetItem reads at most 100 keys per request.
BATCH_GET_KEYS = 100
# Rounds of UnprocessedKeys retried (with jittered exponential back-off, capped) before a read gives up: DynamoDB
# returns them when the partition or the response size limit was hit, and an immediate retry would hit it again.
MAX_BATCH_GET_ROUNDS = 10


class UnprocessedKeysRemain(RuntimeError):
    """BatchGetItem still left keys unread after every retry round: the read cannot be exact, so it fails."""


class ViewStore:
    """The base table: write-sharded view counters."""

    def __init__(
        self,
        client: Any,
        table: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.table = table
        self.sleep = sleep
        self.rng = rng or random.Random()

    def add_view(self, item_id: str, shard: int, count: int = 1) -> float:
        """Add ``count`` views to one write shard in one write; returns the write units consumed.

        A write still throttled after botocore's retries raises ``Throttled`` (it wrote nothing).
        """
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(view_pk(item_id, shard))},
                UpdateExpression="ADD #views :count SET #item = :item, #shard = :shard",
                ExpressionAttributeNames={"#views": VIEWS, "#item": ITEM_ID, "#shard": SHARD},
                ExpressionAttributeValues={
                    ":count": n_attr(count),
                    ":item": s_attr(item_id),
                    ":shard": n_attr(shard),
                },
                ReturnConsumedCapacity="TOTAL",
            )
        except ClientError as error:
            scope = throttle_scope(error)
            if scope is None:
                raise
            raise Throttled(scope) from error
        return float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 1.0))

    def item_total(self, item_id: str, write_shards: int) -> int:
        """Exact views of one item: the sum of its shard counters (strongly consistent)."""
        keys = [{PK: s_attr(view_pk(item_id, k))} for k in range(write_shards)]
        return sum(int_of(item.get(VIEWS)) for item in self._batch_get(keys, "#v", {"#v": VIEWS}))

    def shard_counts(self, item_id: str, shards: Iterable[int]) -> dict[int, int]:
        """The counters of ``item_id`` on ``shards`` (strongly consistent); shards never written are left out."""
        keys = [{PK: s_attr(view_pk(item_id, k))} for k in sorted(set(shards))]
        items = self._batch_get(keys, "#s, #v", {"#s": SHARD, "#v": VIEWS})
        return {int_of(item.get(SHARD)): int_of(item.get(VIEWS)) for item in items}

    def _batch_get(self, keys: list[Item], projection: str, names: dict[str, str]) -> Iterator[Item]:
        """Every item of ``keys`` that exists, strongly consistent, 100 keys a request; UnprocessedKeys are retried
        after a jittered exponential back-off (capped), as AWS advises, never in a tight loop."""
        for start in range(0, len(keys), BATCH_GET_KEYS):
            request: dict[str, Any] = {
                self.table: {
                    "Keys": keys[start : start + BATCH_GET_KEYS],
                    "ConsistentRead": True,
                    "ProjectionExpression": projection,
                    "ExpressionAttributeNames": names,
                }
            }
            for attempt in range(MAX_BATCH_GET_ROUNDS):
                if attempt:
                    self.sleep(retry_delay(attempt - 1, self.rng))
                response = self.client.batch_get_item(RequestItems=request)
                yield from response["Responses"].get(self.table, [])
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
            else:
                raise UnprocessedKeysRemain(f"{self.table}: keys still unprocessed after {MAX_BATCH_GET_ROUNDS} rounds")

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
            if name is not None and shard is not None and item[PK].get("S") == view_pk(name, int_of(shard)):
                rows.append((name, int_of(shard), int_of(item.get(VIEWS))))
        return rows, response.get("LastEvaluatedKey")

    def scan_totals(self, segments: int = 4) -> dict[str, int]:
        """Every item's exact views, from a parallel segmented scan of the counters."""
        totals: dict[str, int] = {}
        for part in parallel_scan(self.client, self.table, segments, "#item, #v", {"#item": ITEM_ID, "#v": VIEWS}):
            for item in part:
                if ITEM_ID in item:
                    name = item[ITEM_ID]["S"]
                    totals[name] = totals.get(name, 0) + int_of(item.get(VIEWS))
        return totals
