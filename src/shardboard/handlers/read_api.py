"""HTTP API: ``GET /leaderboard?board=B&period=P&at=DATE&limit=N`` (one GetItem of that period's snapshot, or with
``window=24h`` of a rolling window's), an
item's metadata and views: ``GET /item?id=<id>`` (any id) and ``GET /items/{id}`` (ids without '?'), the newest
items: ``GET /items?created_after=T1&created_before=T2&limit=L&cursor=C`` (a Query per created shard), and
ranks: ``GET /rank?id=a&id=b&board=B&period=P&at=DATE``, pages of the ranked version: ``GET /leaderboard?offset=O&
limit=L`` and ``?cursor=C``, and an item's neighbours: ``GET /around?id=&k=&board=&period=&at=``; for frontends, the
stack's boards and periods: ``GET /boards``, and the embeddable element: ``GET /shardboard.js``."""

import hashlib
import time
from functools import cache
from importlib import resources
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from shardboard.domain import validation
from shardboard.domain.items import newest
from shardboard.handlers import http_input, routes
from shardboard.handlers.http_errors import answer_errors
from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import board_store, clock, item_store, settings
from shardboard.schema import AroundMe, BoardList, Item, Leaderboard, NewestPage, Ranks
from shardboard.services import items, listing, reading

app = APIGatewayHttpResolver(enable_validation=True)
answer_errors(app)

# Strings checked by the domain's rules, as the CLI's options are (a BadInput answers 400 naming the rule); empty is
# the same as absent.
BoardQuery = Annotated[str, Query(description="Board name (default: the global board).")]
PeriodQuery = Annotated[str, Query(description="all (the default) or one of the stack's Periods.")]
AtQuery = Annotated[str, Query(description="ISO-8601 date or date-time in the period (default: now).")]
LimitQuery = Annotated[str, Query(description="How many items, 1 to the board's N (default N).")]
AfterQuery = Annotated[str, Query(description="ISO-8601: items created at or after this time (default: any).")]
BeforeQuery = Annotated[str, Query(description="ISO-8601: items created before this time (default: any).")]
PageLimitQuery = Annotated[str, Query(description=f"Items per page, 1 to {newest.MAX_NEWEST_LIMIT} (default 100).")]
CursorQuery = Annotated[str, Query(description="The previous page's cursor (same created_after/created_before).")]
OffsetQuery = Annotated[str, Query(description="A page of the ranked version from this 0-based offset (O + L <= D).")]
WindowQuery = Annotated[str, Query(description="A rolling window of the stack's Periods (24h): its top as of now.")]
WalkQuery = Annotated[str, Query(description="A page's (or walk's) cursor: the next page of the version it pins.")]


@app.get("/leaderboard", **routes.GET_LEADERBOARD)
@tracer.capture_method
def get_leaderboard(  # noqa: PLR0917 - one parameter per query parameter
    board: BoardQuery = "",
    period: PeriodQuery = "",
    at: AtQuery = "",
    limit: LimitQuery = "",
    offset: OffsetQuery = "",
    cursor: WalkQuery = "",
    window: WindowQuery = "",
) -> Response[Leaderboard | None]:  # None: 304 Not Modified
    http_input.known_query(app.current_event.raw_query_string, routes.takes(routes.GET_LEADERBOARD))
    metrics.add_metric(name="LeaderboardReads", unit=MetricUnit.Count, value=1)
    if window and (offset or cursor):
        raise validation.BadInput("a window has no pages: send window without offset or cursor")
    if offset or cursor:
        metrics.add_metric(name="LeaderboardPageReads", unit=MetricUnit.Count, value=1)
        page = reading.page(reads(), board=board, period=period, at=at, offset=offset, limit=limit, cursor=cursor)
        return cached(page)
    top = reading.top(reads(), board=board, period=period, at=at, limit=limit, window=window)
    # The head's period bucket, version and the limit name this answer (a 304 needs no document built); the bucket,
    # as the same URL (?period=hour) names another head at each turn, whose version may be the same.
    etag = f'"{top.head.bucket}-{top.head.version}-{top.limit}"'
    headers = cache_headers(etag)
    if not_modified(etag):
        metrics.add_metric(name="LeaderboardNotModified", unit=MetricUnit.Count, value=1)
        return Response(304, headers=headers)
    return Response(200, "application/json", top.document, headers=headers)


