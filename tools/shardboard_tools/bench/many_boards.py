"""``shardboard bench --scenario many-boards``: can one snapshot run refresh 1,000 changed boards in one interval?

Issue 12 asks the snapshot job to refresh only the boards and periods that changed, in parallel, and to keep up with
1,000 active boards within one schedule interval. This scenario builds that state with the real code on the
in-memory stores: every board gets 20-50 items (their views recorded by ``record_views``' store call and aggregated
by ``apply_batch``/``note_changes``, as the aggregator does), a first snapshot run makes them clean, then new views
on every board make all of its periods dirty again (day, week, month and all time; the global board's four too,
since every view also counts there). The measured run is ``refresh_changed`` exactly as the scheduled handler calls
it (its default parallelism, the global all-time period always), and the emulator counts its DynamoDB calls.

Time is modelled, not measured on DynamoDB: the in-memory stores answer in microseconds. A period's refresh is a
chain of round trips (two GetItems, one round of parallel Queries per gather round, PutItem, UpdateItems), and
``parallelism`` periods are in flight at once, so a run takes about ``round trips x latency / parallelism``. The
pessimistic bound counts every call as its own round trip (``calls x latency / parallelism``). A second run with
that latency injected as a real sleep before every store call checks the model against the real thread pools, and
the wall clock of the plain in-memory run is our own CPU per period (which a 512 MB Lambda gets a share of).
"""

from __future__ import annotations

import inspect
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from shardboard.adapters.keys import BY_CHANGE_INDEX
from shardboard.adapters.stream_records import stream_view_records
from shardboard.domain.clock import Clock
from shardboard.domain.periods import ALL, bucket_of
from shardboard.domain.ports import Board, PeriodKey
from shardboard.domain.publishing.snapshot import RefreshRun
from shardboard.services.aggregating import apply_batch, note_changes
from shardboard.services.snapshots import refresh_changed
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import (
    PARTITION_WRITE_UNITS_PER_S,
    CapacityEmulator,
    Charge,
    PacedClock,
    VirtualClock,
)
from shardboard_tools.capacity.stores import in_process

# What the deployed job uses: the handler calls refresh_changed without a parallelism, so its default applies.
DEPLOYED_PARALLELISM: int = inspect.signature(refresh_changed).parameters["parallelism"].default
# A Lambda function's CPU share grows with its memory: one full vCPU at 1,769 MB (AWS Lambda docs, "Memory and
# computing power"); template.yaml gives the snapshot function 512 MB.
LAMBDA_FULL_VCPU_MB = 1769
SNAPSHOT_FUNCTION_MB = 512
# Round-trip latencies the model is shown at; a same-region GetItem/Query from Lambda takes single-digit ms.
LATENCIES_MS = (2.0, 5.0, 10.0, 20.0)
BATCH_RECORDS = 1_000  # the aggregator's stream batch size (template.yaml StreamBatchSize)


@dataclass(frozen=True)
class ManyBoardsWorkload:
    boards: int = 1_000
    min_items: int = 20
    max_items: int = 50
    max_views: int = 1_000  # an item's views in the first round: uniform in 1..max_views
    changed_items: int = 3  # items of every board that get new views after the first refresh
    latency_ms: float = 10.0  # the headline's round trip: the slow end of a typical 5-10 ms
    parallelism: int = DEPLOYED_PARALLELISM
    at: datetime = datetime(2026, 11, 25, 12, tzinfo=UTC)  # a Wednesday noon: no period rolls during the run
    seed: int = 12
    latency_check: bool = True  # also run once with the latency injected as real sleeps

    def board_name(self, index: int) -> str:
        return f"board-{index:04d}"

    def as_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["at"] = self.at.isoformat().replace("+00:00", "Z")
        return document


