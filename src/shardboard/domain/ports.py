"""What the domain needs from the outside world, as small Protocols, and the values that cross that boundary.

Adapters implement these for DynamoDB (shardboard.adapters); the tools implement them in memory. The domain
imports neither boto3 nor botocore: errors arrive here as domain outcomes (``Throttled``, a refused ``MoveResult``).
"""

from __future__ import annotations

from dataclasses import dataclass


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
