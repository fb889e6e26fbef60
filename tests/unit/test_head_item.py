"""The typed head and the item the board table stores (adapters/board_table.py): the stored attributes are the
compact JSON text they always were, and a head reads back as it was written."""

from __future__ import annotations

from shardboard.adapters.board_table import rank_part_items, snapshot_from_item, snapshot_item
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.gather import Entry
from shardboard.domain.publishing.head import Head, RankBlock, RankEvent, Retired, rows
from shardboard.domain.publishing.ranked_versions import build_parts

BLOCK = {
    "rv": "abc123",
    "generated_at": "2026-11-23T06:01:00.000Z",
    "depth": 400,
    "count": 3,
    "page_size": 100,
    "shards": 2,
    "pages": [[1, 9, 5, 1]],
    "last": [5, 3],
    "events": [["hide", "b", 2], ["unhide", "b"]],
    "hits": {"0": 3, "1": 2},
    "digest": "r" * 64,
    "threshold": 0,
    "retired": [["old", "2026-11-23T06:00:00.000Z", 1, 2], ["older", "t", 1, 2, [["delete", "é", 1]], 3]],
}


def head() -> Head:
    return Head(
        board="global",
        period={"kind": "day", "bucket": "2026-11-23"},
        bucket="2026-11-23",
        version=7,
        generated_at="2026-11-23T06:01:00.000Z",
        items=rows([["a", 9], ["é#1", 7]]),
        items_read=12,
        threshold=7,
        shard_hits={0: 5, 1: 7},
        digest="d" * 64,
        spare=rows([["c", 5]]),
        expires_at=1_900_000_000,
        meta={"a": {"title": "Ä"}, "é#1": None},
        meta_at="2026-11-23T06:00:00.000Z",
        rank=RankBlock.from_json(BLOCK),
    )


def test_the_stored_item_is_the_compact_json_it_always_was():
    item = snapshot_item(head())
    assert item == {
        "pk": {"S": "snapshot#global#day#2026-11-23"},
        "board": {"S": "global"},
        "period": {"S": '{"kind":"day","bucket":"2026-11-23"}'},
        "bucket": {"S": "2026-11-23"},
        "version": {"N": "7"},
        "generated_at": {"S": "2026-11-23T06:01:00.000Z"},
        "items": {"S": '[["a",9],["é#1",7]]'},
        "items_read": {"N": "12"},
        "threshold": {"N": "7"},
        "shard_hits": {"S": '{"0": 5, "1": 7}'},
        "digest": {"S": "d" * 64},
        "expires_at": {"N": "1900000000"},
        "meta": {"S": '{"a":{"title":"Ä"},"é#1":null}'},
        "meta_at": {"S": "2026-11-23T06:00:00.000Z"},
        "rank": {
            "S": '{"rv":"abc123","generated_at":"2026-11-23T06:01:00.000Z","depth":400,"count":3,"page_size":100,'
            '"shards":2,"pages":[[1,9,5,1]],"last":[5,3],"events":[["hide","b",2],["unhide","b"]],'
            '"hits":{"0":3,"1":2},"digest":"' + "r" * 64 + '","threshold":0,"retired":[["old",'
            '"2026-11-23T06:00:00.000Z",1,2],["older","t",1,2,[["delete","é",1]],3]]}'
        },
        "spare": {"S": '[["c",5]]'},
    }
    assert list(item) == list(item.keys())  # (the order above is the order written)


def test_a_head_reads_back_as_written_ttl_included():
    written = head()
    assert snapshot_from_item(snapshot_item(written)) == written
    block = written.rank
    assert block is not None and block.as_json() == BLOCK
    assert block.events == (RankEvent("hide", "b", 2), RankEvent("unhide", "b"))
    assert block.retired[0] == Retired("old", "2026-11-23T06:00:00.000Z", 1, 2)  # no events or count: an old entry


def test_a_ranked_versions_rows_are_stored_as_lists():
    parts = build_parts([Entry("a", 9), Entry("b", 7), Entry("c", 7)], depth=3, rv="x")
    [page, shard] = rank_part_items(PeriodKey("global", "all", "all"), parts, None)
    assert page["entries"]["S"] == '[["a",9],["b",7],["c",7]]'
    assert shard["entries"]["S"] == '{"a":[1,1,9],"b":[2,2,7],"c":[3,2,7]}'
