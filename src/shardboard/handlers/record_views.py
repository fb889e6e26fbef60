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

With RequireItems, a view of an id never created with ``PUT /item`` is answered 404 ``{"message", "code":
"not_found"}`` and nothing is written (counted in the UnknownItemViews metric).

A board the stack's ``Boards`` policy refuses (outside its pattern, or a new board past its maximum) is answered 422
``{"message", "code": "board_not_allowed"}`` and nothing is written (counted in the BoardsRefused metric).

With an ``Idempotency-Key`` header (1-255 printable ASCII characters; anything else is a 400), the request counts
once per key within 24 hours of the key's first use (docs/honest-counts.md, "Retried writes"): its views and the
key's marker are one transaction, a retry with the same key writes nothing and is answered as the first request was
(same status and body, ``Idempotent-Replayed: true``), and the same key with another id, count, boards or viewer is
answered 422 ``{"message", "code": "idempotency_key_reused"}`` (nothing written).

From a browser (docs/honest-counts.md "Views from browsers"): a request whose ``Origin`` the stack does not take
(PublicViews names the site's origins) is answered 403 ``{"message", "code": "origin_not_allowed"}``; a ``text/plain``
body (navigator.sendBeacon) is judged by its own ``User-Agent`` and, without a viewer, gets an anonymous viewer id.
A known crawler's view (that header, or the body's ``user_agent``) counts on the reserved boards ``bots`` only.
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from shardboard.domain.boards import is_reserved
from shardboard.domain.writing.idempotency import MAX_IDEMPOTENCY_KEY_CHARS, idempotency_key
from shardboard.domain.writing.rate_limit import RateLimited
from shardboard.domain.writing.recording import Recorded
from shardboard.handlers import http_input, routes
from shardboard.handlers.http_errors import answer_errors
from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import container
from shardboard.schema import ViewRequest, ViewSeen, ViewsRecorded
from shardboard.services import recording

# The request header of a retry-safe POST /views (docs/honest-counts.md, "Retried writes"); absent: no key.
IdempotencyKey = Annotated[
    Annotated[str, Field(min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS, pattern="^[ -~]+$")]
    | SkipJsonSchema[None],
    BeforeValidator(idempotency_key),
    Header(
        alias="Idempotency-Key",
        description="1-255 printable ASCII characters (a UUID per logical request): within 24 hours of its first "
        "use, the key counts once whatever the retries, and a retry is answered as the first request was; the same "
        "key with another request is a 422.",
        examples=["3f2a1c9e-8d4b-4b7a-9c1e-2f6d8a0b5e71"],
    ),
]

# The event key that says the body came as text/plain (a page's beacon).
_BEACON = "shardboard_beacon"

app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=http_input.json_body)
answer_errors(app)


@app.post("/views", **routes.POST_VIEWS)
@tracer.capture_method
def post_views(
    request: Annotated[ViewRequest, Body()], key: IdempotencyKey = None
) -> Response[ViewsRecorded | ViewSeen]:
    http_input.known_query(app.current_event.raw_query_string, routes.takes(routes.POST_VIEWS))
    # The request model ran the input's rules (schema.py): the service takes them as checked, never twice.
    views = recording.ViewInput((request.id,), request.count, tuple(request.boards), request.viewer, request.user_agent)
    count = views.count
    event = app.current_event
    # API Gateway's own view of the peer address (X-Forwarded-For is whatever the client wrote), or behind the CDN
    # the visitor's address the edge vouches for.
    edge_token = container().settings.edge_token
    address = http_input.client_address(event.request_context.http.source_ip, event.headers, edge_token)
    caller = recording.PublicCaller(address)
    # A text/plain body is a page's own beacon: its User-Agent is judged, and it may get an anonymous viewer id.
    agent = event.headers.get("user-agent") or ""
    browser = recording.Browser(address, agent) if event.raw_event.get(_BEACON) else None
    # A refusal raises to http_errors, nothing written: RateLimited is 429, Throttled 503, both with Retry-After.
    try:
        done = recording.record(
            writes(),
            views,
            key=key,
            caller=caller,
            browser=browser,
            origin=event.headers.get("origin"),
        )
    except RateLimited:
        metrics.add_metric(name="RateLimitedViews", unit=MetricUnit.Count, value=count)
        raise
    if any(is_reserved(name) for name in done.boards):
        metrics.add_metric(name="CrawlerViews", unit=MetricUnit.Count, value=count)
    return answer(done.recorded[0], done.viewed, done.boards)


def writes() -> recording.ViewWrites:
    return recording.ViewWrites.of(container())


def answer(recorded: Recorded, viewed: bool, boards: list[str]) -> Response[ViewsRecorded | ViewSeen]:
    """202 with what was recorded; with a viewer, 200 for a duplicate. A keyed retry gets the first request's
    answer, marked ``Idempotent-Replayed`` (its views were counted then, not now)."""
    headers = {"Idempotent-Replayed": "true"} if recorded.replayed else None
    metrics.add_metric(name="ViewsRecorded", unit=MetricUnit.Count, value=0 if recorded.replayed else recorded.views)
    if recorded.replayed:
        metrics.add_metric(name="IdempotentReplays", unit=MetricUnit.Count, value=1)
    body = ViewsRecorded(id=recorded.item_id, recorded=recorded.views, boards=boards)
    if not viewed:
        return Response(202, "application/json", body, headers=headers)
    seen = ViewSeen(**body.model_dump(), duplicate=recorded.duplicate)
    if recorded.duplicate:
        if not recorded.replayed:
            metrics.add_metric(name="DuplicateViews", unit=MetricUnit.Count, value=1)
        return Response(200, "application/json", seen, headers=headers)
    return Response(202, "application/json", seen, headers=headers)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = http_input.json_request(event)
    # Told before json_request hid the Content-Type; a top-level key no client can set.
    request[_BEACON] = http_input.beacon(event)
    return app.resolve(request, context)
