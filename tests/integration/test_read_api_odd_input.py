"""No input to the read API gets a 5xx: odd ``limit`` values and odd item ids answer 4xx with a one-line message."""

from __future__ import annotations

import copy
import json
from urllib.parse import unquote

import pytest

from tests.conftest import load_event


def get(path: str, limit: str | None = None):
    event = copy.deepcopy(load_event("read_leaderboard_get.json"))
    # API Gateway (HTTP API) decodes the path before the function sees it.
    event["rawPath"] = event["requestContext"]["http"]["path"] = unquote(path)
    event["rawQueryString"] = "" if limit is None else f"limit={limit}"
    event["queryStringParameters"] = None if limit is None else {"limit": limit}
    return event


@pytest.fixture
def board(make_pipeline):
    pipeline = make_pipeline(TopN="10")
    pipeline.views.add_view("a", 0, 1, pipeline.bucket())
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    return pipeline


def answer(pipeline, event):
    from shardboard.handlers import read_api

    response = pipeline.runtime.invoke(read_api.handler, event)
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None


@pytest.mark.parametrize(
    "limit",
    [
        "²",  # SUPERSCRIPT TWO: str.isdigit() is True, int() refuses it (was a 500)
        "³",
        "٣",  # ARABIC-INDIC THREE: int() reads it as 3 (was accepted)
        "३",  # DEVANAGARI THREE
        "\uff15",  # FULLWIDTH FIVE
        "①",  # CIRCLED ONE: isdigit() True, int() refuses it
        "\U0001d7d7",  # MATHEMATICAL BOLD NINE (outside the BMP)
        "1²",
        " 5",
        "5 ",
        "+5",
        "1_0",
        "0x5",
        "5e0",
        "\u00a05",
        "5\n",
        "NaN",
        "∞",
        "9" * 5000,  # int() refuses strings of more than 4,300 digits (was a 500)
    ],
)
def test_odd_limits_get_a_400_naming_the_allowed_range(board, limit):
    # Given a board of TopN 10 with a snapshot
    # When the leaderboard is asked for with an odd limit
    status, body = answer(board, get("/leaderboard", limit))
    # Then it is refused with the allowed range, on one short line
    assert status == 400 and body["code"] == "bad_request"
    assert "from 1 to 10" in body["message"]
    assert "\n" not in body["message"] and len(body["message"]) < 200


@pytest.mark.parametrize("limit", ["0001", "0" * 5000 + "1"])
def test_leading_zeros_are_still_a_whole_number(board, limit):
    status, body = answer(board, get("/leaderboard", limit))
    assert status == 200 and [entry["id"] for entry in body["items"]] == ["a"]


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/items/%ZZ", 404, "no views recorded for item '%ZZ'"),  # not a percent escape: the id as written
        ("/items/%C3%28", 404, "no views recorded"),  # invalid UTF-8: decoded with replacement characters
        ("/items/%ED%A0%80", 404, "no views recorded"),  # an encoded lone surrogate
        ("/items/%00", 400, "control character (U+0000)"),
        ("/items/%7F", 400, "control character (U+007F)"),
        ("/items/%C2%85", 400, "control character (U+0085)"),
        ("/items/²", 404, "no views recorded for item '²'"),
        ("/items/a/../b", 404, "no views recorded for item 'a/../b'"),
        ("/items/" + "%E2%82%AC" * 171, 400, "id is 513 bytes"),
        ("/items/a", 200, None),
    ],
)
def test_odd_item_ids_get_a_4xx(board, path, status, message):
    # When an item is asked for by an odd id
    answered, body = answer(board, get(path))
    # Then the answer is the documented 4xx (or the item), never a 5xx
    assert answered == status
    if message is None:
        assert body == {"id": "a", "views": 1}
    else:
        assert message in body["message"]
        assert body["code"] == {400: "bad_request", 404: "not_found"}[status]
