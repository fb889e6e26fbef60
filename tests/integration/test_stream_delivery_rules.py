"""The event source mapping's rules that a read of AWS's documentation found missing, on moto's real stream.

Each test is the regression test of one defect: filtering before batching, the function timeout, ParallelizationFactor,
the stream's 24-hour retention under unlimited retries. The runner's clock is a SimulatedClock: no test waits.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import replace
from typing import Any

from shardboard.domain.writing.recording import record_views
from shardboard_tools.lambda_model.clock import SimulatedClock
from shardboard_tools.lambda_model.event_filter import matches_any
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.stream_runner import StreamRunner, read_dead_letters


class Function:
    """Keeps every event; ``fault(event, call)`` may raise or move the clock."""

    def __init__(self, fault: Any = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.fault = fault
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        with self._lock:
            self.events.append(event)
            call = len(self.events)
        if self.fault is not None:
            self.fault(event, call)
        return {"batchItemFailures": []}

    def sequences(self) -> list[str]:
        return [r["dynamodb"]["SequenceNumber"] for e in self.events for r in e["Records"]]


def runner(
    pipeline: Any, function: Function, tmp_path: Any, clock: SimulatedClock, lane_handler: Any = None, **settings: Any
) -> StreamRunner:
    mapping = replace(
        EventSourceMapping.from_template(pipeline.runtime.template),
        batching_window_seconds=0,
        bisect_on_function_error=False,
        **settings,
    )
    return pipeline.stream_runner(
        function,
        tmp_path / "state",
        mapping=mapping,
        clock=clock,
        lane_handler=lane_handler,
    )


def foreign_item(pipeline: Any, n: int) -> None:
    """A base-table write the template's FilterCriteria drops (not a view counter)."""
    pipeline.runtime.dynamodb.put_item(
        TableName=pipeline.settings.views_table, Item={"pk": {"S": f"foreign#{n}"}, "note": {"S": "not a view"}}
    )


def sequences_of(records: list[dict[str, Any]]) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in records]


def test_filtered_records_do_not_count_towards_the_batch_size(pipeline, tmp_path):
    # Given 6 views with a foreign write after each: 6 view records among others FilterCriteria drops (foreign
    # items, and the key-only record moto writes before each new item)
    rng = random.Random(3)
    for n in range(6):
        record_views(pipeline.views, "a", 1, pipeline.settings.write_shards, rng, where=pipeline.where())
        foreign_item(pipeline, n)
    function = Function()
    run = runner(pipeline, function, tmp_path, SimulatedClock(time.time()), batch_size=3)
    # When the runner delivers the stream in batches of 3
    run.drain()
    # Then the function gets two full batches of views (Lambda filters first, then fills the batch)
    records = pipeline.stream_records()
    assert len(records) == 18
    assert [len(e["Records"]) for e in function.events] == [3, 3]
    assert run.stats.filtered == 12
    # And the checkpoint passes the last record, a filtered one
    assert list(run.positions.values()) == [records[-1]["dynamodb"]["SequenceNumber"]]


def test_an_invocation_over_the_function_timeout_fails_and_is_retried(pipeline, tmp_path):
    # Given views, and a function whose first invocation runs 1 s over the template's 120 s Timeout
    pipeline.record_one_by_one("a", 4, random.Random(1))
    clock = SimulatedClock(time.time())

    def slow_once(event: dict[str, Any], call: int) -> None:
        if call == 1:
            clock.advance(121.0)

    function = Function(slow_once)
    run = runner(pipeline, function, tmp_path, clock, batch_size=10)
    # When the runner delivers the stream
    run.drain()
    # Then the timed-out invocation counts as a function error and the same batch is delivered again
    assert run.stats.timeouts == 1 and run.stats.function_errors == 1 and run.stats.retries == 1
    assert function.events[0]["Records"] == function.events[1]["Records"]
    assert len(function.events) == 2 and "Task timed out after 120.00 seconds" in (run.stats.last_error or "")


