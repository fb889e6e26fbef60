"""The base (views) table: one write-sharded counter item per (item, write shard)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import (
    CONDITION_FAILED,
    Item,
    error_code,
    int_of,
    n_attr,
    parallel_scan,
    s_attr,
    throttle_scope,
    throttling_as_domain,
)
from shardboard.adapters.keys import (
    ANSWER,
    BOARD_COUNTER_PREFIX,
    BUCKET,
    EXPIRES_AT,
    FINGERPRINT,
    IMPORT_ID,
    ITEM_ID,
    LAST_WRITER,
    PK,
    RATE_USED,
    SEEN_TOKEN,
    SHARD,
    VIEWS,
    WRITERS_PK,
    allowance_pk,
    board_counter,
    idempotency_pk,
    seen_pk,
    view_pk,
    writer_attr,
)
from shardboard.domain.aggregating.countable import board_of
from shardboard.domain.boards import GLOBAL_BOARD, is_reserved
from shardboard.domain.clock import Clock
from shardboard.domain.periods import DAY, bucket_of
from shardboard.domain.ports import PRESENT, TAKEN, WRITTEN, Allowance, CounterSet, Throttled, ThrottleScope
from shardboard.domain.retrying import retry_delay
from shardboard.domain.writing.dedupe import Seen, SeenOutcome
from shardboard.domain.writing.idempotency import (
    Answer,
    IdempotencyKeyReused,
    KeyedOutcome,
    KeyedRequest,
    OnceOutcome,
    OnceWrite,
)

# BatchGetItem reads at most 100 keys per request.
BATCH_GET_KEYS = 100
# Rounds of UnprocessedKeys retried (with jittered exponential back-off, capped) before a read gives up: DynamoDB
# returns them when the partition or the response size limit was hit, and an immediate retry would hit it again.
MAX_BATCH_GET_ROUNDS = 10


# A viewed view's transaction cancelled by a conflicting write on its marker or counter (a concurrent duplicate, a
# plain ADD on the same shard) is tried again this many times, after a jittered back-off: it wrote nothing.
MAX_CONFLICT_ATTEMPTS = 5
# Cancellation reasons of a throttled transaction item (TransactionCanceledException names them per item).
TRANSACTION_THROTTLES = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})


def counter_attribute(board: str) -> str:
    """The base attribute counting ``board``'s views: ``views`` for the global board, ``b:<board>`` otherwise."""
    return VIEWS if board == GLOBAL_BOARD else board_counter(board)


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
        anchor: str = DAY,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.table = table
        self.anchor = anchor  # the period kind base counters are keyed by (Settings.anchor)
        self.clock = clock  # what names the current bucket for a call that names none (the container's)
        self.sleep = sleep
        self.rng = rng or random.Random()

    def bucket(self, bucket: str | None = None) -> str:
        """``bucket``, or the current anchor bucket (the store's clock) where a view recorded now is counted."""
        if bucket:
            return bucket
        if self.clock is None:
            raise ValueError("name the counters' bucket: this store was given no clock to tell the current one")
        return bucket_of(self.anchor, self.clock())

    def add_view(
        self, item_id: str, shard: int, count: int = 1, bucket: str | None = None, boards: Sequence[str] = ()
    ) -> float:
        """Add ``count`` views to one write shard's counters in one write: ``views`` (the global board) and one
        counter per category board named, in the item of the view's anchor bucket. Returns the write units consumed.

        A write still throttled after botocore's retries raises ``Throttled`` (it wrote nothing).
        """
        with throttling_as_domain():
            response = self.client.update_item(
                **_counter_update(self.table, item_id, shard, self.bucket(bucket), boards=boards, count=count),
                ReturnConsumedCapacity="TOTAL",
            )
        return float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 1.0))

    def claim_writer(self) -> int:
        """A writer number no other writer ever got: ONE ``ADD`` on the registry item, its new value returned. A
        lost response only skips a number (a retry adds again), so two writers never hold the same one."""
        with throttling_as_domain():
            response = self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(WRITERS_PK)},
                UpdateExpression="ADD #last :one",
                ExpressionAttributeNames={"#last": LAST_WRITER},
                ExpressionAttributeValues={":one": n_attr(1)},
                ReturnValues="UPDATED_NEW",
            )
        return int_of(response["Attributes"][LAST_WRITER])

    def add_view_once(
        self,
        item_id: str,
        shard: int,
        count: int,
        once: OnceWrite,
        *,
        bucket: str | None = None,
        boards: Sequence[str] = (),
    ) -> OnceOutcome:
        """``add_view`` as a retry-safe write: the same ONE UpdateItem also sets the writer's attribute ``w:<writer>``
        to ``once.sequence``, on condition that it is absent or lower. A refusal means this very write was applied
        by an earlier attempt (docs/honest-counts.md, "Retried writes": the writer never has two writes outstanding
        on one counter item), so it is an outcome, not an error; botocore's own resend of a write that landed ends
        here too. Raises Throttled (this attempt wrote nothing)."""
        update = _counter_update(self.table, item_id, shard, self.bucket(bucket), boards=boards, count=count)
        update["UpdateExpression"] += ", #w = :seq"
        update["ExpressionAttributeNames"]["#w"] = writer_attr(once.writer)
        update["ExpressionAttributeValues"][":seq"] = n_attr(once.sequence)
        try:
            response = self.client.update_item(
                **update,
                ConditionExpression="attribute_not_exists(#w) OR #w < :seq",
                ReturnConsumedCapacity="TOTAL",
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return OnceOutcome(applied_now=False, units=_units(error.response, 1.0))
            scope = throttle_scope(error)
            if scope is None:
                raise
            raise Throttled(scope) from error
        return OnceOutcome(applied_now=True, units=_units(response, 1.0))

    def add_seen_view(
        self, item_id: str, shard: int, seen: Seen, bucket: str | None = None, boards: Sequence[str] = ()
    ) -> SeenOutcome:
        """One view of ``item_id`` by ``seen.viewer``, counted unless the viewer was seen already in this dedupe
        window: ONE TransactWriteItems puts the marker ``seen#...`` (``attribute_not_exists(pk)``, TTL at the
        window's end plus a grace) and adds 1 to the counters as ``add_view`` does. All or nothing, so two identical
        views at the same instant count once: the second finds the marker (ConditionalCheckFailed) and writes
        nothing. A marker holding ``seen.token`` was put by an earlier attempt of this same view (a lost response
        retried): the view counted then, and counts as counted now. Raises Throttled (nothing written)."""
        bucket = self.bucket(bucket)
        transact = [
            _seen_put(self.table, item_id, seen),
            {"Update": _counter_update(self.table, item_id, shard, bucket, boards=boards, count=1)},
        ]
        for attempt in range(MAX_CONFLICT_ATTEMPTS):
            if attempt:
                self.sleep(retry_delay(attempt - 1, self.rng))
            try:
                # botocore gives the call a ClientRequestToken and resends it with every retry of its own, so on
                # DynamoDB a retried lost response is idempotent too (within 10 minutes); the marker's token
                # covers every other retry, on any engine, for the whole window.
                response = self.client.transact_write_items(TransactItems=transact, ReturnConsumedCapacity="TOTAL")
            except ClientError as error:
                codes, reasons = _cancellation(error)
                if codes is None:
                    continue  # our own earlier attempt is still running: ask again, the marker will tell
                if codes and codes[0] == "ConditionalCheckFailed":
                    return SeenOutcome(counted=self._ours(reasons[0], item_id, seen), units=_units(error.response, 2.0))
                _raise_unless_conflict(error, codes, counter_position=1)
                continue
            return SeenOutcome(counted=True, units=_units(response, 4.0))
        raise Throttled(ThrottleScope.TABLE)  # conflicts every time: nothing was written, the caller may retry

    def add_keyed_view(
        self,
        item_id: str,
        shard: int,
        count: int,
        keyed: KeyedRequest,
        *,
        seen: Seen | None = None,
        bucket: str | None = None,
        boards: Sequence[str] = (),
    ) -> KeyedOutcome:
        """``count`` views of a request that carries an Idempotency-Key: ONE TransactWriteItems puts the key's marker
        ``idem#<key>`` (its fingerprint, the answer "counted", TTL one retention after now) on condition that no
        marker holds the key (``attribute_not_exists(pk) OR expires_at < :now``), with ``seen`` the viewer's marker
        as ``add_seen_view`` does, and adds the views to the counters. All or nothing: however many attempts of one
        key land at once or late, one transaction creates the marker and the others are refused and read it, so the
        key counts once. A held key with the same fingerprint is a replay (answered as the first request was);
        with another, ``IdempotencyKeyReused``. A viewer seen already is a duplicate, and the key then remembers
        that answer (one conditional PutItem). Raises Throttled (nothing written)."""
        bucket = self.bucket(bucket)
        transact = [self._key_put(keyed, Answer.COUNTED)]
        if seen is not None:
            transact.append(_seen_put(self.table, item_id, seen))
        transact.append({"Update": _counter_update(self.table, item_id, shard, bucket, boards=boards, count=count)})
        for attempt in range(MAX_CONFLICT_ATTEMPTS):
            if attempt:
                self.sleep(retry_delay(attempt - 1, self.rng))
            try:
                response = self.client.transact_write_items(TransactItems=transact, ReturnConsumedCapacity="TOTAL")
            except ClientError as error:
                codes, reasons = _cancellation(error)
                if codes is None:
                    continue  # our own earlier attempt is still running: ask again, the marker will tell
                refused = _units(error.response, 2.0)
                if codes and codes[0] == "ConditionalCheckFailed":
                    held = self._held_key(reasons[0], keyed)
                    if held is None:
                        continue  # the marker expired and went between the refusal and the read: try again
                    return _replay(held, keyed, refused)
                if seen is not None and len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                    if self._ours(reasons[1], item_id, seen):  # an earlier attempt of this request counted
                        return KeyedOutcome(Answer.COUNTED, replayed=False, units=refused)
                    return self._remember(keyed, Answer.DUPLICATE, refused)
                _raise_unless_conflict(error, codes, counter_position=len(transact) - 1)
                continue
            return KeyedOutcome(Answer.COUNTED, replayed=False, units=_units(response, 2.0 * len(transact)))
        raise Throttled(ThrottleScope.TABLE)  # conflicts every time: nothing was written, the caller may retry

    def _key_put(self, keyed: KeyedRequest, answer: Answer) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self.table,
                "Item": {
                    PK: s_attr(idempotency_pk(keyed.key)),
                    EXPIRES_AT: n_attr(keyed.expires_at),
                    FINGERPRINT: s_attr(keyed.fingerprint),
                    ANSWER: s_attr(answer.value),
                },
                "ConditionExpression": "attribute_not_exists(#pk) OR #expires < :now",
                "ExpressionAttributeNames": {"#pk": PK, "#expires": EXPIRES_AT},
                "ExpressionAttributeValues": {":now": n_attr(keyed.now)},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _remember(self, keyed: KeyedRequest, answer: Answer, units: float) -> KeyedOutcome:
        """Keep ``answer`` under the key of a request that wrote nothing (a duplicate), so a retry gets it too."""
        try:
            response = self.client.put_item(**self._key_put(keyed, answer)["Put"], ReturnConsumedCapacity="TOTAL")
        except ClientError as error:
            if error_code(error) != CONDITION_FAILED:
                scope = throttle_scope(error)
                if scope is None:
                    raise
                raise Throttled(scope) from error
            # Another attempt of the key got there first (or this one landed and botocore resent it): its answer.
            held = self._held_key({"Item": error.response.get("Item")}, keyed)
            if held is None:
                raise Throttled(ThrottleScope.TABLE) from error  # expired meanwhile: nothing of ours written, retry
            return _replay(held, keyed, units + _units(error.response, 1.0))
        return KeyedOutcome(answer, replayed=False, units=units + _units(response, 1.0))

    def _held_key(self, reason: Mapping[str, Any], keyed: KeyedRequest) -> Item | None:
        """The marker that refused a keyed write (returned with the refusal, or read when an engine does not)."""
        held: Item | None = reason.get("Item")
        if held is None:
            key = {PK: s_attr(idempotency_pk(keyed.key))}
            held = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
        return held

    def _ours(self, reason: Mapping[str, Any], item_id: str, seen: Seen) -> bool:
        """Whether the viewer's marker that refused a write holds this view's token (an earlier attempt landed)."""
        old: Item | None = reason.get("Item")
        if old is None:  # an engine that does not return it: read it
            marker = {PK: s_attr(seen_pk(seen.window, seen.viewer, item_id))}
            old = self.client.get_item(TableName=self.table, Key=marker, ConsistentRead=True).get("Item")
        return bool((old or {}).get(SEEN_TOKEN, {}).get("S") == seen.token)

    def take_allowance(self, allowance: Allowance) -> bool:
        """Add ``allowance.views`` to the client's counter for its window unless that would pass its limit: ONE
        UpdateItem (``ADD``, conditioned on the counter's room), so concurrent requests of one client are admitted
        exactly up to the limit. False when refused (nothing written; the refusal still consumes a write unit).
        The counter expires by the table's TTL after its window. Raises Throttled (nothing written)."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(allowance_pk(allowance.window, allowance.kind, allowance.client))},
                UpdateExpression="ADD #used :views SET #expires = :expires",
                ConditionExpression="attribute_not_exists(#used) OR #used <= :room",
                ExpressionAttributeNames={"#used": RATE_USED, "#expires": EXPIRES_AT},
                ExpressionAttributeValues={
                    ":views": n_attr(allowance.views),
                    ":room": n_attr(allowance.limit - allowance.views),
                    ":expires": n_attr(allowance.expires_at),
                },
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                return False
            scope = throttle_scope(error)
            if scope is None:
                raise
            raise Throttled(scope) from error
        return True

    def return_allowance(self, allowance: Allowance) -> None:
        """Give back the views ``take_allowance`` took for a view that was not written (a plain ``ADD`` of minus
        them: the counter exists, the take made it). Raises Throttled (nothing written)."""
        with throttling_as_domain():
            self.client.update_item(
                TableName=self.table,
                Key={PK: s_attr(allowance_pk(allowance.window, allowance.kind, allowance.client))},
                UpdateExpression="ADD #used :views",
                ExpressionAttributeNames={"#used": RATE_USED},
                ExpressionAttributeValues={":views": n_attr(-allowance.views)},
            )

    def set_counters(
        self, item_id: str, shard: int, bucket: str, counts: Mapping[str, int], import_id: str
    ) -> CounterSet:
        """Create one counter item holding the absolute ``counts`` (per board; the global board's is ``views``),
        tagged with ``import_id``, unless the item exists: then it is PRESENT when the same import wrote it, TAKEN
        when another did (or a writer: import shards are outside the writers' range, so that never happens).

        Used by ``shardboard import`` on its own write shards: a counter is written once, from nothing to its
        total, so counters still only grow and the stream carries the step like any other. Raises Throttled.
        """
        names = {"#pk": PK, "#item": ITEM_ID, "#shard": SHARD, "#bucket": BUCKET, "#import": IMPORT_ID}
        values = {
            ":item": s_attr(item_id),
            ":shard": n_attr(shard),
            ":bucket": s_attr(bucket),
            ":import": s_attr(import_id),
        }
        sets = ["#item = :item", "#shard = :shard", "#bucket = :bucket", "#import = :import"]
        for position, (board, count) in enumerate(sorted(counts.items())):
            names[f"#c{position}"] = counter_attribute(board)
            values[f":c{position}"] = n_attr(count)
            sets.append(f"#c{position} = :c{position}")
        key = {PK: s_attr(view_pk(item_id, shard, bucket))}
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=key,
                UpdateExpression=f"SET {', '.join(sets)}",
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnConsumedCapacity="TOTAL",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error_code(error) == CONDITION_FAILED:
                old: Item | None = error.response.get("Item")  # type: ignore[assignment]
                if old is None:  # an engine that does not return it: read it
                    old = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item", {})
                owner = old.get(IMPORT_ID, {}).get("S")
                return CounterSet(PRESENT if owner == import_id else TAKEN, 1.0)
            scope = throttle_scope(error)
            if scope is None:
                raise
            raise Throttled(scope) from error
        return CounterSet(WRITTEN, float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 1.0)))

    def item_total(self, item_id: str, write_shards: int, bucket: str | None = None) -> int:
        """Exact views of one item in one anchor bucket (None: the current one, where ``add_view`` writes): the sum
        of its shard counters (strongly consistent)."""
        bucket = self.bucket(bucket)
        keys = [{PK: s_attr(view_pk(item_id, k, bucket))} for k in range(write_shards)]
        return sum(int_of(item.get(VIEWS)) for item in self._batch_get(keys, "#v", {"#v": VIEWS}))

    def shard_counts(self, item_id: str, shards: Iterable[int], bucket: str | None = None) -> dict[int, int]:
        """The counters of ``item_id`` on ``shards`` in one anchor bucket (None: the current one; strongly
        consistent); shards never written are left out."""
        keys = [{PK: s_attr(view_pk(item_id, k, self.bucket(bucket)))} for k in sorted(set(shards))]
        items = self._batch_get(keys, "#s, #v", {"#s": SHARD, "#v": VIEWS})
        return {int_of(item.get(SHARD)): int_of(item.get(VIEWS)) for item in items}

    def counters(self, item_id: str, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, int]]:
        """Every board's counter of ``item_id`` on each (anchor bucket, write shard) in ``keys`` (consistent)."""
        wanted = [{PK: s_attr(view_pk(item_id, shard, bucket))} for bucket, shard in sorted(set(keys))]
        found: dict[tuple[str, int], dict[str, int]] = {}
        for item in self._batch_get(wanted, None, None):
            for _, bucket, shard, board, value in counter_rows(item):
                found.setdefault((bucket, shard), {})[board] = value
        return found

    def _batch_get(self, keys: list[Item], projection: str | None, names: dict[str, str] | None) -> Iterator[Item]:
        """Every item of ``keys`` that exists, strongly consistent, 100 keys a request; UnprocessedKeys are retried
        after a jittered exponential back-off (capped), as AWS advises, never in a tight loop."""
        for start in range(0, len(keys), BATCH_GET_KEYS):
            wanted: dict[str, Any] = {"Keys": keys[start : start + BATCH_GET_KEYS], "ConsistentRead": True}
            if projection:
                wanted |= {"ProjectionExpression": projection, "ExpressionAttributeNames": names}
            request: dict[str, Any] = {self.table: wanted}
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

    def scan_counters_all(self, segments: int = 4) -> list[tuple[str, str, int, str, int]]:
        """(item, bucket, shard, board, views) of every board counter, from a parallel segmented scan: the truth
        every aggregate, entry and snapshot is checked against."""
        rows: list[tuple[str, str, int, str, int]] = []
        for part in parallel_scan(self.client, self.table, segments, None, None):
            for item in part:
                if ITEM_ID in item and BUCKET in item and SHARD in item:
                    name, bucket, shard = item[ITEM_ID]["S"], item[BUCKET]["S"], int_of(item[SHARD])
                    if item[PK]["S"] == view_pk(name, shard, bucket):
                        rows.extend(counter_rows(item))
        return rows

    def scan_totals(self, segments: int = 4) -> dict[str, int]:
        """Every item's exact all-time views on the global board."""
        totals: dict[str, int] = {}
        for name, _, _, board, views in self.scan_counters_all(segments):
            if board == GLOBAL_BOARD:
                totals[name] = totals.get(name, 0) + views
        return totals


def _counter_update(
    table: str, item_id: str, shard: int, bucket: str, *, boards: Sequence[str], count: int
) -> dict[str, Any]:
    """The counter write of a view (UpdateItem parameters, or a transaction's Update): ``ADD`` ``count`` to
    ``views`` and to each named board's counter on one write shard's item of the anchor bucket."""
    names = {"#views": VIEWS, "#item": ITEM_ID, "#shard": SHARD, "#bucket": BUCKET}
    # A crawler's view counts on the reserved boards alone: the global counter is added 0, so it exists (the
    # aggregator's filter and decoder want it) but no global step is emitted.
    adds = ["#views :zero" if any(is_reserved(board) for board in boards) else "#views :count"]
    for position, board in enumerate(boards):
        names[f"#b{position}"] = board_counter(board)
        adds.append(f"#b{position} :count")
    return {
        "TableName": table,
        "Key": {PK: s_attr(view_pk(item_id, shard, bucket))},
        "UpdateExpression": f"ADD {', '.join(adds)} SET #item = :item, #shard = :shard, #bucket = :bucket",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {
            ":count": n_attr(count),
            **({":zero": n_attr(0)} if adds[0] == "#views :zero" else {}),
            ":item": s_attr(item_id),
            ":shard": n_attr(shard),
            ":bucket": s_attr(bucket),
        },
    }


def _seen_put(table: str, item_id: str, seen: Seen) -> dict[str, Any]:
    """A transaction's Put of a viewer's dedupe marker, refused when the marker exists (returned with the refusal)."""
    return {
        "Put": {
            "TableName": table,
            "Item": {
                PK: s_attr(seen_pk(seen.window, seen.viewer, item_id)),
                EXPIRES_AT: n_attr(seen.expires_at),
                SEEN_TOKEN: s_attr(seen.token),
            },
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": PK},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
    }


def _cancellation(error: ClientError) -> tuple[list[str] | None, list[Mapping[str, Any]]]:
    """A failed transaction's per-item reasons; None for TransactionInProgress (ask again). Any error other than a
    cancellation raises: Throttled when it is a throttle, itself otherwise."""
    code = error_code(error)
    if code == "TransactionInProgressException":
        return None, []
    if code != "TransactionCanceledException":
        scope = throttle_scope(error)
        if scope is None:
            raise error
        raise Throttled(scope) from error
    reasons: list[Mapping[str, Any]] = list(error.response.get("CancellationReasons") or [])
    return [str(reason.get("Code") or "None") for reason in reasons], reasons


def _raise_unless_conflict(error: ClientError, codes: Sequence[str], counter_position: int) -> None:
    """A cancelled transaction that is neither refused by a marker nor in conflict: Throttled (which limit: the
    counter's partition, or the table) or the error itself. Returns for a conflict, which is tried again."""
    if any(c in TRANSACTION_THROTTLES for c in codes):
        throttled_counter = len(codes) > counter_position and codes[counter_position] in TRANSACTION_THROTTLES
        raise Throttled(ThrottleScope.PARTITION if throttled_counter else ThrottleScope.TABLE) from error
    if any(c == "TransactionConflict" for c in codes):
        return
    raise error


def _replay(held: Item, keyed: KeyedRequest, units: float) -> KeyedOutcome:
    """The answer a held key gives a request: the first request's, when it asked the same thing."""
    if held.get(FINGERPRINT, {}).get("S") != keyed.fingerprint:
        raise IdempotencyKeyReused(keyed.key)
    return KeyedOutcome(Answer(held.get(ANSWER, {}).get("S", Answer.COUNTED.value)), replayed=True, units=units)


def _units(response: Mapping[str, Any], default: float) -> float:
    """Write units of a TransactWriteItems (ReturnConsumedCapacity=TOTAL: one entry per table)."""
    consumed = response.get("ConsumedCapacity") or []
    if isinstance(consumed, Mapping):
        consumed = [consumed]
    units = sum(float(entry.get("CapacityUnits", 0.0)) for entry in consumed)
    return units or default


def counter_rows(item: Mapping[str, Any]) -> list[tuple[str, str, int, str, int]]:
    """(item, bucket, shard, board, views) of each counter of one base item (``views`` is the global board's)."""
    name, bucket, shard = item[ITEM_ID]["S"], item[BUCKET]["S"], int_of(item[SHARD])
    rows = []
    for attribute, value in item.items():
        if attribute == VIEWS:
            rows.append((name, bucket, shard, GLOBAL_BOARD, int_of(value)))
        elif attribute.startswith(BOARD_COUNTER_PREFIX):
            rows.append((name, bucket, shard, board_of(attribute[len(BOARD_COUNTER_PREFIX) :]), int_of(value)))
    return rows
