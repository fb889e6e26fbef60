"""The local HTTP server: the leaderboard page and the API, through the local gateway (local/gateway.py).

``GET /`` (and ``/index.html``) is the page; every other request goes through the gateway to the deployed functions
in-process, as the API Gateway event they would receive; so the page exercises the deployed code path (routing,
validation, caching headers, ETag). Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from shardboard_tools.local.gateway import INTERNAL_ERROR, Gateway, Reply, Request, template_routes
from shardboard_tools.template import Template

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
log = logging.getLogger(__name__)
PAGE_ROUTES = ("/", "/index.html")
# Methods the server reads; API Gateway answers each (404 when no route has it).
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def index_html() -> bytes:
    return (resources.files("shardboard_tools.local") / "web" / "index.html").read_bytes()


def page(_request: Request) -> Reply:
    return Reply(200, {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache"}, index_html())


class LoopbackServer(ThreadingHTTPServer):
    """A thread per connection, none of which keeps the process alive; socketserver's listen backlog of 5 reset
    connections a frontend's burst of parallel requests opened while the accept loop was busy."""

    daemon_threads = True
    request_queue_size = socket.SOMAXCONN

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client left before its answer (a timeout, a reload): nothing went wrong here
        super().handle_error(request, client_address)


class LocalApiServer:
    """The gateway (plus the page) on 127.0.0.1:``port`` (0: a free port), in a background thread.

    ``refresh_seconds``: how often the local scheduler refreshes the snapshot, for the responses' max-age.
    """

    def __init__(self, gateway: Gateway, port: int = 0, refresh_seconds: float | None = None) -> None:
        self.gateway = gateway
        for path in PAGE_ROUTES:
            gateway.add_local_route("GET", path, page)
        self.refresh_seconds = refresh_seconds
        self.requests = 0
        self._counting = threading.Lock()
        self.httpd = LoopbackServer(("127.0.0.1", port), self._request_class())
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="local-api", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> LocalApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._thread.is_alive():  # shutdown() waits for serve_forever, which never ran if not started
            self.httpd.shutdown()
            self._thread.join()
        self.httpd.server_close()

    def handle(self, request: Request) -> Reply:
        with self._counting:
            self.requests += 1
        try:
            reply = self.gateway.handle(request)
        except Exception:  # a fault of this server (an authorizer, a local route): a 500, never a dropped connection
            log.exception("request failed", extra={"method": request.method, "target": request.target})
            reply = INTERNAL_ERROR
        return Reply(reply.status, self._cache_headers(reply.headers), reply.body, reply.cookies)

    def respond(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for one request."""
        reply = self.handle(Request.of(method, target, headers, body))
        return reply.status, reply.headers, reply.body

    def _cache_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """The function's max-age is its schedule's (whole minutes); a local run refreshing faster states its own.

        Rounded down: a cached answer is never older than one refresh interval.
        """
        # Reads only: the element's script (GET /shardboard.js) keeps its own max-age, a year under its versioned URL.
        script = headers.get("Content-Type", "").startswith("text/javascript")
        if self.refresh_seconds is not None and not script and "max-age" in headers.get("Cache-Control", ""):
            return {**headers, "Cache-Control": f"public, max-age={int(self.refresh_seconds)}"}
        return headers

    def _request_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class HttpRequest(BaseHTTPRequestHandler):
            def handle_one(self) -> None:
                started = time.monotonic()
                try:
                    body = self._body()
                except ValueError:  # a Content-Length or chunk size that is not a number
                    reply = Reply.json(400, {"message": "Bad Request"})
                else:
                    headers = tuple(self.headers.items())
                    reply = server.handle(Request(self.command, self.path, headers, body, self.client_address[0]))
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                for cookie in reply.cookies:
                    self.send_header("Set-Cookie", cookie)
                self.send_header("Content-Length", str(len(reply.body)))
                self.send_header("Server-Timing", f"handler;dur={(time.monotonic() - started) * 1000:.1f}")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply.body)

            def _body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    return self._chunked()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _chunked(self) -> bytes:
                body = b""
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    body += self.rfile.read(size)
                    self.rfile.readline()
                while self.rfile.readline().strip():  # trailers, up to the blank line
                    pass
                return body

            def log_message(self, format: str, *args: Any) -> None:
                return  # the live view (demo) or the one status line (serve) is the interface

        for method in METHODS:
            setattr(HttpRequest, f"do_{method}", HttpRequest.handle_one)
        return HttpRequest


class LeaderboardServer(LocalApiServer):
    """The page and the template's GET routes, every one answered by ``handler`` (the read API function)."""

    def __init__(
        self,
        handler: Handler,
        port: int = 0,
        refresh_seconds: float | None = None,
        template: Template | None = None,
    ) -> None:
        routes = [route for route in template_routes(template or Template.load()) if route.method == "GET"]
        gateway = Gateway(routes, handlers={route.handler: handler for route in routes})
        super().__init__(gateway, port, refresh_seconds)
