"""`shardboard item put/get` on moto (tables from template.yaml): the HTTP shapes, odd ids, and bad input refused
with exit 2, one line, and nothing written."""

from __future__ import annotations

import json

import pytest

from shardboard.schema import Item, ItemPut
from tests.integration.test_cli import cli  # noqa: F401 - the fixture

CAT = {"title": "A cat", "url": "https://example.com/cat"}


def items_written() -> list[dict]:
    import boto3

    client = boto3.client("dynamodb", region_name="us-east-1")
    return list(client.scan(TableName="shardboard-items")["Items"])


@pytest.mark.parametrize("item", ["images/001.jpg", "a#1", "a b", "ünï/çødé", "a?b"])
def test_put_then_get_an_item_with_its_views(cli, item):  # noqa: F811
    assert cli("init").exit_code == 0
    assert cli("record", item, "-n", "3").exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    # When the item is put, then put again
    first = cli("item", "put", item, "--meta", json.dumps(CAT))
    assert first.exit_code == 0 and "created" in first.output
    second = cli("item", "put", item, "--meta", json.dumps({"title": "Two"}), "--json")
    stored = ItemPut.model_validate(json.loads(second.output))
    assert (stored.id, stored.rev, stored.meta) == (item, 2, {"title": "Two"})
    # Then get --json is GET /item's answer: metadata and all-time views
    got = json.loads(cli("item", "get", item, "--json").output)
    assert Item.model_validate(got).model_dump(mode="json") == got
    assert (got["id"], got["views"], got["meta"], got["created_at"]) == (item, 3, {"title": "Two"}, stored.created_at)
    # And the plain form says the same in lines
    plain = cli("item", "get", item).output
    assert f"{item}: 3 views" in plain and '"title": "Two"' in plain


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["put", "a", "--meta", "not json"], "not valid JSON"),
        (["put", "a", "--meta", "[1]"], "JSON object"),
        (["put", "a", "--meta", json.dumps({"x": "é" * 1100})], "maximum is 2048 bytes"),
        (["put", "a", "--meta", json.dumps({"url": "ftp://x"})], "meta.url"),
        (["put", "", "--meta", "{}"], "must not be empty"),
        (["put", "a\nb", "--meta", "{}"], "control character"),
        (["get", "y" * 513], "513 bytes"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(cli, args, reason):  # noqa: F811
    assert cli("init").exit_code == 0
    result = cli("item", *args)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("shardboard: ") and reason in line
    assert items_written() == []


def test_get_of_an_unknown_item_fails(cli):  # noqa: F811
    assert cli("init").exit_code == 0
    result = cli("item", "get", "nothing")
    assert result.exit_code == 1 and "never created" in result.output


def test_record_with_require_items_refuses_ids_never_created_and_writes_nothing(cli):  # noqa: F811
    import boto3

    assert cli("init").exit_code == 0
    assert cli("item", "put", "known", "--meta", "{}").exit_code == 0
    result = cli("-p", "RequireItems=true", "record", "known", "ghost")
    assert result.exit_code == 2 and "'ghost' was never created" in result.output
    views = boto3.client("dynamodb", region_name="us-east-1").scan(TableName="shardboard-views")["Items"]
    assert views == []
    assert cli("-p", "RequireItems=true", "record", "known").exit_code == 0


def put_at(item: str, at: str) -> None:
    """An item created at ``at`` (the CLI stamps now; a walk needs known times): the stack's own table, on moto."""
    import boto3

    from shardboard.adapters.items_table import ItemStore
    from shardboard.domain.items.records import meta

    ItemStore(boto3.client("dynamodb", region_name="us-east-1"), "shardboard-items").put(
        item, meta({"title": item}), at
    )


def test_items_walks_pages_newest_first_inside_the_window(cli):  # noqa: F811
    # Given 230 items created over three minutes (more than two pages of 100)
    assert cli("init").exit_code == 0
    created = {f"img/{n:03d} #é": f"2026-11-23T17:0{n % 3}:{n % 60:02d}.000Z" for n in range(230)}
    for item, at in created.items():
        put_at(item, at)
    expected = sorted(created, key=lambda i: (created[i], i), reverse=True)
    # When the CLI lists them all, then the first 7 of the first two minutes
    everything = json.loads(cli("items", "--since", "2026-11-23", "-n", "1000", "--json").output)
    window = cli("items", "--since", "2026-11-23T17:00:00Z", "--until", "2026-11-23T17:02:00Z", "-n", "7")
    # Then the walk is the brute-force order with no cursor left, and the window's first 7 are printed with titles
    assert [i["id"] for i in everything["items"]] == expected and everything["cursor"] is None
    first_two_minutes = [i for i in expected if created[i] < "2026-11-23T17:02"]
    lines = window.output.strip().splitlines()
    assert [line.split("  ")[1] for line in lines[:-1]] == first_two_minutes[:7]
    assert lines[-1] == "7 item(s) (more: raise -n)"


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--since", "yesterday"], "--since must be an ISO-8601"),
        (["--since", "2026-11-23", "--until", "soon"], "--until must be an ISO-8601"),
        (["--since", "2026-11-24", "--until", "2026-11-23"], "--since (2026-11-24T00:00:00.000Z) must be earlier than"),
        (["--since", "2026-11-23", "-n", "0"], "limit must be from 1"),
    ],
)
def test_items_refuses_bad_input_with_one_line(cli, args, reason):  # noqa: F811
    assert cli("init").exit_code == 0
    result = cli("items", *args)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("shardboard: ") and reason in line


def test_top_json_puts_each_entrys_metadata_on_the_entry(cli):  # noqa: F811
    # Given a put item and one never put, both viewed, and a snapshot
    assert cli("init").exit_code == 0
    assert cli("item", "put", "cat", "--meta", json.dumps(CAT)).exit_code == 0
    assert cli("record", "cat", "-n", "2").exit_code == 0
    assert cli("record", "dog").exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    assert cli("snapshot").exit_code == 0
    # When top --json prints the board
    board = json.loads(cli("top", "--json").output)
    # Then GET /leaderboard's shape: "meta" on the entry that has some, only
    assert board["items"] == [
        {"rank": 1, "id": "cat", "views": 2, "previous_rank": None, "day_before_rank": None, "meta": CAT},
        {"rank": 2, "id": "dog", "views": 1, "previous_rank": None, "day_before_rank": None},
    ]
