"""Every bad input shardboard was tried with, and what happens: the data behind docs/bad-input.md and its tests.

`tests/integration/test_bad_input.py` runs every row; `python -m tests.bad_input_catalogue > docs/bad-input.md`
writes the page, and a test checks the page is what this module renders, so the two cannot drift.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HttpCase:
    what: str
    method: str
    path: str
    query: str = ""
    body: str | None = None
    status: int = 400
    message: str = ""
    parameters: tuple[tuple[str, str], ...] = ()  # template parameters of the stack it is sent to
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def code(self) -> str:
        """The error body's code (README "HTTP API"): one per status."""
        codes = {400: "bad_request", 404: "not_found", 422: "board_not_allowed", 429: "rate_limited", 503: "throttled"}
        return codes[self.status]
        codes = {400: "bad_request", 404: "not_found", 422: "idempotency_key_reused", 429: "rate_limited"}
        return {**codes, 503: "throttled"}[self.status]


@dataclass(frozen=True)
class StreamCase:
    what: str
    change: dict[str, Any]  # applied to a valid MODIFY record of the base table (None removes a key)
    image_change: dict[str, Any] | None = None  # applied to dynamodb.NewImage
    old_image_change: dict[str, Any] | None = None
    reason: str = ""


@dataclass(frozen=True)
class CliCase:
    what: str
    args: tuple[str, ...]
    message: str
    code: int = 2


def post(what: str, body: str, message: str) -> HttpCase:
    return HttpCase(what, "POST", "/views", body=body, message=message)


def put(what: str, body: str, message: str, query: str = "id=a") -> HttpCase:
    return HttpCase(what, "PUT", "/item", query, body=body, message=message)


def nested(depth: int, inner: str = "") -> str:
    """``depth`` JSON arrays, one inside the other."""
    return "[" * depth + inner + "]" * depth


# An offset that moves the time before 0001-01-01 or after 9999-12-31 in UTC (what a datetime holds).
BEFORE_YEAR_1 = "0001-01-01T00:00:00%2B01:00"
AFTER_9999 = "9999-12-31T23:30:00-01:00"
OUT_OF_RANGE = "from 0001-01-01 to 9999-12-31 in UTC"
DIGITS = "9" * 5000  # Python's int() refuses more than 4,300
DEEP = 50_000  # json.loads raises RecursionError far sooner
LOOK_ALIKE = "it would look like another id"


