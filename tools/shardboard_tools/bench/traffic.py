"""``shardboard bench --scenario traffic``: one site's month's bill at 10^4, 10^6, 10^8 and 10^9 views a day (and
10^3, where the bill meets a managed Redis's).

The site: 21 boards (global + 20 categories, the ``boards`` scenario's skewed ones), day, week, month and all time plus
trending, N = 100 on every board, a Zipf catalogue whose items each have a document (the heads inline the first page's,
as the deployed snapshot job does), the template's defaults otherwise (R = 32 spares, S = 10 index shards, ranked
versions at D = 10,000 / 1,000 every minute, a refresh a minute, 1,000-record stream batches with a 1 s batching
window, no tumbling window).

Each level runs in virtual time on the capacity emulator, through the real code (``boards_shardboard``, ``library``,
``boards_designs``): first a warm-up (the site's earlier traffic, compressed: min(a day's views, 50,000) views), then
a *slice* of the level's own rate (``Level.slice_seconds`` of virtual time). Only the slice is measured: every
figure is the emulator's usage after the slice minus before it. It is scaled to a month of 730 hours two ways:

* what the views cause (base writes, aggregates, index entries, the aggregator's reads, its invocations) per view
  measured on the slice x the month's views;
* what the snapshot job causes (its reads, its head writes, its events) per refresh run measured on the slice x the
  month's refresh runs (one a minute: they do not scale with views, only what each one finds changed does).

Frontend reads are page loads (``page_loads_per_view`` x views) x the read units of one GET of the first page (the
global board's all-time head as the slice leaves it). Lambda, API Gateway, CloudWatch and X-Ray are derived from the
counts above, the template's memory size and the stated durations and sizes in ``Assumptions``; the managed Redis
from the level's operations per second. Prices: ``prices.py``. ``bill`` turns measured units into dollars and is
pure (its unit test checks it by hand).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from shardboard.adapters.keys import PK, snapshot_pk
from shardboard.domain.periods import ALL, from_epoch, iso
from shardboard.domain.trending import TRENDING
from shardboard.settings import DEFAULT_CATEGORY_RANK_DEPTH, DEFAULT_RANK_DEPTH, Settings, schedule_seconds
from shardboard_tools.bench import prices
from shardboard_tools.bench.boards import TrendingTruth, summarize
from shardboard_tools.bench.boards_designs import SF_SNAPSHOTS, BoardsRun, ProgressCallback, StraightforwardDesign
from shardboard_tools.bench.boards_shardboard import BOARD_TABLE, ShardboardBoardsDesign
from shardboard_tools.bench.boards_workload import BoardsWorkload, Views, brute_force_tops, category_board
from shardboard_tools.bench.designs import REQUEST_LATENCY_S
from shardboard_tools.bench.library import Processes, assign
from shardboard_tools.bench.many_boards import DEPLOYED_PARALLELISM
from shardboard_tools.bench.run import UNLIMITED
from shardboard_tools.capacity.emulator import PacedClock, VirtualClock
from shardboard_tools.capacity.units import item_size, read_units

MONTH_SECONDS = prices.MONTH_HOURS * 3600
SECONDS_PER_DAY = 86_400
# The designs side by side, and the pseudo-design priced from operations alone.
HTTP, LIBRARY, STRAIGHTFORWARD, REDIS = "shardboard-http", "shardboard-library", "straightforward", "redis"
DESIGNS = (HTTP, LIBRARY, STRAIGHTFORWARD)
COMPONENTS = (
    "dynamodb_writes",
    "dynamodb_reads",
    "refresh_reads",
    "frontend_reads",
    "lambda",
    "api_gateway",
    "eventbridge",
    "cloudwatch",
    "xray",
    "elasticache",
)
WARMUP_CAP = 10_000
# Wed 2026-11-25 12:00 UTC: no day, week, month, hour or trending epoch ends within an hour's slice.
START = datetime(2026, 11, 25, 12, tzinfo=UTC)


@dataclass(frozen=True)
class Level:
    views_per_day: int
    # Virtual seconds of the measured slice: at least one refresh interval, long enough for a few hundred views.
    slice_seconds: float

    @property
    def views_per_s(self) -> float:
        return self.views_per_day / SECONDS_PER_DAY

    @property
    def slice_views(self) -> int:
        return max(1, round(self.slice_seconds * self.views_per_s))


DEFAULT_LEVELS = (
    Level(10**3, 1200.0),
    Level(10**4, 900.0),
    Level(10**6, 300.0),
    Level(10**8, 20.0),
    Level(10**9, 2.0),
)


@dataclass(frozen=True)
class Assumptions:
    """What the bill assumes beyond what the slice measures (printed with every run)."""

    page_loads_per_view: float = 0.1  # GETs of a leaderboard's first page per view recorded; no CDN in front
    target_utilisation: float = 0.7  # provisioned capacity's auto scaling target (its default)
    min_capacity_units: float = 1.0  # auto scaling's floor per table and per index, for reads and for writes
    record_ms: float = 10.0  # POST /views: billed duration per request
    read_ms: float = 10.0  # GET /leaderboard: billed duration per request
    aggregator_ms_per_invocation: float = 50.0  # the aggregator: fixed part (round trips of its writes)
    aggregator_ms_per_record: float = 0.05  # ... and per record (its CPU at 512 MB)
    snapshot_ms_per_run: float = 1_000.0  # the snapshot job, once a minute
    shard_review_ms_per_run: float = 200.0  # the shard review, once a minute
    request_log_bytes: int = 800  # CloudWatch Logs per request invocation (platform lines, one EMF record)
    background_log_bytes: int = 2_000  # per aggregator, snapshot or review invocation
    custom_metrics: int = 37  # distinct metric names the handlers emit (add_metric), one dimension set each
    xray_reservoir_per_s: float = 1.0  # X-Ray's default sampling rule: the first request each second ...
    xray_rate: float = 0.05  # ... and 5 % of the rest
    redis_ops_per_view: int = 10  # ZINCRBY on 2 boards x (day, week, month, all, trending)
    redis_peak_to_mean: float = 2.0  # nodes are sized for the peak, not the month's mean
    # Node types in order of size: (type, operations per second a node is counted on for).
    redis_nodes: tuple[tuple[str, float], ...] = (("cache.t4g.small", 10_000.0), ("cache.m7g.large", 60_000.0))


@dataclass(frozen=True)
class TrafficWorkload:
    levels: tuple[Level, ...] = DEFAULT_LEVELS
    items: int = 5_000
    zipf_s: float = 1.0
    categories: int = 20
    top_n: int = 100
    document_bytes: int = 1_000  # each item's document (meta), inlined in the heads' first page
    warmup_cap: int = WARMUP_CAP  # warm-up views: a day's, at most this many
    warmup_views_per_s: float = 5_000.0
    processes: int = 4  # application processes recording through the library
    flush_interval: float = 1.0  # the Recorder's default
    seed: int = 39
    assumptions: Assumptions = field(default_factory=Assumptions)

    def as_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["levels"] = [
            {**asdict(level), "slice_views": level.slice_views, "warmup_views": self.warmup_views(level)}
            for level in self.levels
        ]
        document["distribution"] = f"zipf(s={self.zipf_s}) over {self.items} items"
        document["refresh_seconds"] = refresh_seconds()
        return document

    def warmup_views(self, level: Level) -> int:
        return min(level.views_per_day, self.warmup_cap)

    def boards_workload(self, level: Level, straightforward: bool = False) -> BoardsWorkload:
        """The boards scenario's workload for this level's warm-up + slice (their views, their span)."""
        views = self.warmup_views(level) + level.slice_views
        span = slice_end(level)
        return BoardsWorkload(
            views=views,
            items=self.items,
            zipf_s=self.zipf_s,
            # The straightforward design refreshes at every interval up to the span's end (just past it: the last
            # is on it, whatever the rounding), then once more.
            views_per_s=views / (span + 0.5),
            categories=self.categories,
            global_top_n=self.top_n,
            category_top_n=self.top_n,
            start=START,
            refresh_seconds=refresh_seconds(),
            # The template's default: no tumbling window. The straightforward design folds its views per window,
            # so it gets the stream's 1 s batching window as one.
            aggregation_window_seconds=1.0 if straightforward else 0.0,
            seed=self.seed,
        )

    def views(self, level: Level) -> Views:
        """Warm-up views at ``warmup_views_per_s`` from 0, then the slice's at the level's rate."""
        import numpy as np

        drawn = self.boards_workload(level).view_arrays()
        warm = self.warmup_views(level)
        offsets = np.empty(len(drawn), dtype=np.float64)
        offsets[:warm] = np.arange(warm, dtype=np.float64) / self.warmup_views_per_s
        offsets[warm:] = slice_start(level) + np.arange(level.slice_views) / level.views_per_s
        return Views(drawn.ranks, drawn.categories, offsets)


def refresh_seconds() -> int:
    """The snapshot job's interval: the template's SnapshotSchedule (the settings' default)."""
    return schedule_seconds(Settings().schedule)


def slice_end(level: Level) -> float:
    """Virtual seconds at which the slice ends: on a scheduled refresh (a multiple of the interval), with at least one
    interval between the warm-up's last refresh and the slice's first, and ceil(L / interval) refreshes in the slice
    (each with the ranked versions due: one a minute)."""
    interval = refresh_seconds()
    return interval * (1 + math.ceil(level.slice_seconds / interval))


def slice_start(level: Level) -> float:
    return slice_end(level) - level.slice_seconds


def part(views: Views, start: int, stop: int) -> Views:
    return Views(views.ranks[start:stop], views.categories[start:stop], views.offsets[start:stop])


def document_of(item_id: str, size: int) -> str:
    """An item's document: compact JSON of about ``size`` bytes."""
    head = f'{{"title":"{item_id}","url":"https://example.com/{item_id}","alt":"'
    return head + "x" * max(0, size - len(head) - 2) + '"}'


Consumed = dict[tuple[str, str], float]


def delta(after: Mapping[Any, float], before: Mapping[Any, float]) -> Consumed:
    """What ``after`` holds beyond ``before`` (two readings of one usage counter)."""
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value - before.get(key, 0.0)}


