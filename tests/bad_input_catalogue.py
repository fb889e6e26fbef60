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
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def code(self) -> str:
        """The error body's code (README "HTTP API"): one per status."""
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
    HttpCase("metadata a JSON array", "PUT", "/item", "id=a", body="[1]", message="meta must be a JSON object"),
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
]

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
]

CLI: list[CliCase] = [
    CliCase("empty id", ("record", ""), "id must not be empty"),
    CliCase("id with a tab", ("record", "ok", "bad\tid"), "control character (U+0009)"),
    CliCase("id of 600 bytes", ("record", "x" * 600), "id is 600 bytes"),
    CliCase("count 0", ("record", "a", "-n", "0"), "count must be at least 1"),
    CliCase("count above the maximum", ("record", "a", "-n", "5000"), "count must be at most 1000"),
    CliCase("count not a number", ("record", "a", "-n", "abc"), "'abc' is not a valid integer"),
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
]


def _cell(text: str, limit: int = 60) -> str:
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return text.replace("|", "\\|").replace("\n", "\\n")


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
        "| record | skipped, reason | metric |",
        "|---|---|---|",
    ]
    lines += [f"| {case.what} | `{case.reason}` | RecordsSkipped = 1 |" for case in STREAM]
    lines += [
        "",
        f"## CLI ({len(CLI)} inputs)",
        "",
        "Bad input exits 2 with the reason on stderr (click's usage errors too).",
        "",
        "| input | command | exit | message contains |",
        "|---|---|---|---|",
    ]
    for case in CLI:
        command = "shardboard " + " ".join(a if a else "''" for a in case.args)
        lines.append(f"| {case.what} | `{_cell(command, 60)}` | {case.code} | {_cell(case.message)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
