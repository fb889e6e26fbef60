"""``shardboard bench --scenario traffic``: the bill's arithmetic on small hand-checked numbers, and the scenario on a
tiny slice through the real command (its JSON's shape, every board exact, no file written with --json)."""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from shardboard_tools.bench import prices, traffic
from shardboard_tools.bench.traffic import (
    COMPONENTS,
    DESIGNS,
    HTTP,
    LIBRARY,
    REDIS,
    Assumptions,
    Level,
    Monthly,
    TrafficWorkload,
    crossover,
    dynamodb_bill,
    lambda_bill,
    redis_bill,
    xray_traces,
)
from shardboard_tools.bench.traffic_report import chart, markdown
from shardboard_tools.cli import main

HOURS = prices.MONTH_HOURS
SECONDS = HOURS * 3600


def month(units: dict[tuple[str, str, str], float], **counts: Any) -> Monthly:
    fields: dict[str, Any] = {
        "views": 1_000_000.0,
        "request_invocations": 0.0,
        "aggregator_invocations": 0.0,
        "aggregator_records": 0.0,
        "refresh_runs": 0.0,
        "background_functions": 2,
        "billed_events": 0.0,
        "metrics": 0,
    }
    return Monthly(units=units, **(fields | counts))


# -- prices x units


def test_http_api_requests_past_300_million_cost_the_next_tier() -> None:
    assert prices.http_api_dollars(100e6) == pytest.approx(100.0)
    assert prices.http_api_dollars(400e6) == pytest.approx(300.0 + 100 * 0.90)


def test_provisioned_capacity_is_the_mean_over_the_target_and_never_below_the_floor() -> None:
    # 7 units/s at 70 %: 10 units for 730 hours.
    assert prices.provisioned_dollars(7.0, 0.00065, 0.7, 1.0) == pytest.approx(10 * HOURS * 0.00065)
    assert prices.provisioned_dollars(0.1, 0.00013, 0.7, 1.0) == pytest.approx(1 * HOURS * 0.00013)


def test_a_steady_table_goes_provisioned_and_a_quiet_one_stays_on_demand() -> None:
    busy = 7.0 * SECONDS  # 7 write units/s all month: 10 WCU at 70 %
    units = {
        ("busy", "write", "views"): busy * 2 / 3,
        ("busy", "write", "refresh"): busy / 3,
        ("quiet", "read", "refresh"): 800.0,
        ("quiet", "read", "frontend"): 200.0,
    }
    components, tables = dynamodb_bill(month(units), Assumptions())
    # busy: 10 WCU + the 1-RCU floor, against 18.4 million write units on demand.
    provisioned = 10 * HOURS * 0.00065 + 1 * HOURS * 0.00013
    assert tables["busy"]["mode"] == "provisioned"
    assert tables["busy"]["provisioned"] == pytest.approx(provisioned)
    assert tables["busy"]["on_demand"] == pytest.approx(busy * 0.625e-6)
    # quiet: 1,000 read units on demand ($0.000125), against two 1-unit floors.
    assert tables["quiet"]["mode"] == "on-demand"
    assert components["refresh_reads"] == pytest.approx(800 * 0.125e-6)
    assert components["frontend_reads"] == pytest.approx(200 * 0.125e-6)
    # The busy table's write capacity is all writes; its read floor is billed as the aggregator's reads.
    assert components["dynamodb_writes"] == pytest.approx(10 * HOURS * 0.00065)
    assert components["dynamodb_reads"] == pytest.approx(1 * HOURS * 0.00013)


def test_a_tables_cost_is_split_by_the_units_of_the_table_and_its_indexes_together() -> None:
    units = {
        ("t", "read", "frontend"): 300.0,
        ("t", "read", "refresh"): 500.0,
        ("t/by-x", "read", "refresh"): 100.0,
        ("t/by-y", "read", "views"): 100.0,
    }
    components, tables = dynamodb_bill(month(units), Assumptions())
    assert tables["t"]["mode"] == "on-demand"
    assert components["frontend_reads"] == pytest.approx(300 * 0.125e-6)
    assert components["refresh_reads"] == pytest.approx(600 * 0.125e-6)
    assert components["dynamodb_reads"] == pytest.approx(100 * 0.125e-6)


def test_each_index_gets_its_own_capacity_when_provisioned() -> None:
    rate = 7.0 * SECONDS
    units = {("t", "write", "views"): rate, ("t/by-x", "write", "views"): rate}
    _, tables = dynamodb_bill(month(units), Assumptions())
    assert tables["t"]["provisioned"] == pytest.approx(2 * (10 * HOURS * 0.00065 + HOURS * 0.00013))
    assert tables["t"]["write_units"] == pytest.approx(2 * rate)


