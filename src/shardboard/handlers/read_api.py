"""HTTP API: ``GET /leaderboard?board=B&period=P&at=DATE&limit=N`` (one GetItem of that period's snapshot), an
item's metadata and views: ``GET /item?id=<id>`` (any id) and ``GET /items/{id}`` (ids without '?'), the newest
items: ``GET /items?created_after=T1&created_before=T2&limit=L&cursor=C`` (K Queries of the by-created index), and
ranks: ``GET /rank?id=a&id=b&board=B&period=P&at=DATE``, pages of the ranked version: ``GET /leaderboard?offset=O&
limit=L`` and ``?cursor=C``, and an item's neighbours: ``GET /around?id=&k=&board=&period=&at=``."""

from datetime import UTC, datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.domain import newest, validation
from shardboard.domain.ports import PeriodKey, Snapshot
from shardboard.domain.rank_lookup import lookup_ranks
from shardboard.domain.rank_pages import (
    around,
    around_document,
    leaderboard_page,
    page_document,
    parse_k,
    walk_cursor,
)
from shardboard.domain.ranked import MAX_RANK_IDS
from shardboard.domain.snapshot import not_found, period_at
from shardboard.handlers import routes
from shardboard.handlers.http_errors import answer_errors
from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import board_store, item_store, settings
from shardboard.schema import AroundMe, Item, Leaderboard, NewestPage, Ranks
from shardboard.settings import Settings

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
) -> Response[Leaderboard | None]:  # None: 304 Not Modified
    config = settings()
    metrics.add_metric(name="LeaderboardReads", unit=MetricUnit.Count, value=1)
    name = validation.board_name(board or config.board)
    kind = validation.period_kind(period, config.periods)
    moment = validation.moment(at)
    if offset or cursor:
        named = period_at(name, kind, moment) if (board or period or at or not cursor) else None
        return ranked_page(named, offset, limit, cursor)
    count = validation.limit(limit, config.top_n_of(name))
    wanted = period_at(name, kind, moment)
    snapshot = board_store().get_snapshot(wanted)
    if snapshot is None:
        raise NotFoundError(not_found(wanted))
    # The snapshot changes at most once per refresh, so caches may keep it that long.
    etag = f'"{snapshot["version"]}-{count}"'
    headers = {"Cache-Control": f"public, max-age={config.refresh_seconds}", "ETag": etag}
    if app.current_event.headers.get("if-none-match") == etag:
        metrics.add_metric(name="LeaderboardNotModified", unit=MetricUnit.Count, value=1)
        return Response(304, headers=headers)
    document = Leaderboard.of_snapshot(snapshot, count)
    document.walk = walk_cursor(snapshot, wanted, config)
    return Response(200, "application/json", document, headers=headers)


def ranked_page(named: PeriodKey | None, offset: str, limit: str, cursor: str) -> Response[Leaderboard | None]:
    """A page of a ranked version: the head and one BatchGetItem of its stored pages (a retired version's cursor:
    one rank shard more)."""
    metrics.add_metric(name="LeaderboardPageReads", unit=MetricUnit.Count, value=1)
    now = datetime.now(UTC).isoformat()
    head, page = leaderboard_page(board_store(), settings(), named, offset=offset, limit=limit, cursor=cursor, now=now)
    if head is None:
        raise NotFoundError(not_found(named or PeriodKey(settings().board, "all", "all")))
    return Response(200, "application/json", Leaderboard.model_validate(page_document(head, page)))


@app.get("/around", **routes.GET_AROUND)
@tracer.capture_method
def get_around() -> AroundMe:
    # Read from the raw query string like GET /rank: the id is any id, and a repeated name is refused.
    config = settings()
    raw = app.current_event.raw_query_string
    query = routes.query_values(raw)
    item = validation.item_id(routes.query_value(raw, "id"))
    k = parse_k(routes.once(query, "k"))
    wanted, snapshot = queried_snapshot(query, config, "AroundReads")
    answer = around(board_store(), wanted, snapshot, item, k=k, catalog=item_store())
    return AroundMe.model_validate(around_document(snapshot, item, answer))