def add(total: Consumed, more: Consumed) -> None:
    for key, value in more.items():
        total[key] = total.get(key, 0.0) + value


# -- the designs, measured on a slice


class TrafficShardboard(ShardboardBoardsDesign):
    """shardboard with the template's defaults, documents inlined, the stream batched as deployed; refresh usage kept
    apart per resource. ``library``: the views go through ``processes`` Recorders instead of one write each."""

    def __init__(self, workload: BoardsWorkload, traffic: TrafficWorkload, library: bool) -> None:
        super().__init__(workload, extra=(TRENDING,))
        deployed = replace(
            self.settings,
            rank_depth=DEFAULT_RANK_DEPTH,
            category_rank_depth=DEFAULT_CATEGORY_RANK_DEPTH,
            snapshot_spare=Settings().snapshot_spare,
        )
        self.settings = self.design.settings = deployed
        self.announcer.policy = deployed.policy
        # The template's event source: full batches of 1,000 or whatever 1 s gathered (the bench default waits longer).
        delivery = self.design.delivery
        delivery.mapping = replace(delivery.mapping, batching_window_seconds=1.0)
        self.traffic, self.library = traffic, library
        self.catalog = self.design.items
        self.refresh_consumed: Consumed = {}

    def put_documents(self) -> None:
        """Every item's document, before the warm-up (the site's catalogue exists already: no limit applies, and
        the slice, measured after, does not see their units)."""
        now = iso(from_epoch(self.workload.start.timestamp()))
        limits, self.emulator.limits = self.emulator.limits, UNLIMITED
        try:
            for item_id in self.workload.item_ids():
                self.design.items.put(item_id, document_of(item_id, self.traffic.document_bytes), now)
        finally:
            self.emulator.limits = limits

    def _refresh(self, result: BoardsRun, at: float) -> tuple[float, float]:
        """The snapshot job's run, its requests stamped as its ``parallelism`` periods in flight send them (a run
        of a hundred periods takes seconds, not one), and its usage kept apart."""
        before = dict(self.emulator.usage.consumed)
        self.emulator.clock = PacedClock(self.clock.now(), REQUEST_LATENCY_S, DEPLOYED_PARALLELISM)
        try:
            used = super()._refresh(result, at)
        finally:
            self.emulator.clock = self.clock
        add(self.refresh_consumed, delta(self.emulator.usage.consumed, before))
        return used

    def run(self, views: Views, on_progress: ProgressCallback | None = None) -> BoardsRun:
        return self._run_library(views, on_progress) if self.library else super().run(views, on_progress)

    def _run_library(self, views: Views, on_progress: ProgressCallback | None) -> BoardsRun:
        """The views through the Recorders (``library.Processes``), each view to one process at random; otherwise
        ``ShardboardBoardsDesign.run``'s loop: refreshes on schedule, the stream delivered as it fills."""
        started = time.perf_counter()
        workload, result = self.workload, BoardsRun(views_offered=len(views))
        ids = workload.item_ids()
        processes = Processes(self.design, self.clock, self.traffic.processes, self.traffic.flush_interval)
        # Their ticks interleave from this run's first view (a second run starts later on the same clock).
        processes.next_flush = [float(views.offsets[0]) + tick for tick in processes.next_flush]
        owners = assign(len(views), self.traffic.processes, self.traffic.seed + len(views))
        next_refresh = workload.refresh_seconds * (1 + math.floor(views.offsets[0] / workload.refresh_seconds))
        refresh_writes = refresh_reads = 0.0
        for position, (rank, category, offset) in enumerate(
            zip(views.ranks.tolist(), views.categories.tolist(), views.offsets.tolist(), strict=True)
        ):
            flush_until(processes, self.clock, offset)
            self.clock.set(offset)
            if offset >= next_refresh:
                writes, reads = self._refresh(result, offset)
                refresh_writes, refresh_reads = refresh_writes + writes, refresh_reads + reads
                next_refresh += workload.refresh_seconds
            processes.recorders[owners[position]].record(ids[rank], boards=(category_board(category),))
            result.views_recorded += 1
            self.design.settle()
            if on_progress and position % 50_000 == 0:
                on_progress(position)
        flush_until(processes, self.clock, self.clock.now())
        processes.close()
        while self.design.pending():
            self.clock.advance(1.0)
            self.design.settle(final=True)
        writes, reads = self._refresh(result, self.clock.now())
        self._collect(result, refresh_writes + writes, refresh_reads + reads)
        result.seconds = time.perf_counter() - started
        return result


