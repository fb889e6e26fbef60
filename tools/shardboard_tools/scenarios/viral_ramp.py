"""Scenario ``viral-ramp``: one item goes viral (100 -> 20,000 views/s) while a long tail ticks along.

Everything runs in virtual time on the capacity emulator: 50 writers (each its own :class:`ShardRouter`, as 50
Lambda containers would be) write every view through the real recording code into the in-memory base table, whose
partition key values are held to 1,000 write units/s; a throttled view waits a jittered back-off and is retried,
so no view is lost. Once per virtual second the stream goes through the real ``apply_batch``; once per review
period the real shrink review runs. The report checks what dynamic sharding promises (docs/dynamic-sharding.md):
growth until throttling stops, at most one change per cooldown window, no throttling once the load stops rising,
exact counts, a long tail that never leaves the default.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from shardboard.adapters.dynamodb import s_attr
from shardboard.adapters.keys import PK, shards_pk
from shardboard.adapters.stream_records import stream_view_records
from shardboard.domain.ports import ShardMetadata
from shardboard.domain.retrying import retry_delay
from shardboard.domain.writing.dynamic_sharding import (
    Growth,
    ShardPolicy,
    ShardRouter,
    readable_shards,
    review_all,
)
from shardboard.domain.writing.recording import attempt_view
from shardboard.services.aggregating import apply_batch
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, Limits, VirtualClock
from shardboard_tools.capacity.stores import in_process
from shardboard_tools.lambda_model.clock import DrivenClock
from shardboard_tools.lambda_model.delivery import StreamDelivery
from shardboard_tools.lambda_model.feeds import MemoryShard
from shardboard_tools.lambda_model.mapping import EventSourceMapping

VIRAL_ITEM = "viral"
# Stream records per aggregator call (the template's StreamBatchSize).
BATCH_SIZE = 1000
# The aggregator's event source mapping: every second's records go at once, in batches of BATCH_SIZE.
RAMP_MAPPING = EventSourceMapping(batch_size=BATCH_SIZE, report_batch_item_failures=True, function_timeout_seconds=900)


@dataclass(frozen=True)
class RampSpec:
    """The load and the sharding policy. ``scaled(k)`` divides every rate and the partition limit by k: the same
    dynamics (shard counts, timings) for k times fewer simulated requests (the test suite's shortened run)."""

    start_views_per_s: float = 100.0
    peak_views_per_s: float = 20_000.0
    # Viral growth is exponential: 100 -> 20,000 in 120 s doubles every ~16 s.
    ramp_seconds: float = 120.0
    hold_seconds: float = 60.0
    # After the peak, traffic falls back to the start rate for this long (long enough to see shrinks).
    calm_seconds: float = 0.0
    writers: int = 50
    default_shards: int = 1
    max_shards: int = 128
    cooldown_seconds: float = 5.0
    growth: Growth = "double"
    tail_items: int = 200
    tail_views_per_s: float = 200.0
    partition_write_units: float = 1000.0
    tick_seconds: float = 0.05
    review_every_seconds: float = 60.0
    shrink_after_seconds: float = 600.0
    seed: int = 7

    def scaled(self, factor: float) -> RampSpec:
        return replace(
            self,
            start_views_per_s=self.start_views_per_s / factor,
            peak_views_per_s=self.peak_views_per_s / factor,
            tail_views_per_s=self.tail_views_per_s / factor,
            partition_write_units=self.partition_write_units / factor,
        )

    @property
    def duration(self) -> float:
        return self.ramp_seconds + self.hold_seconds + self.calm_seconds

    def viral_rate(self, t: float) -> float:
        if t < self.ramp_seconds:
            return float(
                self.start_views_per_s * (self.peak_views_per_s / self.start_views_per_s) ** (t / self.ramp_seconds)
            )
        if t < self.ramp_seconds + self.hold_seconds:
            return self.peak_views_per_s
        return self.start_views_per_s

    def policy(self) -> ShardPolicy:
        return ShardPolicy(
            self.default_shards,
            self.max_shards,
            self.cooldown_seconds,
            growth=self.growth,
            shrink_after_seconds=self.shrink_after_seconds,
            partition_write_units=self.partition_write_units,
        )


@dataclass
class Second:
    """One virtual second of the viral item."""

    t: int
    offered: int = 0
    written: int = 0
    throttled: int = 0
    shards: int = 0


@dataclass
class RampResult:
    peak_views_per_s: int  # the most views of the viral item written in one virtual second
    max_shards: int
    seconds_to_stop_throttling: float  # first viral throttle -> last one
    throttled_after_ramp: int  # viral throttles once the load stopped rising
    increments: int
    cooldown_violations: int  # consecutive changes closer than the cooldown
    exact: bool
    # Details behind the headline figures.
    details: dict[str, Any] = field(default_factory=dict)
    timeline: list[Second] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        headline = {k: v for k, v in asdict(self).items() if k not in ("details", "timeline")}
        return {**headline, "details": self.details}


@dataclass
class _Writer:
    router: ShardRouter
    pending: list[tuple[float, int, str, int]] = field(default_factory=list)  # (ready at, seq, item, attempt)


class ViralRamp:
    """The simulation's state: stores on one emulator, 50 writers, counters, the per-second timeline."""

    def __init__(self, spec: RampSpec) -> None:
        self.spec = spec
        self.clock = VirtualClock()
        self.emulator = CapacityEmulator(self.clock, Limits(partition_write_units=spec.partition_write_units))
        # One all-time board: the scenario is about write shards, not periods.
        self.settings = Settings(write_shards=spec.default_shards, top_n=10, write_concurrency=1, periods=())
        self.stores = in_process(self.emulator, self.settings)
        self.views = self.stores.views
        self.board = self.stores.board
        self.metadata = self.stores.shard_metadata
        self.policy = spec.policy()
        self.rng = random.Random(spec.seed)
        self.writers = [
            _Writer(ShardRouter(self.metadata, self.policy, self.clock, random.Random(spec.seed * 1000 + n)))
            for n in range(spec.writers)
        ]
        self.offered: dict[str, int] = {}
        self.timeline: list[Second] = []
        self.tail = [f"tail-{rank:04d}" for rank in range(1, spec.tail_items + 1)]
        self.tail_weights = list(itertools.accumulate(1 / rank for rank in range(1, spec.tail_items + 1)))
        self.tail_throttles = 0
        self._sequence = itertools.count()
        self._next_writer = itertools.cycle(range(spec.writers))
        arn = self.stores.engine.tables[self.settings.views_table].stream_arn
        self.stream = MemoryShard(self.stores.take_stream, lambda: len(self.stores.stream), arn)
        self.delivery = StreamDelivery(RAMP_MAPPING, self._apply, DrivenClock(self.clock.now), wait=False)

    def run(self, on_second: Callable[[Second], None] | None = None) -> RampResult:
        spec = self.spec
        owed_viral = owed_tail = 0.0
        next_review = spec.review_every_seconds
        ticks = round(spec.duration / spec.tick_seconds)
        tick = 0
        while tick < ticks or self._pending():
            now = tick * spec.tick_seconds
            self.clock.set(now)
            second = self._second(now)
            if tick < ticks:
                owed_viral += spec.viral_rate(now) * spec.tick_seconds
                owed_tail += spec.tail_views_per_s * spec.tick_seconds
                owed_viral = self._offer([VIRAL_ITEM] * int(owed_viral), owed_viral, second)
                tail = self.rng.choices(self.tail, cum_weights=self.tail_weights, k=int(owed_tail))
                owed_tail = self._offer(tail, owed_tail, None)
            for writer in self.writers:
                self._write_ready(writer, now, second)
            if (tick + 1) % round(1 / spec.tick_seconds) == 0:
                self._aggregate()
                second.shards = self._viral_shards()
                if on_second:
                    on_second(second)
            if now >= next_review:
                review_all(self.metadata, self.board.aggregate_views, int(now), self.policy)
                next_review += spec.review_every_seconds
            tick += 1
        self._aggregate()
        return self._result()

    # -- load
    def _offer(self, items: list[str], owed: float, second: Second | None) -> float:
        for item in items:
            writer = self.writers[next(self._next_writer)]
            heapq.heappush(writer.pending, (self.clock.now(), next(self._sequence), item, 0))
            self.offered[item] = self.offered.get(item, 0) + 1
        if second is not None:
            second.offered += len(items)
        return owed - len(items)

    def _write_ready(self, writer: _Writer, now: float, second: Second) -> None:
        while writer.pending and writer.pending[0][0] <= now:
            _, _, item, attempt = heapq.heappop(writer.pending)
            if attempt_view(self.views, writer.router, item) is not None:
                if item == VIRAL_ITEM:
                    second.written += 1
                continue
            if item == VIRAL_ITEM:
                second.throttled += 1
            else:
                self.tail_throttles += 1
            # Retried no sooner than the next tick: a retry inside one tick would be the same instant.
            ready = now + max(self.spec.tick_seconds, retry_delay(attempt, writer.router.rng))
            heapq.heappush(writer.pending, (ready, next(self._sequence), item, attempt + 1))

    def _pending(self) -> bool:
        return any(w.pending for w in self.writers)

    def _second(self, now: float) -> Second:
        t = math.floor(now)
        if not self.timeline or self.timeline[-1].t != t:
            self.timeline.append(Second(t))
        return self.timeline[-1]

    # -- pipeline
    def _aggregate(self) -> None:
        """Deliver the whole stream as Lambda would (batches of BATCH_SIZE, no batching window to wait out)."""
        self.delivery.deliver(self.stream)
        if self.delivery.stats.function_errors:
            raise RuntimeError(f"aggregation failed: {self.delivery.stats.last_error}")

    def _apply(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """The aggregator: the real ``apply_batch`` on the batch's records; a failure is a bug of the scenario."""
        steps = [step for raw in event["Records"] for step in stream_view_records(raw)]
        outcome = apply_batch(self.board, steps, self.settings)
        if outcome.failures:
            raise RuntimeError(f"{outcome.failures}")
        return {"batchItemFailures": []}

    def _viral_shards(self) -> int:
        metadata = self.stores.engine.peek(self.settings.shards_table, {PK: s_attr(shards_pk(VIRAL_ITEM))})
        return int(metadata["number_of_shards"]["N"]) if metadata else self.spec.default_shards

    # -- report
    def _result(self) -> RampResult:
        spec = self.spec
        viral = self.metadata.get(VIRAL_ITEM, consistent=True)
        changes = viral.history_counts() if viral else []
        increments = sum(1 for a, b in itertools.pairwise(changes) if b[1] > a[1])
        violations = sum(1 for a, b in itertools.pairwise(changes) if a[0] > 0 and b[0] - a[0] < spec.cooldown_seconds)
        throttled = [s for s in self.timeline if s.throttled]
        first = throttled[0].t if throttled else 0
        last = throttled[-1].t + 1 if throttled else 0
        peak_at = spec.ramp_seconds
        after_ramp = sum(s.throttled for s in self.timeline if s.t >= peak_at)
        exactness = self._exactness(viral)
        stats = [w.router.stats for w in self.writers]
        reads = sum(s.metadata_reads for s in stats)
        hits = sum(s.cache_hits for s in stats)
        metadata_peak = self.emulator.usage.peaks.get((self.settings.shards_table, "read"))
        return RampResult(
            peak_views_per_s=max((s.written for s in self.timeline), default=0),
            max_shards=viral.max_shards if viral else spec.default_shards,
            seconds_to_stop_throttling=float(last - first),
            throttled_after_ramp=after_ramp,
            increments=increments,
            cooldown_violations=violations,
            exact=all(exactness.values()),
            details={
                "spec": asdict(spec),
                "shard_history": [f"{epoch}:{count}" for epoch, count in changes],
                "first_throttle_at": first,
                "last_throttle_at": last,
                "longest_throttling_episode_s": _longest_run(s.t for s in throttled),
                "viral_throttled_requests": sum(s.throttled for s in self.timeline),
                "tail_throttled_requests": self.tail_throttles,
                "tail_max_shards": max(self._tail_shards().values(), default=spec.default_shards),
                "views_offered": sum(self.offered.values()),
                "lost_races": sum(s.lost_races for s in stats),
                "metadata_reads": reads,
                "metadata_cache_hit_ratio": round(hits / (hits + reads), 5) if hits + reads else None,
                "metadata_peak_read_units_per_s": metadata_peak.units if metadata_peak else 0.0,
                "final_shards": viral.number_of_shards if viral else spec.default_shards,
                "exactness": exactness,
            },
            timeline=self.timeline,
        )

    def _tail_shards(self) -> dict[str, int]:
        return {item: readable_shards(self.metadata.get(item), self.spec.default_shards) for item in self.tail}

    def _exactness(self, viral: ShardMetadata | None) -> dict[str, bool]:
        """Every offered view is in the base table, the aggregates match it, readers of all shards see them all."""
        truth = self.views.scan_totals()
        aggregates = {item: views for item, (views, _) in self.board.scan_aggregates().items()}
        readable = readable_shards(viral, self.spec.default_shards)
        return {
            "base_equals_offered": truth == self.offered,
            "aggregates_equal_base": aggregates == truth,
            "viral_item_total_equals_offered": self.views.item_total(VIRAL_ITEM, readable)
            == self.offered.get(VIRAL_ITEM, 0),
        }


def _longest_run(seconds: Any) -> int:
    """Longest run of consecutive seconds."""
    longest = run = 0
    previous: int | None = None
    for t in seconds:
        run = run + 1 if previous is not None and t == previous + 1 else 1
        longest, previous = max(longest, run), t
    return longest


def run_viral_ramp(spec: RampSpec | None = None, on_second: Callable[[Second], None] | None = None) -> RampResult:
    return ViralRamp(spec or RampSpec()).run(on_second)
