"""``shardboard bench --scenario library``: what the client library's coalescing saves, on the benchmark's workload.

Issue 14 item 1: a site that records through ``shardboard.Recorder`` pays one counter write per distinct (item,
boards) per flush per process instead of one per view. This scenario offers the benchmark's Zipf workload
(``bench.workload.Workload``: Zipf s=1.0 over 100,000 items at 5,000 views/s) to ``processes`` application
processes, each view to one of them at random (a load balancer), each with its own real ``Recorder``, and prices
every request on the capacity emulator, as the ``designs`` scenario does:

* ``api``: one write per view (``record_views``, the ``POST /views`` path), the designs scenario's shardboard run;
* ``library-1s``, ``library-5s``: the same views through the recorders, flushed every 1 s or 5 s.

Each run feeds the real aggregator (its stream, tumbling windows, sparse index) and the real snapshot job, so write
units are counted in total: base table + aggregates + index. Time is simulated: view i arrives at i / rate seconds
of virtual time, each recorder counts its views at that time (``Recorder(clock=...)``) and is flushed at its own
virtual ticks (``flush_interval=None`` and ``flush()``; process p's first flush is at (p + 1) x interval /
processes, so the processes' flushes interleave as independently started ones do). The four "processes" are four
recorders in this one process: 5,000 views/s of real time is beyond this machine's two cores, and the emulator's
in-memory tables cannot be shared between processes.

The floor of base writes is computed from the views actually generated: the distinct (process, flush window, item,
boards) keys, one counter write each at best. A viral item at ``viral_views_per_s`` is a separate run of one item.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from shardboard.client import Recorder, Stores
from shardboard.domain.periods import from_epoch
from shardboard.domain.ports import Throttled
from shardboard_tools.bench.designs import ShardboardDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock

API = "api"
VIRAL_ITEM = "images/viral.jpg"
# The targets: base writes within 5 % of the floor, at most 1.0 write unit per view at 5 s flushes.
FLOOR_TOLERANCE = 0.05
MAX_WRITE_UNITS_PER_VIEW = 1.0
TARGET_INTERVAL = 5.0
# No size-triggered flush in the simulation: a flush at a wall-clock moment would break virtual time. The largest
# flush here (5 s of one process's share) holds a few thousand keys, far below this.
UNBOUNDED_KEYS = 10_000_000


@dataclass(frozen=True)
class LibraryWorkload:
    base: Workload = field(default_factory=Workload)
    processes: int = 4
    flush_intervals: tuple[float, ...] = (1.0, 5.0)
    viral_views_per_s: float = 20_000.0
    viral_seconds: float = 10.0
    seed: int = 14  # which process takes each view

    def as_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["base"] = self.base.as_json()
        return document


def run_name(interval: float) -> str:
    return f"library-{interval:g}s"


def assign(views: int, processes: int, seed: int) -> list[int]:
    """The process that takes each view: uniform at random, as a load balancer spreads requests."""
    rng = random.Random(seed)
    return [rng.randrange(processes) for _ in range(views)]


def first_flush(process: int, processes: int, interval: float) -> float:
    """Process ``process``'s first flush (virtual seconds): the processes' ticks interleave evenly."""
    return (process + 1) * interval / processes


def flush_window(at: float, process: int, processes: int, interval: float) -> int:
    """Which of ``process``'s buffers a view recorded at ``at`` joins: the flushes at or before ``at``."""
    first = first_flush(process, processes, interval)
    return 0 if at < first else math.floor((at - first) / interval) + 1


def floor_writes(items: list[int], owners: list[int], rate: float, processes: int, interval: float) -> int:
    """The fewest base writes that can carry these views: one per distinct (process, flush window, item) key (the
    workload names no category board, so (item, boards) is the item)."""
    keys = {
        (owner, flush_window(position / rate, owner, processes, interval), item)
        for position, (item, owner) in enumerate(zip(items, owners, strict=True))
    }
    return len(keys)


