"""`shardboard import` on moto: exit 0 (imported, and again as a no-op), 2 (a bad line: nothing written, one line),
1 (--skip-bad skipped some); the views land in their own periods and `verify` finds every count exact."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from moto import mock_aws

from shardboard.domain.clock import FixedClock
from shardboard.domain.periods import iso
from shardboard_tools.cli import main

LINES = [
    {"id": "images/001.jpg", "time": "2025-01-15T10:00:00Z", "count": 5, "boards": ["cats"]},
    {"id": "images/001.jpg", "time": "2025-01-15T23:00:00Z", "count": 2},
    {"id": "images/002.jpg", "time": "2024-12-31T23:59:59Z", "boards": ["cats", "bw"]},
    {"id": "images/002.jpg", "time": "2025-03-01"},
]


@pytest.fixture
def clock():
    """The CLI's one clock (its commands' and the functions' it runs), fixed: no hour turns during a test. Two hours
    behind the wall clock, so a command that read the wall clock instead would answer for another hour."""
    return FixedClock(datetime.now(UTC) - timedelta(hours=2))


@pytest.fixture
def cli(monkeypatch, tmp_path, clock):
    yield from cli_on_moto(monkeypatch, tmp_path, clock)


def cli_on_moto(monkeypatch, tmp_path, clock=None):
    """The CLI on moto, as a user runs it: ``cli(*args, stdin=None)`` -> click's result; ``clock``: its "now"."""
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.setenv("SHARDBOARD_STATE_DIR", str(tmp_path / "state"))
    for name in ("VIEWS_TABLE", "BOARD_TABLE", "BOARD_NAME", "WRITE_SHARDS", "BOARD_SHARDS", "TOP_N"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    with mock_aws():
        yield lambda *args, stdin=None: runner.invoke(main, list(args), input=stdin, obj=clock, catch_exceptions=False)


def write(tmp_path, lines, name="views.jsonl"):
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)


def test_import_twice_counts_once_in_every_period(cli, tmp_path):
    assert cli("init").exit_code == 0
    path = write(tmp_path, LINES)
    # When the file is imported, then again
    first = cli("import", path)
    again = cli("import", path)
    # Then both succeed; the first writes 3 counters (001 on 2025-01-15, 002 on two days), the second none
    assert first.exit_code == 0, first.output
    assert "imported 4 line(s): 9 views into 3 (item, bucket) counter(s); 3 written; " in first.output
    assert first.output.startswith("imported") and len(first.output.splitlines()) == 2
    assert again.exit_code == 0
    assert "0 written, 3 already present" in again.output
    # And after the stream is processed, every board and period is exact
    assert "processed" in cli("process", "--drain").output
    assert cli("snapshot").exit_code == 0
    verify = json.loads(cli("verify", "--json").output)
    assert verify["exact"] is True and verify["views"] == 9
    month = json.loads(cli("top", "--board", "cats", "--period", "month", "--at", "2025-01-20", "--json").output)
    assert [(e["id"], e["views"]) for e in month["items"]] == [("images/001.jpg", 5)]
    # And a period past its retention (days: 35) is not read, though TTL has not deleted its head yet
    day = cli("top", "--period", "day", "--at", "2024-12-31", "--json")
    assert day.exit_code == 1 and "has no views in the day 2024-12-31 (or it has expired)" in day.output


def test_a_bad_line_exits_2_with_one_line_and_writes_nothing(cli, tmp_path):
    cli("init")
    path = write(tmp_path, [*LINES[:2], "{oops", {"id": "a", "time": "2025-01-01", "count": 0}])
    result = cli("import", path)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "shardboard: line 3: not JSON (Expecting property name enclosed in double quotes)"
        " (2 bad lines of 4); nothing imported (--skip-bad imports the good lines)"
    ]
    assert json.loads(cli("verify", "--json").output)["views"] == 0


