"""Upgrading a stack written by the releases before the coarse index (docs/deploy.md, "Upgrading"), on moto: their
aggregates and past entries hold each period's count in ``v_<kind>`` (the index's range key) and no ``fmt``, and an
aggregate is keyed for all time by ``board_shard`` (``by-views``, sorted by the views). The new release reads them,
converts each one it writes, and `shardboard migrate` converts the rest; every count stays exact throughout and the
indexes find every item they must."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from shardboard.adapters.keys import (
    BOARD_SHARD,
    DEEP_BUCKET,
    DEEP_KEY,
    FORMAT,
    ITEM_ID,
    PERIOD_BUCKET_PREFIX,
    PERIOD_COUNT_PREFIX,
    PERIOD_KEY_PREFIX,
    VIEWS,
)
from shardboard.domain.publishing.deep_tier import deep_bucket
from tests.integration.test_import_cli import cli_on_moto
from tests.integration.test_recovery import drain, record_workload, report


def counted_items(client: Any, table: str) -> list[dict[str, Any]]:
    """Every aggregate and past entry of the board table (what holds counts), as stored."""
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items += [item for item in page["Items"] if ITEM_ID in item]
    return items


def as_previous_release(client: Any, table: str) -> int:
    """Rewrite every aggregate and past entry in the shape the release before wrote: each ``n_<kind>`` count back
    in ``v_<kind>``, no ``fmt``, all time's key in ``board_shard``. Returns how many it rewrote."""
    rewritten = 0
    for item in counted_items(client, table):
        old = {name: value for name, value in item.items() if name != FORMAT and not name.startswith("v_")}
        for name, value in item.items():
            if name.startswith(PERIOD_COUNT_PREFIX):
                del old[name]
                old[PERIOD_BUCKET_PREFIX + name[len(PERIOD_COUNT_PREFIX) :]] = value
        if DEEP_KEY in item:
            old[BOARD_SHARD] = old.pop(DEEP_KEY)
            del old[DEEP_BUCKET]
        client.put_item(TableName=table, Item=old)
        rewritten += 1
    return rewritten


def assert_converted(client: Any, table: str) -> None:
    """Every item in this release's shape, each keyed kind (all time too) sorted at or above its count's bucket."""
    for item in counted_items(client, table):
        assert FORMAT in item and BOARD_SHARD not in item, item
        if DEEP_KEY in item:
            assert int(item[DEEP_BUCKET]["N"]) >= deep_bucket(int(item[VIEWS]["N"])), item
        for name in item:
            if name.startswith(PERIOD_KEY_PREFIX):
                kind = name[len(PERIOD_KEY_PREFIX) :]
                count = int(item[PERIOD_COUNT_PREFIX + kind]["N"])
                assert int(item[PERIOD_BUCKET_PREFIX + kind]["N"]) >= deep_bucket(count), item


def legacy_count(client: Any, table: str) -> int:
    """Items in a previous release's shape: not converted, or still keyed in ``by-views``."""
    return sum(FORMAT not in item or BOARD_SHARD in item for item in counted_items(client, table))


def keyed_in_views_index(client: Any, table: str) -> int:
    return sum(BOARD_SHARD in item for item in counted_items(client, table))


@pytest.fixture
def upgraded(make_pipeline):
    """A stack the previous release wrote: views counted, snapshots taken, then the table put in that release's
    shape, as `sam deploy` of this release finds it."""
    pipeline = make_pipeline(TopN="5", BoardShards="3", WriteShards="4", SnapshotSpare="2")
    record_workload(pipeline, items=40, views=600, seed=3)
    drain(pipeline)
    pipeline.snapshot()
    board = pipeline.board
    assert as_previous_release(board.client, board.table) >= 40
    assert keyed_in_views_index(board.client, board.table) > 0
    return pipeline