class Processes:
    """``processes`` recorders writing into one design's in-memory base table, flushed at their virtual ticks."""

    def __init__(self, design: ShardboardDesign, clock: VirtualClock, processes: int, interval: float) -> None:
        self.design, self.clock, self.interval = design, clock, interval
        stores = Stores(design.views)
        self.recorders = [
            Recorder(
                flush_interval=None,
                max_pending=UNBOUNDED_KEYS,
                settings=design.settings,
                workers=1,  # the in-memory table answers at once: threads would only add dispatch cost
                clock=lambda: from_epoch(design.start_epoch + clock.now()),
                stores=stores,
            )
            for _ in range(processes)
        ]
        self.next_flush = [first_flush(p, processes, interval) for p in range(processes)]

    def flush_due(self) -> None:
        """Every flush due by now, in time order, each stamped at its own tick."""
        now = self.clock.now()
        while (due := min(self.next_flush)) <= now:
            process = self.next_flush.index(due)
            self._flush(process, due)
            self.next_flush[process] += self.interval

    def _flush(self, process: int, at: float) -> None:
        now = self.clock.now()
        self.clock.set(at)
        before = len(self.design.stream_records)
        result = self.recorders[process].flush()
        if result.failed_writes:
            raise RuntimeError(f"process {process}: {result.failed_writes} write(s) failed at {at:.1f} s")
        for record in self.design.stream_records[before:]:  # its flush places a record in its tumbling window
            record["dynamodb"]["ApproximateCreationDateTime"] = at
        self.clock.set(now)

    def close(self) -> None:
        """The processes exit: ``close()`` flushes what each holds, at the run's last instant."""
        for process, recorder in enumerate(self.recorders):
            if recorder.stats().pending_views:
                self._flush(process, self.clock.now())
            recorder.close()

    def writes(self) -> int:
        return sum(recorder.stats().writes for recorder in self.recorders)