def cache_headers(etag: str) -> dict[str, str]:
    # Reads follow the snapshot job: what they answer changes about once per refresh, so caches may keep it that long.
    return {"Cache-Control": f"public, max-age={settings().refresh_seconds}", "ETag": etag}


def not_modified(etag: str) -> bool:
    """If-None-Match holds ``etag`` (weakly compared, as RFC 9110 compares it there) or is ``*``."""
    sent = app.current_event.headers.get("if-none-match") or ""
    held = {tag.strip().removeprefix("W/") for tag in sent.split(",")}
    return etag in held or "*" in held


def cached(document: BaseModel) -> Response[Any]:
    """A read's 200 with its cache headers, the ETag a hash of its content; a 304 when If-None-Match holds it."""
    etag = '"' + hashlib.sha256(document.model_dump_json().encode()).hexdigest()[:32] + '"'
    if not_modified(etag):
        return Response(304, headers=cache_headers(etag))
    return Response(200, "application/json", document, headers=cache_headers(etag))


@app.get("/around", **routes.GET_AROUND)
@tracer.capture_method
def get_around() -> Response[AroundMe | None]:
    # Read from the raw query string like GET /rank: the id is any id, and a repeated name is refused.
    raw = app.current_event.raw_query_string
    query = http_input.known_query(raw, routes.takes(routes.GET_AROUND))
    metrics.add_metric(name="AroundReads", unit=MetricUnit.Count, value=1)
    answer = reading.neighbours(
        reads(), http_input.query_value(raw, "id"), k=http_input.once(query, "k"), **named(query)
    )
    return cached(answer.document())


# A regex route: ids may contain "/" (images/001.jpg), which a <param> segment would not match. The OpenAPI
# document names it /items/{id} (shardboard.handlers.openapi), as the template names it /items/{id+}.
@app.get(routes.ITEM_ROUTE, **routes.GET_ITEM)
@tracer.capture_method
def get_item() -> Response[Item | None]:
    # API Gateway hands the path decoded (pathParameters and rawPath alike): decoding it again would read the id
    # "a%41" as "aA".
    event = app.current_event
    raw = (event.path_parameters or {}).get("id") or event.path.split("/items/", 1)[1]
    http_input.known_query(event.raw_query_string, routes.takes(routes.GET_ITEM))
    metrics.add_metric(name="ItemReads", unit=MetricUnit.Count, value=1)
    return cached(reading.item(reads(), raw))


@app.get("/item", **routes.GET_ITEM_BY_QUERY)
@tracer.capture_method
def get_item_by_query() -> Response[Item | None]:
    # The id is read from the raw query string (http_input.query_value says why); openapi.py documents it.
    raw = app.current_event.raw_query_string
    http_input.known_query(raw, routes.takes(routes.GET_ITEM_BY_QUERY))
    metrics.add_metric(name="ItemReads", unit=MetricUnit.Count, value=1)
    return cached(reading.item(reads(), http_input.query_value(raw, "id")))


@app.get("/rank", **routes.GET_RANK)
@tracer.capture_method
def get_rank() -> Response[Ranks | None]:
    # Every parameter is read from the raw query string: ids repeat (id=a&id=b), and API Gateway's parsed
    # parameters would join them with commas (http_input.query_value).
    query = http_input.known_query(app.current_event.raw_query_string, routes.takes(routes.GET_RANK))
    metrics.add_metric(name="RankReads", unit=MetricUnit.Count, value=1)
    if not query.get("id"):
        raise validation.BadInput("missing query parameter: id")
    return cached(reading.ranks(reads(), query["id"], **named(query)).document())


