"""The stream as untrusted input: a counter whose id or board name the API refuses, or whose bucket no period can
hold, is skipped and counted by the real aggregator handler; the good records of the same batch count exactly.
The records are the events/ sample's, varied (the shape Lambda delivers), as someone with write access to the views
table would produce them (docs/bad-input.md, "Stream records")."""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

from click.testing import CliRunner

from shardboard.adapters.dynamodb import int_of
from shardboard.adapters.keys import PK, VIEWS, aggregate_pk, view_pk
from shardboard_tools.cli import main
from shardboard_tools.local.streams import latest_stream_arn, shards_parents_first
from tests.conftest import load_event

SAMPLE = load_event("aggregate_stream_batch.json")["Records"]


def counter_record(
    sequence: int, item_id: str, bucket: str, new: dict[str, int], old: dict[str, int] | None = None
) -> dict[str, Any]:
    """A base counter's stream record as Lambda delivers it: an INSERT, or a MODIFY when ``old`` is given.
    ``new``/``old``: attribute -> value (``views``, ``b:<board>``)."""
    record = copy.deepcopy(SAMPLE[0] if old is None else SAMPLE[1])
    key = {PK: {"S": view_pk(item_id, 0, bucket)}}  # write shard 0
    keys = {**key, "item_id": {"S": item_id}, "shard": {"N": "0"}, "bucket": {"S": bucket}}
    stream = record["dynamodb"]
    stream["Keys"] = key
    stream["SequenceNumber"] = str(44215845000000000174504 + sequence)
    stream["NewImage"] = {**keys, **{name: {"N": str(value)} for name, value in new.items()}}
    if old is not None:
        stream["OldImage"] = {**keys, **{name: {"N": str(value)} for name, value in old.items()}}
    record["eventID"] = f"{sequence:032d}"
    return record


def test_a_batch_of_hostile_counters_skips_each_and_counts_the_good_ones_exactly(pipeline, capsys, caplog):
    day = pipeline.bucket()
    # Given one batch mixing good counters with counters no view the API takes could have written
    batch = [
        counter_record(1, "images/001.jpg", day, {VIEWS: 3, "b:cats": 3}),
        # A '#' in a board name: once written board "a", item "b#agg-19" (the key of another pair)
        counter_record(2, "agg-19", day, {VIEWS: 2, "b:a#b": 2}),
        # Board names the API refuses beside a good one: capitals, empty, the global board's twin, too long
        counter_record(
            3,
            "good-2",
            day,
            {VIEWS: 4, "b:cats": 4, "b:Cats": 4, "b:": 4, "b:global": 4, "b:" + "x" * 65: 4},
            old={VIEWS: 1, "b:cats": 1},
        ),
        counter_record(4, "", day, {VIEWS: 5}),  # an empty id
        counter_record(5, "\u200b", day, {VIEWS: 6}),  # a zero-width id
        counter_record(7, "item5", "0001-01-01", {VIEWS: 8}),  # no day before it: once an OverflowError
        counter_record(8, "item6", "9999-12-31", {VIEWS: 9}),  # no day after it
        counter_record(9, "item7", "2026-W48", {VIEWS: 10}),  # a week bucket on a stack counted by day
        counter_record(10, "images/001.jpg", day, {VIEWS: 5, "b:cats": 5}, old={VIEWS: 3, "b:cats": 3}),
    ]

    # When the real handler gets it
    response = pipeline.aggregate(batch)

    # Then nothing fails (no retry, no failure destination) and each bad counter is skipped with its reason
    assert response == {"batchItemFailures": []}
    skipped = [r for r in caplog.records if r.getMessage() == "stream record skipped"]
    assert Counter(r.reason for r in skipped) == {
        "invalid_board": 5,
        "invalid_id": 2,
        "out_of_range": 2,
        "foreign_bucket": 1,
    }
    assert {r.event_id for r in skipped if r.reason == "invalid_board"} == {f"{2:032d}", f"{3:032d}"}
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert emf[-1]["RecordsSkipped"] == [10.0]
    # Global and cats of the good counters only (a first MODIFY counts its NEW value: the views before it too)
    assert emf[-1]["ViewsAggregated"] == [5 + 5 + 2 + 4 + 4]
    assert emf[-1]["ItemsFailed"] == [0.0]
    # And the good counters count exactly, on their boards only: no other aggregate exists
    aggregates = {
        item[PK]["S"]: int_of(item.get(VIEWS))
        for item in pipeline.board.scan_counts(1)
        if item[PK]["S"].startswith("item#")
    }
    assert aggregates == {
        aggregate_pk("global", "images/001.jpg"): 5,
        aggregate_pk("cats", "images/001.jpg"): 5,
        aggregate_pk("global", "agg-19"): 2,
        aggregate_pk("global", "good-2"): 4,
        aggregate_pk("cats", "good-2"): 4,
    }