def flush_until(processes: Processes, clock: VirtualClock, moment: float) -> None:
    """Every flush due by ``moment``, each at its own tick (the clock moves to it: it never goes back)."""
    while (due := min(processes.next_flush)) <= moment:
        clock.set(max(clock.now(), due))
        processes.flush_due()


class TrafficStraightforward(StraightforwardDesign):
    """The straightforward design with its refresh usage kept apart per resource."""

    def __init__(self, workload: BoardsWorkload) -> None:
        super().__init__(workload)
        self.refresh_consumed: Consumed = {}
        self.refresh_runs = 0

    def _refresh_all(self, result: BoardsRun, at: float, current: dict[str, str]) -> None:
        before = dict(self.emulator.usage.consumed)
        super()._refresh_all(result, at, current)
        self.refresh_runs += 1
        add(self.refresh_consumed, delta(self.emulator.usage.consumed, before))


@dataclass
class Slice:
    """What one design did during one level's slice (every figure a difference across the slice)."""

    design: str
    views: int
    seconds: float
    refresh_runs: int
    consumed: Consumed  # (resource, kind) -> units, everything
    refresh_consumed: Consumed  # the part the snapshot job used (refreshes, closing)
    head_table: str
    first_page_read_units: float
    aggregator_invocations: float
    aggregator_records: float
    billed_events: float
    refresh_items_read: int
    refreshes: int  # period refreshes (a run refreshes many)
    max_refresh_read_ratio: float
    exact: bool
    throttled_requests: int
    wall_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


