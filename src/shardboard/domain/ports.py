"""What the domain needs from the outside world, as small Protocols, and the values that cross that boundary.

Adapters implement these for DynamoDB (shardboard.adapters), the tools in memory (shardboard_tools.capacity.memory),
and tests/contract runs one suite of cases against both. The domain imports neither boto3 nor botocore: errors
arrive here as domain outcomes (``Throttled``, a refused ``MoveResult``, a False).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from shardboard.domain.batch import ShardMove

# Where a GSI query stopped (DynamoDB's LastEvaluatedKey): opaque to the domain, handed back to resume.
Cursor = Mapping[str, Any]
# The snapshot item as plain values (board, version, generated_at, items, threshold, shard_hits, digest, ...).
Snapshot = dict[str, Any]


class ThrottleScope(Enum):
    """Which limit refused a write. Only a partition limit is helped by more shards."""

    PARTITION = "partition"
    TABLE = "table"


class Throttled(Exception):
    """A write was refused by a capacity limit (after the client's own retries) and changed nothing."""

    def __init__(self, scope: ThrottleScope) -> None:
        super().__init__(f"throttled at the {scope.value} limit")
        self.scope = scope


@dataclass(frozen=True)
class AggregateState:
    """What an aggregate holds: per-shard applied values, total views, and whether it carries the GSI key."""

    applied: dict[int, int]
    views: int
    in_index: bool


@dataclass(frozen=True)
class MoveResult:
    """Outcome of one compare-and-set on an aggregate: the state after it, or the state that refused it."""

    applied: bool
    state: AggregateState | None  # None only when a refused write did not return the item


@dataclass(frozen=True)
class BoardState:
    """The threshold item: sparse-index threshold T, GSI layout S and, during a reshard, the previous S."""

    threshold: int
    shards: int | None  # None until the first reshard: the template's BoardShards holds
    previous_shards: int | None

    def layouts(self, default_shards: int) -> list[int]:
        """Board shard counts to read, oldest first (two while a reshard is moving items)."""
        current = self.shards or default_shards
        return [self.previous_shards, current] if self.previous_shards else [current]


@dataclass(frozen=True)
class ShardMetadata:
    """The shard metadata item (docs/dynamic-sharding.md) for one item that needed more than the default."""

    item_id: str
    number_of_shards: int
    last_updated: int  # epoch seconds of the last change (the optimistic lock and the cooldown's start)
    max_shards: int  # the most shards the item ever had: readers of all shards read this many
    history: frozenset[str] = frozenset()  # "epoch:count"
    # The shrink review's bookkeeping: views and time at the last review, and since when traffic has been low.
    reviewed_views: int = 0
    reviewed_at: int = 0
    quiet_since: int | None = None

    def history_counts(self) -> list[tuple[int, int]]:
        """(epoch, count) pairs in time order."""
        return sorted(tuple(int(part) for part in entry.split(":", 1)) for entry in self.history)  # type: ignore[misc]


class ViewCounters(Protocol):
    """The base table: one counter per (item, write shard)."""

    def add_view(self, item_id: str, shard: int, count: int = 1) -> float:
        """Add ``count`` views to one write shard in one write; returns its write units, or raises Throttled."""
        ...


class Board(Protocol):
    """The board table: aggregates (compare-and-set), the sharded sparse GSI, threshold/layout and snapshot."""

    def move(self, item_id: str, moves: Sequence[ShardMove], board_shard: str | None) -> MoveResult:
        """Advance ``applied_k`` from each move's expected value (0 = absent) to its target, all or nothing."""
        ...

    def state(self, item_id: str) -> AggregateState:
        """An aggregate's state, strongly consistent (empty when it does not exist)."""
        ...

    def join_index(self, item_id: str, board_shard: str) -> bool:
        """Key an existing aggregate into the GSI; False if it has no aggregate or is keyed already."""
        ...

    def query_shard(
        self, board_shard: str, limit: int, start: Cursor | None
    ) -> tuple[list[tuple[str, int]], Cursor | None]:
        """Best ``limit`` (id, views) of one board shard after ``start``, and the cursor to resume from."""
        ...

    def get_board_state(self, board: str, consistent: bool = False) -> BoardState:
        """Threshold and layout, in one read."""
        ...

    def raise_threshold(self, board: str, threshold: int) -> bool:
        """Publish T if it is higher than the published one; False otherwise."""
        ...

    def get_snapshot(self, board: str, consistent: bool = False) -> Snapshot | None:
        """The snapshot, or None before the first one."""
        ...

    def put_snapshot(self, snapshot: Mapping[str, Any], previous_version: int | None) -> bool:
        """Write the snapshot if the stored one is still ``previous_version`` (None: there is none yet)."""
        ...


class ShardMetadataStore(Protocol):
    """What the writers and the review need of the shard metadata table."""

    def get(self, item_id: str, consistent: bool = False) -> ShardMetadata | None:
        """The item's metadata, or None while it has the default shard count."""
        ...

    def change_count(
        self,
        item_id: str,
        expected: ShardMetadata | None,
        count: int,
        now: int,
        *,
        cooldown_seconds: float,
        default: int,
    ) -> ShardMetadata | None:
        """Set the count if nobody changed it since ``expected`` and the cooldown has passed; None if refused."""
        ...

    def note_review(self, metadata: ShardMetadata, views: int, now: int, quiet_since: int | None) -> None:
        """Remember what the shrink review measured (never touches the count or the lock)."""
        ...

    def scan(self) -> list[ShardMetadata]:
        """Every item that ever grew."""
        ...