def test_a_counter_skipped_alone_lets_its_records_count_on_in_the_next_batches(pipeline, caplog):
    day = pipeline.bucket()
    # Given a counter that carries a bad board name beside its good ones, in every record of it
    first = counter_record(1, "clip", day, {VIEWS: 2, "b:cats": 2, "b:a#b": 2})
    later = counter_record(2, "clip", day, {VIEWS: 6, "b:cats": 6, "b:a#b": 6}, old={VIEWS: 2, "b:cats": 2, "b:a#b": 2})
    # When two batches deliver it
    assert pipeline.aggregate([first]) == {"batchItemFailures": []}
    assert pipeline.aggregate([later]) == {"batchItemFailures": []}
    # Then its good boards hold every view, and the bad one was skipped each time
    assert pipeline.board.aggregate_views("clip") == 6
    assert pipeline.board.aggregate_views("clip", "cats") == 6
    reasons = [r.reason for r in caplog.records if r.getMessage() == "stream record skipped"]
    assert reasons == ["invalid_board", "invalid_board"]


# -- the repair tools over the same counters: skipped and reported, exit 0, never a traceback


def hostile_table(pipeline) -> str:
    """The views table as an attacker with write access left it: good counters, and beside them counters of ids,
    board names and a bucket the API refuses (item 5's bucket once made both repair tools exit 1 with a traceback)."""
    day = pipeline.bucket()
    views = pipeline.views
    views.add_view("images/001.jpg", 0, 3, day, boards=["cats"])
    views.add_view("images/001.jpg", 1, 4, day)
    views.add_view("agg-19", 0, 2, day, boards=["a#b"])
    views.add_view("", 0, 5, day)
    views.add_view("\u200b", 0, 6, day)
    views.add_view("item5", 0, 7, "0001-01-01")
    return day


def repair_cli(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args), catch_exceptions=False)


def good_aggregates(pipeline) -> dict[str, int]:
    return {
        item[PK]["S"]: int_of(item.get(VIEWS))
        for item in pipeline.board.scan_counts(1)
        if item[PK]["S"].startswith("item#")
    }


GOOD = {
    aggregate_pk("global", "images/001.jpg"): 7,
    aggregate_pk("cats", "images/001.jpg"): 3,
    aggregate_pk("global", "agg-19"): 2,
}


def test_rebuild_skips_and_reports_what_the_aggregator_would_not_count(pipeline, monkeypatch):
    # Given the hostile table and no aggregate yet (a lost board table)
    hostile_table(pipeline)
    cli = repair_cli(monkeypatch)
    # When `shardboard rebuild` runs
    result = cli("rebuild", "--segments", "1")
    # Then it succeeds, with a line per kind of counter it skipped, and the good counters are rebuilt exactly
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split(" (first:")[0] for line in lines if line.startswith("skipped")] == [
        "skipped invalid_board: 1",
        "skipped invalid_id: 2",
        "skipped out_of_range: 1",
    ]
    assert "rebuilt: 8 counters scanned, 3 (board, item) pairs checked, 12 views restored" in " ".join(lines)
    assert good_aggregates(pipeline) == GOOD
    # And a second run finds nothing to restore and reports the same skips
    again = cli("rebuild", "--segments", "1")
    assert again.exit_code == 0 and "0 views restored" in again.output and "skipped invalid_id: 2" in again.output


def test_redrive_skips_and_reports_what_the_aggregator_would_not_count(pipeline, monkeypatch, tmp_path):
    # Given the hostile table, and a failure destination message naming every record of its stream
    hostile_table(pipeline)
    rt = pipeline.runtime
    arn = latest_stream_arn(rt.dynamodb, pipeline.settings.views_table)
    (shard,) = shards_parents_first(rt.streams, arn)
    records = pipeline.stream_records()
    info = {
        "streamArn": arn,
        "shardId": shard["ShardId"],
        "startSequenceNumber": records[0]["dynamodb"]["SequenceNumber"],
        "endSequenceNumber": records[-1]["dynamodb"]["SequenceNumber"],
    }
    letters = tmp_path / "letters.jsonl"
    letters.write_text(json.dumps({"DDBStreamBatchInfo": info}) + "\n", encoding="utf-8")
    cli = repair_cli(monkeypatch)
    # When `shardboard redrive` runs on it
    result = cli("redrive", "--file", str(letters))
    # Then it succeeds, reports each kind it skipped with a count, and repairs the good items exactly
    assert result.exit_code == 0, result.output
    skips = [
        line.split(": skipped ")[1].split(" (first:")[0] for line in result.output.splitlines() if " skipped " in line
    ]
    assert skips == ["invalid_board: 1", "invalid_id: 2", "out_of_range: 1"]
    assert "2 items, 12 views restored" in " ".join(result.output.split())
    assert good_aggregates(pipeline) == GOOD


def test_verify_counts_as_the_aggregator_does_and_names_what_it_skips(pipeline, monkeypatch):
    # Given the hostile table, aggregated by the real handler (the bad counters skipped) and snapshotted
    hostile_table(pipeline)
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    # When `shardboard verify` runs
    result = repair_cli(monkeypatch)("verify")
    # Then the good counts are exact, and the counters no request could write are named, not differences
    assert result.exit_code == 0, result.output
    assert "verify: exact" in result.output
    assert "4 base counter(s) the aggregator skips" in result.output
