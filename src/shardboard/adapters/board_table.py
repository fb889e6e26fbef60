"""The board (leaderboard) table: per-item aggregates, the sharded ``by-views`` GSI, snapshot and threshold items.

An aggregate holds ``views`` plus ``applied_<k>``, the last base value applied per write shard, and joins the GSI
(hash ``board_shard``, range ``views``) when it can reach the top N.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import CONDITION_FAILED, Item, error_code, int_of, n_attr, parallel_scan, s_attr
from shardboard.adapters.keys import (
    APPLIED_PREFIX,
    BOARD_SHARD,
    BOARD_SHARDS_ATTR,
    BY_VIEWS_INDEX,
    ITEM_ID,
    PK,
    PREVIOUS_BOARD_SHARDS_ATTR,
    VIEWS,
    aggregate_pk,
    applied_attr,
    snapshot_pk,
    threshold_pk,
)
from shardboard.domain.batch import ShardMove
from shardboard.domain.ports import AggregateState, BoardState, Cursor, MoveResult
from shardboard.domain.sharding import board_layout_prefix


def applied_values(item: Mapping[str, Any]) -> dict[int, int]:
    """The per-write-shard applied values stored on an aggregate."""
    return {
        int(name[len(APPLIED_PREFIX) :]): int(value["N"])
        for name, value in item.items()
        if name.startswith(APPLIED_PREFIX)
    }


def aggregate_state(item: Mapping[str, Any] | None) -> AggregateState:
    """An aggregate's state from its stored item (empty when there is none)."""
    item = item or {}
    return AggregateState(applied_values(item), int_of(item.get(VIEWS)), BOARD_SHARD in item)