def minimum_items(settings: Settings) -> int:
    """N + R + S: the fewest items a head refresh can read."""
    return settings.top_n + settings.snapshot_spare + settings.board_shards


def measure_shardboard(
    traffic: TrafficWorkload, level: Level, views: Views, *, library: bool, truth: Any, trending: TrendingTruth
) -> Slice:
    started = time.perf_counter()
    workload = traffic.boards_workload(level)
    design = TrafficShardboard(workload, traffic, library)
    design.put_documents()
    warm = traffic.warmup_views(level)
    before_run = design.run(part(views, 0, warm))
    usage, stats = design.emulator.usage, design.design.delivery.stats
    consumed, refresh_consumed = dict(usage.consumed), dict(design.refresh_consumed)
    invocations, records, billed = stats.invocations, stats.records, design.events.billed
    runs, throttled = len(design.events_per_run), usage.throttled_requests
    run = design.run(part(views, warm, len(views)))
    run.tops = {**before_run.tops, **run.tops}  # a period the slice left alone keeps its warm-up head
    figures = summarize(run, truth, trending)
    inner = design.design
    head = item_size(
        inner.engine.peek(inner.settings.board_table, {PK: {"S": snapshot_pk(inner.settings.board, ALL, ALL)}})
    )
    minimum = minimum_items(design.settings)
    return Slice(
        design=LIBRARY if library else HTTP,
        views=len(views) - warm,
        seconds=level.slice_seconds,
        # The job runs every interval; the bench's loop runs it only when a view comes after its time (at 10^3 views
        # a day some minutes have none, and their changes wait for the next run): the slice's usage is that of its
        # scheduled runs.
        refresh_runs=math.ceil(level.slice_seconds / refresh_seconds()),
        consumed=delta(usage.consumed, consumed),
        refresh_consumed=delta(design.refresh_consumed, refresh_consumed),
        head_table=BOARD_TABLE,
        first_page_read_units=read_units(head, consistent=False),
        aggregator_invocations=stats.invocations - invocations,
        aggregator_records=stats.records - records,
        billed_events=design.events.billed - billed,
        refresh_items_read=run.refresh_items_read,
        refreshes=run.refreshes,
        max_refresh_read_ratio=run.max_refresh_read_ratio * (minimum - design.settings.snapshot_spare) / minimum,
        exact=bool(figures["exact"]),
        throttled_requests=usage.throttled_requests - throttled,
        wall_seconds=time.perf_counter() - started,
        extra={
            "head_bytes": head,
            "minimum_items": minimum,
            "mismatched": figures["mismatched_buckets"][:5],
            "runs_with_views": len(design.events_per_run) - runs,
        },
    )