def named(query: dict[str, list[str]]) -> dict[str, str]:
    """The ``board``, ``period`` and ``at`` of a raw query string, each at most once (empty: the default)."""
    return {name: http_input.once(query, name) for name in ("board", "period", "at")}


def reads() -> reading.BoardReads:
    return reading.BoardReads(board_store(), item_store(), settings(), clock())


# A literal route: "/items" never matches the regex route above, which needs at least one character after "/items/".
@app.get("/items", **routes.GET_NEWEST_ITEMS)
@tracer.capture_method
def get_newest_items(
    created_after: AfterQuery = "",
    created_before: BeforeQuery = "",
    limit: PageLimitQuery = "",
    cursor: CursorQuery = "",
) -> Response[NewestPage | None]:
    # Repeated names arrive joined with commas (queryStringParameters): no time, limit or cursor holds a comma, so
    # the rules refuse them.
    http_input.known_query(app.current_event.raw_query_string, routes.takes(routes.GET_NEWEST_ITEMS))
    page = items.newest_page(item_store(), created_after, created_before, limit, cursor)
    metrics.add_metric(name="NewestReads", unit=MetricUnit.Count, value=1)
    return cached(NewestPage.of(page.items, page.cursor))


# The element's file never changes within a deployment: under its versioned URL (?v=<content hash>) a browser or a
# CDN keeps it a year; the unversioned URL, which a site pastes, is re-checked after SCRIPT_MAX_AGE (ETag: a 304).
SCRIPT_PATH = "/shardboard.js"
SCRIPT_MAX_AGE = 300
VERSIONED_MAX_AGE = 365 * 24 * 3600
# GET /boards queries the board table's by-change index: a container answers from its last listing for one refresh
# interval, so a burst of page loads costs one Query.
_listed: dict[str, tuple[float, BoardList]] = {}


@cache
def element_script() -> tuple[bytes, str]:
    """The element's module (src/shardboard/web/shardboard.js, shipped in the package) and its content hash."""
    body = (resources.files("shardboard") / "web" / "shardboard.js").read_bytes()
    return body, hashlib.sha256(body).hexdigest()[:16]


def versioned_script_url() -> str:
    return f"{SCRIPT_PATH.lstrip('/')}?v={element_script()[1]}"


VersionQuery = Annotated[str, Query(description="The content hash GET /boards names (then cached a year).")]


@app.get(SCRIPT_PATH, **routes.GET_SCRIPT)
def get_script(v: VersionQuery = "") -> Response[str | None]:  # None: 304 Not Modified
    http_input.known_query(app.current_event.raw_query_string, routes.takes(routes.GET_SCRIPT))
    body, version = element_script()
    etag = f'"{version}"'
    age = VERSIONED_MAX_AGE if v == version else SCRIPT_MAX_AGE
    headers = {"Cache-Control": f"public, max-age={age}" + (", immutable" if v == version else ""), "ETag": etag}
    if not_modified(etag):
        return Response(304, headers=headers)
    return Response(200, "text/javascript; charset=utf-8", body.decode("utf-8"), headers=headers)


@app.get("/boards", **routes.GET_BOARDS)
@tracer.capture_method
def get_boards() -> Response[BoardList | None]:
    http_input.known_query(app.current_event.raw_query_string, routes.takes(routes.GET_BOARDS))
    metrics.add_metric(name="BoardListReads", unit=MetricUnit.Count, value=1)
    now = time.monotonic()  # the cached list's age in this container, not a time of day
    held = _listed.get(settings().board_table)
    if held is None or now - held[0] >= settings().refresh_seconds:
        held = (now, listing.boards(board_store(), settings(), versioned_script_url()))
        _listed[settings().board_table] = held
    return cached(held[1])


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
