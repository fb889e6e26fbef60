"""DELETE /item (issue 13 slice 7) through the real handlers on moto, with API Gateway events built from the events/
samples: the item off every board at once and its counts erased, a repeat that sweeps again, later views refused,
every 400 and 404 writing nothing."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest

from shardboard.adapters.keys import PK
from shardboard.domain.writing.recording import Where, record_views
from shardboard_tools.operations.verification import verify
from tests.conftest import load_event
from tests.integration.test_http_api import call, get, post
from tests.integration.test_items_http import CAT, ODD_IDS, QUESTION_IDS, put_item, written
from tests.integration.test_takedowns_http import (  # noqa: F401 - the fixture
    SAMPLE_ID,
    audit_rows,
    board,
    drain,
    record,
    shown,
    takedown,
)


def holders(pipeline, item_id: str) -> list[str]:
    """Keys of the board table's aggregates and past entries of ``item_id``."""
    return [
        row[PK]["S"]
        for row in written(pipeline)[pipeline.settings.board_table]
        if row.get("item_id", {}).get("S") == item_id and row[PK]["S"].startswith(("item#", "entry#"))
    ]


def test_the_delete_sample_erases_the_item_everywhere_and_later_views_are_refused(board):  # noqa: F811
    # When the delete sample arrives
    status, _, body = call(board, "items_admin", load_event("items_admin_delete.json"))
    # Then every head that held it (all time, this day, week and month) was patched and refilled to a full N, and
    # its aggregate is gone
    assert status == 200
    assert body == {"id": SAMPLE_ID, "status": "deleted", "changed": True, "patched": 4, "refreshed": 0, "erased": 1}
    assert shown(board) == shown(board, "day") == shown(board, "month") == [["a", 9], ["b", 7], ["c", 5]]
    assert holders(board, SAMPLE_ID) == []
    # And the audit row says who and why
    (row,) = audit_rows(board, SAMPLE_ID)
    assert (row["op"]["S"], row["by"]["S"], row["reason"]["S"]) == (
        "delete",
        "arn:aws:iam::123456789012:user/editor",
        "GDPR erasure request #77",
    )
    # When views of it arrive over HTTP, and base counters written before the delete are delivered late
    board.runtime.export_to_handlers()  # a fresh container: the deny sets are cached per container
    status, _, answer = call(board, "record_views", post(json.dumps({"id": SAMPLE_ID, "count": 2})))
    record(board, {SAMPLE_ID: 3}, seed=8)
    drain(board)
    board.snapshot()
    # Then the view is a 404, the late counters are skipped by the aggregator: nothing of it comes back
    assert (status, answer["code"]) == (404, "not_found")
    assert holders(board, SAMPLE_ID) == []
    assert SAMPLE_ID not in [entry[0] for entry in shown(board) + shown(board, "week")]
    # And nothing else moved
    assert {i: v for i, (v, _) in board.board.scan_aggregates().items()} == {"a": 9, "b": 7, "c": 5, "d": 3, "e": 2}
    # And verify, told the deleted ids, finds every count and snapshot exact, its base counters left over (without
    # them, the counters' truth would miss its aggregate)
    items = board.runtime.items
    report = verify(board.views, board.board, board.settings, items.hidden(), items.denied())
    assert report.exact and report.snapshots_inexact == [] and report.snapshots_checked == 4
    assert (report.items, report.deleted) == (5, 1) and report.deleted_leftovers > 0
    assert not verify(board.views, board.board, board.settings).exact


def test_verify_finds_a_sweep_cut_short(board, monkeypatch):  # noqa: F811
    # Given a delete that died before erasing the aggregate (the tombstone and the head patch done)
    def crash(*_):
        raise RuntimeError("the function died mid-sweep")

    monkeypatch.setattr(type(board.board), "erase", crash)
    with pytest.raises(RuntimeError, match="mid-sweep"):
        call(board, "items_admin", load_event("items_admin_delete.json"))
    items = board.runtime.items
    # Then verify says the deleted item still has a count
    report = verify(board.views, board.board, board.settings, items.hidden(), items.denied())
    assert not report.exact and {d.item_id for d in report.differences} == {SAMPLE_ID}
    # When the delete runs again, it is exact
    monkeypatch.undo()
    assert call(board, "items_admin", load_event("items_admin_delete.json"))[2]["erased"] == 1
    assert verify(board.views, board.board, board.settings, items.hidden(), items.denied()).exact


def test_an_entry_past_retention_that_the_sweep_does_not_reach_is_a_leftover_not_a_difference(board):  # noqa: F811
    # Given a late view of the item into a day long past retention (its entry written with a TTL already due)
    old = datetime.now(UTC) - timedelta(days=board.settings.retention("day") + 5)
    where = Where.of(board.settings.anchor, at=old)
    record_views(board.views, SAMPLE_ID, 1, board.settings.write_shards, random.Random(3), where=where)
    drain(board)
    old_day = f"entry#global#day#{old:%Y-%m-%d}#{SAMPLE_ID}"
    assert old_day in holders(board, SAMPLE_ID)
    # When the item is deleted (the sweep covers the retained periods only: that week and month, not that day)
    assert call(board, "items_admin", load_event("items_admin_delete.json"))[0] == 200
    # Then the day's entry stays until its TTL, and verify counts it with the leftovers: nothing reads it
    assert holders(board, SAMPLE_ID) == [old_day]
    items = board.runtime.items
    report = verify(board.views, board.board, board.settings, items.hidden(), items.denied())
    assert report.exact and report.differences == []
    before = verify(board.views, board.board, board.settings, items.hidden(), frozenset())
    assert report.deleted_leftovers > 0 and not before.exact


