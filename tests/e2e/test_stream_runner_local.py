"""The stream runner's event-source-mapping semantics on DynamoDB Local's real stream."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.parser.models import DynamoDBStreamModel

from shardboard.handlers import aggregate, snapshot
from shardboard_tools.lambda_model.clock import SimulatedClock
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.scheduler import scheduled_event
from shardboard_tools.local.stream_runner import StreamRunner, read_dead_letters
from shardboard_tools.local.streams import latest_stream_arn
from shardboard_tools.operations.verification import verify
from tests.conftest import load_event
from tests.e2e.helpers import brute_force_top, record_random_views
from tests.heads import pairs

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def runner_for(rt, handler, state_dir, **changes):
    """A runner on the template's mapping; Lambda's back-off between retries passes on a simulated clock (the retries
    are the point, not the waits)."""
    mapping = replace(EventSourceMapping.from_template(rt.template), batching_window_seconds=0, **changes)
    table, clock = rt.settings.views_table, SimulatedClock(time.time())
    return StreamRunner(rt.dynamodb, rt.streams, table, handler, mapping=mapping, state_dir=state_dir, clock=clock)


def assert_exact_with_exact_snapshot(rt):
    report = verify(rt.views, rt.board, rt.settings)
    assert report.exact, report.differences[:5]
    rt.invoke(snapshot.handler, scheduled_event())
    assert pairs(rt.board.get_snapshot(rt.settings.board, consistent=True).items) == brute_force_top(rt)


def test_events_have_lambdas_shape(local, tmp_path):
    # Given a few views on the base table
    record_random_views(local, views=30, items=5)
    events = []

    def capture(event, context):
        events.append(event)
        return aggregate.handler(event, context)

    # When the runner delivers them
    runner_for(local, capture, tmp_path).drain()

    # Then every event validates against Powertools' model and has the keys of the events/ sample
    sample = load_event("aggregate_stream_batch.json")["Records"][0]
    arn = latest_stream_arn(local.dynamodb, local.settings.views_table)
    records = [r for e in events for r in e["Records"]]
    assert len(records) == 30
    for event in events:
        DynamoDBStreamModel.model_validate(event)
    for record in records:
        assert set(record) == set(sample)
        expected_stream_keys = (set(sample["dynamodb"]) - {"OldImage"}) | (
            {"OldImage"} if record["eventName"] == "MODIFY" else set()
        )
        assert set(record["dynamodb"]) == expected_stream_keys
        assert isinstance(record["dynamodb"]["ApproximateCreationDateTime"], int)
        assert record["eventSourceARN"] == arn
    assert_exact_with_exact_snapshot(local)


def test_partial_batch_failure_resumes_from_the_lowest_failed_record(make_local, tmp_path):
    # Given a handler that applies each batch but reports its middle record failed, twice
    rt = make_local(TopN="5")
    record_random_views(rt, views=200, items=20)
    firsts, reported = [], []

    def half_failing(event, context):
        response = aggregate.handler(event, context)
        records = event["Records"]
        firsts.append(records[0]["dynamodb"]["SequenceNumber"])
        if len(reported) < 2 and len(records) > 1:
            failed = records[len(records) // 2]["dynamodb"]["SequenceNumber"]
            reported.append(failed)
            return {"batchItemFailures": [{"itemIdentifier": failed}]}
        return response

    # When the runner drains the stream in batches of 50
    runner = runner_for(rt, half_failing, tmp_path, batch_size=50)
    runner.drain()

    # Then each retry started at the failed record, the replays were absorbed, and the counts are exact
    assert runner.stats.partial_failures == 2
    assert firsts[1] == reported[0] and firsts[2] == reported[1]
    assert runner.stats.records > 200
    assert runner.stats.dead_letter_batches == 0
    assert_exact_with_exact_snapshot(rt)


def test_raising_handler_is_bisected_retried_and_dead_lettered_then_healed(make_local, tmp_path):
    # Given a handler that raises whenever its batch holds one of the poison item's records
    rt = make_local(TopN="5")
    record_random_views(rt, views=100, items=10)
    for shard in (0, 1, 2):
        rt.views.add_view("poison", shard)
    record_random_views(rt, views=60, items=10, seed=8)
    poisoned = set()
    invocations = []

    def crashing(event, context):
        invocations.append(len(event["Records"]))
        if any(r["dynamodb"]["NewImage"]["item_id"]["S"] == "poison" for r in event["Records"]):
            poisoned.update(r["dynamodb"]["SequenceNumber"] for r in event["Records"] if "poison" in json.dumps(r))
            raise RuntimeError("poison record")
        return aggregate.handler(event, context)

    # When the runner drains with batches of 16, bisect on and two retries
    runner = runner_for(rt, crashing, tmp_path, batch_size=16, max_retry_attempts=2)
    runner.drain()

    # Then each poison record ends alone in the failure destination after 1 + 2 attempts, in Lambda's shape
    letters = read_dead_letters(tmp_path)
    assert len(letters) == 3 and runner.stats.bisections >= 3
    arn = latest_stream_arn(rt.dynamodb, rt.settings.views_table)
    for letter in letters:
        assert set(letter) == {"requestContext", "responseContext", "version", "timestamp", "DDBStreamBatchInfo"}
        assert letter["requestContext"]["condition"] == "RetryAttemptsExhausted"
        assert letter["requestContext"]["approximateInvokeCount"] == 3
        assert letter["responseContext"] == {
            "statusCode": 200,
            "executedVersion": "$LATEST",
            "functionError": "Unhandled",
        }
        info = letter["DDBStreamBatchInfo"]
        assert info["batchSize"] == 1 and info["streamArn"] == arn
        assert info["startSequenceNumber"] == info["endSequenceNumber"] and info["startSequenceNumber"] in poisoned
        assert set(info) == {
            "shardId",
            "startSequenceNumber",
            "endSequenceNumber",
            "approximateArrivalOfFirstRecord",
            "approximateArrivalOfLastRecord",
            "batchSize",
            "streamArn",
        }
    # ... every other item is exact, the poison item alone is missing its views
    report = verify(rt.views, rt.board, rt.settings)
    assert {d.item_id for d in report.differences} == {"poison"}  # in every period it counts in

    # When later views of the same write shards arrive (the handler no longer fails on them)
    crashing_off = set(poisoned)
    for shard in (0, 1, 2):
        rt.views.add_view("poison", shard)

    def healed(event, context):
        if any(r["dynamodb"]["SequenceNumber"] in crashing_off for r in event["Records"]):
            raise AssertionError("a dead-lettered batch was delivered again")
        return aggregate.handler(event, context)

    runner.handler = healed
    runner.drain()

    # Then their absolute NEW values heal the lost records: exact again, snapshot exact
    assert_exact_with_exact_snapshot(rt)
    assert rt.board.aggregate_views("poison") == 6


def test_filter_criteria_drop_foreign_records_before_the_function(local, tmp_path):
    # Given views plus an item in the base table that is not a view counter
    record_random_views(local, views=20, items=4)
    local.dynamodb.put_item(TableName=local.settings.views_table, Item={"pk": {"S": "note#1"}, "text": {"S": "hi"}})
    seen = []

    def capture(event, context):
        seen.extend(r["dynamodb"]["Keys"]["pk"]["S"] for r in event["Records"])
        return aggregate.handler(event, context)

    # When the mapping filters on the counter attributes, as the template's FilterCriteria does
    pattern = {"eventName": ["INSERT", "MODIFY"], "dynamodb": {"NewImage": {"item_id": {"S": [{"exists": True}]}}}}
    runner = runner_for(local, capture, tmp_path, filter_patterns=(pattern,))
    runner.drain()

    # Then the function never saw the foreign record, and the checkpoint moved past it
    assert "note#1" not in seen and len(seen) == 20
    assert runner.stats.filtered == 1
    assert_exact_with_exact_snapshot(local)


def test_runner_killed_with_sigkill_resumes_from_its_checkpoint(make_local, local_env, tmp_path):
    # Given 600 views waiting in the stream and `shardboard process` following it in batches of 20
    rt = make_local(StreamBatchSize="20", StreamBatchingWindowSeconds="0")
    record_random_views(rt, views=600, items=60)
    env = {**os.environ, "SHARDBOARD_STATE_DIR": str(tmp_path)}
    command = [str(Path(sys.executable).parent / "shardboard"), "--stack", rt.template.stack]
    command += ["-p", "StreamBatchSize=20", "-p", "StreamBatchingWindowSeconds=0", "process"]
    checkpoint = tmp_path / "checkpoints" / f"{rt.settings.views_table}.json"

    # When it is killed with SIGKILL as soon as it has checkpointed some batches
    follower = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not checkpoint.exists() and time.monotonic() < deadline and follower.poll() is None:
            time.sleep(0.02)
        assert checkpoint.exists(), follower.stderr.read().decode() if follower.stderr else ""
        os.kill(follower.pid, signal.SIGKILL)
        follower.wait(30)
    finally:
        if follower.poll() is None:
            follower.kill()
        if follower.stderr:
            follower.stderr.close()

    # Then the checkpoint it left is whole and short of the end: work was left to resume
    stored = json.loads(checkpoint.read_text())
    (position,) = [s["sequenceNumber"] for s in stored["shards"].values() if s["sequenceNumber"]]
    stream_arn = latest_stream_arn(rt.dynamodb, rt.settings.views_table)
    assert stored["streamArn"] == stream_arn
    assert verify(rt.views, rt.board, rt.settings).exact is False

    # When it is started again with --drain
    drained = subprocess.run(
        [*command, "--drain"], check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )

    # Then it resumed after the checkpoint (it did not start over) and every count is exact
    assert drained.returncode == 0, drained.stderr
    resumed = int(drained.stdout.split("processed ")[1].split(" records")[0])
    assert 0 < resumed < 600
    after = json.loads(checkpoint.read_text())
    assert int(next(iter(after["shards"].values()))["sequenceNumber"]) > int(position)
    assert_exact_with_exact_snapshot(rt)
