"""DynamoDB Streams handler: aggregate base-table view records into exactly-once item counts."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, cast

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.config import Settings
from shardboard.domain.aggregation import BatchOutcome, apply_batch
from shardboard.domain.batch import ViewRecord
from shardboard.handlers.observability import board_store, logger, metrics, settings, tracer
from shardboard.store import VIEWS, BoardStore, UnexpectedRecord, stream_image, view_record


class AggregatingProcessor(BatchProcessor):
    """Powertools' partial-batch processor, made to aggregate.

    The record handler only reads each record; the writes happen afterwards, once per item for the whole batch;
    a failed item write fails exactly that item's records, so Lambda resumes from the lowest of them.
    """

    outcome: BatchOutcome
    skipped: int

    def __init__(
        self, board: Callable[[], BoardStore] = board_store, config: Callable[[], Settings] = settings
    ) -> None:
        """``board``/``config`` default to the function's own; the benchmark passes its in-memory store."""
        super().__init__(event_type=EventType.DynamoDBStreams)
        self.board = board
        self.config = config

    def process(self) -> list[tuple[Any, ...]]:
        read: list[tuple[DynamoDBRecord, ViewRecord | None]] = []
        for raw in self.records:
            record = cast(DynamoDBRecord, self._to_batch_type(raw, self.event_type))
            read.append((record, self.handler(record=record)))
        self.skipped = sum(view is None for _, view in read)
        self.outcome = apply_batch(self.board(), [view for _, view in read if view], self.config())
        results = []
        for record, view in read:
            error = self.outcome.failures.get(view.item_id) if view else None
            if error is None:
                results.append(self.success_handler(record, view))
            else:
                results.append(self.failure_handler(record, (type(error), error, error.__traceback__)))
        return results


def read_view(record: DynamoDBRecord) -> ViewRecord | None:
    """A counter step, or None for a record that is not ours (skipped and logged here, counted per batch)."""
    # The raw wire images, not Powertools' whole-image deserialization: it was most of the CPU per record.
    stream = record.raw_event.get("dynamodb")
    try:
        if not isinstance(stream, dict):
            raise UnexpectedRecord("malformed", "record has no dynamodb section")
        return view_record(
            record.raw_event.get("eventName"),
            stream_image(stream.get("NewImage")),
            stream_image(stream.get("OldImage"), (VIEWS,)),  # only the previous count is read from OldImage
            str(stream.get("SequenceNumber") or ""),
        )
    except UnexpectedRecord as skip:
        logger.warning(
            "stream record skipped",
            extra={"reason": skip.reason, "detail": str(skip), "event_id": record.event_id},
        )
        return None
    except Exception as error:  # an undecodable image is a foreign record too, not a reason to fail the batch
        logger.warning(
            "stream record skipped",
            extra={"reason": "malformed", "detail": repr(error), "event_id": record.event_id},
            exc_info=sys.exc_info(),
        )
        return None


processor = AggregatingProcessor()


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    response = process_partial_response(event=event, record_handler=read_view, processor=processor, context=context)
    outcome = processor.outcome
    metrics.add_metric(name="ViewsAggregated", unit=MetricUnit.Count, value=outcome.views_added)
    metrics.add_metric(name="AggregateWrites", unit=MetricUnit.Count, value=outcome.aggregate_writes)
    metrics.add_metric(name="ReplaysAbsorbed", unit=MetricUnit.Count, value=outcome.replays_absorbed)
    metrics.add_metric(name="GapsHealed", unit=MetricUnit.Count, value=outcome.gaps_healed)
    metrics.add_metric(name="IndexJoins", unit=MetricUnit.Count, value=outcome.index_joins)
    metrics.add_metric(name="ItemsFailed", unit=MetricUnit.Count, value=len(outcome.failures))
    metrics.add_metric(name="RecordsSkipped", unit=MetricUnit.Count, value=processor.skipped)
    for item, error in outcome.failures.items():
        logger.warning(
            "aggregate write failed; its records are reported for retry", extra={"item_id": item, "error": repr(error)}
        )
    if outcome.replays_absorbed:
        logger.info("replay absorbed", extra={"items": outcome.replays_absorbed})
    logger.info(
        "batch applied",
        extra={
            "records": len(event.get("Records", [])),
            "items": len(outcome.items),
            "views_added": outcome.views_added,
            "failed_items": len(outcome.failures),
            "threshold": outcome.threshold,
        },
    )
    return dict(response)