def test_a_repeated_delete_sweeps_again_and_writes_no_audit_row(board):  # noqa: F811
    call(board, "items_admin", load_event("items_admin_delete.json"))
    status, _, body = call(board, "items_admin", load_event("items_admin_delete.json"))
    assert status == 200
    assert (body["changed"], body["patched"], body["refreshed"], body["erased"]) == (False, 0, 0, 0)
    assert len(audit_rows(board, SAMPLE_ID)) == 1


def test_a_created_item_without_views_and_a_hidden_item_can_be_deleted(board):  # noqa: F811
    assert call(board, "items_admin", put_item("fresh", json.dumps(CAT)))[0] == 200
    status, _, body = call(board, "items_admin", takedown("delete", "id=fresh"))
    assert status == 200 and (body["changed"], body["erased"]) == (True, 0)
    assert call(board, "items_admin", takedown("hide", "id=a"))[0] == 200
    status, _, body = call(board, "items_admin", takedown("delete", "id=a&reason=spam"))
    assert status == 200 and (body["changed"], body["erased"]) == (True, 1)
    assert board.runtime.items.hidden() == frozenset() and board.runtime.items.denied() == {"fresh", "a"}


@pytest.mark.parametrize("item", [*ODD_IDS, *QUESTION_IDS])
def test_odd_ids_are_deleted_in_the_query_form(make_pipeline, item):
    pipeline = make_pipeline(TopN="2", SnapshotSpare="1")
    record(pipeline, {item: 5, "z": 1, "y": 1})
    drain(pipeline)
    pipeline.snapshot()
    status, _, body = call(pipeline, "items_admin", takedown("delete", f"id={quote(item, safe='')}"))
    assert (status, body["id"], body["erased"]) == (200, item, 1)
    assert shown(pipeline) == [["y", 1], ["z", 1]] and holders(pipeline, item) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "missing query parameter: id"),
        ("reason=x", "missing query parameter: id"),
        ("id=a&id=b", "given 2 times"),
        ("id=", "id must not be empty"),
        ("id=a%0Ab", "id contains a control character"),
        ("id=a&reason=" + "x" * 501, "reason must be at most 500"),
        ("id=a&reason=bad%0Aline", "reason must be at most 500 printable"),
        ("id=a&reason=1&reason=2", "given 2 times"),
        ("id=a&&", "malformed"),
        ("id=%FF", "malformed"),
    ],
)
def test_bad_input_is_a_400_that_writes_nothing(board, query, message):  # noqa: F811
    before = written(board)
    status, _, body = call(board, "items_admin", takedown("delete", query))
    assert status == 400 and body["code"] == "bad_request"
    assert message in body["message"]
    assert written(board) == before


def test_an_id_never_created_and_never_viewed_is_a_404_that_writes_nothing(board):  # noqa: F811
    before = written(board)
    status, _, body = call(board, "items_admin", takedown("delete", "id=never-seen"))
    assert status == 404 and body["code"] == "not_found" and "never created" in body["message"]
    assert written(board) == before


def test_a_deleted_item_cannot_be_hidden_unhidden_or_put_and_get_says_deleted(board):  # noqa: F811
    from tests.integration.test_items_http import get_item

    # Given the sample's item put with metadata, then deleted
    assert call(board, "items_admin", put_item(SAMPLE_ID, json.dumps(CAT)))[0] == 200
    assert call(board, "items_admin", takedown("delete", f"id={quote(SAMPLE_ID)}"))[0] == 200
    before = written(board)
    # When it is hidden, unhidden or put again over HTTP
    for event in (
        takedown("hide", f"id={quote(SAMPLE_ID)}"),
        takedown("unhide", f"id={quote(SAMPLE_ID)}"),
        put_item(SAMPLE_ID, json.dumps({"title": "overwritten"})),
    ):
        status, _, answer = call(board, "items_admin", event)
        # Then each is a 404 saying it is deleted, and nothing is written (the kept metadata is the audit's)
        assert (status, answer["code"]) == (404, "not_found"), answer
        assert f"item {SAMPLE_ID!r} is deleted" in answer["message"]
    assert written(board) == before
    # And both reads of the item say it is deleted, and when, with the metadata it had
    for path, event in (("query", get_item(SAMPLE_ID)), ("path", get(f"/items/{SAMPLE_ID}"))):
        status, _, item = call(board, "read_api", event)
        assert status == 200, (path, item)
        assert (item["status"], item["views"], item["meta"]) == ("deleted", 0, CAT)
        assert item["taken_down_at"] >= item["updated_at"]
    # And a hidden item says hidden, a visible one says neither
    assert call(board, "items_admin", takedown("hide", "id=a"))[0] == 200
    assert call(board, "read_api", get_item("a"))[2]["status"] == "hidden"
    assert "status" not in call(board, "read_api", get_item("b"))[2]
