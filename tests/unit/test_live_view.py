"""The demo's live view and page: figures measured from the writes, cache headers from the demo's own refresh."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from shardboard_tools.local.live import StreamLag, Vitals, render
from shardboard_tools.local.webapp import LeaderboardServer


def test_stream_lag_is_the_age_of_the_oldest_undelivered_view():
    # Given three views that landed at t = 100, 101 and 103
    lag = StreamLag()
    for landed in (100.0, 101.0, 103.0):
        lag.view(landed)
    # Then at t = 105 the lag follows the records delivered, down to 0 once all are
    assert lag.seconds(delivered=0, now=105.0) == 5.0
    assert lag.seconds(delivered=2, now=105.0) == 2.0
    assert lag.seconds(delivered=3, now=105.0) == 0.0
    assert lag.seconds(delivered=4, now=105.0) == 0.0  # records written before the run are delivered too


def test_the_live_view_labels_the_lag_it_measures():
    vitals = Vitals(
        views=10,
        elapsed=2.0,
        target_seconds=None,
        records_delivered=7,
        stream_lag=1.25,
        freshness_p50=None,
        refreshes=1,
    )
    console = Console(width=120, record=True)
    console.print(render(None, vitals))
    assert "stream   7 records delivered · 3 behind · lag 1.2s (oldest undelivered view)" in console.export_text()


def read_api(cache_control: str) -> Any:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"statusCode": 200, "headers": {"Cache-Control": cache_control, "ETag": '"e1"'}, "body": "{}"}

    return handler


def test_the_page_states_the_demo_refresh_interval_as_max_age():
    # Given the read API answering with its schedule's max-age (60 s) and a demo refreshing every 2.5 s
    server = LeaderboardServer(read_api("public, max-age=60"), refresh_seconds=2.5)
    try:
        # When the leaderboard is read through the local server
        status, headers, _ = server.respond("GET", "/leaderboard", {"Host": "127.0.0.1"})
    finally:
        server.stop()
    # Then the cache lifetime is the demo's refresh, rounded down, and the ETag is the function's
    assert status == 200
    assert headers == {"Cache-Control": "public, max-age=2", "ETag": '"e1"'}


def test_without_a_local_refresh_the_function_headers_pass_through():
    server = LeaderboardServer(read_api("public, max-age=60"))
    try:
        _, headers, _ = server.respond("GET", "/leaderboard", {"Host": "127.0.0.1"})
    finally:
        server.stop()
    assert headers["Cache-Control"] == "public, max-age=60"
