"""The shardboard CLI on moto: the seed's own example, and bad input refused with a one-line reason."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from moto import mock_aws

from shardboard.schema import Leaderboard, Ranks, VerifyReport
from shardboard_tools.cli import main

SEED = {
    "images/001.jpg": 27,
    "images/002.jpg": 23,
    "images/003.jpg": 16,
    "images/004.jpg": 83,
    "images/005.jpg": 52,
    "images/006.jpg": 94,
}


@pytest.fixture
def cli(monkeypatch):
    # What `shardboard` sets for a terminal, scoped to this test (monkeypatch restores it)
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    for name in (
        "VIEWS_TABLE",
        "BOARD_TABLE",
        "BOARD_NAME",
        "WRITE_SHARDS",
        "BOARD_SHARDS",
        "TOP_N",
        "SNAPSHOT_SCHEDULE",
        "SPARSE_INDEX",
        "WRITE_CONCURRENCY",
    ):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    with mock_aws():
        yield lambda *args: runner.invoke(main, list(args), catch_exceptions=False)


def test_seed_example_through_the_cli(cli):
    assert cli("init").exit_code == 0
    for item, count in SEED.items():
        assert cli("record", item, "-n", str(count)).exit_code == 0
    assert "processed" in cli("process", "--drain").output
    assert cli("snapshot").exit_code == 0
    result = cli("top", "-n", "3", "--json")
    board = json.loads(result.output)
    # The document GET /leaderboard answers: the schema module's model, exactly (docs/openapi.json)
    assert Leaderboard.model_validate(board).as_json() == board
    assert board["period"] == {"kind": "all"}
    assert [(e["rank"], e["id"], e["views"]) for e in board["items"]] == [
        (1, "images/006.jpg", 94),
        (2, "images/004.jpg", 83),
        (3, "images/005.jpg", 52),
    ]
    verify = cli("verify", "--json")
    assert verify.exit_code == 0 and json.loads(verify.output)["exact"] is True
    assert VerifyReport.model_validate_json(verify.output).items == len(SEED)


def test_rank_answers_as_get_rank_does(cli):
    # Given the seed's example with N = 2 and ranked versions to D = 4
    params = ["-p", "TopN=2", "-p", "RankDepth=4", "-p", "SnapshotSpare=0"]
    cli(*params, "init")
    for item, count in SEED.items():
        cli(*params, "record", item, "-n", str(count))
    cli(*params, "process", "--drain")
    cli(*params, "snapshot")
    # When ranks are asked for an item of the head, one of the ranked version and one past D
    result = cli(*params, "rank", "images/004.jpg", "images/001.jpg", "images/002.jpg", "--json")
    document = json.loads(result.output)
    assert Ranks.model_validate(document).model_dump(mode="json") == document
    ranks = {one["id"]: (one["rank"], one["source"]) for one in document["ranks"]}
    assert ranks == {
        "images/004.jpg": (2, "snapshot"),
        "images/001.jpg": (4, "ranked"),
        "images/002.jpg": (None, "beyond"),
    }
    # And the table form names them too
    assert "images/001.jpg" in cli(*params, "rank", "images/001.jpg").output


def test_top_walks_pages_with_the_cursor_and_around_shows_neighbours(cli):
    # Given the seed's example with N = 2 and ranked versions to D = 4
    params = ["-p", "TopN=2", "-p", "RankDepth=4", "-p", "SnapshotSpare=0"]
    cli(*params, "init")
    for item, count in SEED.items():
        cli(*params, "record", item, "-n", str(count))
    cli(*params, "process", "--drain")
    cli(*params, "snapshot")
    # When today's answer is asked, then the walk it carries is followed page by page
    head = json.loads(cli(*params, "top", "--json").output)
    assert [e["id"] for e in head["items"]] == ["images/006.jpg", "images/004.jpg"] and head["walk"]
    seen, cursor = [], head["walk"]
    first = json.loads(cli(*params, "top", "--cursor", cursor, "-n", "3", "--json").output)
    seen += [(e["rank"], e["id"]) for e in first["items"]]
    last = json.loads(cli(*params, "top", "--cursor", first["cursor"], "--json").output)
    seen += [(e["rank"], e["id"]) for e in last["items"]]
    # Then every entry of the version appears once, with its rank, and the walk ends
    assert seen == [(1, "images/006.jpg"), (2, "images/004.jpg"), (3, "images/005.jpg"), (4, "images/001.jpg")]
    assert "cursor" not in last
    page = json.loads(cli(*params, "top", "--offset", "1", "-n", "2", "--json").output)
    assert [e["id"] for e in page["items"]] == ["images/004.jpg", "images/005.jpg"] and page["offset"] == 1
    assert "--cursor" in cli(*params, "top", "--offset", "0", "-n", "2").output
    # And around-me answers as GET /around does, padded at the bottom of the version
    near = json.loads(cli(*params, "around", "images/001.jpg", "-k", "1", "--json").output)
    assert [e["id"] for e in near["items"]] == ["images/004.jpg", "images/005.jpg", "images/001.jpg"]
    assert (near["above"], near["below"], near["source"]) == (2, 0, "ranked")
    assert "2 above" in cli(*params, "around", "images/001.jpg", "-k", "1").output
    past = cli(*params, "around", "images/003.jpg")
    assert past.exit_code == 1 and "not in the top 4" in past.output


def test_verify_exits_1_when_an_aggregate_differs(cli):
    cli("init")
    cli("record", "a", "b", "-n", "2")
    assert cli("verify").exit_code == 1  # the stream has not been processed: aggregates lag the base table
    cli("process", "--drain")
    assert cli("verify").exit_code == 0


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["record", ""], "id must not be empty"),
        (["record", "ok", "bad\tid"], "control character"),
        (["record", "a", "-n", "0"], "at least 1"),
        (["record", "a", "-n", "5000"], "at most 1000"),
        (["record", "x" * 600], "600 bytes"),
        (["record", "a", "--viewer", ""], "viewer must be 1-128 characters"),
        (["record", "a", "--viewer", "u\nv"], "non-printable"),
        (["record", "a", "--viewer", "u", "-n", "2"], "count must be 1 with a viewer"),
        (["top", "-n", "0"], "limit must be from 1"),
        (["rank", ""], "id must not be empty"),
        (["rank", *(f"i{n}" for n in range(101))], "at most 100 ids"),
        (["rank", "a", "--period", "fortnight"], "period"),
        (["top", "--offset", "-1"], "offset must be a whole number"),
        (["top", "--cursor", "e30"], "cursor is malformed"),
        (["top", "--offset", "0", "--cursor", "e30"], "not both"),
        (["around", "a", "-k", "51"], "k must be from 1 to 50"),
        (["-p", "NoSuchParameter=1", "init"], "unknown template parameter"),
        (["-p", "TopN=many", "init"], "parameter TopN must be a number"),
        (["-p", "TopN=0", "init"], "parameter TopN must be from 1 to 5000"),
        (["-p", "SparseIndex=maybe", "init"], "must be one of true, false"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(cli, args, reason):
    cli("init")
    result = cli(*args)
    assert result.exit_code == 2
    assert reason in result.output
    assert len(result.output.strip().splitlines()) == 1
    verify = json.loads(cli("verify", "--json").output)
    assert verify["views"] == 0


def test_record_with_a_viewer_counts_each_item_once_per_viewer(cli):
    cli("init")
    first = cli("record", "a", "b", "--viewer", "user-42")
    assert first.exit_code == 0 and "recorded 2 views" in first.output and "0 duplicate" in first.output
    again = cli("record", "a", "c", "--viewer", "user-42")
    assert again.exit_code == 0 and "recorded 1 views" in again.output and "1 duplicate" in again.output
    cli("process", "--drain")
    verify = json.loads(cli("verify", "--json").output)
    assert (verify["exact"], verify["views"], verify["items"]) == (True, 3, 3)


def test_version_is_the_package_version(cli):
    from importlib.metadata import version

    import shardboard

    result = cli("--version")
    assert result.exit_code == 0 and result.output == f"shardboard {version('shardboard')}\n"
    assert shardboard.__version__ == version("shardboard")


def test_a_hidden_item_leaves_rank_around_and_top_offset_at_once(cli):
    # Given the seed's example with N = 2 and ranked versions to D = 4: 005 is third, in the version only
    params = ["-p", "TopN=2", "-p", "RankDepth=4", "-p", "SnapshotSpare=0"]
    cli(*params, "init")
    for item, count in SEED.items():
        cli(*params, "record", item, "-n", str(count))
    cli(*params, "process", "--drain")
    cli(*params, "snapshot")
    # When it is hidden (no snapshot run follows)
    assert cli(*params, "item", "hide", "images/005.jpg", "--reason", "spam").exit_code == 0
    # Then rank says so, the item below moves up, around-me refuses it, and pages skip it
    document = json.loads(cli(*params, "rank", "images/005.jpg", "images/001.jpg", "--json").output)
    assert [(one["rank"], one["source"]) for one in document["ranks"]] == [(None, "hidden"), (3, "ranked")]
    refused = cli(*params, "around", "images/005.jpg", "-k", "1")
    assert refused.exit_code == 1 and "hidden" in refused.output
    page = json.loads(cli(*params, "top", "--offset", "1", "-n", "3", "--json").output)
    assert [(e["rank"], e["id"]) for e in page["items"]] == [(2, "images/004.jpg"), (3, "images/001.jpg")]


def test_top_trending_shows_each_entry_with_its_views_in_the_last_hour_and_day(cli):
    # Given a stack counting trending, with views recorded now
    params = ("-p", "Periods=day,trending")
    assert cli(*params, "init").exit_code == 0
    for item, count in (("a", 3), ("b", 5)):
        assert cli(*params, "record", item, "-n", str(count)).exit_code == 0
    assert cli(*params, "process", "--drain").exit_code == 0
    assert cli(*params, "snapshot").exit_code == 0
    # When the trending board is read as JSON and as a table
    board = json.loads(cli(*params, "top", "--period", "trending", "--json").output)
    table = cli(*params, "top", "--period", "trending").output
    # Then each entry carries its parts beside its score (its views are all this hour's), and the table shows them
    assert Leaderboard.model_validate(board).as_json() == board
    assert [(e["id"], e["recent"]) for e in board["items"]] == [("b", {"1h": 5, "24h": 5}), ("a", {"1h": 3, "24h": 3})]
    assert "last 1h" in table and "last 24h" in table


def test_output_outside_a_terminal_never_wraps_what_a_reader_copies(cli, monkeypatch):
    # Given a pipe, not a terminal (CliRunner's output) and no COLUMNS: rich would wrap at 80 columns
    monkeypatch.delenv("COLUMNS", raising=False)
    params = ["-p", "TopN=2", "-p", "RankDepth=4", "-p", "SnapshotSpare=0"]
    long_id = "images/" + "a-very-long-name-" * 10 + ".jpg"
    cli(*params, "init")
    for item, count in {**SEED, long_id: 90}.items():
        cli(*params, "record", item, "-n", str(count))
    cli(*params, "process", "--drain")
    cli(*params, "snapshot")
    # When a page is shown as a table
    shown = cli(*params, "top", "--offset", "0", "-n", "2").output
    # Then the long id is on one line, and the cursor printed is one line that the next command takes as it is
    assert any(long_id in line for line in shown.splitlines())
    (line,) = [line for line in shown.splitlines() if "--cursor" in line]
    cursor = line.split("--cursor ", 1)[1]
    assert len(line) > 80
    following = cli(*params, "top", "--cursor", cursor, "--json")
    assert following.exit_code == 0, following.output
    assert json.loads(following.output)["items"][0]["rank"] == 3
