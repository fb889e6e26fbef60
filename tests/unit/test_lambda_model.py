"""The delivery model alone, on an in-memory shard and a simulated clock: no network, no waiting."""

from __future__ import annotations

from typing import Any

from shardboard_tools.lambda_model.clock import SimulatedClock
from shardboard_tools.lambda_model.delivery import StreamDelivery, backoff_seconds
from shardboard_tools.lambda_model.feeds import MemoryShard
from shardboard_tools.lambda_model.mapping import MAX_PAYLOAD_BYTES, EventSourceMapping

ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/views/stream/1"


class Stream:
    """An in-memory stream list and its shard."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.shard = MemoryShard(self.take, lambda: len(self.records), ARN)

    def write(self, count: int, at: float, padding: int = 0) -> None:
        for _ in range(count):
            n = len(self.records) + 1
            change = {
                "SequenceNumber": f"{n:021d}",
                "Keys": {"pk": {"S": f"view#{n}"}},
                "ApproximateCreationDateTime": at,
            }
            self.records.append({"eventName": "INSERT", "dynamodb": change, "padding": "x" * padding})

    def take(self, limit: int) -> list[dict[str, Any]]:
        taken, self.records = self.records[:limit], self.records[limit:]
        return taken


def sizes(calls: list[dict[str, Any]]) -> list[int]:
    return [len(event["Records"]) for event in calls]


def test_a_batch_is_cut_before_it_outgrows_the_6_mb_payload():
    # Given twelve records of 1 MB each
    stream, calls = Stream(), []
    stream.write(12, at=0.0, padding=1024 * 1024)
    delivery = StreamDelivery(EventSourceMapping(batch_size=10), lambda e, c: calls.append(e), SimulatedClock())
    # When the whole stream is delivered
    stream.shard.closed = True
    delivery.deliver(stream.shard)
    # Then no invocation carries more than 6 MB: five records, five, then the last two
    assert sizes(calls) == [5, 5, 2]
    assert all(sum(len(r["padding"]) for r in event["Records"]) < MAX_PAYLOAD_BYTES for event in calls)


def test_without_waiting_a_partial_batch_goes_when_its_batching_window_has_passed():
    # Given a mapping with a 2 s batching window, a model that never waits, and three records read at t=0
    stream, calls, clock = Stream(), [], SimulatedClock()
    mapping = EventSourceMapping(batch_size=10, batching_window_seconds=2.0)
    delivery = StreamDelivery(mapping, lambda e, c: calls.append(e), clock, wait=False)
    stream.write(3, at=0.0)
    # When it is asked at t=0 and t=1.9, then at t=2
    delivery.deliver(stream.shard)
    clock.set(1.9)
    delivery.deliver(stream.shard)
    assert calls == [] and delivery.backlog(stream.shard.shard_id) == 3
    clock.set(2.0)
    delivery.deliver(stream.shard)
    # Then the three records go in one batch once the window has passed, not before
    assert sizes(calls) == [3]


def test_without_waiting_a_failed_batch_stalls_until_its_back_off_has_passed():
    # Given a function that fails its first invocation, and a model that never waits
    stream, clock, calls = Stream(), SimulatedClock(), []

    def fails_once(event: dict[str, Any], context: Any) -> None:
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("once")

    delivery = StreamDelivery(EventSourceMapping(batch_size=10), fails_once, clock, wait=False)
    stream.write(4, at=0.0)
    delivery.deliver(stream.shard)
    # When it is asked again before the first back-off (50 ms) has passed, then after it
    clock.set(backoff_seconds(1) / 2)
    delivery.deliver(stream.shard)
    assert len(calls) == 1 and delivery.stats.retries == 1
    clock.set(backoff_seconds(1))
    delivery.deliver(stream.shard)
    # Then the same batch went again, once, and the checkpoint passed it
    assert sizes(calls) == [4, 4] and calls[0] == calls[1]
    assert delivery.checkpoints.positions == {"shardId-memory": f"{4:021d}"}  # type: ignore[attr-defined]


def test_a_tumbling_window_waits_for_a_full_batch_or_its_end():
    # Given 10 s windows, batches of 4, and a model that never waits: 6 records at t=1, then 2 at t=3
    stream, clock, calls = Stream(), SimulatedClock(1.0), []

    def function(event: dict[str, Any], context: Any) -> dict[str, Any]:
        calls.append(event)
        return {"state": {"n": event["state"].get("n", 0) + len(event["Records"])}}

    mapping = EventSourceMapping(batch_size=4, tumbling_window_seconds=10, batching_window_seconds=300)
    delivery = StreamDelivery(mapping, function, clock, wait=False)
    stream.write(6, at=1.0)
    delivery.deliver(stream.shard)
    clock.set(3.0)
    stream.write(2, at=3.0)
    delivery.deliver(stream.shard)
    # When the clock reaches the window's end
    clock.set(10.0)
    delivery.deliver(stream.shard)
    # Then the two full batches went as they filled, and the window's end brought a final invocation with its state
    assert sizes(calls) == [4, 4, 0]
    assert [e["isFinalInvokeForWindow"] for e in calls] == [False, False, True]
    assert calls[2]["state"] == {"n": 8} and delivery.stats.windows == 1
