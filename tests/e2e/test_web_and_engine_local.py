"""The leaderboard page in headless Chromium (through the read API handler), and no java left behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from shardboard.domain.periods import HOUR, bucket_of
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.gather import Entry, top
from shardboard.handlers import aggregate, read_api, snapshot
from shardboard_tools.local.scheduler import scheduled_event
from shardboard_tools.local.stream_runner import StreamRunner
from shardboard_tools.local.webapp import LeaderboardServer
from tests.e2e.helpers import brute_force_top, record_random_views

pytestmark = pytest.mark.e2e
# `make browser` installs Debian's chromium (on PATH) or, without apt, Playwright's own download (its default).
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# The page's top table is its <shardboard-board> (Playwright's CSS selectors pierce its shadow root): each entry as
# the old table's cells were, rank, item, views, movement since the snapshot before, movement in a day; then a
# trending entry's recent views.
TOP = "shardboard-board li"
ROWS = """rows => rows.map(r => [
    r.querySelector('[part~=rank]').textContent, r.querySelector('[part~=link], [part~=name]').textContent,
    r.querySelector('[part~=views]').firstChild.textContent, r.querySelector('[part~=move]').textContent,
    r.querySelector('[part~=day]').textContent, r.querySelector('[part~=recent]')?.textContent ?? ''])"""
# The around-me and pager tables are the page's own.
CELLS = "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
T = TypeVar("T")


def read_top_table(limit: int, read: Callable[[Any], T], query: str = "") -> tuple[T, int]:
    """Open the read API's page (top ``limit``, and ``query``: a period or window) in Chromium, ``read`` it once its
    table shows, and close both: what was read, and how many requests the server answered."""
    from playwright.sync_api import sync_playwright

    server = LeaderboardServer(read_api.handler).start()
    try:
        with sync_playwright() as playwright:
            if CHROMIUM is None and not Path(playwright.chromium.executable_path).exists():
                pytest.fail("no Chromium: run `make browser` (Debian's chromium, or Playwright's download)")
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"{server.url}?limit={limit}{'&' + query if query else ''}")
            page.wait_for_selector(TOP)
            found = read(page)
            browser.close()
    finally:
        server.stop()
    return found, server.requests


def snapshots_after(rt: Any, tmp_path: Path, *rounds: dict[str, int]) -> None:
    """Each round's views (one per write shard), streamed to the aggregator, then a snapshot run."""
    runner = StreamRunner(rt.dynamodb, rt.streams, rt.settings.views_table, aggregate.handler, state_dir=tmp_path)
    for views in rounds:
        for item, count in views.items():
            for shard in range(count):
                rt.views.add_view(item, shard % rt.settings.write_shards)
        runner.drain()
        rt.invoke(snapshot.handler, scheduled_event())


def test_page_shows_the_exact_top_through_the_read_api(make_local, tmp_path):
    # Given a processed stream and a snapshot

    rt = make_local(TopN="5")
    record_random_views(rt, views=120, items=12)
    StreamRunner(rt.dynamodb, rt.streams, rt.settings.views_table, aggregate.handler, state_dir=tmp_path).drain()
    rt.invoke(snapshot.handler, scheduled_event())

    # When Debian's Chromium opens the page
    (rows, title), requests = read_top_table(
        5, lambda page: (page.eval_on_selector_all(TOP, ROWS), page.text_content("#board"))
    )

    # Then it shows the exact top 5, fetched through the read API handler, each new to the board (a first snapshot)
    expected = [[str(rank), item, f"{views:,}"] for rank, (item, views) in enumerate(brute_force_top(rt), 1)]
    assert title == rt.settings.board
    assert [row[1:3] for row in rows] == [row[1:] for row in expected]
    assert [row[3] for row in rows] == ["new"] * 5
    assert requests >= 2  # the page itself, then GET /leaderboard


