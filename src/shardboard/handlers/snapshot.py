"""Scheduled handler: the snapshot job (services/snapshot_job.py): refresh the snapshot of every board and period
whose counts changed (in parallel), then repair the sparse index of any period it could not prove exact (more
takedowns above T than spares: services/refill.py).

The repair runs after the refresh has written its heads, only when a head was not proven, within the function's
remaining time; what it cannot fix is counted in UnprovenSnapshots (the alarm). The dynamic-sharding shrink review
is its own function (handlers/shard_review.py), so its failures never fail or delay a refresh.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import container
from shardboard.services.snapshot_job import RepairFailed, SnapshotJob, run_snapshot_job

# Time the function keeps after a repair's scans to log and publish its metrics (the Timeout is 60 s).
REPAIR_MARGIN_SECONDS = 5.0


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000 - REPAIR_MARGIN_SECONDS
    try:
        job = run_snapshot_job(container(), deadline)
    except RepairFailed as failed:  # the invocation fails, and its unproven heads count as not repaired
        report(failed.job)
        raise failed.error from None
    report(job)
    summary = job.summary()
    logger.info("snapshots refreshed", extra={**summary, "schedule_time": event.time})
    job.raise_if_none_refreshed()
    return summary


def report(job: SnapshotJob) -> None:
    """Metrics and log lines for one run."""
    run, repair = job.run, job.repair
    metrics.add_metric(name="EventsPublished", unit=MetricUnit.Count, value=job.events)
    metrics.add_metric(name="SnapshotItemsRead", unit=MetricUnit.Count, value=run.items_read)
    metrics.add_metric(name="SnapshotRefreshes", unit=MetricUnit.Count, value=len(run.results))
    metrics.add_metric(name="SnapshotWrites", unit=MetricUnit.Count, value=run.written)
    metrics.add_metric(name="SnapshotFailures", unit=MetricUnit.Count, value=len(run.failures))
    # Periods whose head failed their last STUCK_AFTER_FAILURES refreshes: the StuckSnapshots alarm.
    metrics.add_metric(name="StuckSnapshots", unit=MetricUnit.Count, value=len(run.stuck))
    # Heads written with parts left out to fit DynamoDB's item (domain/publishing/head_size.py): never a failed write.
    metrics.add_metric(name="DegradedHeads", unit=MetricUnit.Count, value=len(run.degraded))
    # Window and trending sums the indexes could not prove, counted from a scan of the board table (exact, costly).
    metrics.add_metric(name="SumScans", unit=MetricUnit.Count, value=run.scans)
    metrics.add_metric(name="SnapshotsRepaired", unit=MetricUnit.Count, value=job.repaired)
    metrics.add_metric(name="UnprovenSnapshots", unit=MetricUnit.Count, value=len(repair.unrepaired))
    for done in repair.repaired:
        logger.info(
            "sparse index repaired: more takedowns above the index threshold than spares",
            extra={
                **done.period._asdict(),
                "threshold_was": done.threshold_was,
                "threshold": done.threshold,
                "keyed": done.keyed,
                "proven": done.proven,
            },
        )
    for period in repair.unrepaired:
        logger.warning(
            "snapshot not proven exact and not repaired; run `shardboard refill`",
            extra={**period._asdict(), "why": repair.why_not or "still not proven after the repair"},
        )
    for period, error in run.failures.items():
        logger.error(
            "snapshot refresh failed; the period stays marked for the next run",
            extra={**period._asdict(), "error": repr(error), "failures_in_a_row": run.failing.get(period, 1)},
        )
    for period, left in sorted(run.degraded.items()):
        logger.warning(
            "head degraded to fit its item (docs/head-size.md): lower PageSize, SnapshotSpare or TopN",
            extra={**period._asdict(), **asdict(left)},
        )
