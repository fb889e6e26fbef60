"""The key scheme and the reading of stream records: ids are never parsed back out of keys."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardboard.adapters.keys import aggregate_pk, entry_pk, view_pk
from shardboard.adapters.stream_records import UnexpectedRecord, view_records
from shardboard.domain.sharding import board_shard_of, board_shard_value, write_shards_needed
from shardboard.settings import ConfigError, Settings, schedule_seconds

buckets = st.sampled_from(["all", "2026-11-23", "2026-11-24", "2026-W48", "2026-11", "2026-11-23T14"])
boards = st.from_regex(r"[a-z0-9_.:-]{1,8}", fullmatch=True)


@given(st.text(min_size=1), st.integers(0, 999), buckets, st.text(min_size=1), st.integers(0, 999), buckets)
def test_view_keys_are_distinct_for_distinct_items_shards_and_buckets(  # noqa: PLR0917 - hypothesis arguments
    a, shard_a, bucket_a, b, shard_b, bucket_b
):
    if (a, shard_a, bucket_a) != (b, shard_b, bucket_b):
        assert view_pk(a, shard_a, bucket_a) != view_pk(b, shard_b, bucket_b)


@given(boards, st.text(min_size=1), boards, st.text(min_size=1))
def test_aggregate_keys_are_distinct_for_distinct_boards_and_items(board_a, a, board_b, b):
    # Board names hold no '#', so the board part of a key ends at its first '#' whatever the id holds.
    if (board_a, a) != (board_b, b):
        assert aggregate_pk(board_a, a) != aggregate_pk(board_b, b)
        assert entry_pk(board_a, "day", "2026-11-23", a) != entry_pk(board_b, "day", "2026-11-23", b)


def test_tricky_ids_stay_distinct():
    ids = ["a#1", "a", "1#a", "a#1#2", "x/y.jpg", "ünï", "a b"]
    keys = {view_pk(i, s, "2026-11-23") for i in ids for s in range(3)}
    assert len(keys) == len(ids) * 3
    assert len({aggregate_pk("global", i) for i in ids} | {aggregate_pk("cats", i) for i in ids}) == 2 * len(ids)


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


def image(item: str, shard: int, views: int, bucket: str = "2026-11-23", **boards: int) -> dict:
    found = {"pk": view_pk(item, shard, bucket), "item_id": item, "shard": Decimal(shard), "bucket": bucket}
    return {**found, "views": Decimal(views), **{f"b:{name}": Decimal(n) for name, n in boards.items()}}


def test_insert_and_modify_records_become_counter_steps():
    (step,) = view_records("INSERT", image("a#1", 2, 1), None)
    assert (step.board, step.bucket, step.old, step.new) == ("global", "2026-11-23", 0, 1)
    (step,) = view_records("MODIFY", image("x/y.jpg", 4, 8), image("x/y.jpg", 4, 7))
    assert (step.item_id, step.shard, step.old, step.new) == ("x/y.jpg", 4, 7, 8)


def test_a_record_yields_one_step_per_board_counter_that_moved():
    new, old = image("a", 1, 5, cats=3, bw=2), image("a", 1, 4, cats=2, bw=2)
    steps = view_records("MODIFY", new, old)
    assert sorted((s.board, s.old, s.new) for s in steps) == [("cats", 2, 3), ("global", 4, 5)]
    first = view_records("INSERT", image("a", 1, 1, cats=1), None)
    assert sorted((s.board, s.old, s.new) for s in first) == [("cats", 0, 1), ("global", 0, 1)]


@pytest.mark.parametrize(
    ("event", "new", "old", "reason"),
    [
        ("REMOVE", None, image("a", 1, 3), "remove"),
        ("UNKNOWN", image("a", 1, 3), None, "unknown_event"),
        ("INSERT", None, None, "missing_image"),
        ("MODIFY", image("a", 1, 3), None, "missing_image"),
        ("INSERT", {"pk": "view#1#a"}, None, "missing_attribute"),
        ("INSERT", {k: v for k, v in image("a", 1, 3).items() if k != "bucket"}, None, "missing_attribute"),
        ("INSERT", {**image("a", 1, 3), "views": "3"}, None, "missing_attribute"),
        ("INSERT", {**image("a", 1, 3), "shard": Decimal("1.5")}, None, "missing_attribute"),
        ("INSERT", {**image("a", 1, 3), "views": Decimal(-1)}, None, "missing_attribute"),
        ("INSERT", {**image("a", 1, 3), "pk": "orders#1"}, None, "foreign_key"),
        ("INSERT", {"Id": Decimal(101), "Message": "New item!"}, None, "missing_attribute"),
        ("MODIFY", image("a", 1, 3), {**image("a", 1, 2), "views": "x"}, "missing_attribute"),
        ("INSERT", {"pk": "seen#29#2#u1#a", "expires_at": Decimal(1), "tok": "t"}, None, "dedupe_marker"),
        ("MODIFY", {"pk": "rate#29#ip#203.0.113.7", "used": Decimal(2)}, {"used": Decimal(1)}, "rate_allowance"),
        ("INSERT", {"pk": "idem#k-1", "expires_at": Decimal(1), "fp": "f", "ans": "counted"}, None, "idempotency_key"),
        ("MODIFY", {"pk": "writers#", "last_writer": Decimal(2)}, {"last_writer": Decimal(1)}, "writer_registry"),
    ],
)
def test_unexpected_records_name_their_reason(event, new, old, reason):
    with pytest.raises(UnexpectedRecord) as caught:
        view_records(event, new, old)
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
    assert Settings.from_env({"PERIODS": "week,hour"}).periods == ("hour", "week")
    assert Settings.from_env({"PERIODS": ""}).anchor == "all"
    with pytest.raises(ConfigError):
        Settings.from_env({"PERIODS": "fortnight"})
