"""Reviewing write shards: the use case behind the scheduled shard review and the CLI's ``shards --review``
(docs/dynamic-sharding.md): every item whose write shards grew is shrunk when its traffic fell."""

from __future__ import annotations

from dataclasses import dataclass

from shardboard.domain.clock import Clock
from shardboard.domain.ports import AggregateReads, ShardMetadataStore
from shardboard.domain.writing.dynamic_sharding import ReviewOutcome, review_all
from shardboard.services.clock import system_clock
from shardboard.services.stores import Container
from shardboard.settings import Settings


@dataclass(frozen=True)
class ShardReview:
    """What a review needs: the shard metadata (the grown items), the board table (their all-time views) and the
    stack's settings (its default and maximum write shards)."""

    shards: ShardMetadataStore
    board: AggregateReads
    settings: Settings
    clock: Clock = system_clock  # the time a review compares ``last_updated`` with

    @classmethod
    def of(cls, stores: Container) -> ShardReview:
        return cls(stores.shard_metadata, stores.board, stores.settings, stores.clock)


def review(stores: ShardReview, now: int | None = None, *, even_when_off: bool = False) -> list[ReviewOutcome]:
    """Review every grown item at ``now`` (epoch seconds; None: the clock), one outcome each. With dynamic sharding
    off (MaxWriteShards = WriteShards) no item ever grows, so the schedule reads nothing; an operator's review
    (``even_when_off``) still looks at what the table holds."""
    policy = stores.settings.shard_policy
    if not (policy.enabled or even_when_off):
        return []
    moment = int(stores.clock().timestamp()) if now is None else now
    return review_all(stores.shards, stores.board.aggregate_views, moment, policy)
