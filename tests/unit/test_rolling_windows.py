"""Rolling windows against a brute-force truth: the threshold algorithm over sparse hour indexes, then whole
pipelines (views at random hours, late and out of order, delivered at least once, snapshots at random instants
including hour edges, takedowns) whose window heads must equal the brute-force top of the window's hours."""

from __future__ import annotations

import random
from collections import Counter
from contextlib import suppress
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain import policy
from shardboard.domain.errors import BadInput
from shardboard.domain.items.taken_down import TakenDown
from shardboard.domain.periods import HOUR, PeriodError, bucket_of, iso
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.gather import Entry, top
from shardboard.domain.publishing.sums import Part, sum_top
from shardboard.domain.windows import Window, parse_names, parse_window, split_names, window_bucket
from shardboard.services import takedowns
from shardboard.services.reading import BoardReads, window_top
from shardboard.services.snapshots import refresh_changed
from shardboard.services.takedowns import NothingToTakeDown
from shardboard.settings import Settings
from shardboard_tools.capacity.stores import in_process
from tests.conftest import examples
from tests.unit.test_boards_periods import World, deliver_at_least_once

EDGE = datetime(2026, 11, 29, 23, 0, tzinfo=UTC)
ITEMS = [f"i{n:02d}" for n in range(30)]


# -- the threshold algorithm alone


def sparse_part(counts: dict[str, int], threshold: int) -> tuple[list[Entry], int]:
    """A part's index as the sparse rule leaves it: the items at or above T are keyed (some below may be too)."""
    keyed = [Entry(id=item, views=views) for item, views in counts.items() if views >= threshold and views > 0]
    return sorted(keyed), threshold


@settings(max_examples=examples(200), deadline=None)
@given(
    parts=st.lists(
        st.tuples(st.dictionaries(st.sampled_from(ITEMS), st.integers(0, 40), max_size=20), st.integers(0, 25)),
        min_size=1,
        max_size=6,
    ),
    n=st.integers(1, 6),
)
def test_sum_top_is_the_brute_force_top_or_says_it_cannot_prove_it(parts, n):
    indexes = [sparse_part(counts, threshold) for counts, threshold in parts]

    def gather(part: int, depth: int) -> Part:
        keyed, threshold = indexes[part]
        return Part(keyed[:depth], more=len(keyed) > depth, threshold=threshold)

    def read(wanted):
        return {part: {item: parts[part][0].get(item, 0) for item in ids} for part, ids in wanted.items()}

    summed = sum_top(n, len(parts), gather, read)
    totals = Counter()
    for counts, _ in parts:
        totals.update(counts)
    truth = top([Entry(id=item, views=views) for item, views in totals.items() if views > 0], n)
    if summed.proven:
        assert summed.top == truth
    else:
        # Unproven only when some unkeyed item (below a T) could still reach the top n
        assert any(threshold > 1 for _, threshold in indexes)


def test_windows_are_named_in_periods_and_need_hours():
    assert parse_names("day,24h, week,7d,1h") == ("day", "week", "1h", "24h", "7d")
    kinds, windows = split_names(("day", "24h", "7d"))
    assert kinds == ("hour", "day")
    assert windows == (Window(24, "24h"), Window(168, "7d"))
    assert Settings(periods=("day", "7d")).retention("hour") == 168
    with pytest.raises(PeriodError, match="24h or 7d"):
        parse_names("day,fortnight")
    with pytest.raises(PeriodError):
        parse_window("0h")


def test_a_window_sums_the_whole_hours_before_and_the_current_one():
    window = parse_window("3h")
    assert window.hour_buckets("2026-11-30T01") == ["2026-11-30T01", "2026-11-30T00", "2026-11-29T23", "2026-11-29T22"]
    span = {"kind": "3h", "start": "2026-11-29T22:00:00Z", "end": "2026-11-30T02:00:00Z"}
    assert window.span("2026-11-30T01") == span


# -- whole pipelines


views_strategy = st.lists(
    st.tuples(
        st.sampled_from(ITEMS[:12]) | st.sampled_from(ITEMS),  # skewed: the first twelve come up more often
        st.lists(st.sampled_from(["cats", "dogs"]), max_size=1).map(tuple),
        st.integers(-4, 2) | st.integers(-30, 2),  # hours from EDGE: most within a few hours, some a day before
        st.integers(0, 2),
        st.integers(1, 4),
    ),
    min_size=1,
    max_size=150,
)


def brute_force(views, board: str, window: Window, bucket: str, hidden: set[str]) -> list[Entry]:
    hours = set(window.hour_buckets(bucket))
    totals: Counter[str] = Counter()
    for item, boards, at, _, count in views:
        if board in ("global", *boards) and bucket_of(HOUR, at) in hours and item not in hidden:
            totals[item] += count
    return top([Entry(id=item, views=views) for item, views in totals.items() if views > 0], 3)