# A regex route: ids may contain "/" (images/001.jpg), which a <param> segment would not match. The OpenAPI
# document names it /items/{id} (shardboard.handlers.openapi), as the template names it /items/{id+}.
@app.get(routes.ITEM_ROUTE, **routes.GET_ITEM)
@tracer.capture_method
def get_item() -> Item:
    # API Gateway hands the path decoded (pathParameters and rawPath alike): decoding it again would read the id
    # "a%41" as "aA".
    event = app.current_event
    raw = (event.path_parameters or {}).get("id") or event.path.split("/items/", 1)[1]
    return read_item(validation.item_id(raw))


@app.get("/item", **routes.GET_ITEM_BY_QUERY)
@tracer.capture_method
def get_item_by_query() -> Item:
    # The id is read from the raw query string (routes.query_value says why); openapi.py documents it.
    return read_item(validation.item_id(routes.query_value(app.current_event.raw_query_string, "id")))


@app.get("/rank", **routes.GET_RANK)
@tracer.capture_method
def get_rank() -> Ranks:
    # Every parameter is read from the raw query string: ids repeat (id=a&id=b), and API Gateway's parsed
    # parameters would join them with commas (routes.query_value).
    config = settings()
    query = routes.query_values(app.current_event.raw_query_string)
    ids = [validation.item_id(value) for value in query.get("id", [])]
    if not ids:
        raise validation.BadInput("missing query parameter: id")
    if len(ids) > MAX_RANK_IDS:
        raise validation.BadInput(f"at most {MAX_RANK_IDS} ids per request, got {len(ids)}")
    wanted, snapshot = queried_snapshot(query, config, "RankReads")
    answers = lookup_ranks(board_store(), config, wanted, snapshot, ids, catalog=item_store())
    period = snapshot.get("period") or {"kind": "all"}
    return Ranks.model_validate({"board": wanted.board, "period": period, "ranks": [a.as_json() for a in answers]})


def queried_snapshot(query: dict[str, list[str]], config: Settings, metric: str) -> tuple[PeriodKey, Snapshot]:
    """The period that ``board``, ``period`` and ``at`` (each at most once) name, and its snapshot (404 without)."""
    name = validation.board_name(routes.once(query, "board") or config.board)
    kind = validation.period_kind(routes.once(query, "period"), config.periods)
    wanted = period_at(name, kind, validation.moment(routes.once(query, "at")))
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
    snapshot = board_store().get_snapshot(wanted)
    if snapshot is None:
        raise NotFoundError(not_found(wanted))
    return wanted, snapshot


def read_item(item_id: str) -> Item:
    """The item's record (if it was put) and its all-time views: two GetItems, one per table."""
    metrics.add_metric(name="ItemReads", unit=MetricUnit.Count, value=1)
    views = board_store().aggregate_views(item_id)
    record = item_store().get(item_id)
    if views is None and record is None:
        raise NotFoundError(f"no views recorded for item {item_id!r} and it was never created")
    return Item.of(item_id, views, record)


# A literal route: "/items" never matches the regex route above, which needs at least one character after "/items/".
@app.get("/items", **routes.GET_NEWEST_ITEMS)
@tracer.capture_method
def get_newest_items(
    created_after: AfterQuery = "",
    created_before: BeforeQuery = "",
    limit: PageLimitQuery = "",
    cursor: CursorQuery = "",
) -> NewestPage:
    # Repeated names arrive joined with commas (queryStringParameters): no time, limit or cursor holds a comma, so
    # the rules refuse them. Everything, the cursor included, is checked before the first read.
    wanted = newest.window(created_after, created_before)
    count = validation.limit(limit, newest.MAX_NEWEST_LIMIT)
    metrics.add_metric(name="NewestReads", unit=MetricUnit.Count, value=1)
    catalog = item_store()
    page = newest.newest_items(catalog.newest, catalog.created_shards, wanted, count, cursor or None)
    return NewestPage.of(page.items, page.cursor)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
