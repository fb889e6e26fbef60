"""Rolling windows through the real functions on moto: ``GET /leaderboard?window=24h`` answers the window's head (the
snapshot job sums the hours), with the same JSON as a period's plus ``window``; what a window cannot answer is a 400."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shardboard.domain.clock import FixedClock
from shardboard.domain.periods import iso, start_of
from tests.integration.test_http_api import call, get
from tests.integration.test_takedowns_http import drain, record, takedown


def test_a_window_reads_the_top_of_its_hours_with_its_span(make_pipeline):
    # Given a stack with a 24 h window and views "this hour", the functions' and the test's one clock fixed (in an
    # hour before the wall clock's: what they call now is the clock's, so no hour turns during the test)
    clock = FixedClock(datetime.now(UTC) - timedelta(hours=2))
    pipeline = make_pipeline(Periods="day,24h", TopN="3", SnapshotSpare="1", clock=clock)
    record(pipeline, {"a": 5, "b": 4, "c": 3, "d": 2})
    drain(pipeline)
    # When the snapshot job runs
    summary = pipeline.snapshot()
    # Then the hours' thresholds proved the window's sum (no scan of the board table: its SumScans metric)
    assert summary["sum_scans"] == 0
    # And the window's top is its hours' sum, best first, with the window named and its span up to this hour's end
    status, _, body = call(pipeline, "read_api", get("/leaderboard", "window=24h"))
    assert status == 200, body
    assert [(e["rank"], e["id"], e["views"], e["previous_rank"]) for e in body["items"]] == [
        (1, "a", 5, None),
        (2, "b", 4, None),
        (3, "c", 3, None),
    ]
    hour = start_of("hour", clock())
    assert body["window"] == "24h"
    assert body["period"] == {
        "kind": "24h",
        "start": iso(hour - timedelta(hours=24)),
        "end": iso(hour + timedelta(hours=1)),
    }
    # And a hide takes the item off the window at once, the spare moving up
    status, _, _ = call(pipeline, "items_admin", takedown("hide", "id=a"))
    assert status == 200
    status, _, body = call(pipeline, "read_api", get("/leaderboard", "window=24h"))
    assert [e["id"] for e in body["items"]] == ["b", "c", "d"]


def test_what_a_window_cannot_answer_is_a_clear_400(make_pipeline):
    pipeline = make_pipeline(Periods="day,24h")
    for query, message in [
        ("window=7d", "window must be one of 24h"),
        ("window=24h&period=day", "as of now"),
        ("window=24h&at=2026-11-01", "as of now"),
        ("window=24h&offset=0", "no pages"),
        ("window=24x", "window must be one of 24h"),
    ]:
        status, _, body = call(pipeline, "read_api", get("/leaderboard", query))
        assert status == 400, (query, body)
        assert message in body["message"], (query, body)


def test_a_window_without_views_is_not_found(make_pipeline):
    pipeline = make_pipeline(Periods="day,24h")
    status, _, body = call(pipeline, "read_api", get("/leaderboard", "window=24h"))
    assert status == 404, body


def test_a_window_on_a_route_without_windows_is_a_400_not_all_time(make_pipeline):
    # Given a stack with a 24 h window and views of "a"
    pipeline = make_pipeline(Periods="day,24h")
    record(pipeline, {"a": 5})
    drain(pipeline)
    pipeline.snapshot()
    # When a route that reads no window is asked for one, or for a parameter no route takes
    for path, query in [
        ("/around", "id=a&window=24h"),
        ("/rank", "id=a&window=24h"),
        ("/item", "id=a&window=24h"),
        ("/items", "window=24h"),
        ("/leaderboard", "windows=24h"),
    ]:
        status, _, body = call(pipeline, "read_api", get(path, query))
        # Then it is a 400 naming the parameter and what the route takes, not an answer for all time
        assert status == 400, (path, body)
        assert "unknown query parameter 'window" in body["message"] and "takes only" in body["message"], body
    # And the same routes without it answer
    assert call(pipeline, "read_api", get("/around", "id=a"))[0] == 200


def test_the_library_refuses_a_window_with_a_period_or_a_time(make_pipeline):
    import boto3
    import pytest

    from shardboard import BadInput, Leaderboard

    pipeline = make_pipeline(Periods="day,24h")
    record(pipeline, {"a": 5})
    drain(pipeline)
    pipeline.snapshot()
    board = Leaderboard(boto3.Session(), settings=pipeline.settings)
    assert [entry.id for entry in board.top(window="24h").items] == ["a"]
    for asked in ({"period": "day"}, {"at": "2026-11-01"}, {"at": datetime.now(UTC)}):
        with pytest.raises(BadInput, match="as of now"):
            board.top(window="24h", **asked)
