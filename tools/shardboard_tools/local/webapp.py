"""A localhost web page for the leaderboard, served through the read API handler itself.

Each request becomes the HTTP API (payload 2.0) event API Gateway would send, and ``read_api.handler`` is invoked
in-process; so the page exercises the deployed code path (routing, validation, caching headers, ETag).
"""

from __future__ import annotations

import base64
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from shardboard_tools.lambda_model.context import LocalContext

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
PAGE_ROUTES = ("/", "/index.html")


def http_api_event(
    method: str,
    target: str,
    headers: dict[str, str],
    host: str,
    *,
    body: bytes | None = None,
    route_key: str | None = None,
) -> dict[str, Any]:
    """The API Gateway HTTP API (payload format 2.0) event for one request: ``target`` is the raw (still
    percent-encoded) path and query; a body that is not UTF-8 is base64-encoded, as API Gateway does."""
    parts = urlsplit(target)
    now = datetime.now(UTC)
    route = route_key or f"{method} {parts.path}"
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route,
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        "headers": {name.lower(): value for name, value in headers.items()},
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": host,
            "domainPrefix": host.split(".", maxsplit=1)[0],
            "http": {
                "method": method,
                "path": parts.path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": headers.get("User-Agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if parts.query:
        event["queryStringParameters"] = dict(parse_qsl(parts.query, keep_blank_values=True))
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode("ascii"), True
    return event


def index_html() -> bytes:
    return (resources.files("shardboard_tools.local") / "web" / "index.html").read_bytes()


class LeaderboardServer:
    """``GET /`` is the page; every other GET goes to the read API handler. Listens on 127.0.0.1 only.

    ``refresh_seconds``: how often the local scheduler refreshes the snapshot, for the responses' max-age.
    """

    def __init__(self, handler: Handler, port: int = 0, refresh_seconds: float | None = None) -> None:
        self.handler = handler
        self.refresh_seconds = refresh_seconds
        self.requests = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._request_class())
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="leaderboard-web", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> LeaderboardServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() waits for serve_forever, which never ran if not started
            self.httpd.shutdown()
            self._thread.join()
        self.httpd.server_close()

    def respond(self, method: str, target: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for one request."""
        self.requests += 1
        if urlsplit(target).path in PAGE_ROUTES:
            return 200, {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache"}, index_html()
        host = headers.get("Host", "localhost")
        response = self.handler(http_api_event(method, target, headers, host), LocalContext(function_name="ReadApi"))
        body = response.get("body") or ""
        raw = base64.b64decode(body) if response.get("isBase64Encoded") else body.encode("utf-8")
        return int(response.get("statusCode", 200)), self._cache_headers(dict(response.get("headers") or {})), raw

    def _cache_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """The function's max-age is its schedule's (whole minutes); a local run refreshing faster states its own.

        Rounded down: a cached answer is never older than one refresh interval.
        """
        if self.refresh_seconds is not None and "Cache-Control" in headers:
            headers["Cache-Control"] = f"public, max-age={int(self.refresh_seconds)}"
        return headers

    def _request_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Request(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                started = time.monotonic()
                status, headers, body = server.respond("GET", self.path, dict(self.headers.items()))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Server-Timing", f"handler;dur={(time.monotonic() - started) * 1000:.1f}")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return  # the live view is the interface; access logs would scroll it away

        return Request
