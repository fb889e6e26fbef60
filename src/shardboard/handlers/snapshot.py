"""Scheduled handler: refresh the leaderboard snapshot item.

Only that: the dynamic-sharding shrink review is its own function (handlers/shard_review.py), so its failures never
fail or delay a refresh.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.domain.snapshot import take_snapshot
from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import board_store, settings


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    result = take_snapshot(board_store(), settings())
    snapshot = result.snapshot
    age = (datetime.now(UTC) - datetime.fromisoformat(snapshot["generated_at"])).total_seconds()
    metrics.add_metric(name="SnapshotItemsRead", unit=MetricUnit.Count, value=result.gathered.items_read)
    metrics.add_metric(name="SnapshotRefreshes", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="SnapshotWrites", unit=MetricUnit.Count, value=int(result.written))
    metrics.add_metric(name="SnapshotAgeSeconds", unit=MetricUnit.Seconds, value=max(0.0, age))
    summary = {
        "board": snapshot["board"],
        "version": snapshot["version"],
        "written": result.written,
        "items": len(snapshot["items"]),
        "items_read": result.gathered.items_read,
        "rounds": result.gathered.rounds,
        "threshold": snapshot["threshold"],
    }
    logger.info("snapshot refreshed", extra={**summary, "schedule_time": event.time})
    return summary
