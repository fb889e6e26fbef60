"""HTTP API: ``GET /leaderboard?limit=N`` (one GetItem of the snapshot) and ``GET /items/{id}``."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.domain import validation
from shardboard.domain.snapshot import leaderboard_json
from shardboard.handlers.observability import log_metrics, logger, metrics, rejected, tracer
from shardboard.handlers.wiring import board_store, settings

app = APIGatewayHttpResolver()


@app.get("/leaderboard")
@tracer.capture_method
def get_leaderboard() -> Response[dict[str, Any]]:
    config = settings()
    metrics.add_metric(name="LeaderboardReads", unit=MetricUnit.Count, value=1)
    try:
        limit = validation.limit(app.current_event.get_query_string_value("limit"), config.top_n)
    except validation.BadInput as error:
        raise rejected(error) from None
    snapshot = board_store().get_snapshot(config.board)
    if snapshot is None:
        raise NotFoundError(f"board {config.board!r} has no snapshot yet: the snapshot job has not run")
    # The snapshot changes at most once per refresh, so caches may keep it that long.
    etag = f'"{snapshot["version"]}-{limit}"'
    headers = {"Cache-Control": f"public, max-age={config.refresh_seconds}", "ETag": etag}
    if app.current_event.headers.get("if-none-match") == etag:
        metrics.add_metric(name="LeaderboardNotModified", unit=MetricUnit.Count, value=1)
        return Response(304, headers=headers)
    return Response(200, "application/json", leaderboard_json(snapshot, limit), headers=headers)


# A regex route: ids may contain "/" (images/001.jpg), which a <param> segment would not match.
@app.get("/items/.+")
@tracer.capture_method
def get_item() -> dict[str, Any]:
    raw = app.current_event.path.split("/items/", 1)[1]
    metrics.add_metric(name="ItemReads", unit=MetricUnit.Count, value=1)
    try:
        item = validation.item_id(unquote(raw))
    except validation.BadInput as error:
        raise rejected(error) from None
    views = board_store().aggregate_views(item)
    if views is None:
        raise NotFoundError(f"no views recorded for item {item!r}")
    return {"id": item, "views": views}


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
