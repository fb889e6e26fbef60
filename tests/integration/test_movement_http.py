"""Movement through the real functions on moto: GET /leaderboard's entries carry ``previous_rank`` (their rank in the
snapshot before), a hide leaves the others' as they were; a page of the ranked version shows none."""

from __future__ import annotations

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
