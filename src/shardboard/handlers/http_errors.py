"""One shape for every HTTP error the functions answer: ``{"message": str, "code": str}`` (shardboard.schema.Error).

Each API function calls :func:`answer_errors` on its resolver once; its routes then just raise: the domain's
``BadInput`` (400 bad_request) and ``BoardNotAllowed`` (422 board_not_allowed: a board the Boards policy refuses),
Powertools' ``NotFoundError`` and the domain's ``UnknownItem`` (RequireItems) (404 not_found, also for an unknown
route), the domain's ``RateLimited`` (429 rate_limited) and ``Throttled`` (503 throttled), both with Retry-After, and
``IdempotencyKeyReused`` (422 idempotency_key_reused). Powertools' request validation errors become 400s with the
same one-line reasons the domain's rules give.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.metrics import MetricUnit

from shardboard.domain.boards import BoardNotAllowed
from shardboard.domain.items.records import DeletedItem, UnknownItem
from shardboard.domain.ports import Throttled
from shardboard.domain.reading.pages import NotRanked
from shardboard.domain.validation import BadInput
from shardboard.domain.writing.idempotency import IdempotencyKeyReused
from shardboard.domain.writing.rate_limit import RateLimited
from shardboard.handlers.observability import logger, metrics
from shardboard.schema import ERROR_STATUS, Error, ErrorCode
from shardboard.services.reading import NoItem, NoSnapshot
from shardboard.services.recording import OriginNotAllowed
from shardboard.services.takedowns import NothingToTakeDown

# Seconds a throttled client waits before retrying: DynamoDB's partition and table limits are per second.
RETRY_AFTER_SECONDS = 1
A_JSON_OBJECT = 'body must be a JSON object like {"id": "images/001.jpg", "count": 1}'
# Where Powertools says an error is; the field name alone reads better in a one-line reason.
_LOCATIONS = ("body", "query", "path", "header", "cookie")


def error(code: ErrorCode, message: str, headers: dict[str, str] | None = None) -> Response[dict[str, Any]]:
    body = Error(message=message, code=code).model_dump()
    return Response(ERROR_STATUS[code], content_types.APPLICATION_JSON, body, headers=headers)


def answer_errors(app: APIGatewayHttpResolver) -> None:
    """Register the one-shape answers on ``app``."""

    def invalid_request(invalid: RequestValidationError) -> Response[dict[str, Any]]:
        if any(e["loc"][:1] == ("response",) for e in invalid.errors()):
            # Powertools reports an answer that breaks its own model this way too: our bug, never a 400.
            raise RuntimeError(f"response does not match its model: {invalid.errors()}") from invalid
        return bad_input(BadInput(first_reason(invalid.errors(), app.current_event.body)))

    # Called, not used as decorators: Powertools' decorator is untyped.
    app.exception_handler(BadInput)(bad_input)
    app.exception_handler(BoardNotAllowed)(board_not_allowed)
    app.exception_handler(RequestValidationError)(invalid_request)
    app.exception_handler(NotFoundError)(not_found)
    app.exception_handler(UnknownItem)(unknown_item)
    app.exception_handler(NothingToTakeDown)(nothing_to_take_down)
    app.exception_handler(DeletedItem)(deleted_item)
    app.exception_handler(NotRanked)(not_ranked)
    app.exception_handler(NoSnapshot)(nothing_there)
    app.exception_handler(NoItem)(nothing_there)
    app.exception_handler(Throttled)(throttled)
    app.exception_handler(RateLimited)(rate_limited)
    app.exception_handler(IdempotencyKeyReused)(key_reused)
    app.exception_handler(OriginNotAllowed)(origin_not_allowed)


def origin_not_allowed(refused: OriginNotAllowed) -> Response[dict[str, Any]]:
    """A browser's view from a page the stack does not take (PublicViews names the site's origins): nothing written."""
    metrics.add_metric(name="OriginRefusedViews", unit=MetricUnit.Count, value=1)
    return error("origin_not_allowed", str(refused))


def bad_input(refused: BadInput) -> Response[dict[str, Any]]:
    # Counted: a client sending bad input shows up in RequestsRejected.
    metrics.add_metric(name="RequestsRejected", unit=MetricUnit.Count, value=1)
    return error("bad_request", str(refused))


def board_not_allowed(refused: BoardNotAllowed) -> Response[dict[str, Any]]:
    """A board the Boards policy refuses: well-formed, but this stack does not take it; nothing was written."""
    metrics.add_metric(name="BoardsRefused", unit=MetricUnit.Count, value=1)
    return error("board_not_allowed", str(refused))


def not_found(missing: NotFoundError) -> Response[dict[str, Any]]:
    # Powertools raises a bare NotFoundError for a route it does not know.
    return error("not_found", str(missing.msg or "Not found"))


def nothing_there(missing: NoSnapshot | NoItem) -> Response[dict[str, Any]]:
    """A read of a period without a snapshot, or of an id with no views and no record."""
    return error("not_found", str(missing))


def not_ranked(missing: NotRanked) -> Response[dict[str, Any]]:
    """Around-me of an id past the ranked depth (or without views)."""
    return error("not_found", str(missing))


def unknown_item(refused: UnknownItem) -> Response[dict[str, Any]]:
    """RequireItems: a view of an id never created; nothing was written."""
    metrics.add_metric(name="UnknownItemViews", unit=MetricUnit.Count, value=1)
    return error("not_found", str(refused))


def nothing_to_take_down(refused: NothingToTakeDown) -> Response[dict[str, Any]]:
    """A hide or delete of an unknown id or an unhide of a visible one; nothing was written."""
    return error("not_found", str(refused))


def deleted_item(refused: DeletedItem) -> Response[dict[str, Any]]:
    """A hide, unhide or put of a deleted item, as an unhide of one always was: 404, the message says "is deleted";
    nothing was written."""
    return error("not_found", str(refused))


def throttled(refused: Throttled) -> Response[dict[str, Any]]:
    """Nothing was written: the client may retry the same request safely."""
    metrics.add_metric(name="RequestsThrottled", unit=MetricUnit.Count, value=1)
    logger.warning("views throttled", extra={"scope": refused.scope.value})
    message = "throttled: no views were recorded; retry the request"
    return error("throttled", message, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


def rate_limited(refused: RateLimited) -> Response[dict[str, Any]]:
    """Nothing was written: the client may post again when its window ends (Retry-After)."""
    allowance = refused.allowance
    logger.info("views rate limited", extra={"limit": allowance.kind, "per_minute": allowance.limit})
    message = f"rate limited: more than {allowance.limit} views per {allowance.kind} per minute; no views were recorded"
    return error("rate_limited", message, headers={"Retry-After": str(allowance.retry_after)})


def key_reused(refused: IdempotencyKeyReused) -> Response[dict[str, Any]]:
    """An Idempotency-Key sent again with another request (the payment APIs' 422): nothing was written."""
    metrics.add_metric(name="IdempotencyKeysReused", unit=MetricUnit.Count, value=1)
    return error("idempotency_key_reused", str(refused))


def first_reason(errors: Sequence[Any], body: str | None) -> str:
    """One line for a refused request: the domain's own reason where a validator raised it, else pydantic's."""
    unknown = sorted(str(e["loc"][-1]) for e in errors if e["type"] == "extra_forbidden")
    if unknown:
        return f"unknown field(s): {', '.join(unknown)}"
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"] if part not in _LOCATIONS)
    if not where or first["type"] == "json_invalid":  # a JSON error's location is an offset
        return _body_reason(first, body)
    if first["type"] == "missing":
        return f"missing field: {where}"
    cause = first.get("ctx", {}).get("error")
    if first["type"] == "value_error" and isinstance(cause, BadInput):
        return str(cause)
    return f"{where}: {first['msg']}"


def _body_reason(first: Any, body: str | None) -> str:
    """Why a body as a whole was refused: not JSON, empty, or not an object."""
    if first["type"] == "json_invalid":
        return f"body is not valid JSON: {first.get('ctx', {}).get('error', first['msg'])}"
    if first["type"] == "missing" and not (body or "").strip():
        return "body is not valid JSON: the body is empty"
    cause = first.get("ctx", {}).get("error")
    if first["type"] == "value_error" and isinstance(cause, BadInput):
        return str(cause)  # a rule across fields (a viewer's count)
    return A_JSON_OBJECT
