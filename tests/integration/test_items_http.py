"""Items (issue 13, slice 1) through the real handlers with API Gateway events built from the events/ samples:
PUT /item?id= (admin), GET /item?id=, GET /items/{id+} with the metadata, and RequireItems on POST /views."""

from __future__ import annotations

import copy
import json
from urllib.parse import parse_qsl, quote

import pytest

from tests.conftest import load_event
from tests.integration.test_http_api import call, get, post

# Ids that must survive every layer: '/', '#', spaces, Unicode, and what a query string treats specially.
ODD_IDS = ["images/001.jpg", "a#1", "a b", "ünï/çødé", "猫 #2/x", "emoji 😀", "%41", "a,b", "a+b", "a&b=c", "x/rank"]
QUESTION_IDS = ["a?b", "what?", "?"]  # only the query form can carry them (a path is cut at a decoded '?')
CAT = {"title": "A cat", "url": "https://example.com/cat", "thumbnail": "https://example.com/cat.jpg"}


def with_query(event: dict, query: str) -> dict:
    """``event`` with this raw query string, and its parameters as API Gateway derives them (decoded, repeated
    names joined by commas)."""
    parameters: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
    return {**event, "rawQueryString": query, "queryStringParameters": parameters or None}


def put_item(item_id: str | None, body: str, query: str | None = None):
    """The PUT /item sample for ``item_id`` (percent-encoded into the raw query string, as a client sends it)."""
    event = copy.deepcopy(load_event("items_admin_put.json"))
    event["body"] = body
    return with_query(event, query if query is not None else f"id={quote(item_id or '', safe='')}")


def get_item(item_id: str | None, query: str | None = None):
    event = copy.deepcopy(load_event("read_item_query_get.json"))
    return with_query(event, query if query is not None else f"id={quote(item_id or '', safe='')}")


def scan(pipeline, table: str) -> list[dict]:
    return list(pipeline.runtime.dynamodb.scan(TableName=table, ConsistentRead=True)["Items"])


def written(pipeline) -> dict[str, list[dict]]:
    settings = pipeline.settings
    return {t: scan(pipeline, t) for t in (settings.views_table, settings.board_table, settings.items_table)}


def test_the_put_sample_creates_the_item_and_the_get_sample_reads_it(pipeline):
    # When the PUT /item sample event arrives
    status, _, body = call(pipeline, "items_admin", load_event("items_admin_put.json"))
    # Then the item is stored with its first revision
    assert status == 200
    assert body["id"] == "images/004.jpg" and body["rev"] == 1
    assert body["meta"]["title"] == "A cat on a keyboard"
    assert body["created_at"] == body["updated_at"] and body["created_at"].endswith("Z")
    # And the GET /item sample reads it back with its (zero) views
    status, _, read = call(pipeline, "read_api", load_event("read_item_query_get.json"))
    assert status == 200
    assert read == {"id": "images/004.jpg", "views": 0, **{k: body[k] for k in ("meta", "created_at", "updated_at")}}


def test_a_second_put_replaces_the_metadata_and_keeps_created_at(pipeline):
    # Given an item put once
    _, _, first = call(pipeline, "items_admin", put_item("a", json.dumps({"title": "one", "extra": [1, 2]})))
    # When it is put again with another document
    status, _, second = call(pipeline, "items_admin", put_item("a", json.dumps({"title": "two"})))
    # Then the document is replaced, created_at kept, and rev counts the puts
    assert status == 200
    assert second["meta"] == {"title": "two"} and second["rev"] == 2
    assert second["created_at"] == first["created_at"] and second["updated_at"] >= first["updated_at"]
    (record,) = scan(pipeline, pipeline.settings.items_table)
    assert record["pk"] == {"S": "item#a"} and record["sk"] == {"S": "meta"}
    assert record["ck"] == {"S": f"{first['created_at']}#a"} and record["cs"]["S"].startswith("c#")


@pytest.mark.parametrize("item", ODD_IDS + QUESTION_IDS)
def test_odd_ids_are_put_and_read_in_the_query_form(pipeline, item):
    # Given an odd id with views and metadata
    assert call(pipeline, "record_views", post(json.dumps({"id": item, "count": 3})))[0] == 202
    pipeline.aggregate(pipeline.stream_records())
    status, _, stored = call(pipeline, "items_admin", put_item(item, json.dumps(CAT)))
    assert status == 200 and stored["id"] == item
    # When it is read in the query form
    status, _, body = call(pipeline, "read_api", get_item(item))
    # Then it is that item, its metadata and its views
    assert status == 200
    assert (body["id"], body["views"], body["meta"]) == (item, 3, CAT)


