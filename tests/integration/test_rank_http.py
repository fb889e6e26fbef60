"""GET /rank through the real read API handler on moto, with the pipeline's own snapshot and ranked version."""

from __future__ import annotations

import copy
import random
from urllib.parse import quote

import pytest

from shardboard.domain.writing.recording import record_views
from tests.conftest import load_event
from tests.integration.test_http_api import call
from tests.integration.test_items_http import scan, with_query

COUNTS = {"images/001.jpg": 9, "a?b": 7, "images/004.jpg": 7, "x,y": 5, "d": 3, "e": 3, "f": 2, "g": 1}


def rank_event(query: str) -> dict:
    return with_query(copy.deepcopy(load_event("read_rank_get.json")), query)


@pytest.fixture
def ranked(make_pipeline):
    """A board of N = 2 with ranked versions to D = 5, one snapshot run after the views."""
    pipeline = make_pipeline(TopN="2", RankDepth="5", SnapshotSpare="0", BoardShards="2", WriteShards="2")
    rng = random.Random(3)
    for item, count in COUNTS.items():
        where = pipeline.where()
        record_views(pipeline.views, item, count, pipeline.settings.write_shards, rng, where=where)
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    return pipeline


def ids(*items: str) -> str:
    return "&".join(f"id={quote(item, safe='')}" for item in items)


def test_the_sample_event_ranks_two_ids_from_the_snapshot_and_the_ranked_version(ranked):
    status, _, body = call(ranked, "read_api", load_event("read_rank_get.json"))
    assert status == 200
    assert body["board"] == "global" and body["period"] == {"kind": "all"}
    first, fourth = body["ranks"]
    assert (first["id"], first["rank"], first["source"], first["views"]) == ("images/001.jpg", 1, "snapshot", 9)
    # "a?b" and images/004.jpg tie at 7 (rank 2); the second of them in board order is past N = 2
    assert (fourth["id"], fourth["rank"], fourth["source"], fourth["views"]) == ("images/004.jpg", 2, "ranked", 7)
    # The version is full (D = 5 of 8 items): of is modelled, and one page gives no tail to fit, so it says D
    assert first["of"] == 5 and first["of_exact"] is False


def test_ids_with_query_characters_ties_and_past_the_depth(ranked):
    status, _, body = call(ranked, "read_api", rank_event(ids("a?b", "x,y", "d", "e", "g", "never")))
    assert status == 200
    answers = {answer["id"]: answer for answer in body["ranks"]}
    assert [answer["id"] for answer in body["ranks"]] == ["a?b", "x,y", "d", "e", "g", "never"]
    assert answers["a?b"]["rank"] == 2 and answers["x,y"]["rank"] == 4
    # "d" and "e" tie at D: "d" is the D-th entry (rank 5); "e" is past the version, so its rank is null and
    # approximate, but the model gives the tie's rank
    assert answers["d"]["rank"] == 5
    assert answers["e"]["rank"] is None and answers["e"]["approximate_rank"] == 5 and answers["e"]["beyond"] == 5
    # Past D: rank null, D named, the model labelled approximate
    assert answers["g"]["rank"] is None and answers["g"]["beyond"] == 5 and answers["g"]["approximate"] is True
    assert answers["g"]["approximate_rank"] > 5 and answers["g"]["views"] == 1
    assert answers["never"]["rank"] is None and answers["never"]["source"] == "none"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "missing query parameter: id"),
        ("board=global", "missing query parameter: id"),
        ("id=", "id must not be empty"),
        ("id=a%00b", "id"),
        ("id=%ff", "malformed"),
        ("id", "malformed"),
        ("id=a&&id=b", "malformed"),
        (ids(*(f"i{n}" for n in range(101))), "at most 100 ids"),
        ("id=a&board=global&board=global", "board given 2 times"),
        ("id=a&period=all&period=day", "period given 2 times"),
        ("id=a&at=2026-01-01&at=2026-01-02", "at given 2 times"),
        ("id=a&period=fortnight", "period"),
        ("id=a&at=yesterday", "at"),
        ("id=a&board=bad%23name", "board"),
    ],
)
def test_bad_queries_get_400_and_write_nothing(ranked, query, message):
    before = {table: scan(ranked, table) for table in (ranked.settings.views_table, ranked.settings.board_table)}
    status, _, body = call(ranked, "read_api", rank_event(query))
    assert status == 400 and body["code"] == "bad_request" and message in body["message"]
    assert {table: scan(ranked, table) for table in before} == before


def test_an_unknown_board_or_a_period_without_views_gets_404(ranked):
    for query in (f"{ids('a')}&board=nosuch", f"{ids('a')}&period=day&at=2020-01-01"):
        status, _, body = call(ranked, "read_api", rank_event(query))
        assert status == 404 and body["code"] == "not_found"
