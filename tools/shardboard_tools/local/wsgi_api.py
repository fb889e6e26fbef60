"""The local gateway (``gateway.Gateway``) as a WSGI application, in-process: the same routes, events and answers
as ``shardboard serve``, for tools that drive a WSGI app (schemathesis fuzzes the API through it:
tests/integration/test_openapi_fuzz.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any

from shardboard_tools.local.gateway import Gateway, Request

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


class WsgiGateway:
    """A WSGI application answering through ``gateway`` (its authorizer decides, as in ``serve``)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterator[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        request = Request(environ["REQUEST_METHOD"].upper(), _raw_target(environ), _headers(environ), body)
        reply = self.gateway.handle(request)
        headers = [*reply.headers.items(), *(("Set-Cookie", cookie) for cookie in reply.cookies)]
        headers.append(("Content-Length", str(len(reply.body))))
        start_response(f"{reply.status} {HTTPStatus(reply.status).phrase}", headers)
        return iter([reply.body])


def _raw_target(environ: dict[str, Any]) -> str:
    """The path and query as the client sent them (still percent-encoded), as API Gateway's rawPath has it."""
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        return str(raw)
    query = environ.get("QUERY_STRING")
    return str(environ.get("PATH_INFO", "/")) + (f"?{query}" if query else "")


def _headers(environ: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    headers = [
        (key[5:].replace("_", "-").title(), str(value)) for key, value in environ.items() if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", "Content-Type"), ("CONTENT_LENGTH", "Content-Length")):
        if environ.get(key):
            headers.append((name, str(environ[key])))
    return tuple(headers)
