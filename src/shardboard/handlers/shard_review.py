"""Scheduled handler: shrink the write shards of items whose traffic fell (dynamic sharding, docs/dynamic-sharding.md).

Its own function on its own schedule, not a step of the snapshot job: a review that fails, hangs or is throttled can
never fail, delay or time out a leaderboard refresh, the snapshot job holds no rights on the shards table, and
Lambda's Errors metric counts a failed review (ShardReviewErrorsAlarm); the next tick reviews again.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import container
from shardboard.services import sharding


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    outcomes = sharding.review(sharding.ShardReview.of(container()))
    shrunk = [o for o in outcomes if o.shrunk_to is not None]
    metrics.add_metric(name="ShardItemsReviewed", unit=MetricUnit.Count, value=len(outcomes))
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
    summary = {"reviewed": len(outcomes), "shrunk": len(shrunk)}
    logger.info("write shards reviewed", extra={**summary, "schedule_time": event.time})
    return summary
