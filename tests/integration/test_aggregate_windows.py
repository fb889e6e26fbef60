"""The aggregator under tumbling windows: the state it keeps, and exact counts through the runner's window mode.

The integration tests read moto's real stream through the local event source mapping with TumblingWindowInSeconds
set, call the real handler, inject faults on the window's invocations and compare every count with the base table.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

import pytest

from shardboard.domain.aggregating.batch import ViewRecord, fold
from shardboard.domain.aggregating.window import STATE_VERSION, AggregationWindow, WindowStateError, pack, unpack
from shardboard.domain.writing.recording import record_views
from shardboard.handlers import aggregate
from shardboard_tools.lambda_model.mapping import EventSourceMapping

STEPS = [
    ViewRecord("global", "images/1.jpg", "2026-11-23", 3, 0, 1),
    ViewRecord("cats", "ünï #2", "2026-11-23", 0, 4, 5),
    ViewRecord("global", "images/1.jpg", "2026-11-23", 3, 1, 2),
    ViewRecord("global", "images/1.jpg", "2026-11-23", 7, 9, 10),
]


def window_event(state: dict[str, Any], final: bool) -> dict[str, Any]:
    return {"window": {"start": "2026-11-23T00:00:00Z", "end": "2026-11-23T00:00:30Z"}, "state": state,
            "isFinalInvokeForWindow": final, "isWindowTerminatedEarly": False}  # fmt: skip


def test_a_packed_batch_unpacks_to_the_same_steps():
    packed = pack(STEPS)
    assert packed.isascii() and json.dumps(packed) == f'"{packed}"'  # nothing for Lambda's JSON step to escape
    assert list(unpack(packed)) == [tuple(step) for step in STEPS]


@pytest.mark.parametrize(
    "steps",
    [[step for step in STEPS if step.board == "global"], [STEPS[0], STEPS[0]._replace(bucket="2026-11-24")], []],
    ids=["one-board-and-bucket", "two-buckets", "empty"],
)
def test_a_batch_of_one_board_and_bucket_or_not_unpacks_to_the_same_steps(steps):
    assert list(unpack(pack(steps))) == [tuple(step) for step in steps]


def test_a_window_folds_like_one_batch_of_all_its_records():
    first = AggregationWindow.of(window_event({}, final=False))
    assert first is not None
    first.add(STEPS[:2])
    state = json.loads(json.dumps(first.state()))  # as Lambda carries it to the next invocation
    last = AggregationWindow.of(window_event(state, final=True))
    assert last is not None and last.batches() == 2
    last.add(STEPS[2:])
    assert last.deltas() == fold(STEPS)
    assert last.state() == {}  # a final invocation hands back no state


def test_a_plain_batch_has_no_window():
    assert AggregationWindow.of({"Records": []}) is None


@pytest.mark.parametrize(
    "state",
    [
        {"v": 1, "items": {}},
        {"v": STATE_VERSION, "log": "x"},
        {"v": STATE_VERSION, "log": [3]},
        {"v": 2, "log": []},
        {"v": 3, "log": [pack(STEPS)]},
        "oops",
    ],
    ids=[
        "older-version",
        "log-not-a-list",
        "entry-not-a-string",
        "single-board-version",
        "previous-version",
        "not-an-object",
    ],
)
def test_a_state_this_function_did_not_write_is_refused(state):
    with pytest.raises(WindowStateError):
        AggregationWindow.of(window_event(state, final=False))


def test_an_unreadable_batch_in_the_state_is_refused():
    window = AggregationWindow.of(window_event({"v": STATE_VERSION, "log": ["not base64 at all!"]}, final=True))
    assert window is not None
    with pytest.raises(WindowStateError):
        window.deltas()


def test_a_window_carries_no_records_into_the_final_invocation_without_writing(pipeline):
    """A non-final invocation writes nothing; a final invocation with no records applies the state."""
    rng = random.Random(3)
    for _ in range(5):  # one request (one write, one stream record) per view
        record_views(pipeline.views, "a", 1, pipeline.settings.write_shards, rng, where=pipeline.where())
    records = pipeline.stream_records()
    invoke = pipeline.runtime.invoke
    answer = invoke(aggregate.handler, {**window_event({}, final=False), "Records": records})
    assert answer["batchItemFailures"] == [] and answer["state"]["log"]
    assert pipeline.board.aggregate_views("a") is None
    done = invoke(aggregate.handler, {**window_event(answer["state"], final=True), "Records": []})
    assert done == {"state": {}, "batchItemFailures": []}
    assert pipeline.board.aggregate_views("a") == 5


class Faults:
    """Wraps the real handler: fails chosen invocations, before the handler (nothing written) or after it."""

    def __init__(self) -> None:
        self.calls = 0
        self.final_calls = 0
        self.failed: list[str] = []

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        self.calls += 1
        final = bool(event.get("isFinalInvokeForWindow"))
        if self.calls == 2 and not final:
            self.failed.append("non-final, before the handler")
            raise RuntimeError("injected: invocation failed before writing")
        answer = aggregate.handler(event, context)
        if final:
            self.final_calls += 1
            if self.final_calls == 1:
                self.failed.append("final, after every write")
                raise RuntimeError("injected: crash after the window's writes, before the response")
        return answer


def test_counts_are_exact_through_windows_with_failed_invocations(pipeline, tmp_path, stream_clock):
    rng = random.Random(11)
    items = [f"images/{n}.jpg" for n in range(12)]
    for _ in range(3):  # views in two windows or more: some before a window boundary, some after
        for item in rng.sample(items, 8):
            for _ in range(rng.randint(1, 4)):  # one request (one write, one stream record) per view
                record_views(
                    pipeline.views,
                    item,
                    1,
                    pipeline.settings.write_shards,
                    rng,
                    where=pipeline.where(),
                )
        stream_clock.advance(0.6)
    mapping = replace(
        EventSourceMapping.from_template(pipeline.runtime.template),
        tumbling_window_seconds=1,
        batching_window_seconds=0,
        batch_size=10,
        max_retry_attempts=3,
    )
    faults = Faults()
    runner = pipeline.stream_runner(faults, tmp_path / "state", mapping=mapping, clock=stream_clock)
    runner.drain()
    assert faults.failed == ["non-final, before the handler", "final, after every write"]
    assert runner.dead_letters == []
    truth = pipeline.truth()
    assert {item: pipeline.board.aggregate_views(item) for item in truth} == truth
    assert sum(truth.values()) == sum(pipeline.board.aggregate_views(item) or 0 for item in items)
