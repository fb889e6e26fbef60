"""``shardboard demo``: the whole pipeline on a local engine under load, then a report of what it cost and proved.

engine (DynamoDB Local) -> tables from template.yaml -> load generator -> stream runner (event source mapping) ->
aggregator -> scheduler -> snapshot handler -> live view / web page (read API) -> drain, final snapshot, verify.
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from shardboard.domain.periods import ALL, DAY, kind_of
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.snapshot import leaderboard_json, period_at
from shardboard.settings import Settings, schedule_seconds
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.events import EVENTS_FILE, FileEvents, MemoryEvents
from shardboard_tools.local.live import FreshnessTracker, LiveTicker, Panel, StreamLag, Vitals, render
from shardboard_tools.local.loadgen import LoadResult, LoadSpec, generate
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.local.scheduler import Scheduler
from shardboard_tools.local.stream_runner import StreamRunner
from shardboard_tools.local.webapp import LeaderboardServer, LocalApiServer
from shardboard_tools.operations.verification import verify
from shardboard_tools.template import create_tables


@dataclass(frozen=True)
class DemoOptions:
    load: LoadSpec
    refresh_seconds: float = 2.0  # the template's rate(1 minute) would leave a one-minute demo with one refresh
    live: bool = True
    web: bool = True
    web_port: int = 0
    rows: int = 10
    state_dir: Path | None = None
    # moto's server answers ReturnConsumedCapacity with figures DynamoDB would not give (0.5 write units for an
    # ADD on a small item); on it the report shows "not measured" rather than a wrong number.
    measures_capacity: bool = True


@dataclass
class DemoReport:
    views: int
    views_per_second: float
    write_units_per_view: float | None  # None: the engine does not measure consumed capacity (moto)
    aggregate_writes: int
    aggregator_invocations: int
    records_delivered: int
    refreshes: int
    items_read_per_refresh: float  # the global all-time board's, per refresh
    refresh_floor: int  # N + R + S: the fewest items an exact head gather (top N and R spares) can read
    freshness_p50_seconds: float | None
    freshness_p99_seconds: float | None
    verify_exact: bool
    snapshot_exact: bool | None
    differences: int
    dead_letter_batches: int
    load_errors: int
    seconds: float
    boards: int = 0  # boards verified (the global one and the categories)
    periods: int = 0  # (board, period) leaderboards verified
    snapshots_checked: int = 0
    snapshots_inexact: int = 0
    # The global board and the busiest category, this period and all time: title, board, period, top items.
    leaderboards: list[dict[str, Any]] = field(default_factory=list)
    # Board events the snapshot job published (entered, left, closed: docs/events.md) and the file holding them.
    events: int = 0
    events_file: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class _AggregatorCounter:
    """The real aggregator handler, counting the aggregate writes it reports per batch."""

    def __init__(self) -> None:
        from shardboard.handlers import aggregate

        self.module = aggregate
        self.writes = 0
        self.invocations = 0

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        response = self.module.handler(event, context)
        applied = self.module.aggregator.last
        self.writes += applied.outcome.aggregate_writes if applied else 0
        self.invocations += 1
        return dict(response)


def run_demo(rt: Runtime, options: DemoOptions, console: Console) -> DemoReport:
    """Run the pipeline against the endpoint the environment points at (see shardboard_tools.local.engine)."""
    from shardboard.handlers import read_api, shard_review, snapshot

    started = time.monotonic()
    create_tables(rt.dynamodb, rt.template)
    events_file = options.state_dir / EVENTS_FILE if options.state_dir else None
    events = FileEvents(events_file) if events_file else MemoryEvents()
    rt.export_to_handlers(events)
    settings = rt.settings
    tracker = FreshnessTracker(rt.views.scan_totals())
    aggregator = _AggregatorCounter()
    runner = StreamRunner(
        rt.dynamodb,
        rt.streams,
        settings.views_table,
        aggregator,
        mapping=EventSourceMapping.from_template(rt.template),
        state_dir=options.state_dir,
    )
    items_read: list[int] = []

    def refreshed(summary: dict[str, Any], visible_at: float) -> None:
        # The global all-time board's own reads, the figure N + R + S bounds (a run sums every period it refreshed).
        items_read.extend(
            int(period["items_read"])
            for period in summary["refreshed"]
            if (period["board"], period["kind"]) == (settings.board, ALL)
        )
        stored = rt.board.get_snapshot(PeriodKey(settings.board, ALL, ALL), consistent=True)
        if stored:
            tracker.snapshot(stored.items, visible_at)

    scheduler = Scheduler(snapshot.handler, options.refresh_seconds, on_result=refreshed, clock=rt.clock)
    load = LoadResult()
    with ExitStack() as stack:
        follower = threading.Thread(target=runner.run_forever, name="stream-runner", daemon=True)
        follower.start()
        stack.callback(follower.join)
        stack.callback(runner.stop)
        scheduler.start()
        stack.callback(scheduler.stop)
        # The shrink review runs on its own schedule, as its own function does in the stack.
        review = Scheduler(
            shard_review.handler, _review_seconds(rt), function_name="ShardReviewFunction", clock=rt.clock
        )
        review.start()
        stack.callback(review.stop)
        web = (
            LeaderboardServer(read_api.handler, options.web_port, options.refresh_seconds, rt.template).start()
            if options.web
            else None
        )
        if web:
            stack.callback(web.stop)
            console.print(f"leaderboard page: {web.url}")
        load = _load(rt, options, console, tracker=tracker, runner=runner, scheduler=scheduler, web=web)
    console.print(f"load done: {load.views:,} views in {load.seconds:.1f}s; draining the stream…")
    runner.drain()
    scheduler.run_now()  # one refresh after the drain: the snapshot now counts every view
    report = verify(rt.views, rt.board, settings)
    final = panels(rt, showcase(settings, options.load.busiest_category))
    return DemoReport(
        views=load.views,
        views_per_second=load.views_per_second,
        write_units_per_view=load.write_units_per_view if options.measures_capacity else None,
        aggregate_writes=aggregator.writes,
        aggregator_invocations=aggregator.invocations,
        records_delivered=runner.stats.records,
        refreshes=scheduler.runs,
        items_read_per_refresh=sum(items_read) / len(items_read) if items_read else 0.0,
        refresh_floor=settings.policy.keep(settings.board).gather_depth + settings.board_shards,
        freshness_p50_seconds=tracker.percentile(0.50),
        freshness_p99_seconds=tracker.percentile(0.99),
        verify_exact=report.exact,
        snapshot_exact=report.snapshot_exact,
        differences=len(report.differences),
        dead_letter_batches=runner.stats.dead_letter_batches,
        load_errors=load.errors,
        seconds=time.monotonic() - started,
        boards=report.boards,
        periods=report.periods,
        snapshots_checked=report.snapshots_checked,
        snapshots_inexact=len(report.snapshots_inexact),
        leaderboards=[{"title": panel.title, **(panel.board or {"items": []})} for panel in final],
        events=events.count if isinstance(events, FileEvents) else len(events.events),
        events_file=str(events_file) if events_file else None,
    )


@dataclass(frozen=True)
class Shown:
    """One leaderboard the demo shows: a board and a period kind (a calendar kind means its current period)."""

    title: str
    board: str
    kind: str

    def period(self, now: datetime) -> PeriodKey:
        return period_at(self.board, self.kind, now)


def showcase(settings: Settings, category: str | None) -> list[Shown]:
    """The global board and the busiest category board, each today (or the finest configured period) and all time:
    one board per row, the period and all time side by side."""
    kind = DAY if DAY in settings.periods else settings.anchor
    boards = [(settings.board, settings.board)]
    if category:
        boards.append((category, f"{category} (busiest)"))
    shown = []
    for board, label in boards:
        if kind_of(kind).pick(all_time=False, period=True):
            shown.append(Shown(f"{label} · { {DAY: 'today'}.get(kind, f'this {kind}') }", board, kind))
        shown.append(Shown(f"{label} · all time", board, ALL))
    return shown


def panels(rt: Runtime, shown: list[Shown]) -> list[Panel]:
    """The current snapshot of each leaderboard shown (a current period is resolved at the time of the call)."""
    found = []
    for one in shown:
        period = one.period(rt.clock())
        stored = rt.board.get_snapshot(period)
        title = kind_of(one.kind).pick(all_time=one.title, period=f"{one.title} {period.bucket}")
        found.append(Panel(title, leaderboard_json(stored) if stored else None))
    return found


def _load(
    rt: Runtime,
    options: DemoOptions,
    console: Console,
    *,
    tracker: FreshnessTracker,
    runner: StreamRunner,
    scheduler: Scheduler,
    web: LocalApiServer | None,
) -> LoadResult:
    """Generate the load, with the live view refreshing beside it when asked for."""
    spec, write_shards = options.load, rt.settings.write_shards
    if not options.live:
        return generate(
            rt.views,
            spec,
            write_shards,
            on_view=tracker.view,
            show_progress=True,
            anchor=rt.settings.anchor,
            clock=rt.clock,
        )
    progress = {"views": 0}
    lag = StreamLag()
    started = time.monotonic()

    def counted(item: str, landed: float) -> None:
        tracker.view(item, landed)
        lag.view(landed)
        progress["views"] += 1  # one writer per increment under the GIL; a display figure, not a measurement

    shown = showcase(rt.settings, spec.busiest_category)

    def frame() -> Any:
        vitals = Vitals(
            views=progress["views"],
            elapsed=time.monotonic() - started,
            target_seconds=spec.duration_seconds,
            records_delivered=runner.stats.records,
            stream_lag=lag.seconds(runner.stats.records, time.time()),
            freshness_p50=tracker.percentile(0.5),
            refreshes=scheduler.runs,
            web_url=web.url if web else None,
        )
        return render(panels(rt, shown), vitals, options.rows)

    with Live(frame(), console=console, refresh_per_second=4, transient=False) as live:
        with LiveTicker(lambda: live.update(frame())):
            result = generate(
                rt.views,
                spec,
                write_shards,
                on_view=counted,
                show_progress=False,
                anchor=rt.settings.anchor,
                clock=rt.clock,
            )
        live.update(frame())
    return result


def _review_seconds(rt: Runtime) -> float:
    """The template's ShardReviewSchedule interval, as the deployed schedule fires it."""
    return float(schedule_seconds(rt.template.parameters.get("ShardReviewSchedule", "rate(1 minute)")))
