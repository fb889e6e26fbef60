"""`shardboard item hide/unhide` on moto (tables from template.yaml): the board patched at once, the answer of
POST /item/hide with --json, and bad input refused with exit 2, one line, nothing written; a stack upgraded from the
String Sets of an earlier release honours them until `shardboard rebuild` moves them to markers."""

from __future__ import annotations

import json

import boto3

from shardboard.adapters.items_table import marker_key, old_set_key
from shardboard.handlers import snapshot
from shardboard.settings import DEFAULT_STACK
from shardboard_tools.lambda_model.context import LocalContext
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.local.scheduler import scheduled_event
from tests.conftest import ROOT
from tests.integration.test_cli import cli  # noqa: F401 - the fixture
from tests.integration.test_items_cli import items_written


def top(cli) -> list[list]:  # noqa: F811
    return [[entry["id"], entry["views"]] for entry in json.loads(cli("top", "--json").output)["items"]]


def test_hide_then_unhide_from_the_cli(cli):  # noqa: F811
    # Given three items counted and snapshotted
    assert cli("init").exit_code == 0
    for item, views in (("a#1", 5), ("b", 3), ("c", 1)):
        assert cli("record", item, "-n", str(views)).exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    assert cli("snapshot").exit_code == 0
    assert top(cli)[0] == ["a#1", 5]
    # When the leader is hidden with a reason
    hidden = cli("item", "hide", "a#1", "--reason", "spam", "--json")
    assert hidden.exit_code == 0
    # (fewer items than N: each of the four heads, all time, day, week and month, is gathered again)
    assert json.loads(hidden.output) == {
        "id": "a#1",
        "status": "hidden",
        "changed": True,
        "patched": 0,
        "refreshed": 4,
    }
    # Then it is off the board at once, and the audit row names the reason
    assert top(cli) == [["b", 3], ["c", 1]]
    assert [row["reason"]["S"] for row in items_written() if row["sk"]["S"].startswith("audit#")] == ["spam"]
    # When it is unhidden, it is back with its count
    plain = cli("item", "unhide", "a#1")
    assert plain.exit_code == 0 and "a#1: visible again" in plain.output
    assert top(cli)[0] == ["a#1", 5]


def test_bad_input_and_nothing_to_take_down_write_nothing(cli):  # noqa: F811
    assert cli("init").exit_code == 0
    assert cli("record", "a", "-n", "2").exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    for args, code, reason in (
        (("item", "hide", "a", "--reason", "x" * 501), 2, "reason must be at most 500"),
        (("item", "hide", "bad\nid"), 2, "control character"),
        (("item", "hide", "never-seen"), 1, "has no views and was never created"),
        (("item", "unhide", "never-seen"), 1, "has no views and was never created"),
    ):
        result = cli(*args)
        assert result.exit_code == code
        assert reason in result.output and len(result.output.strip().splitlines()) == 1
    assert items_written() == []
    # (an unhide of a visible item changes nothing: it checks the heads again, which finishes one cut short)
    again = cli("item", "unhide", "a")
    assert again.exit_code == 0 and "a: visible again (it was visible already)" in again.output


def test_delete_from_the_cli_erases_the_item_and_a_repeat_sweeps_again(cli):  # noqa: F811
    # Given three items counted and snapshotted
    assert cli("init").exit_code == 0
    for item, views in (("a#1", 5), ("b", 3), ("c", 1)):
        assert cli("record", item, "-n", str(views)).exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    assert cli("snapshot").exit_code == 0
    # When the leader is deleted with a reason
    deleted = cli("item", "delete", "a#1", "--reason", "gdpr", "--json")
    assert deleted.exit_code == 0
    assert json.loads(deleted.output) == {
        "id": "a#1",
        "status": "deleted",
        "changed": True,
        "patched": 0,
        "refreshed": 4,
        "erased": 1,
    }
    # Then it is off the board at once, its count is gone, and the audit row names the reason
    assert top(cli) == [["b", 3], ["c", 1]]
    assert cli("item", "get", "a#1").output.startswith("a#1: 0 views, deleted\n")  # never put: no time kept
    assert [row["reason"]["S"] for row in items_written() if row["sk"]["S"].startswith("audit#")] == ["gdpr"]
    # When it is deleted again (what finishes a delete cut short), it says so in one line
    again = cli("item", "delete", "a#1")
    assert again.exit_code == 0
    assert " ".join(again.output.split()) == (  # (the console wraps at its width)
        "a#1: deleted (it was deleted already); 0 snapshot(s) patched, 0 gathered again; 0 aggregate(s) and entries "
        "erased"
    )
    # And later views are refused
    refused = cli("record", "a#1", "-n", "2")
    assert refused.exit_code == 2 and "deleted" in refused.output
    assert cli("process", "--drain").exit_code == 0
    assert json.loads(cli("item", "get", "a#1", "--json").output)["status"] == "deleted"


