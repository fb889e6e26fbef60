"""``shardboard bench --scenario boards --json`` through the real command on a small run: the keys each design's
figures carry (the boards docs and whoever compares runs read them), and the prices its dollars come from."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from shardboard_tools.bench.boards_designs import BOARDS_DESIGNS
from shardboard_tools.bench.prices import READ_REQUEST_UNIT_DOLLARS, WRITE_REQUEST_UNIT_DOLLARS, on_demand_dollars
from shardboard_tools.cli import main

HEADLINE = ("write_units_per_view", "base_writes_per_view", "max_refresh_read_ratio", "cost_per_million_views", "exact")
DEPLOY_DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        # what `shardboard` sets for a terminal, scoped to this run so later tests still see their metrics
        patch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
        patch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
        result = CliRunner().invoke(
            main, ["bench", "--scenario", "boards", "--views", "2000", "--json", "--no-files"], catch_exceptions=False
        )
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_every_design_prints_its_headline_figures(document: dict[str, Any]) -> None:
    assert document["workload"]["views"] == 2000
    assert set(document["designs"]) == set(BOARDS_DESIGNS)
    for name, design in document["designs"].items():
        assert set(HEADLINE) <= set(design), name
        assert isinstance(design["exact"], bool), name
        for key in HEADLINE[:-1]:
            assert isinstance(design[key], float | int) and design[key] >= 0, (name, key)
    # shardboard's are repeated at the top level
    assert {key: document[key] for key in HEADLINE} == {key: document["designs"]["shardboard"][key] for key in HEADLINE}


def test_the_cost_is_the_units_at_the_on_demand_prices(document: dict[str, Any]) -> None:
    for name, design in document["designs"].items():
        dollars = 1e6 * on_demand_dollars(design["write_units_per_view"], design["read_units_per_view"])
        assert design["cost_per_million_views"] == pytest.approx(dollars), name


def test_the_prices_are_us_east_1_standard_on_demand_as_deploy_md_lists_them() -> None:
    per_million = (round(WRITE_REQUEST_UNIT_DOLLARS * 1e6, 9), round(READ_REQUEST_UNIT_DOLLARS * 1e6, 9))
    assert per_million == (0.625, 0.125)
    listed = " ".join(DEPLOY_DOC.read_text(encoding="utf-8").split())
    assert re.search(r"DynamoDB \$0\.625 per million write request units and \$0\.125 per million read", listed)
