"""The ``boards`` scenario's workload and baseline designs on a small workload (figures are checked for shape and
internal consistency, not against the full run's values)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from shardboard_tools.bench.boards import run_boards
from shardboard_tools.bench.boards_designs import BREAKDOWN, SEED_PER_BOARD, STRAIGHTFORWARD
from shardboard_tools.bench.boards_workload import (
    BoardsWorkload,
    Views,
    brute_force_tops,
    bucket_label,
)
from shardboard_tools.bench.prices import READ_REQUEST_UNIT_DOLLARS, WRITE_REQUEST_UNIT_DOLLARS

# 20 s of views at 400/s, midnight at 10 s; 2 s windows and refreshes (ten of each).
SMALL = BoardsWorkload.straddling_midnight(
    views=8_000,
    items=800,
    categories=5,
    views_per_s=400,
    global_top_n=100,
    category_top_n=20,
    refresh_seconds=2.0,
    aggregation_window_seconds=2.0,
)


@pytest.fixture(scope="module")
def views() -> Views:
    return SMALL.view_arrays()


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return run_boards(SMALL)


def test_the_default_workload_rolls_the_day_halfway_and_nothing_else() -> None:
    workload = BoardsWorkload()
    assert workload == BoardsWorkload.straddling_midnight()  # what `bench --scenario boards` runs by default
    assert workload.views == 200_000 and workload.duration == 40.0
    midnight = datetime(2026, 11, 25, tzinfo=UTC)
    assert (midnight - workload.start).total_seconds() == workload.duration / 2
    days = workload.day_indexes(np.array([0.0, workload.duration - 1e-3]))
    assert [bucket_label("day", int(day)) for day in days] == ["2026-11-24", "2026-11-25"]
    for period in ("week", "month", "all"):
        assert bucket_label(period, int(days[0])) == bucket_label(period, int(days[1]))
    assert workload.boards()[:2] == ("global", "cat-00") and workload.boards()[-1] == "cat-19"
    assert workload.as_json()["start"] == "2026-11-24T23:59:40Z"


def test_views_have_the_shape_the_scenario_needs(views: Views) -> None:
    ranks, categories, offsets = views
    assert len(views) == SMALL.views
    assert ranks.min() >= 0 and ranks.max() < SMALL.items
    assert np.all(np.diff(offsets) > 0)
    # Each item is in exactly one category: a view's category is its item's.
    assert np.array_equal(categories, SMALL.item_categories()[ranks])
    # Deterministic from the seed
    again = SMALL.view_arrays()
    assert np.array_equal(again.ranks, ranks) and np.array_equal(again.categories, categories)


def test_cat_00_draws_35_percent_of_the_views_the_rest_evenly(views: Views) -> None:
    shares = np.bincount(views.categories, minlength=SMALL.categories) / len(views)
    assert shares[0] == pytest.approx(0.35, abs=0.02)
    assert shares[1:] == pytest.approx([0.65 / 4] * 4, abs=0.02)


def test_the_day_boundary_falls_halfway(views: Views) -> None:
    days = SMALL.day_indexes(views.offsets)
    first, second = np.unique(days)
    assert np.count_nonzero(days == first) == np.count_nonzero(days == second) == SMALL.views // 2
    assert bucket_label("day", int(second)) == "2026-11-25"


def test_brute_force_has_every_board_and_bucket(views: Views) -> None:
    truth = brute_force_tops(SMALL, views)
    # 6 boards x (2 days + week + month + all-time)
    assert len(truth) == 6 * 5
    best = truth[("global", "all", "all")]
    assert len(best) == SMALL.global_top_n
    assert best[0] == ("images/1.jpg", int(np.count_nonzero(views.ranks == 0)))
    assert [views for _, views in best] == sorted((views for _, views in best), reverse=True)


def test_the_seed_design_pays_8_item_writes_per_view(result: dict[str, Any]) -> None:
    seed = result["designs"][SEED_PER_BOARD]
    assert seed["throttled_requests"] == 0  # 1,000 views/s: no partition reaches its limit here
    assert seed["item_writes"] == 8 * SMALL.views
    per_item = seed["write_units_per_item_write"]
    assert 2.5 < per_item <= 3.0  # 1 base + 2 index (1 on the first view, when the item joins its partition)
    assert seed["write_units_per_view"] == pytest.approx(8 * per_item)
    assert seed["base_writes_per_view"] == pytest.approx(8.0)
    # Every partition value is queried for N items: ~S x N against N + S
    assert seed["max_refresh_read_ratio"] > 4
    assert seed["exact"]  # nothing throttled, so its counts are the truth


def test_the_straightforward_design_is_exact_against_brute_force(result: dict[str, Any]) -> None:
    design = result["designs"][STRAIGHTFORWARD]
    assert design["exact"], design["mismatched_buckets"]
    assert design["buckets"] == 30
    assert design["throttled_requests"] == 0
    assert design["base_writes_per_view"] == pytest.approx(1.0)
    assert design["views_recorded"] == SMALL.views
    # Fewer index writes than the seed's 8 x 2, more than nothing
    assert 0.5 < design["breakdown"]["index"] < 8


@pytest.mark.parametrize("name", [SEED_PER_BOARD, STRAIGHTFORWARD])
def test_the_breakdown_sums_to_the_total(result: dict[str, Any], name: str) -> None:
    design = result["designs"][name]
    breakdown = design["breakdown"]
    assert sum(breakdown[role] for role in BREAKDOWN) == pytest.approx(design["write_units_per_view"])
    reads = breakdown["refresh_reads"] + breakdown["other_reads"]
    assert reads == pytest.approx(design["read_units_per_view"])
    cost = 1e6 * (design["write_units_per_view"] * WRITE_REQUEST_UNIT_DOLLARS + reads * READ_REQUEST_UNIT_DOLLARS)
    assert design["cost_per_million_views"] == pytest.approx(cost)


def test_the_straightforward_design_costs_less_than_the_seed_per_board(result: dict[str, Any]) -> None:
    seed, straightforward = (result["designs"][name] for name in (SEED_PER_BOARD, STRAIGHTFORWARD))
    assert straightforward["write_units_per_view"] < seed["write_units_per_view"] / 2
    assert straightforward["max_refresh_read_ratio"] < seed["max_refresh_read_ratio"]
