"""Every fault of docs/exactly-once-under-faults.md on moto: real stream records, real handler, exact counts after.

Faults enter through botocore's event hooks on the clients and through wrappers around the handler the event source
mapping invokes (shardboard_tools.testing.faults); none of shardboard's own code is patched.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import replace

import pytest

from shardboard.adapters.dynamodb import dynamodb_client
from shardboard_tools.lambda_model.clock import SimulatedClock
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.stream_runner import StreamRunner, read_dead_letters
from shardboard_tools.operations.verification import verify
from shardboard_tools.testing.faults import (
    ClientFaults,
    Container,
    FaultRates,
    FaultyFunction,
    FunctionFaults,
    KillSwitch,
    ProcessKilled,
)

COUNTS = {"a": 14, "b#1": 9, "images/c.jpg": 7, "ünï": 5, "e": 3}


def record(pipeline, counts=COUNTS, seed=7):
    rng = random.Random(seed)
    for item, count in counts.items():
        pipeline.record_one_by_one(item, count, rng)


def runner(pipeline, handler, tmp_path, *, batch_size=10, max_retries=3, state=True, bisect=True):
    mapping = replace(
        EventSourceMapping.from_template(pipeline.runtime.template),
        bisect_on_function_error=bisect,
        batching_window_seconds=0,
        batch_size=batch_size,
        max_retry_attempts=max_retries,
    )
    rt = pipeline.runtime
    return StreamRunner(
        rt.dynamodb,
        rt.streams,
        pipeline.settings.views_table,
        handler,
        mapping=mapping,
        state_dir=tmp_path / "state" if state else None,
        # Lambda's back-off between retries (up to 2 s each, hundreds of them at these fault rates) passes on a
        # simulated clock: the faults and the retries are the point, not the waits; record ages stay far in range.
        clock=SimulatedClock(time.time()),
    )


def aggregator_client():
    from shardboard.handlers import wiring

    return wiring.client()


def assert_exact(pipeline):
    report = verify(pipeline.views, pipeline.board, pipeline.settings)
    assert report.differences == [] and report.index_misses == []
    assert {item: views for item, (views, _) in pipeline.board.scan_aggregates().items()} == pipeline.truth()


@pytest.mark.parametrize(
    ("rates", "kind"),
    [
        (FaultRates(throttle_retried=0.3), "throttle_retried"),
        (FaultRates(timeout_retried=0.3), "timeout_retried"),
        (FaultRates(throttle_surfaced=0.3), "throttle"),
        (FaultRates(lost_response=0.5), "lost_response"),
        (FaultRates(resent=0.5), "resent"),
        (FaultRates(race=0.7), "race"),
    ],
)
def test_client_faults_on_the_aggregator_leave_counts_exact(pipeline, tmp_path, rates, kind):
    # Given views, and the aggregator's DynamoDB client failing in one way, seeded
    record(pipeline)
    faults = ClientFaults(
        aggregator_client(),
        rates,
        random.Random(3),
        table=pipeline.settings.board_table,
        competitor=dynamodb_client(),
    ).install()
    function = FaultyFunction(Container.main(), FunctionFaults(), random.Random(1))
    # When the event source mapping delivers the stream (retrying what fails)
    runner(pipeline, function, tmp_path, batch_size=8, max_retries=20).drain()
    faults.uninstall()
    # Then the fault happened and every aggregate equals the sum of its base shards
    assert faults.injected[kind] > 0
    assert_exact(pipeline)
    if kind in ("lost_response", "resent", "race"):  # the write landed before the caller knew: a replay later
        assert function.totals.replays_absorbed > 0


@pytest.mark.parametrize("step", ["before any write", "between two writes", "after the writes"])
def test_a_kill_at_every_step_of_a_batch_is_healed_by_the_retry(make_pipeline, tmp_path, capsys, step):
    # Given one batch of five items, written one at a time (so "between two writes" is exact)
    pipeline = make_pipeline()
    pipeline.runtime.settings = replace(pipeline.settings, write_concurrency=1)
    pipeline.runtime.export_to_handlers()
    record(pipeline)
    switch = KillSwitch(aggregator_client())
    container, outcomes = Container.main(), []

    def killed_once(event, context):
        if outcomes:  # the retry runs normally
            response = container.invoke(event, context)
            outcomes.append(container.aggregator.last.outcome)
            return response
        outcomes.append(None)
        if step == "before any write":
            raise ProcessKilled(step)
        if step == "between two writes":
            with switch.armed(after_writes=2):
                container.invoke(event, context)
            assert switch.killed
            raise ProcessKilled(step)
        container.invoke(event, context)
        raise ProcessKilled(step)

    # When the process dies at that step and Lambda retries the whole batch (no bisect: one retry to look at)
    run = runner(pipeline, killed_once, tmp_path, batch_size=1000, bisect=False)
    capsys.readouterr()
    run.drain()
    switch.uninstall()
    # Then the retry completes the batch exactly; the items written before the kill are absorbed as replays
    replays = {"before any write": 0, "between two writes": 2, "after the writes": 5}[step]
    assert run.stats.function_errors == 1 and len(outcomes) == 2
    assert outcomes[1].replays_absorbed == replays
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert emf[-1]["ReplaysAbsorbed"] == [float(replays)]
    assert_exact(pipeline)


@pytest.mark.parametrize("fault", ["duplicate", "late_duplicate", "resplit", "parallel"])
def test_event_source_faults_count_once(pipeline, tmp_path, fault):
    # Given a stream delivered in batches of 7
    record(pipeline)
    function = FaultyFunction(Container.main(), FunctionFaults(**{fault: 1.0}), random.Random(5))
    # When every batch is delivered twice, re-split into overlapping halves, or to two containers at once
    runner(pipeline, function, tmp_path, batch_size=7).drain()
    # Then counts are exact, and the repeated deliveries were absorbed
    assert function.injected[fault] > 0
    assert_exact(pipeline)
    if fault != "parallel":
        assert function.totals.replays_absorbed > 0


def test_a_poisoned_batch_goes_to_the_failure_destination_and_redrive_repairs_it(make_pipeline, tmp_path):
    from shardboard_tools.operations.recovery import redrive

    # Given one write shard, and a function that can never process the batch holding the last views
    pipeline = make_pipeline(WriteShards="1")
    record(pipeline, {"x": 6, "y": 4})
    function = FaultyFunction(Container.main(), FunctionFaults(), random.Random(1))
    last = pipeline.stream_records()[-3:]
    function.poisoned.update(r["dynamodb"]["SequenceNumber"] for r in last)
    # When the runner retries, bisects and gives up on those records
    run = runner(pipeline, function, tmp_path, batch_size=4, max_retries=1)
    run.drain()
    letters = read_dead_letters(tmp_path / "state")
    assert letters and run.stats.dead_letter_records >= 1
    # Then the lost tail shows in verify, redrive repairs exactly the items in the failed ranges, twice is harmless
    assert verify(pipeline.views, pipeline.board, pipeline.settings).differences
    first = redrive(pipeline.views, pipeline.board, pipeline.runtime.streams, pipeline.settings, letters)
    assert sum(r.views_added for r in first) > 0 and not any(r.expired for r in first)
    assert_exact(pipeline)
    again = redrive(pipeline.views, pipeline.board, pipeline.runtime.streams, pipeline.settings, letters)
    assert sum(r.views_added for r in again) == 0
    assert_exact(pipeline)
