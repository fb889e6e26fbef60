"""The head with inline metadata on DynamoDB Local: 100 documents of 2 KB, written by the real snapshot job, stay
under 350 KB, and a GET of it costs what the capacity model says (the figure in README "Items")."""

from __future__ import annotations

import pytest

from shardboard.adapters.keys import snapshot_pk
from shardboard.domain.items.records import meta
from shardboard.domain.periods import ALL
from shardboard.handlers import aggregate, read_api, snapshot
from shardboard_tools.capacity.units import item_size, read_units
from shardboard_tools.local.scheduler import scheduled_event
from shardboard_tools.local.stream_runner import StreamRunner
from tests.conftest import load_event
from tests.unit.test_head_meta import big_document

pytestmark = pytest.mark.e2e


def test_a_head_with_100_documents_of_2_kb(make_local, tmp_path, capsys):
    # Given 100 items with 2 KB documents, each viewed, and the snapshot job run
    rt = make_local()
    ids = [f"images/{n:03d}.jpg" for n in range(100)]
    for n, item in enumerate(ids):
        rt.items.put(item, meta(big_document(n)), "2026-11-23T17:00:00.000Z")
        rt.views.add_view(item, 0)
    StreamRunner(rt.dynamodb, rt.streams, rt.settings.views_table, aggregate.handler, state_dir=tmp_path).drain()
    rt.invoke(snapshot.handler, scheduled_event())
    # When the head is read as GET /leaderboard reads it (one eventually consistent GetItem)
    read = rt.dynamodb.get_item(
        TableName=rt.settings.board_table,
        Key={"pk": {"S": snapshot_pk(rt.settings.board, ALL, ALL)}},
        ReturnConsumedCapacity="TOTAL",
    )
    size = item_size(read["Item"])
    # Then every entry's document is inline, the item is under 350 KB, and the read costs ceil(size / 4 KB) / 2
    with capsys.disabled():
        print(f"\nhead: {size:,} bytes, GET {read['ConsumedCapacity']['CapacityUnits']} RU")
    assert 200_000 < size < 350_000
    assert read["ConsumedCapacity"]["CapacityUnits"] == read_units(size, consistent=False) == 26
    # And GET /leaderboard (all 100 entries) carries all 100 documents
    event = {**load_event("read_leaderboard_get.json"), "rawQueryString": "", "queryStringParameters": None}
    answer = rt.invoke(read_api.handler, event)
    assert answer["statusCode"] == 200 and answer["body"].count('"meta":') == 100
