"""Ids that cannot impersonate (docs/bad-input.md, "Look-alike ids"): after ``banned.jpg`` and ``café.jpg`` are deleted,
each look-alike that an attack had ranked #1 is refused on every surface (POST /views, PUT /item, the CLI's
``record`` and ``item put``, the library's ``Recorder.record``), and so are the new ids that render as nothing."""

from __future__ import annotations

import json
from urllib.parse import quote

import boto3
import pytest

from shardboard import BadInput, Recorder, UnknownItem
from shardboard.adapters.items_table import marker_key
from shardboard.domain.items.lookalike import skeleton_marker
from shardboard.domain.items.records import SKELETONS
from shardboard.domain.writing.recording import record_views
from tests.conftest import load_event
from tests.integration.test_cli import cli  # noqa: F401 - the fixture
from tests.integration.test_http_api import call, post
from tests.integration.test_items_http import put_item, with_query

DELETED = ("banned.jpg", "caf\u00e9.jpg")
# Each look-alike, and what refuses it: a confusable of a deleted id (its skeleton's marker), a deleted id itself
# (the NFD form is the NFC id: the deny marker) or the id rule (the spaces).
LOOK_ALIKES = [
    ("banned.jpg ", "ends with a space"),
    (" banned.jpg", "starts with a space"),
    ("cafe\u0301.jpg", "deleted"),
    ("b\u0430nned.jpg", "reads as a deleted id"),
    ("banned\uff0ejpg", "reads as a deleted id"),
    ("\uff42anned.jpg", "reads as a deleted id"),
    ("c\u0430f\u00e9.jpg", "reads as a deleted id"),
]
# New ids that render as nothing, or as whatever a font draws
BLANKS = [
    (" ", "only spaces"),
    ("\u0301", "starts with a combining mark"),
    ("a\u0378", "an unassigned code point"),
    ("a\ue000", "a private-use character"),
    ("a\uffff", "a noncharacter"),
]
CASES = LOOK_ALIKES + BLANKS


@pytest.fixture
def deleted(make_pipeline):
    """A stack where both ids had views and were deleted through DELETE /item; a fresh container after."""
    pipeline = make_pipeline()
    for item in (*DELETED, "kept.jpg"):
        record_views(pipeline.views, item, 3, pipeline.settings.write_shards, where=pipeline.where())
    pipeline.aggregate(pipeline.stream_records())
    for item in DELETED:
        event = with_query(load_event("items_admin_delete.json"), f"id={quote(item, safe='')}")
        status, _, _ = call(pipeline, "items_admin", event)
        assert status == 200
    pipeline.runtime.export_to_handlers()  # the deny and skeleton views are cached per container
    return pipeline


@pytest.mark.parametrize(("look_alike", "reason"), CASES)
def test_post_views_refuses_each_look_alike(deleted, look_alike, reason):
    status, _, answer = call(deleted, "record_views", post(json.dumps({"id": look_alike})))
    # (the NFD form is the deleted id itself: a 404 as for any deleted id; the others are bad input)
    assert status == (404 if reason == "deleted" else 400) and reason in answer["message"]
    # And a visible id still counts
    assert call(deleted, "record_views", post(json.dumps({"id": "kept.jpg"})))[0] == 202


@pytest.mark.parametrize(("look_alike", "reason"), CASES)
def test_put_item_refuses_each_look_alike(deleted, look_alike, reason):
    status, _, answer = call(deleted, "items_admin", put_item(look_alike, json.dumps({"title": "x"})))
    if look_alike == "cafe\u0301.jpg":
        # The NFD form is the deleted id itself: its put is the deleted item's (another rule's), never a new item's
        assert deleted.runtime.items.get("cafe\u0301.jpg") is None
        return
    assert status == 400 and reason in answer["message"]
    assert deleted.runtime.items.get(look_alike) is None


@pytest.mark.parametrize(("look_alike", "reason"), CASES)
def test_the_library_refuses_each_look_alike(deleted, look_alike, reason):
    with Recorder(settings=deleted.settings, flush_interval=None) as recorder:
        expected = UnknownItem if reason == "deleted" else BadInput
        with pytest.raises(expected, match=reason):
            recorder.record(look_alike)
        recorder.record("kept.jpg")
        assert recorder.stats().recorded_views == 1


def test_the_cli_refuses_each_look_alike_in_one_line(cli):  # noqa: F811
    # Given both ids viewed, then deleted
    assert cli("init").exit_code == 0
    for item in (*DELETED, "kept.jpg"):
        assert cli("record", item, "-n", "3").exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    for item in DELETED:
        assert cli("item", "delete", item).exit_code == 0
    # Then each look-alike is refused by `record` and `item put`: exit 2, one line naming the reason
    for look_alike, reason in CASES:
        for args in (("record", look_alike), ("item", "put", look_alike, "--meta", "{}")):
            result = cli(*args)
            if args[0] == "item" and look_alike == "cafe\u0301.jpg":
                continue  # the deleted id itself (its put is another rule's)
            assert result.exit_code == 2, (args, result.output)
            assert reason in result.output and len(result.output.strip().splitlines()) == 1
    # And a visible id still counts
    assert cli("record", "kept.jpg").exit_code == 0


def test_a_stack_upgraded_marks_the_ids_deleted_before_the_skeletons_at_migrate(cli):  # noqa: F811
    # Given an id deleted as a release before the skeleton markers wrote it: its deny marker, no skeleton marker
    assert cli("init").exit_code == 0
    assert cli("record", "banned.jpg", "-n", "3").exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    assert cli("item", "delete", "banned.jpg").exit_code == 0
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.delete_item(TableName="shardboard-items", Key=marker_key(SKELETONS, skeleton_marker("banned.jpg")))
    # Then its look-alikes still pass (nothing marks its skeleton), the id itself is denied
    assert cli("record", "b\u0430nned.jpg").exit_code == 0
    assert cli("record", "banned.jpg").exit_code == 2
    # When `shardboard migrate` runs after the deploy (twice: the second marks nothing)
    migrated = cli("migrate")
    assert migrated.exit_code == 0 and "look-alikes: 1 deleted id(s) marked by their skeleton" in migrated.output
    assert "look-alikes" not in cli("migrate").output
    # Then its look-alikes are refused
    refused = cli("record", "\uff42anned.jpg")
    assert refused.exit_code == 2 and "reads as a deleted id" in refused.output
