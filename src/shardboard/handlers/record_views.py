"""HTTP API: ``POST /views`` with ``{"id": "...", "count": 1, "boards": ["cats"]}`` records the request's views in
one counter write, on the global board and every board named.

One write per request, so the answer is exact: 202 means every view was counted, any error means none was, and the
client's retry cannot double count. A write still throttled after the retries answers 503 with Retry-After.

With ``"viewer": "<opaque id>"`` (docs/honest-counts.md) the view (count 1) counts once per viewer, item and
DedupeWindow: 202 ``{"id", "recorded": 1, "boards", "duplicate": false}`` when it counted, 200 ``{"id",
"recorded": 0, "boards", "duplicate": true}`` when that viewer's view of the item counted already in this window
(nothing written; counted in the DuplicateViews metric).

With PublicViews the stack gives per-IP and per-viewer limits (docs/honest-counts.md "Rate limits"): a client past
its allowance for the minute is answered 429 ``{"message", "code": "rate_limited"}`` with Retry-After, and nothing
is written (counted in the RateLimitedViews metric).
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.domain import validation
from shardboard.domain.dedupe import Seen
from shardboard.domain.ports import Throttled
from shardboard.domain.rate_limit import RateLimited, allowances, within
from shardboard.domain.recording import Where, record_seen_view, record_views
from shardboard.handlers.observability import log_metrics, logger, metrics, rejected, tracer
from shardboard.handlers.wiring import settings, shard_router, view_store

app = APIGatewayHttpResolver()
# Seconds a throttled client waits before retrying: DynamoDB's partition and table limits are per second.
RETRY_AFTER_SECONDS = 1


@app.post("/views")
@tracer.capture_method
def post_views() -> Response[dict[str, Any]]:
    try:
        # API Gateway base64-encodes a body whose content type is not text or JSON (curl -d sends a form type).
        body = json.loads(app.current_event.decoded_body or "")
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        reason = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
        raise rejected(validation.BadInput(f"body is not valid JSON: {reason}")) from None
    try:
        item_id, count, boards, viewer = validation.view_request(body)
    except validation.BadInput as error:
        raise rejected(error) from None
    config = settings()
    where = Where.of(config.anchor, boards)
    # API Gateway's own view of the peer address: X-Forwarded-For is whatever the client wrote.
    source_ip = app.current_event.request_context.http.source_ip
    try:
        with within(view_store(), allowances(config.rate_limits, source_ip, viewer, count)):
            if viewer is None:
                recorded = record_views(
                    view_store(), item_id, count, config.write_shards, router=shard_router(), where=where
                )
            else:
                seen = Seen.of(viewer, config.dedupe_window_seconds)
                recorded = record_seen_view(
                    view_store(), item_id, config.write_shards, seen, router=shard_router(), where=where
                )
    except RateLimited as refused:
        return rate_limited(refused, count)
    except Throttled as error:
        return throttled(error)
    metrics.add_metric(name="ViewsRecorded", unit=MetricUnit.Count, value=recorded.views)
    body = {"id": recorded.item_id, "recorded": recorded.views, "boards": [config.board, *where.boards]}
    if viewer is None:
        return Response(202, "application/json", body)
    if recorded.duplicate:
        metrics.add_metric(name="DuplicateViews", unit=MetricUnit.Count, value=1)
        return Response(200, "application/json", {**body, "duplicate": True})
    return Response(202, "application/json", {**body, "duplicate": False})


def throttled(error: Throttled) -> Response[dict[str, Any]]:
    """Nothing was written: the client may retry the same request safely."""
    metrics.add_metric(name="RequestsThrottled", unit=MetricUnit.Count, value=1)
    logger.warning("views throttled", extra={"scope": error.scope.value})
    return Response(
        503,
        "application/json",
        {"message": "throttled: no views were recorded; retry the request"},
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def rate_limited(refused: RateLimited, views: int) -> Response[dict[str, Any]]:
    """Nothing was written: the client may post again when its window ends (Retry-After)."""
    allowance = refused.allowance
    metrics.add_metric(name="RateLimitedViews", unit=MetricUnit.Count, value=views)
    logger.info("views rate limited", extra={"limit": allowance.kind, "per_minute": allowance.limit})
    return Response(
        429,
        "application/json",
        {
            "message": f"rate limited: more than {allowance.limit} views per {allowance.kind} per minute; "
            "no views were recorded",
            "code": "rate_limited",
        },
        headers={"Retry-After": str(allowance.retry_after)},
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
