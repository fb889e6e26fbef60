"""`shardboard import`: parsing (every kind of bad line, with its number), aggregation per (item, anchor bucket), and
idempotence against a brute-force truth: an import run twice, or interrupted and run again, counts every view once
on every board and period, through the real aggregator."""

from __future__ import annotations

import contextlib
import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.adapters.stream_records import stream_view_records
from shardboard.domain.periods import ALL, bucket_of, coarser_bucket
from shardboard.domain.ports import PeriodKey
from shardboard.services.aggregating import apply_batch, note_changes
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryBoardStore, MemoryViewStore
from shardboard_tools.operations import importing
from shardboard_tools.operations.importing import (
    IMPORT_SHARD_BASE,
    IMPORT_SHARDS,
    ImportConflict,
    import_id,
    import_shard,
    parse_lines,
    run_import,
)
from shardboard_tools.operations.verification import stored, truth
from tests.conftest import examples

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CONFIG = Settings(periods=("day", "week", "month"), write_concurrency=1, top_n=3, category_top_n=2)


def jsonl(*rows: object) -> list[bytes]:
    return [(row if isinstance(row, str) else json.dumps(row)).encode() for row in rows]


def parse(lines: list[bytes], anchor: str = "day") -> importing.Parsed:
    return parse_lines(lines, anchor, NOW)


GOOD = {"id": "a", "time": "2026-11-23T10:00:00Z"}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('"a"', "expected a JSON object, got str"),
        ({"id": "a", "time": "2026-11-23", "views": 3}, "unknown field(s): views"),
        ({"time": "2026-11-23"}, "missing field: id"),
        ({"id": "a"}, "missing field: time"),
        ({"id": "", "time": "2026-11-23"}, "id must not be empty"),
        ({"id": 7, "time": "2026-11-23"}, "id must be a string"),
        ({"id": "a\tb", "time": "2026-11-23"}, "control character"),
        ({"id": "x" * 600, "time": "2026-11-23"}, "600 bytes"),
        ({"id": "a", "time": "2026-11-23", "count": 0}, "count must be at least 1"),
        ({"id": "a", "time": "2026-11-23", "count": -2}, "count must be at least 1"),
        ({"id": "a", "time": "2026-11-23", "count": 1.5}, "count must be a whole number"),
        ({"id": "a", "time": "2026-11-23", "count": "2"}, "count must be a whole number"),
        ({"id": "a", "time": "2026-11-23", "count": True}, "count must be a whole number"),
        ({"id": "a", "time": "2026-11-23", "count": 5000}, "count must be at most 1000"),
        ({"id": "a", "time": "2026-11-23", "boards": ["Cats"]}, "board name 'Cats'"),
        ({"id": "a", "time": "2026-11-23", "boards": "cats"}, "boards must be a list"),
        ({"id": "a", "time": "2026-11-23", "boards": [f"b{i}" for i in range(9)]}, "at most 8 boards, got 9"),
        ({"id": "a", "time": "yesterday"}, "time must be an ISO-8601 date or date-time, got 'yesterday'"),
        ({"id": "a", "time": 20261123}, "time must be an ISO-8601"),
        ({"id": "a", "time": "2026-12-01"}, "in the future"),
        ({"id": "a", "time": "1969-12-31T23:59:59Z"}, "before 1970"),
    ],
)
def test_each_kind_of_bad_line_is_reported_with_its_number_and_adds_nothing(line, reason):
    # Given a bad line between good ones (and a blank line, which is skipped but still numbered)
    parsed = parse(jsonl(GOOD, "", line, GOOD))
    # Then it is reported as line 3 with its reason, and only the good lines are counted
    assert [(bad.number, reason in bad.reason) for bad in parsed.bad] == [(3, True)], parsed.bad
    assert str(parsed.bad[0]).startswith("line 3: ")
    assert (parsed.lines, parsed.good_lines, parsed.views) == (3, 2, 2)
    assert parsed.counters == {("a", "2026-11-23"): {"global": 2}}


def test_a_line_that_is_not_utf8_is_a_bad_line():
    parsed = parse([b'{"id": "\xff", "time": "2026-11-23"}'])
    assert [str(bad) for bad in parsed.bad] == ["line 1: not UTF-8"]


def test_the_refusal_names_the_first_bad_line_and_how_many():
    parsed = parse(jsonl(GOOD, "nope", GOOD, {"id": "a", "time": "2026-11-23", "count": 0}))
    assert parsed.refusal().startswith("line 2: not JSON")
    assert "(2 bad lines of 4); nothing imported" in parsed.refusal()
    assert "\n" not in parsed.refusal()


