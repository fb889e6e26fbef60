"""What the OpenAPI document says about each route beyond its parameters and models: summary, the answers it can
give and who may call it. Kept next to the handlers and passed to their route decorators, so the document
(shardboard.handlers.openapi, docs/openapi.json) is generated from the routes themselves.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from shardboard.schema import (
    AroundMe,
    BoardList,
    Error,
    Item,
    ItemDeleted,
    ItemPut,
    Leaderboard,
    NewestPage,
    Ranks,
    TakedownDone,
    ViewSeen,
    ViewsRecorded,
)

# The template's security scheme names (template.yaml, HttpApi DefinitionBody): POST /views takes one of them, as
# WriteAuth says (iam: SigV4, jwt: a bearer token with the write scope of Jwt); PublicViews=true drops it. Reads: none.
SIGV4 = "AWS_IAM"
JWT = "ViewsJwt"
WRITE_SECURITY: list[dict[str, list[str]]] = [{SIGV4: []}, {JWT: []}]
# The item admin routes: the same mechanism as WriteAuth says, with the admin scope of Jwt; PublicViews never
# opens them.
ADMIN_SECURITY: list[dict[str, list[str]]] = [{SIGV4: []}, {JWT: []}]
PUBLIC: list[dict[str, list[str]]] = []


def _json(model: Any, description: str, headers: dict[str, Any] | None = None) -> OpenAPIResponse:
    answer: OpenAPIResponse = {"description": description, "content": {"application/json": {"model": model}}}
    if headers:
        answer["headers"] = headers
    return answer


_BAD_REQUEST = _json(Error, "Bad input (code bad_request): the message names the rule; nothing was written.")
# Every read is public and cacheable for one refresh interval (SnapshotSchedule), with an ETag for If-None-Match.
_CACHE_HEADERS = {
    "Cache-Control": {"description": "public, max-age=<refresh seconds>", "schema": {"type": "string"}},
    "ETag": {
        "description": "Names this answer (the top N: snapshot version and limit; any other read: a hash of its "
        "content); send it back in If-None-Match.",
        "schema": {"type": "string"},
    },
}
_NOT_MODIFIED = {"description": "Not modified (If-None-Match matched the ETag).", "headers": _CACHE_HEADERS}

_REPLAYED = {
    "Idempotent-Replayed": {
        "description": "true when the answer is a replay: the Idempotency-Key was used before (nothing was written "
        "now; the body and status are the first request's).",
        "schema": {"type": "string", "enum": ["true"]},
    }
}

POST_VIEWS: dict[str, Any] = {
    "summary": "Record views of one item",
    "description": "One counter write on the global board and every board named: 202 means every view counted, "
    "any error means none did. The body is read as JSON whatever its Content-Type (navigator.sendBeacon sends "
    "text/plain; such a body is a page's own view: its User-Agent is judged for crawlers, whose views count on the "
    "reserved board bots only, and without a viewer it gets an anonymous viewer id, docs/honest-counts.md). A "
    "response can still be lost after the views counted (a timeout, a cut connection): send an "
    "Idempotency-Key (1-255 printable ASCII characters, e.g. a UUID per logical request) and retry with the same "
    "key: within 24 hours of its first use the key counts once, however many retries arrive, at once or late, and "
    "each retry is answered as the first request was (Idempotent-Replayed: true); the same key with another id, "
    "count, boards or viewer is a 422. Keys are global to the stack: make them unguessable.",
    "operation_id": "recordViews",
    "security": WRITE_SECURITY,
    "responses": {
        202: _json(ViewsRecorded, "Recorded (with a viewer: the ViewSeen shape, duplicate false).", _REPLAYED),
        200: _json(
            ViewSeen, "With a viewer: that viewer's view of the item counted already (duplicate true).", _REPLAYED
        ),
        400: _BAD_REQUEST,
        403: _json(
            Error,
            "Origin not allowed (code origin_not_allowed): the request came from a page (its Origin header) that "
            "PublicViews does not name; nothing was recorded.",
        ),
        422: _json(
            Error,
            "Board not allowed (code board_not_allowed): the stack's Boards policy refuses a board named (outside its "
            "pattern, or a new board past its maximum); or Idempotency-Key reused (code idempotency_key_reused): the "
            "key was used in the last 24 hours by a request with another id, count, boards or viewer. Nothing was "
            "recorded.",
        ),
        429: _json(
            Error,
            "Rate limited (code rate_limited; PublicViews only): the client used its per-IP or per-viewer allowance "
            "for the minute; nothing was recorded.",
            {"Retry-After": {"description": "Seconds until the next window.", "schema": {"type": "integer"}}},
        ),
        503: _json(
            Error,
            "Throttled (code throttled): nothing was recorded; retry after Retry-After seconds (with the same "
            "Idempotency-Key, if the request had one).",
            {"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}},
        ),
    },
}

GET_LEADERBOARD: dict[str, Any] = {
    "summary": "A board's top N for a period, or a page of its ranked version",
    "description": "Without offset or cursor: one GetItem of the period's snapshot, refreshed by the snapshot job, "
    "with walk: a cursor at offset 0 of the ranked version. With offset (and limit <= PageSize, offset + limit <= D): "
    "that page of the head's ranked version, the head and one BatchGetItem. With cursor: the next page of the version "
    "the cursor pins (no duplicate, no gap while views arrive); an expired or tampered cursor gets a 400. Every "
    "entry carries its exact competition rank.",
    "operation_id": "getLeaderboard",
    "security": PUBLIC,
    "responses": {
        200: _json(Leaderboard, "The snapshot (or the page), best first.", _CACHE_HEADERS),
        304: _NOT_MODIFIED,
        400: _BAD_REQUEST,
        404: _json(Error, "No snapshot (code not_found): an unknown board, or a period without views."),
    },
}

GET_ITEM: dict[str, Any] = {
    "summary": "An item's views",
    "description": "The item's exact views on the global board, all time. Ids may contain '/'.",
    "operation_id": "getItem",
    "security": PUBLIC,
    "responses": {
        200: _json(Item, "The item's views.", _CACHE_HEADERS),
        304: _NOT_MODIFIED,
        400: _BAD_REQUEST,
        404: _json(
            Error,
            "No views recorded for the item (code not_found). An id that starts with '?' reaches no route (API Gateway "
            "routes on the decoded path, cut at its first '?'): API Gateway's own 404, with a message only. GET "
            "/item?id= takes any id.",
        ),
    },
}

_ID_QUERY = "Ids travel in the query string (?id=, percent-encoded, once): any id, '?' included."

GET_ITEM_BY_QUERY: dict[str, Any] = {
    "summary": "An item: its metadata and views",
    "description": "The item's metadata (when it was created with PUT /item) and its exact views on the global "
    "board, all time. " + _ID_QUERY,
    "operation_id": "getItemByQuery",
    "security": PUBLIC,
    "responses": {
        200: _json(Item, "The item.", _CACHE_HEADERS),
        304: _NOT_MODIFIED,
        400: _BAD_REQUEST,
        404: _json(Error, "Never created and no views recorded (code not_found)."),
    },
}

GET_NEWEST_ITEMS: dict[str, Any] = {
    "summary": "The newest items",
    "description": "Items created in [created_after, created_before), newest first (ties: by id), exact across "
    "the by-created index's shards: one Query per shard and an ordered merge. Walk with cursor: items created "
    "during a walk never enter it, and no item appears twice or is skipped.",
    "operation_id": "getNewestItems",
    "security": PUBLIC,
    "responses": {
        200: _json(NewestPage, "One page, newest first.", _CACHE_HEADERS),
        304: _NOT_MODIFIED,
        400: _BAD_REQUEST,
    },
}

GET_RANK: dict[str, Any] = {
    "summary": "Rank and percentile of items in a period",
    "description": "Ids travel in the query string, percent-encoded: several as a repeated id= (at most 100); board, "
    "period and at at most once each. Within the snapshot's top N one GetItem; within the ranked version's depth D "
    "one more BatchGetItem of rank shards (exact competition rank); past D one BatchGetItem of the items table (a "
    'hidden or deleted item answers so) and one more read for the views, and the rank is null with "beyond": D and '
    "a modelled, approximate percentile.",
    "operation_id": "getRank",
    "security": PUBLIC,
    "responses": {
        200: _json(Ranks, "One answer per id, in the order asked.", _CACHE_HEADERS),
        304: _NOT_MODIFIED,
        400: _BAD_REQUEST,
        404: _json(Error, "No snapshot (code not_found): an unknown board, or a period without views."),
    },
}

GET_AROUND: dict[str, Any] = {
    "summary": "An item's neighbours in a period",
    "description": "The k (1 to 50, default 5) entries above and below the item, 2k + 1 in all, shifted at the top "
    "and bottom (above and below say how many), in board order with exact competition ranks, the ones GET /rank "
    "gives. From the snapshot alone when it holds the item (continued from the ranked version only where both agree), "
    "else the snapshot, one rank shard and one BatchGetItem of 1-2 pages of the ranked version. " + _ID_QUERY,
    "operation_id": "getAround",
    "security": PUBLIC,
    "responses": {
        200: _json(AroundMe, "The neighbours, best first.", _CACHE_HEADERS),
        304: _NOT_MODIFIED,
        400: _BAD_REQUEST,
        404: _json(
            Error, "No snapshot, or the item is not in the ranked top D or is taken down (code not_found, the reason)."
        ),
    },
}

GET_BOARDS: dict[str, Any] = {
    "summary": "The stack's boards and periods, for frontends",
    "description": "Every board that holds views (the default board first) with its N and D, the periods GET "
    "/leaderboard reads (period= or window=), the page size and the refresh interval, and the element's versioned "
    "URL: what a page needs to offer only what the stack answers. One Query of the board table's by-change index, "
    "answered from memory for one refresh interval.",
    "operation_id": "getBoards",
    "security": PUBLIC,
    "responses": {
        200: _json(BoardList, "The listing.", _CACHE_HEADERS),
        304: _NOT_MODIFIED,
        400: _BAD_REQUEST,
    },
}

GET_SCRIPT: dict[str, Any] = {
    "summary": "The embeddable <shardboard-board> element (an ES module)",
    "description": "A framework-free custom element that shows a board and refreshes it: "
    '<script type="module" src="https://API/shardboard.js"></script><shardboard-board></shardboard-board>. '
    "Attributes: api (default: the script's own base URL), board, period (a period or window of GET /boards), "
    "limit (clamped to the board's N), record (one view of that item, sent with navigator.sendBeacon). With v= the "
    "content hash GET /boards names it is cached a year; without, 5 minutes (ETag, 304).",
    "operation_id": "getScript",
    "security": PUBLIC,
    "responses": {
        200: {
            "description": "The module.",
            "content": {"text/javascript": {"schema": {"type": "string"}}},
            "headers": _CACHE_HEADERS,
        },
        304: _NOT_MODIFIED,
        400: _BAD_REQUEST,
    },
}

PUT_ITEM: dict[str, Any] = {
    "summary": "Create or replace an item's metadata (admin)",
    "description": "The body (a JSON object of at most 2 KB) replaces the item's metadata; the first put sets "
    "created_at. Every snapshot that carries the item's metadata gets the new document before the answer. "
    "SigV4 (WriteAuth=iam, the ItemsAdminPolicyArn output) or a JWT with Jwt's admin scope (WriteAuth=jwt). "
    "The body is read as JSON whatever its Content-Type. " + _ID_QUERY,
    "operation_id": "putItem",
    "security": ADMIN_SECURITY,
    "responses": {
        200: _json(ItemPut, "Stored."),
        400: _BAD_REQUEST,
    },
}


_TAKEDOWN_AUTH = (
    "SigV4 (WriteAuth=iam, the ItemsAdminPolicyArn output) or a JWT with Jwt's admin scope (WriteAuth=jwt). "
    "Logged with who (the caller) and why (reason) in the item's audit rows and an ItemAudit log line. "
)

HIDE_ITEM: dict[str, Any] = {
    "summary": "Hide an item from every board and period (admin)",
    "description": "Every snapshot that holds the item is patched at once and refilled to a full N from its spare "
    "entries; the item's views go on counting, so unhide restores it exactly. Optional reason (at most 500 "
    "characters). Hiding a hidden item re-checks the snapshots (changed false). " + _TAKEDOWN_AUTH + _ID_QUERY,
    "operation_id": "hideItem",
    "security": ADMIN_SECURITY,
    "responses": {
        200: _json(TakedownDone, "Hidden."),
        400: _BAD_REQUEST,
        404: _json(Error, "No views recorded for the item and it was never created (code not_found); nothing written."),
    },
}

UNHIDE_ITEM: dict[str, Any] = {
    "summary": "Unhide an item (admin)",
    "description": "The item's snapshots are gathered again at once, with its counts as they are now. An item that "
    "is not hidden changes nothing (changed: false) but its snapshots are checked again, which finishes an unhide "
    "cut short. " + _TAKEDOWN_AUTH + _ID_QUERY,
    "operation_id": "unhideItem",
    "security": ADMIN_SECURITY,
    "responses": {
        200: _json(TakedownDone, "Visible again."),
        400: _BAD_REQUEST,
        404: _json(Error, "No views and never created, or deleted (code not_found); nothing written."),
    },
}


DELETE_ITEM: dict[str, Any] = {
    "summary": "Delete an item's counts everywhere (admin)",
    "description": "A tombstone (the item's metadata kept for the audit) and the id's deny marker, then every "
    "snapshot that holds it patched at once as a hide does, then its aggregates and past period entries deleted on "
    "every board. Later views of it are refused (POST /views answers 404 not_found within 10 s) and never counted. "
    "Deleting it again runs the sweep again (changed false): that finishes a delete cut short. Optional reason (at "
    "most 500 characters). " + _TAKEDOWN_AUTH + _ID_QUERY,
    "operation_id": "deleteItem",
    "security": ADMIN_SECURITY,
    "responses": {
        200: _json(ItemDeleted, "Deleted."),
        400: _BAD_REQUEST,
        404: _json(Error, "No views recorded for the item and it was never created (code not_found); nothing written."),
    },
}


# The routes table: every route of the API, by operation id, with the query parameters it takes (docs/openapi.json
# documents the same; the fuzz test counts its routes here): any other is a 400 naming it (http_input.known_query),
# never silently ignored.
QUERY_PARAMETERS: dict[str, tuple[str, ...]] = {
    POST_VIEWS["operation_id"]: (),
    GET_LEADERBOARD["operation_id"]: ("board", "period", "at", "limit", "offset", "cursor", "window"),
    GET_ITEM["operation_id"]: (),
    GET_ITEM_BY_QUERY["operation_id"]: ("id",),
    GET_NEWEST_ITEMS["operation_id"]: ("created_after", "created_before", "limit", "cursor"),
    GET_RANK["operation_id"]: ("id", "board", "period", "at"),
    GET_AROUND["operation_id"]: ("id", "k", "board", "period", "at"),
    PUT_ITEM["operation_id"]: ("id",),
    HIDE_ITEM["operation_id"]: ("id", "reason"),
    UNHIDE_ITEM["operation_id"]: ("id", "reason"),
    DELETE_ITEM["operation_id"]: ("id", "reason"),
    GET_BOARDS["operation_id"]: (),
    GET_SCRIPT["operation_id"]: ("v",),
}


def takes(route: dict[str, Any]) -> tuple[str, ...]:
    """The query parameters ``route`` (one of the dicts above) takes."""
    return QUERY_PARAMETERS[route["operation_id"]]


# GET /items/<id>, as a regex so that ids may contain "/" (a <param> segment stops at "/"); "s" because API Gateway
# hands the path decoded, so an id with a newline must still reach the handler (and its 400).
ITEM_ROUTE = "/items/(?s:.+)"
