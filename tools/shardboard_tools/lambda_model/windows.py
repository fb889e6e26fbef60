"""Lambda's tumbling windows on a stream shard: bounds, the state carried between invocations, the event shape."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shardboard_tools.lambda_model.records import Record, arrival, iso_seconds, lambda_event, sequence_number

# A window's state above 1 MB ends the window early (isWindowTerminatedEarly).
MAX_WINDOW_STATE_BYTES = 1024 * 1024


@dataclass
class TumblingWindow:
    """A shard's open tumbling window: its bounds, the state the function returned, what it has taken so far.

    Windows are aligned on multiples of their length of the records' arrival time (ApproximateCreationDateTime).
    """

    start: float  # epoch seconds
    seconds: float
    state: dict[str, Any] = field(default_factory=dict)
    delivered: list[Record] = field(default_factory=list)  # records of the invocations that built ``state``
    last_sequence: str | None = None  # last record taken, filtered ones included: the checkpoint at the window's end
    terminated_early: bool = False  # the state outgrew 1 MB: the next invocation is a final one, then it reopens
    state_bytes: int = 2  # the state's JSON size (``{}``), kept so that sizing a batch never serialises it

    @classmethod
    def opened_by(cls, record: Record, seconds: float) -> TumblingWindow:
        return cls(window_start(record, seconds), seconds)

    @property
    def end(self) -> float:
        return self.start + self.seconds

    def holds(self, record: Record) -> bool:
        # A record stamped before the open window (clock skew) cannot reopen a closed one: it joins the open window.
        return window_start(record, self.seconds) <= self.start

    def took(self, records: Sequence[Record]) -> None:
        if records:
            self.last_sequence = sequence_number(records[-1])

    def succeeded(self, records: Sequence[Record], state: dict[str, Any], *, final: bool) -> None:
        self.delivered.extend(records)
        self.state = state
        if final:
            return  # a final invocation's state is dropped
        self.state_bytes = len(json.dumps(state))
        # A state over 1 MB ends the window early.
        if self.state_bytes > MAX_WINDOW_STATE_BYTES:
            self.terminated_early = True

    def event_bytes(self, stream_arn: str, shard_id: str) -> int:
        """Size of the window's event without records: what a batch's payload starts from."""
        return len(json.dumps(self.event(stream_arn, shard_id, [], final=False, state={}))) - 2 + self.state_bytes

    def event(
        self, stream_arn: str, shard_id: str, records: list[Record], *, final: bool, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The invocation event of a DynamoDB stream with a tumbling window (``state`` instead of the window's)."""
        return {
            **lambda_event(records),
            "window": {"start": iso_seconds(self.start), "end": iso_seconds(self.end)},
            # Lambda passes the state as JSON: the function never gets back the object it returned, and a retry
            # gets the same state even if the failed attempt changed its copy.
            "state": json.loads(json.dumps(self.state if state is None else state)),
            "shardId": shard_id,
            "eventSourceARN": stream_arn,
            "isFinalInvokeForWindow": final,
            "isWindowTerminatedEarly": final and self.terminated_early,
        }


def window_start(record: Record, seconds: float) -> float:
    """Start of the tumbling window ``record`` belongs to: its arrival, floored to a multiple of ``seconds``."""
    start = int(arrival(record) // seconds) * seconds
    return int(start) if float(start).is_integer() else start
