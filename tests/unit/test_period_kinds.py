"""Periods as values: a period kind is told apart only by its type (domain/periods.py), never by comparing its name
elsewhere, and the types answer what the string comparisons used to (stored names byte for byte)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shardboard.adapters.keys import bucket_attr, count_attr, index_key_attr, index_name, snapshot_pk, threshold_pk
from shardboard.domain.periods import (
    ALL,
    DAY,
    HOUR,
    KINDS,
    MONTH,
    TRENDING,
    WEEK,
    PeriodError,
    kind_of,
    known_kind,
)
from shardboard.domain.sharding import period_shard_value

ROOT = Path(__file__).resolve().parents[2]
# The period types: the only modules that may tell one kind from another by its name.
PERIOD_TYPES = {
    "src/shardboard/domain/periods.py",
    "src/shardboard/domain/windows.py",
    "src/shardboard/domain/trending.py",
    "src/shardboard/domain/policy.py",  # Periods: the anchor among the configured kinds
}
CONSTANT = r"(HOUR|DAY|WEEK|MONTH|TRENDING|ALL|ALL_TIME)\b"
LITERAL = r"[\"'](hour|day|week|month|trending|all)[\"']"
COMPARISONS = re.compile(
    rf"(==|!=)\s*({CONSTANT}|{LITERAL})"  # kind == HOUR, period == "all"
    rf"|\b{CONSTANT}\s*(==|!=)"  # ALL != kind
    r"|\bkind\s*(==|!=)(?!\s*[\"'])"  # kind == self.anchor (not another kind of thing: kind == "write")
    r"|(?<!for\s)\bkind\s+(not\s+)?in\s*[(\[{]"  # kind in (HOUR, TRENDING), not an iteration
)


def comparisons(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if COMPARISONS.search(line)]


def test_no_period_kind_is_compared_outside_the_period_types() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {line}"
        for tree in ("src", "tools")
        for path in sorted((ROOT / tree).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in PERIOD_TYPES
        for line in comparisons(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "ask the kind (domain/periods.py kind_of) instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "if period.kind == ALL:",
        "if kind != TRENDING:",
        'return self.views if kind == "all" else 0',
        "if kind in (HOUR, TRENDING):",
        "if ALL != kind:",
        "applied = old.applied if period.kind == ctx.anchor else None",
        "named = None if period == ALL else period",
    ],
)
def test_the_scan_finds_a_comparison(line: str) -> None:
    assert comparisons(line) == [line]


@pytest.mark.parametrize(
    "line",
    [
        "for kind in (*periods.kinds, ALL):",
        'if kind == "write":',
        "if period.kind in known.keyed:",
        "kind = kind_of(period.kind)",
    ],
)
def test_the_scan_leaves_iteration_and_other_kinds_alone(line: str) -> None:
    assert comparisons(line) == []


def test_every_counted_kind_is_registered_under_its_stored_name() -> None:
    assert [kind_of(name).name for name in (ALL, *KINDS)] == [ALL, HOUR, DAY, WEEK, MONTH, TRENDING]
    assert kind_of("24h").name == "24h"
    assert known_kind("24h") is None
    with pytest.raises(PeriodError):
        kind_of("quarter")


def test_stored_names_are_those_of_the_releases_before() -> None:
    assert [snapshot_pk("cats"), snapshot_pk("cats", DAY, "2026-11-23")] == [
        "snapshot#cats",
        "snapshot#cats#day#2026-11-23",
    ]
    assert threshold_pk("cats", WEEK, "2026-W48") == "threshold#cats#week#2026-W48"
    assert threshold_pk("cats", "24h", "2026-11-23T14") == "threshold#cats#24h#2026-11-23T14"
    assert period_shard_value("cats", ALL, ALL, 3, 10) == "cats#10#3"
    assert period_shard_value("cats", HOUR, "2026-11-23T14", 3, 10) == "cats#hour#2026-11-23T14#10#3"
    assert [count_attr(ALL), bucket_attr(MONTH), index_key_attr(TRENDING), index_name(DAY)] == [
        "views",
        "v_month",
        "g_trending",
        "by-day",
    ]


def test_only_trending_decays_and_weighs_its_views() -> None:
    assert [name for name in (ALL, *KINDS) if kind_of(name).decays] == [TRENDING]
    assert kind_of(DAY).weight(HOUR, "2026-11-23T14", 6) == 1
    assert kind_of(TRENDING).weight(HOUR, "2026-11-23T14", 6) > 1


def test_a_period_just_ended_is_named_within_the_lookback_only() -> None:
    midnight = datetime(2026, 11, 24, tzinfo=UTC)
    lookback = timedelta(minutes=10)
    assert kind_of(DAY).ended(midnight + timedelta(minutes=5), lookback, 6) == "2026-11-23"
    assert kind_of(DAY).ended(midnight + timedelta(minutes=15), lookback, 6) is None
    assert kind_of(ALL).ended(midnight, lookback, 6) is None


def test_all_time_never_ends_nor_expires() -> None:
    lasting = kind_of(ALL)
    assert lasting.expires_at(ALL, 4, 6) is None
    assert lasting.next_bucket(ALL, 6) == lasting.previous_bucket(ALL, 6) == ALL
    assert lasting.labelled(ALL) == "all time"
    assert kind_of(MONTH).expires_at("2026-11", 2, 6) == int(datetime(2027, 2, 1, tzinfo=UTC).timestamp())