def test_lines_aggregate_per_item_and_anchor_bucket_of_their_own_time():
    # Given views of two items over two days years apart, on category boards (global named, and a board twice)
    parsed = parse(
        jsonl(
            {"id": "a", "time": "2026-11-23T23:59:59Z", "count": 2, "boards": ["cats"]},
            {"id": "a", "time": "2026-11-24T00:00:00+01:00", "boards": ["cats", "bw", "cats", "global"]},
            {"id": "a", "time": "2019-02-03"},
            {"id": "b#1", "time": "2026-11-24T08:00:00", "count": 7, "boards": []},
        )
    )
    # Then each (item, day) holds its totals per board; 00:00+01:00 is the 23rd in UTC
    assert parsed.counters == {
        ("a", "2026-11-23"): {"global": 3, "cats": 3, "bw": 1},
        ("a", "2019-02-03"): {"global": 1},
        ("b#1", "2026-11-24"): {"global": 7},
    }
    assert (parsed.lines, parsed.views, parsed.bad) == (4, 11, [])
    # And with hours as the anchor, the same views split by hour
    hourly = parse(
        jsonl({"id": "a", "time": "2026-11-23T10:59:00Z"}, {"id": "a", "time": "2026-11-23T11:00:00Z"}), "hour"
    )
    assert set(hourly.counters) == {("a", "2026-11-23T10"), ("a", "2026-11-23T11")}


def test_the_import_identity_ignores_line_order_and_the_shard_is_outside_the_writers_range():
    lines = jsonl({"id": "a", "time": "2026-11-23"}, {"id": "b", "time": "2026-11-22", "boards": ["x", "y"]})
    first, second = parse(lines).counters, parse(list(reversed(lines))).counters
    assert import_id(first) == import_id(second)
    assert import_id(first) != import_id(parse(lines[:1]).counters)
    shard = import_shard(import_id(first))
    assert IMPORT_SHARD_BASE <= shard < IMPORT_SHARD_BASE + IMPORT_SHARDS
    assert CONFIG.max_write_shards < IMPORT_SHARD_BASE


class World:
    """A base table and a board table in memory; the aggregator consumes the base stream (delivered twice)."""

    def __init__(self) -> None:
        emulator = CapacityEmulator(VirtualClock())
        self.views = MemoryViewStore(emulator)
        self.board = MemoryBoardStore(emulator)

    def deliver(self) -> None:
        records = self.views.take_stream(10**9)
        for _ in range(2):  # at least once: every record again
            steps = [step for record in records for step in stream_view_records(record)]
            outcome = apply_batch(self.board, steps, CONFIG)
            assert not outcome.failures, outcome.failures
            note_changes(self.board, outcome, CONFIG, now=1)

    def counts(self) -> dict[PeriodKey, dict[str, int]]:
        found, _ = stored(self.board, CONFIG)
        return {p: {i: v for i, v in c.items() if v} for p, c in found.items() if any(c.values())}

    def base_truth(self) -> dict[PeriodKey, dict[str, int]]:
        return {p: {i: v for i, v in c.items() if v} for p, c in truth(self.views, CONFIG).items()}


