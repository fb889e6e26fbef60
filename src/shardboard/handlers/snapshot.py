"""Scheduled handler: refresh the leaderboard snapshot item."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.domain.dynamic_sharding import ShardPolicy, review_all
from shardboard.domain.snapshot import take_snapshot
from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import board_store, settings, shard_metadata_store


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    result = take_snapshot(board_store(), settings())
    review_shards()
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


def review_shards() -> None:
    """Shrink items whose traffic fell (dynamic sharding); the schedule that refreshes the board also reviews."""
    policy = ShardPolicy.of(settings())
    if not policy.enabled:
        return
    outcomes = review_all(shard_metadata_store(), board_store().aggregate_views, int(time.time()), policy)
    shrunk = [o for o in outcomes if o.shrunk_to is not None]
    metrics.add_metric(name="WriteShardShrinks", unit=MetricUnit.Count, value=len(shrunk))
    for outcome in shrunk:
        logger.info(
            "write shards shrunk",
            extra={
                "item_id": outcome.item_id,
                "shards": outcome.shrunk_to,
                "views_per_second": outcome.views_per_second,
            },
        )
