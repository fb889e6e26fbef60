"""`shardboard plan --boards FILE`: GSI shards per board, weighted by index writes, within the partition limit."""

from __future__ import annotations

import itertools
import json

import pytest
from click.testing import CliRunner

from shardboard_tools.cli.plan import plan as plan_command
from shardboard_tools.planning import HEADROOM, PARTITION_WRITE_UNITS
from shardboard_tools.planning_boards import (
    GLOBAL_BOARD,
    BoardsFileError,
    apportion,
    parse_boards,
    plan_boards,
    shards_for_index_writes,
)

SHARES = {"cats": 0.35, "dogs": 0.1, "birds": 0.05, "fish": 0.02, "user:123": 0.001, "tiny": 0.0001}


def _by_board(rows):
    return {row.board: row for row in rows}


@pytest.mark.parametrize("total_shards", [None, 60, 200])
def test_shards_grow_with_share_and_the_global_board_needs_the_most(total_shards):
    # Given a site of 20,000 views/s and categories with shares from 35 % down to 0.01 %
    rows = plan_boards(SHARES, views_per_sec=20_000, total_shards=total_shards, refresh=None)
    boards = _by_board(rows)
    # Then the global board is there, first, with every view and the most shards
    assert rows[0].board == GLOBAL_BOARD
    assert boards[GLOBAL_BOARD].share == 1.0
    assert boards[GLOBAL_BOARD].shards == max(row.shards for row in rows)
    # And S never falls as the share rises
    by_share = sorted(rows, key=lambda row: row.share)
    assert all(a.shards <= b.shards for a, b in itertools.pairwise(by_share))
    # And a tiny board gets one shard
    assert boards["tiny"].shards == 1


def test_partition_limit_is_respected_with_headroom():
    for views in (0, 1, 499, 500, 501, 5_000, 123_456):
        for row in plan_boards(SHARES, views_per_sec=views, total_shards=10, refresh=None):
            # Even under a budget that is too small, no key takes more than 1,000 units/s / HEADROOM
            assert row.peak_writes_per_key * HEADROOM <= PARTITION_WRITE_UNITS + 1e-9
            assert row.shards >= row.min_shards >= 1
            assert row.peak_writes_per_key == pytest.approx(row.index_writes_per_sec / row.shards)


def test_minimum_shards_follow_the_index_writes():
    # 2 index writes per view (the default, worst case): 5,000 views/s -> 10,000 writes/s -> 20 keys of 500/s
    boards = _by_board(plan_boards({"cats": 0.35}, views_per_sec=5_000, refresh=None))
    assert boards[GLOBAL_BOARD].index_writes_per_sec == 10_000
    assert boards[GLOBAL_BOARD].shards == 20
    assert boards["cats"].shards == 7
    # A sparse index that writes 0.2 per view needs a tenth of that
    sparse = _by_board(plan_boards({"cats": 0.35}, views_per_sec=5_000, index_writes_per_view=0.2, refresh=None))
    assert sparse[GLOBAL_BOARD].shards == 2
    assert shards_for_index_writes(0) == 1
    assert shards_for_index_writes(500) == 1
    assert shards_for_index_writes(501) == 2


def test_a_budget_is_shared_by_index_writes_within_the_bounds():
    # Given a budget well above the minimums, the shards follow the boards' shares of index writes (seed 003)
    rows = plan_boards({"cats": 0.35, "dogs": 0.65}, views_per_sec=1_000, total_shards=200, refresh=None)
    boards = _by_board(rows)
    assert sum(row.shards for row in rows) == 200
    assert boards["cats"].index_write_share == pytest.approx(0.35 / 2)
    for row in rows:
        assert abs(row.shards / 200 - row.index_write_share) <= 1 / 200
    # And a category never gets more than its N: the rest goes to the others
    capped = _by_board(plan_boards({"cats": 0.35}, views_per_sec=1_000, total_shards=1_000, refresh=None))
    assert capped["cats"].shards == 100
    assert capped[GLOBAL_BOARD].shards == 900


def test_apportion_sums_to_the_budget_and_keeps_the_bounds():
    weights = {"a": 0.5, "b": 0.3, "c": 0.2}
    low = {"a": 1, "b": 1, "c": 4}
    high = {"a": 100, "b": 100, "c": 100}
    result = apportion(10, weights, low, high)
    assert sum(result.values()) == 10
    assert result["c"] == 4  # its minimum, above its 2 by weight
    assert all(low[name] <= result[name] <= high[name] for name in weights)
    assert apportion(3, weights, {"a": 5, "b": 5, "c": 5}, high) == {"a": 5, "b": 5, "c": 5}  # the limit wins