def test_parallelization_factor_runs_batches_at_once_keeping_each_partition_key_in_order(pipeline, tmp_path):
    # Given views of eight items, and a function that returns only once two invocations are in it at the same time
    rng = random.Random(5)
    for _ in range(3):
        for item in "abcdefgh":
            record_views(pipeline.views, item, 1, pipeline.settings.write_shards, rng, where=pipeline.where())
    both_in = threading.Barrier(2, timeout=10)

    def meet(event: dict[str, Any], call: int) -> None:
        if call <= 2:
            both_in.wait()  # only passes when a second lane invokes at the same time

    function = Function(meet)
    clock = SimulatedClock(time.time())
    # (the fake function bears concurrent calls: it is its own further lane's environment)
    run = runner(pipeline, function, tmp_path, clock, lambda: function, batch_size=4, parallelization_factor=2)
    # When the runner delivers the stream with ParallelizationFactor 2
    run.drain()
    # Then two batches were in the function at once, every record came once
    records = pipeline.stream_records()
    views = [r for r in records if matches_any(run.settings.filter_patterns, r)]
    assert len(views) == 24 and sorted(function.sequences()) == sorted(sequences_of(views))
    assert all(len(e["Records"]) <= 4 for e in function.events)
    # And each partition key's records came in stream order, all in the same lane's batches
    order = {sequence: position for position, sequence in enumerate(sequences_of(records))}
    by_key: dict[str, list[int]] = {}
    for event in function.events:
        for record in event["Records"]:
            by_key.setdefault(record["dynamodb"]["Keys"]["pk"]["S"], []).append(
                order[record["dynamodb"]["SequenceNumber"]]
            )
    assert all(positions == sorted(positions) for positions in by_key.values())
    # And the checkpoint passed the whole stream
    assert list(run.positions.values()) == [records[-1]["dynamodb"]["SequenceNumber"]]


def test_with_unlimited_retries_a_batch_ends_at_the_failure_destination_when_its_records_leave_the_stream(
    pipeline, tmp_path, stream_clock
):
    # Given views stamped at one simulated instant (real stamps age apart on a loaded machine), now 10 s short of
    # the stream's 24-hour retention, and a function that always fails
    pipeline.record_one_by_one("a", 3, random.Random(1))
    clock = stream_clock
    clock.advance(24 * 3600 - 10)

    def fails(event: dict[str, Any], call: int) -> None:
        raise RuntimeError("always")

    function = Function(fails)
    run = runner(pipeline, function, tmp_path, clock, batch_size=10, max_retry_attempts=-1, max_record_age_seconds=-1)
    # When the runner retries it (back-offs 0.05 s doubling to 2 s on the simulated clock)
    run.drain()
    # Then once the records are older than 24 hours the batch goes to the failure destination, and the shard moves on
    (letter,) = read_dead_letters(tmp_path / "state")
    assert letter["requestContext"]["condition"] == "RecordAgeExceeded"
    assert letter["DDBStreamBatchInfo"]["batchSize"] == 3
    assert 5 < len(function.events) < 20
    records = pipeline.stream_records()
    assert list(run.positions.values()) == [records[-1]["dynamodb"]["SequenceNumber"]]


def test_each_further_lane_gets_its_own_execution_environment(pipeline, tmp_path):
    # Given views of eight items, and a runner with ParallelizationFactor 2 that makes a function per further lane
    rng = random.Random(5)
    for item in "abcdefgh":
        pipeline.record_one_by_one(item, 2, rng)
    main, further = Function(), []

    def environment() -> Function:
        further.append(Function())
        return further[-1]

    clock = SimulatedClock(time.time())
    run = runner(pipeline, main, tmp_path, clock, environment, batch_size=10, parallelization_factor=2)
    # When it delivers the stream
    run.drain()
    # Then one more environment was made, and the two lanes' records went to different functions, none twice
    assert len(further) == 1 and main.events and further[0].events
    assert not set(main.sequences()) & set(further[0].sequences())
    assert len(main.sequences()) + len(further[0].sequences()) == 16


def test_lanes_without_environments_of_their_own_take_turns_in_the_one_function(pipeline, tmp_path):
    # Given views of eight items, and a function that notes how many calls are in it at once
    rng = random.Random(5)
    for item in "abcdefgh":
        pipeline.record_one_by_one(item, 2, rng)
    inside, most, lanes = [0], [0], set()

    def count_inside(event: dict[str, Any], call: int) -> None:
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        lanes.add(threading.current_thread().name)
        for _ in range(100):
            time.sleep(0)  # yields to the other lane's thread: it would come in now if it could
        inside[0] -= 1

    function = Function(count_inside)
    run = runner(pipeline, function, tmp_path, SimulatedClock(time.time()), batch_size=2, parallelization_factor=2)
    # When it delivers the stream with ParallelizationFactor 2 and no lane_handler (the deployed handler's case)
    run.drain()
    # Then every record came from both lanes' threads, one invocation at a time
    assert len(function.sequences()) == 16 and len(lanes) == 2 and most == [1]