def measure_straightforward(traffic: TrafficWorkload, level: Level, views: Views, truth: Any) -> Slice:
    """Two runs, the warm-up alone and the warm-up with the slice (the design replays its views in passes, so it
    cannot stop between them): the slice is their difference."""
    started = time.perf_counter()
    warm = traffic.warmup_views(level)
    workload = traffic.boards_workload(level, straightforward=True)
    alone = replace(workload, views=warm, views_per_s=warm / (refresh_seconds() + 0.5))  # refreshes at 60 s, 60.5 s
    first, second = TrafficStraightforward(alone), TrafficStraightforward(workload)
    before_run, run = first.run(part(views, 0, warm)), second.run(views)
    figures = summarize(run, truth)
    head = item_size(second.snapshots.items.get(f"snapshot#{workload.boards()[0]}#all#all"))
    # Its head holds ids and counts only: a page also reads the page's documents (a BatchGetItem of P items).
    page = Settings().page_size * read_units(item_size(document_item(traffic)), consistent=False)
    windows = run.extra["windows"] - before_run.extra["windows"]
    slice_views = len(views) - warm
    batches = windows * math.ceil(slice_views / max(1, windows) / workload.batch_size)
    minimum = traffic.top_n + workload.gsi_shards
    return Slice(
        design=STRAIGHTFORWARD,
        views=slice_views,
        seconds=level.slice_seconds,
        refresh_runs=second.refresh_runs - first.refresh_runs,
        consumed=delta(second.emulator.usage.consumed, first.emulator.usage.consumed),
        refresh_consumed=delta(second.refresh_consumed, first.refresh_consumed),
        head_table=SF_SNAPSHOTS,
        first_page_read_units=read_units(head, consistent=False) + page,
        aggregator_invocations=batches,
        aggregator_records=slice_views,
        billed_events=0.0,
        refresh_items_read=run.refresh_items_read - before_run.refresh_items_read,
        refreshes=run.refreshes - before_run.refreshes,
        max_refresh_read_ratio=run.max_refresh_read_ratio,
        exact=bool(figures["exact"]),
        throttled_requests=second.emulator.usage.throttled_requests - first.emulator.usage.throttled_requests,
        wall_seconds=time.perf_counter() - started,
        extra={"head_bytes": head, "minimum_items": minimum, "mismatched": figures["mismatched_buckets"][:5]},
    )


def document_item(traffic: TrafficWorkload) -> dict[str, Any]:
    """An item record of the items table as the straightforward page would fetch it."""
    meta = document_of("images/12345.jpg", traffic.document_bytes)
    return {"pk": {"S": "item#images/12345.jpg"}, "sk": {"S": "item"}, "meta": {"S": meta}}


# -- the bill (pure: units in, dollars out)


@dataclass(frozen=True)
class Monthly:
    """A design's month: units by (resource, kind, cause) and the counts Lambda and the rest are billed on."""

    views: float
    units: dict[tuple[str, str, str], float]  # (resource, "write"/"read", cause) -> units a month
    request_invocations: float  # POST /views and GET /leaderboard invocations (and API requests)
    aggregator_invocations: float
    aggregator_records: float
    refresh_runs: float
    background_functions: int  # scheduled functions run every refresh interval (snapshot, shard review)
    billed_events: float
    metrics: int


# Causes of DynamoDB units, and the component each is billed under.
CAUSES = {
    ("write", "views"): "dynamodb_writes",
    ("write", "refresh"): "dynamodb_writes",
    ("read", "views"): "dynamodb_reads",
    ("read", "refresh"): "refresh_reads",
    ("read", "frontend"): "frontend_reads",
}


def monthly(measured: Slice, level: Level, assumptions: Assumptions, runs_per_month: float) -> Monthly:
    """The slice scaled to a month: view-caused units per view x the month's views, refresh-caused units per run x
    the month's runs, page loads x the first page's read units."""
    views = level.views_per_day * MONTH_SECONDS / SECONDS_PER_DAY
    per_view, per_run = views / measured.views, runs_per_month / max(1, measured.refresh_runs)
    units: dict[tuple[str, str, str], float] = defaultdict(float)
    for (resource, kind), value in measured.consumed.items():
        refresh = measured.refresh_consumed.get((resource, kind), 0.0)
        units[(resource, kind, "views")] += (value - refresh) * per_view
        units[(resource, kind, "refresh")] += refresh * per_run
    page_loads = views * assumptions.page_loads_per_view
    units[(measured.head_table, "read", "frontend")] += page_loads * measured.first_page_read_units
    library = measured.design == LIBRARY
    return Monthly(
        views=views,
        units={key: value for key, value in units.items() if value},
        request_invocations=0.0 if library else views + page_loads,
        aggregator_invocations=measured.aggregator_invocations * per_view,
        aggregator_records=measured.aggregator_records * per_view,
        refresh_runs=runs_per_month,
        background_functions=1 if measured.design == STRAIGHTFORWARD else 2,
        billed_events=measured.billed_events * per_run,
        metrics=assumptions.custom_metrics,
    )