@pytest.mark.parametrize("item", ODD_IDS)
def test_odd_ids_without_a_question_mark_are_read_in_the_path_form_too(pipeline, item):
    # Given an item with metadata and views
    call(pipeline, "record_views", post(json.dumps({"id": item, "count": 2})))
    pipeline.aggregate(pipeline.stream_records())
    call(pipeline, "items_admin", put_item(item, json.dumps(CAT)))
    # When the existing route reads it (API Gateway hands the path decoded)
    event = get(f"/items/{quote(item, safe='')}")
    event["pathParameters"] = {"id": item}
    status, _, body = call(pipeline, "read_api", event)
    # Then the answer is what it always was plus the metadata
    assert status == 200
    assert (body["id"], body["views"], body["meta"]) == (item, 2, CAT)
    assert set(body) == {"id", "views", "meta", "created_at", "updated_at"}


def test_an_item_without_metadata_reads_as_it_always_did(pipeline):
    call(pipeline, "record_views", post(json.dumps({"id": "plain", "count": 2})))
    pipeline.aggregate(pipeline.stream_records())
    assert call(pipeline, "read_api", get_item("plain"))[::2] == (200, {"id": "plain", "views": 2})
    assert call(pipeline, "read_api", get("/items/plain"))[::2] == (200, {"id": "plain", "views": 2})


def test_an_item_never_created_and_never_viewed_is_404(pipeline):
    status, _, body = call(pipeline, "read_api", get_item("nothing"))
    assert status == 404 and body["code"] == "not_found" and "never created" in body["message"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("not json", "not valid JSON"),
        ("", "not valid JSON"),
        ("[1]", "JSON object"),
        ('"a cat"', "JSON object"),
        ("null", "JSON object"),
        (json.dumps({"title": "x" * 201}), "meta.title"),
        (json.dumps({"title": 7}), "meta.title"),
        (json.dumps({"url": "ftp://example.com/x"}), "meta.url"),
        (json.dumps({"url": "/relative"}), "meta.url"),
        (json.dumps({"thumbnail": 5}), "meta.thumbnail"),
        (json.dumps({"thumbnail": "javascript:alert(1)"}), "meta.thumbnail"),
        (json.dumps({"note": "é" * 1020}), "maximum is 2048 bytes"),
        ('{"a": NaN}', ""),
        ('{"a": "\\ud800"}', "not storable"),
    ],
)
def test_bad_metadata_is_refused_with_400_and_writes_nothing(pipeline, body, reason):
    status, _, answer = call(pipeline, "items_admin", put_item("a", body))
    assert status == 400, answer
    assert set(answer) == {"message", "code"} and answer["code"] == "bad_request"
    assert reason in answer["message"]
    assert written(pipeline)[pipeline.settings.items_table] == []


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("", "missing"),
        ("other=1", "unknown query parameter 'other': this route takes only id"),
        ("id=", "must not be empty"),
        ("id=a&id=b", "given 2 times"),
        ("id=a%0Ab", "control character"),
        ("id=" + "y" * 513, "513 bytes"),
        ("id", "malformed"),
        ("id=a&&x=1", "malformed"),
        ("id=%FF", "malformed"),
    ],
)
@pytest.mark.parametrize("route", ["put", "get"])
def test_bad_ids_in_the_query_are_400_and_write_nothing(pipeline, query, reason, route):
    event = put_item(None, json.dumps(CAT), query) if route == "put" else get_item(None, query)
    status, _, answer = call(pipeline, "items_admin" if route == "put" else "read_api", event)
    assert status == 400 and answer["code"] == "bad_request" and reason in answer["message"], answer
    assert written(pipeline)[pipeline.settings.items_table] == []


def test_require_items_refuses_views_of_ids_never_created_and_writes_nothing(make_pipeline):
    # Given a stack with RequireItems (and per-client rate limits, whose allowances are writes too)
    pipeline = make_pipeline(RequireItems="true", PublicViews="true")
    # When views of an id never created arrive, with and without a viewer
    for body in ({"id": "ghost", "count": 2}, {"id": "ghost", "viewer": "v1"}):
        status, _, answer = call(pipeline, "record_views", post(json.dumps(body)))
        # Then each is 404 not_found and nothing at all is written
        assert status == 404, answer
        assert answer == {"message": answer["message"], "code": "not_found"} and "never created" in answer["message"]
    assert written(pipeline) == {t: [] for t in written(pipeline)}
    # And once the item is created, its views count
    assert call(pipeline, "items_admin", put_item("ghost", json.dumps(CAT)))[0] == 200
    assert call(pipeline, "record_views", post(json.dumps({"id": "ghost", "count": 2})))[0] == 202
    assert pipeline.truth() == {"ghost": 2}


def test_without_require_items_views_of_any_id_count(pipeline):
    assert pipeline.settings.require_items is False  # the template's default
    assert call(pipeline, "record_views", post(json.dumps({"id": "never-put", "count": 1})))[0] == 202
    assert pipeline.truth() == {"never-put": 1}
    assert scan(pipeline, pipeline.settings.items_table) == []  # no item check, no read or write of the catalogue


