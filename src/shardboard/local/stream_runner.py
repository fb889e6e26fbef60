"""Deliver the base table's stream to the aggregator handler in Lambda's event shape.

This is the simple form: batches of up to BatchSize records per shard, parents first, and on a partial batch
failure the shard resumes from the lowest failed sequence number (Lambda's ReportBatchItemFailures rule).
Positions live in memory; re-reading from the start is safe because the aggregation is exactly-once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shardboard.local.lambda_context import LocalContext
from shardboard.local.streams import (
    lambda_event,
    lambda_record,
    latest_stream_arn,
    read_shard,
    shards_parents_first,
)

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


class StreamStuck(RuntimeError):
    """A batch kept failing after the allowed retries."""


@dataclass
class RunStats:
    batches: int = 0
    records: int = 0
    retries: int = 0


@dataclass
class StreamRunner:
    dynamodb: Any
    streams: Any
    table: str
    handler: Handler
    batch_size: int = 1000
    max_retries: int = 3
    positions: dict[str, str] = field(default_factory=dict)  # shard id -> last sequence number handled
    stats: RunStats = field(default_factory=RunStats)

    def run_once(self) -> int:
        """One pass over every shard up to its current end; returns the records delivered."""
        arn = latest_stream_arn(self.dynamodb, self.table)
        delivered = 0
        for shard in shards_parents_first(self.streams, arn):
            delivered += self._drain_shard(arn, shard["ShardId"])
        return delivered

    def drain(self, idle_passes: int = 1) -> RunStats:
        """Deliver until a pass finds nothing new."""
        quiet = 0
        while quiet < idle_passes:
            quiet = quiet + 1 if self.run_once() == 0 else 0
        return self.stats

    def run_forever(self, poll_seconds: float = 1.0) -> None:
        while True:
            if self.run_once() == 0:
                time.sleep(poll_seconds)

    def _drain_shard(self, arn: str, shard_id: str) -> int:
        delivered = 0
        attempts = 0
        while True:
            progressed = False
            for page in read_shard(self.streams, arn, shard_id, self.positions.get(shard_id), self.batch_size):
                batch = [lambda_record(r, arn) for r in page]
                response = self.handler(lambda_event(batch), LocalContext()) or {}
                self.stats.batches += 1
                delivered += len(batch)
                failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
                done = _handled_prefix(batch, failed)
                if done:
                    self.positions[shard_id] = done[-1]["dynamodb"]["SequenceNumber"]
                    progressed = True
                if failed:
                    break  # resume from the lowest failed record, as Lambda does
            else:
                self.stats.records += delivered
                return delivered
            attempts = 0 if progressed else attempts + 1
            self.stats.retries += 1
            if attempts > self.max_retries:
                raise StreamStuck(f"shard {shard_id}: a batch failed {attempts} times in a row")


def _handled_prefix(batch: list[dict[str, Any]], failed: set[str]) -> list[dict[str, Any]]:
    """Records before the lowest failed one: Lambda checkpoints there and re-delivers the rest."""
    for index, record in enumerate(batch):
        if record["dynamodb"]["SequenceNumber"] in failed:
            return batch[:index]
    return batch
