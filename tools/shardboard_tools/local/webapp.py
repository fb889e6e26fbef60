"""The local HTTP server: the leaderboard page and the API, through the local gateway (local/gateway.py).

``GET /`` (and ``/index.html``) is the page; every other request goes through the gateway to the deployed functions
in-process, as the API Gateway event they would receive; so the page exercises the deployed code path (routing,
validation, caching headers, ETag). Listens on 127.0.0.1 only.
"""

from __future__ import annotations

import logging
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from io import BufferedIOBase
from typing import Any

from shardboard_tools.local.gateway import INTERNAL_ERROR, NOT_FOUND, Gateway, Reply, Request, template_routes
from shardboard_tools.template import Template

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
log = logging.getLogger(__name__)
PAGE_ROUTES = ("/", "/index.html")
# Methods the server reads; API Gateway answers each (404 when no route has it).
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# API Gateway's HTTP API quotas: a 10 MB payload; 10,240 bytes of request line and header values together.
MAX_BODY = 10 * 1024 * 1024
MAX_REQUEST_HEAD = 10_240
MAX_CHUNK_LINE = 1024
MAX_TRAILERS = 100
# How long a request may stall mid-way (a promised body that never comes) before it is answered 408.
READ_TIMEOUT_SECONDS = 30.0
# After a refusal, how long and how much of the rest of the request is read and dropped before closing.
DRAIN_SECONDS = 1.0
DRAIN_BYTES = 16 * 1024 * 1024
_HEX = re.compile(rb"[0-9A-Fa-f]+")
# API Gateway's JSON for what it refuses before any route.
BAD_REQUEST = Reply.json(400, {"message": "Bad Request"})
TOO_LARGE = Reply.json(413, {"message": "Request Entity Too Large"})
HEAD_TOO_LARGE = Reply.json(431, {"message": "Request Header Fields Too Large"})
REQUEST_TIMEOUT = Reply.json(408, {"message": "Request Timeout"})


def index_html() -> bytes:
    return (resources.files("shardboard_tools.local") / "web" / "index.html").read_bytes()


