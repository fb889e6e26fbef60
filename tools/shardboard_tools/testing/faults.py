"""Fault injection for tests and chaos runs, through botocore's event hooks and wrappers around a Lambda handler.

Nothing of shardboard's own code is patched: faults enter where they enter in production.

* **On a client** (:class:`ClientFaults`): throttling answered by "DynamoDB" before the request is sent (botocore's
  retry mode retries it, as it would a real one) or raised to the caller as if retries ran out; connect and read
  timeouts before sending (retried); a lost response *after* a write landed (the caller sees a ReadTimeoutError);
  a write that landed and is sent again (the SDK's own at-least-once retry); a connection cut after the write was
  forwarded (it lands, botocore sees a ReadTimeoutError and sends it again: a proxy that drops the connection); a
  conditional-check race (an identical write from "another invocation" lands just before ours).
* **On a store**: ``shardboard_tools.capacity.lost_responses`` (an in-memory port whose writes land and then raise:
  the benchmark's and the property tests' lost responses, without a network).
* **On a process** (:class:`KillSwitch`): the function dies after its n-th landed write on its client; every call
  after that fails.
* **On the event source** (:class:`FaultyFunction`): a kill before any write, between two writes of one batch or
  after the writes before the response; the same batch delivered twice (at once or later); a batch re-split into
  overlapping invocations; a batch the function can never process (it ends at the failure destination); two
  invocations at once on one item (ParallelizationFactor > 1: records split by base key into lanes).
"""

from __future__ import annotations

import copy
import json
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

from shardboard.adapters.keys import PK
from shardboard.domain.aggregating.aggregation import BatchOutcome
from shardboard.handlers import aggregate
from shardboard.handlers.wiring import board_store, denied_ids, epoch_seconds, settings
from shardboard.services.aggregating import StreamAggregator
from shardboard_tools.lambda_model.context import LocalContext
from shardboard_tools.lambda_model.records import split_by_partition_key

Handler = Callable[[dict[str, Any], Any], Any]
Record = dict[str, Any]

THROTTLE_CODES = ("ProvisionedThroughputExceededException", "ThrottlingException")
WRITES = frozenset({"UpdateItem", "PutItem", "DeleteItem", "TransactWriteItems"})
# Calls whose faults are also counted per operation: the late move's transaction, the archive, the thresholds' read.
TRACKED = frozenset({"TransactWriteItems", "PutItem", "BatchGetItem"})
# Why an injected cancelled transaction was refused (one item's reason; the others say "None").
TRANSACTION_REFUSALS = ("TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded")


class ProcessKilled(Exception):
    """The simulated process died: its invocation fails and nothing it would have done afterwards happens."""


class PoisonedBatch(Exception):
    """The function fails on this batch every time (a bug, a payload it cannot handle)."""


# ----------------------------------------------------------------------------------------------- client faults
@dataclass
class FaultRates:
    """Probability of each fault per matching call (0 turns it off)."""

    throttle_retried: float = 0.0  # answered 400 by "DynamoDB": botocore retries with backoff
    throttle_surfaced: float = 0.0  # ClientError raised to our code, as when retries ran out
    timeout_retried: float = 0.0  # connect/read timeout before the request is sent: botocore retries
    lost_response: float = 0.0  # the write landed, the caller gets ReadTimeoutError (writes only)
    resent: float = 0.0  # the write landed and botocore sends it again (writes only)
    race: float = 0.0  # an identical conditional write from another invocation lands first (UpdateItem)
    transaction_refused: float = 0.0  # TransactWriteItems cancelled (conflict, throttled item) before it is sent
    # The write lands and the connection is cut before its response (writes only; needs a competitor): botocore's
    # retry mode sees a ReadTimeoutError and sends the same request again. Once per call.
    cut_after_send: float = 0.0