class CountingEmulator(CapacityEmulator):
    """The capacity emulator, also counting requests by operation (a Query by its index): the latency model needs
    calls, which units do not tell."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.calls: Counter[str] = Counter()
        self._calls_lock = threading.Lock()

    def admit(self, operation: str, charges: Sequence[Charge]) -> None:
        name = operation
        if operation == "Query" and charges:
            name = f"Query {charges[0].resource.partition('/')[2]}"
        with self._calls_lock:
            self.calls[name] += 1
        super().admit(operation, charges)


class World:
    """The base table, the board table and the aggregator between them, all in memory, one clock."""

    def __init__(self, workload: ManyBoardsWorkload) -> None:
        self.workload = workload
        self.clock = VirtualClock()
        self.emulator = CountingEmulator(self.clock)
        # D = N (no ranked versions): the run measures head refreshes; a deep gather runs once a RankRefreshSeconds.
        self.settings = Settings(
            board_table="memory-board",
            views_table="memory-views",
            write_concurrency=1,
            rank_depth=0,
            category_rank_depth=0,
            snapshot_spare=0,  # no takedown spares either: the figures are the ranking's own
        )
        self.stores = in_process(self.emulator, self.settings)
        self.views = self.stores.views
        self.board = self.stores.board
        self.bucket = bucket_of(self.settings.anchor, workload.at)
        self.rng = random.Random(workload.seed)
        self.items = {
            workload.board_name(b): self.rng.randint(workload.min_items, workload.max_items)
            for b in range(workload.boards)
        }

    def record(self, views: dict[tuple[str, int], int]) -> list[int]:
        """Record ``views[(board, item)]`` views of each item in one counter write, then aggregate the stream in
        Lambda-sized batches; returns how many periods each batch marked changed."""
        self.emulator.clock = self.clock
        for (board, item), count in views.items():
            shard = self.rng.randrange(self.settings.write_shards)
            self.views.add_view(f"{board}/{item:02d}.jpg", shard, count, self.bucket, (board,))
        marked = []
        while batch := self.stores.take_stream(BATCH_RECORDS):
            with self.paced(Settings.write_concurrency):
                outcome = apply_batch(self.board, [v for r in batch for v in stream_view_records(r)], self.settings)
            if outcome.failures:
                raise next(iter(outcome.failures.values()))
            with self.paced(1):  # the adapter marks the periods one UpdateItem after another
                note_changes(self.board, outcome, self.settings, int(self.clock.now()))
            marked.append(len(outcome.changed))
        return marked

    @contextmanager
    def paced(self, concurrency: int) -> Iterator[None]:
        """Stamp the requests inside as ``concurrency`` workers send them, a round trip apart (``PacedClock``), not
        all in one emulated second: the dirty periods share one partition of the by-change index."""
        clock = PacedClock(self.clock.now() + 1, self.workload.latency_ms / 1000, concurrency)
        self.emulator.clock = clock
        try:
            yield
        finally:
            self.clock.set(clock.now() + 1)
            self.emulator.clock = self.clock

    def first_views(self) -> dict[tuple[str, int], int]:
        top = self.workload.max_views
        return {(board, i): self.rng.randint(1, top) for board, n in self.items.items() for i in range(n)}

    def new_views(self) -> dict[tuple[str, int], int]:
        """A few items of every board gain views: every board's periods change, and so does its top."""
        changed = min(self.workload.changed_items, self.workload.min_items)
        top = self.workload.max_views
        return {
            (board, i): self.rng.randint(1, top)
            for board, n in self.items.items()
            for i in self.rng.sample(range(n), changed)
        }

    def refresh(self, board: Board | None = None) -> RefreshRun:
        """One run of the scheduled handler: every changed period, and the global all time always."""
        everything = PeriodKey(self.settings.board, ALL, ALL)
        # The run's virtual time, not the wall clock: two runs an hour apart would each read the day-before checkpoint
        clock = self.virtual_clock()
        with self.paced(self.workload.parallelism):
            return refresh_changed(
                board or self.board,
                self.settings,
                parallelism=self.workload.parallelism,
                always=[everything],
                clock=clock,
            )

    def virtual_clock(self) -> Clock:
        """The workload's time moved on by the run's virtual seconds, as the services' clock."""
        return lambda: self.workload.at + timedelta(seconds=self.clock.now())


class SlowBoard:
    """A Board whose every call first waits ``latency`` seconds, as a DynamoDB round trip does: the sleep
    releases the GIL, so calls in flight overlap as they do on the network."""

    def __init__(self, board: Board, latency: float) -> None:
        self._board, self._latency = board, latency

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._board, name)
        if not callable(attribute):
            return attribute

        def after_a_round_trip(*args: Any, **kwargs: Any) -> Any:
            time.sleep(self._latency)
            return attribute(*args, **kwargs)

        return after_a_round_trip


@dataclass(frozen=True)
class Measured:
    """One measured refresh run: what it did and what it cost."""

    run: RefreshRun
    calls: Counter[str]
    read_units: float
    write_units: float
    by_change_write_units: float
    throttled: int
    wall_seconds: float
    cpu_seconds: float


def measure(world: World, board: Board | None = None) -> Measured:
    """Run the snapshot job once and book its calls, units and times (the emulator's counters are deltas)."""
    emulator, usage = world.emulator, world.emulator.usage
    calls = emulator.calls.copy()
    reads, writes = usage.units("read"), usage.units("write")
    by_change = usage.units("write", f"{world.board.table}/{BY_CHANGE_INDEX}")
    throttled = usage.throttled_requests
    wall, cpu = time.perf_counter(), time.process_time()
    run = world.refresh(board)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return Measured(
        run,
        emulator.calls - calls,
        usage.units("read") - reads,
        usage.units("write") - writes,
        usage.units("write", f"{world.board.table}/{BY_CHANGE_INDEX}") - by_change,
        usage.throttled_requests - throttled,
        wall,
        cpu,
    )


def round_trips(measured: Measured) -> int:
    """Sequential round trips over all periods: every call but the gather's Queries, which go out one round of
    parallel Queries at a time (``gather_top_n``), so each round is one round trip."""
    gather_queries = sum(n for name, n in measured.calls.items() if name.startswith("Query by-") and name != LISTING)
    listing = measured.calls[LISTING]
    rounds = sum(r.gathered.rounds for r in measured.run.results.values())
    return sum(measured.calls.values()) - gather_queries - listing + rounds


