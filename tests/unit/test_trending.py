"""Trending against a brute force: every stored score of every epoch is the weighted sum of its item's views (each
hour's views times that hour's weight), however late, out of order or replayed the stream delivers them, and every
epoch's head is the exact top N by score (ties by id)."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain.periods import (
    PeriodError,
    bucket_of,
    expires_at,
    is_bucket,
    iso,
    parse_periods,
    period_from_bucket,
    previous_bucket,
    retained_buckets,
)
from shardboard.domain.ports import PeriodKey
from shardboard.domain.trending import (
    HALF_LIVES_PER_EPOCH,
    PRECISION_BITS,
    TRENDING,
    carried_score,
    largest_score,
    weights,
)
from shardboard.domain.windows import RECENT
from shardboard.schema import Leaderboard
from shardboard.services import counts
from shardboard.services.snapshots import refresh_changed
from shardboard.settings import ConfigError, Settings
from shardboard_tools.operations.recovery import RebuildProgress, rebuild
from shardboard_tools.operations.verification import stored, verify
from tests.conftest import examples
from tests.unit.test_boards_periods import BOARDS, ITEMS, World, deliver_at_least_once

YEAR_ONE = datetime(1, 1, 1, tzinfo=UTC)
# Monday 2026-11-30 00:00 UTC: an epoch's landmark at a 6-hour half-life (7-day epochs counted from 0001-01-01, a
# Monday) and at a 1-hour one (28-hour epochs: 17,750,016 hours after 0001-01-01 is a multiple of 28).
EDGE = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)


def brute_weight(moment: datetime, half_life: int) -> tuple[str, int]:
    """The epoch (its landmark hour's id) and the weight of a view at ``moment``, from first principles."""
    hours = (moment - YEAR_ONE) // timedelta(hours=1)
    epoch = HALF_LIVES_PER_EPOCH * half_life
    landmark = YEAR_ONE + timedelta(hours=hours // epoch * epoch)
    with localcontext() as context:
        context.prec = 60
        weight = int((Decimal(2) ** (PRECISION_BITS + Decimal(hours % epoch) / half_life)).to_integral_value())
    return landmark.strftime("%Y-%m-%dT%H"), weight


# -- the weights and the epoch


@pytest.mark.parametrize("half_life", [1, 2, 6, 24])
def test_weights_are_the_rounded_powers_and_stay_far_below_38_digits(half_life):
    table = weights(half_life)
    assert len(table) == HALF_LIVES_PER_EPOCH * half_life
    assert table[0] == 2**PRECISION_BITS
    for hour, weight in enumerate(table):
        assert weight == brute_weight(YEAR_ONE + timedelta(hours=hour), half_life)[1]
    # The magnitude argument: 10^12 views all in the last hour stay below DynamoDB's 10^38.
    assert largest_score(10**12, half_life) < 10**31
    # A view of the last hour carried into the next epoch keeps about P bits.
    assert carried_score(table[-1]) >= 2 ** (PRECISION_BITS - 1)


def test_an_epoch_is_28_half_lives_named_by_its_landmark_hour():
    moment = datetime(2026, 11, 26, 17, 5, tzinfo=UTC)
    assert bucket_of(TRENDING, moment) == "2026-11-23T00"  # 6 h: epochs are the ISO weeks
    period = period_from_bucket(TRENDING, "2026-11-23T00")
    assert period.as_json() == {"kind": "trending", "start": "2026-11-23T00:00:00Z", "end": "2026-11-30T00:00:00Z"}
    assert bucket_of(TRENDING, moment, half_life=1) == brute_weight(moment, 1)[0]
    assert period_from_bucket(TRENDING, bucket_of(TRENDING, moment, half_life=1), half_life=1).end is not None
    assert is_bucket(TRENDING, "2026-11-23T00") and not is_bucket(TRENDING, "2026-11-23T06")
    assert previous_bucket(TRENDING, "2026-11-23T00") == "2026-11-16T00"
    assert retained_buckets(TRENDING, moment, 2) == ["2026-11-23T00", "2026-11-16T00", "2026-11-09T00"]
    four_weeks_after_its_end = int(datetime(2026, 12, 28, tzinfo=UTC).timestamp())
    assert expires_at(TRENDING, "2026-11-23T00", 4) == four_weeks_after_its_end
    # Ids sort in time order.
    ids = [bucket_of(TRENDING, EDGE + timedelta(hours=h), half_life=1) for h in range(-200, 200, 7)]
    assert ids == sorted(ids)


def test_trending_implies_hour():
    assert parse_periods("day,week,trending") == ("hour", "day", "week", "trending")
    assert Settings(periods=("day", "trending")).periods == ("hour", "day", "trending")
    assert Settings(periods=("trending",)).anchor == "hour"
    with pytest.raises(PeriodError):
        parse_periods("decayed")
    with pytest.raises(ConfigError):
        Settings(trending_half_life_hours=0)
    # and keeps at least the 24 hours its entries' recent views read, whatever the hours' retention says
    assert Settings(periods=("trending",), retention_hours=6).policy.periods.kept("hour") == 24
    assert Settings(periods=("day",), retention_hours=6).policy.periods.kept("hour") == 6


def test_one_view_per_hour_weighs_its_hour():
    config = Settings(periods=("trending",), write_concurrency=1)
    world = World(config)
    world.record("a", ("cats",), EDGE - timedelta(minutes=30), 0)  # the last hour of the epoch before
    world.record("a", ("cats",), EDGE + timedelta(hours=7, minutes=1), 1)  # hour 7 of the new one
    world.deliver(world.shards[0] + world.shards[1] + world.shards[2])
    found, _ = stored(world.board, config)
    assert found[PeriodKey("cats", TRENDING, "2026-11-23T00")] == {"a": weights(6)[-1]}
    assert found[PeriodKey("cats", TRENDING, "2026-11-30T00")] == {"a": weights(6)[7]}
    assert found[PeriodKey("cats", "all", "all")] == {"a": 2}


# -- the whole pipeline against the brute force

views_strategy = st.lists(
    st.tuples(
        st.sampled_from(ITEMS),
        st.lists(st.sampled_from(BOARDS), max_size=2, unique=True).map(tuple),
        st.integers(-40, 40),  # hours from EDGE, an epoch boundary (several for a 1-hour half-life)
        st.integers(0, 2),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=examples(40), deadline=None)
@given(
    views=views_strategy,
    seed=st.integers(0, 10**6),
    half_life=st.sampled_from([1, 6]),
    periods=st.sampled_from([("trending",), ("day", "trending"), ("hour", "week", "month", "trending")]),
    top_n=st.integers(1, 4),
)
def test_every_epoch_score_is_the_weighted_sum_and_every_head_the_top_by_score(views, seed, half_life, periods, top_n):
    # Given views of random items on random boards at random hours around an epoch boundary
    config = Settings(
        periods=periods, trending_half_life_hours=half_life, write_concurrency=1, top_n=top_n, category_top_n=top_n
    )
    world = World(config)
    expected: dict[PeriodKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for item, boards, hours, shard, count in views:
        at = EDGE + timedelta(hours=hours, minutes=30)
        world.record(item, boards, at, shard, count)
        epoch, weight = brute_weight(at, half_life)
        for board in ("global", *boards):
            expected[PeriodKey(board, TRENDING, epoch)][item] += count * weight
    # When the stream is delivered at least once, late and out of order across stream shards, with replays
    deliver_at_least_once(world, random.Random(seed))
    # Then every stored score of every epoch equals the brute-force weighted sum
    found, _ = stored(world.board, config)
    scores = {p: {i: v for i, v in c.items() if v} for p, c in found.items() if p.kind == TRENDING and any(c.values())}
    assert scores == {p: dict(c) for p, c in expected.items()}
    # And after a refresh, every epoch's head is the brute-force top N by its score plus the epoch before's carried
    # (decayed by 2^28), ties by id
    refresh_changed(world.board, config, always=[PeriodKey("global", "all", "all")])
    for period, truth in expected.items():
        snapshot = world.board.get_snapshot(period)
        assert snapshot is not None, period
        before = expected.get(period._replace(bucket=previous_bucket(TRENDING, period.bucket, half_life=half_life)), {})
        ranked = {
            item: truth.get(item, 0) + carried_score(before.get(item, 0)) for item in truth.keys() | before.keys()
        }
        best = sorted(((i, v) for i, v in ranked.items() if v), key=lambda entry: (-entry[1], entry[0]))[:top_n]
        assert list(snapshot.items) == best, period
    # And verify, whose truth weighs each hour, finds the stack exact
    report = verify(world.views, world.board, config)
    assert report.exact, (report.differences, report.index_misses)
    assert not report.snapshots_inexact


def test_a_lost_aggregate_the_stream_recreated_gets_its_weighted_history_back():
    # Given an item viewed in three hours of one epoch: two past hours archived in entries, the last in the aggregate
    config = Settings(periods=("trending",), write_concurrency=1)
    world = World(config)
    hours = [EDGE + timedelta(hours=h, minutes=5) for h in (3, 4, 5)]
    for views, at in zip((10, 20, 30), hours, strict=True):
        world.record("x", (), at, 0, views)
        world.deliver([record for lane in world.shards for record in lane])
        world.shards = [[], [], []]
    # When the aggregate is lost, the stream recreates it from the last hour's next view, and a late view of the
    # hour before moves that hour's entry and the recreated aggregate together
    world.board.delete_aggregate("x")
    world.record("x", (), hours[2], 1, 5)
    world.record("x", (), hours[1], 1, 2)
    world.deliver([record for lane in world.shards for record in lane])
    # Then rebuild adds back exactly the surviving entries' views, each weighed by its own hour, in the epoch's score
    rebuild(world.views, world.board, config, RebuildProgress.fresh(1))
    found, _ = stored(world.board, config)
    w = weights(6)
    assert found[PeriodKey("global", TRENDING, "2026-11-30T00")] == {"x": 10 * w[3] + 22 * w[4] + 35 * w[5]}
    assert verify(world.views, world.board, config).exact


# -- recent views: an entry's views in the last hour and the last 24, beside its score


def recent_truth(
    views: list[tuple[str, tuple[str, ...], datetime, int]], board: str, at: datetime
) -> dict[str, tuple[int, ...]]:
    """Per item, its views on ``board`` in each RECENT window read at ``at`` (whole hours before plus the current)."""
    hour = at.replace(minute=0, second=0, microsecond=0)
    truth: dict[str, list[int]] = defaultdict(lambda: [0] * len(RECENT))
    for item, boards, moment, count in views:
        if board != "global" and board not in boards:
            continue
        for n, window in enumerate(RECENT):
            if hour - timedelta(hours=window.hours) <= moment < hour + timedelta(hours=1):
                truth[item][n] += count
    return {item: tuple(counts) for item, counts in truth.items()}


@settings(max_examples=examples(30), deadline=None)
@given(
    first=views_strategy,
    late=views_strategy,
    seed=st.integers(0, 10**6),
    reads=st.lists(st.integers(-2 * 60, 42 * 60), min_size=2, max_size=4),
    boards_kept=st.sampled_from([1, counts.BOARDS_KEPT]),
)
def test_every_trending_entry_shows_its_exact_views_in_the_last_hour_and_day(first, late, seed, reads, boards_kept):
    # Given views around an epoch boundary, delivered at least once and out of order, the job refreshing at random
    # minutes (hour edges included), then more views of any hour (late ones too) and refreshes at other minutes; the
    # job's memory of hour counts holding every board, or one (the others evicted)
    kept, counts.BOARDS_KEPT = counts.BOARDS_KEPT, boards_kept
    try:
        check_recent_views(first, late, seed, reads)
    finally:
        counts.BOARDS_KEPT = kept


def check_recent_views(first, late, seed, reads) -> None:
    config = Settings(periods=("day", "trending"), write_concurrency=1, top_n=3, category_top_n=3)
    world = World(config)
    seen: list[tuple[str, tuple[str, ...], datetime, int]] = []
    rng = random.Random(seed)
    for batch, minutes in ((first, reads[: len(reads) // 2]), (late, reads[len(reads) // 2 :])):
        for item, boards, hours, shard, count in batch:
            at = EDGE + timedelta(hours=hours, minutes=rng.choice((0, 30, 59)))
            world.record(item, boards, at, shard, count)
            seen.append((item, boards, at, count))
        deliver_at_least_once(world, rng)
        for minute in minutes:
            now = EDGE + timedelta(minutes=minute)
            run = refresh_changed(world.board, config, iso(now), always=[PeriodKey("global", "all", "all")])
            # Then every trending head written shows, for each entry, its exact views in the last hour and 24 hours
            for period, result in run.results.items():
                if period.kind != TRENDING or not result.written:
                    continue
                head = result.snapshot
                truth = recent_truth(seen, period.board, now)
                assert {row.id: tuple(head.recent[row.id]) for row in head.items} == {
                    row.id: truth.get(row.id, (0, 0)) for row in head.items
                }, (period, now)
                entries = Leaderboard.of_snapshot(head).as_json()["items"]
                assert all(
                    entry["recent"] == dict(zip(("1h", "24h"), head.recent[entry["id"]], strict=True))
                    for entry in entries
                )


def test_a_trending_entry_shows_its_score_as_views_now():
    # Given one view in the landmark hour of an epoch and two in the hour six hours later (one half-life)
    config = Settings(periods=("trending",), write_concurrency=1)
    world = World(config)
    world.record("a", (), EDGE + timedelta(minutes=30), 0)
    world.record("b", (), EDGE + timedelta(hours=6, minutes=30), 0, 2)
    world.deliver(world.shards[0] + world.shards[1] + world.shards[2])
    # When the job refreshes the epoch at the end of that later hour's start
    run = refresh_changed(world.board, config, iso(EDGE + timedelta(hours=6)))
    head = run.results[PeriodKey("global", TRENDING, "2026-11-30T00")].snapshot
    # Then entries are ranked by score, shown as views now: b's two views count 2, a's one view, a half-life old, 1/2
    items = Leaderboard.of_snapshot(head).as_json()["items"]
    assert [(e["id"], e["rank"], e["score"], e["views"]) for e in items] == [("b", 1, 2.0, 2), ("a", 2, 0.5, 0)]


def test_the_head_after_a_late_epoch_is_refreshed_again_until_it_is_written():
    # Given heads of two epochs: b leads the first, a the second
    config = Settings(periods=("trending",), write_concurrency=1, top_n=2)
    world = World(config)
    world.record("b", (), EDGE - timedelta(hours=1, minutes=30), 0, 3)
    world.record("a", (), EDGE + timedelta(hours=1, minutes=30), 0)
    world.deliver(world.shards[0] + world.shards[1] + world.shards[2])
    now = iso(EDGE + timedelta(hours=2))
    refresh_changed(world.board, config, now)
    after = PeriodKey("global", TRENDING, "2026-11-30T00")
    # When a late view of the first epoch arrives and the head after it (which carries its scores) fails to write
    world.shards = [[], [], []]
    world.record("c", (), EDGE - timedelta(hours=1, minutes=10), 1, 5)
    world.deliver(world.shards[0] + world.shards[1] + world.shards[2])
    put_snapshot = world.board.put_snapshot

    def refused(snapshot, previous_version):  # type: ignore[no-untyped-def]
        if snapshot.bucket == after.bucket:
            raise RuntimeError("throttled")
        return put_snapshot(snapshot, previous_version)

    world.board.put_snapshot = refused  # type: ignore[method-assign]
    failed = refresh_changed(world.board, config, now)
    assert list(failed.failures) == [after] and verify(world.views, world.board, config).snapshots_inexact
    # Then the next run, with no new view, refreshes it: the late epoch kept its mark
    world.board.put_snapshot = put_snapshot  # type: ignore[method-assign]
    run = refresh_changed(world.board, config, now)
    assert after in run.results and not run.failures
    assert [item for item, _ in run.results[after].snapshot.items] == ["c", "b"]
    assert not verify(world.views, world.board, config).snapshots_inexact
