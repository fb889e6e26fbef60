"""The key scheme and the reading of stream records: ids are never parsed back out of keys."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardboard.adapters.keys import aggregate_pk, view_pk
from shardboard.adapters.stream_records import UnexpectedRecord, view_record
from shardboard.domain.sharding import board_shard_of, board_shard_value, write_shards_needed
from shardboard.settings import ConfigError, Settings, schedule_seconds


@given(st.text(min_size=1), st.integers(0, 999), st.text(min_size=1), st.integers(0, 999))
def test_view_keys_are_distinct_for_distinct_items_and_shards(a, shard_a, b, shard_b):
    if (a, shard_a) != (b, shard_b):
        assert view_pk(a, shard_a) != view_pk(b, shard_b)


def test_tricky_ids_stay_distinct():
    ids = ["a#1", "a", "1#a", "a#1#2", "x/y.jpg", "ünï", "a b"]
    keys = {view_pk(i, s) for i in ids for s in range(3)}
    assert len(keys) == len(ids) * 3
    assert len({aggregate_pk(i) for i in ids}) == len(ids)


@given(st.text(min_size=1), st.integers(1, 64))
def test_board_shard_is_stable_and_in_range(item, shards):
    assert 0 <= board_shard_of(item, shards) == board_shard_of(item, shards) < shards


def test_board_shards_spread_items_evenly():
    counts = [0] * 10
    for i in range(10_000):
        counts[board_shard_of(f"images/{i:05d}.jpg", 10)] += 1
    assert max(counts) < 1100 and min(counts) > 900
    assert board_shard_value("global", 3, 10) == "global#10#3"
    assert board_shard_value("global", 3, 10) != board_shard_value("global", 3, 20)


def test_seed_001_formula():
    # seed 001: 5,000 writes/s of 1 KB items need 5 shards; x2 headroom -> 10
    assert write_shards_needed(5000, 1, headroom=1) == 5
    assert write_shards_needed(5000, 1) == 10
    assert write_shards_needed(10_000, 2.5) == 60  # ceil(2.5 KB) = 3 units per write
    assert write_shards_needed(0) == 1


def image(item: str, shard: int, views: int) -> dict:
    return {"pk": view_pk(item, shard), "item_id": item, "shard": Decimal(shard), "views": Decimal(views)}


def test_insert_and_modify_records_become_counter_steps():
    assert view_record("INSERT", image("a#1", 2, 1), None, "9").old == 0
    step = view_record("MODIFY", image("x/y.jpg", 4, 8), image("x/y.jpg", 4, 7), "10")
    assert (step.item_id, step.shard, step.old, step.new, step.sequence_number) == ("x/y.jpg", 4, 7, 8, "10")


@pytest.mark.parametrize(
    ("event", "new", "old", "reason"),
    [
        ("REMOVE", None, image("a", 1, 3), "remove"),
        ("UNKNOWN", image("a", 1, 3), None, "unknown_event"),
        ("INSERT", None, None, "missing_image"),
        ("MODIFY", image("a", 1, 3), None, "missing_image"),
        ("INSERT", {"pk": "view#1#a"}, None, "missing_attribute"),
        ("INSERT", {**image("a", 1, 3), "views": "3"}, None, "missing_attribute"),
        ("INSERT", {**image("a", 1, 3), "shard": Decimal("1.5")}, None, "missing_attribute"),
        ("INSERT", {**image("a", 1, 3), "views": Decimal(-1)}, None, "missing_attribute"),
        ("INSERT", {**image("a", 1, 3), "pk": "orders#1"}, None, "foreign_key"),
        ("INSERT", {"Id": Decimal(101), "Message": "New item!"}, None, "missing_attribute"),
        ("MODIFY", image("a", 1, 3), {**image("a", 1, 2), "views": "x"}, "missing_attribute"),
    ],
)
def test_unexpected_records_name_their_reason(event, new, old, reason):
    with pytest.raises(UnexpectedRecord) as caught:
        view_record(event, new, old, "1")
    assert caught.value.reason == reason


def test_schedule_seconds():
    assert schedule_seconds("rate(1 minute)") == 60
    assert schedule_seconds("rate(5 minutes)") == 300
    assert schedule_seconds("rate(2 hours)") == 7200
    assert schedule_seconds("cron(0 * * * ? *)") == 3600  # hourly (was answered 60 for every cron)


def test_settings_from_env_override_defaults():
    base = Settings(top_n=7)
    settings = Settings.from_env({"TOP_N": "3", "SPARSE_INDEX": "false"}, defaults=base)
    assert (settings.top_n, settings.sparse_index, settings.board_shards) == (3, False, base.board_shards)
    with pytest.raises(ConfigError):
        Settings.from_env({"TOP_N": "many"})
    with pytest.raises(ConfigError):
        Settings(board="a#b")
