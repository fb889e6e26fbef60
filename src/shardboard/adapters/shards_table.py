"""The shard metadata table (docs/dynamic-sharding.md): one item per item that needed more than the default shards."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import CONDITION_FAILED, error_code, int_of, n_attr, s_attr
from shardboard.adapters.keys import (
    DAILY_KEY,
    EXPIRES_AT,
    ITEM_ID,
    LAST_UPDATED,
    MAX_SHARDS,
    NUMBER_OF_SHARDS,
    PK,
    QUIET_SINCE,
    REVIEWED_AT,
    REVIEWED_VIEWS,
    SHARD_HISTORY,
    daily_key_pk,
    shards_pk,
)
from shardboard.domain.ports import ShardMetadata


def shard_metadata_from_item(item: Mapping[str, Any]) -> ShardMetadata:
    quiet = item.get(QUIET_SINCE)
    return ShardMetadata(
        item_id=item[ITEM_ID]["S"],
        number_of_shards=int_of(item[NUMBER_OF_SHARDS]),
        last_updated=int_of(item[LAST_UPDATED]),
        max_shards=int_of(item.get(MAX_SHARDS) or item[NUMBER_OF_SHARDS]),
        history=frozenset(item.get(SHARD_HISTORY, {}).get("SS", [])),
        reviewed_views=int_of(item.get(REVIEWED_VIEWS)),
        reviewed_at=int_of(item.get(REVIEWED_AT)),
        quiet_since=int_of(quiet) if quiet else None,
    )


class ShardMetadataStore:
    """The partition key metadata table: one item per item that needed more than the default shards."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def get(self, item_id: str, consistent: bool = False) -> ShardMetadata | None:
        response = self.client.get_item(
            TableName=self.table, Key={PK: s_attr(shards_pk(item_id))}, ConsistentRead=consistent
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

        The condition on ``last_updated`` is the optimistic lock; the cutoff re-checks the cooldown on the
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
        values: dict[str, Any] = {":n": n_attr(count), ":now": n_attr(now), ":item": s_attr(item_id)}
        if expected is None:
            condition = "attribute_not_exists(#u)"
            history.append(f"0:{default}")  # epoch 0: the item had the default since it first took a view
            values[":m"] = n_attr(max(count, default))
        else:
            condition = "#u = :seen AND #n = :seen_n AND #u <= :cutoff"
            values[":seen"] = n_attr(expected.last_updated)
            values[":seen_n"] = n_attr(expected.number_of_shards)
            values[":cutoff"] = n_attr(math.floor(now - cooldown_seconds))
            values[":m"] = n_attr(max(count, expected.max_shards))
        values[":h"] = {"SS": history}
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(shards_pk(item_id))},
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
        values = {":v": n_attr(views), ":a": n_attr(now)}
        update = "SET #v = :v, #a = :a REMOVE #q"
        if quiet_since is not None:
            values[":q"] = n_attr(quiet_since)
            update = "SET #v = :v, #a = :a, #q = :q"
        self.client.update_item(
            TableName=self.table,
            Key={PK: s_attr(shards_pk(metadata.item_id))},
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


class DailyKeyStore:
    """Anonymous viewers' daily keys (``DailyKeys``), in the shards table: apart from the views, deleted by TTL."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    def daily_key(self, day: str, candidate: bytes, expires_at: int) -> bytes:
        """One UpdateItem: ``if_not_exists`` keeps the first writer's key, and every writer reads back the stored
        one, so all containers hash a day's visitors under one key."""
        response = self.client.update_item(
            TableName=self.table,
            Key={PK: s_attr(daily_key_pk(day))},
            UpdateExpression="SET #key = if_not_exists(#key, :key), #expires = if_not_exists(#expires, :expires)",
            ExpressionAttributeNames={"#key": DAILY_KEY, "#expires": EXPIRES_AT},
            ExpressionAttributeValues={":key": {"B": candidate}, ":expires": n_attr(expires_at)},
            ReturnValues="ALL_NEW",
        )
        return bytes(response["Attributes"][DAILY_KEY]["B"])