def test_a_deleted_item_cannot_be_hidden_unhidden_or_put_from_the_cli(cli):  # noqa: F811
    # Given an item put, counted and deleted
    assert cli("init").exit_code == 0
    assert cli("item", "put", "gone", "--meta", '{"title": "kept for the audit"}').exit_code == 0
    assert cli("record", "gone", "kept", "-n", "2").exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    assert cli("item", "delete", "gone", "--reason", "gdpr").exit_code == 0
    before = items_written()
    # When it is hidden, unhidden or put again
    for args in (("item", "hide", "gone"), ("item", "unhide", "gone"), ("item", "put", "gone", "--meta", "{}")):
        result = cli(*args)
        # Then each is refused in one line saying it is deleted, and nothing is written
        assert result.exit_code == 1, (args, result.output)
        assert "item 'gone' is deleted" in result.output and len(result.output.strip().splitlines()) == 1
    assert items_written() == before
    # And item get says it is deleted, and since when, with the metadata it had
    shown = json.loads(cli("item", "get", "gone", "--json").output)
    assert (shown["status"], shown["meta"]) == ("deleted", {"title": "kept for the audit"})
    assert shown["taken_down_at"] >= shown["updated_at"]


def test_delete_bad_input_and_an_unknown_id_write_nothing(cli):  # noqa: F811
    assert cli("init").exit_code == 0
    for args, code, reason in (
        (("item", "delete", "a", "--reason", "x" * 501), 2, "reason must be at most 500"),
        (("item", "delete", "bad\nid"), 2, "control character"),
        (("item", "delete", ""), 2, "id must not be empty"),
        (("item", "delete", "never-seen"), 1, "has no views and was never created"),
    ):
        result = cli(*args)
        assert result.exit_code == code
        assert reason in result.output and len(result.output.strip().splitlines()) == 1
    assert items_written() == []


def test_refill_after_a_ban_wave_puts_the_never_keyed_item_on_the_board(cli):  # noqa: F811
    # Given N = 1, no spares and no ranked versions: four items keyed as they came, T raised to the best (9), then a
    # newcomer below T (never keyed) and the top three banned (more hides above T than the zero spares)
    params = ["-p", "TopN=1", "-p", "SnapshotSpare=0", "-p", "RankDepth=0", "-p", "Periods=day"]
    assert cli(*params, "init").exit_code == 0
    # (one batch each, the least viewed first: each batch's own threshold keys its item, so all four are keyed)
    for item, views in (("d", 3), ("c", 7), ("b", 8), ("a", 9)):
        assert cli(*params, "record", item, "-n", str(views)).exit_code == 0
        assert cli(*params, "process", "--drain").exit_code == 0
    assert cli(*params, "snapshot").exit_code == 0
    assert cli(*params, "record", "new", "-n", "5").exit_code == 0
    assert cli(*params, "process", "--drain").exit_code == 0
    for item in ("a", "b", "c"):
        assert cli(*params, "item", "hide", item, "--reason", "ban wave").exit_code == 0
    # (the index holds d (3) but not the newcomer (5): the board shows d, and verify says the snapshot is stale)
    assert top(cli) == [["d", 3]]
    checked = " ".join(cli(*params, "verify").output.split())  # (the console wraps long lines)
    assert "stale" in checked
    assert "global all: more takedowns above its threshold than spares: run `shardboard refill`" in checked
    assert len(json.loads(cli(*params, "verify", "--json").output)["refill_needed"]) == 2
    # When refill runs
    result = cli(*params, "refill")
    # Then both periods' T came down to the newcomer's 5, it was keyed, and the board shows it
    assert result.exit_code == 0, result.output
    assert "global: threshold 9 -> 5, 1 item(s) keyed, head gathered" in result.output
    assert "refill: 2 period(s) repaired" in result.output
    assert top(cli) == [["new", 5]]
    assert "snapshots: 2 of 2 match" in cli(*params, "verify").output
    assert json.loads(cli(*params, "verify", "--json").output)["refill_needed"] == []
    # And a second run has nothing to do
    assert "refill: every period is proven" in cli(*params, "refill").output


