"""GET /items (issue 13 slice 8) through the local API gateway on moto: routed beside GET /items/{id+}, newest
first across the created-shards, walked with its cursor while items are created, and every bad input a 400 with
{"message", "code"} and nothing else."""

from __future__ import annotations

import json
from urllib.parse import quote, urlencode

import pytest

from shardboard.domain.items.records import meta
from shardboard_tools.local.gateway import Gateway, Request
from tests.conftest import load_event
from tests.integration.test_http_api import call

TIMES = [f"2026-11-23T17:00:{s:02d}.000Z" for s in range(6)]


def ask(gateway: Gateway, target: str) -> tuple[int, dict]:
    reply = gateway.handle(Request.of("GET", target))
    return reply.status, json.loads(reply.body)


@pytest.fixture
def gateway(pipeline) -> Gateway:
    return Gateway.from_template(pipeline.runtime.template)


def create(pipeline, count: int, prefix: str = "i") -> list[str]:
    """``count`` items, three to a time (equal times are ordered by id), over every created-shard."""
    ids = [f"{prefix}{n:02d}/x #é" for n in range(count)]
    for n, item in enumerate(ids):
        pipeline.runtime.items.put(item, meta({"title": item}), TIMES[n // 3 % len(TIMES)])
    return ids


def newest_first(pipeline, ids: list[str]) -> list[str]:
    records = [pipeline.runtime.items.get(item, consistent=True) for item in ids]
    return [r.item_id for r in sorted(records, key=lambda r: (r.created_at, r.item_id), reverse=True)]


def test_the_sample_event_lists_the_newest_items(pipeline):
    # Given two items created on the sample's day
    create(pipeline, 2)
    # When the GET /items sample arrives
    status, _, body = call(pipeline, "read_api", load_event("read_items_newest_get.json"))
    # Then both come back newest first, with their metadata, and no cursor
    assert status == 200
    assert [item["id"] for item in body["items"]] == ["i01/x #é", "i00/x #é"]
    assert body["items"][0] == {
        "id": "i01/x #é",
        "meta": {"title": "i01/x #é"},
        "created_at": TIMES[0],
        "updated_at": TIMES[0],
    }
    assert body["cursor"] is None


def test_items_and_items_by_id_are_different_routes(pipeline, gateway):
    # Given an item with views
    create(pipeline, 1)
    assert gateway.handle(Request.of("POST", "/views", {}, b'{"id": "i00/x #\\u00e9"}')).status == 202
    pipeline.aggregate(pipeline.stream_records())
    # Then /items is the newest list, /items/<id> the item, and /items/ (an empty greedy variable) no route at all
    assert gateway.route("GET", "/items")[0].key == "GET /items"
    assert gateway.route("GET", "/items/items")[0].key == "GET /items/{id+}"
    assert ask(gateway, "/items")[1]["items"][0]["id"] == "i00/x #é"
    assert ask(gateway, "/items/" + quote("i00/x #é"))[1]["views"] == 1
    assert ask(gateway, "/items/") == (404, {"message": "Not Found"})


@pytest.mark.parametrize("limit", [1, 4, 7, 100])
def test_a_walk_is_exact_with_no_duplicate_and_no_gap_while_items_are_created(pipeline, gateway, limit):
    # Given 17 items in a window, and some created later
    ids = create(pipeline, 17)
    window = {"created_after": "2026-11-23T17:00:00Z", "created_before": "2026-11-23T17:01:00Z"}
    walked: list[str] = []
    cursor = None
    for page in range(20):
        # When the window is walked page by page, an item created (inside the window's times) between pages
        query = urlencode({**window, "limit": limit, **({"cursor": cursor} if cursor else {})})
        status, body = ask(gateway, "/items?" + query)
        assert status == 200 and len(body["items"]) <= limit
        walked += [item["id"] for item in body["items"]]
        cursor = body["cursor"]
        if cursor is None:
            break
        pipeline.runtime.items.put(f"late{page}", meta({}), "2026-11-23T17:00:59.000Z")
    # Then the walk is exactly the window's items as they stood when it began, newest first
    assert walked == newest_first(pipeline, ids)


def test_the_window_is_half_open(pipeline, gateway):
    ids = create(pipeline, 9)  # three at each of TIMES[0..2]
    status, body = ask(gateway, "/items?" + urlencode({"created_after": TIMES[1], "created_before": TIMES[2]}))
    assert status == 200
    assert [item["id"] for item in body["items"]] == newest_first(pipeline, ids[3:6])


def test_the_first_and_last_days_a_time_holds_are_well_formed_bounds(pipeline, gateway):
    # Given items created at the test's times
    ids = create(pipeline, 3)
    # When the window opens at the first day a time holds (0001-01-01, once refused as malformed) or closes at the
    # last
    for query in ("created_after=0001-01-01", "created_before=9999-12-31", "created_after=0001-01-01T00:00:00Z"):
        status, body = ask(gateway, "/items?" + query)
        # Then every item is in it
        assert status == 200, (query, body)
        assert [item["id"] for item in body["items"]] == newest_first(pipeline, ids)
    # And a time an offset moves out of that range is refused with the range it must fall in
    status, body = ask(gateway, "/items?created_after=0001-01-01T00:00:00%2B01:00")
    assert status == 400 and "from 0001-01-01 to 9999-12-31 in UTC" in body["message"]


VALID = "2026-11-23T17:00:00Z"


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("limit=0", "limit must be from 1 to 100"),
        ("limit=101", "limit must be from 1 to 100"),
        ("limit=ten", "limit must be a whole number"),
        ("limit=5&limit=6", "limit: Input should be a valid string"),  # a repeated name (Powertools' own words)
        ("created_after=tomorrow", "created_after must be an ISO-8601"),
        ("created_before=2026-02-30", "created_before must be an ISO-8601"),
        (f"created_after={VALID}&created_before={VALID}", "must be earlier than"),
        (f"created_after={VALID}&created_after={VALID}", "created_after: Input should be a valid string"),
        ("cursor=abc", "cursor is not one this route wrote"),
        ("cursor=eyJhIjpudWxsLCJiIjpudWxsLCJrIjoiMjAyNi0xMS0yM1QxNzowMDowMC4wMDBaI2EifQ,x", "cursor"),
    ],
)
def test_bad_input_is_a_400_with_a_message_and_nothing_else(pipeline, gateway, query, reason):
    create(pipeline, 2)
    status, body = ask(gateway, "/items?" + query)
    assert status == 400
    assert set(body) == {"message", "code"} and body["code"] == "bad_request"
    assert reason in body["message"]


