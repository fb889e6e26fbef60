"""The deployed HTTP API as a WSGI application, in-process: each request becomes the payload 2.0 event API Gateway
would send and goes to the function of its route, the routes being the functions' HttpApi events in template.yaml.

Used to fuzz the API against its OpenAPI document (tests/integration/test_openapi_fuzz.py); no authorization is
checked (API Gateway does that before any function runs).
"""

from __future__ import annotations

import base64
import importlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from shardboard_tools.lambda_model.context import LocalContext
from shardboard_tools.local.webapp import http_api_event
from shardboard_tools.template import Template

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


@dataclass(frozen=True)
class Route:
    """One HttpApi event of a function: ``GET /items/{id+}`` served by ``shardboard.handlers.read_api.handler``."""

    function: str
    method: str
    path: str
    handler_name: str
    pattern: re.Pattern[str] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", _path_pattern(self.path))

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def matches(self, method: str, raw_path: str) -> bool:
        return method == self.method and self.pattern.match(raw_path) is not None

    def handler(self) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
        module, _, name = self.handler_name.rpartition(".")
        function: Callable[[dict[str, Any], Any], dict[str, Any]] = getattr(importlib.import_module(module), name)
        return function


def _path_pattern(path: str) -> re.Pattern[str]:
    """API Gateway's path variables: ``{name}`` is one segment, ``{name+}`` the rest of the path."""
    parts = []
    for segment in path.strip("/").split("/"):
        if re.fullmatch(r"\{\w+\+\}", segment):
            parts.append(".+")
        elif re.fullmatch(r"\{\w+\}", segment):
            parts.append("[^/]+")
        else:
            parts.append(re.escape(segment))
    return re.compile("^/" + "/".join(parts) + "$")


def http_api_routes(template: Template) -> list[Route]:
    """Every (function, method, path) of the template's HttpApi events."""
    routes = []
    for name, resource in template.body["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "HttpApi":
                spec = event["Properties"]
                routes.append(Route(name, spec["Method"].upper(), spec["Path"], resource["Properties"]["Handler"]))
    return routes


class HttpApiApp:
    """A WSGI application answering as the deployed API would (minus authorization)."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self.routes = list(routes)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterator[bytes]:
        method = environ["REQUEST_METHOD"].upper()
        target = _raw_target(environ)
        raw_path = target.split("?", 1)[0]
        route = next((r for r in self.routes if r.matches(method, raw_path)), None)
        if route is None:  # API Gateway's own answer: no function runs
            return _answer(start_response, 404, {"Content-Type": "application/json"}, b'{"message":"Not Found"}')
        headers = _headers(environ)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else None
        event = http_api_event(
            method, target, headers, headers.get("Host", "localhost"), body=body, route_key=route.key
        )
        response = route.handler()(event, LocalContext(function_name=route.function))
        raw = response.get("body") or ""
        content = base64.b64decode(raw) if response.get("isBase64Encoded") else raw.encode("utf-8")
        return _answer(start_response, int(response.get("statusCode", 200)), response.get("headers") or {}, content)


def _raw_target(environ: dict[str, Any]) -> str:
    """The path and query as the client sent them (still percent-encoded), as API Gateway's rawPath has it."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        return str(raw)
    query = environ.get("QUERY_STRING")
    return str(environ.get("PATH_INFO", "/")) + (f"?{query}" if query else "")


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    headers = {
        key[5:].replace("_", "-").title(): str(value) for key, value in environ.items() if key.startswith("HTTP_")
    }
    if environ.get("CONTENT_TYPE"):
        headers["Content-Type"] = str(environ["CONTENT_TYPE"])
    return headers


def _answer(start_response: StartResponse, status: int, headers: dict[str, str], body: bytes) -> Iterator[bytes]:
    reason = HTTPStatus(status).phrase
    start_response(f"{status} {reason}", [*headers.items(), ("Content-Length", str(len(body)))])
    return iter([body])
