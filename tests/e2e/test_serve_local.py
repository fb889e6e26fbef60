"""`shardboard serve` end to end: a subprocess on a free port with its own DynamoDB Local, views posted as curl posts
them, the leaderboard a refresh later, the page in headless Chromium, and nothing left running after SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from shardboard_tools.local.engine import free_port
from tests.e2e.test_web_and_engine_local import CHROMIUM, CHROMIUM_ARGS, ROWS, TOP

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
VIEWS = {"images/006.jpg": 5, "a #1": 3, "ünï/cødé 漢字": 2, "b": 1}
START_SECONDS = 120  # DynamoDB Local's start on a busy 2-core machine, then the tables


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    line: str

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it; its exit status."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
        return self.process.wait(60)


def start_serve(tmp_path: Path, *arguments: str, endpoint: dict[str, str] | None = None) -> Served:
    """``shardboard ARGUMENTS`` (a serve); with no ``endpoint`` variables it starts its own DynamoDB Local, as in a
    fresh shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL")} | (endpoint or {})
    env["SHARDBOARD_STATE_DIR"] = str(tmp_path / "state")
    out = tmp_path / "serve.out"
    command = [sys.executable, "-c", "from shardboard_tools.cli import main; main()", *arguments]
    with out.open("wb") as stdout, (tmp_path / "serve.err").open("wb") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        line = out.read_text("utf-8").strip()
        if line:
            return Served(process, line.split()[2], line)
        time.sleep(0.2)
    process.kill()
    process.wait()
    pytest.fail(f"serve did not start: {(tmp_path / 'serve.err').read_text('utf-8')[-2000:]}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    running = start_serve(tmp_path, "serve", "--port", str(free_port()), "--refresh", "0.5")
    try:
        if "dynamodb-local" not in running.line:
            pytest.fail(f"DynamoDB Local is not installed (run `make dynamodb-local`): {running.line}")
        yield running
    finally:
        running.stop()


def call(method: str, url: str, body: bytes | None = None) -> tuple[int, Any]:
    """One request as urllib sends it (a POST body goes as a form, like ``curl -d``)."""
    request = urllib.request.Request(url, data=body, method=method)  # noqa: S310 - http://127.0.0.1 only
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def post_views(url: str) -> None:
    for item, count in VIEWS.items():
        for _ in range(count):
            status, body = call("POST", url + "views", json.dumps({"id": item}).encode())
            assert (status, body["id"]) == (202, item)


def leaderboard_when(url: str, expected: list[list[Any]], seconds: float = 60) -> dict[str, Any]:
    """GET /leaderboard until it shows ``expected`` ([id, views] in rank order)."""
    deadline = time.monotonic() + seconds
    board: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status, board = call("GET", url + "leaderboard")
        if status == 200 and [[e["id"], e["views"]] for e in board["items"]] == expected:
            return board
        time.sleep(0.25)
    pytest.fail(f"the leaderboard never showed {expected}: last {board}")


def expected_top() -> list[list[Any]]:
    return [[item, views] for item, views in sorted(VIEWS.items(), key=lambda kv: (-kv[1], kv[0]))]


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (DynamoDB Local's java and anything it started)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def listening(url: str) -> bool:
    host, port = url.split("//")[1].rstrip("/").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def test_posted_views_show_on_the_leaderboard_and_sigterm_stops_everything(tmp_path):
    # Given `shardboard serve` started as in a fresh shell (no endpoint: it starts DynamoDB Local)
    running = start_serve(tmp_path, "serve", "--port", str(free_port()), "--refresh", "0.5")
    try:
        assert running.url.startswith("http://127.0.0.1:") and "POST /views" in running.line
        assert "dynamodb-local" in running.line, f"DynamoDB Local is not installed: {running.line}"
        below = descendants(running.process.pid)
        assert below, "serve started no engine"

        # When views are posted as curl -d posts them (a form content type)
        post_views(running.url)

        # Then a refresh later the leaderboard has them, and each odd id reads back whole
        board = leaderboard_when(running.url, expected_top())
        assert board["board"] == "global"
        status, item = call("GET", running.url + "items/" + quote("ünï/cødé 漢字", safe=""))
        assert (status, item) == (200, {"id": "ünï/cødé 漢字", "views": 2})
        assert call("GET", running.url + "nope") == (404, {"message": "Not Found"})
        status, contract = call("GET", running.url + "openapi.json")
        assert status == 200 and {"/views", "/leaderboard", "/items/{id}"} <= set(contract["paths"])
    finally:
        # When it is sent SIGTERM
        status = running.stop()

    # Then it exits cleanly, stops listening, and leaves no engine behind
    assert status == 0
    assert not listening(running.url)
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in below if alive(pid)]


def test_the_page_shows_the_leaderboard_through_serve(served):
    from playwright.sync_api import sync_playwright

    # Given views posted to `shardboard serve` and refreshed into the snapshot
    post_views(served.url)
    leaderboard_when(served.url, expected_top())

    # When Debian's Chromium opens the page serve serves
    with sync_playwright() as playwright:
        if CHROMIUM is None and not Path(playwright.chromium.executable_path).exists():
            pytest.fail("no Chromium: run `make browser` (Debian's chromium, or Playwright's download)")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(served.url + "?limit=5")
        page.wait_for_selector(TOP)
        page.wait_for_function("() => document.getElementById('board').textContent !== '\u2026'")
        rows = page.eval_on_selector_all(TOP, ROWS)
        title = page.text_content("#board")
        browser.close()

    # Then it shows the exact top through the read API function
    assert title == "global"
    assert [row[1:3] for row in rows] == [[item, f"{views:,}"] for item, views in expected_top()]


def test_serve_uses_the_endpoint_it_is_given_and_leaves_it_running(engine, tmp_path):
    # Given a DynamoDB Local already running (the session's), exported as a user exports `shardboard local`'s line
    endpoint = engine.env()
    stack = f"serve-{uuid.uuid4().hex[:8]}"  # tables of its own in the shared engine
    running = start_serve(
        tmp_path, "--stack", stack, "serve", "--port", str(free_port()), "--refresh", "0.5", endpoint=endpoint
    )
    try:
        # Then serve uses it (no engine of its own) and views go through as before
        assert f"external at {engine.endpoint}" in running.line
        assert not descendants(running.process.pid)
        status, _ = call("POST", running.url + "views", json.dumps({"id": "x"}).encode())
        assert status == 202
        leaderboard_when(running.url, [["x", 1]])
    finally:
        assert running.stop() == 0
    # And the engine it was given is still there
    assert engine.running and listening(engine.endpoint + "/")
