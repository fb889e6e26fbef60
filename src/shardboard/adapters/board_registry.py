"""The board registry on DynamoDB (domain/boards.py, the Boards policy): which category boards a stack has.

It lives in the shards table: one item ``board#<name>`` per registered board and one item ``boards`` counting them.
A registration is ONE TransactWriteItems that creates the new boards' items (each only if absent) and adds their
number to the count, conditioned on the count's room under the cap, so concurrent writers never register more than
the cap between them and a refused registration writes nothing. Writers ask it once per new board per process.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import error_code, int_of, n_attr, s_attr, throttle_scope, throttling_as_domain
from shardboard.adapters.keys import (
    BOARD,
    BOARD_ORIGIN,
    BOARDS_COUNT_PK,
    PK,
    REGISTERED,
    REGISTERED_AT,
    board_registry_pk,
    threshold_pk,
)
from shardboard.domain.boards import MAX_REGISTERED_AT_ONCE
from shardboard.domain.clock import Clock
from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard.domain.retrying import retry_delay

# BatchGetItem reads at most 100 keys a request; rounds of UnprocessedKeys asked again before a read gives up.
BATCH_GET_KEYS = 100
MAX_BATCH_GET_ROUNDS = 10
# A registration cancelled by a concurrent one on the count (TransactionConflict) is tried this many times.
MAX_CONFLICT_ATTEMPTS = 5
CONDITION_CHECK_FAILED = "ConditionalCheckFailed"
_THROTTLES = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})


class BoardRegistryStore:
    """The registry in the shards table; ``existed`` reads the board table (a board's all-time period item). Reads
    are BatchGetItems: a view naming 8 new boards is one round trip."""

    def __init__(
        self,
        client: Any,
        shards_table: str,
        board_table: str,
        *,
        clock: Clock,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.table = shards_table
        self.board_table = board_table
        self.clock = clock
        self.sleep = sleep
        self.rng = rng or random.Random()

    def registered(self, names: Sequence[str]) -> set[str]:
        """Which of ``names`` are registered: one strongly consistent BatchGetItem (per 100 names)."""
        found = self._batch_get(self.table, {board_registry_pk(name): name for name in names}, consistent=True)
        return set(found)

    def register(self, names: Sequence[str], limit: int | None) -> bool:
        new = list(dict.fromkeys(names))
        if len(new) > MAX_REGISTERED_AT_ONCE:
            raise ValueError(f"at most {MAX_REGISTERED_AT_ONCE} boards at once, got {len(new)}")
        attempt = 0
        while new:
            if limit is not None and len(new) > limit:
                return False
            try:
                self.client.transact_write_items(TransactItems=self._registration(new, limit))
                return True
            except ClientError as error:
                if error_code(error) != "TransactionCanceledException":
                    scope = throttle_scope(error)
                    if scope is None:
                        raise
                    raise Throttled(scope) from error
                reasons = error.response.get("CancellationReasons") or []
                codes = [str(reason.get("Code") or "None") for reason in reasons]
                if len(codes) != len(new) + 1:
                    raise
                present = {name for name, code in zip(new, codes, strict=False) if code == CONDITION_CHECK_FAILED}
                if present:  # registered meanwhile by another writer: register the rest
                    new = [name for name in new if name not in present]
                    continue
                if codes[-1] == CONDITION_CHECK_FAILED:
                    return False
                if any(code in _THROTTLES for code in codes):
                    raise Throttled(ThrottleScope.TABLE) from error
                if "TransactionConflict" in codes:
                    if attempt == MAX_CONFLICT_ATTEMPTS - 1:  # nothing was written: the caller may retry (a 503)
                        raise Throttled(ThrottleScope.TABLE) from error
                    self.sleep(retry_delay(attempt, self.rng))
                    attempt += 1
                    continue
                raise
        return True

    def _registration(self, names: Sequence[str], limit: int | None) -> list[dict[str, Any]]:
        """The transaction: each board's item, created only if absent, and the count, conditioned on its room."""
        origin = "view" if limit is not None else "existing"
        now = int(self.clock().timestamp())  # when the board was registered
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": {PK: s_attr(board_registry_pk(name))},
                    "UpdateExpression": "SET #board = :board, #at = :at, #origin = :origin",
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {
                        "#pk": PK,
                        "#board": BOARD,
                        "#at": REGISTERED_AT,
                        "#origin": BOARD_ORIGIN,
                    },
                    "ExpressionAttributeValues": {
                        ":board": s_attr(name),
                        ":at": n_attr(now),
                        ":origin": s_attr(origin),
                    },
                }
            }
            for name in names
        ]
        count: dict[str, Any] = {
            "TableName": self.table,
            "Key": {PK: s_attr(BOARDS_COUNT_PK)},
            "UpdateExpression": "ADD #n :k",
            "ExpressionAttributeNames": {"#n": REGISTERED},
            "ExpressionAttributeValues": {":k": n_attr(len(names))},
        }
        if limit is not None:
            count["ConditionExpression"] = "attribute_not_exists(#n) OR #n <= :room"
            count["ExpressionAttributeValues"][":room"] = n_attr(limit - len(names))
        return [*items, {"Update": count}]

    def existed(self, names: Sequence[str]) -> set[str]:
        """A board with views has its all-time period item in the board table (the aggregator makes it)."""
        return set(self._batch_get(self.board_table, {threshold_pk(name): name for name in names}, consistent=False))

    def count(self) -> int:
        item = self._get(self.table, BOARDS_COUNT_PK, consistent=True)
        return int_of((item or {}).get(REGISTERED))

    def scan(self) -> dict[str, str]:
        """Every registered board and its origin (a small read: at most the cap plus the boards learned)."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "ConsistentRead": True,
            "FilterExpression": "attribute_exists(#board) AND attribute_exists(#origin)",
            "ExpressionAttributeNames": {"#board": BOARD, "#origin": BOARD_ORIGIN},
        }
        boards: dict[str, str] = {}
        while True:
            response = self.client.scan(**kwargs)
            for item in response.get("Items", []):
                boards[item[BOARD]["S"]] = item[BOARD_ORIGIN]["S"]
            if "LastEvaluatedKey" not in response:
                return boards
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _get(self, table: str, pk: str, *, consistent: bool) -> dict[str, Any] | None:
        with throttling_as_domain():
            response = self.client.get_item(
                TableName=table,
                Key={PK: s_attr(pk)},
                ConsistentRead=consistent,
                ProjectionExpression="#pk, #n",
                ExpressionAttributeNames={"#pk": PK, "#n": REGISTERED},
            )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _batch_get(self, table: str, wanted: Mapping[str, str], *, consistent: bool) -> list[str]:
        """The values of ``wanted`` (pk -> value) whose item exists in ``table``; keys DynamoDB leaves unprocessed
        are asked again after a jittered back-off, and a read still short after every round raises Throttled."""
        found: list[str] = []
        keys = list(wanted)
        for start in range(0, len(keys), BATCH_GET_KEYS):
            pending: dict[str, Any] = {
                table: {
                    "Keys": [{PK: s_attr(pk)} for pk in keys[start : start + BATCH_GET_KEYS]],
                    "ConsistentRead": consistent,
                    "ProjectionExpression": "#pk",
                    "ExpressionAttributeNames": {"#pk": PK},
                }
            }
            for attempt in range(MAX_BATCH_GET_ROUNDS):
                with throttling_as_domain():
                    response = self.client.batch_get_item(RequestItems=pending)
                found += [wanted[item[PK]["S"]] for item in response.get("Responses", {}).get(table, [])]
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
                self.sleep(retry_delay(attempt, self.rng))
            else:
                raise Throttled(ThrottleScope.TABLE)
        return found
