"""The base (views) table: one write-sharded counter item per (item, write shard)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shardboard.adapters.dynamodb import Item, int_of, n_attr, parallel_scan, s_attr
from shardboard.adapters.keys import ITEM_ID, PK, SHARD, VIEWS, view_pk


class ViewStore:
    """The base table: write-sharded view counters."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def add_view(self, item_id: str, shard: int) -> float:
        """Count one view on one write shard; returns the write units consumed."""
        response = self.client.update_item(
            TableName=self.table,
            Key={PK: s_attr(view_pk(item_id, shard))},
            UpdateExpression="ADD #views :one SET #item = :item, #shard = :shard",
            ExpressionAttributeNames={"#views": VIEWS, "#item": ITEM_ID, "#shard": SHARD},
            ExpressionAttributeValues={":one": n_attr(1), ":item": s_attr(item_id), ":shard": n_attr(shard)},
            ReturnConsumedCapacity="TOTAL",
        )
        return float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 1.0))

    def item_total(self, item_id: str, write_shards: int) -> int:
        """Exact views of one item: the sum of its shard counters (strongly consistent)."""
        keys = [{PK: s_attr(view_pk(item_id, k))} for k in range(write_shards)]
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
                total += sum(int_of(item.get(VIEWS)) for item in response["Responses"].get(self.table, []))
                request = response.get("UnprocessedKeys") or {}
        return total

    def shard_counts(self, item_id: str, shards: Iterable[int]) -> dict[int, int]:
        """The counters of ``item_id`` on ``shards`` (strongly consistent); shards never written are left out."""
        keys = [{PK: s_attr(view_pk(item_id, k))} for k in sorted(set(shards))]
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
                    counts[int_of(item.get(SHARD))] = int_of(item.get(VIEWS))
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