def table_of(resource: str) -> str:
    return resource.split("/", 1)[0]


def dynamodb_bill(month: Monthly, assumptions: Assumptions) -> tuple[dict[str, float], dict[str, Any]]:
    """Each table on demand or provisioned (auto scaling at the target utilisation of the mean rate, each index its
    own capacity), whichever is cheaper; the chosen cost split over the components in proportion to their units."""
    components: dict[str, float] = defaultdict(float)
    tables: dict[str, Any] = {}
    for table in sorted({table_of(resource) for resource, _, _ in month.units}):
        mine = {key: value for key, value in month.units.items() if table_of(key[0]) == table}
        on_demand = {
            kind: sum(v for (_, k, _), v in mine.items() if k == kind)
            * (prices.WRITE_REQUEST_UNIT_DOLLARS if kind == "write" else prices.READ_REQUEST_UNIT_DOLLARS)
            for kind in ("write", "read")
        }
        provisioned = {"write": 0.0, "read": 0.0}
        for resource in sorted({resource for resource, _, _ in mine}):
            for kind in ("write", "read"):
                rate = sum(v for (r, k, _), v in mine.items() if r == resource and k == kind) / MONTH_SECONDS
                unit_hour = prices.WCU_HOUR_DOLLARS if kind == "write" else prices.RCU_HOUR_DOLLARS
                provisioned[kind] += prices.provisioned_dollars(
                    rate, unit_hour, assumptions.target_utilisation, assumptions.min_capacity_units
                )
        mode = "provisioned" if sum(provisioned.values()) < sum(on_demand.values()) else "on-demand"
        chosen = provisioned if mode == "provisioned" else on_demand
        for kind in ("write", "read"):
            units: dict[str, float] = defaultdict(float)  # the table's and its indexes' units, by cause
            for (_, k, cause), value in mine.items():
                if k == kind:
                    units[cause] += value
            total = sum(units.values())
            for cause, value in units.items():
                components[CAUSES[(kind, cause)]] += chosen[kind] * value / total if total else 0.0
            if not total:
                components[CAUSES[(kind, "views")]] += chosen[kind]
        tables[table] = {
            "mode": mode,
            "on_demand": sum(on_demand.values()),
            "provisioned": sum(provisioned.values()),
            "write_units": sum(v for (_, k, _), v in mine.items() if k == "write"),
            "read_units": sum(v for (_, k, _), v in mine.items() if k == "read"),
        }
    return dict(components), tables


def lambda_bill(month: Monthly, assumptions: Assumptions, memory_mb: int) -> tuple[float, dict[str, float]]:
    """GB-seconds and requests of every function, at the template's memory size."""
    a = assumptions
    page_loads = month.views * a.page_loads_per_view if month.request_invocations else 0.0
    posts = month.request_invocations - page_loads
    milliseconds = (
        posts * a.record_ms
        + page_loads * a.read_ms
        + month.aggregator_invocations * a.aggregator_ms_per_invocation
        + month.aggregator_records * a.aggregator_ms_per_record
        + month.refresh_runs * a.snapshot_ms_per_run
        + month.refresh_runs * a.shard_review_ms_per_run * (month.background_functions - 1)
    )
    gb_seconds = milliseconds / 1000 * memory_mb / 1024
    invocations = month.request_invocations + month.aggregator_invocations
    invocations += month.refresh_runs * month.background_functions
    dollars = gb_seconds * prices.LAMBDA_GB_SECOND_DOLLARS + invocations * prices.LAMBDA_REQUEST_DOLLARS
    return dollars, {"gb_seconds": gb_seconds, "invocations": invocations}


def xray_traces(invocations: float, assumptions: Assumptions) -> float:
    """Traces the default sampling rule records in a month at a steady ``invocations`` a month."""
    rate = invocations / MONTH_SECONDS
    kept = min(rate, assumptions.xray_reservoir_per_s) + assumptions.xray_rate * max(
        0.0, rate - assumptions.xray_reservoir_per_s
    )
    return kept * MONTH_SECONDS