HTTP: list[HttpCase] = [
    post("body is not JSON", "not json", "body is not valid JSON"),
    post("empty body", "", "body is not valid JSON"),
    post("body is a JSON array", "[1]", "body must be a JSON object"),
    post("body is JSON null", "null", "body must be a JSON object"),
    post("no id", '{"count": 1}', "missing field: id"),
    post("empty id", '{"id": ""}', "id must not be empty"),
    post("id with a NUL", '{"id": "a\\u0000b"}', "control character (U+0000)"),
    post("id with a newline", '{"id": "a\\nb"}', "control character (U+000A)"),
    post("id with a lone surrogate", '{"id": "\\ud800"}', "control character (U+D800)"),
    post("id of 513 ASCII bytes", json.dumps({"id": "x" * 513}), "id is 513 bytes"),
    post("id of 171 x 3-byte chars (513 bytes)", json.dumps({"id": "€" * 171}), "id is 513 bytes"),
    post("id is a number", '{"id": 7}', "id must be a string, got int"),
    post("id is null", '{"id": null}', "id must be a string, got NoneType"),
    post("id is a list", '{"id": ["a"]}', "id must be a string, got list"),
    post("count 0", '{"id": "a", "count": 0}', "count must be at least 1"),
    post("negative count", '{"id": "a", "count": -3}', "count must be at least 1"),
    post("count above the maximum", '{"id": "a", "count": 1001}', "count must be at most 1000"),
    post("count as a string", '{"id": "a", "count": "2"}', "count must be a whole number"),
    post("fractional count", '{"id": "a", "count": 1.5}', "count must be a whole number"),
    post("count in exponent form", '{"id": "a", "count": 1e3}', "count must be a whole number"),
    post("boolean count", '{"id": "a", "count": true}', "count must be a whole number"),
    post("null count", '{"id": "a", "count": null}', "count must be a whole number"),
    post("unknown field", '{"id": "a", "views": 2}', "unknown field(s): views"),
    post("a key given twice", '{"id": "a", "id": "b"}', "body has the key 'id' more than once"),
    post("a nested key given twice", '{"id": "a", "boards": [{"x": 1, "x": 2}]}', "has the key 'x' more than once"),
    post("body is an array of views", '[{"id": "a"}, {"id": "b"}]', "body must be a JSON object, got array"),
    post("count of 5,000 digits", f'{{"id": "a", "count": {DIGITS}}}', "a number of 5000 digits; the most is 4300"),
    post("negative count of 5,000 digits", f'{{"id": "a", "count": -{DIGITS}}}', "a number of 5000 digits"),
    post("id of 5,000 digits", f'{{"id": {DIGITS}}}', "a number of 5000 digits"),
    post("body nested 50,000 deep", nested(DEEP), "body is nested deeper than 32 levels"),
    post("boards nested 50,000 deep", f'{{"id": "a", "boards": {nested(DEEP)}}}', "nested deeper than 32 levels"),
    post("boards nested 33 deep", f'{{"id": "a", "boards": {nested(32)}}}', "nested deeper than 32 levels"),
    post("count NaN", '{"id": "a", "count": NaN}', "NaN is not a JSON value"),
    post("count Infinity", '{"id": "a", "count": -Infinity}', "-Infinity is not a JSON value"),
    post("id with a zero-width space", '{"id": "a\\u200bb"}', "(U+200B ZERO WIDTH SPACE) at position 1"),
    post("id with a right-to-left override", '{"id": "gpj.\\u202eexe"}', "format character (U+202E"),
    post("id with a left-to-right isolate", '{"id": "\\u2066a"}', "(U+2066 LEFT-TO-RIGHT ISOLATE) at position 0"),
    post("id with a byte order mark", '{"id": "\\ufeffa"}', "(U+FEFF ZERO WIDTH NO-BREAK SPACE)"),
    post("id with a soft hyphen", '{"id": "a\\u00adb"}', "(U+00AD SOFT HYPHEN)"),
    post("id with a word joiner", '{"id": "a\\u2060"}', "format character (U+2060 WORD JOINER)"),
    post("id with a line separator", '{"id": "a\\u2028b"}', "a line separator (U+2028"),
    post("id with a paragraph separator", '{"id": "a\\u2029b"}', "a paragraph separator (U+2029"),
    post("id with a no-break space", '{"id": "a\\u00a0b"}', "a space other than U+0020 (U+00A0 NO-BREAK SPACE)"),
    post("id with an ideographic space", '{"id": "a\\u3000b"}', "a space other than U+0020 (U+3000"),
    post("id with a Hangul filler", '{"id": "a\\u3164"}', "an invisible character (U+3164 HANGUL FILLER)"),
    post("id with a variation selector", '{"id": "\\u2764\\ufe0f"}', "invisible character (U+FE0F"),
    post("id with a tag character", '{"id": "a\\udb40\\udc41"}', "format character (U+E0041 TAG LATIN CAPITAL"),
    post("id with a trailing space", '{"id": "banned.jpg "}', "id 'banned.jpg ' ends with a space"),
    post("id with a leading space", '{"id": " banned.jpg"}', "id ' banned.jpg' starts with a space"),
    post("id with two spaces in a row", '{"id": "a  b"}', "two spaces in a row at position 1"),
    post("id of one space", '{"id": " "}', "id must not be only spaces"),
    post("id of a lone combining mark", '{"id": "\\u0301"}', "starts with a combining mark (U+0301 COMBINING ACUTE"),
    post("id with an unassigned code point", '{"id": "a\\u0378"}', "an unassigned code point (U+0378) at position 1"),
    post("id with a private-use character", '{"id": "a\\ue000"}', "a private-use character (U+E000) at position 1"),
    post("id with a noncharacter", '{"id": "a\\uffff"}', "a noncharacter (U+FFFF) at position 1"),
    post("board name in capitals", '{"id": "a", "boards": ["Cats"]}', "board name 'Cats' must be 1-64 characters"),
    post("board name of 65 characters", json.dumps({"id": "a", "boards": ["b" * 65]}), "must be 1-64 characters"),
    post("nine boards", json.dumps({"id": "a", "boards": [f"b{n}" for n in range(9)]}), "at most 8 boards, got 9"),
    HttpCase(
        "board outside the Boards pattern (Boards=max=100 pattern=cats|tag:*)",
        "POST",
        "/views",
        body='{"id": "a", "boards": ["dogs"]}',
        status=422,
        message="board 'dogs' is not allowed: this stack's boards must match cats|tag:*",
        parameters=(("Boards", "max=100 pattern=cats|tag:*"),),
    ),
    HttpCase(
        "two new boards past the maximum (Boards=max=1)",
        "POST",
        "/views",
        body='{"id": "a", "boards": ["cats", "dogs"]}',
        status=422,
        message="would be a new board past this stack's maximum of 1",
        parameters=(("Boards", "max=1"),),
    ),
    *(
        HttpCase(what, "POST", "/views", body='{"id": "a"}', message=message, headers=(("Idempotency-Key", key),))
        for what, key, message in (
            ("empty Idempotency-Key", "", "Idempotency-Key must be 1-255 characters, got 0"),
            ("Idempotency-Key of 256 characters", "k" * 256, "Idempotency-Key must be 1-255 characters, got 256"),
            ("Idempotency-Key with a non-ASCII letter", "clé", "printable ASCII; U+00E9 at position 2"),
            ("Idempotency-Key with a tab", "a\tb", "printable ASCII; U+0009 at position 1"),
            ("Idempotency-Key with a zero-width space", "a\u200bb", "printable ASCII; U+200B at position 1"),
        )
    ),
    HttpCase("limit 0", "GET", "/leaderboard", "limit=0", message="limit must be from 1 to 10"),
    HttpCase("limit above TopN", "GET", "/leaderboard", "limit=11", message="limit must be from 1 to 10"),
    HttpCase("limit not a number", "GET", "/leaderboard", "limit=x", message="limit must be a whole number"),
    HttpCase("negative limit", "GET", "/leaderboard", "limit=-1", message="limit must be a whole number"),
    HttpCase("fractional limit", "GET", "/leaderboard", "limit=1.5", message="limit must be a whole number"),
    HttpCase("limit in superscript digits", "GET", "/leaderboard", "limit=²", message="whole number from 1 to 10"),
    HttpCase("limit in Arabic-Indic digits", "GET", "/leaderboard", "limit=٣", message="whole number from 1 to 10"),
    HttpCase("limit in fullwidth digits", "GET", "/leaderboard", "limit=\uff15", message="whole number from 1 to 10"),
    HttpCase("limit of 5,000 digits", "GET", "/leaderboard", "limit=" + "9" * 5000, message="must be from 1 to 10"),
    HttpCase("item id with a newline", "GET", "/items/bad%0Aid", message="control character (U+000A)"),
    HttpCase("item id of 513 bytes", "GET", "/items/" + "y" * 513, message="id is 513 bytes"),
    HttpCase("item id with an encoded NUL", "GET", "/items/%00", message="control character (U+0000)"),
    HttpCase("item id with a broken escape", "GET", "/items/%ZZ", status=404, message="no views recorded for item"),
    HttpCase("item id missing from the query", "GET", "/item", message="missing query parameter: id"),
    HttpCase("item id given twice", "GET", "/item", "id=a&id=b", message="query parameter id given 2 times"),
    HttpCase("item id with an encoded newline", "GET", "/item", "id=a%0Ab", message="control character (U+000A)"),
    HttpCase("item id in bytes that are not UTF-8", "GET", "/item", "id=%FF", message="query string is malformed"),
    HttpCase("query field without '='", "GET", "/item", "id", message="query string is malformed"),
    HttpCase("put without an id", "PUT", "/item", body="{}", message="missing query parameter: id"),
    HttpCase("metadata not JSON", "PUT", "/item", "id=a", body="{", message="body is not valid JSON"),
    HttpCase("metadata a JSON array", "PUT", "/item", "id=a", body="[1]", message="body must be a JSON object"),
    put("metadata an array of objects", '[{"title": "A cat"}]', "body must be a JSON object, got array"),
    put("metadata a JSON string", '"A cat"', "body must be a JSON object, got string"),
    put("metadata nested 50,000 deep", f'{{"a": {nested(DEEP)}}}', "body is nested deeper than 32 levels"),
    put("metadata nested 33 deep", f'{{"a": {nested(32)}}}', "body is nested deeper than 32 levels"),
    put("metadata with a number of 5,000 digits", f'{{"n": {DIGITS}}}', "a number of 5000 digits"),
    put("metadata with NaN", '{"n": NaN}', "NaN is not a JSON value"),
    put("put of an id with a zero-width space", "{}", "(U+200B ZERO WIDTH SPACE) at position 1", "id=a%E2%80%8B"),
    put("put of an id with a bidi override", "{}", "format character (U+202E", "id=%E2%80%AEa"),
    put("put of an id with a trailing space", "{}", "ends with a space", "id=banned.jpg%20"),
    put("put of an id in private use", "{}", "a private-use character (U+E000)", "id=%EE%80%80"),
    HttpCase(
        "read of an id with a zero-width space (never written)",
        "GET",
        "/item",
        "id=a%E2%80%8Bb",
        status=404,
        message="no views recorded for item 'a\\u200bb'",
    ),
    HttpCase(
        "hide of an id with a zero-width space (never written)",
        "POST",
        "/item/hide",
        "id=a%E2%80%8Bb",
        status=404,
        message="has no views and was never created",
    ),
    HttpCase(
        "metadata over 2,048 bytes of UTF-8",
        "PUT",
        "/item",
        "id=a",
        body=json.dumps({"note": "é" * 1020}),
        message="the maximum is 2048 bytes",
    ),
    HttpCase(
        "title over 200 characters",
        "PUT",
        "/item",
        "id=a",
        body=json.dumps({"title": "t" * 201}),
        message="meta.title must be a string of at most 200",
    ),
    HttpCase(
        "url not http(s)",
        "PUT",
        "/item",
        "id=a",
        body=json.dumps({"url": "javascript:alert(1)"}),
        message="meta.url must be an absolute http(s) URL",
    ),
    HttpCase("newest items: limit 0", "GET", "/items", "limit=0", message="limit must be from 1 to 100"),
    HttpCase(
        "newest items: created_after before year 1 in UTC",
        "GET",
        "/items",
        f"created_after={BEFORE_YEAR_1}",
        message="created_after must be an ISO-8601 date or date-time from 0001-01-01 to 9999-12-31 in UTC",
    ),
    HttpCase(
        "newest items: created_before after 9999 in UTC",
        "GET",
        "/items",
        f"created_before={AFTER_9999}",
        message="created_before must be an ISO-8601 date or date-time",
    ),
    HttpCase("newest items: limit 101", "GET", "/items", "limit=101", message="limit must be from 1 to 100"),
    HttpCase(
        "newest items: created_after not a time",
        "GET",
        "/items",
        "created_after=yesterday",
        message="created_after must be an ISO-8601 date or date-time",
    ),
    HttpCase(
        "newest items: an empty window",
        "GET",
        "/items",
        "created_after=2026-11-24&created_before=2026-11-23",
        message="must be earlier than created_before",
    ),
    HttpCase(
        "newest items: a cursor not written by the route",
        "GET",
        "/items",
        "cursor=e30",
        message="cursor is not one this route wrote",
    ),
    HttpCase("newest items: an unknown parameter", "GET", "/items", "since=2026-01-01", message="parameter 'since'"),
    HttpCase("around with a window", "GET", "/around", "id=ok&window=24h", message="unknown query parameter 'window'"),
    HttpCase("rank with a window", "GET", "/rank", "id=ok&window=24h", message="unknown query parameter 'window'"),
    HttpCase("leaderboard with an unknown parameter", "GET", "/leaderboard", "top=5", message="parameter 'top'"),
    HttpCase(
        "leaderboard window with a period",
        "GET",
        "/leaderboard",
        "window=24h&period=day",
        message="send window without period or at",
        parameters=(("Periods", "day,24h"),),
    ),
    HttpCase("item with a parameter", "GET", "/item", "id=ok&board=cats", message="unknown query parameter 'board'"),
    HttpCase("item by path with a parameter", "GET", "/items/ok", "k=2", message="takes no query parameters"),
    HttpCase("views with a query parameter", "POST", "/views", "id=b", body='{"id": "a"}', message="parameter 'id'"),
    HttpCase("hide with an unknown parameter", "POST", "/item/hide", "id=ok&board=cats", message="parameter 'board'"),
    put("put with an unknown parameter", "{}", "unknown query parameter 'title'", query="id=a&title=x"),
    put("put of metadata with a key twice", '{"title": "a", "title": "b"}', "has the key 'title' more than once"),
    HttpCase("rank without an id", "GET", "/rank", "board=global", message="missing query parameter: id"),
    HttpCase("rank of an empty id", "GET", "/rank", "id=", message="id must not be empty"),
    HttpCase(
        "rank of 101 ids",
        "GET",
        "/rank",
        "&".join(f"id={n}" for n in range(101)),
        message="at most 100 ids per request, got 101",
    ),
    HttpCase("rank board given twice", "GET", "/rank", "id=a&board=x&board=y", message="board given 2 times"),
    HttpCase("rank id in bytes that are not UTF-8", "GET", "/rank", "id=%FF", message="query string is malformed"),
    HttpCase("rank on an unknown board", "GET", "/rank", "id=a&board=nosuch", status=404, message="has no views"),
    HttpCase("hide without an id", "POST", "/item/hide", "reason=x", message="missing query parameter: id"),
    HttpCase("hide id given twice", "POST", "/item/hide", "id=a&id=b", message="query parameter id given 2 times"),
    HttpCase(
        "hide reason over 500 characters",
        "POST",
        "/item/hide",
        "id=a&reason=" + "r" * 501,
        message="reason must be at most 500 printable characters",
    ),
    HttpCase("hide reason with a newline", "POST", "/item/hide", "id=a&reason=a%0Ab", message="reason must be"),
    HttpCase(
        "hide of an id never viewed nor put",
        "POST",
        "/item/hide",
        "id=nobody",
        status=404,
        message="has no views and was never created",
    ),
    HttpCase(
        "unhide of an id never viewed nor put",
        "POST",
        "/item/unhide",
        "id=nobody",
        status=404,
        message="has no views and was never created",
    ),
    HttpCase("delete without an id", "DELETE", "/item", "reason=x", message="missing query parameter: id"),
    HttpCase("delete id given twice", "DELETE", "/item", "id=a&id=b", message="query parameter id given 2 times"),
    HttpCase("delete reason given twice", "DELETE", "/item", "id=a&reason=x&reason=y", message="given 2 times"),
    HttpCase("delete reason with a newline", "DELETE", "/item", "id=a&reason=a%0Ab", message="reason must be"),
    HttpCase("delete of an id with a control character", "DELETE", "/item", "id=a%00b", message="control character"),
    HttpCase(
        "delete of an id never viewed nor put",
        "DELETE",
        "/item",
        "id=nobody",
        status=404,
        message="has no views and was never created",
    ),
    HttpCase("page offset negative", "GET", "/leaderboard", "offset=-1", message="offset must be a whole number"),
    HttpCase("page past the depth", "GET", "/leaderboard", "offset=9999&limit=2", message="offset + limit"),
    HttpCase("page limit over PageSize", "GET", "/leaderboard", "offset=0&limit=101", message="limit must be"),
    HttpCase("page offset and cursor", "GET", "/leaderboard", "offset=1&cursor=e30", message="not both"),
    HttpCase("page cursor tampered", "GET", "/leaderboard", "cursor=e30", message="cursor is malformed"),
    HttpCase("around without an id", "GET", "/around", "k=5", message="missing query parameter: id"),
    HttpCase("around k of 0", "GET", "/around", "id=a&k=0", message="k must be from 1 to 50"),
    HttpCase("around k given twice", "GET", "/around", "id=a&k=1&k=2", message="k given 2 times"),
    HttpCase("around on an unknown board", "GET", "/around", "id=a&board=nosuch", status=404, message="has no views"),
    HttpCase("unknown route", "GET", "/nothing", status=404, message="Not found"),
    HttpCase("at before year 1 in UTC", "GET", "/leaderboard", f"at={BEFORE_YEAR_1}", message=OUT_OF_RANGE),
    HttpCase("at after 9999 in UTC", "GET", "/leaderboard", f"at={AFTER_9999}", message=OUT_OF_RANGE),
    HttpCase("day at before year 1", "GET", "/leaderboard", f"period=day&at={BEFORE_YEAR_1}", message=OUT_OF_RANGE),
    HttpCase("week at after 9999", "GET", "/leaderboard", f"period=week&at={AFTER_9999}", message=OUT_OF_RANGE),
    HttpCase("month at after 9999", "GET", "/leaderboard", f"period=month&at={AFTER_9999}", message=OUT_OF_RANGE),
    HttpCase("page at after 9999", "GET", "/leaderboard", f"offset=0&at={AFTER_9999}", message=OUT_OF_RANGE),
    HttpCase("rank at after 9999", "GET", "/rank", f"id=ok&period=week&at={AFTER_9999}", message=OUT_OF_RANGE),
    HttpCase("rank at before year 1", "GET", "/rank", f"id=ok&at={BEFORE_YEAR_1}", message=OUT_OF_RANGE),
    HttpCase("around at after 9999", "GET", "/around", f"id=ok&period=month&at={AFTER_9999}", message=OUT_OF_RANGE),
    HttpCase("around at before year 1", "GET", "/around", f"id=ok&period=day&at={BEFORE_YEAR_1}", message=OUT_OF_RANGE),
    HttpCase(
        "the last week of 9999",
        "GET",
        "/leaderboard",
        "period=week&at=9999-12-31T23:59:59.999999Z",
        status=404,
        message="has no views in the week 9999-W52",
    ),
    HttpCase(
        "the first day of year 1",
        "GET",
        "/leaderboard",
        "period=day&at=0001-01-01T00:00:00-01:00",
        status=404,
        message="has no views in the day 0001-01-01",
    ),
]


