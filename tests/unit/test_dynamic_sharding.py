"""Dynamic write sharding (seed 004) in virtual time: throttle scope, growth, cooldown, back-off, shrink, the ramp."""

from __future__ import annotations

import itertools
import random

import pytest
from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import throttle_scope
from shardboard.domain.ports import ThrottleScope
from shardboard.domain.writing.dynamic_sharding import (
    ShardPolicy,
    ShardRouter,
    readable_shards,
    review_item,
)
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryShardMetadataStore
from shardboard_tools.scenarios.viral_ramp import RampSpec, run_viral_ramp


def throttle(code: str, *reasons: str) -> ClientError:
    response: dict = {"Error": {"Code": code, "Message": "throttled"}}
    if reasons:
        # botocore's model spells the member throttlingReasons on ThrottlingException only
        key = "throttlingReasons" if code == "ThrottlingException" else "ThrottlingReasons"
        response[key] = [{"reason": r, "resource": "arn:aws:dynamodb:::table/views"} for r in reasons]
    return ClientError(response, "UpdateItem")


@pytest.mark.parametrize(
    ("error", "scope"),
    [
        (throttle("ProvisionedThroughputExceededException", "TableWriteKeyRangeThroughputExceeded"), "partition"),
        (throttle("ThrottlingException", "TableWriteKeyRangeThroughputExceeded"), "partition"),
        (throttle("ProvisionedThroughputExceededException", "TableWriteProvisionedThroughputExceeded"), "table"),
        (throttle("ThrottlingException", "TableWriteAccountLimitExceeded"), "table"),
        (throttle("ThrottlingException", "TableWriteMaxOnDemandThroughputExceeded"), "table"),
        (throttle("ProvisionedThroughputExceededException"), "partition"),  # on-demand, no reasons: a partition
        (throttle("ThrottlingException"), "table"),
        (throttle("RequestLimitExceeded"), "table"),
        (throttle("ConditionalCheckFailedException"), None),
    ],
)
def test_throttle_scope_reads_throttling_reasons(error, scope):
    found = throttle_scope(error)
    assert (found.value if found else None) == scope


def test_policy_growth_and_shrink_steps():
    double = ShardPolicy(2, 20, 5)
    assert [double.grown(n) for n in (2, 4, 8, 16)] == [4, 8, 16, 20]
    add = ShardPolicy(2, 20, 5, growth="add")
    assert [add.grown(n) for n in (2, 4, 18)] == [4, 6, 20]
    # Half of 16 shards carries 3,000 views/s at 2x headroom (8 x 1,000 / 2 = 4,000); 5,000 views/s needs 10
    assert double.shrunk(16, 3000) == 8
    assert double.shrunk(16, 5000) is None
    assert double.shrunk(2, 0) is None  # never below the default
    assert not ShardPolicy(4, 4, 5).enabled


class Writers:
    """Many routers sharing one metadata store and one virtual clock, as Lambda containers share a table."""

    def __init__(self, count: int, policy: ShardPolicy) -> None:
        self.clock = VirtualClock(1_000.0)
        self.store = MemoryShardMetadataStore(CapacityEmulator(self.clock))
        self.routers = [ShardRouter(self.store, policy, self.clock, random.Random(n)) for n in range(count)]

    def all_throttled(self, item: str) -> None:
        for router in self.routers:
            router.throttled(item, ThrottleScope.PARTITION, router.shards(item))


def test_table_throttling_never_grows():
    writers = Writers(3, ShardPolicy(1, 64, 5))
    for _ in range(50):
        writers.clock.advance(1)
        for router in writers.routers:
            router.throttled("x", ThrottleScope.TABLE, 1)
    assert writers.store.get("x") is None
    assert sum(r.stats.table_throttles for r in writers.routers) == 150


def test_fifty_writers_make_at_most_one_change_per_cooldown_window():
    # Given 50 writers, all throttled on one item every 100 ms for a minute
    policy = ShardPolicy(1, 1024, cooldown_seconds=5)
    writers = Writers(50, policy)
    for _ in range(600):
        writers.clock.advance(0.1)
        writers.all_throttled("viral")
    # Then the count doubled step by step, never twice within a cooldown window
    metadata = writers.store.get("viral")
    history = metadata.history_counts()
    counts = [count for _, count in history]
    assert counts == [2**k for k in range(len(counts))]
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(history[1:])]  # history[0] is "0:default"
    assert gaps and min(gaps) >= policy.cooldown_seconds
    # ... each change waited the cooldown plus a back-off of at most 10 s, so it kept pace
    assert max(gaps) <= policy.cooldown_seconds + 10 + 1
    assert metadata.max_shards == counts[-1]
    assert sum(r.stats.increments for r in writers.routers) == len(counts) - 1