def test_search_box_shows_rank_and_neighbours_and_the_pager_walks_one_version(make_local, tmp_path):
    # Given a snapshot of N = 3 with a ranked version of 12 items, pages of 4, and views arriving during the walk
    from playwright.sync_api import sync_playwright

    rt = make_local(TopN="3", PageSize="4", RankDepth="50", RankRefreshSeconds="1")
    record_random_views(rt, views=150, items=12)
    runner = StreamRunner(rt.dynamodb, rt.streams, rt.settings.views_table, aggregate.handler, state_dir=tmp_path)
    runner.drain()
    rt.invoke(snapshot.handler, scheduled_event())
    truth = rt.views.scan_totals()
    ordered = top((Entry(id=i, views=v) for i, v in truth.items()), len(truth))
    ranks = {e.id: 1 + sum(1 for v in truth.values() if v > e.views) for e in ordered}
    pinned = [[str(ranks[e.id]), e.id, f"{e.views:,}"] for e in ordered]
    server = LeaderboardServer(read_api.handler).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(server.url + "?limit=3")
            page.wait_for_selector("#page-rows tr")
            # When the search box asks for the 7th item
            wanted = ordered[6].id
            page.fill("#search-id", wanted)
            page.click("#search button")
            page.wait_for_selector("#around-rows tr.me")
            found = page.text_content("#search-rank")
            near = page.eval_on_selector_all("#around-rows tr", CELLS)
            highlighted = page.text_content("#around-rows tr.me")
            # And the pager walks every page while views arrive and new versions are written
            walked = page.eval_on_selector_all("#page-rows tr", CELLS)
            versions = set()
            while page.is_enabled("#next"):
                record_random_views(rt, views=30, items=12)
                runner.drain()
                time.sleep(1)  # RankRefreshSeconds: the next run writes a new ranked version
                rt.invoke(snapshot.handler, scheduled_event())
                versions.add(rt.board.get_snapshot(PERIOD).rank.rv)
                shown = page.text_content("#page-info")
                page.click("#next")
                page.wait_for_function("shown => document.getElementById('page-info').textContent !== shown", arg=shown)
                walked += page.eval_on_selector_all("#page-rows tr", CELLS)
            page.click("#prev")
            page.wait_for_function("() => document.getElementById('page-info').textContent.startsWith('entries 5-')")
            browser.close()
    finally:
        server.stop()

    # Then the search shows the item's exact rank and its 2 + 2 neighbours, and the walk is the pinned version,
    # every entry once
    assert f"{wanted}: rank {ranks[wanted]} " in found
    assert [row[1:] for row in near] == [row[1:] for row in pinned[4:9]] and wanted in highlighted
    assert [[row[0], row[1].strip(), row[2]] for row in walked] == pinned
    assert len(versions) >= 2  # the walk outlived the version it pinned


PERIOD = PeriodKey("global", "all", "all")


def test_page_shows_titles_and_thumbnails_from_the_snapshots_metadata(make_local, tmp_path):
    # Given items with metadata (one title holding markup, shown as text), one without, views and a snapshot

    from shardboard.domain.items.records import meta

    rt = make_local(TopN="5")
    cat = {"title": "A <b>cat</b>", "url": "https://example.com/cat", "thumbnail": "https://example.com/cat.jpg"}
    rt.items.put("images/cat.jpg", meta(cat), "2026-11-23T17:00:00.000Z")
    rt.items.put("images/dog.jpg", meta({"title": "A dog"}), "2026-11-23T17:00:00.000Z")
    snapshots_after(rt, tmp_path, {"images/cat.jpg": 3, "images/dog.jpg": 2, "images/fox.jpg": 1})

    # When Chromium opens the page
    cells, _ = read_top_table(
        5,
        lambda page: page.eval_on_selector_all(
            TOP,
            """rows => rows.map(r => ({
                title: r.querySelector('[part~=link], [part~=name]').textContent,
                href: r.querySelector('a')?.href ?? null,
                img: r.querySelector('img')?.src ?? null,
                bold: r.querySelector('b') !== null}))""",
        ),
    )

    # Then the cat shows its thumbnail and its title (as text) as a link, the dog its title, the fox its id
    assert cells[0] == {
        "title": "A <b>cat</b>",
        "href": "https://example.com/cat",
        "img": "https://example.com/cat.jpg",
        "bold": False,
    }
    assert (cells[1]["title"], cells[1]["href"], cells[1]["img"]) == ("A dog", None, None)
    assert cells[2] == {"title": "images/fox.jpg", "href": None, "img": None, "bold": False}


def test_page_shows_who_moved_since_the_snapshot_before(make_local, tmp_path):
    # Given a snapshot of a (3), b (2), c (1), then a newcomer e (5) and c climbing to 4, and a second snapshot

    rt = make_local(TopN="3")
    snapshots_after(rt, tmp_path, {"a": 3, "b": 2, "c": 1}, {"e": 5, "c": 3})

    # When Chromium opens the page
    rows, _ = read_top_table(3, lambda page: page.eval_on_selector_all(TOP, ROWS))

    # Then e is new, c went up one place (3rd -> 2nd), a down two (1st -> 3rd)
    assert [(row[1], row[3]) for row in rows] == [("e", "new"), ("c", "\u25b21"), ("a", "\u25bc2")]


