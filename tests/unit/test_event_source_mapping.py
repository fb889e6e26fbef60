"""The runner's pure rules: FilterCriteria matching, partial batch responses, the failure destination's shape."""

from __future__ import annotations

from typing import Any

import pytest

from shardboard_tools.lambda_model.event_filter import matches, matches_any
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.lambda_model.records import dead_letter, failed_index
from shardboard_tools.local.stream_runner import StreamRunner
from shardboard_tools.template import Template
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
        # numeric compares JSON numbers only: a DynamoDB number is a string, matched as one
        ({"dynamodb": {"NewImage": {"views": {"N": [{"numeric": [">", 0, "<=", 1]}]}}}}, False),
        ({"dynamodb": {"NewImage": {"views": {"N": ["1"]}}}}, True),
        ({"dynamodb": {"SizeBytes": [{"numeric": [">", 0]}]}}, True),
        ({"dynamodb": {"SizeBytes": [{"numeric": [">", 10_000]}]}}, False),
        ({"dynamodb": {"OldImage": [{"exists": False}]}}, True),
        # exists looks at leaves only: an object (NewImage, an attribute's {"S": ...}) is not one
        ({"dynamodb": {"NewImage": [{"exists": True}]}}, False),
        ({"dynamodb": {"NewImage": {"item_id": [{"exists": True}]}}}, False),
        ({"dynamodb": {"NewImage": [{"exists": False}]}}, True),
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


class FakeStream:
    """An in-memory DynamoDB stream behind the two clients the runner uses (describe_table and the Streams API)."""

    def __init__(self) -> None:
        self.shards: dict[str, dict[str, Any]] = {}
        self.iterator_types: dict[str, str] = {}

    def add(self, shard_id: str, sequences: list[int], parent: str | None = None) -> None:
        self.shards[shard_id] = {"records": [], "closed": False, "parent": parent}
        self.write(shard_id, sequences)

    def write(self, shard_id: str, sequences: list[int]) -> None:
        self.shards[shard_id]["records"].extend(
            {"eventName": "INSERT", "dynamodb": {"SequenceNumber": str(n), "Keys": {"pk": {"S": f"view#{n}"}}}}
            for n in sequences
        )

    def describe_table(self, TableName: str) -> dict[str, Any]:
        return {"Table": {"LatestStreamArn": "arn:stream", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}}

    def describe_stream(self, StreamArn: str, **_: Any) -> dict[str, Any]:
        shards = []
        for shard_id, shard in self.shards.items():
            bounds = {"StartingSequenceNumber": "0"} | ({"EndingSequenceNumber": "9"} if shard["closed"] else {})
            parent = {"ParentShardId": shard["parent"]} if shard["parent"] else {}
            shards.append({"ShardId": shard_id, "SequenceNumberRange": bounds, **parent})
        return {"StreamDescription": {"Shards": shards}}

    def get_shard_iterator(self, StreamArn: str, ShardId: str, ShardIteratorType: str, **kwargs: Any) -> Any:
        self.iterator_types[ShardId] = ShardIteratorType
        records = self.shards[ShardId]["records"]
        start = {"LATEST": len(records), "TRIM_HORIZON": 0}.get(ShardIteratorType)
        if start is None:
            start = 1 + next(
                i for i, r in enumerate(records) if r["dynamodb"]["SequenceNumber"] == kwargs["SequenceNumber"]
            )
        return {"ShardIterator": f"{ShardId}|{start}"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        shard_id, start = ShardIterator.split("|")
        shard = self.shards[shard_id]
        page = shard["records"][int(start) : int(start) + Limit]
        end = int(start) + len(page)
        done = shard["closed"] and end == len(shard["records"])
        return {"Records": page, "NextShardIterator": None if done else f"{shard_id}|{end}"}


def test_latest_applies_only_to_the_shards_open_when_the_mapping_starts():
    # Given a mapping starting at LATEST on a stream whose one open shard already holds records 1 and 2
    stream = FakeStream()
    stream.add("shardId-1", [1, 2])
    seen: list[str] = []
    mapping = EventSourceMapping(starting_position="LATEST", max_retry_attempts=0)
    run = StreamRunner(stream, stream, "views", lambda event, _: seen.extend(sequences(event)), mapping=mapping)
    run.run_once()
    # When record 3 arrives, the shard is then split: its child holds records 4 and 5
    stream.write("shardId-1", [3])
    stream.shards["shardId-1"]["closed"] = True
    stream.add("shardId-2", [4, 5], parent="shardId-1")
    run.drain()
    # Then the open shard started at its end, and the child from its first record (TRIM_HORIZON)
    assert seen == ["3", "4", "5"]
    assert stream.iterator_types == {"shardId-1": "LATEST", "shardId-2": "TRIM_HORIZON"}


def sequences(event: dict[str, Any]) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
