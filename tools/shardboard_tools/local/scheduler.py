"""Call a scheduled function (the snapshot job, the shard review) at a fixed rate, as EventBridge would."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from shardboard.domain.clock import Clock
from shardboard.services.clock import system_clock
from shardboard_tools.lambda_model.context import LocalContext, invoke

Handler = Callable[[dict[str, Any], Any], Any]

log = logging.getLogger(__name__)


def scheduled_event(now: datetime | None = None, rule: str = "shardboard-local-refresh") -> dict[str, Any]:
    """The event an EventBridge schedule sends (same shape as events/snapshot_scheduled.json), at ``now`` (None:
    the wall clock's; the function takes its own "now" from its container, the event's time is only logged)."""
    moment = (now or system_clock()).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "version": "0",
        "id": "00000000-0000-0000-0000-000000000000",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": moment,
        "region": "us-east-1",
        "resources": [f"arn:aws:events:us-east-1:000000000000:rule/{rule}"],
        "detail": {},
    }


class Scheduler:
    """A background thread invoking ``handler`` every ``interval`` seconds; ``on_result`` sees each summary.

    Like EventBridge it keeps a fixed rate (a slow run delays the next one, it never queues several), and a failed
    run is logged and retried at the next tick.
    """

    def __init__(
        self,
        handler: Handler,
        interval: float,
        on_result: Callable[[dict[str, Any], float], None] | None = None,
        function_name: str = "SnapshotFunction",
        clock: Clock = system_clock,
    ) -> None:
        if interval <= 0:
            raise ValueError("a schedule's interval must be positive")
        self.handler = handler
        self.interval = interval
        self.clock = clock  # the events' time (the runtime's); the interval is waited on the monotonic clock
        self.on_result = on_result
        self.function_name = function_name
        self.runs = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"schedule-{function_name}", daemon=True)

    def start(self) -> Scheduler:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """No further runs; wait for the one in flight, at most ``timeout`` seconds (None: for as long as it takes).

        A run still going after that is cut off with the (daemon) thread, as Lambda's timeout cuts an invocation; the
        next run redoes its work.
        """
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def run_now(self) -> dict[str, Any]:
        """One invocation, as the schedule would make it; returns the handler's summary."""
        event = scheduled_event(self.clock(), rule=f"shardboard-local-{self.function_name}")
        summary = dict(invoke(self.handler, event, LocalContext(function_name=self.function_name)))
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
                log.warning("scheduled run failed", extra={"function": self.function_name, "error": repr(error)})
            next_run = max(next_run + self.interval, time.monotonic())
