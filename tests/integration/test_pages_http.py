"""GET /leaderboard?offset=&cursor= and GET /around through the real read API handler on moto, with the
pipeline's own snapshot and ranked version; every refusal writes nothing."""

from __future__ import annotations

import copy
import random
import threading
import time

import pytest

from shardboard.domain.ports import PeriodKey
from shardboard.domain.writing.recording import record_views
from tests.conftest import load_event
from tests.integration.test_http_api import call
from tests.integration.test_items_http import with_query, written
from tests.integration.test_rank_http import ranked  # noqa: F401 - the fixture

PERIOD = PeriodKey("global", "all", "all")
# COUNTS of test_rank_http in board order, D = 5: 001 (9), 004 and a?b tie (7; ids ascending), x,y (5), d (3)
ORDER = [("images/001.jpg", 1), ("a?b", 2), ("images/004.jpg", 2), ("x,y", 4), ("d", 5)]


def leaderboard_event(query: str) -> dict:
    return with_query(copy.deepcopy(load_event("read_leaderboard_get.json")), query)


def around_event(query: str) -> dict:
    return with_query(copy.deepcopy(load_event("read_around_get.json")), query)


def test_today_answer_carries_a_walk_and_the_walk_reads_the_whole_version(ranked):  # noqa: F811
    status, _, body = call(ranked, "read_api", leaderboard_event(""))
    assert status == 200 and len(body["items"]) == 2 and body["walk"]
    seen = []
    cursor = body["walk"]
    status, _, page = call(ranked, "read_api", leaderboard_event(f"cursor={cursor}&limit=2"))
    while True:
        assert status == 200, page
        seen += [(entry["id"], entry["rank"]) for entry in page["items"]]
        if "cursor" not in page:
            break
        status, _, page = call(ranked, "read_api", leaderboard_event(f"cursor={page['cursor']}"))
    assert seen == ORDER


def test_an_offset_page_with_exact_ranks(ranked):  # noqa: F811
    status, _, body = call(ranked, "read_api", leaderboard_event("offset=2&limit=3"))
    assert status == 200 and body["offset"] == 2 and body["rv"]
    assert [(entry["id"], entry["rank"]) for entry in body["items"]] == ORDER[2:]
    assert "cursor" not in body


def test_the_sample_around_event(ranked):  # noqa: F811
    status, _, body = call(ranked, "read_api", load_event("read_around_get.json"))
    assert status == 200, body
    assert (body["position"], body["above"], body["below"], body["source"]) == (3, 2, 2, "ranked")
    assert [(entry["id"], entry["rank"]) for entry in body["items"]] == ORDER


def test_around_in_the_head_and_padded_at_the_top(ranked):  # noqa: F811
    status, _, body = call(ranked, "read_api", around_event("id=images%2F001.jpg&k=1"))
    assert status == 200 and (body["above"], body["below"]) == (0, 2)
    assert [entry["id"] for entry in body["items"]] == ["images/001.jpg", "a?b", "images/004.jpg"]


@pytest.mark.parametrize(
    ("event", "query", "message"),
    [
        ("leaderboard", "offset=-1", "offset must be a whole number"),
        ("leaderboard", "offset=5", "offset must be from 0 to 4"),
        ("leaderboard", "offset=4&limit=2", "offset + limit must be at most the depth 5"),
        ("leaderboard", "offset=0&limit=0", "limit must be from 1"),
        ("leaderboard", "offset=0&limit=101", "limit must be from 1 to 100"),
        ("leaderboard", "offset=1&offset=2", "offset"),
        ("leaderboard", "cursor=abc", "cursor is malformed"),
        ("leaderboard", "cursor=e30", "cursor is malformed"),
        ("leaderboard", "cursor=%2B%2B", "cursor is malformed"),
        ("leaderboard", "cursor=e30&offset=1", "give offset or cursor, not both"),
        ("around", "", "missing query parameter: id"),
        ("around", "id=a&id=b", "id given 2 times"),
        ("around", "id=a&k=0", "k must be from 1 to 50"),
        ("around", "id=a&k=51", "k must be from 1 to 50"),
        ("around", "id=a&k=x", "k must be a whole number"),
        ("around", "id=a&k=1&k=2", "k given 2 times"),
    ],
)
def test_bad_pages_and_around_are_refused_and_write_nothing(ranked, event, query, message):  # noqa: F811
    before = written(ranked)
    make = leaderboard_event if event == "leaderboard" else around_event
    status, _, body = call(ranked, "read_api", make(query))
    assert status == 400, body
    assert message in body["message"] and body["code"] == "bad_request"
    assert written(ranked) == before


