"""A calendar period's board exists from its first second (issue 35): at the turn of an hour, before the snapshot
job's first run in it, ``GET /leaderboard?period=hour`` answers the new hour's board, empty as of its start, not a
404. The read's clock is fixed: the turn is a moment, not a race."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shardboard.domain.clock import FixedClock
from shardboard.domain.periods import iso, start_of
from tests.integration.test_http_api import call, get
from tests.integration.test_takedowns_http import drain, record


def test_a_new_hour_answers_its_empty_board_until_the_job_fills_it(make_pipeline):
    # Given views this hour, and the snapshot job's heads of it (the functions' one clock, set by the test)
    hour = start_of("hour", datetime.now(UTC) - timedelta(hours=2))
    now = [hour + timedelta(minutes=30)]
    pipeline = make_pipeline(Periods="hour,day", TopN="3", clock=lambda: now[0])
    record(pipeline, {"a": 5, "b": 4})
    drain(pipeline)
    pipeline.snapshot()
    # When the clock is one second into the next hour (the job has not run in it)
    turn = hour + timedelta(hours=1)
    now[0] = turn + timedelta(seconds=1)
    status, _, body = call(pipeline, "read_api", get("/leaderboard", "period=hour"))
    # Then the new hour's board answers: empty, as of its start, its period named
    assert status == 200, body
    assert body["items"] == []
    assert body["period"] == {"kind": "hour", "start": iso(turn), "end": iso(turn + timedelta(hours=1))}
    assert body["generated_at"] == turn.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    # And the hour before still answers its own board
    status, _, body = call(pipeline, "read_api", get("/leaderboard", f"period=hour&at={iso(hour)}"))
    assert status == 200 and [e["id"] for e in body["items"]] == ["a", "b"]


def test_a_board_without_views_and_a_past_period_without_a_head_stay_not_found(make_pipeline):
    clock = FixedClock(start_of("hour", datetime.now(UTC) - timedelta(hours=2)) + timedelta(seconds=1))
    pipeline = make_pipeline(Periods="hour,day", TopN="3", clock=clock)
    # A board nobody viewed: no board, not an empty one
    status, _, body = call(pipeline, "read_api", get("/leaderboard", "period=hour"))
    assert status == 404 and "has no views" in body["message"]
    # A board with views: a past hour without a head is not invented
    record(pipeline, {"a": 1})
    drain(pipeline)
    pipeline.snapshot()
    status, _, body = call(pipeline, "read_api", get("/leaderboard", "period=hour&at=2020-01-01T05:00:00Z"))
    assert status == 404 and "has no views" in body["message"]


def test_the_same_url_across_a_turn_is_never_answered_304_with_the_old_hour(make_pipeline):
    # Given an hour's head at version 1, read by ?period=hour, and its ETag
    hour = start_of("hour", datetime.now(UTC) - timedelta(hours=3))
    now = [hour + timedelta(minutes=30)]
    pipeline = make_pipeline(Periods="hour,day", TopN="3", clock=lambda: now[0])
    record(pipeline, {"a": 2})
    drain(pipeline)
    pipeline.snapshot()
    _, before, _ = call(pipeline, "read_api", get("/leaderboard", "period=hour"))
    # When the next hour's head is written at the same version, and the same URL is revalidated with that ETag
    now[0] = hour + timedelta(hours=1, minutes=30)
    record(pipeline, {"b": 1})
    drain(pipeline)
    pipeline.snapshot()
    status, after, body = call(
        pipeline, "read_api", get("/leaderboard", "period=hour", headers={"if-none-match": before["etag"]})
    )
    # Then the new hour is answered in full, under another ETag
    assert status == 200 and [e["id"] for e in body["items"]] == ["b"]
    assert after["etag"] != before["etag"]
