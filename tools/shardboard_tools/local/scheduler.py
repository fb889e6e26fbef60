"""Call the snapshot handler on the template's schedule (EventBridge locally), or on a shorter local interval."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from shardboard.settings import schedule_seconds
from shardboard_tools.local.lambda_context import LocalContext
from shardboard_tools.local.template import Template

Handler = Callable[[dict[str, Any], Any], Any]

log = logging.getLogger(__name__)


def template_interval(template: Template) -> float:
    """Seconds between refreshes for the template's SnapshotSchedule (``rate(1 minute)`` -> 60)."""
    return float(schedule_seconds(template.parameters.get("SnapshotSchedule", "rate(1 minute)")))


def scheduled_event(now: datetime | None = None) -> dict[str, Any]:
    """The event an EventBridge schedule sends (same shape as events/snapshot_scheduled.json)."""
    moment = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": "0",
        "id": "00000000-0000-0000-0000-000000000000",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": moment,
        "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:000000000000:rule/shardboard-local-refresh"],
        "detail": {},
    }


class SnapshotScheduler:
    """A background thread invoking ``handler`` every ``interval`` seconds; ``on_result`` sees each summary.

    Like EventBridge it keeps a fixed rate (a slow run delays the next one, it never queues several), and a failed
    run is logged and retried at the next tick.
    """

    def __init__(
        self,
        handler: Handler,
        interval: float,
        on_result: Callable[[dict[str, Any], float], None] | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError("the snapshot interval must be positive")
        self.handler = handler
        self.interval = interval
        self.on_result = on_result
        self.runs = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="snapshot-scheduler", daemon=True)

    def start(self) -> SnapshotScheduler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def run_now(self) -> dict[str, Any]:
        """One invocation, as the schedule would make it; returns the handler's summary."""
        summary = dict(self.handler(scheduled_event(), LocalContext(function_name="SnapshotFunction")))
        self.runs += 1
        if self.on_result:
            self.on_result(summary, time.time())
        return summary

    def _loop(self) -> None:
        next_run = time.monotonic() + self.interval
        while not self._stop.wait(max(0.0, next_run - time.monotonic())):
            try:
                self.run_now()
            except Exception as error:  # the next tick retries, as the next scheduled event would
                self.failures += 1
                log.warning("snapshot run failed", extra={"error": repr(error)})
            next_run = max(next_run + self.interval, time.monotonic())