def test_the_new_release_reads_writes_and_migrates_the_previous_releases_table_without_losing_a_count(upgraded):
    board = upgraded.board
    client, table = board.client, board.table
    legacy, in_views_index = legacy_count(client, table), keyed_in_views_index(client, table)
    # Given the table in the previous release's shape: its counts read exact, and a refresh gathers exact tops
    # from indexes that still sort by counts (all time from `by-views`)
    assert report(upgraded).exact
    upgraded.snapshot()
    assert report(upgraded).snapshot_exact is True
    # When views keep coming (the aggregator converts each item it writes first)
    record_workload(upgraded, items=20, views=300, seed=4)  # half the items
    drain(upgraded)
    upgraded.snapshot()
    # Then every count and snapshot is exact, and the items written were converted
    checked = report(upgraded)
    assert checked.exact and checked.snapshot_exact is True and not checked.index_misses
    # (this runner delivers the stream from its start: the replays convert the items they touch too)
    assert legacy_count(client, table) < legacy
    # (an item joined to all time's index leaves `by-views`)
    assert keyed_in_views_index(client, table) < in_views_index
    # When the one-off migration runs (twice: the second finds nothing to do)
    left = legacy_count(client, table)
    assert board.migrate(2) == left
    assert board.migrate(2) == 0
    # Then every item is in this release's shape, exact, found by the index, and the snapshots stay exact
    assert_converted(client, table)
    upgraded.snapshot()
    checked = report(upgraded)
    assert checked.exact and checked.snapshot_exact is True and not checked.index_misses and not checked.refill_needed


@pytest.fixture
def cli(monkeypatch, tmp_path):
    yield from cli_on_moto(monkeypatch, tmp_path)


def write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_shardboard_migrate_converts_once_and_late_views_convert_the_past_entries_they_move(cli, tmp_path):
    day = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%d")
    assert cli("init").exit_code == 0
    # Given a stack that counted views today and imported some of an earlier day (past entries), all in the
    # previous release's shape
    assert cli("record", "a", "b", "c", "-n", "3", "--board", "cats").exit_code == 0
    assert cli("record", "a", "-n", "20").exit_code == 0
    early = [{"id": "a", "time": f"{day}T10:00:00Z", "count": 5}, {"id": "d", "time": f"{day}T11:00:00Z"}]
    assert cli("import", write(tmp_path, "early.jsonl", early)).exit_code == 0
    cli("process", "--drain")
    cli("snapshot")
    client = boto3.client("dynamodb")
    table = next(name for name in client.list_tables()["TableNames"] if name.endswith("-board"))
    rewritten = as_previous_release(client, table)
    assert any("entry#" in item["pk"]["S"] for item in counted_items(client, table))
    # When more views of that day arrive (a late move through the past entries, converted as it goes)
    late = [{"id": "a", "time": f"{day}T12:00:00Z", "count": 2}, {"id": "d", "time": f"{day}T13:00:00Z"}]
    assert cli("import", write(tmp_path, "late.jsonl", late)).exit_code == 0
    cli("process", "--drain")
    left = legacy_count(client, table)
    assert 0 < left < rewritten
    # Then the migration converts the rest, once, and says how many
    first = cli("migrate")
    assert first.exit_code == 0, first.output
    assert first.output.strip() == f"migrated: {left} aggregate(s) and past entries converted, 0 takedown id(s) moved"
    assert cli("migrate").output.strip().startswith("migrated: 0 aggregate(s)")
    assert_converted(client, table)
    # And every count, snapshot and period is exact
    cli("snapshot")
    verified = json.loads(cli("verify", "--json").output)
    assert verified["exact"] is True and verified["views"] == 38
    top = json.loads(cli("top", "--json").output)
    assert [(entry["id"], entry["views"]) for entry in top["items"]] == [("a", 30), ("b", 3), ("c", 3), ("d", 2)]
    then = json.loads(cli("top", "--period", "day", "--at", day, "--json").output)
    assert [(entry["id"], entry["views"]) for entry in then["items"]] == [("a", 7), ("d", 2)]