def test_tampered_and_wrong_period_cursors_are_refused(ranked):  # noqa: F811
    _, _, body = call(ranked, "read_api", leaderboard_event(""))
    walk = body["walk"]
    status, _, refused = call(ranked, "read_api", leaderboard_event(f"cursor={walk}&board=other"))
    assert status == 400 and "another board or period" in refused["message"]
    tampered = walk[:-2] + ("AA" if walk[-2:] != "AA" else "BB")
    status, _, refused = call(ranked, "read_api", leaderboard_event(f"cursor={tampered}"))
    assert status == 400 and ("malformed" in refused["message"] or "expired" in refused["message"])


def test_around_past_the_depth_is_a_404_with_the_reason(ranked):  # noqa: F811
    status, _, body = call(ranked, "read_api", around_event("id=g"))
    assert status == 404 and "not in the top 5" in body["message"] and body["code"] == "not_found"


def test_a_walk_under_concurrent_views_and_new_versions_has_no_duplicate_and_no_gap(make_pipeline):
    # Given 12 items ranked to D = 12, pages of 3, new versions at most every second
    pipeline = make_pipeline(TopN="2", RankDepth="12", PageSize="3", RankRefreshSeconds="1", BoardShards="2")
    rng = random.Random(5)
    for n in range(12):
        record_views(pipeline.views, f"i{n:02}", 1 + n % 4, pipeline.settings.write_shards, rng, where=pipeline.where())
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    _, _, today = call(pipeline, "read_api", leaderboard_event(""))
    # The version the walk pins, read by offsets before any new view
    pinned = []
    for offset in (0, 3, 6, 9):
        _, _, page = call(pipeline, "read_api", leaderboard_event(f"offset={offset}&limit=3"))
        pinned += [(entry["rank"], entry["id"], entry["views"]) for entry in page["items"]]
    versions = {page["rv"]}
    stop = threading.Event()
    lock = threading.Lock()  # moto is not thread-safe: calls are serialised, the interleaving is the threads'

    def views_arrive() -> None:  # a writer thread: views, the aggregator and the snapshot job, again and again
        while not stop.is_set():
            with lock:
                item = f"i{rng.randrange(12):02}"
                record_views(pipeline.views, item, 2, pipeline.settings.write_shards, rng, where=pipeline.where())
                pipeline.aggregate(pipeline.stream_records())
                pipeline.snapshot()
                versions.add(pipeline.board.get_snapshot(PERIOD).rank.rv)
            time.sleep(0.2)

    writer = threading.Thread(target=views_arrive)
    writer.start()
    try:
        # When the walk goes page by page, each page waiting for a new version to be written first
        seen, cursor = [], today["walk"]
        while cursor:
            written = len(versions)
            deadline = time.monotonic() + 30
            while len(versions) == written and time.monotonic() < deadline:
                time.sleep(0.05)
            with lock:
                status, _, page = call(pipeline, "read_api", leaderboard_event(f"cursor={cursor}"))
            assert status == 200, page
            seen += [(entry["rank"], entry["id"], entry["views"]) for entry in page["items"]]
            cursor = page.get("cursor")
    finally:
        stop.set()
        writer.join()
    # Then the walk is the version it pinned, every entry once, while four newer versions were written
    assert len(versions) >= 5
    assert seen == pinned and len({entry[1] for entry in seen}) == 12
