"""A shard whose records come from memory: the benchmark's and the scenarios' in-memory streams."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shardboard_tools.lambda_model.delivery import Page
from shardboard_tools.lambda_model.records import Record

MEMORY_SHARD = "shardId-memory"


@dataclass
class MemoryShard:
    """One shard over an in-memory stream: ``take(n)`` removes and returns its oldest ``n`` records.

    Set ``closed`` once nothing more will be written: the shard ends when its last record has been read.
    """

    take: Callable[[int], list[Record]]
    remaining: Callable[[], int]
    stream_arn: str
    shard_id: str = MEMORY_SHARD
    closed: bool = False

    def read(self, limit: int) -> Page:
        records = self.take(limit)
        return Page(records, closed=self.closed and self.remaining() == 0)
