"""The items table: ``pk=item#<id>``, ``sk=meta`` holds an item's metadata record.

Its own table rather than rows of the board table: the board table takes the aggregator's write rate and has six
GSIs, items are written at admin rate and read by id (docs/briefs design section 1).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
    ITEM_ID,
    ITEM_META,
    ITEM_RECORD_SK,
    ITEM_STATUS,
    MARKER_ORDER_SPACE,
    OP,
    PK,
    REASON,
    REV,
    SET_IDS,
    SET_SK,
    SK,
    TAKEDOWN_PARTITIONS,
    UPDATED_AT,
    audit_sk,
    deny_set_pk,
    hidden_set_pk,
    item_record_pk,
    marker_item_id,
    marker_order_of,
    marker_sk,
    skeleton_set_pk,
)
from shardboard.domain.items.lookalike import skeleton_marker
from shardboard.domain.items.records import (
    DEFAULT_CREATED_SHARDS,
    DELETED,
    HIDDEN,
    SKELETONS,
    DeletedItem,
    ItemRecord,
    ShardPage,
    created_key,
    created_shard,
    marker_order,
    set_shard,
)
from shardboard.domain.ports import TakedownListing


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
        taken_down_at=item[AT]["S"] if status and AT in item else None,
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
    old_set: bool = False,
) -> list[dict[str, Any]]:
    """The writes of a hide (or unhide), for one TransactWriteItems: the record's status (conditioned on the
    previous one, so a repeat writes nothing), the audit row and the id's hidden marker put (deleted); ``old_set``:
    an unhide also takes the id out of the String Set an earlier release put it in.

    A hide also takes the record out of the by-created index (newest items never list it); an unhide puts it back
    from ``created`` (its created_at, read first, and the table's created shards), conditioned on that created_at,
    or on none when the item was never put (a put may not slip in between the read and the write)."""
    names = {"#st": ITEM_STATUS, "#id": ITEM_ID, "#by": BY, "#reason": REASON, "#cr": CREATED_AT, "#at": AT}
    values = {":id": s_attr(item_id), ":by": s_attr(by), ":reason": s_attr(reason), ":hidden": s_attr(HIDDEN)}
    if hidden:
        status = "SET #st = :hidden, #id = :id, #by = :by, #reason = :reason, #at = :now REMOVE #cs, #ck"
        condition = "attribute_not_exists(#st)"
        names |= {"#cs": CREATED_SHARD, "#ck": CREATED_KEY}
        values |= {":now": s_attr(now)}
        del names["#cr"]
    elif created is None:
        status = "SET #id = :id, #by = :by, #reason = :reason REMOVE #st, #at"
        condition = "#st = :hidden AND attribute_not_exists(#cr)"
    else:
        created_at, shards = created
        status = "SET #id = :id, #by = :by, #reason = :reason, #cs = :cs, #ck = :ck REMOVE #st, #at"
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
    writes = [
        {"Update": record},
        {"Put": {"TableName": table, "Item": audit}},
        marker_write(table, HIDDEN, item_id, put=hidden),
    ]
    if old_set and not hidden:
        writes.append(old_set_delete(table, HIDDEN, item_id))
    return writes


def tombstone_writes(
    table: str, item_id: str, *, by: str, reason: str, now: str, old_set: bool = False
) -> list[dict[str, Any]]:
    """The writes of a delete, for one TransactWriteItems: the tombstone (conditioned on not being one already, so a
    repeat writes nothing; the metadata stays for the audit, the by-created keys go: newest items never list it), the
    audit row, the id's deny marker and its skeleton's marker put (its look-alikes are refused) and its hidden marker
    deleted (a deleted id is denied, no longer merely hidden); ``old_set``: the id also leaves the hidden String Set an
    earlier release put it in."""
    names = {"#st": ITEM_STATUS, "#id": ITEM_ID, "#by": BY, "#reason": REASON, "#cs": CREATED_SHARD, "#ck": CREATED_KEY}
    names |= {"#at": AT}
    values = {":id": s_attr(item_id), ":by": s_attr(by), ":reason": s_attr(reason), ":deleted": s_attr(DELETED)}
    values |= {":now": s_attr(now)}
    record = {
        "TableName": table,
        "Key": record_key(item_id),
        "UpdateExpression": "SET #st = :deleted, #id = :id, #by = :by, #reason = :reason, #at = :now REMOVE #cs, #ck",
        "ConditionExpression": "attribute_not_exists(#st) OR #st <> :deleted",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
    audit = audit_row(item_id, "delete", by=by, reason=reason, now=now)
    writes = [
        {"Update": record},
        {"Put": {"TableName": table, "Item": audit}},
        marker_write(table, DELETED, item_id, put=True),
        marker_write(table, SKELETONS, skeleton_marker(item_id), put=True),
        marker_write(table, HIDDEN, item_id, put=False),
    ]
    if old_set:
        writes.append(old_set_delete(table, HIDDEN, item_id))
    return writes


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


def partition_pk(status: str, partition: int) -> str:
    """The partition of a status's markers (and of the String Set an earlier release kept there); SKELETONS: of the
    deleted ids' skeleton markers."""
    if status == SKELETONS:
        return skeleton_set_pk(partition)
    return hidden_set_pk(partition) if status == HIDDEN else deny_set_pk(partition)


def marker_key(status: str, item_id: str) -> dict[str, Any]:
    """One id's marker of ``status``: a key and nothing else (ids spread over the partitions by a stable hash)."""
    pk = partition_pk(status, set_shard(item_id, TAKEDOWN_PARTITIONS))
    return {PK: s_attr(pk), SK: s_attr(marker_sk(marker_order(item_id), item_id))}


def marker_write(table: str, status: str, item_id: str, *, put: bool) -> dict[str, Any]:
    """Put (or delete) one id's marker: its own small item, so no number of takedowns ever fills an item."""
    key = marker_key(status, item_id)
    return {"Put": {"TableName": table, "Item": key}} if put else {"Delete": {"TableName": table, "Key": key}}


def old_set_key(status: str, item_id: str) -> dict[str, Any]:
    """The String Set an earlier release kept the id in (one per partition, sk ``set``)."""
    return {PK: s_attr(partition_pk(status, set_shard(item_id, TAKEDOWN_PARTITIONS))), SK: s_attr(SET_SK)}


def old_set_delete(table: str, status: str, item_id: str) -> dict[str, Any]:
    """DELETE the id from its old String Set (a set left empty loses its attribute; DynamoDB keeps the key, which
    lists nothing)."""
    return {
        "Update": {
            "TableName": table,
            "Key": old_set_key(status, item_id),
            "UpdateExpression": "DELETE #ids :ids",
            "ExpressionAttributeNames": {"#ids": SET_IDS},
            "ExpressionAttributeValues": {":ids": {"SS": [item_id]}},
        }
    }


def old_set_ids(item: Mapping[str, Any]) -> list[str]:
    return list(item.get(SET_IDS, {}).get("SS", []))


def listed_ids(items: Sequence[Mapping[str, Any]]) -> set[str]:
    """The ids of a partition's items: each marker's, and every id of an earlier release's String Set."""
    found: set[str] = set()
    for item in items:
        sk = item[SK]["S"]
        found.update(old_set_ids(item) if sk == SET_SK else [marker_item_id(sk)])
    return found


def wire_size(item: Mapping[str, Any]) -> int:
    """Bytes DynamoDB counts for a takedown partition's item (names and values of its S and SS attributes)."""
    size = 0
    for name, value in item.items():
        texts = value["SS"] if "SS" in value else [value["S"]]
        size += len(name.encode()) + sum(len(text.encode("utf-8", errors="surrogatepass")) for text in texts)
    return size


def partition_size(items: Sequence[Mapping[str, Any]], complete: bool) -> int | None:
    """The bytes of a whole partition, from the items of its first page (read in descending key order): exact when
    that was all of it, else scaled by the share of the hash space the page's markers cover (None: it read none)."""
    markers = [item for item in items if item[SK]["S"] != SET_SK]
    old_sets: int = sum(wire_size(item) for item in items if item[SK]["S"] == SET_SK)
    read: int = sum(wire_size(item) for item in markers)
    if complete:
        return old_sets + read
    if not markers:
        return None
    covered: int = MARKER_ORDER_SPACE - min(marker_order_of(item[SK]["S"]) for item in markers)
    scaled: int = math.ceil(read * MARKER_ORDER_SPACE / covered)
    return old_sets + scaled


def listing_of(pages: Sequence[tuple[Sequence[Mapping[str, Any]], bool]]) -> TakedownListing:
    """A listing of every partition's first page(s) and whether each was complete."""
    sizes = [partition_size(items, complete) for items, complete in pages]
    return TakedownListing(
        frozenset().union(*(listed_ids(items) for items, _ in pages)),
        complete=all(complete for _, complete in pages),
        size=None if None in sizes else sum(size or 0 for size in sizes),
    )


# One UpdateItem creates or replaces: created_at and the by-created keys are set by the first put only, and only on
# an item with no takedown status (PUT_CONDITION); a hidden or deleted item's put (PUT_TAKEN_DOWN) leaves the keys out,
# so newest items never list it (an unhide puts them back from created_at).
PUT_UPDATE = (
    "SET #id = :id, #meta = :meta, #up = :now, #cr = if_not_exists(#cr, :now), "
    "#cs = if_not_exists(#cs, :cs), #ck = if_not_exists(#ck, :ck) ADD #rev :one"
)
PUT_CONDITION = "attribute_not_exists(#st)"
PUT_NOT_DELETED = "attribute_not_exists(#st) OR #st <> :deleted"
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
# Two takedowns of one id at once (or of ids sharing an old set) cancel each other's transaction (TransactionConflict):
# tried again this many times, backing off, before the error goes up.
TRANSACT_ATTEMPTS = 5

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
            # Hidden: the metadata is replaced, the item stays out of the by-created index. Deleted: refused (the
            # tombstone keeps the metadata it had for the audit), in the same condition, so no delete slips between.
            names = {name: PUT_NAMES[name] for name in ("#id", "#meta", "#up", "#cr", "#rev")}
            kept = {k: v for k, v in values.items() if k not in {":cs", ":ck"}}
            try:
                response = self.client.update_item(
                    TableName=self.table,
                    Key=record_key(item_id),
                    UpdateExpression=PUT_TAKEN_DOWN,
                    ConditionExpression=PUT_NOT_DELETED,
                    ExpressionAttributeNames={**names, "#st": ITEM_STATUS},
                    ExpressionAttributeValues={**kept, ":deleted": s_attr(DELETED)},
                    ReturnValues="ALL_NEW",
                )
            except ClientError as refused:
                if error_code(refused) == CONDITION_FAILED:
                    raise DeletedItem(item_id) from None
                raise
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
            old_set = self._in_old_set(HIDDEN, item_id)
            writes = takedown_writes(
                self.table, item_id, False, by=by, reason=reason, now=now, created=created, old_set=old_set
            )
            if self._transact(writes):
                return True
        return False

    def set_deleted(self, item_id: str, by: str, reason: str, now: str) -> bool:
        old_set = self._in_old_set(HIDDEN, item_id)
        return self._transact(tombstone_writes(self.table, item_id, by=by, reason=reason, now=now, old_set=old_set))

    def _in_old_set(self, status: str, item_id: str) -> bool:
        """Whether an earlier release's String Set holds the id (read after the record: an old writer puts both in
        one transaction). One consistent GetItem: 1 unit once every set is migrated and gone."""
        response = self.client.get_item(
            TableName=self.table,
            Key=old_set_key(status, item_id),
            ConsistentRead=True,
            ProjectionExpression="#ids",
            ExpressionAttributeNames={"#ids": SET_IDS},
        )
        return item_id in old_set_ids(response.get("Item") or {})

    def _transact(self, writes: list[dict[str, Any]]) -> bool:
        """True when written; False when the first write's condition refused, nothing written. A transaction that a
        concurrent one on the same items cancelled (TransactionConflict) is tried again."""
        attempt = 0
        while True:
            try:
                self.client.transact_write_items(TransactItems=writes)
                return True
            except ClientError as error:
                reasons = error.response.get("CancellationReasons") or []
                if reasons and reasons[0].get("Code") == "ConditionalCheckFailed":
                    return False
                attempt += 1
                if attempt == TRANSACT_ATTEMPTS or not any(r.get("Code") == "TransactionConflict" for r in reasons):
                    raise
            time.sleep(min(1.0, 0.05 * 2**attempt))

    def list_taken_down(self, status: str, limit: int | None = None, consistent: bool = False) -> TakedownListing:
        per_partition = None if limit is None else max(1, math.ceil(limit / TAKEDOWN_PARTITIONS))
        partitions = [partition_pk(status, partition) for partition in range(TAKEDOWN_PARTITIONS)]
        with ThreadPoolExecutor(max_workers=TAKEDOWN_PARTITIONS) as pool:
            pages = list(pool.map(lambda pk: self._list_partition(pk, per_partition, consistent), partitions))
        return listing_of(pages)

    def _list_partition(self, pk: str, limit: int | None, consistent: bool) -> tuple[list[dict[str, Any]], bool]:
        """One partition's items, highest sort key first (an earlier release's set, if any, then the markers in
        hash order): every page, or the first ``limit`` items and whether that was all."""
        items: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            response = self.client.query(
                TableName=self.table,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": PK},
                ExpressionAttributeValues={":pk": s_attr(pk)},
                ScanIndexForward=False,
                ConsistentRead=consistent,
                **({"Limit": limit} if limit else {}),
                **({"ExclusiveStartKey": start} if start else {}),
            )
            items += response.get("Items", [])
            start = response.get("LastEvaluatedKey")
            if start is None:
                return items, True
            if limit is not None:
                return items, False

    def taken_down_among(self, item_ids: Sequence[str], status: str, consistent: bool = False) -> frozenset[str]:
        """BatchGetItem of the ids' markers, 100 keys a request; unprocessed keys are asked again, never dropped."""
        found: set[str] = set()
        unique = list(dict.fromkeys(item_ids))
        for start in range(0, len(unique), BATCH_GET_KEYS):
            keys = [marker_key(status, item_id) for item_id in unique[start : start + BATCH_GET_KEYS]]
            request: dict[str, Any] = {self.table: {"Keys": keys, "ConsistentRead": consistent}}
            for attempt in range(BATCH_GET_ATTEMPTS):
                response = self.client.batch_get_item(RequestItems=request)
                found.update(marker_item_id(item[SK]["S"]) for item in response["Responses"].get(self.table, []))
                request = response.get("UnprocessedKeys") or {}
                if not request:
                    break
                time.sleep(min(1.0, 0.05 * 2**attempt))
            else:
                raise RuntimeError(f"BatchGetItem left keys unprocessed after {BATCH_GET_ATTEMPTS} attempts")
        return frozenset(found)

    def hidden(self) -> frozenset[str]:
        return self.list_taken_down(HIDDEN).ids

    def denied(self, consistent: bool = False) -> frozenset[str]:
        return self.list_taken_down(DELETED, consistent=consistent).ids

    def mark_skeletons(self, item_ids: Sequence[str]) -> int:
        markers = sorted({skeleton_marker(item_id) for item_id in item_ids})
        missing = set(markers) - self.taken_down_among(markers, SKELETONS, consistent=True)
        for marker in sorted(missing):
            self.client.put_item(TableName=self.table, Item=marker_key(SKELETONS, marker))
        return len(missing)

    def migrate_takedown_sets(self) -> int:
        """Each id of an old set: its marker put and the id taken out of the set, in one transaction conditioned on
        the record still having that status; an id whose status changed (an unhide, a delete raced by an old writer)
        only leaves the set. Safe while traffic flows and to run twice."""
        moved = 0
        for status in (HIDDEN, DELETED):
            for partition in range(TAKEDOWN_PARTITIONS):
                key = {PK: s_attr(partition_pk(status, partition)), SK: s_attr(SET_SK)}
                item = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item") or {}
                for item_id in old_set_ids(item):
                    moved += self._move_to_marker(status, item_id)
                self._drop_empty_set(key)
        return moved

    def _move_to_marker(self, status: str, item_id: str) -> int:
        check = {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": record_key(item_id),
                "ConditionExpression": "#st = :st",
                "ExpressionAttributeNames": {"#st": ITEM_STATUS},
                "ExpressionAttributeValues": {":st": s_attr(status)},
            }
        }
        leave = old_set_delete(self.table, status, item_id)
        if self._transact([check, marker_write(self.table, status, item_id, put=True), leave]):
            return 1
        self._transact([leave])
        return 0

    def _drop_empty_set(self, key: dict[str, Any]) -> None:
        """Delete an old set's item once it holds no id (an old writer adding one meanwhile keeps it)."""
        try:
            self.client.delete_item(
                TableName=self.table,
                Key=key,
                ConditionExpression="attribute_not_exists(#ids)",
                ExpressionAttributeNames={"#ids": SET_IDS},
            )
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                raise
