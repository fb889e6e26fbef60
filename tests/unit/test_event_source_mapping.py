"""The runner's pure rules: FilterCriteria matching, partial batch responses, the failure destination's shape."""

from __future__ import annotations

import pytest

from shardboard_tools.local.event_filter import matches, matches_any
from shardboard_tools.local.stream_runner import EventSourceMapping, dead_letter, failed_index
from shardboard_tools.local.template import Template
from tests.conftest import ROOT, load_event

SAMPLE = load_event("aggregate_stream_batch.json")["Records"]
COUNTER = {"dynamodb": {"NewImage": {"item_id": {"S": [{"exists": True}]}}}}


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (COUNTER, True),
        ({"eventName": ["INSERT"]}, True),
        ({"eventName": ["REMOVE"]}, False),
        ({"eventName": [{"anything-but": ["REMOVE"]}]}, True),
        ({"dynamodb": {"Keys": {"pk": {"S": [{"prefix": "view#"}]}}}}, True),
        ({"dynamodb": {"Keys": {"pk": {"S": [{"suffix": ".jpg"}]}}}}, True),
        ({"dynamodb": {"NewImage": {"views": {"N": [{"numeric": [">", 0, "<=", 1]}]}}}}, True),
        ({"dynamodb": {"NewImage": {"views": {"N": [{"numeric": [">", 1]}]}}}}, False),
        ({"dynamodb": {"OldImage": [{"exists": False}]}}, True),
        ({"dynamodb": {"NewImage": {"missing": {"S": [{"exists": True}]}}}}, False),
        ({"eventSource": [{"equals-ignore-case": "AWS:DYNAMODB"}]}, True),
    ],
)
def test_filter_patterns_match_like_lambda(pattern, expected):
    assert matches(pattern, SAMPLE[0]) is expected


def test_any_filter_of_the_criteria_lets_a_record_through():
    assert matches_any([{"eventName": ["REMOVE"]}, COUNTER], SAMPLE[0])
    assert not matches_any([{"eventName": ["REMOVE"]}], SAMPLE[0])


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (None, None),
        ({}, None),
        ({"batchItemFailures": []}, None),
        ({"batchItemFailures": [{"itemIdentifier": SAMPLE[1]["dynamodb"]["SequenceNumber"]}]}, 1),
        ({"batchItemFailures": [{"itemIdentifier": ""}]}, 0),  # Lambda: an empty id fails the whole batch
        ({"batchItemFailures": [{"itemIdentifier": "no-such-record"}]}, 0),
        ({"batchItemFailures": [{"wrongKey": "x"}]}, 0),
    ],
)
def test_partial_batch_responses_follow_lambdas_rules(response, expected):
    assert failed_index(SAMPLE, response) == expected


def test_dead_letter_has_the_on_failure_destination_shape():
    letter = dead_letter(
        "arn:stream",
        "shardId-1",
        SAMPLE,
        condition="RetryAttemptsExhausted",
        attempts=11,
        function_error=True,
        function_name="AggregatorFunction",
    )
    assert letter["requestContext"]["approximateInvokeCount"] == 11
    assert letter["requestContext"]["functionArn"].endswith(":function:AggregatorFunction")
    assert letter["responseContext"]["functionError"] == "Unhandled"
    info = letter["DDBStreamBatchInfo"]
    assert info["startSequenceNumber"] == SAMPLE[0]["dynamodb"]["SequenceNumber"]
    assert info["endSequenceNumber"] == SAMPLE[-1]["dynamodb"]["SequenceNumber"]
    assert info["batchSize"] == len(SAMPLE) and info["shardId"] == "shardId-1"
    assert info["approximateArrivalOfFirstRecord"].endswith("Z")


def test_mapping_settings_come_from_the_template():
    template = Template.load(ROOT / "template.yaml", {"StreamBatchSize": "250", "StreamMaximumRetryAttempts": "4"})
    mapping = EventSourceMapping.from_template(template)
    assert mapping.batch_size == 250 and mapping.max_retry_attempts == 4
    assert mapping.report_batch_item_failures and mapping.bisect_on_function_error
    assert mapping.on_failure_destination and mapping.starting_position == "TRIM_HORIZON"
    assert mapping.function_timeout_seconds == 120
