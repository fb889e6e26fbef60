"""The embeddable <shardboard-board> and the local page built on it, in real Chromium against `shardboard serve` on
DynamoDB Local: one serve (the session's engine, a stack of its own) and one browser for the whole module.

The stack: TopN=10, every kind of period (day, week, month, a 24 h window, trending), pages of 4 of a ranked version
50 deep refreshed every second; twelve posts with metadata on the global board, two items on the cats board.
The test that posts more views runs last: the ones before read the same counts.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from shardboard_tools.local.engine import Engine, free_port
from tests.e2e.test_serve_local import Served, call, start_serve
from tests.e2e.test_web_and_engine_local import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.e2e
TOP_N = 10
PERIODS = "day,week,month,24h,trending"
# p/1 .. p/12 with 19 .. 8 views: no ties, two past N; cats holds c/1 (3) and c/2 (1), which count globally too.
POSTS = {f"p/{k}": 20 - k for k in range(1, 13)}
CATS = {"c/1": 3, "c/2": 1}
META = {
    "p/1": {"title": "First <b>post</b>", "url": "https://example.com/1", "thumbnail": "https://example.com/1.jpg"},
    "p/2": {"title": "Second post", "image": "https://example.com/2.png"},
    "p/3": {"title": "Third post", "url": "https://example.com/3"},
}
GLOBAL_TOP = sorted({**POSTS, **CATS}.items(), key=lambda kv: -kv[1])[:TOP_N]
ENTRIES = "shardboard-board li"
# Each entry as the element shows it: id, rank, title, link, thumbnail, views.
READ_ENTRIES = """rows => rows.map(li => ({
    id: li.dataset.id,
    rank: li.querySelector('[part~=rank]').textContent,
    title: li.querySelector('[part~=link], [part~=name]').textContent,
    href: li.querySelector('a')?.href ?? null,
    img: li.querySelector('img')?.src ?? null,
    views: li.querySelector('[part~=views]').firstChild.textContent}))"""


def request(method: str, url: str, document: Any) -> tuple[int, Any]:
    return call(method, url, json.dumps(document).encode())


def wait_for(url: str, query: str, expected: list[tuple[str, int]], seconds: float = 90) -> None:
    """GET /leaderboard?QUERY until its entries are ``expected`` (id, views)."""
    deadline = time.monotonic() + seconds
    board: Any = None
    while time.monotonic() < deadline:
        status, board = call("GET", f"{url}leaderboard?{query}")
        if status == 200 and [(e["id"], e["views"]) for e in board["items"]] == expected:
            return
        time.sleep(0.25)
    pytest.fail(f"leaderboard?{query} never showed {expected}: last {board}")


def serve_stack(engine: Engine, tmp_path: Path, *parameters: str) -> Served:
    """`shardboard serve` on the session's DynamoDB Local, with tables of its own."""
    stack = f"embed-{uuid.uuid4().hex[:8]}"
    options = [option for parameter in parameters for option in ("-p", parameter)]
    return start_serve(
        tmp_path,
        "--stack",
        stack,
        *options,
        "serve",
        "--port",
        str(free_port()),
        "--refresh",
        "0.5",
        endpoint=engine.env(),
    )