def test_page_shows_trending_with_arrows_and_the_last_24_hours(make_local, tmp_path):
    # Given a stack with a 24 h window and trending: a snapshot of a (3), b (2), c (1), then c climbing to 6
    rt = make_local(TopN="3", Periods="day,24h,trending")
    snapshots_after(rt, tmp_path, {"a": 3, "b": 2, "c": 1}, {"c": 5})

    def read(page: Any) -> tuple[list[list[str]], str]:
        return page.eval_on_selector_all(TOP, ROWS), page.inner_text("#meta")

    # When Chromium opens the page's trending view, then its last 24 hours
    (trending, trending_meta), _ = read_top_table(3, read, "period=trending")
    (window, window_meta), _ = read_top_table(3, read, "window=24h")

    # Then trending ranks by the decayed count (views of this hour count alike) with arrows: c climbed two places
    assert [(row[1], row[3]) for row in trending] == [("c", "\u25b22"), ("a", "\u25bc1"), ("b", "\u25bc1")]
    # and shows the document's views (decayed to the head's time: less than an hour old, each counts 2^-1/6 to 1)
    document = trending_document(3)
    views = [entry["views"] for entry in document["items"]]
    for shown, count in zip(views, (6, 3, 2), strict=True):
        assert round(count * 2 ** (-1 / 6)) <= shown <= count
    # with each entry's parts under its title: its views in the last hour and the last 24 hours
    assert [row[2] for row in trending] == [str(view) for view in views]
    assert [row[5] for row in trending] == ["1h 6 \u00b7 24h 6", "1h 3 \u00b7 24h 3", "1h 2 \u00b7 24h 2"]
    assert trending_meta.startswith("trending")
    # And the last 24 hours is the plain sum of the hours, as the day shows it
    assert [(row[0], row[1], row[2]) for row in window] == [("1", "c", "6"), ("2", "a", "3"), ("3", "b", "2")]
    assert window_meta.startswith("last 24h")


def trending_document(limit: int) -> Any:
    """The read API's trending document, as the page fetched it."""
    server = LeaderboardServer(read_api.handler)
    try:
        status, _, body = server.respond("GET", f"/leaderboard?period=trending&limit={limit}", {"Host": "127.0.0.1"})
    finally:
        server.stop()
    assert status == 200
    return json.loads(body)


def test_page_shows_who_moved_in_a_day(make_local, tmp_path):
    # Given the board's checkpoint of the hour a day before (c 5th, a 1st; and the next hour's, should the snapshot
    # run cross an hour), then a snapshot of e (5), c (4) and a (3)
    rt = make_local(TopN="3")
    now = datetime.now(UTC)
    for hours in (24, 23):
        then = bucket_of(HOUR, now - timedelta(hours=hours))
        rt.board.put_ranks_checkpoint(
            PeriodKey("global", "all", "all"), then, {"c": 5, "a": 1}, int(now.timestamp()) + 86400
        )
    snapshots_after(rt, tmp_path, {"e": 5, "c": 4, "a": 3})

    # When Chromium opens the page
    rows, _ = read_top_table(3, lambda page: page.eval_on_selector_all(TOP, ROWS))

    # Then the 24h column shows c up three places (5th -> 2nd), a down two (1st -> 3rd), and nothing for e
    assert [(row[1], row[4]) for row in rows] == [("e", ""), ("c", "\u25b23"), ("a", "\u25bc2")]


def test_read_api_errors_reach_the_page_as_http(make_local):
    # Given a board without a snapshot
    make_local()
    server = LeaderboardServer(read_api.handler)

    # When the leaderboard and a bad limit are asked for
    missing = server.respond("GET", "/leaderboard", {"Host": "127.0.0.1"})
    bad = server.respond("GET", "/leaderboard?limit=abc", {"Host": "127.0.0.1"})
    server.stop()

    # Then the read API's own status codes come back
    assert missing[0] == 404
    assert bad[0] == 400


# Ctrl-C reaches a terminal's foreground process with Python's handler in place; a background job (`make test &`,
# some CI runners) starts with SIGINT ignored, which Python keeps. The owner restores the foreground's handler so the
# SIGINT case means what it says wherever the tests run.
ENGINE_SCRIPT = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
os.environ.pop("AWS_ENDPOINT_URL_DYNAMODB", None)
from shardboard_tools.local.engine import local_engine
with local_engine() as engine:
    print(engine.kind, engine.process.pid if engine.process else 0, flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
def test_no_java_is_left_when_the_owner_dies(kill):
    # Given a process running DynamoDB Local through the engine
    owner = subprocess.Popen([sys.executable, "-c", ENGINE_SCRIPT], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    kind, pid = owner.stdout.readline().split()
    owner.stdout.close()
    if kind != "dynamodb-local":
        owner.kill()
        owner.wait()
        pytest.fail(f"DynamoDB Local is not installed (engine fell back to {kind}); run `make dynamodb-local`")
    java = int(pid)
    assert Path(f"/proc/{java}").exists()

    # When the owner is stopped by Ctrl-C, SIGTERM or even SIGKILL
    os.kill(owner.pid, kill)
    owner.wait(30)

    # Then its java process is gone too
    deadline = time.monotonic() + 20
    while _alive(java) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(java)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait() is missing
