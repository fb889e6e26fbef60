"""Library parity (issue 38, item 6) on moto: what ``Leaderboard`` answers is what HTTP answers from the same items,
through the same services: top entries with ``meta`` (and trending's ``score`` and ``recent``), pages by offset and
by cursor, ranks, around, an item and the newest items."""

from __future__ import annotations

import json
from urllib.parse import quote

import boto3
import pytest

from shardboard import Entry, Leaderboard, NoItem
from tests.integration.test_http_api import call, get
from tests.integration.test_items_http import put_item

VIEWS = {"a": 9, "b": 7, "c": 5, "d": 3, "e": 1}


@pytest.fixture
def stack(make_pipeline):
    """Five items with views, two with metadata, aggregated and snapshotted on a board of N=3 and depth D=10."""
    pipeline = make_pipeline(TopN="3", RankDepth="10", Periods="trending")
    for item in ("a", "c"):
        assert (
            call(
                pipeline,
                "items_admin",
                put_item(item, json.dumps({"title": item.upper(), "url": f"https://example.com/{item}"})),
            )[0]
            == 200
        )
    for item, views in VIEWS.items():
        call(pipeline, "record_views", _post(item, views))
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    return pipeline


def _post(item: str, count: int) -> dict:
    from tests.integration.test_http_api import post

    return post(json.dumps({"id": item, "count": count}))


def test_top_entries_carry_what_http_entries_carry(stack):
    board = Leaderboard(boto3.Session(), settings=stack.settings)
    top = board.top()
    _, _, body = call(stack, "read_api", get("/leaderboard"))
    assert all(isinstance(entry, Entry) for entry in top.items)
    assert [{k: v for k, v in vars(e).items() if v is not None} for e in top.items] == [
        {k: v for k, v in item.items() if v is not None} for item in body["items"]
    ]
    assert top.items[0].meta == {"title": "A", "url": "https://example.com/a"} and top.items[1].meta is None
    # Trending's entries carry score and recent as HTTP's do
    trending = board.top(period="trending")
    _, _, hot = call(stack, "read_api", get("/leaderboard", "period=trending"))
    assert [(e.id, e.score, e.recent) for e in trending.items] == [
        (i["id"], i["score"], i["recent"]) for i in hot["items"]
    ]
    assert trending.items[0].score is not None and trending.items[0].recent is not None


def test_pages_by_offset_and_by_cursor_are_the_http_pages(stack):
    board = Leaderboard(boto3.Session(), settings=stack.settings)
    first = board.page(offset=1, limit=2)
    _, _, body = call(stack, "read_api", get("/leaderboard", "offset=1&limit=2"))
    assert [(e.rank, e.id, e.views) for e in first.items] == [(i["rank"], i["id"], i["views"]) for i in body["items"]]
    assert [e.id for e in first.items] == ["b", "c"] and first.offset == 1
    # The walk from today's answer, page after page, reaches every ranked entry once
    walked, cursor = [], board.top().walk
    while cursor is not None:
        page = board.page(cursor=cursor, limit=2)
        walked += [e.id for e in page.items]
        cursor = page.cursor
    assert walked == list(VIEWS)


def test_ranks_around_and_item_calls_answer_as_http(stack):
    board = Leaderboard(boto3.Session(), settings=stack.settings)
    _, _, ranks = call(stack, "read_api", get("/rank", "id=d&id=e"))
    assert [r.as_json() for r in board.ranks(["d", "e"])] == ranks["ranks"]
    near = board.around("d", k=1)
    _, _, around = call(stack, "read_api", get("/around", "id=d&k=1"))
    assert [(e.rank, e.id) for e in near.entries] == [(i["rank"], i["id"]) for i in around["items"]]
    # One item, as GET /item?id= answers it
    _, _, item = call(stack, "read_api", get("/item", f"id={quote('a')}"))
    assert board.item("a").model_dump(mode="json", exclude_none=True) == {
        k: v for k, v in item.items() if v is not None
    }
    with pytest.raises(NoItem):
        board.item("never")
    # The newest items, as GET /items answers them
    newest = board.newest(created_after="2000-01-01T00:00:00Z")
    _, _, listed = call(stack, "read_api", get("/items", "created_after=2000-01-01T00:00:00Z"))
    assert [record.item_id for record in newest.items] == [entry["id"] for entry in listed["items"]] == ["c", "a"]