@dataclass
class ClientFaults:
    """Faults on one boto3 client's calls, chosen by a seeded random generator; :attr:`injected` counts them."""

    client: Any
    rates: FaultRates
    rng: random.Random
    operations: frozenset[str] = WRITES | {"GetItem", "BatchGetItem", "Query", "Scan", "GetRecords"}
    table: str | None = None  # only requests naming this table (None: any); after-call faults cannot tell
    competitor: Any = None  # a second client for races (required when rates.race > 0)
    injected: Counter[str] = field(default_factory=Counter)
    by_operation: Counter[tuple[str, str]] = field(default_factory=Counter)  # (operation, fault) of TRACKED calls

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = threading.local()  # the parameters of the call in progress on this thread (cut_after_send)
        self._service = self.client.meta.service_model.service_id.hyphenize()
        self._hooks: list[tuple[str, Callable[..., Any]]] = []

    def install(self) -> ClientFaults:
        events = self.client.meta.events
        for name, hook in (
            (f"provide-client-params.{self._service}", self._race),
            (f"before-call.{self._service}", self._before_call),
            (f"before-send.{self._service}", self._before_send),
            (f"after-call.{self._service}", self._after_call),
        ):
            events.register(name, hook)
            self._hooks.append((name, hook))
        events.register_first(f"needs-retry.{self._service}", self._resend)
        self._hooks.append((f"needs-retry.{self._service}", self._resend))
        # First: before moto's in-process backend (itself a before-send handler) or the HTTP send applies it.
        events.register_first(f"before-send.{self._service}", self._cut_after_send)
        self._hooks.append((f"before-send.{self._service}", self._cut_after_send))
        return self

    def uninstall(self) -> None:
        for name, hook in self._hooks:
            self.client.meta.events.unregister(name, hook)
        self._hooks.clear()

    def _roll(self, rate: float, kind: str, operation: str = "") -> bool:
        if rate <= 0:
            return False
        with self._lock:
            hit = self.rng.random() < rate
            if hit:
                self.injected[kind] += 1
                if operation in TRACKED:
                    self.by_operation[(operation, kind)] += 1
        return hit

    def _matches(self, operation: str, params: Any) -> bool:
        if operation not in self.operations:
            return False
        return self.table is None or not isinstance(params, dict) or params.get("TableName") in (None, self.table)

    def _race(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        operation = model.name
        cut = operation in WRITES and self.rates.cut_after_send > 0 and self._matches(operation, params)
        self._calls.pending = (operation, copy.deepcopy(params)) if cut else None
        if operation != "UpdateItem" or "ConditionExpression" not in params or not self._matches(operation, params):
            return
        if self.competitor is not None and self._roll(self.rates.race, "race"):
            try:
                self.competitor.update_item(**copy.deepcopy(params))
            except ClientError as error:  # the competitor lost the race itself: no harm done
                if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise

    def _before_call(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        table = _table_of(params)
        if not self._matches(model.name, {"TableName": table}):
            return
        if self._roll(self.rates.throttle_surfaced, "throttle", model.name):
            code = self.rng.choice(THROTTLE_CODES)
            raise ClientError({"Error": {"Code": code, "Message": "injected: rate exceeded"}}, model.name)
        if model.name == "TransactWriteItems" and self._roll(
            self.rates.transaction_refused, "transaction_refused", model.name
        ):
            raise cancelled_transaction(_transact_items(params), self.rng)

    def _cut_after_send(self, request: Any, **_: Any) -> None:
        """Registered first: the write lands through the competitor (its own connection, on the same engine) and this
        attempt fails as a cut connection does, before anything else sends it; botocore then retries it."""
        pending = getattr(self._calls, "pending", None)
        if pending is None or _operation_of(request) != pending[0]:
            return
        self._calls.pending = None  # once per call: the retry goes through
        operation, params = pending
        if self.competitor is not None and self._roll(self.rates.cut_after_send, "cut_after_send", operation):
            try:
                getattr(self.competitor, _snake(operation))(**params)
            except ClientError:
                return  # the write did not land (refused, throttled): no cut, the attempt goes on as usual
            raise ReadTimeoutError(endpoint_url="injected: the write landed, the connection was cut")

    def _before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        operation = _operation_of(request)
        if not self._matches(operation, {"TableName": _table_of_body(request)}):
            return None
        if self._roll(self.rates.timeout_retried, "timeout_retried", operation):
            error = self.rng.choice((ReadTimeoutError, ConnectTimeoutError))
            raise error(endpoint_url=request.url)
        if self._roll(self.rates.throttle_retried, "throttle_retried", operation):
            return throttled_response(request.url, self.rng.choice(THROTTLE_CODES))
        return None

    def _after_call(self, model: Any, http_response: Any, **_: Any) -> None:
        landed = model.name in WRITES and http_response.status_code == 200 and self._matches(model.name, {})
        if landed and self._roll(self.rates.lost_response, "lost_response", model.name):
            raise ReadTimeoutError(endpoint_url="injected: the write landed, its response was lost")

    def _resend(self, response: Any, attempts: int, operation: Any, **_: Any) -> float | None:
        landed = response is not None and response[0].status_code == 200
        write = attempts == 1 and operation.name in WRITES and self._matches(operation.name, {})
        if landed and write and self._roll(self.rates.resent, "resent", operation.name):
            return 0.0  # "retry now": botocore sends the write that already landed once more
        return None


def _snake(operation: str) -> str:
    """A client method's name from its operation's (``UpdateItem`` -> ``update_item``)."""
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in operation).lstrip("_")


def cancelled_transaction(items: int, rng: random.Random) -> ClientError:
    """What DynamoDB raises for a transaction it refused as a whole: TransactionCanceledException, with one reason
    per item (here one item conflicted with another transaction or was throttled; nothing was written)."""
    reasons = [{"Code": "None"} for _ in range(max(1, items))]
    reasons[rng.randrange(len(reasons))] = {"Code": rng.choice(TRANSACTION_REFUSALS), "Message": "injected"}
    response: Any = {
        "Error": {"Code": "TransactionCanceledException", "Message": "injected: transaction cancelled"},
        "CancellationReasons": reasons,
    }
    return ClientError(response, "TransactWriteItems")


def throttled_response(url: str, code: str) -> AWSResponse:
    """What DynamoDB answers a throttled request: HTTP 400 with the error code in the JSON body."""
    body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "injected: rate exceeded"})
    headers = HTTPHeaders()
    headers["x-amzn-RequestId"] = str(uuid.uuid4())
    headers["Content-Type"] = "application/x-amz-json-1.0"
    return AWSResponse(url, 400, headers, _Raw(body.encode()))


