"""The honest-counts scenario's retried writes: write units per view with and without retry safety, when a share of
writes lose their response after they landed (docs/honest-counts.md, "Retried writes").

The benchmark's Zipf views (no viewer), offered to four fresh in-memory base tables priced by the capacity emulator,
each write landing and then, at ``lost_response_share``, raising :class:`~shardboard_tools.testing.faults.ResponseLost`
(``LostResponses``), as a timeout after DynamoDB applied the write looks to its caller:

* ``plain``: ``POST /views`` without a key (``record_views``); a client that got no answer posts again;
* ``idempotency-key``: the same with a fresh ``Idempotency-Key`` per view (``record_keyed_view``), retried with it;
* ``recorder``: the library's ``Recorder`` with ``retry_safe=False`` (plain ADDs), flushed every ``flush_interval``
  seconds of virtual time; a write whose response was lost is written again by the next flush;
* ``recorder-retry-safe``: the default ``Recorder``: numbered conditional writes, retried unchanged.

"Exact" compares the base table, item by item, with the views offered.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from shardboard.client import Recorder, Stores
from shardboard.domain.writing.idempotency import KeyedRequest, fingerprint
from shardboard.domain.writing.recording import record_keyed_view, record_views
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.lost_responses import LostResponses, ResponseLost
from shardboard_tools.capacity.stores import in_process

PLAIN, KEYED, RECORDER, RECORDER_SAFE = "plain", "idempotency-key", "recorder", "recorder-retry-safe"
RETRY_RUNS = (PLAIN, KEYED, RECORDER, RECORDER_SAFE)
# A client gives up after this many tries (never reached at the benchmark's loss rates).
MAX_TRIES = 50


class RetryRun:
    """One run's fresh base table behind lost responses, and what its requests cost: first attempts and retries."""

    def __init__(self, name: str, loss: float, seed: int, write_shards: int) -> None:
        self.name, self.write_shards = name, write_shards
        self.clock = VirtualClock()
        self.stores = in_process(CapacityEmulator(self.clock), periods=())
        self.views = self.stores.views
        self.lossy = LostResponses(self.views, loss, random.Random(seed))
        self.rng = random.Random(seed)
        self.first_units = 0.0  # the requests as sent once
        self.retry_units = 0.0  # what their retries cost on top
        self.requests = 0
        self.retries = 0
        self.replays = 0  # retries answered from their key's marker: recognised as applied

    def units(self) -> float:
        return float(self.stores.emulator.usage.units("write"))

    def post(self, item: str, at: float) -> None:
        """A client posting one view until it hears an answer (with a key: the same key every time)."""
        keyed = None
        if self.name == KEYED:
            key = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            keyed = KeyedRequest.of(key, fingerprint(item, 1, (), None), at=at)
        self.requests += 1
        for attempt in range(MAX_TRIES):
            before = self.units()
            try:
                if keyed is None:
                    record_views(self.lossy, item, 1, self.write_shards, self.rng)
                else:
                    recorded = record_keyed_view(self.lossy, item, 1, self.write_shards, keyed, rng=self.rng)
                    self.replays += recorded.replayed
                return
            except ResponseLost:
                continue
            finally:
                spent = self.units() - before
                if attempt:
                    self.retry_units += spent
                    self.retries += 1
                else:
                    self.first_units += spent
        raise RuntimeError(f"no answer after {MAX_TRIES} tries")


def run_retries(
    views: list[tuple[float, str]],
    *,
    loss: float,
    flush_interval: float,
    write_shards: int,
    seed: int,
    start_epoch: float,
    on_progress: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """Every run's figures: ``views`` are (epoch seconds, item) in arrival order."""
    offered = Counter(item for _, item in views)
    runs: dict[str, Any] = {}
    for name in RETRY_RUNS:
        run = RetryRun(name, loss, seed, write_shards)
        if name in (PLAIN, KEYED):
            for position, (at, item) in enumerate(views):
                run.clock.set(at - start_epoch)
                run.post(item, at)
                run.stores.stream.clear()  # nothing reads it here
                if on_progress and position % 10_000 == 0:
                    on_progress(name, position)
            stats: dict[str, Any] = {
                "requests": run.requests,
                "client_retries": run.retries,
                "replayed_writes": run.replays,
            }
        else:
            stats = _record(
                run,
                views,
                retry_safe=name == RECORDER_SAFE,
                flush_interval=flush_interval,
                start_epoch=start_epoch,
                on_progress=on_progress,
            )
        counted = Counter(run.views.scan_totals())
        total = len(views)
        units = run.first_units + run.retry_units if name in (PLAIN, KEYED) else stats.pop("units")
        runs[name] = {
            "views": total,
            "counted_views": sum(counted.values()),
            "over_counted_views": sum((counted - offered).values()),
            "lost_responses": sum(run.lossy.injected.values()),
            "base_write_units": units,
            "base_write_units_per_view": units / total,
            "units_per_request": (run.first_units / run.requests) if run.requests else None,
            "exact_base": counted == offered,
            **stats,
        }
    return {"lost_response_share": loss, "flush_interval": flush_interval, "runs": runs}


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """Each flush with a lost response logs a warning: expected here, and stdout carries ``--json``."""
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _record(
    run: RetryRun,
    views: list[tuple[float, str]],
    *,
    retry_safe: bool,
    flush_interval: float,
    start_epoch: float,
    on_progress: Callable[[str, int], None] | None,
) -> dict[str, Any]:
    """The views through one Recorder flushed every ``flush_interval`` of virtual time, then drained without faults."""
    now = [datetime.fromtimestamp(start_epoch, UTC)]
    config = Settings.for_stack("bench", write_shards=run.write_shards)
    recorder = Recorder(
        stores=Stores(run.lossy),
        settings=config,
        flush_interval=None,
        max_pending=10_000_000,  # no size-triggered flush: a flush at a wall-clock moment would break virtual time
        clock=lambda: now[0],
        retry_safe=retry_safe,
        workers=4,
    )
    with _quiet(logging.getLogger("shardboard.client")):
        next_flush = start_epoch + flush_interval
        for position, (at, item) in enumerate(views):
            while at >= next_flush:
                run.clock.set(next_flush - start_epoch)
                recorder.flush()
                run.stores.stream.clear()
                next_flush += flush_interval
            now[0] = datetime.fromtimestamp(at, UTC)
            recorder.record(item)
            if on_progress and position % 10_000 == 0:
                on_progress(run.name, position)
        recorder.flush()
        run.lossy.rate = 0.0
        recorder.close()  # its final flush retries what is left
    stats = recorder.stats()
    return {
        "units": run.units(),  # every write on the table: lost ones, retries and the writer's claim included
        "writes": stats.writes,
        "flushes": stats.flushes,
        "failed_writes": stats.failed_writes,
        "replayed_writes": stats.replayed_writes,
        "lost_views": stats.lost_views,
        "base_write_units_per_write": run.units() / stats.writes if stats.writes else None,
    }