LISTING = f"Query {BY_CHANGE_INDEX}"  # the one paginated Query that lists the dirty periods, before any refresh


def modelled_seconds(trips: int, listing_pages: int, latency_s: float, parallelism: int) -> float:
    """The run's time with ``parallelism`` periods in flight: the listing first, then the round trips shared."""
    return listing_pages * latency_s + trips * latency_s / parallelism


def run_many_boards(
    workload: ManyBoardsWorkload = ManyBoardsWorkload(), on_step: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The scenario as a JSON document (see the module docstring)."""
    step = on_step or (lambda _: None)
    started = time.perf_counter()
    world = World(workload)
    step("recording and aggregating the first views")
    world.record(world.first_views())
    step("first snapshot run (not measured)")
    world.refresh()
    step("new views on every board")
    marked = world.record(world.new_views())
    step("the measured snapshot run")
    measured = measure(world)
    document = figures(workload, world.settings, measured)
    document["aggregator_marks"] = aggregator_marks(marked, workload.latency_ms)
    if workload.latency_check:
        step(f"new views again, and a run with {workload.latency_ms:g} ms slept before every call")
        world.record(world.new_views())
        slow = measure(world, cast(Board, SlowBoard(world.board, workload.latency_ms / 1000)))
        document["latency_check"] = latency_check(slow)
    document["setup_seconds"] = time.perf_counter() - started - measured.wall_seconds
    return document


def figures(workload: ManyBoardsWorkload, settings: Settings, measured: Measured) -> dict[str, Any]:
    """The measured run's figures; ``headroom`` is the schedule interval over the modelled run time."""
    periods = len(measured.run.results)
    calls = sum(measured.calls.values())
    trips = round_trips(measured)
    interval = settings.refresh_seconds
    listing = measured.calls[LISTING]

    def model(latency_ms: float) -> dict[str, float]:
        seconds = modelled_seconds(trips, listing, latency_ms / 1000, workload.parallelism)
        serial = modelled_seconds(calls - listing, listing, latency_ms / 1000, workload.parallelism)
        return {
            "latency_ms": latency_ms,
            "modelled_seconds": seconds,
            "headroom": interval / seconds,
            "modelled_seconds_serial": serial,
            "headroom_serial": interval / serial,
        }

    headline = model(workload.latency_ms)
    lambda_cpu = measured.cpu_seconds * LAMBDA_FULL_VCPU_MB / SNAPSHOT_FUNCTION_MB
    return {
        "scenario": "many-boards",
        "workload": workload.as_json(),
        "boards": workload.boards + 1,  # the global board too: every view counts there
        "periods_refreshed": periods,
        "snapshots_written": measured.run.written,
        "failures": len(measured.run.failures),
        "throttled_requests": measured.throttled,
        "calls": dict(sorted(measured.calls.items())),
        "calls_total": calls,
        "calls_per_period": (calls - listing) / max(1, periods),
        "round_trips_per_period": (trips - listing) / max(1, periods),
        "items_read": measured.run.items_read,
        "read_units": measured.read_units,
        "write_units": measured.write_units,
        "parallelism": workload.parallelism,
        "schedule": settings.schedule,
        "schedule_interval_seconds": interval,
        **headline,
        "model": [model(latency) for latency in sorted({*LATENCIES_MS, workload.latency_ms})],
        "by_change_write_units": measured.by_change_write_units,
        "by_change_write_units_per_s": measured.by_change_write_units / headline["modelled_seconds"],
        "partition_write_units_per_s": PARTITION_WRITE_UNITS_PER_S,
        "cpu_seconds": measured.cpu_seconds,
        "wall_seconds": measured.wall_seconds,
        "cpu_ms_per_period": 1000 * measured.cpu_seconds / max(1, periods),
        "lambda_cpu_seconds": lambda_cpu,
        "headroom_cpu": interval / lambda_cpu if lambda_cpu else None,
    }


def latency_check(slow: Measured) -> dict[str, Any]:
    """The run with the latency slept before every call: its real wall clock next to nothing else."""
    return {
        "periods_refreshed": len(slow.run.results),
        "failures": len(slow.run.failures),
        "throttled_requests": slow.throttled,
        "round_trips": round_trips(slow),
        "wall_seconds": slow.wall_seconds,
        "cpu_seconds": slow.cpu_seconds,
    }


def aggregator_marks(marked: list[int], latency_ms: float) -> dict[str, Any]:
    """What marking the changed periods cost the aggregator while every board was active: ``note_changes`` writes
    one UpdateItem per changed period of a batch, one after another."""
    return {
        "batches": len(marked),
        "periods_marked_per_batch_max": max(marked, default=0),
        "mark_seconds_per_batch_max": max(marked, default=0) * latency_ms / 1000,
    }