def brute_force(views: list[tuple[str, datetime, int, tuple[str, ...]]]) -> dict[PeriodKey, dict[str, int]]:
    """Every board and period's counts straight from the views."""
    counts: dict[PeriodKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for item, at, count, boards in views:
        for board in ("global", *boards):
            for kind in (*CONFIG.periods, ALL):
                bucket = coarser_bucket(kind, CONFIG.anchor, bucket_of(CONFIG.anchor, at))
                counts[PeriodKey(board, kind, bucket)][item] += count
    return {p: dict(c) for p, c in counts.items()}


def as_lines(views: list[tuple[str, datetime, int, tuple[str, ...]]]) -> list[bytes]:
    return jsonl(*({"id": i, "time": t.isoformat(), "count": c, "boards": list(b)} for i, t, c, b in views))


ITEMS = ["a", "b#1", "images/c.jpg", "ü"]
views_strategy = st.lists(
    st.tuples(
        st.sampled_from(ITEMS),
        st.integers(0, 400 * 24).map(lambda hours: NOW - timedelta(hours=hours, minutes=1)),  # up to 400 days old
        st.integers(1, 5),
        st.lists(st.sampled_from(["cats", "bw", "user:1"]), max_size=2, unique=True).map(tuple),
    ),
    min_size=1,
    max_size=30,
)


def test_importing_the_same_file_twice_counts_once():
    views = [
        ("a", NOW - timedelta(days=3), 2, ("cats",)),
        ("a", NOW - timedelta(days=40), 1, ()),
        ("b#1", NOW - timedelta(days=3), 5, ("cats", "bw")),
    ]
    world = World()
    parsed = parse(as_lines(views))
    # When it is imported, then imported again (with the lines in another order)
    first = run_import(world.views, parsed.counters)
    again = run_import(world.views, parse(list(reversed(as_lines(views)))).counters)
    world.deliver()
    # Then the second run found every counter present and wrote nothing, and every count is exact
    assert (first.written, first.present, again.written, again.present) == (3, 0, 0, 3)
    assert first.units > 0 and again.units > 0  # a refused condition still costs a write unit
    assert world.base_truth() == world.counts() == brute_force(views)


def test_another_import_adds_to_this_one_and_never_overwrites_it_even_on_a_shard_clash(monkeypatch):
    world = World()
    one = [("a", NOW - timedelta(days=3), 2, ("cats",))]
    two = [("a", NOW - timedelta(days=3), 3, ())]
    # Given imports whose hashes all pick the same shard: one, another with the same counts, and a third
    monkeypatch.setattr(importing, "import_shard", lambda identity, probe=0: IMPORT_SHARD_BASE + probe)
    run_import(world.views, parse(as_lines(one)).counters)
    run_import(world.views, parse(as_lines(one)).counters, "f" * 64)  # same counts, another import
    counters = parse(as_lines(two)).counters
    done = run_import(world.views, counters)
    again = run_import(world.views, counters)
    world.deliver()
    # Then it probed the next shards, and all three imports count once each
    assert (done.written, done.probes, again.present, again.probes) == (1, 2, 1, 2)
    assert world.counts() == brute_force(one + one + two)


def test_a_counter_whose_every_probe_is_taken_stops_the_import(monkeypatch):
    world = World()
    monkeypatch.setattr(importing, "import_shard", lambda identity, probe=0: IMPORT_SHARD_BASE)
    run_import(world.views, parse(as_lines([("a", NOW, 1, ())])).counters)
    with pytest.raises(ImportConflict, match="import shards are held by other imports"):
        run_import(world.views, parse(as_lines([("a", NOW, 2, ())])).counters)


class Interrupted(Exception):
    pass


class StopsAfter:
    """A base table that fails (as a crash would) on its (k+1)-th counter write."""

    def __init__(self, views: MemoryViewStore, writes: int) -> None:
        self.views, self.left = views, writes

    def set_counters(self, *args, **kwargs):
        if self.left == 0:
            raise Interrupted
        self.left -= 1
        return self.views.set_counters(*args, **kwargs)


@settings(max_examples=examples(25), deadline=None)
@given(
    views=views_strategy,
    live=views_strategy,
    stop=st.integers(0, 40),
    workers=st.sampled_from([1, 4]),
    seed=st.integers(0, 1000),
)
def test_an_interrupted_import_run_again_counts_every_view_once(views, live, stop, workers, seed):
    # Given live traffic on the writers' shards, some before the import and some during it (late data too)
    world = World()
    rng = random.Random(seed)

    def record(batch):
        for item, at, count, boards in batch:
            world.views.add_view(item, rng.randrange(4), count, bucket_of(CONFIG.anchor, at), boards)

    record(live[: len(live) // 2])
    world.deliver()
    counters = parse(as_lines(views)).counters
    # When an import stops after `stop` writes, the aggregator runs, and the import is run again (twice)
    with contextlib.suppress(Interrupted):
        run_import(StopsAfter(world.views, stop), counters, workers=workers)
    world.deliver()
    record(live[len(live) // 2 :])
    run_import(world.views, counters, workers=workers)
    done = run_import(world.views, counters, workers=workers)
    world.deliver()
    # Then every board and period counts each imported and live view exactly once
    assert (done.written, done.present) == (0, len(counters))
    assert world.base_truth() == world.counts() == brute_force(views + live)


def test_writes_per_line_on_a_sample_of_10000_lines():
    # Given 10,000 lines over 30 days of 1,000 items whose popularity is Zipf-like (a few items take most views)
    rng = random.Random(7)
    views = [
        (
            f"item-{min(999, int(rng.paretovariate(1.0)) - 1)}",
            NOW - timedelta(days=rng.randrange(30), minutes=1),
            rng.randint(1, 3),
            tuple(rng.sample(["cats", "bw", "dogs"], rng.randint(0, 2))),
        )
        for _ in range(10_000)
    ]
    parsed = parse(as_lines(views))
    world = World()
    done = run_import(world.views, parsed.counters)
    # Then there is one write per distinct (item, day) (918 here: 0.09 writes a line), and a re-run writes nothing
    assert done.written == len(parsed.counters) < 10_000 * 0.1
    rerun = run_import(world.views, parsed.counters)
    assert (rerun.written, rerun.present) == (0, done.written)
    world.deliver()
    assert world.counts() == brute_force(views)