@pytest.fixture(scope="module")
def served(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    running = serve_stack(
        engine,
        tmp_path_factory.mktemp("serve"),
        f"TopN={TOP_N}",
        f"Periods={PERIODS}",
        "PageSize=4",
        "RankDepth=50",
        "RankRefreshSeconds=1",
    )
    try:
        for item, meta in META.items():
            status, _ = request("PUT", f"{running.url}item?id={quote(item, safe='')}", meta)
            assert status == 200
        for item, views in POSTS.items():
            assert request("POST", running.url + "views", {"id": item, "count": views})[0] == 202
        for item, views in CATS.items():
            assert request("POST", running.url + "views", {"id": item, "count": views, "boards": ["cats"]})[0] == 202
        wait_for(running.url, "", GLOBAL_TOP)
        wait_for(running.url, "board=cats", list(CATS.items()))
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        if CHROMIUM is None and not Path(playwright.chromium.executable_path).exists():
            pytest.fail("no Chromium: run `make browser` (Debian's chromium, or Playwright's download)")
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    # A visitor's Chrome: headless Chromium says "HeadlessChrome", which the crawler list counts on the bots board
    major = browser.version.split(".")[0]
    agent = f"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"
    context = browser.new_context(locale="en-US", user_agent=agent)
    opened = context.new_page()
    yield opened
    context.close()


def embed(page: Any, served: Served, tmp_path: Path, element: str) -> None:
    """Open a plain HTML file (in tmp_path) that pastes the two lines, at an address of serve's origin."""
    html = tmp_path / "embed.html"
    html.write_text(
        '<!doctype html><html lang="en"><meta charset="utf-8"><title>A site</title><body><h1>A site</h1>\n'
        f'<script type="module" src="{served.url}shardboard.js"></script>\n{element}\n</body></html>',
        encoding="utf-8",
    )
    address = f"{served.url}embed.html"
    page.route(address, lambda route: route.fulfill(path=html, content_type="text/html"))
    page.goto(address)


def entries(page: Any, count: int) -> list[dict[str, Any]]:
    page.wait_for_function(
        "n => document.querySelector('shardboard-board')?.shadowRoot?.querySelectorAll('li').length === n", arg=count
    )
    return page.eval_on_selector_all(ENTRIES, READ_ENTRIES)  # type: ignore[no-any-return]


def checked_period(page: Any) -> str:
    return page.eval_on_selector(
        "shardboard-board", "e => e.shadowRoot.querySelector('[aria-checked=true]').textContent"
    )  # type: ignore[no-any-return]


def test_the_element_shows_titles_links_and_thumbnails_in_rank_order_with_limit_clamped(served, page, tmp_path):
    # Given a site's page that pastes the script and the element, asking for more entries than the board's N
    embed(page, served, tmp_path, '<shardboard-board limit="50"></shardboard-board>')

    # When Chromium shows it
    shown = entries(page, TOP_N)

    # Then it shows the exact top N (limit clamped, no error) in rank order: titles (as text) linked to their url,
    # thumbnails from thumbnail or image, the id where there is no title
    assert [(e["id"], e["rank"], e["views"]) for e in shown] == [
        (item, str(rank), str(views)) for rank, (item, views) in enumerate(GLOBAL_TOP, 1)
    ]
    assert shown[0] | {"id": None, "rank": None, "views": None} == {
        "id": None,
        "rank": None,
        "views": None,
        "title": "First <b>post</b>",
        "href": "https://example.com/1",
        "img": "https://example.com/1.jpg",
    }
    assert (shown[1]["title"], shown[1]["href"], shown[1]["img"]) == ("Second post", None, "https://example.com/2.png")
    assert (shown[2]["title"], shown[2]["href"], shown[2]["img"]) == ("Third post", "https://example.com/3", None)
    assert (shown[3]["title"], shown[3]["href"], shown[3]["img"]) == ("p/4", None, None)
    status = page.eval_on_selector("shardboard-board", "e => e.shadowRoot.querySelector('[part~=status]').textContent")
    assert status == ""
    # And the list is labelled
    label = page.eval_on_selector(
        "shardboard-board", "e => e.shadowRoot.querySelector('ol').getAttribute('aria-label')"
    )
    assert label == "Most viewed on global, All time"


def test_the_period_switch_offers_the_stacks_periods_and_works_by_keyboard(served, page, tmp_path):
    # Given the element on the cats board, limit 1
    embed(page, served, tmp_path, '<shardboard-board board="cats" limit="1"></shardboard-board>')
    assert [e["id"] for e in entries(page, 1)] == ["c/1"]

    # Then its switch offers exactly the stack's periods (hour comes with trending and the window), all time checked
    labels = page.eval_on_selector_all("shardboard-board [part~=period]", "bs => bs.map(b => b.textContent)")
    assert labels == ["All time", "This hour", "Today", "This week", "This month", "Trending", "Last 24 hours"]
    assert checked_period(page) == "All time"

    # When the user tabs to it and presses End (the last period), then Left (trending)
    page.keyboard.press("Tab")
    focused = page.evaluate("() => document.activeElement.shadowRoot.activeElement.textContent")
    page.keyboard.press("End")
    page.wait_for_function("() => document.querySelector('shardboard-board').period === '24h'")
    window_entries = entries(page, 1)
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => document.querySelector('shardboard-board').period === 'trending'")
    page.wait_for_selector("shardboard-board [part~=recent]")
    trending = page.eval_on_selector_all(ENTRIES, "rows => rows.map(li => li.textContent)")

    # Then focus went to the checked period, each key chose a period and the list followed it: the window's plain
    # views, then trending with each entry's recent views
    assert focused == "All time"
    assert [(e["id"], e["views"]) for e in window_entries] == [("c/1", "3")]
    assert checked_period(page) == "Trending"
    assert "1h 3 · 24h 3" in trending[0]

    # And a click on Today reads the day
    page.click("shardboard-board [part~=period] >> text=Today")
    page.wait_for_function("() => document.querySelector('shardboard-board').getAttribute('period') === 'day'")
    assert [(e["id"], e["views"]) for e in entries(page, 1)] == [("c/1", "3")]


def test_the_page_switches_boards_without_offering_bots(served, page):
    # Given a view that names the bots board (refused or not, depending on the stack's bot filtering)
    request("POST", served.url + "views", {"id": "crawled", "boards": ["bots"]})

    # When the page opens and the cats board is chosen
    page.goto(served.url)
    entries(page, TOP_N)
    options = page.eval_on_selector_all("#board-switch option", "os => os.map(o => o.value)")
    page.select_option("#board-switch", "cats")
    page.wait_for_function("() => document.getElementById('board').textContent === 'cats'")
    shown = entries(page, 2)

    # Then the switcher offered the boards that hold views but bots, and the table shows cats
    assert options == ["global", "cats"]
    assert [(e["id"], e["views"]) for e in shown] == [("c/1", "3"), ("c/2", "1")]
    assert "board=cats" in page.url


def test_find_answers_for_the_board_and_period_shown(served, page):
    # Given the page on the cats board
    page.goto(served.url + "?board=cats")
    entries(page, 2)

    # When c/2 is looked up
    page.fill("#search-id", "c/2")
    page.click("#search button")
    page.wait_for_selector("#around-rows tr.me")

    # Then its rank is on cats (2nd of 2), not on the global board (where it is last of 14), neighbours from cats
    assert page.text_content("#search-rank").startswith("c/2: rank 2 of 2 on cats, all time")
    assert page.eval_on_selector_all("#around-rows tr", "rs => rs.map(r => r.dataset.id)") == ["c/1", "c/2"]


def test_the_page_on_a_top_10_stack_asks_no_more_than_n(served, page):
    # When the page is opened without a limit, and with limit=20 (the old page's fixed ask)
    page.goto(served.url)
    plain = entries(page, TOP_N)
    page.goto(served.url + "?limit=20")
    asked = entries(page, TOP_N)

    # Then both show the top 10 and no error
    assert [e["id"] for e in plain] == [e["id"] for e in asked] == [item for item, _ in GLOBAL_TOP]
    assert "Could not" not in page.inner_text("body")


def test_the_page_shows_titles_and_thumbnails(served, page):
    page.goto(served.url)
    shown = entries(page, TOP_N)
    assert (shown[0]["title"], shown[0]["href"], shown[0]["img"]) == (
        "First <b>post</b>",
        "https://example.com/1",
        "https://example.com/1.jpg",
    )
    assert (shown[1]["title"], shown[1]["img"]) == ("Second post", "https://example.com/2.png")


def test_a_stack_without_windows_or_trending_offers_no_link_to_them(engine, page, tmp_path):
    # Given a stack with the template's default periods (day, week, month) and N = 10
    running = serve_stack(engine, tmp_path, f"TopN={TOP_N}")
    try:
        assert request("POST", running.url + "views", {"id": "only"})[0] == 202
        wait_for(running.url, "", [("only", 1)])

        # When its page opens
        page.goto(running.url)
        entries(page, 1)
        labels = page.eval_on_selector_all("shardboard-board [part~=period]", "bs => bs.map(b => b.textContent)")
        text = page.inner_text("body")
        links = page.eval_on_selector_all("a", "as => as.map(a => a.href)")
    finally:
        running.stop()

    # Then it offers all time, today, this week and this month, and nothing the stack lacks
    assert labels == ["All time", "Today", "This week", "This month"]
    assert "Trending" not in labels and "Last 24 hours" not in text
    assert not [link for link in links if "period=" in link or "window=" in link]


def test_new_views_refresh_the_element_and_the_pager_with_the_snapshot(served, page, tmp_path):
    # Given the page, its table and its first page of ranks (4 entries) as loaded, and the element embedded
    page.goto(served.url)
    before = entries(page, TOP_N)
    page.wait_for_selector("#page-rows tr")
    answers: list[int] = []
    page.on(
        "response", lambda r: answers.append(r.status) if "/leaderboard?" in r.url and "offset" not in r.url else None
    )

    # When p/12 (8 views, 11th) gets 30 more: the new top
    assert request("POST", served.url + "views", {"id": "p/12", "count": 30})[0] == 202

    # Then the element shows it first without a reload, and the pager's first page follows the table
    page.wait_for_function(
        "() => document.querySelector('shardboard-board').shadowRoot.querySelector('li')?.dataset.id === 'p/12'",
        timeout=60_000,
    )
    after = entries(page, TOP_N)
    page.wait_for_function(
        "() => document.querySelector('#page-rows tr')?.dataset.id === 'p/12'",
        timeout=60_000,
    )
    pager = page.eval_on_selector_all(
        "#page-rows tr", "rs => rs.map(r => [r.dataset.id, r.cells[0].textContent, r.cells[2].textContent])"
    )
    assert before[0]["id"] == "p/1" and after[0]["id"] == "p/12" and after[0]["views"] == "38"
    assert pager == [[e["id"], e["rank"], e["views"]] for e in after[:4]]
    # And the element revalidated with If-None-Match: unchanged snapshots answered 304
    assert 304 in answers


def test_record_sends_one_view_of_the_pages_item_as_a_beacon(served, page, tmp_path):
    # Given c/2 with its one view
    assert call("GET", f"{served.url}item?id=c%2F2")[1]["views"] == CATS["c/2"]
    beacons: list[Any] = []
    page.on(
        "request",
        lambda r: beacons.append((r.headers.get("content-type"), r.post_data)) if r.method == "POST" else None,
    )

    # When a page embeds the element with record="c/2"
    embed(page, served, tmp_path, '<shardboard-board record="c/2" limit="1"></shardboard-board>')
    entries(page, 1)

    # Then one beacon went out, a text/plain POST /views of the item, and the view counts
    assert beacons == [("text/plain;charset=UTF-8", json.dumps({"id": "c/2"}, separators=(",", ":")))]
    deadline = time.monotonic() + 60
    while call("GET", f"{served.url}item?id=c%2F2")[1]["views"] != CATS["c/2"] + 1 and time.monotonic() < deadline:
        time.sleep(0.25)
    assert call("GET", f"{served.url}item?id=c%2F2")[1]["views"] == CATS["c/2"] + 1
