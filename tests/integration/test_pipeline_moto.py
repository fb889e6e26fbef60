"""The whole pipeline on moto: real stream records, real handlers, exact counts against the base table's truth."""

from __future__ import annotations

import random

from shardboard.domain.recording import record_views
from shardboard.domain.snapshot import leaderboard_json

SEED_EXAMPLE = {
    "images/001.jpg": 27,
    "images/002.jpg": 23,
    "images/003.jpg": 16,
    "images/004.jpg": 83,
    "images/005.jpg": 52,
    "images/006.jpg": 94,
}


def record(pipeline, counts, seed=7):
    rng = random.Random(seed)
    for item, count in counts.items():
        record_views(pipeline.views, item, count, pipeline.settings.write_shards, rng)


def aggregates(pipeline):
    return {item: views for item, (views, _) in pipeline.board.scan_aggregates().items()}


def test_seed_example_top_three(make_pipeline):
    # Given the seed's six images and their views
    pipeline = make_pipeline(TopN="3")
    record(pipeline, SEED_EXAMPLE)
    # When the stream is aggregated and a snapshot taken
    response = pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    # Then the counts are exact and the top 3 is 006, 004, 005
    assert response == {"batchItemFailures": []}
    assert aggregates(pipeline) == SEED_EXAMPLE
    board = leaderboard_json(pipeline.board.get_snapshot("global"))
    assert [(e["rank"], e["id"], e["views"]) for e in board["items"]] == [
        (1, "images/006.jpg", 94),
        (2, "images/004.jpg", 83),
        (3, "images/005.jpg", 52),
    ]


def test_same_batch_delivered_twice_counts_once(pipeline):
    record(pipeline, {"x": 12, "a#1": 5, "ünï": 3})
    records = pipeline.stream_records()
    pipeline.aggregate(records)
    pipeline.aggregate(records)
    assert aggregates(pipeline) == pipeline.truth() == {"x": 12, "a#1": 5, "ünï": 3}
