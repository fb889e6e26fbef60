"""Tumbling windows (TumblingWindowInSeconds) in the local event source mapping, on moto's real stream.

The function is a fake that keeps, in its window state, the sequence numbers it has seen: what reaches it, with which
state, is the whole subject here (the real aggregator under windows: tests/integration/test_aggregate_windows.py).
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import groupby, pairwise
from typing import Any

import pytest

from shardboard.domain.writing.recording import record_views
from shardboard_tools.lambda_model.clock import SimulatedClock
from shardboard_tools.lambda_model.event_filter import matches_any
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.lambda_model.windows import MAX_WINDOW_STATE_BYTES, window_start
from shardboard_tools.local.stream_runner import StreamRunner, read_dead_letters
from shardboard_tools.local.streams import latest_stream_arn
from shardboard_tools.template import Template
from tests.conftest import ROOT

WINDOW_KEYS = {
    "Records",
    "window",
    "state",
    "shardId",
    "eventSourceARN",
    "isFinalInvokeForWindow",
    "isWindowTerminatedEarly",
}
ISO_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class FunctionFailed(Exception):
    pass


@dataclass
class WindowFunction:
    """A function with window state: ``{"seen": [sequence numbers]}``. ``fault(event)`` may raise or answer instead.

    ``calls`` keeps a copy of every event received with the shard's persisted checkpoint at that moment.
    """

    fault: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    runner: StreamRunner | None = None
    calls: list[tuple[dict[str, Any], str | None]] = field(default_factory=list)

    @property
    def events(self) -> list[dict[str, Any]]:
        return [event for event, _ in self.calls]

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        checkpoint = self.runner.positions.get(event["shardId"]) if self.runner else None
        self.calls.append((copy.deepcopy(event), checkpoint))
        answer = self.fault(event) if self.fault else None
        if answer is not None:
            return answer
        seen = event["state"].get("seen", []) + sequences(event["Records"])
        return {"state": {"seen": seen}, "batchItemFailures": []}


def sequences(records: list[dict[str, Any]]) -> list[str]:
    return [r["dynamodb"]["SequenceNumber"] for r in records]


def delivered(events: list[dict[str, Any]]) -> list[str]:
    """Sequence numbers of every record of ``events``, in order."""
    return [sequence for event in events for sequence in sequences(event["Records"])]


def record(pipeline: Any, clock: SimulatedClock, seconds: int = 1) -> None:
    """20 views, the last 8 after the next window boundary: the stream spans two windows or more."""
    rng = random.Random(1)
    for _ in range(12):  # one request (one write, one stream record) per view
        record_views(pipeline.views, "a", 1, pipeline.settings.write_shards, rng, where=pipeline.where())
    clock.advance(seconds - clock.now() % seconds + 0.01)
    for _ in range(8):
        record_views(pipeline.views, "b", 1, pipeline.settings.write_shards, rng, where=pipeline.where())


def windowed_runner(
    pipeline: Any,
    function: WindowFunction,
    tmp_path: Any,
    clock: SimulatedClock,
    *,
    seconds: int = 1,
    batch_size: int = 1,
    retries: int = 3,
) -> StreamRunner:
    mapping = replace(
        EventSourceMapping.from_template(pipeline.runtime.template),
        tumbling_window_seconds=seconds,
        batching_window_seconds=0,
        batch_size=batch_size,
        max_retry_attempts=retries,
    )
    runner = pipeline.stream_runner(function, tmp_path / "state", mapping=mapping, clock=clock)
    function.runner = runner
    return runner


def delivered_records(pipeline: Any, runner: StreamRunner) -> list[dict[str, Any]]:
    """The stream's records that pass the mapping's FilterCriteria, in stream order."""
    patterns = runner.settings.filter_patterns
    return [r for r in pipeline.stream_records() if not patterns or matches_any(patterns, r)]


def windows_of(records: list[dict[str, Any]], seconds: int) -> list[list[str]]:
    """Sequence numbers of ``records`` grouped by tumbling window, in stream order."""
    return [sequences(list(group)) for _, group in groupby(records, key=lambda r: window_start(r, seconds))]


def largest_window(pipeline: Any, runner: StreamRunner) -> list[str]:
    windows = windows_of(delivered_records(pipeline, runner), runner.settings.tumbling_window_seconds)
    largest = max(windows, key=len)
    assert len(largest) >= 3, "20 views written in well under a second share a window"
    return largest


def by_window(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Consecutive events of the same window (and shard)."""
    return [list(g) for _, g in groupby(events, key=window_of)]