@pytest.mark.parametrize(
    ("authorizer", "who"),
    [
        (None, "arn:aws:iam::123456789012:user/editor"),  # the sample: SigV4, IAM user
        ({"jwt": {"claims": {"sub": "u-7", "scope": "items:admin"}, "scopes": ["items:admin"]}}, "u-7"),
        ({"jwt": {"claims": {"client_id": "backend-1"}, "scopes": ["items:admin"]}}, "backend-1"),
    ],
)
def test_each_put_logs_one_audit_line_naming_the_caller(pipeline, caplog, authorizer, who):
    # Given a put by an IAM user, or by a token's subject or client
    event = put_item("images/9.jpg", json.dumps(CAT))
    if authorizer is not None:
        event["requestContext"]["authorizer"] = authorizer
    # When it is stored
    with caplog.at_level("INFO", logger="shardboard"):
        assert call(pipeline, "items_admin", event)[0] == 200
    # Then one structured ItemAudit record says who put which item
    audits = [r for r in caplog.records if r.getMessage() == "ItemAudit"]
    assert [(r.op, r.item_id, r.by, r.rev) for r in audits] == [("put", "images/9.jpg", who, 1)]


def test_the_leaderboard_carries_each_entrys_metadata_from_one_getitem(make_pipeline):
    # Given a stack with PageSize 2, items a and c put, b never put, and views of all three
    pipeline = make_pipeline(PageSize="2")
    call(pipeline, "items_admin", put_item("a", json.dumps(CAT)))
    call(pipeline, "items_admin", put_item("c", json.dumps({"title": "C"})))
    for item, count in (("a", 3), ("b", 2), ("c", 1)):
        call(pipeline, "record_views", post(json.dumps({"id": item, "count": count})))
    pipeline.aggregate(pipeline.stream_records())
    # When the snapshot job runs and the leaderboard is read
    pipeline.snapshot()
    status, _, board = call(pipeline, "read_api", get("/leaderboard"))
    # Then the first P entries carry their metadata where they have some: a does, b has none, c is past P
    assert status == 200
    assert board["items"] == [
        {"rank": 1, "id": "a", "views": 3, "previous_rank": None, "day_before_rank": None, "meta": CAT},
        {"rank": 2, "id": "b", "views": 2, "previous_rank": None, "day_before_rank": None},
        {"rank": 3, "id": "c", "views": 1, "previous_rank": None, "day_before_rank": None},
    ]
    # And once c climbs into the first P, the next head asks for it alone and carries it
    call(pipeline, "record_views", post(json.dumps({"id": "c", "count": 5})))
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    _, _, board = call(pipeline, "read_api", get("/leaderboard"))
    assert [(e["id"], e.get("meta")) for e in board["items"]] == [("c", {"title": "C"}), ("a", CAT), ("b", None)]


def test_a_re_put_title_is_on_the_leaderboard_at_once(make_pipeline):
    # Given a board whose head carries a's document and b's absence of one
    pipeline = make_pipeline(PageSize="2")
    call(pipeline, "items_admin", put_item("a", json.dumps(CAT)))
    for item, count in (("a", 3), ("b", 2)):
        call(pipeline, "record_views", post(json.dumps({"id": item, "count": count})))
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    # When a's title changes and b gets its first document, with no snapshot run after
    assert call(pipeline, "items_admin", put_item("a", json.dumps({**CAT, "title": "Renamed"})))[0] == 200
    assert call(pipeline, "items_admin", put_item("b", json.dumps({"title": "B"})))[0] == 200
    # Then the leaderboard (still one GetItem) shows both
    _, _, board = call(pipeline, "read_api", get("/leaderboard"))
    assert [(e["id"], e.get("meta")) for e in board["items"]] == [
        ("a", {**CAT, "title": "Renamed"}),
        ("b", {"title": "B"}),
    ]


@pytest.mark.parametrize("require_items", ["false", "true"])
def test_views_of_a_deleted_id_are_refused_and_write_nothing(make_pipeline, require_items):
    # Given a created item with views, then deleted (its tombstone and deny set written directly)
    pipeline = make_pipeline(RequireItems=require_items)
    assert call(pipeline, "items_admin", put_item("gone", json.dumps(CAT)))[0] == 200
    assert call(pipeline, "record_views", post(json.dumps({"id": "gone", "count": 2})))[0] == 202
    pipeline.runtime.items.set_deleted("gone", "cli:ed", "gdpr", "2026-11-23T17:00:00.000Z")
    # When views of it arrive in a fresh container (the deny sets are cached per container), with and without viewer
    pipeline.runtime.export_to_handlers()
    for body in ({"id": "gone", "count": 2}, {"id": "gone", "viewer": "v1"}):
        status, _, answer = call(pipeline, "record_views", post(json.dumps(body)))
        # Then each is 404 not_found and no view is counted
        assert status == 404, answer
        assert answer["code"] == "not_found" and "deleted" in answer["message"]
    assert pipeline.truth() == {"gone": 2}
    # while other (created) ids still count
    assert call(pipeline, "items_admin", put_item("kept", json.dumps(CAT)))[0] == 200
    assert call(pipeline, "record_views", post(json.dumps({"id": "kept", "count": 1})))[0] == 202
    assert pipeline.truth() == {"gone": 2, "kept": 1}
