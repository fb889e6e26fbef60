"""The three designs the benchmark compares, each pricing its requests on its own CapacityEmulator.

``seed-unsharded`` and ``seed-sharded`` are seed 002's designs as the article describes them (one image item per
image, ``UpdateItem ADD ViewCount :1`` per view, a leaderboard GSI on "IMAGES" or on a random ``PARTITION_k`` set at
creation, and a refresh that queries N items from every GSI partition). ``shardboard`` is this project's real code:
``record_views`` on the in-memory base table, the real aggregator on its stream in 1,000-record batches
(inside Lambda tumbling windows when the workload sets ``aggregation_window_seconds``), ``take_snapshot`` on the
in-memory board.
"""

from __future__ import annotations

import gc
import json
import random
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, cast

from shardboard.adapters.keys import PK, snapshot_pk
from shardboard.domain.clock import Clock
from shardboard.domain.items.taken_down import deleted_among
from shardboard.domain.periods import ALL, bucket_of, from_epoch, iso
from shardboard.domain.ports import PeriodKey
from shardboard.domain.writing.recording import Where, record_views
from shardboard.handlers.aggregate import aggregate
from shardboard.services.aggregating import StreamAggregator
from shardboard.services.snapshots import refresh_changed
from shardboard.settings import Settings
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity.emulator import CapacityEmulator, Charge, PacedClock
from shardboard_tools.capacity.engine import metering_overhead_seconds
from shardboard_tools.capacity.memory import MemoryTable
from shardboard_tools.capacity.schema import IndexSchema, TableSchema
from shardboard_tools.capacity.stores import in_process
from shardboard_tools.capacity.units import item_size, query_units, read_units
from shardboard_tools.lambda_model.clock import DrivenClock
from shardboard_tools.lambda_model.delivery import StreamDelivery
from shardboard_tools.lambda_model.feeds import MemoryShard
from shardboard_tools.lambda_model.mapping import MAX_BATCHING_WINDOW_SECONDS, EventSourceMapping

SEED_TABLE = "seed-images"
SEED_INDEX = "leaderboard"
SEED_UNSHARDED = "seed-unsharded"
SEED_SHARDED = "seed-sharded"
SHARDBOARD = "shardboard"
DESIGNS = (SEED_UNSHARDED, SEED_SHARDED, SHARDBOARD)
# DynamoDB's typical latency for one write from a Lambda in the same region (single-digit milliseconds).
REQUEST_LATENCY_S = 0.005
# Lambda's longest function timeout: the simulated aggregator is never cut short.
MAX_FUNCTION_TIMEOUT_SECONDS = 900.0


class Design(Protocol):
    name: str
    emulator: CapacityEmulator

    def view(self, item_id: str) -> None:
        """Record one view (raises the throttling ClientError when refused)."""
        ...

    def settle(self, final: bool = False) -> None:
        """Background work due now (the aggregator's full batches; every leftover record when ``final``)."""
        ...

    def pending(self) -> int:
        """Records still waiting for background work."""
        ...

    def refresh(self) -> int:
        """Rebuild the leaderboard the design's way; returns the items it read."""
        ...

    def frontend_read_units(self) -> float:
        """Read units one frontend request for the leaderboard costs."""
        ...

    def top(self) -> list[tuple[str, int]]:
        """The leaderboard it would show: (id, views), best first."""
        ...

    def aggregator_cpu_us_per_record(self) -> float | None: ...


class SeedDesign:
    """Seed 002: image items with ViewCount, a leaderboard GSI on one or S partition values, N read per value."""

    def __init__(self, workload: Workload, sharded: bool, emulator: CapacityEmulator) -> None:
        self.name = SEED_SHARDED if sharded else SEED_UNSHARDED
        self.emulator = emulator
        self.top_n = workload.top_n
        self.partitions = workload.gsi_shards if sharded else 1
        self.sharded = sharded
        index = IndexSchema(SEED_INDEX, "GSIHash", "ViewCount", None)
        self.table = MemoryTable(TableSchema(SEED_TABLE, "Image", None, (index,)), emulator)
        self.members: dict[str, dict[str, int]] = {}
        self.rng = random.Random(workload.seed)
        self._last_top: list[tuple[str, int]] = []

    def view(self, item_id: str) -> None:
        old = self.table.items.get(item_id)
        if old is None:  # seed 002: a new image is randomly assigned a partition at creation
            gsi_hash = f"PARTITION_{self.rng.randrange(self.partitions)}" if self.sharded else "IMAGES"
            old_views = 0
        else:
            gsi_hash, old_views = old["GSIHash"]["S"], int(old["ViewCount"]["N"])
        new = {"Image": {"S": item_id}, "ViewCount": {"N": str(old_views + 1)}, "GSIHash": {"S": gsi_hash}}
        self.table.write("UpdateItem", item_id, new)
        self.members.setdefault(gsi_hash, {})[item_id] = old_views + 1

    def settle(self, final: bool = False) -> None:
        """No background work: the seed writes the index on every view."""

    def pending(self) -> int:
        return 0

    def refresh(self) -> int:
        """Query the best N of every partition value and merge them (seed 002's scatter-gather)."""
        gathered: list[tuple[str, int]] = []
        for partition, members in self.members.items():
            best = sorted(members.items(), key=lambda pair: (-pair[1], pair[0]))[: self.top_n]
            sizes = [item_size(self.table.items[item]) for item, _ in best]
            units = query_units(sizes, consistent=False)
            self.emulator.admit("Query", [Charge(SEED_TABLE, f"{SEED_TABLE}/{SEED_INDEX}", partition, "read", units)])
            gathered.extend(best)
        self._last_top = sorted(gathered, key=lambda pair: (-pair[1], pair[0]))[: self.top_n]
        return len(gathered) if self.members else 0

    def frontend_read_units(self) -> float:
        """The seed has no stored leaderboard: each frontend request runs the scatter-gather queries itself."""
        size = item_size({"Image": {"S": "images/00000.jpg"}, "ViewCount": {"N": "12345"}, "GSIHash": {"S": "IMAGES"}})
        return self.partitions * query_units([size] * self.top_n, consistent=False)

    def top(self) -> list[tuple[str, int]]:
        return self._last_top

    def aggregator_cpu_us_per_record(self) -> float | None:
        return None