def test_a_stack_upgraded_from_the_string_sets_honours_them_until_rebuild_moves_them(cli):  # noqa: F811
    # Given three items counted, the leader hidden and the last deleted as an earlier release wrote them: the ids in
    # its String Sets (sk "set"), no markers
    assert cli("init").exit_code == 0
    for item, views in (("a#1", 5), ("b", 3), ("c", 1)):
        assert cli("record", item, "-n", str(views)).exit_code == 0
    assert cli("process", "--drain").exit_code == 0
    assert cli("item", "hide", "a#1").exit_code == 0
    assert cli("item", "delete", "c").exit_code == 0
    client = boto3.client("dynamodb", region_name="us-east-1")
    for status, item in (("hidden", "a#1"), ("deleted", "c")):
        client.delete_item(TableName="shardboard-items", Key=marker_key(status, item))
        client.update_item(
            TableName="shardboard-items",
            Key=old_set_key(status, item),
            UpdateExpression="ADD #ids :ids",
            ExpressionAttributeNames={"#ids": "ids"},
            ExpressionAttributeValues={":ids": {"SS": [item]}},
        )
    # When the job runs and the deleted id is viewed again
    assert cli("snapshot").exit_code == 0
    refused = cli("record", "c", "-n", "2")
    # Then the old sets are honoured: neither is on the board, the view is refused
    assert top(cli) == [["b", 3]]
    assert refused.exit_code == 2 and "deleted" in refused.output
    # When `shardboard rebuild` runs (twice: the second has nothing to move)
    rebuilt = cli("rebuild")
    assert rebuilt.exit_code == 0 and "takedowns: 2 id(s) moved from the sets of an earlier release" in rebuilt.output
    assert "takedowns:" not in cli("rebuild").output
    # Then the markers hold both ids, no old set is left, and the board is as it was
    stored = {
        (row["pk"]["S"], row["sk"]["S"]) for row in items_written() if row["pk"]["S"].startswith(("hidden#", "deny#"))
    }
    markers = [marker_key("hidden", "a#1"), marker_key("deleted", "c")]
    assert stored == {(key["pk"]["S"], key["sk"]["S"]) for key in markers}
    assert cli("snapshot").exit_code == 0
    assert top(cli) == [["b", 3]]
    assert cli("item", "unhide", "a#1").exit_code == 0
    assert top(cli)[0] == ["a#1", 5]


BAN_WAVE = ["-p", "TopN=1", "-p", "SnapshotSpare=0", "-p", "RankDepth=0", "-p", "Periods=day"]


def ban_wave(cli) -> None:  # noqa: F811
    """The ban wave above: the top three of N = 1 with no spares hidden, a newcomer below T never keyed."""
    assert cli(*BAN_WAVE, "init").exit_code == 0
    for item, views in (("d", 3), ("c", 7), ("b", 8), ("a", 9)):  # one batch each, as above
        assert cli(*BAN_WAVE, "record", item, "-n", str(views)).exit_code == 0
        assert cli(*BAN_WAVE, "process", "--drain").exit_code == 0
    assert cli(*BAN_WAVE, "snapshot").exit_code == 0
    assert cli(*BAN_WAVE, "record", "new", "-n", "5").exit_code == 0
    assert cli(*BAN_WAVE, "process", "--drain").exit_code == 0
    for item in ("a", "b", "c"):
        assert cli(*BAN_WAVE, "item", "hide", item, "--reason", "ban wave").exit_code == 0
    assert top(cli) == [["d", 3]]


def test_the_snapshot_job_repairs_a_ban_wave_by_itself(cli):  # noqa: F811
    # Given the ban wave
    ban_wave(cli)
    params = BAN_WAVE
    # When the scheduled job runs next, and no operator does anything
    result = cli(*params, "snapshot")
    # Then its own repair lowered T, keyed the newcomer and gathered both heads again: exact and proven
    assert result.exit_code == 0, result.output
    assert "repair: 2 head(s) not proven exact repaired (refill)" in result.output
    assert "still not proven" not in result.output
    assert top(cli) == [["new", 5]]
    assert "snapshots: 2 of 2 match" in cli(*params, "verify").output
    assert json.loads(cli(*params, "verify", "--json").output)["refill_needed"] == []
    # And the operator's command finds nothing left to do
    assert "refill: every period is proven" in cli(*params, "refill").output


def test_a_job_without_time_for_the_repair_leaves_its_heads_to_the_alarm(cli):  # noqa: F811
    # Given the ban wave, and the snapshot function invoked with 1 s left (less than the repair's 5 s margin)
    ban_wave(cli)
    parameters = dict(value.split("=", 1) for value in BAN_WAVE[1::2])
    functions = Runtime.from_template(ROOT / "template.yaml", parameters, DEFAULT_STACK)
    functions.export_to_handlers()
    summary = snapshot.handler(scheduled_event(), LocalContext(timeout_seconds=1.0))
    # Then both heads are counted unproven (the UnprovenSnapshots metric the alarm watches), nothing was repaired
    assert (summary["repaired"], summary["unproven"]) == (0, 2)
    assert top(cli) == [["d", 3]]
    # And the operator's refill, the same repair without a deadline, puts the newcomer on the board
    assert "refill: 2 period(s) repaired" in cli(*BAN_WAVE, "refill").output
    assert top(cli) == [["new", 5]]