def test_lambda_bills_every_function_at_the_template_memory() -> None:
    a = Assumptions()
    counts = month(
        {},
        request_invocations=1_100_000.0,  # 1e6 POST /views + 1e5 page loads (0.1 per view)
        aggregator_invocations=1_000.0,
        aggregator_records=1_000_000.0,
        refresh_runs=43_800.0,
    )
    dollars, figures = lambda_bill(counts, a, memory_mb=512)
    milliseconds = 1e6 * 10 + 1e5 * 10 + 1_000 * 50 + 1e6 * 0.05 + 43_800 * 1_000 + 43_800 * 200
    invocations = 1_100_000 + 1_000 + 2 * 43_800
    assert figures["gb_seconds"] == pytest.approx(milliseconds / 1000 * 0.5)
    assert figures["invocations"] == pytest.approx(invocations)
    assert dollars == pytest.approx(milliseconds / 1000 * 0.5 * 0.0000166667 + invocations * 0.2e-6)


def test_xray_keeps_the_first_trace_a_second_and_five_percent_of_the_rest() -> None:
    assert xray_traces(0.5 * SECONDS, Assumptions()) == pytest.approx(0.5 * SECONDS)
    assert xray_traces(101 * SECONDS, Assumptions()) == pytest.approx(6 * SECONDS)


@pytest.mark.parametrize(
    ("ops_per_s", "node", "nodes"),
    [(10_000, "cache.t4g.small", 2), (60_000, "cache.m7g.large", 2), (60_001, "cache.m7g.large", 4)],
)
def test_redis_is_the_smallest_node_that_carries_the_peak_else_shards_of_the_largest(
    ops_per_s: int, node: str, nodes: int
) -> None:
    a = Assumptions(redis_ops_per_view=10, page_loads_per_view=0.0, redis_peak_to_mean=1.0)
    found = redis_bill(86_400 * ops_per_s / 10, a)
    assert (found["node_type"], found["nodes"]) == (node, nodes)
    assert found["bill"] == pytest.approx(nodes * prices.ELASTICACHE_NODE_HOUR_DOLLARS[node] * HOURS)


def test_the_crossover_is_interpolated_in_log_log_space() -> None:
    # ours rises a decade per decade through theirs (flat at 100): they cross at 10^5 views a day, at $100.
    found = crossover([1e4, 1e6], [10.0, 1_000.0], [100.0, 100.0])
    assert len(found) == 1
    assert found[0]["views_per_day"] == pytest.approx(1e5)
    assert found[0]["bill"] == pytest.approx(100.0)
    assert found[0]["between"] == [1e4, 1e6]
    assert found[0]["cheaper_below"] == "ours"
    assert crossover([1e4, 1e6], [10.0, 20.0], [100.0, 100.0]) == []


# -- the scenario on a tiny slice, through the command

TINY = partial(
    TrafficWorkload,
    levels=(Level(10**4, 60.0), Level(10**9, 0.02)),
    items=200,
    warmup_cap=200,
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("docs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
        patch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
        patch.setattr(traffic, "TrafficWorkload", TINY)
        result = CliRunner().invoke(
            main, ["bench", "--scenario", "traffic", "--json", "--out", str(out)], catch_exceptions=False
        )
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document, out


def test_every_level_bills_every_design_by_component(run: tuple[dict[str, Any], Path]) -> None:
    document, _ = run
    assert [level["views_per_day"] for level in document["levels"]] == [10**4, 10**9]
    for level in document["levels"]:
        assert set(level["designs"]) == {*DESIGNS, REDIS}
        for name, design in level["designs"].items():
            assert set(design["components"]) == set(COMPONENTS), name
            assert design["bill"] == pytest.approx(sum(design["components"].values())), name
            assert design["bill"] > 0, name
        for name in DESIGNS:
            design = level["designs"][name]
            assert design["exact"] is True, (name, design["measured"]["mismatched"])
            assert design["refresh_read_ratio"] > 0, name
            assert design["first_page_read_units"] >= 0.5, name
            assert design["measured"]["refresh_runs"] >= 1, name


def test_the_library_sends_nothing_through_api_gateway(run: tuple[dict[str, Any], Path]) -> None:
    for level in run[0]["levels"]:
        assert level["designs"][LIBRARY]["components"]["api_gateway"] == 0
        assert level["designs"][HTTP]["components"]["api_gateway"] > 0


def test_the_prices_carry_their_sources_and_the_crossover_is_reported(run: tuple[dict[str, Any], Path]) -> None:
    document = run[0]
    assert document["prices"]["sources"] and document["prices"]["read"] == prices.PRICES_READ
    assert set(document["crossover_with_redis"]) == {HTTP, LIBRARY}
    for crossings in document["crossover_with_redis"].values():
        for crossing in crossings:
            low, high = crossing["between"]
            assert low < crossing["views_per_day"] < high
            assert math.isfinite(crossing["bill"])


def test_json_writes_no_file(run: tuple[dict[str, Any], Path]) -> None:
    assert list(run[1].iterdir()) == []


def test_the_page_and_chart_are_made_from_the_document(run: tuple[dict[str, Any], Path], tmp_path: Path) -> None:
    document = run[0]
    png = chart(document, tmp_path / "traffic.png")
    page = markdown(document, "shardboard bench --scenario traffic", png.name)
    assert png.stat().st_size > 0
    assert "## The crossover with Redis" in page
    assert "views a day" in page
    for name in (*DESIGNS, REDIS):
        assert name in page