class ShardboardDesign:
    """Our real code on in-memory tables: record_views -> stream -> aggregator handler -> take_snapshot."""

    name = SHARDBOARD

    def __init__(self, workload: Workload, emulator: CapacityEmulator) -> None:
        self.emulator = emulator
        self.batch_size = workload.batch_size
        self.settings = Settings(
            views_table="memory-views",
            board_table="memory-board",
            write_shards=workload.write_shards,
            board_shards=workload.gsi_shards,
            top_n=workload.top_n,
            periods=workload.periods,
            rank_depth=workload.rank_depth,
            rank_refresh_seconds=workload.rank_refresh_seconds,
            snapshot_spare=workload.snapshot_spare,
            # The in-memory store has no network latency to overlap; threads would only add dispatch cost.
            write_concurrency=1,
        )
        self.start_epoch = workload.start_epoch
        # ... but the deployed function overlaps that many requests, which is how its requests are stamped.
        self.function_concurrency = Settings().write_concurrency
        # The real stores on the in-process engine, which executes and prices their requests.
        self.stores = in_process(emulator, self.settings)
        self.engine = self.stores.engine
        self.views = self.stores.views
        self.board = self.stores.board
        # The deleted ids among a batch's, asked before and after its writes as the deployed function does, and priced.
        self.items = self.stores.items
        self.stream_records = self.stores.stream
        self.aggregator = StreamAggregator(
            lambda: self.board,
            lambda: self.settings,
            denied=lambda item_ids, consistent: deleted_among(self.items, item_ids, consistent),
            clock=self._epoch,
        )
        self.rng = random.Random(workload.seed)
        self.cpu_seconds = 0.0
        self.metering_overhead = metering_overhead_seconds()  # calibrated now, outside any measured window
        self._top: list[tuple[str, int]] = []
        # The stream goes to the aggregator as Lambda delivers it (lambda_model), on the run's virtual clock: it
        # never waits, a batch is due when full (the writers fill one long before the longest batching window) or
        # at the end of the run, and a failed one is retried after its back-off.
        self.stream = MemoryShard(
            self.stores.take_stream,
            lambda: len(self.stream_records),
            self.engine.tables[self.settings.views_table].stream_arn,
        )
        self.window_seconds = workload.aggregation_window_seconds
        self.delivery = StreamDelivery(
            bench_mapping(workload),
            self._invoke_window if self.window_seconds > 0 else self._invoke_batch,
            DrivenClock(emulator.clock.now),
            wait=False,
        )

    def virtual_clock(self) -> Clock:
        """The run's virtual time as the services' clock (the snapshot job's "now", its ledger's stamps)."""
        return lambda: from_epoch(self._epoch())

    def _epoch(self) -> float:
        """The run's virtual time as a UTC time."""
        return self.start_epoch + self.emulator.clock.now()

    def view(self, item_id: str) -> None:
        before = len(self.stream_records)
        now = self.emulator.clock.now()
        where = Where(bucket_of(self.settings.anchor, from_epoch(self.start_epoch + now)))
        record_views(self.views, item_id, 1, self.settings.write_shards, self.rng, where=where)
        for record in self.stream_records[before:]:  # its arrival places a record in its tumbling window
            record["dynamodb"]["ApproximateCreationDateTime"] = now

    def settle(self, final: bool = False) -> None:
        """Deliver what is due; ``final`` delivers everything now, as if the stream ended here."""
        self.stream.closed = final
        self.delivery.deliver(self.stream)
        if final and not self.delivery.backlog(self.stream.shard_id):
            # The run may go on after a final settle (tests do): later views reopen the stream.
            self.stream.closed = False
            self.delivery.forget(self.stream.shard_id)

    @property
    def records(self) -> int:
        return self.delivery.stats.records

    @property
    def failed_batches(self) -> int:
        return self.delivery.stats.function_errors + self.delivery.stats.partial_failures

    @property
    def windows(self) -> int:
        return self.delivery.stats.windows

    def _timed(self, call: Callable[[], Any]) -> Any:
        """One invocation of the aggregator: its process CPU time (minus the in-memory stores' own: the board table
        and the items table its deny reads query) is added to the tally, and its requests are stamped as the
        deployed function sends them (``PacedClock``)."""
        # A Lambda's heap is small; the in-memory tables' is not: keep them out of the garbage collector's full
        # passes, which would otherwise be billed to the aggregator.
        gc.freeze()
        clock = self.emulator.clock
        self.emulator.clock = PacedClock(clock.now(), REQUEST_LATENCY_S, self.function_concurrency)
        # The engine's time answering the board table's requests, and the deny reads' on the items table.
        engine = self.engine
        started = time.process_time()
        in_engine, calls = engine.cpu_seconds, engine.metered_calls
        engine.metering = True
        try:
            return call()
        finally:
            engine.metering = False
            spent = time.process_time() - started
            spent -= engine.cpu_seconds - in_engine + (engine.metered_calls - calls) * self.metering_overhead
            self.cpu_seconds += spent
            self.emulator.clock = clock

    def _invoke_batch(self, event: dict[str, Any], context: Any) -> Any:
        """The aggregator's batch path (the handler without its observability decorators)."""
        event = {"Records": delivered(event["Records"])}
        return self._timed(partial(aggregate, event, self.aggregator))

    def _invoke_window(self, event: dict[str, Any], context: Any) -> Any:
        """The aggregator's tumbling-window path; a window that failed to apply raises, and Lambda retries it."""
        event = {**event, "Records": delivered(event["Records"])}
        state = json.dumps(event["state"], separators=(",", ":"))

        def invoke() -> dict[str, Any]:
            # The state's JSON round trip is billed too: it is a cost of the window, paid at every invocation.
            event["state"] = json.loads(state)
            answer = aggregate(event, self.aggregator)
            json.dumps(answer["state"], separators=(",", ":"))  # Lambda serialises the response
            return answer

        return self._timed(invoke)

    def pending(self) -> int:
        return len(self.stream_records) + self.delivery.backlog(self.stream.shard_id)

    def refresh(self) -> int:
        """The snapshot job: every changed period; items read are the all-time board's (the figure compared)."""
        everything = PeriodKey(self.settings.board, ALL, ALL)
        clock = self.virtual_clock()
        run = refresh_changed(self.board, self.settings, now=iso(clock()), always=[everything], clock=clock)
        result = run.results[everything]
        self._top = [(item, views) for item, views in result.snapshot.items]
        return result.gathered.items_read

    def frontend_read_units(self) -> float:
        """GET /leaderboard: one eventually consistent GetItem of the snapshot item."""
        head = self.engine.peek(self.settings.board_table, {PK: {"S": snapshot_pk(self.settings.board, ALL, ALL)}})
        return read_units(item_size(head), consistent=False)

    def top(self) -> list[tuple[str, int]]:
        return self._top

    def aggregator_cpu_us_per_record(self) -> float | None:
        return self.cpu_seconds / self.records * 1e6 if self.records else None


def delivered(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records as the function receives them: freshly decoded from the invoke payload by the Lambda runtime (not
    billed to the aggregator, as for any stream consumer), not the objects the in-memory stream built long before."""
    return cast(list[dict[str, Any]], json.loads(json.dumps(records)))


def bench_mapping(workload: Workload) -> EventSourceMapping:
    """The aggregator's event source mapping in the benchmark: the workload's batch size and window, Lambda's
    longest batching window (only full batches go before the end of the run), no filter, no retry limit."""
    return EventSourceMapping(
        batch_size=workload.batch_size,
        batching_window_seconds=MAX_BATCHING_WINDOW_SECONDS,
        report_batch_item_failures=True,
        function_timeout_seconds=MAX_FUNCTION_TIMEOUT_SECONDS,
        tumbling_window_seconds=workload.aggregation_window_seconds,
    )


def make_design(name: str, workload: Workload, emulator: CapacityEmulator) -> Design:
    if name == SHARDBOARD:
        return ShardboardDesign(workload, emulator)
    if name in (SEED_SHARDED, SEED_UNSHARDED):
        return SeedDesign(workload, name == SEED_SHARDED, emulator)
    raise ValueError(f"unknown design {name!r}; choose from {', '.join(DESIGNS)}")