def bill(month: Monthly, assumptions: Assumptions, memory_mb: int) -> dict[str, Any]:
    """A DynamoDB design's month: dollars by component, their total, and the counts behind them."""
    components, tables = dynamodb_bill(month, assumptions)
    lambda_dollars, lambda_counts = lambda_bill(month, assumptions, memory_mb)
    background = month.aggregator_invocations + month.refresh_runs * month.background_functions
    log_bytes = month.request_invocations * assumptions.request_log_bytes
    log_bytes += background * assumptions.background_log_bytes
    components |= {
        "lambda": lambda_dollars,
        "api_gateway": prices.http_api_dollars(month.request_invocations),
        "eventbridge": month.billed_events * prices.EVENTBRIDGE_EVENT_DOLLARS,
        "cloudwatch": month.metrics * prices.CLOUDWATCH_METRIC_MONTH_DOLLARS
        + log_bytes / 1e9 * prices.CLOUDWATCH_LOG_GB_DOLLARS,
        "xray": xray_traces(lambda_counts["invocations"], assumptions) * prices.XRAY_TRACE_DOLLARS,
    }
    ordered = {name: components.get(name, 0.0) for name in COMPONENTS}
    total = sum(ordered.values())
    return {
        "bill": total,
        "per_million_views": total / month.views * 1e6,
        "components": ordered,
        "tables": tables,
        "lambda": lambda_counts,
        "log_gb": log_bytes / 1e9,
    }


def redis_bill(views_per_day: float, assumptions: Assumptions) -> dict[str, Any]:
    """ElastiCache: the smallest node type that carries the peak operations per second on one primary, else as many
    shards of the largest as it takes; each shard a primary and a replica, billed by the node-hour."""
    a = assumptions
    mean = views_per_day / SECONDS_PER_DAY * (a.redis_ops_per_view + a.page_loads_per_view)
    peak = mean * a.redis_peak_to_mean
    node, capacity = next(((n, c) for n, c in a.redis_nodes if peak <= c), a.redis_nodes[-1])
    shards = max(1, math.ceil(peak / capacity))
    nodes = 2 * shards
    dollars = nodes * prices.ELASTICACHE_NODE_HOUR_DOLLARS[node] * prices.MONTH_HOURS
    views = views_per_day * MONTH_SECONDS / SECONDS_PER_DAY
    components = dict.fromkeys(COMPONENTS, 0.0) | {"elasticache": dollars}
    return {
        "bill": dollars,
        "per_million_views": dollars / views * 1e6,
        "components": components,
        "node_type": node,
        "shards": shards,
        "nodes": nodes,
        "ops_per_s_mean": mean,
        "ops_per_s_peak": peak,
        "exact": None,
    }


def crossover(levels: list[float], ours: list[float], theirs: list[float]) -> list[dict[str, Any]]:
    """Where ``ours`` and ``theirs`` (bills at ``levels`` views a day) cross: interpolated in log-log space between
    the two levels whose order differs; the views a day and the bill there."""
    found = []
    for i in range(len(levels) - 1):
        below = math.log(ours[i]) - math.log(theirs[i])
        above = math.log(ours[i + 1]) - math.log(theirs[i + 1])
        if below == 0 or below * above < 0:
            share = below / (below - above)
            x = math.log(levels[i]) + share * (math.log(levels[i + 1]) - math.log(levels[i]))
            y = math.log(ours[i]) + share * (math.log(ours[i + 1]) - math.log(ours[i]))
            found.append(
                {
                    "views_per_day": math.exp(x),
                    "bill": math.exp(y),
                    "between": [levels[i], levels[i + 1]],
                    "cheaper_below": "ours" if below < 0 else "theirs",
                }
            )
    return found


# -- the scenario


def template_memory_mb() -> int:
    """The functions' memory size: template.yaml's Globals (no function overrides it)."""
    from cfn_flip import load_yaml

    from shardboard_tools.template import PACKAGED_TEMPLATE

    body = load_yaml(PACKAGED_TEMPLATE.read_text(encoding="utf-8"))
    return int(body["Globals"]["Function"]["MemorySize"])


