"""The local server's answer to malformed HTTP, over raw sockets: API Gateway's JSON (400, 404, 408, 413, 431),
never a dropped connection, never a hang, never http.server's HTML page. Every exchange has a timeout, so a hang
fails the test instead of stalling it."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from shardboard_tools.local.gateway import Gateway, Route
from shardboard_tools.local.webapp import MAX_BODY, MAX_REQUEST_HEAD, LocalApiServer

ECHO = "tests.integration.test_local_gateway.echo"
TIMEOUT = 10.0
NOT_FOUND = (404, {"message": "Not Found"})
BAD_REQUEST = (400, {"message": "Bad Request"})
TOO_LARGE = (413, {"message": "Request Entity Too Large"})
HEAD_TOO_LARGE = (431, {"message": "Request Header Fields Too Large"})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """A local API with one echo route (the function answers with the event it received)."""
    server = LocalApiServer(Gateway([Route("ANY", "/echo/{rest+}", "EchoFunction", ECHO)]), read_timeout=1.0)
    server.start()
    try:
        yield int(server.httpd.server_address[1])
    finally:
        server.stop()


def exchange(port: int, raw: bytes, *, half_close: bool = False) -> tuple[int, dict[str, str], Any]:
    """Send ``raw`` as is and read one answer: status, headers and the JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(raw)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(body)


def post(length: str, body: bytes = b"", **headers: str) -> bytes:
    head = "".join(f"{name.replace('_', '-')}: {value}\r\n" for name, value in headers.items())
    return f"POST /echo/x HTTP/1.1\r\nHost: local\r\nContent-Length: {length}\r\n{head}\r\n".encode() + body


def chunked(*lines: bytes) -> bytes:
    return b"POST /echo/x HTTP/1.1\r\nHost: local\r\nTransfer-Encoding: chunked\r\n\r\n" + b"".join(lines)


def test_a_well_formed_request_reaches_the_function(port):
    status, _, event = exchange(port, post("5", b"hello", Content_Type="text/plain"))
    assert (status, event["body"]) == (200, "hello")


def test_a_well_formed_chunked_request_reaches_the_function(port):
    raw = chunked(b"5\r\nhello\r\n", b"6;ext=1\r\n world\r\n", b"0\r\n", b"X-Trailer: t\r\n", b"\r\n")
    status, _, event = exchange(port, raw.replace(b"chunked\r\n", b"chunked\r\nContent-Type: text/plain\r\n"))
    assert (status, event["body"]) == (200, "hello world")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(post("99999999999999999999999999999999"), TOO_LARGE, id="overflowing-length"),
        pytest.param(post(str(MAX_BODY + 1), b"{}"), TOO_LARGE, id="length-over-10MB"),
        pytest.param(post("-1"), BAD_REQUEST, id="negative-length"),
        pytest.param(post("0x10"), BAD_REQUEST, id="hex-length"),
        pytest.param(post("+5", b"hello"), BAD_REQUEST, id="signed-length"),
        pytest.param(post("\u0665", b"hello"), BAD_REQUEST, id="non-ascii-digit-length"),
        pytest.param(post("5", b"hello", Content_Length="6"), BAD_REQUEST, id="two-lengths"),
        pytest.param(post("5", b"0\r\n\r\n", Transfer_Encoding="chunked"), BAD_REQUEST, id="length-and-chunked"),
        pytest.param(chunked(b"FFFFFFFFFFFFFFFF\r\n"), TOO_LARGE, id="huge-chunk"),
        pytest.param(chunked(b"1" + b"F" * 40 + b"\r\n"), TOO_LARGE, id="overflowing-chunk"),
        pytest.param(chunked(b"5\r\nhello\r\n", b"A00000\r\n", b"x" * 10), TOO_LARGE, id="chunk-over-10MB"),
        pytest.param(chunked(b"-1\r\n\r\n"), BAD_REQUEST, id="negative-chunk"),
        pytest.param(chunked(b"zz\r\n\r\n"), BAD_REQUEST, id="not-hex-chunk"),
        pytest.param(chunked(b"\r\n\r\n"), BAD_REQUEST, id="empty-chunk-size"),
        pytest.param(chunked(b"3\r\nabcXX0\r\n\r\n"), BAD_REQUEST, id="chunk-longer-than-its-size"),
        pytest.param(chunked(b"1" * 2000 + b"\r\n"), BAD_REQUEST, id="chunk-size-line-too-long"),
        pytest.param(
            b"POST /echo/x HTTP/1.1\r\nHost: l\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            BAD_REQUEST,
            id="other-coding",
        ),
        pytest.param(b"BREW /echo/x HTTP/1.1\r\nHost: l\r\n\r\n", NOT_FOUND, id="unknown-method"),
        pytest.param(b"get /echo/x HTTP/1.1\r\nHost: l\r\n\r\n", NOT_FOUND, id="lower-case-method"),
        pytest.param(b"GET /echo/" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", HEAD_TOO_LARGE, id="line-over-64K"),
        pytest.param(
            b"GET /echo/" + b"a" * MAX_REQUEST_HEAD + b" HTTP/1.1\r\nHost: l\r\n\r\n", HEAD_TOO_LARGE, id="line-10K"
        ),
        pytest.param(
            b"GET /echo/x HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", HEAD_TOO_LARGE, id="header-over-64K"
        ),
        pytest.param(
            b"GET /echo/x HTTP/1.1\r\nX-Big: " + b"a" * MAX_REQUEST_HEAD + b"\r\n\r\n", HEAD_TOO_LARGE, id="header-10K"
        ),
        pytest.param(
            b"GET /echo/x HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % n for n in range(101)) + b"\r\n",
            HEAD_TOO_LARGE,
            id="101-headers",
        ),
        pytest.param(b"hello there\r\n\r\n", BAD_REQUEST, id="garbage-line"),
        pytest.param(b"GET /echo/x HTTP/2.0\r\n\r\n", BAD_REQUEST, id="http-2-line"),
        pytest.param(b"GET /echo/x HTTP/x.y\r\n\r\n", BAD_REQUEST, id="bad-version"),
        pytest.param(b"GET /echo/x\r\n\r\n", BAD_REQUEST, id="http-0.9"),
    ],
)
def test_a_malformed_request_gets_the_gateways_json(port, raw, expected):
    status, headers, body = exchange(port, raw)
    assert (status, body) == expected
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"  # what follows on the connection is not a request


def test_a_body_that_ends_before_its_length_is_400(port):
    assert exchange(port, post("10", b"short"), half_close=True)[::2] == BAD_REQUEST


def test_a_chunk_that_ends_early_is_400(port):
    assert exchange(port, chunked(b"10\r\nshort"), half_close=True)[::2] == BAD_REQUEST


def test_a_client_that_stalls_mid_body_is_answered_408_not_waited_for(port):
    # The server reads with a 1 s timeout here (30 s under serve): a stalled client gets an answer
    status, _, body = exchange(port, post("10", b"short"))
    assert (status, body) == (408, {"message": "Request Timeout"})


def test_a_client_that_stalls_mid_headers_is_answered_408(port):
    status, _, body = exchange(port, b"GET /echo/x HTTP/1.1\r\nHost: l\r\n")
    assert (status, body) == (408, {"message": "Request Timeout"})


def test_after_a_refusal_the_server_still_answers(port):
    assert exchange(port, post("-1"))[0] == 400
    status, _, event = exchange(port, post("2", b"ok", Content_Type="text/plain"))
    assert (status, event["body"]) == (200, "ok")
