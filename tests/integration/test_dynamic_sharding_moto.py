"""Dynamic write sharding against DynamoDB's expressions (moto): metadata table, growth on throttling, readers."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import replace

from shardboard.adapters.keys import ITEM_ID, SHARD
from shardboard.adapters.shards_table import ShardMetadataStore
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard.domain.writing.dynamic_sharding import ShardRouter, readable_shards
from shardboard.domain.writing.recording import record_views
from shardboard_tools.capacity.emulator import VirtualClock
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.operations.verification import verify
from tests.conftest import load_event


def metadata_store(pipeline) -> ShardMetadataStore:
    return ShardMetadataStore(pipeline.runtime.dynamodb, pipeline.settings.shards_table)


def test_metadata_conditions_on_dynamodb(pipeline):
    store = metadata_store(pipeline)
    assert store.get("a") is None
    grown = store.change_count("a", None, 4, 1_000, cooldown_seconds=5, default=2)
    assert (grown.number_of_shards, grown.max_shards, grown.last_updated) == (4, 4, 1_000)
    assert grown.history == frozenset({"0:2", "1000:4"})
    # Cooldown checked by the condition, then the optimistic lock on last_updated
    assert store.change_count("a", grown, 8, 1_004, cooldown_seconds=5, default=2) is None
    again = store.change_count("a", grown, 8, 1_005, cooldown_seconds=5, default=2)
    assert again is not None and again.max_shards == 8
    assert store.change_count("a", grown, 16, 2_000, cooldown_seconds=5, default=2) is None
    assert store.change_count("a", None, 4, 3_000, cooldown_seconds=5, default=2) is None
    # A shrink keeps the maximum for readers
    smaller = store.change_count("a", again, 4, 3_000, cooldown_seconds=5, default=2)
    assert (smaller.number_of_shards, smaller.max_shards) == (4, 8)
    assert readable_shards(store.get("a", consistent=True), 2) == 8
    store.note_review(smaller, 1234, 3_060, 3_000)
    reviewed = store.get("a", consistent=True)
    assert (reviewed.reviewed_views, reviewed.reviewed_at, reviewed.quiet_since) == (1234, 3_060, 3_000)
    store.note_review(reviewed, 1300, 3_120, None)
    assert store.get("a", consistent=True).quiet_since is None
    assert [m.item_id for m in store.scan()] == ["a"]


class HotShardZero(ViewStore):
    """A base table whose shard 0 of every item is at its partition limit (the adapter's Throttled outcome)."""

    def add_view(
        self, item_id: str, shard: int, count: int = 1, bucket: str = "all", boards: Sequence[str] = ()
    ) -> float:
        if shard == 0:
            raise Throttled(ThrottleScope.PARTITION)
        return super().add_view(item_id, shard, count, bucket, boards)


def test_a_partition_throttle_grows_the_item_and_every_view_is_counted(make_pipeline):
    # Given one default write shard that is throttled, and a writer with a virtual clock
    pipeline = make_pipeline(WriteShards="1", MaxWriteShards="16", ShardCooldownSeconds="5")
    clock = VirtualClock(1_000_000.0)
    policy = replace(pipeline.settings.shard_policy, backoff_seconds=(0.0, 0.0))
    router = ShardRouter(metadata_store(pipeline), policy, clock, random.Random(4))
    views = HotShardZero(pipeline.runtime.dynamodb, pipeline.settings.views_table)
    # When 30 views arrive one per second (throttled attempts wait, in virtual time, and retry)
    for _ in range(30):
        record_views(views, "hot", 1, 1, random.Random(4), router=router, sleep=clock.advance, where=pipeline.where())
        clock.advance(1.0)
    # Then the item grew past the hot shard, every view landed, and readers of all shards see them
    metadata = metadata_store(pipeline).get("hot", consistent=True)
    assert metadata.number_of_shards >= 2 and router.stats.increments >= 1
    assert router.stats.partition_throttles >= 1
    assert pipeline.views.item_total("hot", readable_shards(metadata, 1)) == 30
    assert pipeline.aggregate(pipeline.stream_records()) == {"batchItemFailures": []}
    assert verify(pipeline.views, pipeline.board, pipeline.settings).exact


def test_post_views_uses_the_grown_range(make_pipeline):
    # Given an item whose metadata says 4 shards (the template's default is 1)
    pipeline = make_pipeline(WriteShards="1", MaxWriteShards="8")
    metadata_store(pipeline).change_count("images/001.jpg", None, 4, 1, cooldown_seconds=5, default=1)
    from shardboard.handlers import record_views as handler

    # When the HTTP API takes 20 requests of 2 views each (a request is one write, on one shard)
    event = load_event("record_views_post.json")
    event["body"] = json.dumps({"id": "images/001.jpg", "count": 2})
    for _ in range(20):
        assert pipeline.runtime.invoke(handler.handler, event)["statusCode"] == 202
    # Then they spread over shards 0-3, not just the default shard 0
    items = pipeline.runtime.dynamodb.scan(TableName=pipeline.settings.views_table)["Items"]
    shards = {int(i[SHARD]["N"]) for i in items if i[ITEM_ID]["S"] == "images/001.jpg"}
    assert shards <= {0, 1, 2, 3} and len(shards) > 1
    assert pipeline.views.item_total("images/001.jpg", 4) == 40


def test_runtime_has_no_router_when_dynamic_sharding_is_off():
    runtime = Runtime.from_template(parameters={"WriteShards": "20", "MaxWriteShards": "20"})
    assert runtime.router is None
