"""The HTTP functions with the events/ samples: POST /views, GET /leaderboard, GET /items/{id+}."""

from __future__ import annotations

import copy
import json
import warnings
from urllib.parse import unquote

import pytest

from tests.conftest import load_event


def call(pipeline, handler_module, event):
    from importlib import import_module

    handler = import_module(f"shardboard.handlers.{handler_module}").handler
    response = pipeline.runtime.invoke(handler, event)
    body = json.loads(response["body"]) if response.get("body") else None
    return response["statusCode"], {k.lower(): v for k, v in response.get("headers", {}).items()}, body


def post(body: str):
    event = load_event("record_views_post.json")
    event["body"] = body
    return event


def get(path: str, query: str = "", headers: dict | None = None):
    event = copy.deepcopy(load_event("read_leaderboard_get.json"))
    # API Gateway (HTTP API) decodes the path before the function sees it.
    event["rawPath"] = event["requestContext"]["http"]["path"] = unquote(path)
    event["rawQueryString"] = query
    event["queryStringParameters"] = dict(kv.split("=", 1) for kv in query.split("&")) if query else None
    event["headers"].update(headers or {})
    return event


def test_post_views_sample_event_records_three_views(pipeline):
    status, _, body = call(pipeline, "record_views", load_event("record_views_post.json"))
    assert (status, body) == (202, {"id": "images/001.jpg", "recorded": 3, "boards": ["global"]})
    assert pipeline.truth() == {"images/001.jpg": 3}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("not json", "body is not valid JSON"),
        ("", "body is not valid JSON"),
        ("[1]", "JSON object"),
        ('{"count": 1}', "missing field: id"),
        ('{"id": ""}', "must not be empty"),
        ('{"id": "a\\u0000b"}', "control character"),
        (json.dumps({"id": "x" * 513}), "513 bytes"),
        ('{"id": "a", "count": 0}', "at least 1"),
        ('{"id": "a", "count": 1001}', "at most 1000"),
        ('{"id": "a", "count": "2"}', "whole number"),
        ('{"id": "a", "count": 1.5}', "whole number"),
        ('{"id": 7}', "must be a string"),
        ('{"id": "a", "views": 2}', "unknown field"),
    ],
)
def test_bad_post_is_refused_with_400_and_writes_nothing(pipeline, body, reason):
    status, _, payload = call(pipeline, "record_views", post(body))
    assert status == 400
    assert set(payload) == {"message", "code"} and payload["code"] == "bad_request"
    assert reason in payload["message"]
    assert pipeline.truth() == {}


def test_leaderboard_before_any_snapshot_is_404(pipeline):
    status, _, body = call(pipeline, "read_api", load_event("read_leaderboard_get.json"))
    assert status == 404 and "has no views yet" in body["message"]
    assert body["code"] == "not_found"


def test_leaderboard_is_the_snapshot_with_cache_headers(make_pipeline):
    # Given views and a snapshot
    pipeline = make_pipeline(TopN="10")
    for item, count in {"b": 2, "a": 2, "c": 5, "d": 1}.items():
        call(pipeline, "record_views", post(json.dumps({"id": item, "count": count})))
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    # When the sample GET /leaderboard?limit=3 arrives
    status, headers, body = call(pipeline, "read_api", load_event("read_leaderboard_get.json"))
    # Then it is the leaderboard JSON with ties sharing a rank, cacheable for the refresh interval
    assert status == 200
    assert body["board"] == "global" and body["generated_at"].endswith("Z")
    assert body["items"] == [
        {"rank": 1, "id": "c", "views": 5, "previous_rank": None, "day_before_rank": None},
        {"rank": 2, "id": "a", "views": 2, "previous_rank": None, "day_before_rank": None},
        {"rank": 2, "id": "b", "views": 2, "previous_rank": None, "day_before_rank": None},
    ]
    assert headers["cache-control"] == "public, max-age=60"
    # And a client holding that version gets 304 Not Modified
    status, _, _ = call(pipeline, "read_api", get("/leaderboard", "limit=3", {"if-none-match": headers["etag"]}))
    assert status == 304
    # And another limit is another representation
    status, headers_all, body_all = call(pipeline, "read_api", get("/leaderboard"))
    assert len(body_all["items"]) == 4 and headers_all["etag"] != headers["etag"]


