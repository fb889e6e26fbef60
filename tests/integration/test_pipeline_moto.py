"""The whole pipeline on moto: real stream records, real handlers, exact counts against the base table's truth."""

from __future__ import annotations

import json
import random

from shardboard.domain.publishing.gather import Entry, top
from shardboard.domain.publishing.snapshot import leaderboard_json
from shardboard.domain.writing.recording import record_views

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
        record_views(pipeline.views, item, count, pipeline.settings.write_shards, rng, where=pipeline.where())


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


def test_overlapping_resplit_batches_count_once(pipeline):
    # Given a stream of 60 views
    record(pipeline, {"a": 25, "b": 20, "c": 15})
    records = pipeline.stream_records()
    # When bisect re-splits batches so that they overlap: first half, second half, then the whole batch again
    half = len(records) // 2
    pipeline.aggregate(records[:half])
    pipeline.aggregate(records[half // 2 :])
    pipeline.aggregate(records)
    # Then the counts are exact
    assert aggregates(pipeline) == pipeline.truth() == {"a": 25, "b": 20, "c": 15}


def test_a_batch_whose_third_write_fails_is_retried_exactly(pipeline):
    from botocore.exceptions import ClientError

    from shardboard.handlers import wiring

    # Given a batch touching five items, and a DynamoDB that fails the third aggregate write
    record(pipeline, {f"item-{i}": 3 + i for i in range(5)})
    records = pipeline.stream_records()
    calls = {"n": 0}

    def fail_third_write(params, **_):
        if params["TableName"] == pipeline.settings.board_table:
            calls["n"] += 1
            if calls["n"] == 3:
                raise ClientError({"Error": {"Code": "InternalServerError", "Message": "injected"}}, "UpdateItem")

    client = wiring.client()
    client.meta.events.register("provide-client-params.dynamodb.UpdateItem", fail_third_write)
    # When the batch is delivered
    response = pipeline.aggregate(records)
    # Then exactly the failed item's records are reported, and Lambda's retry from the lowest one is exact
    failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
    failed_items = {
        r["dynamodb"]["NewImage"]["item_id"]["S"] for r in records if r["dynamodb"]["SequenceNumber"] in failed
    }
    assert len(failed_items) == 1
    lowest = min(failed, key=int)
    retry = [r for r in records if int(r["dynamodb"]["SequenceNumber"]) >= int(lowest)]
    assert pipeline.aggregate(retry) == {"batchItemFailures": []}
    assert aggregates(pipeline) == pipeline.truth()


def test_a_skipped_record_is_healed_by_the_next_of_its_shard(make_pipeline):
    # Given one write shard, so every view of "x" is the same counter
    pipeline = make_pipeline(WriteShards="1")
    for _ in range(5):  # five requests of one view: five records (a request is one write)
        record(pipeline, {"x": 1})
    records = [r for r in pipeline.stream_records() if "item_id" in r["dynamodb"]["NewImage"]]
    # When the middle record is lost to the failure destination and the last one is not yet delivered
    pipeline.aggregate(records[:2] + records[3:4])
    assert aggregates(pipeline) == {"x": 4}
    # Then the next record of the shard carries the absolute value and heals the gap
    pipeline.aggregate(records[4:])
    assert aggregates(pipeline) == pipeline.truth() == {"x": 5}


def test_sample_event_skips_remove_and_foreign_records(pipeline, capsys):
    from tests.conftest import load_event

    # When the aggregator gets events/aggregate_stream_batch.json (what `sam local invoke -e` sends)
    response = pipeline.aggregate(load_event("aggregate_stream_batch.json")["Records"])
    # Then our counter records apply (absolute NEW values), the REMOVE and the foreign record are skipped and counted
    assert response == {"batchItemFailures": []}
    assert aggregates(pipeline) == {"images/001.jpg": 3, "images/004.jpg": 41, "a#1": 1}
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert [(m["RecordsSkipped"], m["GapsHealed"], m["ReplaysAbsorbed"]) for m in emf] == [([2.0], [1.0], [0.0])]


def test_random_workload_with_sparse_index_gives_the_exact_top_n(make_pipeline):
    # Given a skewed workload over 40 items, a board of 5 over 3 shards, sparse index on, D = N and no spares (T is
    # the 5th best; with SnapshotSpare R it is the (5+R)-th, tests/unit/test_rank_versions.py covers T from the D-th)
    pipeline = make_pipeline(TopN="5", BoardShards="3", WriteShards="4", RankDepth="5", SnapshotSpare="0")
    rng = random.Random(3)
    weights = [1 / (rank + 1) for rank in range(40)]
    for _ in range(4):
        views = rng.choices(range(40), weights, k=150)
        counts = {f"img-{i}": views.count(i) for i in set(views)}
        record(pipeline, counts, seed=rng.randrange(1000))
        records = pipeline.stream_records()
        for start in range(0, len(records), 97):  # batches, replaying the whole stream each round
            pipeline.aggregate(records[start : start + 97])
        pipeline.snapshot()
    # Then counts are exact, the snapshot is the brute-force top 5, and long-tail items never joined the index
    truth = pipeline.truth()
    assert aggregates(pipeline) == truth
    expected = top([Entry(id=i, views=v) for i, v in truth.items()], 5)
    assert list(pipeline.board.get_snapshot("global").items) == [(e.id, e.views) for e in expected]
    in_index = {item for item, (_, indexed) in pipeline.board.scan_aggregates().items() if indexed}
    assert len(in_index) < len(truth)
    assert pipeline.board.get_threshold("global") == expected[-1].views


def test_snapshot_is_written_only_when_its_content_changes(make_pipeline):
    pipeline = make_pipeline(TopN="3")
    record(pipeline, {"a": 3, "b": 2})
    pipeline.aggregate(pipeline.stream_records())
    first = pipeline.snapshot()
    again = pipeline.snapshot()
    assert (first["written"], first["version"]) == (True, 1)
    assert (again["written"], again["version"]) == (False, 1)
    record(pipeline, {"b": 2}, seed=8)
    pipeline.aggregate(pipeline.stream_records())
    changed = pipeline.snapshot()
    assert (changed["written"], changed["version"]) == (True, 2)
    stored = pipeline.board.get_snapshot("global")
    assert stored.items == (("b", 4), ("a", 3)) and stored.items_read == changed["items_read"] > 0


def test_counters_of_a_deleted_item_are_skipped_and_never_recreate_it(make_pipeline, caplog):
    # Given views of two items, written and streamed, and one of the items deleted before they are delivered
    pipeline = make_pipeline()
    record(pipeline, {"gone": 4, "kept": 3})
    records = [r for r in pipeline.stream_records() if "item_id" in r["dynamodb"]["NewImage"]]
    assert pipeline.runtime.items.set_deleted("gone", "cli:ed", "gdpr", "2026-11-23T17:00:00.000Z")
    # When the batch is delivered twice (a replay)
    for _ in range(2):
        assert pipeline.aggregate(records) == {"batchItemFailures": []}
    # Then the deleted item's counters are skipped with their reason (the batch never fails) and only the other
    # item is aggregated, exactly
    assert aggregates(pipeline) == {"kept": 3}
    skipped = [r for r in caplog.records if r.getMessage() == "stream record skipped"]
    assert skipped and {r.reason for r in skipped} == {"deleted"}


def test_the_snapshot_drops_a_deleted_item_like_a_hidden_one(make_pipeline):
    # Given three aggregated items, then the best one deleted and the second hidden
    pipeline = make_pipeline(TopN="3")
    record(pipeline, {"gone": 9, "veiled": 7, "kept": 3, "other": 1})
    pipeline.aggregate(pipeline.stream_records())
    pipeline.runtime.items.set_deleted("gone", "cli:ed", "gdpr", "2026-11-23T17:00:00.000Z")
    pipeline.runtime.items.set_hidden("veiled", True, "cli:ed", "spam", "2026-11-23T17:00:00.000Z")
    # When the snapshot job runs
    pipeline.snapshot()
    # Then neither is on the board, and the others keep their exact counts
    board = leaderboard_json(pipeline.board.get_snapshot("global"))
    assert [(e["id"], e["views"]) for e in board["items"]] == [("kept", 3), ("other", 1)]
