"""`shardboard plan`: the overload probability is computed exactly and agrees with a Monte Carlo check."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from shardboard_tools.cli.plan import plan as plan_command
from shardboard_tools.planning import monte_carlo_overload, overload_probability, plan, refresh_cost


@pytest.mark.parametrize(
    ("partitions", "shards", "about"),
    [(10, 100, 0.36), (10, 200, 0.09), (10, 400, 0.006), (20, 200, 0.65), (3, 30, 0.056)],
)
def test_exact_overload_probability_agrees_with_monte_carlo(partitions, shards, about):
    # Given S keys hashed uniformly onto P partitions, "overloaded" meaning one partition above 1.5x its share
    exact = overload_probability(shards, partitions)
    # When 50,000 random placements are simulated (standard error <= 0.22 percentage points)
    simulated = monte_carlo_overload(shards, partitions, trials=50_000, seed=partitions * 1000 + shards)
    # Then both agree within 1 percentage point, and with DESIGN.md's figures
    assert abs(exact - simulated) < 0.01
    assert exact == pytest.approx(about, abs=0.01)


def test_seed_003_rule_of_thumb_fails_beyond_three_nodes():
    # "K >= 10 N keeps the overload probability under 5%": true for 2 nodes, false for 10
    assert overload_probability(20, 2) < 0.05
    assert overload_probability(100, 10) > 0.30


def test_edge_cases():
    assert overload_probability(50, 1) == 0.0  # one partition holds everything: its fair share
    assert overload_probability(1, 4) == 1.0  # a lone key is always above 1.5 x 1/4
    assert 0.0 <= overload_probability(7, 3) <= 1.0


def test_plan_meets_the_overload_limit_and_reads_about_n_plus_s():
    result = plan(
        views_per_sec=10_000, hot_item_share=0.2, item_kb=1, partitions=10, top_n=1000, max_overload_probability=0.05
    )
    assert result.write_shards == 4  # 2,000 writes/s of 1 KB, x2 headroom
    assert result.overload_probability <= 0.05
    assert overload_probability(result.gsi_shards - 1, 10) > 0.05 or result.gsi_shards == result.gsi_shards_for_writes
    assert 1000 <= result.refresh_items_read < result.gsi_shards * 1000  # far below seed 002's S x N
    assert refresh_cost(1000, 10).items_read <= 1.15 * (1000 + 10)


def test_plan_command_prints_the_json_keys():
    result = CliRunner().invoke(plan_command, ["--views-per-sec", "5000", "--partitions", "4", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert {"write_shards", "gsi_shards", "overload_probability", "refresh_items_read"} <= document.keys()
    assert document["overload_probability"] <= 0.05


def test_plan_command_refuses_bad_input():
    result = CliRunner().invoke(plan_command, ["--hot-item-share", "2"])
    assert result.exit_code == 2
