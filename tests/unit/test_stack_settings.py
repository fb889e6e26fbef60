"""What a stack publishes reads back as exactly its settings, and the CLI knows which settings a -p decides."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardboard.domain.boards import GLOBAL_BOARD, MAX_BOARDS_CEILING, BoardPolicy
from shardboard.domain.periods import KINDS
from shardboard.domain.policy import Indexing
from shardboard.settings import PUBLISHED_VARIABLES, ConfigError, Settings
from shardboard_tools.template import Template
from tests.conftest import ROOT

PERIOD_CHOICES = [combo for size in range(len(KINDS) + 1) for combo in combinations(KINDS, size)]


@st.composite
def deployed_settings(draw: st.DrawFn) -> Settings:
    """Any settings a stack could run with (what its functions' environment gives them)."""
    write_shards = draw(st.integers(1, 1000))
    top_n = draw(st.integers(1, 5000))
    return Settings.for_stack(
        draw(st.from_regex(r"[A-Za-z][-A-Za-z0-9]{0,20}", fullmatch=True)),
        write_shards=write_shards,
        max_write_shards=draw(st.integers(write_shards, 1000)),
        shard_cooldown_seconds=draw(st.integers(0, 3600)),
        board_shards=draw(st.integers(1, 100)),
        top_n=top_n,
        category_top_n=draw(st.integers(1, 5000)),
        rank_depth=draw(st.integers(0, 100_000)),
        category_rank_depth=draw(st.integers(0, 100_000)),
        rank_refresh_seconds=draw(st.integers(1, 3600)),
        cursor_ttl_seconds=draw(st.integers(1, 3600)),
        periods=draw(st.sampled_from(PERIOD_CHOICES)),
        retention_hours=draw(st.integers(1, 1000)),
        retention_days=draw(st.integers(1, 1000)),
        retention_weeks=draw(st.integers(1, 1000)),
        retention_months=draw(st.integers(1, 1000)),
        schedule=draw(st.sampled_from(["rate(1 minute)", "rate(5 minutes)", "cron(0/5 * * * ? *)"])),
        sparse_index=draw(st.booleans()),
        dedupe_window_seconds=draw(st.integers(60, 31_622_400)),
        views_per_ip_per_minute=draw(st.integers(0, 1_000_000)),
        views_per_viewer_per_minute=draw(st.integers(0, 1_000_000)),
        require_items=draw(st.booleans()),
        page_size=draw(st.integers(1, 100)),
        snapshot_spare=draw(st.integers(0, 1000)),
        board_policy=BoardPolicy(
            draw(st.integers(0, MAX_BOARDS_CEILING)), draw(st.sampled_from([None, "cats", "cats|dogs|tag:*"]))
        ),
    )


@given(deployed_settings())
def test_published_settings_read_back_exactly(deployed: Settings) -> None:
    # Given a stack's settings published as variables, when a client of that stack reads them over the defaults
    client = Settings.for_stack("reader").with_published(deployed.published_variables())
    # Then it agrees on every published setting; its tables stay its own stack's
    assert client == replace(deployed, **{f"{t}_table": f"reader-{t}" for t in ("views", "board", "shards", "items")})


@given(deployed_settings())
def test_the_policy_values_carry_what_the_settings_read(deployed: Settings) -> None:
    # Given a stack's settings, the small values the domain takes in their place say the same
    policy, sharding = deployed.policy, deployed.shard_policy
    assert (policy.board, policy.periods.kinds, policy.index) == (
        deployed.board,
        deployed.periods,
        Indexing(deployed.sparse_index, deployed.board_shards),
    )
    assert (policy.keep(GLOBAL_BOARD).top_n, policy.keep("cats").top_n) == (deployed.top_n, deployed.category_top_n)
    assert (policy.keeping.page_size, policy.keeping.cursor_ttl_seconds) == (
        deployed.page_size,
        deployed.cursor_ttl_seconds,
    )
    assert (sharding.default_shards, sharding.max_shards, sharding.cooldown_seconds) == (
        deployed.write_shards,
        deployed.max_write_shards,
        deployed.shard_cooldown_seconds,
    )
    assert sharding.enabled == (deployed.max_write_shards > deployed.write_shards)


@given(deployed_settings(), st.sets(st.sampled_from(sorted(PUBLISHED_VARIABLES))))
def test_kept_variables_stay_as_the_caller_had_them(deployed: Settings, keep: set[str]) -> None:
    mine = Settings()
    expected = {field: getattr(mine if n in keep else deployed, field) for n, field in PUBLISHED_VARIABLES.items()}
    if expected["write_shards"] > expected["max_write_shards"]:  # a mix no stack could run with is refused
        with pytest.raises(ConfigError, match="max_write_shards"):
            mine.with_published(deployed.published_variables(), keep=keep)
        return
    merged = mine.with_published(deployed.published_variables(), keep=keep)
    assert {field: getattr(merged, field) for field in PUBLISHED_VARIABLES.values()} == expected


def test_the_published_variables_are_the_ones_the_functions_read() -> None:
    environment = Template.load(ROOT / "template.yaml").function_environment()
    assert set(PUBLISHED_VARIABLES) <= set(environment)
    assert Settings.from_env(environment).published_variables() == {n: environment[n] for n in PUBLISHED_VARIABLES}


@pytest.mark.parametrize(
    ("name", "value"), [("WRITE_SHARDS", "many"), ("PERIODS", "fortnight"), ("SNAPSHOT_SCHEDULE", "often")]
)
def test_a_malformed_published_value_is_refused_by_name(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"(?i){name.rsplit('_', maxsplit=1)[-1]}"):
        Settings().with_published({name: value})


@pytest.mark.parametrize(
    ("parameters", "variables"),
    [
        (["WriteShards"], {"WRITE_SHARDS"}),
        (["Periods", "TopN"], {"PERIODS", "TOP_N"}),
        # through the OpenViews condition: the per-client limits exist only with PublicViews; its origins too
        (["PublicViews"], {"VIEWS_PER_IP_PER_MINUTE", "VIEWS_PER_VIEWER_PER_MINUTE", "ALLOWED_ORIGINS"}),
        (["ViewsPerIpPerMinute"], {"VIEWS_PER_IP_PER_MINUTE"}),
        (["AlarmEmail", "LogRetentionDays"], set()),
    ],
)
def test_the_variables_a_parameter_decides(parameters: list[str], variables: set[str]) -> None:
    assert Template.load(ROOT / "template.yaml").variables_of(parameters) == variables