def drive(
    workload: LibraryWorkload,
    item_ids: list[str],
    sequence: list[int],
    owners: list[int],
    rate: float,
    *,
    interval: float | None,
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Offer the views at ``rate`` to a fresh shardboard, one write each (``interval`` None: the API path) or
    through the recorders; drain the stream, take the snapshot, and measure."""
    clock = VirtualClock()
    design = ShardboardDesign(workload.base, CapacityEmulator(clock))
    processes = None if interval is None else Processes(design, clock, workload.processes, interval)
    next_refresh = workload.base.refresh_seconds
    refused: dict[str, int] = {}  # views the API path's client saw throttled (429): not recorded
    for position, (index, owner) in enumerate(zip(sequence, owners, strict=True)):
        clock.set(position / rate)
        if clock.now() >= next_refresh:
            design.refresh()
            next_refresh += workload.base.refresh_seconds
        if processes is None:
            try:
                design.view(item_ids[index])
            except Throttled:
                refused[item_ids[index]] = refused.get(item_ids[index], 0) + 1
        else:
            processes.flush_due()
            processes.recorders[owner].record(item_ids[index])
        design.settle()
        if on_progress and position % 10_000 == 0:
            on_progress(position)
    clock.set(len(sequence) / rate)
    if processes is not None:
        processes.flush_due()
        processes.close()
    while design.pending():  # drain the stream: a batch that failed is retried a simulated second later
        clock.advance(1.0)
        design.settle(final=True)
    design.refresh()
    base_writes = len(sequence) - sum(refused.values()) if processes is None else processes.writes()
    return measure(design, item_ids, sequence, base_writes, refused)


def measure(
    design: ShardboardDesign, item_ids: list[str], sequence: list[int], base_writes: int, refused: dict[str, int]
) -> dict[str, Any]:
    """Writes and write units per view, and whether every count the pipeline holds equals the truth (the views
    offered, less those refused by a throttle)."""
    views = len(sequence)
    truth: dict[str, int] = {}
    for index in sequence:
        truth[item_ids[index]] = truth.get(item_ids[index], 0) + 1
    for item, count in refused.items():
        truth[item] -= count
    truth = {item: count for item, count in truth.items() if count}
    best = sorted(truth.items(), key=lambda pair: (-pair[1], pair[0]))[: design.settings.top_n]
    aggregates = {item: count for item, (count, _) in design.board.scan_aggregates().items()}
    usage = design.emulator.usage
    return {
        "views": views,
        "base_writes": base_writes,
        "base_writes_per_view": base_writes / views,
        "write_units_per_view": usage.units("write") / views,
        "base_write_units_per_view": usage.units("write", design.settings.views_table) / views,
        "write_units_per_view_by_resource": {
            resource: units / views for (resource, kind), units in sorted(usage.consumed.items()) if kind == "write"
        },
        "throttled_requests": usage.throttled_requests,
        "refused_views": sum(refused.values()),
        "stream_records": design.records,
        "exact_base": design.views.scan_totals() == truth,
        "exact_aggregates": aggregates == truth,
        "exact_top_n": design.top() == best,
    }


def viral(workload: LibraryWorkload, interval: float | None) -> dict[str, Any]:
    """One item at ``viral_views_per_s`` for ``viral_seconds``: base writes per second per process, throttles."""
    rate = workload.viral_views_per_s
    views = max(1, round(rate * workload.viral_seconds))
    owners = assign(views, workload.processes, workload.seed)
    result = drive(workload, [VIRAL_ITEM], [0] * views, owners, rate, interval=interval)
    seconds = views / rate
    floor = views if interval is None else floor_writes([0] * views, owners, rate, workload.processes, interval)
    return {
        "views_per_s": rate,
        "seconds": seconds,
        "base_writes": result["base_writes"],
        "floor_writes": floor,
        "base_writes_per_s_per_process": result["base_writes"] / seconds / workload.processes,
        "base_writes_per_s": result["base_writes"] / seconds,
        "write_units_per_view": result["write_units_per_view"],
        "throttled_requests": result["throttled_requests"],
        "exact": result["exact_base"] and result["exact_aggregates"],
    }


def run_library(
    workload: LibraryWorkload = LibraryWorkload(), on_progress: Callable[[str, int], None] | None = None
) -> dict[str, Any]:
    """The scenario as the JSON document ``shardboard bench --scenario library --json`` prints."""
    base = workload.base
    item_ids = base.item_ids()
    sequence = base.view_sequence().tolist()
    owners = assign(len(sequence), workload.processes, workload.seed)
    rate = base.views_per_s

    def progress(name: str) -> Callable[[int], None] | None:
        return (lambda done: on_progress(name, done)) if on_progress else None

    runs = {API: drive(workload, item_ids, sequence, owners, rate, interval=None, on_progress=progress(API))}
    runs[API]["floor_writes"] = len(sequence)
    for interval in workload.flush_intervals:
        name = run_name(interval)
        run = drive(workload, item_ids, sequence, owners, rate, interval=interval, on_progress=progress(name))
        floor = floor_writes(sequence, owners, rate, workload.processes, interval)
        run |= {
            "flush_interval": interval,
            "floor_writes": floor,
            "floor_writes_per_view": floor / len(sequence),
            "writes_over_floor": run["base_writes"] / floor - 1,
        }
        runs[name] = run
    viral_runs = {API: viral(workload, None)}
    viral_runs |= {run_name(interval): viral(workload, interval) for interval in workload.flush_intervals}
    return {
        "scenario": "library",
        "workload": workload.as_json(),
        "runs": runs,
        "viral": viral_runs,
        "targets": targets(runs, viral_runs),
    }


def targets(runs: dict[str, Any], viral_runs: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's done-when, checked on the figures: floor, write units, exactness, the viral item."""
    checked = []
    for name, run in runs.items():
        if name == API:
            continue
        checked.append(
            {
                "name": f"{name}: base writes within {FLOOR_TOLERANCE:.0%} of the floor",
                "found": f"{run['base_writes_per_view']:.4f} vs {run['floor_writes_per_view']:.4f} per view",
                "met": abs(run["writes_over_floor"]) <= FLOOR_TOLERANCE,
            }
        )
    slow = runs.get(run_name(TARGET_INTERVAL))
    if slow is not None:
        checked.append(
            {
                "name": f"{run_name(TARGET_INTERVAL)}: <= {MAX_WRITE_UNITS_PER_VIEW} write unit per view in total",
                "found": f"{slow['write_units_per_view']:.3f}",
                "met": slow["write_units_per_view"] <= MAX_WRITE_UNITS_PER_VIEW,
            }
        )
    for name, run in runs.items():
        exact = run["exact_base"] and run["exact_aggregates"] and run["exact_top_n"]
        checked.append({"name": f"{name}: every count exact after the drain", "found": str(exact), "met": exact})
    for name, run in viral_runs.items():
        if name == API:
            continue
        checked.append(
            {
                "name": f"{name}: the viral item costs a few writes/s per process, no throttle",
                "found": f"{run['base_writes_per_s_per_process']:.2f} writes/s, {run['throttled_requests']} throttled",
                "met": run["base_writes_per_s_per_process"] <= 5 and run["throttled_requests"] == 0 and run["exact"],
            }
        )
    return checked