def page(_request: Request) -> Reply:
    return Reply(200, {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache"}, index_html())


def listen_error(port: int) -> OSError | None:
    """Why 127.0.0.1:``port`` cannot be listened on (in use, not ours to bind), or None: checked before the engine
    and the tables take their seconds, so a taken port is said at once. Bound as the server binds (SO_REUSEADDR)."""
    if port == 0:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            probe.listen()
        except OSError as error:
            return error
    return None


def port_refusal(port: int, error: OSError, option: str = "--port") -> str:
    """The one line a command exits with when it cannot listen on ``port``."""
    return f"cannot listen on 127.0.0.1:{port}: {error.strerror or error} ({option} P, or 0 for a free one)"


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

    def __init__(
        self,
        gateway: Gateway,
        port: int = 0,
        refresh_seconds: float | None = None,
        read_timeout: float = READ_TIMEOUT_SECONDS,
    ) -> None:
        self.gateway = gateway
        self.read_timeout = read_timeout
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
            # A client that stops sending mid-request is answered, not waited for forever (StreamRequestHandler
            # sets it on the socket); an idle keep-alive connection is closed after as long.
            timeout = server.read_timeout
            raw_requestline: bytes  # set by BaseHTTPRequestHandler before any do_ method
            refused = False  # answered before the request was read to its end

            def handle_one(self) -> None:
                started = time.monotonic()
                try:
                    if request_head_size(self.raw_requestline, self.headers) > MAX_REQUEST_HEAD:
                        raise Malformed(HEAD_TOO_LARGE)
                    body = read_body(self.headers, self.rfile)
                except Malformed as malformed:
                    # The body was not read (or not all of it): what follows on the connection is not a request.
                    self.close_connection = self.refused = True
                    reply = malformed.reply
                except TimeoutError:
                    self.close_connection = self.refused = True
                    reply = REQUEST_TIMEOUT
                else:
                    headers = tuple(self.headers.items())
                    reply = server.handle(Request(self.command, self.path, headers, body, self.client_address[0]))
                self._send(reply, started)

            def parse_request(self) -> bool:
                try:
                    if not super().parse_request():
                        return False
                except TimeoutError:  # a client that stopped mid-headers (an idle connection is closed quietly)
                    self.send_error(HTTPStatus.REQUEST_TIMEOUT)
                    return False
                if self.request_version == "HTTP/0.9":  # "GET /path" alone: API Gateway speaks HTTP/1.1 and 2
                    self.send_error(HTTPStatus.BAD_REQUEST)
                    return False
                return True

            def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
                """What http.server refuses before a request reaches the gateway (a method it has no handler for,
                a request line or headers over its limits, a malformed request line) answered as API Gateway
                answers: its JSON, not http.server's HTML page."""
                self.close_connection = self.refused = True
                if self.request_version == "HTTP/0.9":  # the version http.server assumes until it reads one
                    self.request_version = "HTTP/1.0"  # so the answer has a status line
                self._send(refusal_for(code), time.monotonic())

            def _send(self, reply: Reply, started: float) -> None:
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                for cookie in reply.cookies:
                    self.send_header("Set-Cookie", cookie)
                self.send_header("Content-Length", str(len(reply.body)))
                self.send_header("Server-Timing", f"handler;dur={(time.monotonic() - started) * 1000:.1f}")
                if self.refused:
                    self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply.body)

            def finish(self) -> None:
                super().finish()
                if self.refused:
                    drain(self.connection)

            def log_message(self, format: str, *args: Any) -> None:
                return  # the live view (demo) or the one status line (serve) is the interface

        for method in METHODS:
            setattr(HttpRequest, f"do_{method}", HttpRequest.handle_one)
        return HttpRequest


class Malformed(Exception):
    """A request the gateway refuses before any route: ``reply`` is its answer."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


def refusal_for(status: int) -> Reply:
    """API Gateway's answer where http.server would send an error page: an unknown method has no route (404), a
    request line or header over the limits is 431, anything else malformed is 400."""
    if status == HTTPStatus.NOT_IMPLEMENTED:
        return NOT_FOUND
    if status in {HTTPStatus.REQUEST_URI_TOO_LONG, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE}:
        return HEAD_TOO_LARGE
    if status == HTTPStatus.REQUEST_TIMEOUT:
        return REQUEST_TIMEOUT
    return BAD_REQUEST


def request_head_size(request_line: bytes, headers: Message) -> int:
    """The request line and header values, as API Gateway's quota counts them (http.server reads headers as
    Latin-1: a character is a byte)."""
    return len(request_line.rstrip(b"\r\n")) + sum(len(str(value)) for value in headers.values())


def read_body(headers: Message, stream: BufferedIOBase) -> bytes:
    """The request body by its framing, or Malformed: a length that is not a decimal number (``-1``, ``0x10``,
    two different ones), a length and a chunked encoding at once (a request smuggler's pair), a body over API
    Gateway's 10 MB or one that ends before its length."""
    encodings = [
        part.strip().lower() for value in headers.get_all("Transfer-Encoding", []) for part in value.split(",")
    ]
    lengths = {value.strip() for value in headers.get_all("Content-Length", [])}
    if encodings:
        if lengths or encodings != ["chunked"]:
            raise Malformed(BAD_REQUEST)
        return _chunked(stream)
    if not lengths:
        return b""
    length = lengths.pop()
    if lengths or not length.isascii() or not length.isdigit():
        raise Malformed(BAD_REQUEST)
    if int(length) > MAX_BODY:
        raise Malformed(TOO_LARGE)
    return _exactly(stream, int(length))


def _chunked(stream: BufferedIOBase) -> bytes:
    body = bytearray()
    while True:
        line = stream.readline(MAX_CHUNK_LINE + 1)
        size = line.split(b";", 1)[0].strip()
        if len(line) > MAX_CHUNK_LINE or not line.endswith(b"\n") or not _HEX.fullmatch(size):
            raise Malformed(BAD_REQUEST)
        if len(body) + int(size, 16) > MAX_BODY:
            raise Malformed(TOO_LARGE)
        if int(size, 16) == 0:
            break
        body += _exactly(stream, int(size, 16))
        if stream.readline(3) not in {b"\r\n", b"\n"}:
            raise Malformed(BAD_REQUEST)
    for _ in range(MAX_TRAILERS + 1):  # trailers, up to the blank line
        trailer = stream.readline(MAX_CHUNK_LINE + 1)
        if not trailer.endswith(b"\n"):
            raise Malformed(BAD_REQUEST)
        if not trailer.strip():
            return bytes(body)
    raise Malformed(HEAD_TOO_LARGE)


def drain(connection: socket.socket) -> None:
    """Close our side, then read what the client still sends for a moment: closing a socket with unread bytes
    resets the connection, and the client would lose the answer it was sent (a refused body, a long header)."""
    try:
        connection.shutdown(socket.SHUT_WR)
        connection.settimeout(DRAIN_SECONDS)
        for _ in range(DRAIN_BYTES // 65536):
            if not connection.recv(65536):
                return
    except OSError:  # the client closed first, or kept sending past the moment: it has had its answer
        return


def _exactly(stream: BufferedIOBase, size: int) -> bytes:
    data = stream.read(size)
    if len(data) < size:  # the client closed before its body's end
        raise Malformed(BAD_REQUEST)
    return data


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
