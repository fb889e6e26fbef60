"""DynamoDB's throughput limits, enforced locally: per partition key value and, optionally, per table.

API (also used by the dynamic-sharding work):

* :class:`Limits` says how much each partition key value (and optionally each table) may consume per second.
* :class:`CapacityEmulator` ``.admit(operation, charges)`` either accepts a request, booking every
  :class:`Charge` (base table partition, index partitions) at the clock's current second, or raises a botocore
  ``ClientError`` with DynamoDB's code and books nothing, as DynamoDB does for a throttled request.
  ``ProvisionedThroughputExceededException`` when a partition key value (of the table or of one of its GSIs) would
  exceed its limit in that second; ``ThrottlingException`` when a table-level limit would be exceeded. Both carry
  ``ThrottlingReasons`` (``TableWriteKeyRangeThroughputExceeded``, ``IndexWriteKeyRangeThroughputExceeded``, ...)
  as DynamoDB sends them, so ``adapters.dynamodb.throttle_scope`` tells partition from table throttling.
  ``.record(charges)`` books units of a request already served (a Query's size is known only afterwards).
* ``capacity.schema.TableSchema.write_charges(key, old, new)`` turns a write into charges (base + GSI partitions).
* Clocks: :class:`VirtualClock` (a simulated time the caller advances: the benchmark stamps every request with the
  simulated arrival time, so 10,000 views/s can be emulated on any machine) or :class:`RealClock` (wall clock, for
  a real client talking to DynamoDB Local, see ``capacity.hook``).
* :attr:`CapacityEmulator.usage` holds what was consumed: units per resource, the busiest partition key value's
  units in any one second, and the throttled requests.

Windows are whole seconds of the clock (``floor(now)``), which is how the limits are stated ("1,000 write units per
second per partition key value"). Burst: DynamoDB keeps up to 300 s of a table's unused provisioned capacity for
bursts but never lets one partition key value exceed its hard ceiling, so partition limits here are strict and
``Limits.burst_seconds`` banks unused *table-level* capacity (up to ``burst_seconds`` x the table limit), spent
when a second's demand exceeds the table limit.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from botocore.exceptions import ClientError

Kind = Literal["write", "read"]

PARTITION_THROTTLED = "ProvisionedThroughputExceededException"
TABLE_THROTTLED = "ThrottlingException"

# DynamoDB's documented ceiling per partition key value: 1,000 write units/s and 3,000 read units/s.
PARTITION_WRITE_UNITS_PER_S = 1000.0
PARTITION_READ_UNITS_PER_S = 3000.0
ARN_PREFIX = "arn:aws:dynamodb:us-east-1:000000000000:table/"


class Clock(Protocol):
    def now(self) -> float:
        """Seconds; only differences and whole-second boundaries matter."""
        ...


class RealClock:
    """Wall-clock seconds (monotonic)."""

    def now(self) -> float:
        return time.monotonic()


@dataclass
class VirtualClock:
    """Simulated seconds: every request is stamped with ``now()``; the caller moves time forward."""

    time: float = 0.0

    def now(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock only moves forward")
        self.time += seconds

    def set(self, moment: float) -> None:
        self.advance(moment - self.time)


@dataclass
class PacedClock:
    """Stamps a burst of requests as a client with ``concurrency`` requests in flight, each taking ``latency``
    seconds, would send them: the n-th request at ``start + n * latency / concurrency``.

    One Lambda invocation writing thousands of items does not send them all in the same instant; stamping them so
    keeps a large batch (or a tumbling window's final invocation) from looking like one impossible burst.
    """

    start: float
    latency: float
    concurrency: int
    requests: int = 0

    def now(self) -> float:
        moment = self.start + self.requests * self.latency / self.concurrency
        self.requests += 1
        return moment


@dataclass(frozen=True)
class Limits:
    partition_write_units: float = PARTITION_WRITE_UNITS_PER_S
    partition_read_units: float = PARTITION_READ_UNITS_PER_S
    # Table-level ceilings (provisioned capacity, or an on-demand table's maximum throughput); None = unlimited.
    table_write_units: float | None = None
    table_read_units: float | None = None
    # Seconds of unused table-level capacity banked for bursts (0 = none; DynamoDB retains up to 300 s).
    burst_seconds: float = 0.0

    def partition_limit(self, kind: Kind) -> float:
        return self.partition_write_units if kind == "write" else self.partition_read_units

    def table_limit(self, kind: Kind) -> float | None:
        return self.table_write_units if kind == "write" else self.table_read_units


@dataclass(frozen=True)
class Charge:
    """Units one request consumes on one partition key value of one table or index.

    ``resource`` is the table name, or ``table/index`` for a GSI (whose partitions are keyed by the index's
    partition key value); ``table`` is the table whose table-level limit the units count against.
    ``partition`` None means a table-level charge only (a Scan page spans partitions).
    """

    table: str
    resource: str
    partition: str | None
    kind: Kind
    units: float


@dataclass
class _Window:
    """Units used by one bucket in its current second; ``banked`` is burst capacity saved from idle seconds."""

    second: int
    used: float = 0.0
    banked: float = 0.0


@dataclass
class Peak:
    """The busiest partition key value of a resource: its units in one second."""

    units: float = 0.0
    partition: str | None = None
    second: int | None = None


@dataclass
class Usage:
    """What the emulator saw. Keys of the dicts are ``(resource, kind)``."""

    consumed: dict[tuple[str, Kind], float] = field(default_factory=dict)
    peaks: dict[tuple[str, Kind], Peak] = field(default_factory=dict)
    requests: int = 0
    throttled: dict[str, int] = field(default_factory=dict)  # error code -> requests refused

    @property
    def throttled_requests(self) -> int:
        return sum(self.throttled.values())

    def units(self, kind: Kind, resource: str | None = None) -> float:
        """Units of ``kind`` consumed on ``resource`` (a table, ``table/index``) or on everything."""
        return sum(v for (r, k), v in self.consumed.items() if k == kind and (resource is None or r == resource))

    def peak(self, kind: Kind) -> Peak:
        """The busiest partition key value in any one second, over every table and index."""
        return max((p for (_, k), p in self.peaks.items() if k == kind), key=lambda p: p.units, default=Peak())


class CapacityEmulator:
    """Admit or throttle requests against per-partition-key and table limits, per second of ``clock``."""

    def __init__(self, clock: Clock | None = None, limits: Limits | None = None) -> None:
        self.clock: Clock = clock or VirtualClock()
        self.limits = limits or Limits()
        self.usage = Usage()
        self._partitions: dict[tuple[str, str, Kind], _Window] = {}
        self._tables: dict[tuple[str, Kind], _Window] = {}
        self._lock = threading.Lock()

    def admit(self, operation: str, charges: Sequence[Charge]) -> None:
        """Book ``charges`` at the current second, or raise the throttling ``ClientError`` and book nothing."""
        second = math.floor(self.clock.now())
        with self._lock:
            self.usage.requests += 1
            partition_demand: dict[tuple[str, str, Kind], float] = {}
            table_demand: dict[tuple[str, Kind], float] = {}
            for charge in charges:
                if charge.partition is not None:
                    key = (charge.resource, charge.partition, charge.kind)
                    partition_demand[key] = partition_demand.get(key, 0.0) + charge.units
                table_key = (charge.table, charge.kind)
                table_demand[table_key] = table_demand.get(table_key, 0.0) + charge.units
            for (resource, partition, kind), units in partition_demand.items():
                window = self._partition_window((resource, partition, kind), second)
                if window.used + units > self.limits.partition_limit(kind):
                    self._refuse(PARTITION_THROTTLED)
                    scope = "Index" if "/" in resource else "Table"
                    raise throttling_error(
                        PARTITION_THROTTLED,
                        f"{kind} units on partition key {partition!r} of {resource} exceed "
                        f"{self.limits.partition_limit(kind):g}/s",
                        operation,
                        f"{scope}{kind.title()}KeyRangeThroughputExceeded",
                        resource,
                    )
            for (table, kind), units in table_demand.items():
                limit = self.limits.table_limit(kind)
                if limit is not None:
                    window = self._table_window((table, kind), second, limit)
                    if window.used + units > limit + window.banked:
                        self._refuse(TABLE_THROTTLED)
                        raise throttling_error(
                            TABLE_THROTTLED,
                            f"{kind} units on table {table} exceed {limit:g}/s",
                            operation,
                            f"Table{kind.title()}ProvisionedThroughputExceeded",
                            table,
                        )
            self._book(charges, partition_demand, table_demand, second)

    def record(self, charges: Sequence[Charge]) -> None:
        """Book units consumed by a request that was already served (a Query's size is known only after it)."""
        second = math.floor(self.clock.now())
        with self._lock:
            partition_demand: dict[tuple[str, str, Kind], float] = {}
            table_demand: dict[tuple[str, Kind], float] = {}
            for charge in charges:
                if charge.partition is not None:
                    key = (charge.resource, charge.partition, charge.kind)
                    partition_demand[key] = partition_demand.get(key, 0.0) + charge.units
                    self._partition_window(key, second)
                table_demand[(charge.table, charge.kind)] = (
                    table_demand.get((charge.table, charge.kind), 0.0) + charge.units
                )
            self._book(charges, partition_demand, table_demand, second)

    def _book(
        self,
        charges: Sequence[Charge],
        partition_demand: dict[tuple[str, str, Kind], float],
        table_demand: dict[tuple[str, Kind], float],
        second: int,
    ) -> None:
        for charge in charges:
            key = (charge.resource, charge.kind)
            self.usage.consumed[key] = self.usage.consumed.get(key, 0.0) + charge.units
        for (resource, partition, kind), units in partition_demand.items():
            window = self._partitions[(resource, partition, kind)]
            window.used += units
            peak = self.usage.peaks.setdefault((resource, kind), Peak())
            if window.used > peak.units:
                peak.units, peak.partition, peak.second = window.used, partition, second
        for key, units in table_demand.items():
            if key in self._tables:
                self._tables[key].used += units

    def _refuse(self, code: str) -> None:
        self.usage.throttled[code] = self.usage.throttled.get(code, 0) + 1

    def _partition_window(self, key: tuple[str, str, Kind], second: int) -> _Window:
        window = self._partitions.get(key)
        if window is None or window.second < second:
            window = self._partitions[key] = _Window(second)
        return window

    def _table_window(self, key: tuple[str, Kind], second: int, limit: float) -> _Window:
        window = self._tables.get(key)
        if window is None:
            window = self._tables[key] = _Window(second)
        elif window.second < second:
            # Unused capacity of the closing second and of idle seconds since is banked; overdraft is repaid.
            idle = second - window.second - 1
            saved = window.banked + (limit - window.used) + idle * limit
            cap = limit * self.limits.burst_seconds
            window.second, window.used, window.banked = second, 0.0, max(0.0, min(cap, saved))
        return window


def resource_arn(resource: str) -> str:
    """``table`` or ``table/index`` as the ARN DynamoDB names in a throttling reason."""
    table, _, index = resource.partition("/")
    return f"{ARN_PREFIX}{table}" + (f"/index/{index}" if index else "")


def error_document(code: str, message: str, reason: str, resource: str) -> dict[str, Any]:
    """The JSON body DynamoDB sends with a throttling error, ``ThrottlingReasons`` included."""
    prefix = "com.amazon.coral.availability#" if code == TABLE_THROTTLED else "com.amazonaws.dynamodb.v20120810#"
    # The service model spells the member ThrottlingReasons on one error and throttlingReasons on the other.
    reasons_key = "throttlingReasons" if code == TABLE_THROTTLED else "ThrottlingReasons"
    return {
        "__type": prefix + code,
        "message": message,
        reasons_key: [{"reason": reason, "resource": resource_arn(resource)}],
    }


def throttling_error(code: str, message: str, operation: str, reason: str, resource: str) -> ClientError:
    """The ClientError botocore raises for a throttled DynamoDB request (HTTP 400 with ``code`` and its reason)."""
    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": message},
        "ThrottlingReasons": [{"reason": reason, "resource": resource_arn(resource)}],
    }
    return ClientError(response, operation)  # type: ignore[arg-type]