def _counter_at(item_id: str, bucket: str) -> dict[str, Any]:
    """A NewImage change: the sample's counter (write shard 3) as the counter of ``item_id`` in ``bucket``."""
    return {"pk": {"S": f"view#3#{bucket}#{item_id}"}, "item_id": {"S": item_id}, "bucket": {"S": bucket}}


# An OldImage change: the global counter did not move, so the record's one new count is the bad board's.
_NO_GLOBAL_VIEWS = {"views": {"N": "2"}}

STREAM: list[StreamCase] = [
    StreamCase("REMOVE of a counter", {"eventName": "REMOVE"}, reason="remove"),
    StreamCase("unknown event name", {"eventName": "UPSERT"}, reason="unknown_event"),
    StreamCase("no NewImage (KEYS_ONLY stream)", {"NewImage": None}, reason="missing_image"),
    StreamCase("MODIFY without OldImage (NEW_IMAGE stream)", {"OldImage": None}, reason="missing_image"),
    StreamCase("NewImage without item_id", {}, {"item_id": None}, reason="missing_attribute"),
    StreamCase("item_id is a number", {}, {"item_id": {"N": "5"}}, reason="missing_attribute"),
    StreamCase("shard is a string", {}, {"shard": {"S": "3"}}, reason="missing_attribute"),
    StreamCase("negative views", {}, {"views": {"N": "-4"}}, reason="missing_attribute"),
    StreamCase("fractional views", {}, {"views": {"N": "2.5"}}, reason="missing_attribute"),
    StreamCase("OldImage views not a number", {}, None, {"views": {"S": "x"}}, reason="missing_attribute"),
    StreamCase("pk is not the counter's key", {}, {"pk": {"S": "user#1"}}, reason="foreign_key"),
    StreamCase("unknown attribute type", {}, {"views": {"Q": "1"}}, reason="missing_attribute"),
    StreamCase("no dynamodb section", {"dynamodb": None}, reason="malformed"),
    # Counters no view the API takes could have written: skipped by the API's own rules (domain/validation.py)
    StreamCase("empty item id", {}, _counter_at("", "2026-11-23"), reason="invalid_id"),
    StreamCase("zero-width item id (U+200B)", {}, _counter_at("\u200b", "2026-11-23"), reason="invalid_id"),
    StreamCase("board name with a '#' (b:a#b)", {}, {"b:a#b": {"N": "2"}}, _NO_GLOBAL_VIEWS, reason="invalid_board"),
    StreamCase("board name in capitals (b:Cats)", {}, {"b:Cats": {"N": "2"}}, _NO_GLOBAL_VIEWS, reason="invalid_board"),
    StreamCase("empty board name (b:)", {}, {"b:": {"N": "2"}}, _NO_GLOBAL_VIEWS, reason="invalid_board"),
    StreamCase(
        "the global board as a category (b:global)",
        {},
        {"b:global": {"N": "2"}},
        _NO_GLOBAL_VIEWS,
        reason="invalid_board",
    ),
    StreamCase("first day a date holds (0001-01-01)", {}, _counter_at("a", "0001-01-01"), reason="out_of_range"),
    StreamCase("last day a date holds (9999-12-31)", {}, _counter_at("a", "9999-12-31"), reason="out_of_range"),
    StreamCase("a week bucket on a stack counted by day", {}, _counter_at("a", "2026-W48"), reason="foreign_bucket"),
]