def checkpoints_by_window(function: WindowFunction) -> list[set[str | None]]:
    """The persisted checkpoints seen during each window's invocations."""
    return [{checkpoint for _, checkpoint in g} for _, g in groupby(function.calls, key=lambda c: window_of(c[0]))]


def window_of(event: dict[str, Any]) -> tuple[str, str]:
    return event["shardId"], event["window"]["start"]


def epoch(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp())


# ----------------------------------------------------------------------------------------------- settings
def test_the_window_length_is_read_from_the_template():
    template = Template.load(ROOT / "template.yaml")

    def with_window(value: Any) -> Template:
        body = copy.deepcopy(template.body)
        stream = body["Resources"]["AggregatorFunction"]["Properties"]["Events"]["ViewsStream"]["Properties"]
        stream.pop("TumblingWindowInSeconds", None)
        if value is not None:
            stream["TumblingWindowInSeconds"] = value
        return replace(template, body=body, parameters={**template.parameters, "WindowSeconds": "45"})

    assert EventSourceMapping.from_template(with_window(30)).tumbling_window_seconds == 30
    # A parameter is resolved like the other settings
    assert EventSourceMapping.from_template(with_window({"Ref": "WindowSeconds"})).tumbling_window_seconds == 45
    assert EventSourceMapping.from_template(with_window(None)).tumbling_window_seconds == 0  # off unless set


@pytest.mark.parametrize("seconds", [-1, 901])
def test_a_window_outside_lambdas_range_is_refused(seconds):
    with pytest.raises(ValueError, match="TumblingWindowInSeconds"):
        EventSourceMapping(tumbling_window_seconds=seconds)


# ----------------------------------------------------------------------------------------------- happy path
def test_window_events_have_lambdas_shape_and_carry_the_state(pipeline, tmp_path, stream_clock):
    # Given views on the base table, and a function that tampers with the state it returned once it has returned it
    record(pipeline, stream_clock, seconds=2)
    returned: list[dict[str, Any]] = []

    def tamper(event):
        if returned:
            returned[-1]["seen"].append("tampered")
        seen = event["state"].get("seen", []) + sequences(event["Records"])
        returned.append({"seen": seen})
        return {"state": returned[-1], "batchItemFailures": []}

    function = WindowFunction(fault=tamper)
    # When the runner delivers them in 2-second windows
    run = windowed_runner(pipeline, function, tmp_path, stream_clock, seconds=2, batch_size=5)
    run.drain()

    # Then every event has the tumbling-window keys, aligned bounds and records of its window only
    arn = latest_stream_arn(pipeline.runtime.dynamodb, pipeline.settings.views_table)
    for event in function.events:
        assert set(event) == WINDOW_KEYS
        assert event["eventSourceARN"] == arn and event["shardId"].startswith("shardId-")
        assert ISO_SECONDS.match(event["window"]["start"]) and ISO_SECONDS.match(event["window"]["end"])
        start, end = epoch(event["window"]["start"]), epoch(event["window"]["end"])
        assert start % 2 == 0 and end == start + 2
        assert all(start <= r["dynamodb"]["ApproximateCreationDateTime"] < end for r in event["Records"])
        assert event["isWindowTerminatedEarly"] is False
    # And each window starts from {}, gets the state its previous invocation returned (a copy: Lambda serialises
    # it), and ends with exactly one final invocation, its last
    windows = by_window(function.events)
    assert any(len(events) > 1 for events in windows)  # some state was passed on
    for events in windows:
        assert events[0]["state"] == {}
        for before, after in pairwise(events):
            assert after["state"] == {"seen": before["state"].get("seen", []) + sequences(before["Records"])}
        assert [e["isFinalInvokeForWindow"] for e in events] == [False] * (len(events) - 1) + [True]
    assert "tampered" not in str([e["state"] for e in function.events])
    assert [epoch(w[0]["window"]["start"]) for w in windows] == sorted(
        {epoch(w[0]["window"]["start"]) for w in windows}
    )
    assert run.stats.windows == len(windows) >= 2


