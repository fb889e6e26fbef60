"""Reads that contradicted each other, found on `shardboard local` (the real read API and items admin handlers on
moto, with the pipeline's own snapshot job):

- an item hidden (or deleted) once its ranked version was older than RankRefreshSeconds left that version at the
  next snapshot run, and GET /rank then answered it `"source": "beyond", "approximate_rank": 4, "of": 4`, GET /around
  "past the depth", instead of hidden (deleted);
- a ranked version gathered when the board held fewer items than the head shows now gave `of` below the head's
  ranks: `"rank": 3, "of": 2, "of_exact": true`, and a rank-2 item "percentile 100".
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from urllib.parse import quote

import pytest

from shardboard.domain.ports import PeriodKey
from tests.integration.test_http_api import call, get
from tests.integration.test_pages_http import around_event, leaderboard_event
from tests.integration.test_rank_http import ids, rank_event
from tests.integration.test_takedowns_http import drain, record, takedown

ALL_TIME = PeriodKey("global", "all", "all")
# A day between ranked versions: the tests age a version themselves, so no test waits or races the clock.
REFRESH = 86_400


def ranks(pipeline, *items: str) -> dict[str, dict]:
    status, _, body = call(pipeline, "read_api", rank_event(ids(*items)))
    assert status == 200, body
    return {answer["id"]: answer for answer in body["ranks"]}


def around_of(pipeline, item: str, k: int = 1) -> tuple[int, dict]:
    status, _, body = call(pipeline, "read_api", around_event(f"id={quote(item, safe='')}&k={k}"))
    return status, body


def board_shows(pipeline) -> list[tuple[int, str]]:
    status, _, body = call(pipeline, "read_api", get("/leaderboard"))
    assert status == 200, body
    return [(entry["rank"], entry["id"]) for entry in body["items"]]


def page(pipeline, query: str) -> list[tuple[int, str]]:
    status, _, body = call(pipeline, "read_api", leaderboard_event(query))
    assert status == 200, body
    return [(entry["rank"], entry["id"]) for entry in body["items"]]


def age_ranked_version(pipeline, seconds: int) -> None:
    """Make the head's ranked version ``seconds`` older, as if gathered then (so the next run's is due)."""
    head = pipeline.board.get_snapshot(ALL_TIME, consistent=True)
    gathered = datetime.fromisoformat(head.rank.generated_at) - timedelta(seconds=seconds)
    rank = dataclasses.replace(head.rank, generated_at=gathered.isoformat())
    aged = dataclasses.replace(head, version=head.version + 1, rank=rank)
    assert pipeline.board.put_snapshot(aged, head.version)


@pytest.fixture
def deep(make_pipeline):
    """N = 2, no spares, D = 4: a (9), b (7) on the board, c (5) and d (3) in the ranked version only, e (1) past D."""
    pipeline = make_pipeline(TopN="2", RankDepth="4", SnapshotSpare="0", RankRefreshSeconds=str(REFRESH))
    record(pipeline, {"a": 9, "b": 7, "c": 5, "d": 3, "e": 1})
    drain(pipeline)
    pipeline.snapshot()
    return pipeline


@pytest.mark.parametrize(("operation", "status"), [("hide", "hidden"), ("delete", "deleted")])
def test_an_item_taken_down_after_its_version_aged_answers_so_once_a_new_version_leaves_it_out(deep, operation, status):
    before = ranks(deep, "d", "e")
    assert (before["d"]["rank"], before["d"]["source"]) == (4, "ranked")
    assert (before["e"]["source"], before["e"]["approximate_rank"]) == ("beyond", 5)
    # Given a ranked version older than RankRefreshSeconds
    age_ranked_version(deep, 2 * REFRESH)
    # When d (in the version) and e (past D) are taken down, and the snapshot job runs: a new version is due, and
    # its gather leaves both out (so no event of the old version speaks for them any more)
    for item in ("d", "e"):
        code, _, body = call(deep, "items_admin", takedown(operation, f"id={item}"))
        assert code == 200, body
    deep.snapshot()
    head = deep.board.get_snapshot(ALL_TIME, consistent=True)
    assert head.rank.events == () and head.rank.count == 3
    # Then GET /rank says hidden (deleted) for both, with no rank, percentile or model rank: not "beyond", 4 of 4
    after = ranks(deep, "d", "e", "c")
    for item in ("d", "e"):
        answer = after[item]
        assert (answer["rank"], answer["percentile"], answer["source"]) == (None, None, status), answer
        assert "approximate_rank" not in answer and answer["approximate"] is False
    # (a hidden item's views go on counting and are told; a deleted item's are erased)
    assert after["d"]["views"] == (3 if status == "hidden" else 0)
    # And GET /around of each is a 404 that says so, not "past the depth"
    for item in ("d", "e"):
        code, body = around_of(deep, item)
        assert code == 404 and f"is {status}" in body["message"], body
    # And the board, the pages and the others' ranks agree: three items left, c third of three
    assert board_shows(deep) == [(1, "a"), (2, "b")]
    assert page(deep, "offset=0&limit=4") == [(1, "a"), (2, "b"), (3, "c")]
    assert (after["c"]["rank"], after["c"]["of"], after["c"]["of_exact"]) == (3, 3, True)


def test_of_is_never_below_a_rank_and_agrees_with_the_head_when_the_version_is_older(make_pipeline):
    # Given a ranked version gathered when the board held one item (D = 10 > N = 5: the version is not due again)
    pipeline = make_pipeline(TopN="5", RankDepth="10", SnapshotSpare="0", RankRefreshSeconds=str(REFRESH))
    record(pipeline, {"a": 3})
    drain(pipeline)
    pipeline.snapshot()
    # When two more items get views and the snapshot job runs again (the head is refreshed, the version kept)
    record(pipeline, {"b": 2, "c": 1}, seed=8)
    drain(pipeline)
    pipeline.snapshot()
    head = pipeline.board.get_snapshot(ALL_TIME, consistent=True)
    assert head.rank.count == 1 and board_shows(pipeline) == [(1, "a"), (2, "b"), (3, "c")]
    # Then GET /rank counts the board the head shows: rank 3 of 3 (not of 1), exactly, and the percentiles follow
    answers = ranks(pipeline, "a", "b", "c")
    assert [(answers[i]["rank"], answers[i]["of"], answers[i]["of_exact"]) for i in "abc"] == [
        (1, 3, True),
        (2, 3, True),
        (3, 3, True),
    ]
    assert [answers[i]["percentile"] for i in "abc"] == [100.0, 66.6667, 33.3333]  # not 100 for rank 2
    # And GET /around of each gives the rank GET /rank and the board give it
    for rank, item in board_shows(pipeline):
        code, body = around_of(pipeline, item)
        assert code == 200, body
        assert next(entry["rank"] for entry in body["items"] if entry["id"] == item) == rank