def board_state_from_item(item: Mapping[str, Any] | None) -> BoardState:
    item = item or {}
    shards, previous = item.get(BOARD_SHARDS_ATTR), item.get(PREVIOUS_BOARD_SHARDS_ATTR)
    return BoardState(
        int_of(item.get("threshold")), int_of(shards) if shards else None, int_of(previous) if previous else None
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
            ":delta": n_attr(sum(m.target - m.expected for m in moves)),
            ":item": s_attr(item_id),
        }
        sets = ["#item = :item"]
        conditions = []
        for m in moves:
            names[f"#a{m.shard}"] = applied_attr(m.shard)
            values[f":t{m.shard}"] = n_attr(m.target)
            sets.append(f"#a{m.shard} = :t{m.shard}")
            if m.expected == 0:
                conditions.append(f"attribute_not_exists(#a{m.shard})")
            else:
                values[f":e{m.shard}"] = n_attr(m.expected)
                conditions.append(f"#a{m.shard} = :e{m.shard}")
        if board_shard is not None:
            names["#bs"] = BOARD_SHARD
            values[":bs"] = s_attr(board_shard)
            # An aggregate already in the index keeps its key: only `reshard` moves items between layouts, which
            # is what lets a snapshot read the old layout before the new one and miss nothing during a move.
            sets.append("#bs = if_not_exists(#bs, :bs)")
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(aggregate_pk(item_id))},
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
            return MoveResult(applied=False, state=aggregate_state(old) if old is not None else None)
        return MoveResult(applied=True, state=aggregate_state(response["Attributes"]))

    def state(self, item_id: str) -> AggregateState:
        """An aggregate's state, strongly consistent (empty when it does not exist yet)."""
        response = self.client.get_item(
            TableName=self.table, Key={PK: s_attr(aggregate_pk(item_id))}, ConsistentRead=True
        )
        return aggregate_state(response.get("Item"))

    def join_index(self, item_id: str, board_shard: str) -> bool:
        """Give an existing aggregate its GSI key (sparse index: it reached the published threshold).

        False when there is no aggregate or it is keyed already: like ``move``'s if_not_exists, an item in the index
        keeps its key (during a reshard, possibly the other layout's), since only `reshard` moves items.
        """
        return self._conditional_update(
            aggregate_pk(item_id),
            "SET #bs = :bs",
            "attribute_exists(#pk) AND attribute_not_exists(#bs)",
            {"#bs": BOARD_SHARD, "#pk": PK},
            {":bs": s_attr(board_shard)},
        )

    def delete_aggregate(self, item_id: str) -> None:
        """Remove one aggregate (chaos runs and tests use it to lose the board table; `rebuild` restores it)."""
        self.client.delete_item(TableName=self.table, Key={PK: s_attr(aggregate_pk(item_id))})

    def aggregate_views(self, item_id: str) -> int | None:
        response = self.client.get_item(
            TableName=self.table,
            Key={PK: s_attr(aggregate_pk(item_id))},
            ProjectionExpression="#v",
            ExpressionAttributeNames={"#v": VIEWS},
        )
        item = response.get("Item")
        return None if item is None else int_of(item.get(VIEWS))

    def scan_aggregates(self, segments: int = 4) -> dict[str, tuple[int, bool]]:
        """Every aggregate: item id -> (views, carries the GSI key)."""
        result: dict[str, tuple[int, bool]] = {}
        for part in parallel_scan(
            self.client,
            self.table,
            segments,
            "#item, #v, #bs",
            {"#item": ITEM_ID, "#v": VIEWS, "#bs": BOARD_SHARD},
        ):
            for item in part:
                if ITEM_ID in item:
                    result[item[ITEM_ID]["S"]] = (int_of(item.get(VIEWS)), BOARD_SHARD in item)
        return result

    # -- the GSI
    def query_shard(
        self, board_shard: str, limit: int, start: Cursor | None
    ) -> tuple[list[tuple[str, int]], Item | None]:
        """Best ``limit`` (id, views) of one board shard, resuming after ``start``; returns the next cursor."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": BY_VIEWS_INDEX,
            "KeyConditionExpression": "#bs = :bs",
            "ExpressionAttributeNames": {"#bs": BOARD_SHARD},
            "ExpressionAttributeValues": {":bs": s_attr(board_shard)},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if start:
            kwargs["ExclusiveStartKey"] = dict(start)
        response = self.client.query(**kwargs)
        rows = [(item[ITEM_ID]["S"], int_of(item.get(VIEWS))) for item in response.get("Items", [])]
        return rows, response.get("LastEvaluatedKey")

    # -- snapshot and threshold
    def get_snapshot(self, board: str, consistent: bool = False) -> Item | None:
        """The snapshot item as plain values, or None before the first snapshot."""
        response = self.client.get_item(
            TableName=self.table, Key={PK: s_attr(snapshot_pk(board))}, ConsistentRead=consistent
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
            kwargs["ExpressionAttributeValues"] = {":previous": n_attr(previous_version)}
        try:
            self.client.put_item(**kwargs)
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            raise
        return True

    def get_threshold(self, board: str) -> int:
        """The published sparse-index threshold T (0 before any snapshot)."""
        response = self.client.get_item(TableName=self.table, Key={PK: s_attr(threshold_pk(board))})
        return int_of(response.get("Item", {}).get("threshold"))

    def raise_threshold(self, board: str, threshold: int) -> bool:
        """Publish T; it only ever rises, so a late or concurrent job can never lower it."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(threshold_pk(board))},
                UpdateExpression="SET #t = :t",
                ConditionExpression="attribute_not_exists(#t) OR #t < :t",
                ExpressionAttributeNames={"#t": "threshold"},
                ExpressionAttributeValues={":t": n_attr(threshold)},
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
            TableName=self.table, Key={PK: s_attr(threshold_pk(board))}, ConsistentRead=consistent
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
            {":to": n_attr(target), ":from": n_attr(current)},
        )

    def finish_reshard(self, board: str, previous: int, target: int) -> bool:
        """End the move: snapshots read one layout again. False if the state is not that move."""
        return self._conditional_update(
            threshold_pk(board),
            "REMOVE #p",
            "#s = :to AND #p = :from",
            {"#s": BOARD_SHARDS_ATTR, "#p": PREVIOUS_BOARD_SHARDS_ATTR},
            {":to": n_attr(target), ":from": n_attr(previous)},
        )

    def scan_layout(self, board: str, shards: int) -> list[tuple[str, str]]:
        """(item id, GSI key) of every aggregate still keyed in layout ``shards``, from a consistent scan."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "ProjectionExpression": "#item, #bs",
            "FilterExpression": "begins_with(#bs, :prefix)",
            "ExpressionAttributeNames": {"#item": ITEM_ID, "#bs": BOARD_SHARD},
            "ExpressionAttributeValues": {":prefix": s_attr(board_layout_prefix(board, shards))},
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
            {":new": s_attr(new_key), ":old": s_attr(old_key)},
        )

    def _conditional_update(
        self, pk: str, update: str, condition: str, names: Mapping[str, str], values: Mapping[str, Any]
    ) -> bool:
        try:
            self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(pk)},
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
        PK: s_attr(snapshot_pk(snapshot["board"])),
        "board": s_attr(snapshot["board"]),
        "version": n_attr(snapshot["version"]),
        "generated_at": s_attr(snapshot["generated_at"]),
        # Compact JSON pairs keep the item (and the frontend's one read) small.
        "items": s_attr(json.dumps(snapshot["items"], separators=(",", ":"), ensure_ascii=False)),
        "items_read": n_attr(snapshot["items_read"]),
        "threshold": n_attr(snapshot["threshold"]),
        "shard_hits": s_attr(json.dumps({str(k): v for k, v in snapshot["shard_hits"].items()})),
        "digest": s_attr(snapshot["digest"]),
    }


def snapshot_from_item(item: Mapping[str, Any]) -> Item:
    """The snapshot as plain values, from its stored item."""
    return {
        "board": item["board"]["S"],
        "version": int_of(item["version"]),
        "generated_at": item["generated_at"]["S"],
        "items": json.loads(item["items"]["S"]),
        "items_read": int_of(item["items_read"]),
        "threshold": int_of(item.get("threshold")),
        "shard_hits": {int(k): v for k, v in json.loads(item["shard_hits"]["S"]).items()},
        "digest": item["digest"]["S"],
    }