@pytest.mark.parametrize("query", ["limit=0", "limit=11", "limit=x", "limit=-1"])
def test_bad_limit_is_400(make_pipeline, query):
    pipeline = make_pipeline(TopN="10")
    status, _, body = call(pipeline, "read_api", get("/leaderboard", query))
    assert status == 400 and "limit" in body["message"] and body["code"] == "bad_request"


def test_get_item_count_including_ids_with_slashes(pipeline):
    call(pipeline, "record_views", post(json.dumps({"id": "images/004.jpg", "count": 4})))
    call(pipeline, "record_views", post(json.dumps({"id": "a b#1", "count": 2})))
    call(pipeline, "record_views", post(json.dumps({"id": "a%41", "count": 5})))
    pipeline.aggregate(pipeline.stream_records())
    assert call(pipeline, "read_api", load_event("read_item_get.json"))[::2] == (
        200,
        {"id": "images/004.jpg", "views": 4},
    )
    assert call(pipeline, "read_api", get("/items/a%20b%231"))[::2] == (200, {"id": "a b#1", "views": 2})
    # The id "a%41" (percent-encoded by the client as a%2541) is not decoded twice into "aA".
    assert call(pipeline, "read_api", get("/items/a%2541"))[::2] == (200, {"id": "a%41", "views": 5})
    status, _, body = call(pipeline, "read_api", get("/items/nothing-here"))
    assert status == 404 and "no views recorded" in body["message"] and body["code"] == "not_found"
    status, _, body = call(pipeline, "read_api", get("/items/bad%0Aid"))
    assert status == 400 and "control character" in body["message"] and body["code"] == "bad_request"


def emf_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if '"_aws"' in line]


def test_rejected_requests_and_reads_are_counted_and_no_request_flushes_an_empty_metric_set(pipeline, capsys):
    # Given a fresh container publishing metrics
    from shardboard.handlers import observability

    observability.metrics.clear_metrics()
    capsys.readouterr()
    # When a bad POST /views, a bad GET /leaderboard and a GET /items of an unknown item arrive
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Powertools warns when an invocation has no metric to publish
        assert call(pipeline, "record_views", post("not json"))[0] == 400
        assert call(pipeline, "read_api", get("/leaderboard", "limit=abc"))[0] == 400
        assert call(pipeline, "read_api", get("/items/nothing.jpg"))[0] == 404
    # Then each invocation's EMF line says what happened
    lines = emf_lines(capsys.readouterr().out)
    assert [line.get("RequestsRejected") for line in lines] == [[1.0], [1.0], None]
    assert [line.get("LeaderboardReads") for line in lines] == [None, [1.0], None]
    assert lines[2]["ItemReads"] == [1.0]


def test_a_long_local_run_with_metrics_disabled_prints_no_emf(pipeline, capsys, monkeypatch):
    # Given metrics disabled, as `shardboard` sets them on a terminal
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    capsys.readouterr()
    # When more invocations run than Powertools keeps values per metric (100) before printing them anyway
    for _ in range(120):
        call(pipeline, "read_api", get("/leaderboard"))
    # Then nothing reaches the terminal
    assert emf_lines(capsys.readouterr().out) == []


@pytest.mark.parametrize(("module", "method", "path"), [("record_views", "GET", "/views"), ("read_api", "POST", "/x")])
def test_powertools_own_not_found_has_the_error_shape(pipeline, module, method, path):
    # Given a request for a route the function does not serve
    event = get(path)
    event["requestContext"]["http"]["method"] = method
    # When it reaches the function (API Gateway would not send it; a local server might)
    status, _, body = call(pipeline, module, event)
    # Then Powertools' not-found answer has the one error shape
    assert (status, body) == (404, {"message": "Not found", "code": "not_found"})