def test_every_record_is_delivered_once_and_checkpointed_at_window_ends(pipeline, tmp_path, stream_clock):
    # Given views on the base table
    record(pipeline, stream_clock)
    function = WindowFunction()
    run = windowed_runner(pipeline, function, tmp_path, stream_clock, batch_size=5)
    # When the runner delivers them in 1-second windows, in batches of up to 5 (12 views before the boundary: a
    # batch must stop at it)
    run.drain()
    # Then each window's records reach the function exactly once, in order, in batches of at most 5
    expected = delivered_records(pipeline, run)
    windows = windows_of(expected, 1)
    assert len(windows) >= 2
    assert [delivered(events) for events in by_window(function.events)] == windows
    assert all(len(e["Records"]) <= 5 for e in function.events)
    assert function.events[-1]["isFinalInvokeForWindow"]
    # And the final state of each window holds all of its records
    finals = [e for e in function.events if e["isFinalInvokeForWindow"]]
    assert [f["state"].get("seen", []) + sequences(f["Records"]) for f in finals] == windows
    # And while a window is open the persisted checkpoint stays at the previous window's last record
    ends = [None, *(w[-1] for w in windows)]
    assert checkpoints_by_window(function) == [{end} for end in ends[:-1]]
    shard_id = function.events[-1]["shardId"]
    assert run.positions[shard_id] == pipeline.stream_records()[-1]["dynamodb"]["SequenceNumber"]
    assert run.stats.windows == len(windows) and run.stats.retries == 0


def test_a_window_stays_open_until_its_end(pipeline, tmp_path, stream_clock):
    # Given views written well inside one 15-minute window
    rng = random.Random(1)
    for _ in range(6):  # one request (one write, one stream record) per view
        record_views(pipeline.views, "a", 1, pipeline.settings.write_shards, rng, where=pipeline.where())
    function = WindowFunction()
    run = windowed_runner(pipeline, function, tmp_path, stream_clock, seconds=900, batch_size=2)
    # When one pass reads the stream to its current end
    run.run_once()
    # Then every record reached the function, but the window is not over: no final invocation, no checkpoint
    assert delivered(function.events) == sequences(delivered_records(pipeline, run))
    assert not any(e["isFinalInvokeForWindow"] for e in function.events)
    assert run.positions == {} and run.stats.windows == 0


def test_run_forever_ends_windows_on_time_without_new_records(pipeline, tmp_path, stream_clock):
    # Given views in two windows or more, and a runner following the stream
    record(pipeline, stream_clock)
    function = WindowFunction()
    run = windowed_runner(pipeline, function, tmp_path, stream_clock, batch_size=5)
    windows = windows_of(delivered_records(pipeline, run), 1)

    def stop_after_the_last_window(event):
        if event["isFinalInvokeForWindow"] and run.stats.windows == len(windows) - 1:
            run.stop()  # the process is stopped once this invocation has returned

    function.fault = stop_after_the_last_window
    # When no more views come: the runner polls, its clock moves past the last window's end
    run.run_forever(poll_seconds=0.05)
    # Then every window had its final invocation, with the state of all its records
    finals = [e for e in function.events if e["isFinalInvokeForWindow"]]
    assert [f["state"].get("seen", []) + sequences(f["Records"]) for f in finals] == windows


# ----------------------------------------------------------------------------------------------- failures
@pytest.mark.parametrize("failure", ["raises", "no state", "batchItemFailures", "not JSON"])
def test_a_failed_invocation_is_retried_with_the_same_state(pipeline, tmp_path, stream_clock, failure):
    # Given a function whose second invocation fails once, in one of the ways Lambda counts as a failure, after
    # changing the state it was given
    record(pipeline, stream_clock)

    def second_fails(event):
        if len(function.calls) != 2:
            return None
        event["state"]["changed by the failed attempt"] = True
        if failure == "not JSON":  # Lambda cannot serialise the response: a function error
            return {"state": {"seen": {"a set"}}, "batchItemFailures": []}
        if failure == "raises":
            raise FunctionFailed("once")
        if failure == "no state":
            return {"batchItemFailures": []}
        return {"state": {"seen": []}, "batchItemFailures": [{"itemIdentifier": sequences(event["Records"])[0]}]}

    function = WindowFunction(fault=second_fails)
    run = windowed_runner(pipeline, function, tmp_path, stream_clock, batch_size=2)
    # When the runner delivers the stream
    run.drain()
    # Then the failed invocation is repeated as it was: same records, same window, same input state
    failed, retried = function.events[1], function.events[2]
    assert retried == failed
    assert run.stats.retries == 1 and run.stats.function_errors == (failure in ("raises", "not JSON"))
    # And apart from the failed attempt every record reached the function once
    successful = [e for i, e in enumerate(function.events) if i != 1]
    assert delivered(successful) == sequences(delivered_records(pipeline, run))


