"""Hide and unhide (issue 13 slice 6) through the real handlers on moto, with API Gateway events built from the
events/ samples: POST /item/hide and /item/unhide, every 400 and 404 (nothing written), and hides while views
arrive and batches are replayed."""

from __future__ import annotations

import copy
import random
import threading
from urllib.parse import quote

import pytest

from shardboard.adapters.keys import SK
from shardboard.domain.writing.recording import record_views
from shardboard_tools.operations.verification import verify
from tests.conftest import load_event
from tests.integration.test_http_api import call, get
from tests.integration.test_items_http import ODD_IDS, QUESTION_IDS, with_query, written

SAMPLE_ID = "images/004.jpg"  # the id the samples name
OTHERS = {"a": 9, "b": 7, "c": 5, "d": 3, "e": 2}


def takedown(op: str, query: str) -> dict:
    return with_query(copy.deepcopy(load_event(f"items_admin_{op}.json")), query)


def record(pipeline, counts: dict[str, int], seed: int = 7) -> None:
    rng = random.Random(seed)
    for item, count in counts.items():
        record_views(pipeline.views, item, count, pipeline.settings.write_shards, rng, where=pipeline.where())


def drain(pipeline) -> None:
    pipeline.aggregate(pipeline.stream_records())


def shown(pipeline, period: str = "all") -> list[list]:
    status, _, body = call(pipeline, "read_api", get("/leaderboard", f"period={period}"))
    assert status == 200
    return [[entry["id"], entry["views"]] for entry in body["items"]]


def audit_rows(pipeline, item_id: str) -> list[dict]:
    return [
        row
        for row in written(pipeline)[pipeline.settings.items_table]
        if row[SK]["S"].startswith("audit#") and row["item_id"]["S"] == item_id
    ]


@pytest.fixture
def board(make_pipeline):
    """N = 3 with 2 spares; the sample's item leads with 10 views, five others follow; snapshots taken."""
    pipeline = make_pipeline(TopN="3", SnapshotSpare="2")
    record(pipeline, {SAMPLE_ID: 10, **OTHERS})
    drain(pipeline)
    pipeline.snapshot()
    assert shown(pipeline)[0] == [SAMPLE_ID, 10]
    return pipeline


def test_the_hide_sample_patches_every_board_and_the_unhide_sample_restores_it(board):
    # When the hide sample arrives
    status, _, body = call(board, "items_admin", load_event("items_admin_hide.json"))
    # Then every head that held the item (all time, this day, week and month) was patched in place and refilled to
    # a full N
    assert status == 200
    assert body == {"id": SAMPLE_ID, "status": "hidden", "changed": True, "patched": 4, "refreshed": 0}
    assert shown(board) == shown(board, "day") == [["a", 9], ["b", 7], ["c", 5]]
    # And the audit row says who and why
    (row,) = audit_rows(board, SAMPLE_ID)
    assert (row["op"]["S"], row["by"]["S"]) == ("hide", "arn:aws:iam::123456789012:user/editor")
    assert row["reason"]["S"] == "copyright claim #12"
    # When views of it go on and the job runs
    record(board, {SAMPLE_ID: 4}, seed=8)
    drain(board)
    board.snapshot()
    # Then it stays off every board, and keeps counting
    assert SAMPLE_ID not in [entry[0] for entry in shown(board) + shown(board, "day")]
    assert board.board.aggregate_views(SAMPLE_ID) == 14
    # When the unhide sample arrives, it is back at once with its exact count
    status, _, body = call(board, "items_admin", load_event("items_admin_unhide.json"))
    assert status == 200 and body["status"] == "visible" and body["refreshed"] == 4
    assert shown(board) == shown(board, "week") == [[SAMPLE_ID, 14], ["a", 9], ["b", 7]]
    assert [row["op"]["S"] for row in audit_rows(board, SAMPLE_ID)].count("unhide") == 1


def test_a_repeated_hide_changes_nothing_and_writes_no_audit_row(board):
    call(board, "items_admin", load_event("items_admin_hide.json"))
    status, _, body = call(board, "items_admin", load_event("items_admin_hide.json"))
    assert status == 200 and body["changed"] is False and body["patched"] == 0
    assert len(audit_rows(board, SAMPLE_ID)) == 1


def test_a_hide_past_the_spares_gathers_the_board_again(board):
    # Given the spares used up by two hides
    for item in (SAMPLE_ID, "a"):
        assert call(board, "items_admin", takedown("hide", f"id={quote(item, safe='')}"))[0] == 200
    # When a third top item is hidden (2 spares, N = 3: too few left to refill)
    status, _, body = call(board, "items_admin", takedown("hide", "id=b"))
    # Then the board is gathered again at once, still full and exact
    assert status == 200 and body["refreshed"] == 4
    assert shown(board) == shown(board, "month") == [["c", 5], ["d", 3], ["e", 2]]