CLI: list[CliCase] = [
    CliCase("empty id", ("record", ""), "id must not be empty"),
    CliCase("id with a tab", ("record", "ok", "bad\tid"), "control character (U+0009)"),
    CliCase("id of 600 bytes", ("record", "x" * 600), "id is 600 bytes"),
    CliCase("count 0", ("record", "a", "-n", "0"), "count must be at least 1"),
    CliCase("count above the maximum", ("record", "a", "-n", "5000"), "count must be at most 1000"),
    CliCase("count not a number", ("record", "a", "-n", "abc"), "'abc' is not a valid integer"),
    CliCase("board name in capitals", ("record", "a", "--board", "Cats"), "board name 'Cats' must be 1-64"),
    CliCase(
        "board outside the Boards pattern",
        ("-p", "Boards=max=100 pattern=cats", "record", "a", "--board", "dogs"),
        "board 'dogs' is not allowed: this stack's boards must match cats",
    ),
    CliCase(
        "a new board where writers create none",
        ("-p", "Boards=max=0", "record", "a", "--board", "cats"),
        "this stack's writers create no boards",
    ),
    CliCase("Boards past 2,000", ("-p", "Boards=max=5000", "init"), "parameter Boards must match"),
    CliCase("no item", ("record",), "Missing argument 'ITEMS...'"),
    CliCase("limit 0", ("top", "-n", "0"), "limit must be from 1"),
    CliCase("item metadata not JSON", ("item", "put", "a", "--meta", "{"), "meta is not valid JSON"),
    CliCase("item metadata not an object", ("item", "put", "a", "--meta", "7"), "meta must be a JSON object"),
    CliCase(
        "item metadata over 2 KB", ("item", "put", "a", "--meta", json.dumps({"n": "x" * 2100})), "maximum is 2048"
    ),
    CliCase("unknown template parameter", ("-p", "NoSuchParameter=1", "init"), "unknown template parameter"),
    CliCase("parameter without a value", ("-p", "TopN", "init"), "expected NAME=VALUE"),
    CliCase("non-numeric parameter", ("-p", "TopN=many", "init"), "parameter TopN must be a number"),
    CliCase("parameter out of range", ("-p", "TopN=0", "init"), "parameter TopN must be from 1 to 5000"),
    CliCase("parameter not allowed", ("-p", "SparseIndex=maybe", "init"), "must be one of true, false"),
    CliCase("malformed schedule", ("-p", "SnapshotSchedule=cron(0 12 * *)", "init"), "not a valid EventBridge"),
    CliCase("batch size 0", ("process", "--batch-size", "0"), "0 is not in the range 1<=x<=10000"),
    CliCase("rebuild with 0 segments", ("rebuild", "--segments", "0"), "0 is not in the range 1<=x<=1000"),
    CliCase("redrive file that is not failure messages", ("redrive", "--file", "{bad_letters}"), "line 1 is not"),
    CliCase("negative chaos seed", ("chaos", "--seed", "-1"), "-1 is not in the range x>=0"),
    CliCase("top at before year 1 in UTC", ("top", "--at", "0001-01-01T00:00:00+01:00"), OUT_OF_RANGE),
    CliCase("top of a week after 9999", ("top", "--period", "week", "--at", "9999-12-31T23:30:00-01:00"), OUT_OF_RANGE),
    CliCase("rank at after 9999 in UTC", ("rank", "kept", "--at", "9999-12-31T23:30:00-01:00"), OUT_OF_RANGE),
    CliCase("around at before year 1", ("around", "kept", "--at", "0001-01-01T00:00:00+01:00"), OUT_OF_RANGE),
    CliCase("around of a window", ("around", "kept", "--window", "24h"), "No such option '--window'"),
    CliCase(
        "top of a window with a period",
        ("-p", "Periods=day,24h", "top", "--window", "24h", "--period", "day"),
        "send window without period or at",
    ),
    CliCase("record of an id with a zero-width space", ("record", "a\u200bb"), "U+200B ZERO WIDTH SPACE"),
    CliCase("record of an id with a line separator", ("record", "a\u2028"), "a line separator (U+2028"),
    CliCase("put of an id with a bidi override", ("item", "put", "\u202ea", "--meta", "{}"), "(U+202E"),
    CliCase("record of an id with a trailing space", ("record", "banned.jpg "), "ends with a space"),
    CliCase("record of a lone combining mark", ("record", "\u0301"), "starts with a combining mark (U+0301"),
    CliCase("put of an id with a noncharacter", ("item", "put", "a\uffff", "--meta", "{}"), "a noncharacter (U+FFFF)"),
    CliCase("import of a line nested 50,000 deep", ("import", "{deep_line}"), "line 2: the line is nested deeper"),
    CliCase("import of a number of 5,000 digits", ("import", "{long_number}"), "line 1: the line holds a number"),
    CliCase("import of a time after 9999 in UTC", ("import", "{far_time}"), "is not from 1970 to now in UTC"),
    CliCase("import of an id with a bidi override", ("import", "{look_alike}"), "line 1: id contains"),
]