def test_exhausted_retries_send_the_window_so_far_to_the_failure_destination_and_start_afresh(
    pipeline, tmp_path, stream_clock
):
    # Given a window of three records or more, and a function that always fails on its second record
    record(pipeline, stream_clock)
    function = WindowFunction()
    run = windowed_runner(pipeline, function, tmp_path, stream_clock, batch_size=1, retries=1)
    first, poisoned, third = largest_window(pipeline, run)[:3]

    def poison(event):
        if sequences(event["Records"]) == [poisoned]:
            raise FunctionFailed("poisoned")

    function.fault = poison
    # When the runner delivers the stream
    run.drain()
    # Then the poisoned invocation was tried twice, then the window's records so far went to the failure destination
    assert [sequences(e["Records"]) for e in function.events].count([poisoned]) == 2
    (letter,) = read_dead_letters(tmp_path / "state")
    assert letter["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert letter["requestContext"]["approximateInvokeCount"] == 2
    assert letter["responseContext"]["functionError"] == "Unhandled"
    info = letter["DDBStreamBatchInfo"]
    assert (info["startSequenceNumber"], info["endSequenceNumber"], info["batchSize"]) == (first, poisoned, 2)
    # And the same window went on with a fresh state from the next record
    after = next(e for e in function.events if sequences(e["Records"]) == [third])
    poisoned_event = next(e for e in function.events if sequences(e["Records"]) == [poisoned])
    assert after["state"] == {} and after["window"] == poisoned_event["window"]
    assert run.stats.dead_letter_records == 2 and run.stats.windows == len(by_window(function.events))


def test_a_runner_restarted_mid_window_delivers_the_window_again_from_the_checkpoint(pipeline, tmp_path, stream_clock):
    # Given a window of several records, and a runner that dies after the window's first invocation
    record(pipeline, stream_clock)
    function = WindowFunction()
    first_run = windowed_runner(pipeline, function, tmp_path, stream_clock, batch_size=1)
    window = largest_window(pipeline, first_run)

    def killed(event):
        if sequences(event["Records"]) == window[:1]:
            assert not event["isFinalInvokeForWindow"]  # more of its window follows
            first_run.stop()  # the process dies once this invocation has returned

    function.fault = killed
    first_run.drain()
    assert function.events[-1]["Records"][0]["dynamodb"]["SequenceNumber"] == window[0]
    checkpoint = dict(first_run.positions)
    # When a new runner starts on the same state directory
    again = WindowFunction()
    second_run = windowed_runner(pipeline, again, tmp_path, stream_clock, batch_size=1)
    second_run.drain()
    # Then it starts after the last window that ended, with an empty state: the window's first record comes again
    assert again.events[0]["state"] == {} and sequences(again.events[0]["Records"]) == window[:1]
    assert again.calls[0][1] == checkpoint.get(again.events[0]["shardId"])
    expected = sequences(delivered_records(pipeline, second_run))
    assert delivered(again.events) == expected[expected.index(window[0]) :]


def test_a_state_over_1_mb_ends_the_window_early(pipeline, tmp_path, stream_clock):
    # Given a window of several records, and a function whose state outgrows 1 MB on the window's first record
    record(pipeline, stream_clock)
    function = WindowFunction()
    run = windowed_runner(pipeline, function, tmp_path, stream_clock, batch_size=1)
    window = largest_window(pipeline, run)
    big = {"seen": window[:1], "padding": "x" * MAX_WINDOW_STATE_BYTES}

    def outgrows(event):
        if sequences(event["Records"]) == window[:1]:
            return {"state": big, "batchItemFailures": []}
        return None

    function.fault = outgrows
    # When the runner delivers the stream
    run.drain()
    # Then the next invocation is a final one, terminated early, with that state and no records
    at = next(i for i, e in enumerate(function.events) if sequences(e["Records"]) == window[:1])
    early, after = function.events[at + 1], function.events[at + 2]
    assert early["isFinalInvokeForWindow"] and early["isWindowTerminatedEarly"]
    assert early["Records"] == [] and early["state"] == big
    # And the same window goes on with an empty state, checkpointed past the record the early end covered
    assert after["window"] == early["window"] and after["state"] == {}
    assert sequences(after["Records"]) == window[1:2] and function.calls[at + 2][1] == window[0]
    assert not any(e["isWindowTerminatedEarly"] for i, e in enumerate(function.events) if i != at + 1)
    assert run.stats.windows == len(windows_of(delivered_records(pipeline, run), 1)) + 1
