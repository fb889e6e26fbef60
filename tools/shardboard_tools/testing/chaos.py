"""The chaos run: a realistic workload with a seeded random schedule of every fault, then the exactness checks.

Rounds of traffic (Zipf-skewed views plus one viral item, written by threads) flow while the stream runner delivers
them to a :class:`FaultyFunction` whose DynamoDB client throttles, times out, loses responses, resends writes and
races, and whose process is killed before, between and after its writes. Some rounds also restart the runner from its
checkpoints, run a second runner on the same stream, or lose aggregates and rebuild them while traffic flows. Then the
faults stop, the stream drains, the failure destination is redriven, a snapshot is taken and everything is checked:
every aggregate equals the sum of its base shards, nothing is negative or missing, the index holds every contender and
the snapshot is the exact top N. The schedule follows from the seed; thread timing does not, so a seed replays the
same faults, not the same interleaving.

Views also name 0-2 category boards (one much busier than the others) and carry times: mostly now, some on either side
of the current day's, ISO week's or month's start, and some late (days or weeks old, in that old time's anchor
bucket). So batches roll aggregates into newer periods, archive past entries and move late views by transaction
while the faults hit those writes too; at the end every board and period is verified, and every snapshot.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shardboard.adapters.dynamodb import dynamodb_client
from shardboard.adapters.keys import PK
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.periods import ALL, DAY, MONTH, WEEK, start_of
from shardboard.domain.ports import PeriodKey, Throttled
from shardboard.domain.writing.recording import Where, record_views
from shardboard.services.takedowns import NothingToTakeDown, delete, hide, unhide
from shardboard_tools.lambda_model.delivery import RunStats
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.local.stream_runner import StreamRunner, read_dead_letters
from shardboard_tools.operations.recovery import RebuildProgress, RedriveResult, rebuild, redrive
from shardboard_tools.operations.refill import Refill, refill
from shardboard_tools.operations.verification import Report, verify
from shardboard_tools.testing.faults import (
    ClientFaults,
    Container,
    FaultRates,
    FaultyFunction,
    FunctionFaults,
    KillSwitch,
    Totals,
)

# The template parameters of a chaos board: small enough that a run takes well under a minute on DynamoDB Local,
# large enough that batches hold many items and the sparse index matters. Two retries keep poisoned batches short.
CHAOS_PARAMETERS = {
    "TopN": "10",
    "WriteShards": "4",
    "BoardShards": "3",
    "StreamBatchSize": "25",
    "StreamBatchingWindowSeconds": "0",
    "StreamMaximumRetryAttempts": "2",
    "CategoryTopN": "5",
    # Every kind of period: calendar ones, a rolling window (sums of hours) and trending (two epochs summed).
    "Periods": "day,week,month,24h,trending",
}
WRITER_THREADS = 8
# The category boards views may name, the first much busier than the others.
CATEGORY_BOARDS = ("news", "sports", "music", "games", "food")
BOARD_WEIGHTS = (8, 2, 1, 1, 1)
# Shares of the views' times: now, near the start of the current day, week or month (either side), late.
NOW_SHARE, BOUNDARY_SHARE = 0.7, 0.15
BOUNDARY_HOURS = 6
LATE_DAYS = (1, 28)


@dataclass(frozen=True)
class ChaosPlan:
    seed: int
    items: int = 60
    views: int = 3000
    rounds: int = 6
    # The aggregator's tumbling window in seconds (AggregationWindowSeconds); 0 = the template's default, per batch.
    aggregation_window: int = 0
    boards: int = len(CATEGORY_BOARDS)  # category boards views may name (0: the global board only)
    # Chance that a round also hides items of the top (and unhides one hidden before) while its traffic flows.
    takedown_chance: float = 0.5
    delete_chance: float = 0.3  # ... and that such a round also deletes an item of the top


@dataclass
class ChaosReport:
    plan: ChaosPlan
    views_written: int = 0
    views_refused: int = 0  # writes that failed at the writer (not recorded: the base table is the truth)
    faults: Counter[str] = field(default_factory=Counter)
    totals: Totals = field(default_factory=Totals)
    runner: RunStats = field(default_factory=RunStats)
    runner_restarts: int = 0
    rebuilds: list[RebuildProgress] = field(default_factory=list)
    redriven: list[RedriveResult] = field(default_factory=list)
    negative: list[str] = field(default_factory=list)
    verified: Report | None = None
    times: Counter[str] = field(default_factory=Counter)  # views written by time: now, boundary, late
    on_boards: Counter[str] = field(default_factory=Counter)  # views written naming each category board
    takedowns: Counter[str] = field(default_factory=Counter)  # hides and unhides done while traffic flowed
    refilled: list[Refill] = field(default_factory=list)  # periods `refill` repaired at the end (takedowns past R)

    @property
    def exact(self) -> bool:
        report = self.verified
        return bool(
            report and report.exact and report.snapshot_exact and not report.snapshots_inexact and not self.negative
        )


def pick_boards(rng: random.Random, boards: int) -> tuple[str, ...]:
    """0, 1 or 2 category boards of the first ``boards``, skewed to the first."""
    names, weights = CATEGORY_BOARDS[:boards], BOARD_WEIGHTS[:boards]
    if not names:
        return ()
    wanted = min(len(names), rng.choices((0, 1, 2), (0.35, 0.45, 0.2))[0])
    chosen: set[str] = set()
    while len(chosen) < wanted:
        chosen.add(rng.choices(names, weights)[0])
    return tuple(sorted(chosen))


def pick_time(rng: random.Random, now: datetime) -> tuple[str, datetime]:
    """A view's time: now; a few hours either side of the start of today, this ISO week or this month (a roll
    across that boundary); or late, days to weeks ago (a late move, or a roll when the item is new)."""
    roll = rng.random()
    if roll < NOW_SHARE:
        return "now", now
    if roll < NOW_SHARE + BOUNDARY_SHARE:
        boundary = start_of(rng.choice((DAY, WEEK, MONTH)), now)
        moment = boundary + timedelta(hours=rng.uniform(-BOUNDARY_HOURS, BOUNDARY_HOURS))
        return "boundary", min(moment, now)
    return "late", now - timedelta(days=rng.uniform(*LATE_DAYS))


def round_rates(rng: random.Random, first: bool) -> tuple[FaultRates, FunctionFaults]:
    """Every fault in every round, each at a random rate; the first round kills between two writes often."""
    client = FaultRates(
        throttle_retried=rng.uniform(0, 0.04),
        throttle_surfaced=rng.uniform(0, 0.05),
        timeout_retried=rng.uniform(0, 0.03),
        lost_response=rng.uniform(0, 0.06),
        resent=rng.uniform(0, 0.06),
        race=rng.uniform(0, 0.1),
        transaction_refused=rng.uniform(0, 0.1),
    )
    function = FunctionFaults(
        kill_before_writes=rng.uniform(0, 0.1),
        kill_between_writes=0.5 if first else rng.uniform(0, 0.25),
        kill_after_writes=rng.uniform(0, 0.1),
        duplicate=rng.uniform(0, 0.15),
        late_duplicate=rng.uniform(0, 0.15),
        resplit=rng.uniform(0, 0.2),
        poison=rng.uniform(0, 0.04),
        parallel=rng.uniform(0, 0.2),
    )
    return client, function


class Chaos:
    """One chaos run against the tables of ``rt`` (created already), with state in ``state_dir``."""

    def __init__(self, rt: Runtime, plan: ChaosPlan, state_dir: Path, say: Callable[[str], None]) -> None:
        from shardboard.handlers import wiring

        self.rt, self.plan, self.state_dir, self.say = rt, plan, state_dir, say
        self.rng = random.Random(plan.seed)
        # Takedowns draw from their own stream, so a seed's fault schedule is the one it had before they existed.
        self.takedown_rng = random.Random(f"takedowns-{plan.seed}")
        self.report = ChaosReport(plan)
        rt.export_to_handlers()
        self.client = wiring.client()
        self.client_faults = ClientFaults(
            self.client,
            FaultRates(),
            random.Random(self.rng.random()),
            table=rt.settings.board_table,
            competitor=dynamodb_client(),
        ).install()
        self.stream_faults = ClientFaults(
            rt.streams, FaultRates(), random.Random(self.rng.random()), operations=frozenset({"GetRecords"})
        ).install()
        self.kill = KillSwitch(self.client)
        self.function = FaultyFunction(Container.main(), FunctionFaults(), random.Random(self.rng.random()), self.kill)
        self.mapping = EventSourceMapping.from_template(rt.template)
        if plan.aggregation_window:
            self.mapping = replace(self.mapping, tumbling_window_seconds=plan.aggregation_window)
        self.runner = self._new_runner()
        names = [f"item-{k:03d}" for k in range(plan.items)]
        self.names, self.weights = [*names, "viral"], [*(1 / (k + 1) for k in range(plan.items)), 2.0]

    def _new_runner(self, state: bool = True, handler: Any = None) -> StreamRunner:
        rt = self.rt
        return StreamRunner(
            rt.dynamodb,
            rt.streams,
            rt.settings.views_table,
            handler or self.function,
            mapping=self.mapping,
            state_dir=self.state_dir if state else None,
        )

    # -- traffic
    def _write(self, views: ViewStore, count: int, rng: random.Random) -> None:
        settings, now = self.rt.settings, self.rt.clock()
        picks = rng.choices(self.names, self.weights, k=count)
        times = [pick_time(rng, now) for _ in picks]
        wheres = [Where.of(settings.anchor, pick_boards(rng, self.plan.boards), at=at) for _, at in times]
        seeds = [rng.random() for _ in picks]

        def add(item: str, where: Where, seed: float) -> bool:
            try:
                record_views(views, item, 1, settings.write_shards, random.Random(seed), where=where)
            except (Throttled, ClientError, BotoCoreError):
                return False
            return True

        with ThreadPoolExecutor(WRITER_THREADS) as pool:
            landed = list(pool.map(add, picks, wheres, seeds))
        self.report.views_written += sum(landed)
        self.report.views_refused += len(landed) - sum(landed)
        for ok, (label, _), where in zip(landed, times, wheres, strict=True):
            if ok:
                self.report.times[label] += 1
                self.report.on_boards.update(where.boards)

    def _deliver_until(self, done: threading.Event) -> None:
        """Run the runner until ``done`` and the stream is caught up; a crashed runner restarts from its checkpoints."""
        while True:
            finished = done.is_set()
            try:
                delivered = self.runner.run_once()
            except (ClientError, BotoCoreError) as error:  # the runner process died on a stream read
                self.say(f"  runner crashed ({type(error).__name__}); restarting from its checkpoints")
                self._restart_runner()
                continue
            if finished and delivered == 0:
                return

    def _restart_runner(self) -> None:
        self._add_stats(self.runner.stats)
        self.report.runner_restarts += 1
        self.runner = self._new_runner()

    def _add_stats(self, stats: RunStats) -> None:
        total = self.report.runner
        for name in ("batches", "records", "retries", "invocations", "function_errors", "bisections"):
            setattr(total, name, getattr(total, name) + getattr(stats, name))
        total.dead_letter_batches += stats.dead_letter_batches
        total.dead_letter_records += stats.dead_letter_records

    # -- one round
    def run_round(self, number: int) -> None:
        rng = random.Random(self.rng.random())
        client_rates, function_faults = round_rates(rng, first=number == 1)
        self.client_faults.rates = client_rates
        self.stream_faults.rates = FaultRates(throttle_surfaced=rng.choice([0.0, 0.02]), timeout_retried=0.02)
        self.function.faults = function_faults
        episodes = [
            name
            for name, chance in (("restart", 0.4), ("second runner", 0.3), ("wipe + rebuild", 0.25))
            if rng.random() < chance
        ]
        self.say(f"round {number}: {', '.join(episodes) or 'faults only'}")
        if "restart" in episodes:
            self._restart_runner()
        writer = dynamodb_client()
        writer_faults = ClientFaults(
            writer, FaultRates(throttle_retried=0.01, timeout_retried=0.01), random.Random(rng.random())
        ).install()
        views = ViewStore(writer, self.rt.settings.views_table, clock=self.rt.clock)
        done = threading.Event()
        side: list[threading.Thread] = []

        def traffic() -> None:
            try:
                self._write(views, self.plan.views // self.plan.rounds, random.Random(rng.random()))
            finally:
                done.set()

        side.append(threading.Thread(target=traffic))
        if "second runner" in episodes:  # a second runner from TRIM_HORIZON, its own container and checkpoints
            second = self._new_runner(state=False, handler=Container.fresh().handler)
            side.append(threading.Thread(target=self._second_runner, args=(second,)))
        if "wipe + rebuild" in episodes:
            side.append(threading.Thread(target=self._wipe_and_rebuild, args=(rng,)))
        if self.takedown_rng.random() < self.plan.takedown_chance:
            side.append(threading.Thread(target=self._takedowns, args=(random.Random(self.takedown_rng.random()),)))
        for thread in side:
            thread.start()
        self._deliver_until(done)
        for thread in side:
            thread.join()
        writer_faults.uninstall()
        self._snapshot()

    def _second_runner(self, runner: StreamRunner) -> None:
        """The mistaken second runner: its stream reads see the injected faults too, and a crash just ends it (the
        main runner is restarted after a crash; this one is not needed for anything)."""
        try:
            runner.drain()
        except (BotoCoreError, ClientError) as error:
            self.say(f"  second runner crashed ({type(error).__name__}); left stopped")

    def _wipe_and_rebuild(self, rng: random.Random) -> None:
        """Lose half the (board, item) pairs' board-table items (aggregate and past entries) at one instant, then
        rebuild them while the writers and the aggregator go on."""
        board = self.rt.board
        with self.function.gate.closed():
            rows: dict[tuple[str, str], list[str]] = {}
            for row in board.scan_counts():
                if "board" in row:
                    rows.setdefault((row["board"]["S"], row["item_id"]["S"]), []).append(row[PK]["S"])
            lost = rng.sample(sorted(rows), k=len(rows) // 2)
            for pair in lost:
                for pk in rows[pair]:
                    board.client.delete_item(TableName=board.table, Key={PK: {"S": pk}})
        self.say(f"  lost {len(lost)} aggregates with their past entries; rebuilding while traffic flows")
        clean = self.rt.board  # the rebuild's own process: the aggregator's faults are not its faults
        progress = RebuildProgress.fresh(4)
        self.report.rebuilds.append(
            rebuild(self.rt.views, clean, self.rt.settings, progress, denied=self.rt.items.denied)
        )

    def _takedowns(self, rng: random.Random) -> None:
        """An operator's takedowns while views flow and the aggregator fails: hide one or two items of the global
        board's current top, unhide one hidden earlier half the time, and now and then delete one (the admin
        function's own clients)."""
        rt = self.rt
        time.sleep(rng.uniform(0.0, 0.5))  # into the round's traffic
        hidden = sorted(rt.items.hidden())
        if hidden and rng.random() < 0.5:
            unhide(rt.items, rt.board, rt.settings, rng.choice(hidden), by="chaos", reason="restored", at=rt.clock())
            self.report.takedowns["unhide"] += 1
        head = rt.board.get_snapshot(PeriodKey(rt.settings.board, ALL, ALL))
        pool = [item for item, _ in (head.items if head else ()) if item not in hidden] or self.names
        for item in rng.sample(pool, k=min(len(pool), rng.choice((1, 2)))):
            try:
                hide(rt.items, rt.board, rt.settings, item, by="chaos", reason="takedown", at=rt.clock())
            except NothingToTakeDown:  # a name no view has reached yet
                continue
            self.report.takedowns["hide"] += 1
        # A delete races the faulty aggregator, rebuilds and redrives too: erased, later views refused.
        if rng.random() < self.plan.delete_chance:
            try:
                delete(rt.items, rt.board, rt.settings, rng.choice(pool), by="chaos", reason="gdpr", at=rt.clock())
            except NothingToTakeDown:
                pass
            else:
                self.report.takedowns["delete"] += 1
        self.say(f"  takedowns: {dict(self.report.takedowns)} so far")

    def _snapshot(self) -> None:
        from shardboard.handlers import snapshot
        from shardboard_tools.local.scheduler import scheduled_event

        try:
            self.rt.invoke(snapshot.handler, scheduled_event(self.rt.clock()))
        except (ClientError, BotoCoreError, Exception) as error:  # the next schedule refreshes it
            self.report.faults["snapshot_failed"] += 1
            self.say(f"  snapshot failed ({type(error).__name__}); the next schedule retries")

    # -- the whole run
    def run(self) -> ChaosReport:
        for number in range(1, self.plan.rounds + 1):
            self.run_round(number)
        self.say("faults off: draining the stream")
        for faults in (self.client_faults, self.stream_faults):
            faults.uninstall()
        self.kill.uninstall()
        self.function.faults = FunctionFaults()
        self.function.poisoned.clear()
        self._restart_runner()
        self.runner.drain()
        self._add_stats(self.runner.stats)
        letters = read_dead_letters(self.state_dir)
        if letters:
            self.say(f"redriving {len(letters)} failed batch(es) from the failure destination")
            rt = self.rt
            self.report.redriven = redrive(rt.views, rt.board, rt.streams, rt.settings, letters, denied=rt.items.denied)
        self._snapshot()
        # What an operator does on UnprovenSnapshotsAlarm (what the job's own repair left); a no-op otherwise.
        rt = self.rt
        self.report.refilled = refill(rt.board, rt.settings, rt.items.hidden(), rt.items.denied(), catalog=rt.items)
        if self.report.refilled:
            self.say(f"refill repaired {len(self.report.refilled)} period(s) past their takedown spares")
        self._check()
        return self.report

    def _check(self) -> None:
        rt, report = self.rt, self.report
        report.faults.update(self.client_faults.injected)
        report.faults.update({f"{k} ({op})": v for (op, k), v in self.client_faults.by_operation.items()})
        report.faults.update({f"stream_{k}": v for k, v in self.stream_faults.injected.items()})
        report.faults.update(self.function.injected)
        report.totals = self.function.totals
        report.verified = verify(rt.views, rt.board, rt.settings, rt.items.hidden(), rt.items.denied())
        for row in rt.board.scan_counts():
            numbers = [int(value["N"]) for value in row.values() if "N" in value]
            if any(number < 0 for number in numbers):
                report.negative.append(row["item_id"]["S"])


def chaos_runtime(stack: str, overrides: dict[str, str] | None = None) -> Runtime:
    """A Runtime with the chaos board's parameters and its own tables (``stack`` names them)."""
    from shardboard_tools.template import create_tables

    rt = Runtime.from_template(None, {**CHAOS_PARAMETERS, **(overrides or {})}, stack)
    create_tables(rt.dynamodb, rt.template)
    return rt


def shortened(plan: ChaosPlan) -> ChaosPlan:
    """The version `make test` runs: same faults, a tenth of the traffic."""
    return replace(plan, items=30, views=max(300, plan.views // 10), rounds=3)
