"""HTTP API, admin (WriteAuth: SigV4 or a JWT with Jwt's admin scope): ``PUT /item?id=<id>`` with a JSON object body
creates or replaces the item's metadata; ``POST /item/hide?id=&reason=`` and ``POST /item/unhide?id=`` take an item
off every board and period and put it back; ``DELETE /item?id=&reason=`` erases its counts everywhere.
Ids travel in the query string so that any id, ``?`` included, can be named.

Bad input (an id or a document the domain refuses) answers 400 and writes nothing.
"""

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shardboard.handlers import http_input, routes
from shardboard.handlers.http_errors import answer_errors
from shardboard.handlers.observability import log_metrics, logger, metrics, tracer
from shardboard.handlers.wiring import container
from shardboard.schema import ItemDeleted, ItemMeta, ItemPut, TakedownDone
from shardboard.services import items
from shardboard.services import takedowns as takedown

app = APIGatewayHttpResolver(enable_validation=True, json_body_deserializer=http_input.json_body)
answer_errors(app)


@app.put("/item", **routes.PUT_ITEM)
@tracer.capture_method
def put_item(document: Annotated[ItemMeta, Body()]) -> ItemPut:
    # The id is read from the raw query string (http_input.query_value says why); openapi.py documents it.
    raw = app.current_event.raw_query_string
    http_input.known_query(raw, routes.takes(routes.PUT_ITEM))
    raw_id = http_input.query_value(raw, "id")
    record, patched = items.put(edits(), raw_id, document.root)
    # Who changed what, for CloudWatch Logs Insights (the audit rows of the items table come with takedowns).
    audit = {"op": "put", "item_id": record.item_id, "by": caller(), "rev": record.rev, "patched": len(patched)}
    logger.info("ItemAudit", extra=audit)
    metrics.add_metric(name="ItemPuts", unit=MetricUnit.Count, value=1)
    return ItemPut.of(record)


@app.post("/item/hide", **routes.HIDE_ITEM)
@tracer.capture_method
def hide_item() -> TakedownDone:
    item_id, why = takedown_request(routes.HIDE_ITEM)
    done = items.hide(edits(), item_id, by=caller(), reason=why)
    return TakedownDone.model_validate(audited("hide", done, why))


@app.post("/item/unhide", **routes.UNHIDE_ITEM)
@tracer.capture_method
def unhide_item() -> TakedownDone:
    item_id, why = takedown_request(routes.UNHIDE_ITEM)
    done = items.unhide(edits(), item_id, by=caller(), reason=why)
    return TakedownDone.model_validate(audited("unhide", done, why))


@app.delete("/item", **routes.DELETE_ITEM)
@tracer.capture_method
def delete_item() -> ItemDeleted:
    item_id, why = takedown_request(routes.DELETE_ITEM)
    done = items.delete(edits(), item_id, by=caller(), reason=why)
    return ItemDeleted.model_validate(audited("delete", done, why))


def takedown_request(route: dict[str, Any]) -> tuple[str, str]:
    """The id and the optional reason, both from the raw query string (the service checks them); any other
    parameter is refused."""
    raw = app.current_event.raw_query_string
    http_input.known_query(raw, routes.takes(route))
    return http_input.query_value(raw, "id"), http_input.optional_query_value(raw, "reason") or ""


def edits() -> items.ItemEdits:
    return items.ItemEdits.of(container())


def audited(op: str, done: takedown.Takedown, why: str) -> dict[str, Any]:
    """The ItemAudit log line (the audit row is written with the status) and the answer's fields."""
    answer = done.as_json()
    logger.info("ItemAudit", extra={"op": op, "item_id": done.item_id, "by": caller(), "reason": why, **answer})
    metrics.add_metric(name="ItemTakedowns", unit=MetricUnit.Count, value=1)
    return answer


def caller() -> str:
    """The authenticated caller as API Gateway names it: the IAM user ARN (SigV4) or the JWT's sub/client_id."""
    authorizer = app.current_event.request_context.authorizer
    iam = authorizer.iam
    if iam is not None and iam.user_arn:
        return str(iam.user_arn)
    claims = authorizer.jwt_claim or {}
    return str(claims.get("sub") or claims.get("client_id") or "unknown")


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(http_input.json_request(event), context)
