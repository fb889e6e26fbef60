"""`serve -v`'s log lines name the function that wrote them, while the API, the snapshot schedule and the stream
runner run at once in one process (found: Powertools' logger keys are shared across threads, and a request's lines
carried the snapshot job's name). The functions here log through the deployed functions' own logger, with
Powertools' ``inject_lambda_context`` as they use it; one is served by the local API, one run by the scheduler."""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from shardboard.handlers.observability import logger
from shardboard_tools.local.gateway import Gateway, Route
from shardboard_tools.local.scheduler import Scheduler
from shardboard_tools.local.webapp import LocalApiServer

SNAPSHOT_RAN = threading.Event()
REQUEST_STARTED = threading.Event()
WAIT_SECONDS = 10


@logger.inject_lambda_context
def answer_slowly(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A request that logs, lets the snapshot job run, then logs again."""
    logger.info("request began")
    REQUEST_STARTED.set()
    SNAPSHOT_RAN.wait(WAIT_SECONDS)
    logger.info("request ended")
    return {"statusCode": 200, "body": "{}"}


@logger.inject_lambda_context
def snapshot(event: dict[str, Any], context: Any) -> dict[str, Any]:
    logger.info("snapshot ran")
    return {}


class Lines(logging.Handler):
    """The JSON lines the deployed logger writes, as Powertools formats them."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(logger.registered_formatter.format(record)))


@pytest.fixture
def lines() -> Iterator[Lines]:
    captured = Lines()
    level = logger.log_level
    logger.addHandler(captured)
    logger.setLevel(logging.INFO)
    yield captured
    logger.removeHandler(captured)
    logger.setLevel(level)


def test_each_functions_lines_carry_its_own_name_while_they_run_at_once(lines):
    # Given the local API serving one function, and the snapshot schedule running another in its own thread
    route = Route("GET", "/slow", "ReadApiFunction", f"{__name__}.answer_slowly")
    server = LocalApiServer(Gateway([route])).start()
    schedule = Scheduler(snapshot, 3600, function_name="SnapshotFunction")

    def run_snapshot_mid_request() -> None:
        REQUEST_STARTED.wait(WAIT_SECONDS)
        schedule.run_now()  # its inject_lambda_context rewrites the shared keys while the request is running
        SNAPSHOT_RAN.set()

    snapshotting = threading.Thread(target=run_snapshot_mid_request)
    snapshotting.start()
    try:
        # When a request runs across a snapshot run
        with urllib.request.urlopen(server.url + "slow", timeout=WAIT_SECONDS * 2) as answer:  # noqa: S310 - local
            assert answer.status == 200
    finally:
        snapshotting.join(WAIT_SECONDS)
        server.stop()

    # Then every line names the function that wrote it, before and after the other ran
    named = {line["message"]: line["function_name"] for line in lines.lines}
    assert named == {
        "request began": "ReadApiFunction",
        "snapshot ran": "SnapshotFunction",
        "request ended": "ReadApiFunction",
    }
    arns = {line["message"]: line["function_arn"] for line in lines.lines}
    assert arns["request ended"].endswith(":function:ReadApiFunction")