class _Raw:
    """The raw body botocore reads a response from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


def _operation_of(request: Any) -> str:
    target = request.headers.get("X-Amz-Target", b"")
    target = target.decode() if isinstance(target, bytes) else str(target)
    return target.rsplit(".", 1)[-1]


def _table_of_body(request: Any) -> str | None:
    try:
        body = json.loads(request.body or b"{}")
    except (TypeError, ValueError):
        return None
    return body.get("TableName") if isinstance(body, dict) else None


def _transact_items(params: Any) -> int:
    """How many items a serialized TransactWriteItems request holds."""
    body = params.get("body") if isinstance(params, dict) else None
    try:
        decoded = json.loads(body or "{}") if isinstance(body, bytes | str) else {}
    except ValueError:
        return 1
    return len(decoded.get("TransactItems", [])) if isinstance(decoded, dict) else 1


def _table_of(params: Any) -> str | None:
    body = params.get("body") if isinstance(params, dict) else None
    if isinstance(body, bytes | str):
        try:
            decoded = json.loads(body or "{}")
        except ValueError:
            return None
        return decoded.get("TableName") if isinstance(decoded, dict) else None
    return None


# ----------------------------------------------------------------------------------------------- process kill
class KillSwitch:
    """Kills the function after its n-th landed write on a client (0: before the first call of the invocation).

    After the kill every call on the client raises :class:`ProcessKilled`, as nothing runs in a dead process.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._after: int | None = None
        self._writes = 0
        self.killed = False
        service = client.meta.service_model.service_id.hyphenize()
        self._names = (f"before-call.{service}", f"after-call.{service}")
        client.meta.events.register(self._names[0], self._before_call)
        client.meta.events.register(self._names[1], self._after_call)

    def uninstall(self) -> None:
        self.client.meta.events.unregister(self._names[0], self._before_call)
        self.client.meta.events.unregister(self._names[1], self._after_call)

    @contextmanager
    def armed(self, after_writes: int) -> Iterator[KillSwitch]:
        """Kill after ``after_writes`` writes during the block; ``killed`` tells afterwards whether it happened."""
        with self._lock:
            self._after, self._writes, self.killed = after_writes, 0, after_writes == 0
        try:
            yield self
        finally:
            with self._lock:
                self._after = None

    def _before_call(self, **_: Any) -> None:
        if self._after is not None and self.killed:
            raise ProcessKilled("the process was killed")

    def _after_call(self, model: Any, **_: Any) -> None:
        if self._after is None or model.name not in WRITES:
            return
        with self._lock:
            self._writes += 1
            if self._writes >= self._after:
                self.killed = True
        if self.killed:
            raise ProcessKilled(f"killed after write {self._writes}")


