"""The HTTP API's one OpenAPI document, generated from the two API functions' own routes and models (Powertools'
event handler): ``python -m shardboard.handlers.openapi > docs/openapi.json`` (``make openapi``) renders it, and a
test fails when the committed copy is stale.

Deployed functions never import this module; ``shardboard serve`` serves :func:`document` at ``/openapi.json``.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler.openapi.merge import OpenAPIMerge
from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn, HTTPBearer, SecurityScheme

from shardboard.handlers import items_admin, read_api, record_views, routes
from shardboard.version import installed_version

DESCRIPTION = (
    "Exact top-N leaderboards on DynamoDB. POST /views needs SigV4 (WriteAuth=iam, the default) or a JWT bearer "
    "token with Jwt's write scope (WriteAuth=jwt); with PublicViews=true it needs nothing. Reads are public and "
    'cacheable. Every error the functions answer is {"message", "code"}; API Gateway\'s own refusals (401, 403, '
    '429, and 404 for a path no route takes) carry {"message"} only.'
)
# The template's own names and kinds (template.yaml, HttpApi DefinitionBody components.securitySchemes).
SECURITY_SCHEMES: dict[str, SecurityScheme] = {
    routes.SIGV4: APIKey.model_validate(
        {
            "type": "apiKey",
            "in": APIKeyIn.header,
            "name": "Authorization",
            "description": "AWS Signature Version 4 (service execute-api): WriteAuth=iam.",
            "x-amazon-apigateway-authtype": "awsSigv4",
        }
    ),
    routes.JWT: HTTPBearer(
        bearerFormat="JWT",
        description="An access token of the issuer the stack's Jwt names, for one of its audiences, with its write "
        "scope: WriteAuth=jwt.",
    ),
}
# OpenAPI cannot say "the rest of the path" (the template's greedy /items/{id+}); the function matches it with a
# regex route (ids may hold "/"), and the document names it as a path parameter, URL-encoded by clients.
ITEM_PATH = "/items/{id}"
ITEM_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "The item id, URL-encoded ('/' may also be sent as is): 1-512 bytes of UTF-8, no control "
    "characters.",
    "schema": {"type": "string", "minLength": 1},
}

# Every item route takes ids in the query string, read from rawQueryString by the function (http_input.query_value),
# not by Powertools (API Gateway joins repeated names with commas), so the document adds the parameter here.
QUERY_ID = {
    "name": "id",
    "in": "query",
    "required": True,
    "description": "The item id, percent-encoded, given once: 1-512 bytes of UTF-8, no control characters; any id, "
    "'?' included.",
    "schema": {"type": "string", "minLength": 1},
}
# API Gateway's own refusals (no route, 401, 403, 429) carry a message only.
GATEWAY_ERROR = {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}
QUERY_ID_PATHS = ("/item", "/item/hide", "/item/unhide")
PERIOD_PARAMETERS = [
    {"name": name, "in": "query", "required": False, "description": text, "schema": {"type": "string"}}
    for name, text in (
        ("board", "Board name, at most once (default: the global board)."),
        ("period", "all (the default) or one of the stack's Periods, at most once."),
        ("at", "ISO-8601 date or date-time in the period (default: now), at most once."),
    )
]
# GET /rank reads all of its parameters from rawQueryString (ids repeat).
RANK_PARAMETERS = [
    {
        "name": "id",
        "in": "query",
        "required": True,
        "description": "An item id, percent-encoded; repeat id= for several (1 to 100), any id, '?' included.",
        "schema": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 100},
        "style": "form",
        "explode": True,
    },
    *PERIOD_PARAMETERS,
]
# GET /around too (the id is any id); without them in the document the fuzzer sent it nothing but bare requests.
AROUND_PARAMETERS = [
    QUERY_ID,
    {
        "name": "k",
        "in": "query",
        "required": False,
        "description": "Entries above and below the item, 1 to 50 (default 5), at most once.",
        "schema": {"type": "string"},
    },
    *PERIOD_PARAMETERS,
]
QUERY_REASON = {
    "name": "reason",
    "in": "query",
    "required": False,
    "description": "Why (kept in the item's audit rows): at most 500 printable characters, percent-encoded, once.",
    "schema": {"type": "string", "maxLength": 500},
}
REASON_PATHS = ("/item/hide", "/item/unhide")  # and DELETE /item (below)


def document() -> dict[str, Any]:
    """The whole API's OpenAPI 3 document: title shardboard, the package's version, no servers."""
    merged = OpenAPIMerge(title="shardboard", version=installed_version(), description=DESCRIPTION, on_conflict="error")
    for function in (record_views, read_api, items_admin):
        merged.add_schema(json.loads(function.app.get_openapi_json_schema(security_schemes=SECURITY_SCHEMES)))
    api = json.loads(merged.get_openapi_json_schema())
    api.pop("servers", None)  # the stack's URL is the ApiUrl output; a document for every stack names none
    paths = api["paths"]
    item = paths.pop(routes.ITEM_ROUTE)
    item["get"]["parameters"] = [ITEM_ID, *item["get"].get("parameters", [])]
    # An id that starts with "?" leaves no id in the routed path: API Gateway's 404, not the function's (routes.py).
    not_found = item["get"]["responses"]["404"]["content"]["application/json"]
    not_found["schema"] = {"anyOf": [not_found["schema"], GATEWAY_ERROR]}
    paths[ITEM_PATH] = item
    for path in QUERY_ID_PATHS:
        for operation in paths[path].values():
            operation["parameters"] = [QUERY_ID, *operation.get("parameters", [])]
    paths["/rank"]["get"]["parameters"] = RANK_PARAMETERS
    paths["/around"]["get"]["parameters"] = AROUND_PARAMETERS
    for path in REASON_PATHS:
        for operation in paths[path].values():
            operation["parameters"].append(QUERY_REASON)
    paths["/item"]["delete"]["parameters"].append(QUERY_REASON)
    for operation in (op for path in paths.values() for op in path.values()):
        # Powertools documents its validation errors as 422s; http_errors answers them as 400 bad_request. A route's
        # own 422 (POST /views: a board the Boards policy refuses, an Idempotency-Key reused) answers with the Error
        # model and stays.
        if "HTTPValidationError" in json.dumps(operation["responses"].get("422", {})):
            operation["responses"].pop("422")
        # A 304 has no body (Powertools gives every response without content the route's model).
        operation["responses"].get("304", {}).pop("content", None)
    for unused in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        api["components"]["schemas"].pop(unused, None)
    return dict(api)


def rendered() -> str:
    """docs/openapi.json's text."""
    return json.dumps(document(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


if __name__ == "__main__":
    print(rendered(), end="")