def test_a_writer_on_a_stale_count_retries_in_the_larger_range_without_growing():
    writers = Writers(2, ShardPolicy(1, 64, 5, backoff_seconds=(0, 0)))
    first, second = writers.routers
    assert second.shards("hot") == 1  # cached: no metadata yet
    first.throttled("hot", ThrottleScope.PARTITION, 1)
    assert writers.store.get("hot").number_of_shards == 2
    # The second writer was throttled while drawing from 1 shard: it re-reads, sees 2, and does not grow
    writers.clock.advance(10)
    second.throttled("hot", ThrottleScope.PARTITION, 1)
    assert second.shards("hot") == 2
    assert second.stats.increments == 0 and writers.store.get("hot").number_of_shards == 2


def test_optimistic_lock_refuses_a_change_based_on_an_old_read():
    clock = VirtualClock(100.0)
    store = MemoryShardMetadataStore(CapacityEmulator(clock))
    grown = store.change_count("a", None, 4, 100, cooldown_seconds=5, default=2)
    assert grown is not None and grown.history == frozenset({"0:2", "100:4"})
    # Within the cooldown: refused even with the current version in hand
    assert store.change_count("a", grown, 8, 103, cooldown_seconds=5, default=2) is None
    assert store.change_count("a", grown, 8, 105, cooldown_seconds=5, default=2) is not None
    # With the old version: refused (someone changed it since)
    assert store.change_count("a", grown, 16, 200, cooldown_seconds=5, default=2) is None
    # A second "first" grow is refused too
    assert store.change_count("a", None, 4, 300, cooldown_seconds=5, default=2) is None


def test_shrink_needs_a_long_quiet_spell_and_readers_keep_every_shard():
    clock = VirtualClock(0.0)
    store = MemoryShardMetadataStore(CapacityEmulator(clock))
    policy = ShardPolicy(1, 64, 5, shrink_after_seconds=600)
    store.change_count("v", None, 32, 10, cooldown_seconds=5, default=1)
    views, now = 0, 10
    shrunk_at = []
    # 20,000 views/s for 5 minutes, then 100 views/s for 25 minutes; a review every minute
    for minute in range(1, 31):
        rate = 20_000 if minute <= 5 else 100
        views += rate * 60
        now += 60
        outcome = review_item(store, store.get("v"), views, now, policy)
        if outcome.shrunk_to:
            shrunk_at.append((minute, outcome.shrunk_to))
    metadata = store.get("v")
    # The first shrink comes after 10 minutes of low traffic (minutes 6-15), the next after 10 more at 16 shards
    assert shrunk_at == [(15, 16), (25, 8)]
    assert metadata.number_of_shards == 8
    # Readers of all shards still read the 32 that ever took writes
    assert readable_shards(metadata, 1) == 32 == metadata.max_shards


@pytest.mark.slow  # a scenario run of ~30 s: the slow tier, not the unit tier
def test_viral_ramp_shortened_run():
    # Given the ramp at 1/10 scale (partition limit 100 units/s, 10 -> 2,000 views/s in 120 s, then 20 s at peak)
    result = run_viral_ramp(RampSpec(ramp_seconds=120, hold_seconds=20).scaled(10))
    details = result.details
    # Then shards doubled until throttling stopped, before the load stopped rising
    assert result.max_shards == 32 and result.increments == 5
    assert result.throttled_after_ramp == 0
    assert details["last_throttle_at"] <= 120
    # ... every throttling episode ended within cooldown + maximum back-off + refresh + one retry (17 s)
    assert details["longest_throttling_episode_s"] <= 17
    # ... 50 writers never changed the count twice within a cooldown window
    assert result.cooldown_violations == 0
    # ... every offered view is counted exactly, and the long tail kept the default
    assert result.exact and all(details["exactness"].values())
    assert details["tail_max_shards"] == 1 and details["tail_throttled_requests"] == 0
    assert result.peak_views_per_s >= 2000
    # ... the metadata key stayed far below a partition's 3,000 read units/s (at 1/10 scale: 300)
    assert details["metadata_peak_read_units_per_s"] < 100


@pytest.mark.slow  # a scenario run of ~30 s: the slow tier, not the unit tier
def test_bench_viral_ramp_json(monkeypatch, tmp_path):
    import json

    from click.testing import CliRunner

    from shardboard_tools.cli import main
    from shardboard_tools.scenarios import report

    # A small ramp through the real command: the JSON has exactly issue 7's keys, and the chart is written
    # (what `shardboard` sets for a terminal, scoped to this test so later tests still see their metrics)
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    small = RampSpec(ramp_seconds=40, hold_seconds=5, tail_items=20).scaled(10)
    monkeypatch.setitem(report.SCENARIOS, "viral-ramp", small)
    result = CliRunner().invoke(
        main, ["bench", "--scenario", "viral-ramp", "--json", "--out", str(tmp_path)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(figures) == {
        "peak_views_per_s",
        "max_shards",
        "seconds_to_stop_throttling",
        "throttled_after_ramp",
        "increments",
        "cooldown_violations",
        "exact",
    }
    assert figures["exact"] is True and figures["cooldown_violations"] == 0
    assert (tmp_path / "viral-ramp.png").stat().st_size > 0
    assert json.loads((tmp_path / "viral-ramp.json").read_text())["details"]["tail_max_shards"] == 1
