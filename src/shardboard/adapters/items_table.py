"""The items table (issue 13): ``pk=item#<id>``, ``sk=meta`` holds an item's metadata record.

Its own table rather than rows of the board table: the board table takes the aggregator's write rate and has six
GSIs, items are written at admin rate and read by id (docs/briefs design section 1).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import CONDITION_FAILED, error_code, int_of, n_attr, s_attr
from shardboard.adapters.keys import (
    AT,
    BY,
    BY_CREATED_INDEX,
    CREATED_AT,
    CREATED_KEY,
    CREATED_SHARD,
    DENY_SETS,
    HIDDEN_SETS,
    ITEM_ID,
    ITEM_META,
    ITEM_RECORD_SK,
    ITEM_STATUS,
    OP,
    PK,
    REASON,
    REV,
    SET_IDS,
    SET_SK,
    SK,
    UPDATED_AT,
    audit_sk,
    deny_set_pk,
    hidden_set_pk,
    item_record_pk,
)
from shardboard.domain.items import (
    DEFAULT_CREATED_SHARDS,
    DELETED,
    HIDDEN,
    ItemRecord,
    ShardPage,
    created_key,
    created_shard,
    set_shard,
)


def record_key(item_id: str) -> dict[str, Any]:
    return {PK: s_attr(item_record_pk(item_id)), SK: s_attr(ITEM_RECORD_SK)}


def item_record(item: Mapping[str, Any]) -> ItemRecord:
    status = item.get(ITEM_STATUS)
    return ItemRecord(
        item_id=item[ITEM_ID]["S"],
        meta=item[ITEM_META]["S"],
        created_at=item[CREATED_AT]["S"],
        updated_at=item[UPDATED_AT]["S"],
        rev=int_of(item.get(REV)),
        status=status["S"] if status else None,
    )


def takedown_writes(
    table: str,
    item_id: str,
    hidden: bool,
    *,
    by: str,
    reason: str,
    now: str,
    created: tuple[str, int] | None = None,
) -> list[dict[str, Any]]:
    """The three writes of a hide (or unhide), for one TransactWriteItems: the record's status (conditioned on the
    previous one, so a repeat writes nothing), the audit row and the hidden set.

    A hide also takes the record out of the by-created index (newest items never list it); an unhide puts it back
    from ``created`` (its created_at, read first, and the table's created shards), conditioned on that created_at,
    or on none when the item was never put (a put may not slip in between the read and the write)."""
    names = {"#st": ITEM_STATUS, "#id": ITEM_ID, "#by": BY, "#reason": REASON, "#cr": CREATED_AT}
    values = {":id": s_attr(item_id), ":by": s_attr(by), ":reason": s_attr(reason), ":hidden": s_attr(HIDDEN)}
    if hidden:
        status = "SET #st = :hidden, #id = :id, #by = :by, #reason = :reason REMOVE #cs, #ck"
        condition = "attribute_not_exists(#st)"
        names |= {"#cs": CREATED_SHARD, "#ck": CREATED_KEY}
        del names["#cr"]
    elif created is None:
        status = "SET #id = :id, #by = :by, #reason = :reason REMOVE #st"
        condition = "#st = :hidden AND attribute_not_exists(#cr)"
    else:
        created_at, shards = created
        status = "SET #id = :id, #by = :by, #reason = :reason, #cs = :cs, #ck = :ck REMOVE #st"
        condition = "#st = :hidden AND #cr = :cr"
        names |= {"#cs": CREATED_SHARD, "#ck": CREATED_KEY}
        values |= {
            ":cr": s_attr(created_at),
            ":cs": s_attr(created_shard(item_id, shards)),
            ":ck": s_attr(created_key(created_at, item_id)),
        }
    record = {
        "TableName": table,
        "Key": record_key(item_id),
        "UpdateExpression": status,
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
    audit = audit_row(item_id, "hide" if hidden else "unhide", by=by, reason=reason, now=now)
    shard = set_shard(item_id, HIDDEN_SETS)
    return [
        {"Update": record},
        {"Put": {"TableName": table, "Item": audit}},
        set_member(table, hidden_set_pk(shard), item_id, add=hidden),
    ]


def tombstone_writes(table: str, item_id: str, *, by: str, reason: str, now: str) -> list[dict[str, Any]]:
    """The four writes of a delete, for one TransactWriteItems: the tombstone (conditioned on not being one
    already, so a repeat writes nothing; the metadata stays for the audit, the by-created keys go: newest items never
    list it), the audit row, the id added to its deny set and taken out of its hidden set (a deleted id is denied,
    no longer merely hidden)."""
    names = {"#st": ITEM_STATUS, "#id": ITEM_ID, "#by": BY, "#reason": REASON, "#cs": CREATED_SHARD, "#ck": CREATED_KEY}
    values = {":id": s_attr(item_id), ":by": s_attr(by), ":reason": s_attr(reason), ":deleted": s_attr(DELETED)}
    record = {
        "TableName": table,
        "Key": record_key(item_id),
        "UpdateExpression": "SET #st = :deleted, #id = :id, #by = :by, #reason = :reason REMOVE #cs, #ck",
        "ConditionExpression": "attribute_not_exists(#st) OR #st <> :deleted",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
    audit = audit_row(item_id, "delete", by=by, reason=reason, now=now)
    return [
        {"Update": record},
        {"Put": {"TableName": table, "Item": audit}},
        set_member(table, deny_set_pk(set_shard(item_id, DENY_SETS)), item_id, add=True),
        set_member(table, hidden_set_pk(set_shard(item_id, HIDDEN_SETS)), item_id, add=False),
    ]


def audit_row(item_id: str, op: str, *, by: str, reason: str, now: str) -> dict[str, Any]:
    return {
        PK: s_attr(item_record_pk(item_id)),
        SK: s_attr(audit_sk(now, uuid.uuid4().hex)),
        ITEM_ID: s_attr(item_id),
        OP: s_attr(op),
        BY: s_attr(by),
        REASON: s_attr(reason),
        AT: s_attr(now),
    }


def set_member(table: str, set_pk: str, item_id: str, *, add: bool) -> dict[str, Any]:
    """ADD the id to one String Set (creating it) or DELETE it (a String Set left empty disappears)."""
    return {
        "Update": {
            "TableName": table,
            "Key": {PK: s_attr(set_pk), SK: s_attr(SET_SK)},
            "UpdateExpression": f"{'ADD' if add else 'DELETE'} #ids :ids",
            "ExpressionAttributeNames": {"#ids": SET_IDS},
            "ExpressionAttributeValues": {":ids": {"SS": [item_id]}},
        }
    }


# One UpdateItem creates or replaces: created_at and the by-created keys are set by the first put only, and only on
# an item with no takedown status (PUT_CONDITION); a hidden or deleted item's put (PUT_TAKEN_DOWN) leaves the keys out,
# so newest items never list it (an unhide puts them back from created_at).
PUT_UPDATE = (
    "SET #id = :id, #meta = :meta, #up = :now, #cr = if_not_exists(#cr, :now), "
    "#cs = if_not_exists(#cs, :cs), #ck = if_not_exists(#ck, :ck) ADD #rev :one"
)
PUT_CONDITION = "attribute_not_exists(#st)"
PUT_TAKEN_DOWN = "SET #id = :id, #meta = :meta, #up = :now, #cr = if_not_exists(#cr, :now) ADD #rev :one"
PUT_NAMES = {
    "#id": ITEM_ID,
    "#meta": ITEM_META,
    "#up": UPDATED_AT,
    "#cr": CREATED_AT,
    "#cs": CREATED_SHARD,
    "#ck": CREATED_KEY,
    "#rev": REV,
}


# An unhide whose created_at read lost a race with a first put reads again (once is enough: created_at is set once).
UNHIDE_ATTEMPTS = 2

# BatchGetItem takes at most 100 keys; unprocessed keys (throttling) are asked again this many times, backing off.
BATCH_GET_KEYS = 100
BATCH_GET_ATTEMPTS = 8

# One created-shard's range, newest first (design section 6): BETWEEN is inclusive on both ends.
NEWEST_CONDITION = "#cs = :cs AND #ck BETWEEN :low AND :high"
NEWEST_NAMES = {"#cs": CREATED_SHARD, "#ck": CREATED_KEY}


def newest_values(shard: str, low: str, high: str) -> dict[str, Any]:
    return {":cs": s_attr(shard), ":low": s_attr(low), ":high": s_attr(high)}


def put_values(item_id: str, meta: str, now: str, shards: int) -> dict[str, Any]:
    return {
        ":id": s_attr(item_id),
        ":meta": s_attr(meta),
        ":now": s_attr(now),
        ":cs": s_attr(created_shard(item_id, shards)),
        ":ck": s_attr(created_key(now, item_id)),
        ":one": n_attr(1),
    }


class ItemStore:
    """The ItemCatalog port on DynamoDB."""

    def __init__(self, client: Any, table: str, created_shards: int = DEFAULT_CREATED_SHARDS) -> None:
        self.client = client
        self.table = table
        self.created_shards = created_shards

    def put(self, item_id: str, meta: str, now: str) -> ItemRecord:
        values = put_values(item_id, meta, now, self.created_shards)
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=record_key(item_id),
                UpdateExpression=PUT_UPDATE,
                ConditionExpression=PUT_CONDITION,
                ExpressionAttributeNames={**PUT_NAMES, "#st": ITEM_STATUS},
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
            # Hidden or deleted: the metadata is replaced, the item stays out of the by-created index.
            names = {name: PUT_NAMES[name] for name in ("#id", "#meta", "#up", "#cr", "#rev")}
            response = self.client.update_item(
                TableName=self.table,
                Key=record_key(item_id),
                UpdateExpression=PUT_TAKEN_DOWN,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={k: v for k, v in values.items() if k not in {":cs", ":ck"}},
                ReturnValues="ALL_NEW",
            )
        return item_record(response["Attributes"])

    def get(self, item_id: str, consistent: bool = False) -> ItemRecord | None:
        response = self.client.get_item(TableName=self.table, Key=record_key(item_id), ConsistentRead=consistent)
        item = response.get("Item")
        # A record without meta holds only a takedown status (an item hidden without ever being put).
        return None if item is None or ITEM_META not in item else item_record(item)

    def get_many(self, item_ids: Sequence[str]) -> dict[str, ItemRecord]:
        """BatchGetItem, 100 keys a request; unprocessed keys are asked again (backing off), never dropped."""
        # A status-only record (hidden, never put) was never put.
        return {item[ITEM_ID]["S"]: item_record(item) for item in self._records(item_ids) if ITEM_META in item}

    def statuses(self, item_ids: Sequence[str]) -> dict[str, str]:
        """The records' status alone (a projection: the metadata does not travel, though it is read and priced)."""
        found = self._records(item_ids, {"#id": ITEM_ID, "#st": ITEM_STATUS})
        return {item[ITEM_ID]["S"]: item[ITEM_STATUS]["S"] for item in found if ITEM_STATUS in item}

    def _records(self, item_ids: Sequence[str], projection: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """The records of those ids (each id once, absent ones missing), only the ``projection`` attributes if given:
        100 keys a BatchGetItem; unprocessed keys are asked again (backing off), never dropped."""
        found: list[dict[str, Any]] = []
        unique = list(dict.fromkeys(item_ids))
        for start in range(0, len(unique), BATCH_GET_KEYS):
            keys: dict[str, Any] = {"Keys": [record_key(i) for i in unique[start : start + BATCH_GET_KEYS]]}
            if projection:
                keys |= {"ProjectionExpression": ", ".join(projection), "ExpressionAttributeNames": dict(projection)}
            request: dict[str, Any] = {self.table: keys}
            for attempt in range(BATCH_GET_ATTEMPTS):
                response = self.client.batch_get_item(RequestItems=request)
                found.extend(response["Responses"].get(self.table, []))
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(min(1.0, 0.05 * 2**attempt))
            else:
                raise RuntimeError(f"BatchGetItem left keys unprocessed after {BATCH_GET_ATTEMPTS} attempts")
        return found

    def newest(self, shard: str, low: str, high: str, limit: int) -> ShardPage:
        """One Query of the by-created shard (more only if a 1 MB page cut it short of ``limit``)."""
        records: list[ItemRecord] = []
        start: dict[str, Any] | None = None
        while True:
            response = self.client.query(
                TableName=self.table,
                IndexName=BY_CREATED_INDEX,
                KeyConditionExpression=NEWEST_CONDITION,
                ExpressionAttributeNames=NEWEST_NAMES,
                ExpressionAttributeValues=newest_values(shard, low, high),
                ScanIndexForward=False,
                Limit=limit - len(records),
                **({"ExclusiveStartKey": start} if start else {}),
            )
            records += [item_record(item) for item in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if start is None or len(records) >= limit:
                return ShardPage(records, more=start is not None)

    def set_hidden(self, item_id: str, hidden: bool, by: str, reason: str, now: str) -> bool:
        if hidden:
            return self._transact(takedown_writes(self.table, item_id, True, by=by, reason=reason, now=now))
        # The by-created keys come back from the record's created_at: a consistent read first, and again if a first
        # put set created_at between that read and the transaction (its condition refused).
        for _ in range(UNHIDE_ATTEMPTS):
            item = self.client.get_item(TableName=self.table, Key=record_key(item_id), ConsistentRead=True).get("Item")
            if item is None or item.get(ITEM_STATUS, {}).get("S") != HIDDEN:
                return False
            created = (item[CREATED_AT]["S"], self.created_shards) if CREATED_AT in item else None
            writes = takedown_writes(self.table, item_id, False, by=by, reason=reason, now=now, created=created)
            if self._transact(writes):
                return True
        return False

    def set_deleted(self, item_id: str, by: str, reason: str, now: str) -> bool:
        return self._transact(tombstone_writes(self.table, item_id, by=by, reason=reason, now=now))

    def _transact(self, writes: list[dict[str, Any]]) -> bool:
        """True when written; False when the record's condition (the first write) refused, nothing written."""
        try:
            self.client.transact_write_items(TransactItems=writes)
        except ClientError as error:
            reasons = error.response.get("CancellationReasons") or []
            if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                return False
            raise
        return True

    def hidden(self) -> frozenset[str]:
        return self._set_union([hidden_set_pk(shard) for shard in range(HIDDEN_SETS)])

    def denied(self, consistent: bool = False) -> frozenset[str]:
        return self._set_union([deny_set_pk(shard) for shard in range(DENY_SETS)], consistent)

    def _set_union(self, set_pks: Sequence[str], consistent: bool = False) -> frozenset[str]:
        """Every id of those String Sets, one BatchGetItem (eventually consistent unless ``consistent``)."""
        keys = [{PK: s_attr(set_pk), SK: s_attr(SET_SK)} for set_pk in set_pks]
        found: set[str] = set()
        request: dict[str, Any] = {
            self.table: {
                "Keys": keys,
                "ProjectionExpression": "#ids",
                "ExpressionAttributeNames": {"#ids": SET_IDS},
                "ConsistentRead": consistent,
            }
        }
        while request:
            response = self.client.batch_get_item(RequestItems=request)
            for item in response["Responses"].get(self.table, []):
                found.update(item.get(SET_IDS, {}).get("SS", []))
            request = response.get("UnprocessedKeys") or {}
        return frozenset(found)