def test_a_cursor_of_another_window_is_refused(pipeline, gateway):
    create(pipeline, 5)
    _, first = ask(gateway, "/items?limit=2")
    status, body = ask(gateway, "/items?" + urlencode({"limit": 2, "cursor": first["cursor"], "created_after": VALID}))
    assert (status, body["code"]) == (400, "bad_request")
    assert "cursor belongs to another created_after/created_before" in body["message"]


def test_hidden_and_deleted_items_are_not_listed_and_an_unhidden_one_is_again(pipeline, gateway):
    # Given six items, one hidden and one deleted through the admin routes (both take the by-created keys away)
    ids = create(pipeline, 6)
    hidden, deleted = ids[5], ids[2]
    for op, item in (("hide", hidden), ("delete", deleted)):
        event = load_event(f"items_admin_{op}.json")
        event = {**event, "rawQueryString": f"id={quote(item, safe='')}", "queryStringParameters": {"id": item}}
        assert call(pipeline, "items_admin", event)[0] == 200
    # When the newest items are read
    status, body = ask(gateway, "/items?" + urlencode({"created_after": TIMES[0], "limit": 10}))
    # Then neither is listed, the others are, newest first
    assert status == 200
    assert [item["id"] for item in body["items"]] == [
        i for i in newest_first(pipeline, ids) if i not in {hidden, deleted}
    ]
    # When the hidden one is unhidden, it is listed again where its creation time puts it
    event = load_event("items_admin_unhide.json")
    event = {**event, "rawQueryString": f"id={quote(hidden, safe='')}", "queryStringParameters": {"id": hidden}}
    assert call(pipeline, "items_admin", event)[0] == 200
    _, body = ask(gateway, "/items?" + urlencode({"created_after": TIMES[0], "limit": 10}))
    assert [item["id"] for item in body["items"]] == [i for i in newest_first(pipeline, ids) if i != deleted]
