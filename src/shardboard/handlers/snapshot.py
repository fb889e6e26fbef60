"""Scheduled handler: refresh the snapshot of every board and period whose counts changed (in parallel).

Only that: the dynamic-sharding shrink review is its own function (handlers/shard_review.py), so its failures never
fail or delay a refresh.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import container
from shardboard.services.snapshots import refresh_snapshots


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    run = refresh_snapshots(container())
    metrics.add_metric(name="SnapshotItemsRead", unit=MetricUnit.Count, value=run.items_read)
    metrics.add_metric(name="SnapshotRefreshes", unit=MetricUnit.Count, value=len(run.results))
    metrics.add_metric(name="SnapshotWrites", unit=MetricUnit.Count, value=run.written)
    metrics.add_metric(name="SnapshotFailures", unit=MetricUnit.Count, value=len(run.failures))
    unproven = sorted(period for period, result in run.results.items() if not result.proven)
    metrics.add_metric(name="UnprovenSnapshots", unit=MetricUnit.Count, value=len(unproven))
    for period in unproven:
        logger.warning(
            "snapshot not proven exact: more takedowns above the index threshold than spares; run `shardboard refill`",
            extra=period._asdict(),
        )
    for period, error in run.failures.items():
        logger.error(
            "snapshot refresh failed; the period stays marked for the next run",
            extra={**period._asdict(), "error": repr(error)},
        )
    summary = {
        "periods": len(run.results),
        "written": run.written,
        "items_read": run.items_read,
        "failed": len(run.failures),
        "refreshed": [
            {
                **period._asdict(),
                "version": r.snapshot["version"],
                "written": r.written,
                "items": len(r.snapshot["items"]),
                "items_read": r.gathered.items_read,
                "threshold": r.snapshot["threshold"],
            }
            for period, r in sorted(run.results.items())
        ][:50],
    }
    logger.info("snapshots refreshed", extra={**summary, "schedule_time": event.time})
    if run.failures and not run.results:
        raise next(iter(run.failures.values()))
    return summary