def test_refresh_estimate_is_about_n_plus_s():
    rows = plan_boards({"cats": 0.35, "tiny": 0.0001}, views_per_sec=5_000)
    for row in rows:
        assert row.top_n <= row.refresh_items_read <= 1.3 * (row.top_n + row.shards)
    boards = _by_board(rows)
    assert boards[GLOBAL_BOARD].top_n == 1000
    assert boards["cats"].top_n == 100


def test_parse_json_and_csv():
    parsed = parse_boards('{"views_per_s": 5000, "boards": {"cats": 0.35, "user:1": {"share": 0.1, "top": 50}}}')
    assert parsed.views_per_sec == 5000
    assert [(board.name, board.share, board.top_n) for board in parsed.boards] == [
        ("cats", 0.35, None),
        ("user:1", 0.1, 50),
    ]
    parsed = parse_boards("board,share\n# comment\ncats,0.35\n\ndogs, 0.1, 20\n", "boards.csv")
    assert parsed.views_per_sec is None
    assert [(board.name, board.share, board.top_n) for board in parsed.boards] == [
        ("cats", 0.35, None),
        ("dogs", 0.1, 20),
    ]
    with pytest.raises(BoardsFileError):
        parse_boards("cats,0.3\ncats,0.2\n")


def _invoke(tmp_path, name, content, *args):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    return CliRunner().invoke(plan_command, ["--boards", str(path), *args])


EXAMPLE = {"views_per_s": 5000, "boards": {f"cat{i}": share for i, share in enumerate([0.35, 0.1, 0.05, 0.001])}}


def test_json_output_shape(tmp_path):
    result = _invoke(tmp_path, "boards.json", json.dumps(EXAMPLE), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["views_per_sec"] == 5000
    assert document["total_shards"] == sum(row["shards"] for row in document["boards"])
    assert [row["board"] for row in document["boards"]] == [GLOBAL_BOARD, "cat0", "cat1", "cat2", "cat3"]
    assert set(document["boards"][0]) == {
        "board",
        "share",
        "top_n",
        "index_writes_per_sec",
        "index_write_share",
        "min_shards",
        "shards",
        "refresh_items_read",
        "peak_writes_per_key",
    }


def test_csv_takes_the_rate_from_the_option_and_prints_a_table(tmp_path):
    result = _invoke(tmp_path, "boards.csv", "cats,0.35\ndogs,0.1\n", "--views-per-sec", "5000", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["views_per_sec"] == 5000
    assert document["boards"][0]["shards"] == 20
    table = _invoke(tmp_path, "boards.csv", "cats,0.35\ndogs,0.1\n", "--total-shards", "40")
    assert table.exit_code == 0, table.output
    assert "cats" in table.stdout
    assert "budget 40" in table.stdout


def test_the_command_option_overrides_the_files_rate(tmp_path):
    result = _invoke(tmp_path, "boards.json", json.dumps(EXAMPLE), "--views-per-sec", "1000", "--json")
    assert json.loads(result.stdout)["views_per_sec"] == 1000


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("boards.json", '{"views_per_s": 5000, "boards": {"cats": -0.1}}'),
        ("boards.json", '{"views_per_s": 5000, "boards": {"cats": 1.5}}'),
        ("boards.json", '{"views_per_s": 5000, "boards": {"Cats!": 0.1}}'),
        ("boards.json", '{"views_per_s": 5000, "boards": {"' + "x" * 65 + '": 0.1}}'),
        ("boards.json", '{"views_per_s": -1, "boards": {}}'),
        ("boards.json", '{"views_per_s": 5000, "boards": ["cats"]}'),
        ("boards.json", '{"views_per_s": 5000, "boards": {"global": 0.5}}'),
        ("boards.json", "{not json"),
        ("boards.csv", "cats,abc\n"),
        ("boards.csv", "cats\n"),
        ("boards.csv", "cats,0.1\nbad name,0.1\n"),
        ("boards.csv", "cats,0.1,0\n"),
    ],
)
def test_bad_files_exit_2_with_one_line(tmp_path, name, content):
    result = _invoke(tmp_path, name, content)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("shardboard: ")


def test_missing_or_unreadable_file_exits_2_with_one_line(tmp_path):
    for path in (tmp_path / "missing.json", tmp_path):  # absent, and a directory
        result = CliRunner().invoke(plan_command, ["--boards", str(path)])
        assert result.exit_code == 2, result.output
        assert len(result.stderr.strip().splitlines()) == 1
    undecodable = tmp_path / "boards.csv"
    undecodable.write_bytes(b"\xff\xfe\x00cats,0.1")
    assert CliRunner().invoke(plan_command, ["--boards", str(undecodable)]).exit_code == 2


def test_without_boards_the_command_is_unchanged():
    result = CliRunner().invoke(plan_command, ["--views-per-sec", "5000", "--partitions", "4", "--json"])
    assert result.exit_code == 0, result.output
    assert "gsi_shards" in json.loads(result.stdout)