@pytest.mark.parametrize("item", [*ODD_IDS, *QUESTION_IDS])
def test_odd_ids_are_hidden_and_unhidden_in_the_query_form(make_pipeline, item):
    pipeline = make_pipeline(TopN="2", SnapshotSpare="1")
    record(pipeline, {item: 5, "z": 1, "y": 1})
    drain(pipeline)
    pipeline.snapshot()
    status, _, body = call(pipeline, "items_admin", takedown("hide", f"id={quote(item, safe='')}"))
    assert (status, body["id"]) == (200, item)
    assert shown(pipeline) == [["y", 1], ["z", 1]]
    status, _, _ = call(pipeline, "items_admin", takedown("unhide", f"id={quote(item, safe='')}"))
    assert status == 200 and shown(pipeline)[0] == [item, 5]


@pytest.mark.parametrize(
    ("op", "query", "message"),
    [
        ("hide", "", "missing query parameter: id"),
        ("hide", "reason=x", "missing query parameter: id"),
        ("hide", "id=a&id=b", "given 2 times"),
        ("hide", "id=", "id must not be empty"),
        ("hide", "id=a%0Ab", "id contains a control character"),
        ("hide", "id=a&reason=" + "x" * 501, "reason must be at most 500"),
        ("hide", "id=a&reason=bad%0Aline", "reason must be at most 500 printable"),
        ("hide", "id=a&reason=1&reason=2", "given 2 times"),
        ("hide", "id=a&&", "malformed"),
        ("hide", "id=%FF", "malformed"),
        ("unhide", "", "missing query parameter: id"),
        ("unhide", "id=a&id=a", "given 2 times"),
        ("unhide", "id=a&reason=" + "x" * 501, "reason must be at most 500"),
    ],
)
def test_bad_input_is_a_400_that_writes_nothing(board, op, query, message):
    before = written(board)
    status, _, body = call(board, "items_admin", takedown(op, query))
    assert status == 400 and body["code"] == "bad_request"
    assert message in body["message"]
    assert written(board) == before


@pytest.mark.parametrize(("op", "query"), [("hide", "id=never-seen"), ("unhide", "id=never-seen")])
def test_nothing_to_take_down_is_a_404_that_writes_nothing(board, op, query):
    before = written(board)
    status, _, body = call(board, "items_admin", takedown(op, query))
    assert status == 404 and body["code"] == "not_found"
    assert written(board) == before


def test_an_unhide_of_a_visible_item_changes_nothing_and_checks_its_heads(board):
    # (what finishes an unhide cut short after its transaction: tests/unit/test_takedowns.py)
    status, _, body = call(board, "items_admin", takedown("unhide", "id=a"))
    assert status == 200
    assert (body["status"], body["changed"]) == ("visible", False)


def test_hides_while_views_arrive_and_batches_are_replayed_keep_counts_exact(make_pipeline):
    # Given a board of 3 with 2 spares and twelve items, views flowing from another thread
    pipeline = make_pipeline(TopN="3", SnapshotSpare="2", WriteShards="4")
    rng = random.Random(5)
    counts = {f"i{n}": 3 + 2 * n for n in range(12)}
    record(pipeline, counts)
    drain(pipeline)
    pipeline.snapshot()
    more = {f"i{rng.randrange(12)}": rng.randrange(1, 4) for _ in range(30)}
    writer = threading.Thread(target=record, args=(pipeline, more, 9))
    # When the top three are hidden and one unhidden while the writer runs
    writer.start()
    for item in ("i11", "i10", "i9"):
        assert call(pipeline, "items_admin", takedown("hide", f"id={item}"))[0] == 200
    assert call(pipeline, "items_admin", takedown("unhide", "id=i10"))[0] == 200
    writer.join()
    # And the stream is delivered twice over in uneven batches (duplicates and re-splits), then the job runs
    records = pipeline.stream_records()
    for start in range(0, len(records), 7):
        pipeline.aggregate(records[start : start + 7])
    for start in range(0, len(records), 11):
        pipeline.aggregate(records[start : start + 11])
    pipeline.snapshot()
    # Then every count is exact, hidden items included, and each board is the full top 3 of the visible
    truth = pipeline.truth()
    assert {item: views for item, (views, _) in pipeline.board.scan_aggregates().items()} == truth
    visible = sorted(((i, v) for i, v in truth.items() if i not in {"i11", "i9"}), key=lambda p: (-p[1], p[0]))
    assert shown(pipeline) == shown(pipeline, "day") == [[i, v] for i, v in visible[:3]]
    # And verify, told the hidden ids, finds every count and every snapshot exact (without them, it would not)
    report = verify(pipeline.views, pipeline.board, pipeline.settings, pipeline.runtime.items.hidden())
    assert report.exact and report.snapshots_inexact == [] and report.hidden == 2
    assert verify(pipeline.views, pipeline.board, pipeline.settings).snapshots_inexact != []
