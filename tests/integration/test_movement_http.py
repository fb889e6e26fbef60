"""Movement through the real functions on moto: GET /leaderboard's entries carry ``previous_rank`` (their rank in the
snapshot before), a hide leaves the others' as they were; a page of the ranked version shows none. Their
``day_before_rank`` (their rank in the first head of the same hour a day before) in top, pages and around-me."""

from __future__ import annotations

from shardboard.domain.periods import ALL
from shardboard.domain.ports import PeriodKey
from shardboard.services.snapshots import take_snapshot
from tests.integration.test_http_api import call, get
from tests.integration.test_takedowns_http import drain, record, takedown


def entries(pipeline, query: str = "") -> list[tuple[str, int, int | None]]:
    status, _, body = call(pipeline, "read_api", get("/leaderboard", query))
    assert status == 200, body
    return [(entry["id"], entry["rank"], entry["previous_rank"]) for entry in body["items"]]


def test_entries_show_where_they_stood_in_the_snapshot_before(make_pipeline):
    # Given a first snapshot: every entry is new
    pipeline = make_pipeline(TopN="3", SnapshotSpare="2")
    record(pipeline, {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1})
    drain(pipeline)
    pipeline.snapshot()
    assert entries(pipeline) == [("a", 1, None), ("b", 2, None), ("c", 3, None)]
    # When d climbs to the top, f arrives, and the job publishes the changed board
    record(pipeline, {"d": 10, "f": 4}, seed=8)
    drain(pipeline)
    pipeline.snapshot()
    # Then each entry shows its rank before: d was 4th (a spare), b stays tied with f (new)
    assert entries(pipeline) == [("d", 1, 4), ("a", 2, 1), ("b", 3, 2), ("f", 3, None)][:3]
    # And a refresh that changes nothing keeps the movement it showed (the head is not written again)
    pipeline.snapshot()
    assert entries(pipeline)[0] == ("d", 1, 4)
    # When a is hidden, the head is patched: the others keep their previous ranks, c comes back from the spares
    status, _, _ = call(pipeline, "items_admin", takedown("hide", "id=a"))
    assert status == 200
    assert entries(pipeline) == [("d", 1, 4), ("b", 2, 2), ("f", 2, None)]
    # And a page from the ranked version (gathered at its own times, before these moves) shows none
    assert entries(pipeline, "offset=1&limit=2") == [("c", 2, None), ("d", 3, None)]


def day_before(pipeline, path: str, query: str) -> list[tuple[str, int, int | None]]:
    status, _, body = call(pipeline, "read_api", get(path, query))
    assert status == 200, body
    return [(entry["id"], entry["rank"], entry["day_before_rank"]) for entry in body["items"]]


def test_entries_show_where_they_stood_a_day_before_in_top_pages_and_around_me(make_pipeline):
    # Given a board whose head is the whole ranking (D = N: pages and around-me come from the head), snapshotted by
    # the job at a simulated time: the first head of that hour is its checkpoint
    pipeline = make_pipeline(TopN="3", SnapshotSpare="1", RankDepth="3")
    everything = PeriodKey(pipeline.settings.board, ALL, ALL)
    record(pipeline, {"a": 5, "b": 4, "c": 3, "d": 2})
    drain(pipeline)
    take_snapshot(pipeline.board, pipeline.settings, "2026-11-20T10:15:00.000Z", everything)
    assert day_before(pipeline, "/leaderboard", "") == [("a", 1, None), ("b", 2, None), ("c", 3, None)]
    # When c climbs to the top and the job publishes the board a day and twenty minutes later
    record(pipeline, {"c": 10}, seed=8)
    drain(pipeline)
    take_snapshot(pipeline.board, pipeline.settings, "2026-11-21T10:35:00.000Z", everything)
    # Then every entry shows its rank in the first head of 10:00-11:00 the day before: top, a page, around-me
    assert day_before(pipeline, "/leaderboard", "") == [("c", 1, 3), ("a", 2, 1), ("b", 3, 2)]
    assert day_before(pipeline, "/leaderboard", "offset=1&limit=2") == [("a", 2, 1), ("b", 3, 2)]
    assert day_before(pipeline, "/around", "id=a&k=1") == [("c", 1, 3), ("a", 2, 1), ("b", 3, 2)]
    # When b is hidden, the patched head refills d from its spares with its rank then (a spare's, 4th)
    status, _, _ = call(pipeline, "items_admin", takedown("hide", "id=b"))
    assert status == 200
    assert day_before(pipeline, "/leaderboard", "") == [("c", 1, 3), ("a", 2, 1), ("d", 3, 4)]
    # And a head of the next hour reads that hour's checkpoint a day before: none was written then
    record(pipeline, {"e": 20}, seed=9)
    drain(pipeline)
    take_snapshot(pipeline.board, pipeline.settings, "2026-11-21T11:05:00.000Z", everything)
    assert day_before(pipeline, "/leaderboard", "") == [("e", 1, None), ("c", 2, None), ("a", 3, None)]