def figures(measured: Slice, month: Monthly, billed: dict[str, Any]) -> dict[str, Any]:
    """One design at one level as JSON."""
    consumed = measured.consumed
    writes = sum(v for (_, kind), v in consumed.items() if kind == "write")
    refresh_writes = sum(v for (_, kind), v in measured.refresh_consumed.items() if kind == "write")
    refresh_reads = sum(v for (_, kind), v in measured.refresh_consumed.items() if kind == "read")
    minimum = measured.extra["minimum_items"]
    return {
        **billed,
        "refresh_read_ratio": measured.refresh_items_read / max(1, measured.refreshes * minimum),
        "max_refresh_read_ratio": measured.max_refresh_read_ratio,
        "first_page_read_units": measured.first_page_read_units,
        "exact": measured.exact,
        "measured": {
            "slice_views": measured.views,
            "slice_seconds": measured.seconds,
            "refresh_runs": measured.refresh_runs,
            "refresh_runs_run": measured.extra.get("runs_with_views", measured.refresh_runs),
            "period_refreshes_per_run": measured.refreshes / max(1, measured.refresh_runs),
            "view_write_units_per_view": (writes - refresh_writes) / measured.views,
            "refresh_write_units_per_run": refresh_writes / max(1, measured.refresh_runs),
            "refresh_read_units_per_run": refresh_reads / max(1, measured.refresh_runs),
            "items_read_per_period_refresh": measured.refresh_items_read / max(1, measured.refreshes),
            "aggregator_invocations_per_view": measured.aggregator_invocations / measured.views,
            "billed_events_per_run": measured.billed_events / max(1, measured.refresh_runs),
            "head_bytes": measured.extra["head_bytes"],
            "throttled_requests": measured.throttled_requests,
            "wall_seconds": measured.wall_seconds,
            "mismatched": measured.extra["mismatched"],
        },
        "month": {
            "views": month.views,
            "write_units": sum(v for (_, k, _), v in month.units.items() if k == "write"),
            "read_units": sum(v for (_, k, _), v in month.units.items() if k == "read"),
            "request_invocations": month.request_invocations,
            "aggregator_invocations": month.aggregator_invocations,
            "refresh_runs": month.refresh_runs,
            "billed_events": month.billed_events,
        },
    }


def run_level(
    traffic: TrafficWorkload, level: Level, designs: tuple[str, ...], memory_mb: int, on_step: Callable[[str], None]
) -> dict[str, Any]:
    views = traffic.views(level)
    workload = traffic.boards_workload(level)
    truth = brute_force_tops(workload, views)
    runs_per_month = MONTH_SECONDS / refresh_seconds()
    results: dict[str, Any] = {}
    for name in designs:
        on_step(f"{level.views_per_day:.0e} views/day: {name} ({level.slice_views:,} views in the slice)")
        if name == STRAIGHTFORWARD:
            measured = measure_straightforward(traffic, level, views, truth)
        else:
            trending = TrendingTruth(workload, views)
            measured = measure_shardboard(
                traffic, level, views, library=name == LIBRARY, truth=truth, trending=trending
            )
        month = monthly(measured, level, traffic.assumptions, runs_per_month)
        results[name] = figures(measured, month, bill(month, traffic.assumptions, memory_mb))
    results[REDIS] = redis_bill(level.views_per_day, traffic.assumptions)
    return {"views_per_day": level.views_per_day, "designs": results}


def run_traffic(
    traffic: TrafficWorkload | None = None,
    designs: tuple[str, ...] = DESIGNS,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The scenario as the JSON document ``shardboard bench --scenario traffic --json`` prints (``traffic``: the
    default workload when None)."""
    started = time.perf_counter()
    traffic = traffic or TrafficWorkload()
    step = on_step or (lambda _: None)
    memory_mb = template_memory_mb()
    levels = [run_level(traffic, level, designs, memory_mb, step) for level in traffic.levels]
    per_day = [float(level["views_per_day"]) for level in levels]
    redis = [level["designs"][REDIS]["bill"] for level in levels]
    crossings = {
        name: crossover(per_day, [level["designs"][name]["bill"] for level in levels], redis)
        for name in designs
        if name != STRAIGHTFORWARD
    }
    return {
        "scenario": "traffic",
        "workload": traffic.as_json(),
        "memory_mb": memory_mb,
        "prices": price_list(),
        "levels": levels,
        "crossover_with_redis": crossings,
        "seconds": time.perf_counter() - started,
    }


def price_list() -> dict[str, Any]:
    return {
        "region": prices.PRICE_REGION,
        "read": prices.PRICES_READ,
        "sources": list(prices.PRICE_SOURCES),
        "write_request_unit": prices.WRITE_REQUEST_UNIT_DOLLARS,
        "read_request_unit": prices.READ_REQUEST_UNIT_DOLLARS,
        "wcu_hour": prices.WCU_HOUR_DOLLARS,
        "rcu_hour": prices.RCU_HOUR_DOLLARS,
        "lambda_gb_second": prices.LAMBDA_GB_SECOND_DOLLARS,
        "lambda_request": prices.LAMBDA_REQUEST_DOLLARS,
        "http_api_request": prices.HTTP_API_REQUEST_DOLLARS,
        "eventbridge_event": prices.EVENTBRIDGE_EVENT_DOLLARS,
        "cloudwatch_metric_month": prices.CLOUDWATCH_METRIC_MONTH_DOLLARS,
        "cloudwatch_log_gb": prices.CLOUDWATCH_LOG_GB_DOLLARS,
        "xray_trace": prices.XRAY_TRACE_DOLLARS,
        "elasticache_node_hour": dict(prices.ELASTICACHE_NODE_HOUR_DOLLARS),
    }
