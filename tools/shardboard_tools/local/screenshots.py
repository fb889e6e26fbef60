"""The README's pictures of <shardboard-board>: ``make screenshots`` (``python -m shardboard_tools.local.screenshots
docs``) serves a stack on DynamoDB Local, gives it posts with titles and thumbnails and two rounds of views, embeds the
element in a plain page and saves it at desktop and phone width (element-desktop.png, element-phone.png).

Thumbnails are drawn here (SVG, answered by the browser's request interception): the pictures need no network.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from shardboard_tools.local.engine import local_engine
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.local.serve import ServeOptions, serving

PARAMETERS = {"TopN": "5", "Periods": "day,week,24h,trending"}
POSTS = [
    ("posts/tide-pools", "What lives in a tide pool", "#2f81f7"),
    ("posts/sourdough", "Sourdough, week one", "#d29922"),
    ("posts/night-trains", "Europe by night train", "#8957e5"),
    ("posts/bike-repair", "Fixing a flat in five minutes", "#1a7f37"),
    ("posts/tea", "Green tea, brewed cooler", "#cf222e"),
    ("posts/moths", "Moths are underrated", "#57606a"),
]
# Two rounds: the second moves some posts, so the picture shows the movement arrows.
ROUNDS = ([40, 31, 25, 18, 12, 6], [3, 2, 14, 1, 9, 22])
WIDTHS = {"desktop": 760, "phone": 390}
HOST_PAGE = """<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>A site</title><style>body {{ font: 16px/1.45 system-ui, sans-serif; margin: 0; padding: 16px; color: #1b1f24; }}
shardboard-board {{ --shardboard-accent: #0969da; max-width: 44rem; }}</style><body>
<script type="module" src="{api}shardboard.js"></script>
<shardboard-board limit="10"></shardboard-board></body></html>"""


def thumbnail(color: str, letter: str) -> bytes:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="80" height="80">'
        f'<rect width="80" height="80" fill="{color}"/><text x="40" y="54" font-size="40" text-anchor="middle" '
        f'font-family="sans-serif" fill="#fff">{letter}</text></svg>'
    ).encode()


def answer(body: bytes, content_type: str) -> Callable[[Any], None]:
    """A request interception that answers ``body`` (Playwright passes the route alone to a one-argument handler)."""
    return lambda route: route.fulfill(body=body, content_type=content_type)


def send(method: str, url: str, document: object) -> None:
    request = urllib.request.Request(url, data=json.dumps(document).encode(), method=method)  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - http://127.0.0.1 only
        answer.read()


def settle(url: str, first: str, seconds: float = 60) -> None:
    """Wait until the snapshot shows ``first`` on top."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}leaderboard", timeout=30) as answer:  # noqa: S310
                items = json.loads(answer.read())["items"]
        except urllib.error.HTTPError:  # 404 until the first snapshot
            items = []
        if items and items[0]["id"] == first:
            return
        time.sleep(0.3)
    raise TimeoutError(f"the snapshot never showed {first} first")


def take(out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    rt = Runtime.from_template(None, PARAMETERS, "screenshots")
    saved = []
    with (
        tempfile.TemporaryDirectory() as state,
        local_engine(),
        serving(rt, ServeOptions(refresh_seconds=0.5, state_dir=Path(state))) as server,
    ):
        url = server.url
        for item, title, _ in POSTS:
            meta = {
                "title": title,
                "url": f"https://example.com/{item}",
                "thumbnail": f"https://img.example/{item}.svg",
            }
            send("PUT", f"{url}item?id={quote(item, safe='')}", meta)
        for number, views in enumerate(ROUNDS):
            for (item, _, _), count in zip(POSTS, views, strict=True):
                send("POST", f"{url}views", {"id": item, "count": count})
            settle(url, POSTS[0][0])
            if number == 0:
                time.sleep(1.5)  # a snapshot of the first round, for the second to move against
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--headless"])
            for name, width in WIDTHS.items():
                page = browser.new_page(viewport={"width": width, "height": 600}, device_scale_factor=2)
                for item, title, color in POSTS:
                    page.route(f"https://img.example/{item}.svg", answer(thumbnail(color, title[0]), "image/svg+xml"))
                page.route(f"{url}site.html", answer(HOST_PAGE.format(api=url).encode(), "text/html"))
                page.goto(f"{url}site.html")
                page.wait_for_selector("shardboard-board li img")
                page.wait_for_load_state("networkidle")
                path = out / f"element-{name}.png"
                page.locator("shardboard-board").screenshot(path=str(path))
                saved.append(path)
                page.close()
            browser.close()
    return saved


if __name__ == "__main__":
    for picture in take(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")):
        print(picture)
