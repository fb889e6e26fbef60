"""Trending in the template: the Periods parameter may name it, the board table has its index, and every function
is told the half-life from the Tuning mapping (docs/trending.md)."""

from __future__ import annotations

import re

import pytest

from shardboard.domain.periods import PeriodError, parse_periods
from shardboard.settings import PUBLISHED_VARIABLES, Settings
from shardboard_tools.capacity.memory import board_schema
from shardboard_tools.template import Template
from tests.template.conftest import TEMPLATE


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("trending", True),
        ("day,week,trending", True),
        ("hour,day,week,month,trending", True),
        ("", True),
        ("trend", False),
        ("trending,", False),
        ("Trending", False),
    ],
)
def test_periods_may_name_trending_and_every_accepted_value_parses(sam_template, text, accepted):
    pattern = sam_template["Parameters"]["Periods"]["AllowedPattern"]
    assert (re.fullmatch(pattern, text) is not None) is accepted
    if accepted:
        kinds = parse_periods(text)
        assert "trending" not in kinds or "hour" in kinds  # trending's weights are per hour bucket


def test_the_settings_refuse_what_the_pattern_refuses_by_name():
    with pytest.raises(PeriodError):
        parse_periods("trend")


def test_the_board_table_has_a_trending_index_like_the_hour_index(sam_template):
    table = sam_template["Resources"]["BoardTable"]["Properties"]
    indexes = {index["IndexName"]: index for index in table["GlobalSecondaryIndexes"]}
    trending, hour = indexes["by-trending"], indexes["by-hour"]
    assert trending["KeySchema"] == [
        {"AttributeName": "g_trending", "KeyType": "HASH"},
        {"AttributeName": "v_trending", "KeyType": "RANGE"},
    ]
    assert trending["Projection"] == hour["Projection"]
    assert trending["ProvisionedThroughput"] == hour["ProvisionedThroughput"]
    types = {a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]}
    assert types["g_trending"] == "S" and types["v_trending"] == "N"
    # Tables created from the template (tests, the local runtime) and the in-memory twin have it too
    created = Template.load(TEMPLATE, {}, "demo").create_table_requests()["BoardTable"]
    assert "by-trending" in {index["IndexName"] for index in created["GlobalSecondaryIndexes"]}
    assert "by-trending" in {index.name for index in board_schema("board").indexes}


def test_every_function_is_told_the_half_life_and_the_stack_publishes_it(sam_template):
    assert sam_template["Mappings"]["Tuning"]["Periods"]["TrendingHalfLifeHours"] == 6
    assert "TRENDING_HALF_LIFE_HOURS" in PUBLISHED_VARIABLES
    template = Template.load(TEMPLATE, {}, "demo")
    for function in ("AggregatorFunction", "SnapshotFunction"):
        assert Settings.from_env(template.function_environment(function)).trending_half_life_hours == 6
    tuned = Template.load(TEMPLATE, {"TrendingHalfLifeHours": "12"}, "demo")
    assert Settings.from_env(tuned.function_environment("AggregatorFunction")).trending_half_life_hours == 12
