"""docs/openapi.json is in step with template.yaml: the same (method, path) routes as the functions' HttpApi events
and the HttpApi DefinitionBody, and the same security per route as the template gives under every WriteAuth x
PublicViews choice (tests/template/test_auth.py renders them)."""

from __future__ import annotations

import re

import pytest

from shardboard.handlers.openapi import document
from tests.template.test_auth import CHOICES, deployed, routes, schemes


def plain(path: str) -> str:
    """API Gateway's greedy ``{id+}`` is OpenAPI's ``{id}`` (the document says ids are URL-encoded)."""
    return re.sub(r"\{(\w+)\+\}", r"{\1}", path)


def documented() -> dict[str, list[dict[str, list[str]]]]:
    """{"POST /views": security, ...} of the generated document (no security key: none)."""
    return {
        f"{method.upper()} {path}": operation.get("security", [])
        for path, operations in document()["paths"].items()
        for method, operation in operations.items()
    }


def test_the_routes_are_the_templates(sam_template):
    events = {
        f"{event['Properties']['Method'].upper()} {plain(event['Properties']['Path'])}"
        for resource in sam_template["Resources"].values()
        if resource["Type"] == "AWS::Serverless::Function"
        for event in resource["Properties"].get("Events", {}).values()
        if event["Type"] == "HttpApi"
    }
    body = sam_template["Resources"]["HttpApi"]["Properties"]["DefinitionBody"]["paths"]
    defined = {f"{method.upper()} {plain(path)}" for path, operations in body.items() for method in operations}
    assert set(documented()) == events == defined


def test_each_route_documents_every_security_the_template_can_deploy(rendered):
    # Given the security each route gets under every deployment choice
    deployable: dict[str, set[str]] = {}
    for choice in CHOICES:
        for route, security in routes(deployed(rendered, **choice.values[0])).items():
            deployable.setdefault(plain(route), set()).update(name for requirement in security for name in requirement)
    # Then the document lists exactly those schemes per route (alternatives), and none on the public reads
    assert {route: {name for r in security for name in r} for route, security in documented().items()} == deployable
    assert documented()["GET /leaderboard"] == documented()["GET /items/{id}"] == []


@pytest.mark.parametrize("choice", CHOICES)
def test_the_schemes_are_the_templates(rendered, choice):
    stack = deployed(rendered, **choice)
    ours = document()["components"]["securitySchemes"]
    for name, scheme in schemes(stack).items():
        if name == "AWS_IAM":  # SigV4, as API Gateway names it
            assert scheme["x-amazon-apigateway-authtype"] == ours[name]["x-amazon-apigateway-authtype"] == "awsSigv4"
            assert (scheme["type"], scheme["in"], scheme["name"]) == (ours[name]["type"], "header", "Authorization")
        else:  # the JWT authorizer: a bearer token from the Authorization header
            assert scheme["x-amazon-apigateway-authorizer"]["type"] == "jwt"
            assert scheme["x-amazon-apigateway-authorizer"]["identitySource"] == "$request.header.Authorization"
            assert (ours[name]["type"], ours[name]["scheme"], ours[name]["bearerFormat"]) == ("http", "bearer", "JWT")
