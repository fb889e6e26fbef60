"""GET /boards and GET /shardboard.js through the read function: what a page needs to offer only what the stack
answers, and the element's script cached long under its versioned URL."""

from __future__ import annotations

import copy
import json
from typing import Any

from shardboard.handlers import read_api
from tests.conftest import load_event
from tests.integration.test_http_api import call
from tests.integration.test_visitors import CHROME, GOOGLEBOT, posted


def get(pipeline: Any, path: str, query: str = "", headers: dict[str, str] | None = None) -> dict[str, Any]:
    event = copy.deepcopy(load_event("read_leaderboard_get.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["routeKey"] = f"GET {path}"
    event["rawQueryString"] = query
    event["queryStringParameters"] = dict(part.split("=", 1) for part in query.split("&")) if query else None
    event["headers"] = {**event.get("headers", {}), **(headers or {})}
    return pipeline.runtime.invoke(read_api.handler, event)  # type: ignore[no-any-return]


def test_boards_lists_the_boards_with_views_and_every_period_of_the_stack(make_pipeline):
    # Given a stack with day, a 24 h window and trending, N = 3, and views on the global board and on cats
    pipeline = make_pipeline(TopN="3", CategoryTopN="2", Periods="day,24h,trending")
    pipeline.views.add_view("a", 0, 2, pipeline.bucket(), boards=("cats",))
    pipeline.views.add_view("b", 0, 1, pipeline.bucket())
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()

    # When GET /boards is read
    answer = get(pipeline, "/boards")
    listing = json.loads(answer["body"])

    # Then it names both boards (the global one first) with their N, the stack's periods as the reads take them,
    # and the element's versioned URL; cacheable for one refresh interval
    assert answer["statusCode"] == 200
    assert [(b["name"], b["top_n"]) for b in listing["boards"]] == [("global", 3), ("cats", 2)]
    assert listing["periods"] == ["all", "hour", "day", "trending", "24h"]
    assert (listing["board"], listing["top_n"], listing["category_top_n"]) == ("global", 3, 2)
    assert listing["script"] == f"shardboard.js?v={read_api.element_script()[1]}"
    assert answer["headers"]["Cache-Control"].startswith("public, max-age=")
    # And every period it names is one GET /leaderboard answers (not a 400)
    for name in listing["periods"]:
        query = f"window={name}" if name[0].isdigit() else f"period={name}"
        assert get(pipeline, "/leaderboard", query)["statusCode"] == 200, name
    # And If-None-Match with its ETag answers 304
    again = get(pipeline, "/boards", headers={"if-none-match": answer["headers"]["ETag"]})
    assert again["statusCode"] == 304


def test_the_script_is_cached_long_only_under_its_versioned_url(pipeline):
    # Given the element's content hash
    body, version = read_api.element_script()

    # When the script is read unversioned, versioned, under a stale version, and again with its ETag
    plain = get(pipeline, "/shardboard.js")
    versioned = get(pipeline, "/shardboard.js", f"v={version}")
    stale = get(pipeline, "/shardboard.js", "v=0123456789abcdef")
    revalidated = get(pipeline, "/shardboard.js", headers={"if-none-match": plain["headers"]["ETag"]})

    # Then each is the module as JavaScript; only the versioned URL is cached a year (immutable), the rest 5 minutes
    for answer in (plain, versioned, stale):
        assert answer["statusCode"] == 200
        assert answer["headers"]["Content-Type"].startswith("text/javascript")
        assert answer["body"].encode("utf-8") == body
    assert versioned["headers"]["Cache-Control"] == "public, max-age=31536000, immutable"
    assert plain["headers"]["Cache-Control"] == stale["headers"]["Cache-Control"] == "public, max-age=300"
    assert plain["headers"]["ETag"] == f'"{version}"'
    assert revalidated["statusCode"] == 304


def test_boards_never_offers_the_reserved_boards_of_crawlers_views(pipeline):
    # Given a person's view on cats and a crawler's, which counts on bots and bots:cats only
    call(pipeline, "record_views", posted({"id": "a", "boards": ["cats"], "user_agent": CHROME}))
    call(pipeline, "record_views", posted({"id": "crawled", "boards": ["cats"], "user_agent": GOOGLEBOT}))
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()

    # When GET /boards is read
    listing = json.loads(get(pipeline, "/boards")["body"])

    # Then it names the boards visitors may be offered, not the crawlers' ones (still readable by name)
    assert [b["name"] for b in listing["boards"]] == ["global", "cats"]
    assert get(pipeline, "/leaderboard", "board=bots")["statusCode"] == 200