@settings(max_examples=examples(60), deadline=None)
@given(
    views=views_strategy,
    seed=st.integers(0, 10**6),
    refreshes=st.lists(st.integers(-2 * 60, 4 * 60), min_size=1, max_size=4),  # minutes from EDGE
    hide=st.none() | st.sampled_from(ITEMS[:12]),
    depth=st.sampled_from([1, policy.WINDOW_HOUR_DEPTH]),
)
def test_every_window_head_is_the_exact_top_of_its_hours(views, seed, refreshes, hide, depth):
    with patch.object(policy, "WINDOW_HOUR_DEPTH", depth):  # 1: hours' Ts as high as they go, proofs fail often
        window_heads_are_exact(views, seed, refreshes, hide)


def window_heads_are_exact(views, seed, refreshes, hide):
    # Given a stack with a 1 h and a 3 h window and a small N+R (so that hours publish thresholds)
    config = Settings(
        periods=("day", "1h", "3h"),
        write_concurrency=1,
        top_n=2,
        category_top_n=2,
        snapshot_spare=1,
        board_shards=2,
        rank_depth=0,
    )
    world = World(config)
    views = [(item, boards, EDGE + timedelta(hours=h, minutes=30), shard, n) for item, boards, h, shard, n in views]
    rng = random.Random(seed)
    # When groups of views arrive (late and out of order, delivered at least once) with a snapshot run after each, at
    # random instants (hour edges too), and an item is hidden on the way
    cuts = sorted(rng.randint(0, len(views)) for _ in refreshes[1:])
    groups = [views[a:b] for a, b in zip([0, *cuts], [*cuts, len(views)], strict=True)]
    hidden: set[str] = set()
    items = in_process().items
    seen: list = []
    for minutes, group in zip(sorted(refreshes), groups, strict=True):
        for item, boards, at, shard, count in group:
            world.record(item, boards, at, shard, count)
        deliver_at_least_once(world, rng)
        world.shards = [[], [], []]
        seen.extend(group)
        # A run comes after the views it gathers were made (views are made at :30, runs at any minute)
        now = max([EDGE + timedelta(minutes=minutes), *(at for _, _, at, _, _ in seen)])
        if hide is not None and hide not in hidden and rng.random() < 0.5:
            with suppress(NothingToTakeDown):  # an item without views yet
                takedowns.hide(items, world.board, config, hide, by="test", reason="test", at=now)
                hidden.add(hide)
        run = refresh_changed(world.board, config, iso(now), hidden=TakenDown.read(items))
        assert not run.failures, run.failures
        # Then every board's window head of this hour is the exact top N+R of the window's hours
        bucket = window_bucket(now)
        for board in ("global", "cats", "dogs"):
            for window in config.policy.periods.windows:
                head = world.board.get_snapshot(PeriodKey(board, window.name, bucket))
                truth = brute_force(seen, board, window, bucket, hidden)
                shown = [] if head is None else [Entry(id=r.id, views=r.views) for r in (*head.items, *head.spare)]
                assert shown == truth, (board, window, bucket, run.results.get(PeriodKey(board, window.name, bucket)))


def test_a_window_is_read_as_of_now_and_refuses_what_it_cannot_answer():
    config = Settings(periods=("day", "24h"))
    reads = BoardReads(World(config).board, in_process().items, config)
    with pytest.raises(BadInput, match="window must be one of 24h"):
        window_top(reads, board=None, window="7d", period=None, at=None, limit=None)
    with pytest.raises(BadInput, match="as of now"):
        window_top(reads, board=None, window="24h", period="day", at=None, limit=None)


def test_a_sum_the_thresholds_cannot_prove_is_counted_from_a_scan_and_reported():
    # Given views on two boards in two hours of a 3 h window
    config = Settings(periods=("day", "3h"), write_concurrency=1, top_n=2, category_top_n=2, rank_depth=0)
    world = World(config)
    views = [("a", ("cats",), 0, 4), ("b", (), 1, 3), ("c", ("cats",), 1, 5), ("a", (), 1, 1)]
    for item, boards, hour, count in views:
        world.record(item, boards, EDGE + timedelta(hours=hour, minutes=30), 0, count)
    deliver_at_least_once(world, random.Random(1))
    # When every threshold-algorithm sum is refused (as when the hours' thresholds cannot bound unseen items)
    proven = sum_top

    def unproven(*args, **kwargs):
        return replace(proven(*args, **kwargs), proven=False)

    with patch("shardboard.services.snapshots.sum_top", unproven):
        run = refresh_changed(world.board, config, iso(EDGE + timedelta(hours=1, minutes=45)))
    # Then each window head is counted from one scan, exact, and the run says how many sums it scanned
    windows = [period for period in run.results if period.kind == "3h"]
    assert {period.board for period in windows} == {"global", "cats"}
    assert run.scans == len(windows) == 2
    global_head = run.results[PeriodKey("global", "3h", "2026-11-30T00")].snapshot
    cats_head = run.results[PeriodKey("cats", "3h", "2026-11-30T00")].snapshot
    assert [tuple(row) for row in (*global_head.items, *global_head.spare)] == [("a", 5), ("c", 5), ("b", 3)]
    assert [tuple(row) for row in (*cats_head.items, *cats_head.spare)] == [("c", 5), ("a", 4)]
