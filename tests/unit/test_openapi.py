"""docs/openapi.json: generated from the API functions' own routes and models, valid OpenAPI 3, and committed
up to date (regenerate it with `make openapi`)."""

from __future__ import annotations

import json

from openapi_spec_validator import validate

from shardboard import __version__
from shardboard.handlers.openapi import GATEWAY_ERROR, ITEM_PATH, document, rendered
from tests.conftest import ROOT

COMMITTED = ROOT / "docs" / "openapi.json"


def test_the_document_is_valid_openapi():
    validate(document())


def test_the_committed_document_is_the_generated_one():
    assert COMMITTED.read_text(encoding="utf-8") == rendered(), (
        "docs/openapi.json is stale: run `make openapi` (python -m shardboard.handlers.openapi > docs/openapi.json)"
    )


def test_the_document_names_the_api_and_no_server():
    api = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert api["info"]["title"] == "shardboard"
    assert api["info"]["version"] == __version__
    assert "servers" not in api


def test_every_error_answer_is_the_one_error_shape():
    api = document()
    error = api["components"]["schemas"]["Error"]
    assert error["required"] == ["message", "code"]
    codes = [
        "bad_request",
        "origin_not_allowed",
        "not_found",
        "board_not_allowed",
        "idempotency_key_reused",
        "rate_limited",
        "throttled",
    ]
    assert error["properties"]["code"]["enum"] == codes
    for path, operations in api["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                if int(status) >= 400:
                    schema = answer["content"]["application/json"]["schema"]
                    functions, *gateway = schema.get("anyOf", [schema])
                    assert functions == {"$ref": "#/components/schemas/Error"}, (method, path, status)
                    # The one answer API Gateway gives itself: no route for an id that starts with "?"
                    assert gateway == ([GATEWAY_ERROR] if (method, path, status) == ("get", ITEM_PATH, "404") else [])


def test_the_leaderboard_is_the_documented_json():
    """README's leaderboard document: board, generated_at, period, items of {rank, id, views}."""
    schemas = document()["components"]["schemas"]
    assert schemas["Leaderboard"]["required"] == ["board", "generated_at", "period", "items"]
    assert schemas["RankedItem"]["required"] == ["rank", "id", "views"]
    assert schemas["AllTime"]["properties"]["kind"]["const"] == "all"


def test_post_views_documents_the_idempotency_key_and_its_answers():
    operation = document()["paths"]["/views"]["post"]
    (header,) = [p for p in operation["parameters"] if p["in"] == "header"]
    assert header["name"].lower() == "idempotency-key" and not header["required"]
    assert (header["schema"]["minLength"], header["schema"]["maxLength"]) == (1, 255)
    assert "422" in operation["responses"] and "Idempotency-Key reused" in operation["responses"]["422"]["description"]
    for status in ("200", "202"):
        assert "Idempotent-Replayed" in operation["responses"][status]["headers"]


def test_every_route_refuses_the_query_parameters_it_does_not_document():
    # The functions refuse any query parameter outside routes.QUERY_PARAMETERS (http_input.known_query): the document
    # must offer exactly those, or the fuzzer and the clients generated from it would send what gets a 400.
    from shardboard.handlers.routes import QUERY_PARAMETERS

    documented = {
        operation["operationId"]: {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        for operations in document()["paths"].values()
        for operation in operations.values()
    }
    assert documented == {operation: set(names) for operation, names in QUERY_PARAMETERS.items()}