# ----------------------------------------------------------------------------------------------- the function
@dataclass
class Container:
    """One Lambda container of the aggregator: a handler and the aggregator whose last batch it leaves."""

    handler: Handler
    aggregator: StreamAggregator

    @classmethod
    def main(cls) -> Container:
        """The deployed handler itself (decorators, logs, metrics): one invocation at a time."""
        return cls(aggregate.handler, aggregate.aggregator)

    @classmethod
    def fresh(cls) -> Container:
        """Another container, for invocations that run at the same time as the main one's."""
        worker = StreamAggregator(board_store, settings, denied_ids, epoch_seconds)

        def handler(event: dict[str, Any], context: Any = None) -> Any:
            return aggregate.aggregate(event, worker, context)

        return cls(handler, worker)

    def invoke(self, event: dict[str, Any], context: Any = None) -> Any:
        return self.handler(event, context or LocalContext())


@dataclass
class FunctionFaults:
    """Probability of each event-source fault per invocation."""

    kill_before_writes: float = 0.0
    kill_between_writes: float = 0.0
    kill_after_writes: float = 0.0
    duplicate: float = 0.0  # delivered twice in a row
    late_duplicate: float = 0.0  # an earlier batch delivered again before this one
    resplit: float = 0.0  # overlapping halves
    poison: float = 0.0  # this batch's first record can never be processed: it ends at the failure destination
    parallel: float = 0.0  # two containers at once, records split by base key (ParallelizationFactor 2)


@dataclass
class Totals:
    """What the aggregator reported across every invocation (replays absorbed is the proof of the kill tests)."""

    invocations: int = 0
    views_added: int = 0
    replays_absorbed: int = 0
    gaps_healed: int = 0
    failed_items: int = 0

    def add(self, outcome: BatchOutcome) -> None:
        self.invocations += 1
        self.views_added += outcome.views_added
        self.replays_absorbed += outcome.replays_absorbed
        self.gaps_healed += outcome.gaps_healed
        self.failed_items += len(outcome.failures)


