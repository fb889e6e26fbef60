"""DynamoDB Streams handler: aggregate base-table view records into exactly-once item counts.

Plain batches are applied as they come (one write per item per batch). Under a tumbling window
(``AggregationWindowSeconds`` > 0) each batch is folded into the window's state and the final invocation applies the
whole window (one write per item per window): docs/exactly-once.md, "Tumbling windows". The work is
``services.aggregating.apply_stream_batch``; this module answers Lambda and reports.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.domain.aggregating.window import AggregationWindow
from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import board_store, denied_ids, epoch_seconds, settings
from shardboard.services.aggregating import AppliedBatch, StreamAggregator, apply_stream_batch


class WindowNotApplied(RuntimeError):
    """Some items of a window failed to apply: the final invocation fails, and Lambda retries it with the same
    state (items already applied are absorbed as replays)."""


class RecordNotApplied(RuntimeError):
    """A record of an item whose write failed this batch (the item's error is its cause): reported for retry."""


aggregator = StreamAggregator(board_store, settings, denied_ids, epoch_seconds)


def aggregate(event: dict[str, Any], worker: StreamAggregator, context: Any = None) -> dict[str, Any]:
    """The function's work without its Lambda decorators (the benchmark measures exactly this path)."""
    worker.last = None
    window = AggregationWindow.of(event)
    applied = worker.last = apply_stream_batch(worker, event.get("Records") or [], window)
    if window is None:
        return partial_response(event, applied, context)
    if applied.outcome.failures:
        raise WindowNotApplied(f"{len(applied.outcome.failures)} item(s) of the window failed to apply")
    return {"state": window.state(), "batchItemFailures": []}


def partial_response(event: dict[str, Any], applied: AppliedBatch, context: Any = None) -> dict[str, Any]:
    """Powertools' partial batch response: the records of the items that failed are reported (Lambda resumes from
    the lowest of them), every other record succeeds; when every record failed, the whole batch fails."""

    def verdict(record: DynamoDBRecord) -> None:
        error = applied.failure_of(record.raw_event)
        if error is not None:
            # A fresh exception per record: re-raising the item's own would grow its traceback at every record.
            raise RecordNotApplied(repr(error)) from error

    # A processor per invocation: Powertools keeps a processor's records until its next batch.
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    return dict(process_partial_response(event=event, record_handler=verdict, processor=processor, context=context))


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        return aggregate(event, aggregator, context)
    finally:
        if aggregator.last is not None:  # a window that failed to apply is reported before Lambda retries it
            report(event, aggregator.last)


def report(event: dict[str, Any], applied: AppliedBatch) -> None:
    """Metrics and log lines for one invocation."""
    outcome = applied.outcome
    for skip in applied.skipped:
        extra: dict[str, Any] = {"reason": skip.reason, "detail": skip.detail, "event_id": skip.event_id}
        logger.warning("stream record skipped", extra=extra, exc_info=skip.error)
    for key in applied.window_skipped:
        logger.warning("window delta skipped", extra={"reason": "deleted", "detail": f"{key[1]!r} is deleted"})
    for erased in applied.erased:
        extra = {"board": erased.board, "item_id": erased.item_id, "erased": erased.erased}
        logger.warning("deleted while written", extra=extra)
    metrics.add_metric(name="ViewsAggregated", unit=MetricUnit.Count, value=outcome.views_added)
    metrics.add_metric(name="AggregateWrites", unit=MetricUnit.Count, value=outcome.aggregate_writes)
    metrics.add_metric(name="ReplaysAbsorbed", unit=MetricUnit.Count, value=outcome.replays_absorbed)
    metrics.add_metric(name="GapsHealed", unit=MetricUnit.Count, value=outcome.gaps_healed)
    metrics.add_metric(name="IndexJoins", unit=MetricUnit.Count, value=outcome.index_joins)
    metrics.add_metric(name="ItemsFailed", unit=MetricUnit.Count, value=len(outcome.failures))
    metrics.add_metric(name="RecordsSkipped", unit=MetricUnit.Count, value=len(applied.skipped))
    metrics.add_metric(name="LateMoves", unit=MetricUnit.Count, value=outcome.late_moves)
    metrics.add_metric(name="AggregatesRead", unit=MetricUnit.Count, value=outcome.aggregates_read)
    for (board, item), error in outcome.failures.items():
        logger.warning(
            "aggregate write failed; its records are reported for retry",
            extra={"board": board, "item_id": item, "error": repr(error)},
        )
    if outcome.replays_absorbed:
        logger.info("replay absorbed", extra={"items": outcome.replays_absorbed})
    window = applied.window
    logger.info(
        "batch applied",
        extra={
            "records": len(event.get("Records", [])),
            "items": len(outcome.items),
            "periods_changed": len(outcome.changed),
            "views_added": outcome.views_added,
            "failed_items": len(outcome.failures),
            "threshold": outcome.threshold,
            "window_batches": window.batches() if window else None,
            "final": window.final if window else None,
        },
    )
