"""``shardboard serve``: the deployed HTTP API on 127.0.0.1, with the pipeline behind it, until stopped.

tables from template.yaml (created if missing) -> the local gateway (every HttpApi route, the functions in-process,
``--auth`` as deployed) -> stream runner (event source mapping) -> aggregator -> scheduler -> snapshot and shard
review; so a ``POST /views`` shows on ``GET /leaderboard`` one refresh later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from shardboard.adapters.stack_config import publish
from shardboard.handlers.openapi import document
from shardboard.settings import schedule_seconds
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.events import EVENTS_FILE, FileEvents
from shardboard_tools.local.gateway import Authorizer, Gateway, Reply
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.local.scheduler import Scheduler
from shardboard_tools.local.stream_runner import StreamRunner
from shardboard_tools.local.webapp import LocalApiServer
from shardboard_tools.template import create_tables

# A hook for routes the deployed API does not serve (e.g. GET /openapi.json): called with the gateway before start.
LocalRoutes = Callable[[Gateway], None]
# How long stopping waits for a stream batch or a scheduled run in flight (a snapshot under a backlog takes minutes):
# then they are cut off as Lambda's timeout cuts an invocation, and the next run redoes their work exactly
# (checkpoints advance only after a batch, the aggregator is exactly-once under replays).
STOP_GRACE_SECONDS = 1.0


@dataclass(frozen=True)
class ServeOptions:
    port: int = 0
    refresh_seconds: float = 2.0  # the template's rate(1 minute) would make a local edit-and-look loop slow
    state_dir: Path | None = None


@contextmanager
def serving(
    rt: Runtime,
    options: ServeOptions,
    authorizer: Authorizer | None = None,
    local_routes: LocalRoutes | None = None,
) -> Iterator[LocalApiServer]:
    """The API and the pipeline behind it for the duration of the block; then the server, the schedules, the runner."""
    from shardboard.handlers import aggregate, shard_review, snapshot

    gateway = Gateway.from_template(rt.template, authorizer)
    # The API's contract (docs/openapi.json), for clients and API tools pointed at the local API.
    gateway.add_local_route("GET", "/openapi.json", lambda _request: Reply.json(200, document()))
    if local_routes is not None:
        local_routes(gateway)
    review_every = schedule_seconds(rt.template.parameters.get("ShardReviewSchedule", "rate(1 minute)"))
    with ExitStack() as stack:
        server = LocalApiServer(gateway, options.port, options.refresh_seconds)  # binds now: a taken port fails first
        stack.callback(server.stop)
        create_tables(rt.dynamodb, rt.template)
        publish(
            rt.dynamodb,
            rt.settings.board_table,
            rt.settings.published_variables(),
            by="shardboard serve",
            when=rt.clock(),
        )
        rt.export_to_handlers(FileEvents(events_path(options)) if options.state_dir else None)
        runner = StreamRunner(
            rt.dynamodb,
            rt.streams,
            rt.settings.views_table,
            aggregate.handler,
            mapping=EventSourceMapping.from_template(rt.template),
            state_dir=options.state_dir,
        )
        follower = threading.Thread(target=runner.run_forever, name="stream-runner", daemon=True)
        follower.start()
        refresh = Scheduler(snapshot.handler, options.refresh_seconds, clock=rt.clock).start()
        review = Scheduler(
            shard_review.handler, float(review_every), function_name="ShardReviewFunction", clock=rt.clock
        ).start()
        stack.callback(stop_pipeline, runner, follower, (refresh, review))
        try:
            yield server.start()
        finally:
            server.stop()  # first: no request reaches a pipeline being stopped


def stop_pipeline(runner: StreamRunner, follower: threading.Thread, schedules: Sequence[Scheduler]) -> None:
    """Stop the stream runner and the schedules, waiting at most STOP_GRACE_SECONDS in all for the work in flight."""
    runner.stop()
    for schedule in schedules:
        schedule.stop(timeout=0)  # every one told first, so they wind down together
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for schedule in schedules:
        schedule.stop(timeout=max(0.0, deadline - time.monotonic()))
    follower.join(max(0.0, deadline - time.monotonic()))


def events_path(options: ServeOptions) -> Path:
    """Where ``serve`` appends the board events the snapshot job publishes (``tail -f`` it to watch them)."""
    assert options.state_dir is not None
    return options.state_dir / EVENTS_FILE


def describe(server: LocalApiServer, engine: str, options: ServeOptions, auth: str) -> str:
    """The one line ``serve`` prints: where, what it serves and what runs behind it."""
    routes = ", ".join(route.key for route in server.gateway.routes)
    return (
        f"shardboard serve: {server.url} ({routes}; auth {auth}) on {engine}; stream runner and snapshot every "
        f"{options.refresh_seconds:g} s behind it; Ctrl-C stops"
    )