class Gate:
    """Lets invocations through while open. ``closed()`` waits for those running to end and holds new ones until it
    is left: what happens inside is one instant for the function (a table lost at once, not item by item while the
    aggregator writes between two deletions)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._closed = False

    @contextmanager
    def passing(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._closed)
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    @contextmanager
    def closed(self) -> Iterator[None]:
        with self._changed:
            self._closed = True
            self._changed.wait_for(lambda: self._running == 0)
        try:
            yield
        finally:
            with self._changed:
                self._closed = False
                self._changed.notify_all()


@dataclass
class FaultyFunction:
    """The aggregator as the event source mapping sees it, with faults chosen per invocation by a seeded generator.

    Pass it to ``StreamRunner`` as the handler. ``kill`` (a :class:`KillSwitch` on the function's client) is needed
    for kills between writes.
    """

    container: Container
    faults: FunctionFaults
    rng: random.Random
    kill: KillSwitch | None = None
    injected: Counter[str] = field(default_factory=Counter)
    totals: Totals = field(default_factory=Totals)
    poisoned: set[str] = field(default_factory=set)  # sequence numbers the function always fails on
    _delivered: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    gate: Gate = field(default_factory=Gate)

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        with self.gate.passing():
            return self._invoke(event, context)

    def _invoke(self, event: dict[str, Any], context: Any) -> Any:
        records: list[Record] = event.get("Records", [])
        if self._roll(self.faults.poison, "poison") and records:
            self.poisoned.add(records[0]["dynamodb"]["SequenceNumber"])
        if any(r["dynamodb"]["SequenceNumber"] in self.poisoned for r in records):
            self.injected["poisoned_invocation"] += 1
            raise PoisonedBatch("the function cannot process this batch")
        if self._delivered and self._roll(self.faults.late_duplicate, "late_duplicate"):
            self._run(self.container, self.rng.choice(self._delivered), context)
        self._delivered = [*self._delivered[-20:], event]
        if self._roll(self.faults.kill_before_writes, "kill_before_writes"):
            raise ProcessKilled("killed before any write")
        if self.kill is not None and len(records) > 1 and self._roll(self.faults.kill_between_writes, "kill_between"):
            items = len({_item(r) for r in records})
            with self.kill.armed(1 + self.rng.randrange(max(1, items - 1))) as switch:
                response = self._deliver(event, context)
            if switch.killed:
                raise ProcessKilled("killed between two writes of one batch")
            return response
        response = self._deliver(event, context)
        if self._roll(self.faults.kill_after_writes, "kill_after_writes"):
            raise ProcessKilled("killed after the writes, before the response")
        return response

    def _deliver(self, event: dict[str, Any], context: Any) -> Any:
        records: list[Record] = event["Records"]
        if len(records) > 1 and self._roll(self.faults.parallel, "parallel"):
            return self._parallel(records, context)
        if len(records) > 1 and self._roll(self.faults.resplit, "resplit"):
            cut = self.rng.randrange(1, len(records))
            start = self.rng.randrange(0, cut)  # the second part starts inside the first: they overlap
            first = self._run(self.container, {"Records": records[:cut]}, context)
            second = self._run(self.container, {"Records": records[start:]}, context)
            return merge_responses([first, second])
        response = self._run(self.container, event, context)
        if self._roll(self.faults.duplicate, "duplicate"):
            response = self._run(self.container, event, context)
        return response

    def _parallel(self, records: Sequence[Record], context: Any) -> Any:
        """The batch's records in two lanes by partition key (the delivery model's ParallelizationFactor rule), run
        at once in two fresh containers: one batch becomes two overlapping invocations."""
        lanes = split_by_partition_key(records, 2, PK)
        containers = [Container.fresh() for _ in lanes]
        with ThreadPoolExecutor(len(lanes)) as pool:
            responses = list(
                pool.map(lambda lane: self._run(containers[lane], {"Records": lanes[lane]}, context), range(len(lanes)))
            )
        return merge_responses(responses)

    def _run(self, container: Container, event: dict[str, Any], context: Any) -> Any:
        before = container.aggregator.last
        try:
            return container.invoke(event, context)
        finally:
            applied = container.aggregator.last
            if applied is not None and applied is not before:  # the batch got as far as its writes
                with self._lock:
                    self.totals.add(applied.outcome)

    def _roll(self, rate: float, kind: str) -> bool:
        hit = rate > 0 and self.rng.random() < rate
        if hit:
            self.injected[kind] += 1
        return hit


def merge_responses(responses: Sequence[Any]) -> dict[str, list[dict[str, str]]]:
    """One partial-batch response for several invocations of parts of a batch: every failure of any part."""
    failures: dict[str, None] = {}
    for response in responses:
        for failure in (response or {}).get("batchItemFailures", []):
            failures[failure["itemIdentifier"]] = None
    return {"batchItemFailures": [{"itemIdentifier": identifier} for identifier in failures]}


def _item(record: Record) -> str:
    image = record.get("dynamodb", {}).get("NewImage", {})
    return str(image.get("item_id", {}).get("S", ""))
