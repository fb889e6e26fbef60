"""Failure handling of the rendered template: the stream event source never retries forever, reports partial
failures, bisects, filters to base counters and dead-letters to an encrypted queue; failed refreshes are kept too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shardboard.adapters.keys import ITEM_ID, PK, SHARD, VIEWS, aggregate_pk, snapshot_pk, view_pk
from shardboard_tools.lambda_model.event_filter import matches_any
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.template import Template
from tests.conftest import load_event
from tests.template.conftest import fixed, of_type, parameter

# DynamoDB Streams keep records 24 hours: a record-age limit beyond that means none.
STREAM_RETENTION_SECONDS = 86_400


@pytest.fixture(scope="module")
def stream_mapping(resources: dict[str, Any]) -> dict[str, Any]:
    (mapping,) = of_type(resources, "AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["FunctionName"] == {"Ref": "AggregatorFunction"}
    return dict(mapping["Properties"])


@pytest.fixture(scope="module")
def patterns(stream_mapping: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(f["Pattern"]) for f in stream_mapping["FilterCriteria"]["Filters"]]


def test_retries_are_bounded_by_count_and_by_record_age(sam_template, stream_mapping):
    retries = fixed(sam_template, stream_mapping["MaximumRetryAttempts"])
    age = fixed(sam_template, stream_mapping["MaximumRecordAgeInSeconds"])
    # -1 (Lambda's default) means "until the record expires": never that.
    assert 0 <= retries <= 10_000
    assert 60 <= age <= STREAM_RETENTION_SECONDS


def test_partial_failures_are_reported_and_failing_batches_bisected(sam_template, stream_mapping):
    assert stream_mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert fixed(sam_template, stream_mapping["BisectBatchOnFunctionError"]) == "true"


@pytest.mark.parametrize(
    ("setting", "low", "high"),
    [("BatchSize", 1, 10_000), ("MaximumBatchingWindowInSeconds", 0, 300), ("ParallelizationFactor", 1, 10)],
)
def test_batching_is_within_lambdas_bounds(sam_template, stream_mapping, setting, low, high):
    assert low <= fixed(sam_template, stream_mapping[setting]) <= high
    assert stream_mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}


def test_the_aggregation_window_is_a_parameter_off_by_default_and_within_lambdas_range(sam_template, stream_mapping):
    window = parameter(sam_template, stream_mapping["TumblingWindowInSeconds"])
    # 0 = apply every batch (freshest counts); Lambda accepts 0..900 seconds.
    assert window["Type"] == "Number" and window["Default"] == 0
    assert window["MinValue"] == 0 and window["MaxValue"] == 900
    mapping = EventSourceMapping.from_template(Template.load())
    assert mapping.tumbling_window_seconds == 0  # the local runner reads the same setting


def test_exhausted_batches_go_to_an_encrypted_queue(resources, stream_mapping):
    destination = stream_mapping["DestinationConfig"]["OnFailure"]["Destination"]
    assert destination == {"Fn::GetAtt": ["StreamFailureQueue", "Arn"]}
    queue = resources["StreamFailureQueue"]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == 1_209_600  # 14 days, SQS's longest: time to investigate


def test_failed_snapshot_refreshes_are_kept_in_an_encrypted_queue(resources):
    target = resources["SnapshotFunctionRefresh"]["Properties"]["Targets"][0]
    assert target["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": ["SnapshotFailureQueue", "Arn"]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] <= 5
    invoke = resources["SnapshotFunctionEventInvokeConfig"]["Properties"]
    assert invoke["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": ["SnapshotFailureQueue", "Arn"]}
    assert invoke["MaximumRetryAttempts"] <= 2
    assert resources["SnapshotFailureQueue"]["Properties"]["SqsManagedSseEnabled"] is True


def test_the_shard_review_is_its_own_scheduled_function_never_retried(resources, sam_template):
    # Its own rule on its own schedule parameter: a failing review cannot fail or delay a snapshot refresh
    rule = resources["ShardReviewFunctionReview"]["Properties"]
    assert rule["ScheduleExpression"] == {"Fn::FindInMap": ["Tuning", "Writes", "ShardReviewSchedule"]}
    assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": ["ShardReviewFunction", "Arn"]}
    assert fixed(sam_template, rule["ScheduleExpression"]) == "rate(1 minute)"
    # A retry would run after the next tick's review and measure nothing new: a failure is counted, not retried
    invoke = resources["ShardReviewFunctionEventInvokeConfig"]["Properties"]
    assert (invoke["MaximumRetryAttempts"], invoke["MaximumEventAgeInSeconds"]) == (0, 60)
    snapshot_rule = resources["SnapshotFunctionRefresh"]["Properties"]
    assert [t["Arn"] for t in snapshot_rule["Targets"]] == [{"Fn::GetAtt": ["SnapshotFunction", "Arn"]}]


def counter_record(event_name: str, item_id: str, shard: int, views: int) -> dict[str, Any]:
    """A base-table stream record as ViewStore.add_view's write produces it (DynamoDB JSON, as Lambda filters it)."""
    image = {PK: {"S": view_pk(item_id, shard)}, ITEM_ID: {"S": item_id}, SHARD: {"N": str(shard)}}
    image[VIEWS] = {"N": str(views)}
    return {"eventName": event_name, "dynamodb": {"Keys": {PK: image[PK]}, "NewImage": image}}


@pytest.mark.parametrize("item_id", ["images/001.jpg", "a#1", "view#2#x", "ünï code", "a b"])
def test_the_filter_lets_every_counter_record_through(patterns, item_id):
    assert matches_any(patterns, counter_record("INSERT", item_id, 0, 1))
    assert matches_any(patterns, counter_record("MODIFY", item_id, 19, 42))


def test_the_filter_drops_removes_key_only_and_foreign_records(patterns):
    remove = counter_record("REMOVE", "a", 1, 3)
    del remove["dynamodb"]["NewImage"]
    key_only = {"eventName": "INSERT", "dynamodb": {"NewImage": {PK: {"S": view_pk("a", 1)}}}}  # moto's extra record
    aggregate = counter_record("MODIFY", "a", 1, 3)
    aggregate["dynamodb"]["NewImage"][PK] = {"S": aggregate_pk("global", "a")}
    snapshot = {"eventName": "MODIFY", "dynamodb": {"NewImage": {PK: {"S": snapshot_pk("global")}}}}
    for record in (remove, key_only, aggregate, snapshot):
        assert not matches_any(patterns, record), record


def test_the_filter_keeps_exactly_the_counter_records_of_the_sample_event(patterns):
    records = load_event("aggregate_stream_batch.json")["Records"]
    kept = [r for r in records if matches_any(patterns, r)]
    assert [r["eventName"] for r in kept] == ["INSERT", "MODIFY", "MODIFY", "INSERT", "MODIFY"]
    assert len(records) - len(kept) == 2  # the REMOVE and the foreign item


def test_the_local_stream_runner_reads_the_same_mapping(patterns):
    mapping = EventSourceMapping.from_template(Template.load())
    assert mapping.report_batch_item_failures and mapping.bisect_on_function_error
    assert 0 <= mapping.max_retry_attempts <= 10_000
    assert 0 < mapping.max_record_age_seconds <= STREAM_RETENTION_SECONDS
    assert list(mapping.filter_patterns) == patterns
    assert mapping.on_failure_destination