# Files the CLI rows name as {name}: written to a temporary directory by the test.
_GOOD_LINE = '{"id": "kept", "time": "2025-01-15T10:00:00Z"}'
CLI_FILES: dict[str, str] = {
    "bad_letters": '{"not": "a failure destination message"}\n',
    "deep_line": f'{_GOOD_LINE}\n{{"id": "a", "time": "2025-01-15", "boards": {nested(DEEP)}}}\n',
    "long_number": f'{{"id": "a", "time": "2025-01-15", "count": {DIGITS}}}\n{_GOOD_LINE}\n',
    "far_time": f'{{"id": "a", "time": "{AFTER_9999}"}}\n',
    "look_alike": '{"id": "\\u202egpj.exe", "time": "2025-01-15"}\n',
}


def _cell(text: str, limit: int = 60) -> str:
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    # Invisible characters are shown as escapes: the page must not hold the look-alikes it lists.
    text = "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in text.replace("\n", "\\n"))
    return text.replace("|", "\\|")


RULES = """
## The rules behind some refusals

### Look-alike ids

A new item id (`POST /views`, `PUT /item`, `shardboard record`, `item put` and `import`, the library's `Recorder`)
is taken in Unicode's NFC: `cafe\\u0301.jpg` (decomposed, as macOS names files) is the item `caf\\u00e9.jpg`, its
views count there and its byte limit is its NFC form's. It may not hold what renders as something else or as
nothing, so that no two ids look the same: a taken-down item cannot come back under an id that reads like its own.
Refused, besides control characters (Cc) and lone surrogates (Cs):

- a space (U+0020) first or last, two in a row, or an id of spaces only;
- a combining mark first (Unicode category M: it has no character to sit on, and draws on whatever precedes it);
- format characters (Unicode category Cf): the zero-width space U+200B, zero-width non-joiner and joiner
  U+200C/U+200D, the bidi marks, embeddings, overrides and isolates U+200E/U+200F, U+202A-U+202E and
  U+2066-U+2069, the word joiner U+2060, the byte order mark U+FEFF, the soft hyphen U+00AD, the tag characters
  U+E0001-U+E007F and the rest of Cf;
- the line and paragraph separators U+2028 and U+2029 (Zl, Zp);
- every space but U+0020 (Zs: the no-break space U+00A0, the thin and hair spaces, the ideographic space U+3000);
- the other characters Unicode marks Default_Ignorable_Code_Point, which renderers show as nothing: the variation
  selectors U+FE00-U+FE0F and U+E0100-U+E01EF, the combining grapheme joiner U+034F, the Hangul fillers U+115F,
  U+1160, U+3164 and U+FFA0, U+17B4-U+17B5, U+180B-U+180F, and the code points reserved as ignorable;
- the braille pattern blank U+2800, a symbol drawn as an empty cell (the usual stand-in for a refused space);
- private-use characters (Co: whatever a font draws there), code points unassigned in the Unicode version of the
  function's Python (Cn: a later version may draw them as anything) and the noncharacters U+FDD0-U+FDEF and
  U+xFFFE/U+xFFFF.

The message names the code point, its name and its position (0-based, in characters of the NFC form). They are
refused, not removed: removing them would silently turn one id into another (the views of `a\\u200bb` would count
for `ab`, which may be another item, and never reach the counters already stored under the id sent). The price:
emoji joined by U+200D or followed by a variation selector are not ids (a single emoji such as U+1F642 is).

**Look-alikes of a deleted id** are refused too (400, "reads as a deleted id"): an id whose Unicode confusables
skeleton (UTS #39, after NFKC) is a deleted id's, such as `b\\u0430nned.jpg` (a Cyrillic a), `\\uff42anned.jpg` or
`banned\\uff0ejpg` (fullwidth forms) or `com` for `corn` once `banned.jpg` or `corn` is deleted. The confusables data
is Unicode's confusables.txt as the `confusable-homoglyphs` package ships it. A delete writes, in its transaction, a
marker keyed by a digest of its id's skeleton beside the id's deny marker; a view checks it as it checks the deny
markers (one cached listing per container for 10 s, or one marker read per id past 1,024 markers), a put reads it.
The check is strict: an id that already had views and happens to read like a deleted one (`corn` beside a deleted
`com`) takes no more views either. Hidden items do not mark their skeleton (an unhide would have to know whether
another taken-down id shares it); their look-alikes are refused once they are deleted. Ids deleted before this
release have no marker until `shardboard migrate` (or `rebuild`) marks them.

Reads and takedowns (`GET /item`, `/items/{id}`, `/rank`, `/around`, hide, unhide and delete, over HTTP, in the CLI
and in the library) take any id the older rules took, exactly as given (no NFC), so an item stored under such an id
before these rules can still be read and, above all, hidden or deleted; it receives no more views or puts. Board
names are ASCII (`[a-z0-9_.:-]`), so none of this applies to them; viewers and takedown reasons must be printable
(`str.isprintable`), which refuses every invisible character above.

### Times

`at` (`GET /leaderboard`, `/rank`, `/around`; `top`, `rank` and `around --at`; the library's `at=`, a string or a
datetime), `created_after` and `created_before` (`GET /items`) and an import line's `time` are ISO-8601, UTC unless
they carry an offset. In UTC a time must fall from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z, what a
Python datetime holds: an offset can move `0001-01-01T00:00:00+01:00` before the first instant and
`9999-12-31T23:30:00-01:00` past the last, and both are refused (400, exit 2, BadInput; they were a 500 and a
traceback). Every time in the range has a period of each kind (the first ISO week starts on Monday 0001-01-01, the
last is 9999-W52), so a read at any of them answers its snapshot or 404. The last hour, day, week and month of 9999
end past what a datetime holds: a period there would never expire (no TTL), and no view lands there (views count at
the server's clock; an import takes 1970 to now).

### JSON bodies and import lines

`POST /views` and `PUT /item` take one JSON object, whatever the Content-Type. Refused with a 400 before any field
is read: a body that is not JSON (`NaN` and `Infinity` included), a body that is not an object (an array of views is
not a batch: it was answered 202 and its first element counted), an integer of more than 4,300 digits (Python's
limit for `int`) and nesting deeper than 32 levels (a view nests 2; Python's parser runs out of stack near 1,000, a
500 before). An import line obeys the same rules and is named (`line 2: the line is nested deeper than 32 levels`);
`--skip-bad` skips it and imports the rest. A body that gives a key twice, at any depth (`{"id": "a", "id": "b"}`), is
refused naming the key: a parser keeps the last, and a filter in front of the API that reads the first would judge
another request.

### Query parameters

Each route takes the query parameters docs/openapi.json lists for it, and no other: an unknown one, or one the route
does not read (`GET /around?window=24h`, `POST /views?id=b`), is a 400 naming it and what the route takes, never
ignored (that answered all time to a question about the last 24 hours). A window is read as of now: `window` with
`period` or `at` is a 400 (`GET /leaderboard`, `shardboard top --window`, the library's `top(window=...)`); the
CLI's `around` and `rank` have no `--window` (click refuses it).

### Deleted items

A delete is for good. Hiding, unhiding or putting a deleted item is refused, nothing written: HTTP 404 `not_found`
(as an unhide of one always was), CLI exit 1, the library (`services.items`) raises `DeletedItem`, each saying
`item '...' is deleted`; a put is refused in the same conditional write that would store it, so no delete slips in
between. Deleting it again is taken (it finishes a sweep cut short). `GET /item`, `GET /items/{id}` and `shardboard
item get` say `"status": "deleted"` (or `hidden`) and `taken_down_at`, with the metadata it had when deleted; an item
never put, or taken down before this release, has no `taken_down_at`.

### Idempotent replays

A retry with the same `Idempotency-Key` is answered byte for byte as the first request: the answer's `boards` are
the global board, then the others by name, whatever order a request names them in (the key's fingerprint ignores it).
"""


