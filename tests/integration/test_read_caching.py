"""Every read route is public and cacheable, as the OpenAPI document says: ``Cache-Control: public, max-age=<refresh
seconds>``, an ``ETag``, and 304 Not Modified when If-None-Match holds it; through the local gateway (the payload 2.0
event) to the real read function on moto."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.handlers.openapi import document
from shardboard_tools.local.gateway import Gateway, Reply, Request
from tests.conftest import examples

VIEWS = {"images/001.jpg": 5, "a?b": 3, "c": 2}
# One request per read route of the document (the /leaderboard page too: a page of the ranked version).
READS = {
    "GET /leaderboard": "/leaderboard",
    "GET /leaderboard page": "/leaderboard?offset=0&limit=2",
    "GET /rank": "/rank?id=c&id=a%3Fb",
    "GET /around": "/around?id=c&k=1",
    "GET /item": "/item?id=a%3Fb",
    "GET /items/{id}": "/items/images/001.jpg",
    "GET /items": "/items",
    "GET /boards": "/boards",
}
# The element's script is cached by its own rule (5 minutes, a year under its versioned URL): test_frontend_reads.py.
OWN_CACHING = {"GET /shardboard.js"}


@pytest.fixture
def reads(make_pipeline) -> Any:
    """Views, a metadata put and a snapshot on moto; ``reads(target, headers)`` answers through the gateway."""
    pipeline = make_pipeline(TopN="2", RankDepth="5", SnapshotSpare="0")
    gateway = Gateway.from_template(pipeline.runtime.template)
    for item, count in VIEWS.items():
        views = json.dumps({"id": item, "count": count}).encode()
        assert gateway.handle(Request.of("POST", "/views", body=views)).status == 202
    assert gateway.handle(Request.of("PUT", "/item?id=c", body=b'{"title": "C"}')).status == 200
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()

    def read(target: str, headers: dict[str, str] | None = None) -> Reply:
        return gateway.handle(Request.of("GET", target, headers))

    read.pipeline = pipeline  # type: ignore[attr-defined]
    read.gateway = gateway  # type: ignore[attr-defined]
    return read


def test_every_read_route_of_the_document_is_covered():
    document_reads = {
        f"GET {path}" for path, operations in document()["paths"].items() for method in operations if method == "get"
    }
    assert {route.removesuffix(" page") for route in READS} == document_reads - OWN_CACHING


@pytest.mark.parametrize("route", READS)
def test_a_read_is_cacheable_for_one_refresh_and_revalidates_with_its_etag(reads, route):
    # When a read route answers
    answer = reads(READS[route])
    # Then it is public and cacheable for the refresh interval (SnapshotSchedule: 1 minute), with an ETag
    assert answer.status == 200, answer.body
    assert answer.headers["Cache-Control"] == "public, max-age=60"
    etag = answer.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 2
    # And asking again gives the same ETag (it names the content, not the request)
    assert reads(READS[route]).headers["ETag"] == etag
    # And a client holding it gets 304 with no body, whether it sends it alone, weak, in a list or as *
    for held in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = reads(READS[route], {"If-None-Match": held})
        assert (again.status, again.body, again.headers["ETag"]) == (304, b"", etag), held
        assert again.headers["Cache-Control"] == "public, max-age=60"
    # And a client holding another version gets the whole answer
    other = reads(READS[route], {"If-None-Match": '"another-version"'})
    assert (other.status, other.body) == (200, answer.body)


@pytest.mark.parametrize("route", ["GET /item", "GET /items/{id}", "GET /rank", "GET /items"])
def test_the_etag_changes_with_the_answer(reads, route):
    # Given a read and its ETag
    before = reads(READS[route])
    # When the item's metadata and views change (and a snapshot follows)
    gateway, pipeline = reads.gateway, reads.pipeline
    for item in ("images/001.jpg", "a?b", "c", "new"):
        target = "/item?id=" + item.replace("?", "%3F")
        assert gateway.handle(Request.of("PUT", target, body=b'{"title": "changed"}')).status == 200
        assert gateway.handle(Request.of("POST", "/views", body=json.dumps({"id": item}).encode())).status == 202
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    # Then the old ETag no longer revalidates: the new answer comes whole, under a new ETag
    after = reads(READS[route], {"If-None-Match": before.headers["ETag"]})
    assert after.status == 200 and after.body != before.body
    assert after.headers["ETag"] != before.headers["ETag"]


def test_errors_carry_no_cache_headers(reads):
    for target in ("/item?id=never", "/rank?id=", "/leaderboard?board=nope", "/items?limit=0"):
        answer = reads(target)
        assert answer.status in {400, 404}, target
        assert "Cache-Control" not in answer.headers and "ETag" not in answer.headers, target


@given(held=st.text(max_size=60))
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_if_none_match_gets_the_answer_or_a_304(reads, held):
    # Whatever a client sends in If-None-Match, the read answers 200 with the body or 304 without one, never else
    answer = reads("/item?id=c", {"If-None-Match": held})
    assert (answer.status, bool(answer.body)) in {(200, True), (304, False)}
    assert answer.headers["Cache-Control"] == "public, max-age=60"
