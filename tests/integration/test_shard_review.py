"""The dynamic-sharding shrink review is its own scheduled function: its failures never fail or delay a snapshot."""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from shardboard.adapters.shards_table import ShardMetadataStore
from tests.conftest import load_event


def review(pipeline):
    from shardboard.handlers import shard_review

    return pipeline.runtime.invoke(shard_review.handler, load_event("shard_review_scheduled.json"))


@pytest.fixture
def grown(make_pipeline):
    """Dynamic sharding on (2 -> up to 8 shards), 5 views of "hot" aggregated, and "hot" grown to 8 shards."""
    pipeline = make_pipeline(WriteShards="2", MaxWriteShards="8")
    for shard in (0, 1, 0, 1, 0):
        pipeline.views.add_view("hot", shard, 1, pipeline.bucket())
    pipeline.aggregate(pipeline.stream_records())
    store = ShardMetadataStore(pipeline.runtime.dynamodb, pipeline.settings.shards_table)
    now = int(time.time())
    metadata = store.change_count("hot", None, 8, now - 2_000, cooldown_seconds=5, default=2)
    assert metadata is not None
    store.note_review(metadata, 5, now - 700, None)  # last reviewed at 5 views, 700 s ago: quiet since then
    return pipeline, store


def test_a_failing_review_leaves_the_snapshot_written_and_its_invocation_successful(grown):
    pipeline, _ = grown
    # Given a shards table the review cannot read (deleted: every call on it raises)
    pipeline.runtime.dynamodb.delete_table(TableName=pipeline.settings.shards_table)
    # When the snapshot job runs, then the review
    summary = pipeline.snapshot()
    with pytest.raises(ClientError) as failed:
        review(pipeline)
    # Then the snapshot succeeded and holds the exact board
    assert (summary["written"], summary["items"]) == (True, 1)
    assert pipeline.board.get_snapshot(pipeline.settings.board).items == (("hot", 5),)
    # And the review's own invocation failed: Lambda counts it in its Errors (ShardReviewErrorsAlarm)
    assert failed.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_the_review_halves_the_shards_of_an_item_quiet_for_ten_minutes(grown):
    pipeline, store = grown
    # When the review runs with no view since the last review 700 s ago
    summary = review(pipeline)
    # Then "hot" is halved to 4 shards; readers still read all 8 that ever took a write
    assert summary == {"reviewed": 1, "shrunk": 1}
    metadata = store.get("hot", consistent=True)
    assert (metadata.number_of_shards, metadata.max_shards) == (4, 8)


def test_the_snapshot_job_no_longer_touches_the_shards_table(grown):
    pipeline, store = grown
    # When only the snapshot job runs
    pipeline.snapshot()
    # Then no review happened: "hot" keeps its 8 shards
    assert store.get("hot", consistent=True).number_of_shards == 8
