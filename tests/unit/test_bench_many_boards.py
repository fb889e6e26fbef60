"""The many-boards scenario on 20 boards: the counts it reports are the snapshot job's, exactly (never its times)."""

from __future__ import annotations

from typing import Any

import pytest

from shardboard.domain.periods import ALL, bucket_of
from shardboard.domain.ports import PeriodKey
from shardboard_tools.bench.many_boards import (
    DEPLOYED_PARALLELISM,
    ManyBoardsWorkload,
    World,
    measure,
    modelled_seconds,
    run_many_boards,
)

SMALL = ManyBoardsWorkload(boards=20, latency_check=False)
KINDS = ("day", "week", "month", ALL)


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return run_many_boards(SMALL)


def test_the_job_refreshes_every_period_of_every_board_and_writes_each_snapshot(result: dict[str, Any]) -> None:
    periods = (SMALL.boards + 1) * len(KINDS)  # the global board's four periods changed too
    assert result["periods_refreshed"] == periods == 84
    assert result["snapshots_written"] == periods
    assert result["failures"] == 0 and result["throttled_requests"] == 0


def test_a_period_costs_two_reads_one_query_per_shard_and_two_writes(result: dict[str, Any]) -> None:
    periods, shards = result["periods_refreshed"], 10
    calls = result["calls"]
    assert calls["Query by-change"] == 1  # the listing of dirty periods, once per run
    # The previous snapshot and the board's layout; and the global board's four heads each take in an item their
    # previous head did not hold, whose day-before rank only the hour's checkpoint has (a head keeps only its own
    # entries' ranks): one more GetItem each. A category board's head holds all its items and carries its ranks.
    assert calls["GetItem"] == 2 * periods + 4
    assert calls["PutItem"] == periods
    # Marked refreshed, plus the global board's four thresholds (a category board's 20-50 items never fill N).
    assert calls["UpdateItem"] == periods + 4
    # One round over the ten shards per period; the global board's larger periods need a second round on a few.
    # Every index sorts by the bucket of the count and the gather reads the candidates' counts (docs/coarse-index.md):
    # one BatchGetItem a period, and one more for a bucket past the first pages. All time also reads `by-views`, its
    # index in the releases before the coarse index, once per shard beside its first pages (empty here).
    boards = SMALL.boards + 1
    assert calls["Query by-views"] == boards * shards
    for index in ("by-day", "by-week", "by-month", "by-deep"):
        assert calls[f"Query {index}"] == boards * shards + 5
    assert calls["BatchGetItem"] == 4 * boards + 8
    counts = calls["BatchGetItem"] + 4 * (boards * shards + 5) + boards * shards
    assert result["calls_total"] == 1 + 2 * periods + 4 + periods + periods + 4 + counts
    assert result["calls_per_period"] == (result["calls_total"] - 1) / periods


def test_the_model_is_round_trips_times_latency_over_the_deployed_parallelism(result: dict[str, Any]) -> None:
    assert result["parallelism"] == DEPLOYED_PARALLELISM == 16
    assert result["schedule"] == "rate(1 minute)" and result["schedule_interval_seconds"] == 60
    periods = result["periods_refreshed"]
    trips = 1 + round(result["round_trips_per_period"] * periods)
    assert result["modelled_seconds"] == pytest.approx(modelled_seconds(trips, 1, 0.010, 16))
    assert result["headroom"] == pytest.approx(60 / result["modelled_seconds"])
    serial = modelled_seconds(result["calls_total"] - 1, 1, 0.010, 16)
    assert result["modelled_seconds_serial"] == pytest.approx(serial)
    assert [row["latency_ms"] for row in result["model"]] == [2.0, 5.0, 10.0, 20.0]
    assert result["cpu_seconds"] > 0 and result["lambda_cpu_seconds"] > result["cpu_seconds"]


def test_a_category_period_is_one_gather_round_and_its_snapshot_holds_every_item() -> None:
    world = World(ManyBoardsWorkload(boards=3, latency_check=False))
    world.record(world.first_views())
    world.refresh()
    world.record(world.new_views())
    measured = measure(world)
    for board, items in world.items.items():
        for kind in KINDS:
            bucket = ALL if kind == ALL else bucket_of(kind, world.workload.at)
            refreshed = measured.run.results[PeriodKey(board, kind, bucket)]
            assert refreshed.gathered.rounds == 1 and refreshed.written
            assert len(refreshed.snapshot.items) == items
    assert not world.board.changed_periods()  # every period marked refreshed