def _shown(value: str, limit: int = 12) -> str:
    """A header value as its request carries it, invisible characters escaped (``\\t``, ``\\u200b``)."""
    shown = "".join(char if char.isprintable() else char.encode("unicode_escape").decode() for char in value)
    return f'"{_cell(shown, limit)}"'


def render() -> str:
    """docs/bad-input.md."""
    lines = [
        "# Bad input: what was tried and what happens",
        "",
        "Every row is a test (`tests/integration/test_bad_input.py`, driven by `tests/bad_input_catalogue.py`, which",
        "also renders this page; a test fails if the page and the data differ). Every test also checks that the bad",
        "input wrote nothing: both tables are unchanged.",
        "",
        f"## HTTP API ({len(HTTP)} inputs)",
        "",
        'Every error body is `{"message": "...", "code": "..."}`: `bad_request` (400), `not_found` (404),',
        "`board_not_allowed` (422: a board the stack's `Boards` policy refuses, docs/boards-and-periods.md),",
        "`rate_limited` (429) or `throttled` (503, both with `Retry-After`), as docs/openapi.json documents each",
        "route's answers.",
        "`idempotency_key_reused` (422: an `Idempotency-Key` sent again within 24 hours with another id, count,",
        "boards or viewer; tests/integration/test_retried_writes.py), `rate_limited` (429) or `throttled` (503, both",
        "with `Retry-After`), as docs/openapi.json documents each route's answers.",
        "",
        "| input | request | status | code | message contains |",
        "|---|---|---|---|---|",
    ]
    for case in HTTP:
        request = f"{case.method} {case.path}" + (f"?{case.query}" if case.query else "")
        request += "".join(f" {name}: `{_shown(value)}`" for name, value in case.headers)
        if case.body is not None:
            request += f" `{_cell(case.body, 40)}`"
        lines.append(f"| {case.what} | {_cell(request, 70)} | {case.status} | `{case.code}` | {_cell(case.message)} |")
    lines += [
        "",
        f"## Stream records ({len(STREAM)} inputs)",
        "",
        "Each is one record in a batch delivered to the aggregator. It is skipped: the batch succeeds (no retry, no",
        "failure destination), the `RecordsSkipped` metric counts it and a `stream record skipped` log line names the",
        "reason.",
        "",
        "A record is trusted no more than a request: its item id and each `b:<board>` counter's name must pass the",
        "API's own rules (an id a view may name, a board name of `[a-z0-9_.:-]{1,64}`; `b:global` is refused, the",
        "global board's counter is `views`), and its bucket must be an anchor bucket with a period before and after it",
        "(not 0001-01-01 or 9999-12-31). A bad id or bucket skips the record; a bad board name skips that counter",
        "alone and the record's other counters count. A count DynamoDB cannot store fails only its own item (its",
        "records are reported for retry), never the batch. `shardboard rebuild` and `shardboard redrive` apply the",
        "same rules: they skip such counters, print a `skipped <reason>: <count>` line per reason and exit 0",
        "(tests/integration/test_untrusted_stream.py).",
        "",
        "| record | skipped, reason | metric |",
        "|---|---|---|",
    ]
    lines += [f"| {case.what} | `{case.reason}` | RecordsSkipped = 1 |" for case in STREAM]
    lines += [
        "",
        f"## CLI ({len(CLI)} inputs)",
        "",
        "Bad input exits 2 with the reason on stderr (click's usage errors too). `{name}` is a file holding",
        "`CLI_FILES[name]` of `tests/bad_input_catalogue.py` (an import file's bad line, a redrive file).",
        "",
        "| input | command | exit | message contains |",
        "|---|---|---|---|",
    ]
    for case in CLI:
        command = "shardboard " + " ".join(a if a else "''" for a in case.args)
        lines.append(f"| {case.what} | `{_cell(command, 60)}` | {case.code} | {_cell(case.message)} |")
    return "\n".join(lines) + "\n" + RULES


if __name__ == "__main__":
    print(render(), end="")
