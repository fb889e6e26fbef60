"""A request's views are one counter write: ``count`` up to 1,000 is one write; a failed request wrote nothing."""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Sequence
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shardboard.adapters.views_table import ViewStore
from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard.domain.writing.recording import record_views
from tests.conftest import load_event


class FailingWrites:
    """A DynamoDB client whose UpdateItem fails as DynamoDB fails after botocore's retries (reads pass through)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def update_item(self, **_: Any) -> Any:
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "injected"}}, "UpdateItem")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def counter_records(pipeline: Any) -> list[dict[str, Any]]:
    """The base stream's counter records (moto also emits a key-only INSERT before an UpdateItem creates an item)."""
    return [r for r in pipeline.stream_records() if "item_id" in r["dynamodb"]["NewImage"]]


def test_a_thousand_views_are_one_base_write_and_count_a_thousand(pipeline):
    # Given an empty pipeline with the template's 20 write shards
    assert pipeline.settings.write_shards == 20
    # When one request records 1,000 views
    recorded = record_views(
        pipeline.views, "viral.jpg", 1000, pipeline.settings.write_shards, random.Random(3), where=pipeline.where()
    )
    # Then the base table took exactly one write: one counter, one stream record (OLD 0, NEW 1000)
    records = counter_records(pipeline)
    assert len(records) == 1
    assert records[0]["dynamodb"]["NewImage"]["views"] == {"N": "1000"}
    assert recorded.views == 1000
    assert pipeline.truth() == {"viral.jpg": 1000}
    # And once the stream is processed the aggregate holds all 1,000
    assert pipeline.aggregate(records) == {"batchItemFailures": []}
    assert pipeline.board.aggregate_views("viral.jpg") == 1000


def test_a_second_request_on_the_same_counter_is_aggregated_as_its_delta(pipeline):
    # Given 1,000 views aggregated on write shard 0
    views = pipeline.views
    views.add_view("a", 0, 1000, pipeline.bucket())
    assert pipeline.aggregate(pipeline.stream_records()) == {"batchItemFailures": []}
    # When 250 more land on the same counter and the whole stream is delivered again (a replay)
    views.add_view("a", 0, 250, pipeline.bucket())
    assert pipeline.aggregate(pipeline.stream_records()) == {"batchItemFailures": []}
    # Then the aggregate is exact: 1,250, the first record absorbed as a replay
    assert pipeline.board.aggregate_views("a") == 1250


def test_a_failed_request_writes_nothing(pipeline):
    # Given a base table whose writes fail
    views = ViewStore(FailingWrites(pipeline.runtime.dynamodb), pipeline.settings.views_table)
    # When a request for 1,000 views fails
    with pytest.raises(ClientError):
        record_views(views, "a", 1000, pipeline.settings.write_shards, random.Random(3), where=pipeline.where())
    # Then no view was written, so the client's retry cannot double count
    assert pipeline.truth() == {}
    assert pipeline.stream_records() == []


def test_post_views_with_count_1000_is_one_write(pipeline):
    # Given the POST /views sample event asking for 1,000 views
    event = load_event("record_views_post.json")
    event["body"] = json.dumps({"id": "images/001.jpg", "count": 1000})
    from shardboard.handlers import record_views as function

    # When the function handles it
    response = pipeline.runtime.invoke(function.handler, event)
    # Then it answered 202 after exactly one base write
    assert response["statusCode"] == 202
    assert json.loads(response["body"]) == {"id": "images/001.jpg", "recorded": 1000, "boards": ["global"]}
    assert len(counter_records(pipeline)) == 1
    assert pipeline.truth() == {"images/001.jpg": 1000}


class Throttling(ViewStore):
    """A base table at its limit: every write is refused (the adapter's Throttled, after botocore's retries)."""

    def add_view(
        self, item_id: str, shard: int, count: int = 1, bucket: str = "all", boards: Sequence[str] = ()
    ) -> float:
        raise Throttled(ThrottleScope.TABLE)


def test_post_views_throttled_answers_503_and_writes_nothing(pipeline, monkeypatch):
    from shardboard.handlers import record_views as function

    # Given a base table that throttles every write and no dynamic sharding to react
    writes = function.writes
    throttling = Throttling(None, pipeline.settings.views_table)
    monkeypatch.setattr(function, "writes", lambda: dataclasses.replace(writes(), views=throttling, router=None))
    event = load_event("record_views_post.json")
    # When a request for 3 views arrives
    response = pipeline.runtime.invoke(function.handler, event)
    # Then it is told to retry (503, Retry-After: 1) and nothing was written, so the retry is exact
    assert response["statusCode"] == 503
    assert response["headers"]["Retry-After"] == "1"
    body = json.loads(response["body"])
    assert body["code"] == "throttled" and "no views were recorded" in body["message"]
    assert pipeline.truth() == {}