def test_skip_bad_imports_the_good_lines_lists_the_bad_and_exits_1(cli, tmp_path):
    cli("init")
    path = write(tmp_path, [LINES[0], {"id": "a", "time": "tomorrow"}, LINES[1]])
    result = cli("import", "--skip-bad", path)
    assert result.exit_code == 1
    assert "shardboard: skipped line 2: time must be an ISO-8601 date or date-time, got 'tomorrow'" in result.output
    assert "imported 2 line(s): 7 views into 1 (item, bucket) counter(s)" in result.output
    assert result.output.strip().splitlines()[-1].startswith("shardboard: 1 bad line(s) skipped (first: line 2:")
    cli("process", "--drain")
    assert json.loads(cli("verify", "--json").output)["views"] == 7


def test_stdin_and_an_empty_file(cli, tmp_path):
    cli("init")
    piped = cli("import", "-", stdin=json.dumps(LINES[0]) + "\n")
    assert piped.exit_code == 0 and "5 views into 1" in piped.output
    empty = cli("import", write(tmp_path, [], "empty.jsonl"))
    assert empty.exit_code == 0 and "imported 0 line(s): 0 views" in empty.output


def test_a_missing_file_exits_2(cli, tmp_path):
    result = cli("import", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2


def test_imported_views_count_in_the_windows_and_the_trending_parts_they_fall_in(cli, tmp_path, clock):
    # Given a stack with a 24 h window and trending, and a file of views with their own times: this hour, 3 and 20
    # hours ago, and 30 hours ago (outside the window)
    params = ("-p", "Periods=day,24h,trending")
    assert cli(*params, "init").exit_code == 0
    now = clock().replace(minute=0, second=0, microsecond=0)
    lines = [
        {"id": "a", "time": iso(now), "count": 2},
        {"id": "b", "time": iso(now - timedelta(hours=3)), "count": 4},
        {"id": "c", "time": iso(now - timedelta(hours=20)), "count": 3, "boards": ["cats"]},
        {"id": "a", "time": iso(now - timedelta(hours=30)), "count": 9},
    ]
    # When they are imported and the pipeline runs
    assert cli(*params, "import", write(tmp_path, lines)).exit_code == 0
    assert "processed" in cli(*params, "process", "--drain").output
    assert cli(*params, "snapshot").exit_code == 0
    # Then the window counts only the views of its hours (a's 9 views of 30 hours ago are out), on every board
    window = json.loads(cli(*params, "top", "--window", "24h", "--json").output)
    assert [(e["id"], e["views"]) for e in window["items"]] == [("b", 4), ("c", 3), ("a", 2)]
    cats = json.loads(cli(*params, "top", "--board", "cats", "--window", "24h", "--json").output)
    assert [(e["id"], e["views"]) for e in cats["items"]] == [("c", 3)]
    # And trending entries show the same views as their parts
    trending = json.loads(cli(*params, "top", "--period", "trending", "--json").output)
    parts = {e["id"]: e["recent"] for e in trending["items"]}
    assert parts == {"a": {"1h": 2, "24h": 2}, "b": {"1h": 0, "24h": 4}, "c": {"1h": 0, "24h": 3}}
    assert json.loads(cli(*params, "verify", "--json").output)["exact"] is True


def test_a_hidden_item_is_never_served_from_a_head_past_its_retention(cli, tmp_path):
    # Given imported views of a day long past its retention (its head written, already expired, TTL not yet run)
    assert cli("init").exit_code == 0
    assert cli("import", write(tmp_path, LINES)).exit_code == 0
    assert "processed" in cli("process", "--drain").output
    assert cli("snapshot").exit_code == 0
    # When the item is hidden (a hide patches the periods still retained)
    assert cli("item", "hide", "images/002.jpg").exit_code == 0
    # Then no read serves the expired day's head, which still names it; the retained month no longer shows it
    day = cli("top", "--period", "day", "--at", "2024-12-31", "--json")
    assert day.exit_code == 1 and "images/002.jpg" not in day.output
    month = json.loads(cli("top", "--period", "month", "--at", "2025-03-01", "--json").output)
    assert month["items"] == []
