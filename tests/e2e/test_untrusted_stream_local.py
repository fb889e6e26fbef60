"""A count DynamoDB cannot store, on DynamoDB Local (moto stores any number): it fails its own item, never the batch."""

from __future__ import annotations

import pytest

from shardboard.domain.writing.recording import Where
from shardboard.handlers import aggregate
from shardboard_tools.local.streams import (
    lambda_event,
    lambda_record,
    latest_stream_arn,
    read_shard,
    shards_parents_first,
)

pytestmark = pytest.mark.e2e


def test_a_count_past_dynamodbs_numbers_fails_only_its_own_item(make_local):
    rt = make_local()
    day = Where.of(rt.settings.anchor, at=rt.clock()).bucket
    # Given a good item, and one whose counters DynamoDB stores (1e100 has one significant digit) but whose sum,
    # 10^100 + 7, has 101 significant digits: more than DynamoDB's 38
    rt.views.add_view("good", 0, 3, day)
    rt.views.add_view("huge", 0, 10**100, day)
    rt.views.add_view("huge", 1, 7, day)
    arn = latest_stream_arn(rt.dynamodb, rt.settings.views_table)
    records = [
        lambda_record(record, arn)
        for shard in shards_parents_first(rt.streams, arn)
        for page in read_shard(rt.streams, arn, shard["ShardId"])
        for record in page
    ]
    # When the real handler gets them in one batch
    response = rt.invoke(aggregate.handler, lambda_event(records))
    # Then exactly the huge item's records are reported for retry, and the good one counts
    huge = {r["dynamodb"]["SequenceNumber"] for r in records if r["dynamodb"]["NewImage"]["item_id"]["S"] == "huge"}
    assert {failure["itemIdentifier"] for failure in response["batchItemFailures"]} == huge
    assert rt.board.aggregate_views("good") == 3
