"""Dynamic write sharding: an item's shard count grows when its base writes hit the partition limit.

States of one item (docs/dynamic-sharding.md draws them):

* **default**: no metadata item; writers use the template's ``WriteShards``. The long tail stays here forever.
* **grown**: a metadata item holds ``number_of_shards`` (> default), ``last_updated`` (epoch seconds of the last
  change), ``max_shards`` (the most it ever had) and ``shard_history`` (``epoch:count`` strings).
* A writer whose write is throttled *at the partition level* refreshes the metadata (at most once per
  ``refresh_seconds``), and once the cooldown has passed plus its own random back-off (1-10 s) it doubles
  the count with a conditional update on ``last_updated`` (optimistic locking); the store also checks the cooldown
  on the server side, so any number of writers make at most one change per cooldown window.
* A review (the snapshot schedule) halves the count when the item's measured rate has needed at most half of it
  for ``SHRINK_AFTER_SECONDS``. Counters on retired shards stay where they are, so readers of all shards read
  ``max_shards`` of them, never fewer: a shrink can never hide views.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from shardboard.domain.ports import ShardMetadata, ShardMetadataStore, ThrottleScope

# Writers keep "this item has no metadata" this long: one GetItem per long-tail item per TTL per writer. Staleness
# is safe (the default range is a subset of any grown one) and a throttled writer refreshes at once.
CACHE_TTL_SECONDS = 60.0
# A grown item's count is kept only this long: a writer still on the old, smaller range piles its writes on the
# low shards and makes other writers throttle (and grow again for nothing). 50 writers re-read it 10 times/s.
GROWN_CACHE_TTL_SECONDS = 5.0
# A throttled writer re-reads the metadata (strongly consistent) at most this often per item: 50 writers cost at
# most 50 reads/s on the metadata key however many of their writes are throttled.
REFRESH_SECONDS = 1.0
# Each writer waits a random 1-10 s after the cooldown before it tries to change the count.
BACKOFF_SECONDS = (1.0, 10.0)
# A shrink needs this long of low traffic: a quiet spell between two bursts must not cost a regrowth.
SHRINK_AFTER_SECONDS = 600.0
# The write-shard formula's 2x headroom: after a shrink each shard runs at most half its partition limit, so random
# imbalance between shards and the next minutes' growth do not throttle at once.
SHRINK_HEADROOM = 2.0

Growth = Literal["double", "add"]


@dataclass(frozen=True)
class ShardPolicy:
    """The numbers that drive growth and shrink (template: WriteShards, MaxWriteShards, ShardCooldownSeconds; the
    deployed functions run ``Settings.shard_policy``)."""

    default_shards: int
    max_shards: int
    cooldown_seconds: float
    growth: Growth = "double"
    backoff_seconds: tuple[float, float] = BACKOFF_SECONDS
    cache_ttl_seconds: float = CACHE_TTL_SECONDS
    grown_cache_ttl_seconds: float = GROWN_CACHE_TTL_SECONDS
    refresh_seconds: float = REFRESH_SECONDS
    shrink_after_seconds: float = SHRINK_AFTER_SECONDS
    # DynamoDB's write units per partition key value per second (views are <= 1 KB: one unit each).
    partition_write_units: float = 1000.0

    def __post_init__(self) -> None:
        if not 1 <= self.default_shards <= self.max_shards:
            raise ValueError(f"need 1 <= default shards <= max shards, got {self.default_shards}, {self.max_shards}")
        if self.cooldown_seconds < 0 or self.backoff_seconds[0] > self.backoff_seconds[1]:
            raise ValueError("cooldown must be >= 0 and the back-off a (low, high) range")

    @property
    def enabled(self) -> bool:
        return self.max_shards > self.default_shards

    def grown(self, count: int) -> int:
        """The next count up. Doubling reaches any rate in log2 steps; adding the default takes linear steps."""
        bigger = count * 2 if self.growth == "double" else count + self.default_shards
        return min(self.max_shards, bigger)

    def shrunk(self, count: int, views_per_second: float) -> int | None:
        """Half the count when the measured rate needs at most that (write-shard formula with headroom), else None."""
        half = max(self.default_shards, count // 2)
        needed = math.ceil(views_per_second * SHRINK_HEADROOM / self.partition_write_units)
        if half >= count or needed > half:
            return None
        return half


class Clock(Protocol):
    """Epoch seconds: ``last_updated`` is compared across writers, so it is the deployment's clock (``EpochSeconds``
    of the one clock, services/stores.py), not monotonic; a scenario's virtual time in the tools."""

    def now(self) -> float: ...


@dataclass
class _Cached:
    metadata: ShardMetadata | None
    expires: float


@dataclass
class _Growing:
    """One writer's plan for one item: when it last refreshed and when its back-off lets it try a change."""

    refreshed_at: float = -math.inf
    seen_last_updated: int | None = None
    try_after: float = math.inf


@dataclass
class WriterStats:
    metadata_reads: int = 0
    cache_hits: int = 0
    partition_throttles: int = 0
    table_throttles: int = 0
    increments: int = 0
    lost_races: int = 0  # conditional updates refused: another writer changed the count first


@dataclass
class ShardRouter:
    """One writer's view of shard counts: a TTL cache of metadata plus the grow-on-throttle rule.

    One per process (a Lambda container); thread-safe. ``clock``: the composition root's (virtual time in a scenario).
    """

    store: ShardMetadataStore
    policy: ShardPolicy
    clock: Clock
    rng: random.Random = field(default_factory=random.Random)
    stats: WriterStats = field(default_factory=WriterStats)
    on_change: Callable[[ShardMetadata], None] | None = None  # observers (the scenario's timeline)
    _cache: dict[str, _Cached] = field(default_factory=dict)
    _growing: dict[str, _Growing] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def shards(self, item_id: str) -> int:
        """How many write shards ``item_id`` has now (the default unless its metadata says more)."""
        metadata = self._cached(item_id)
        return metadata.number_of_shards if metadata else self.policy.default_shards

    def pick(self, item_id: str) -> tuple[int, int]:
        """A random shard in the item's current range, and the range's size it was drawn from."""
        count = self.shards(item_id)
        return self.rng.randrange(count), count

    def throttled(self, item_id: str, scope: ThrottleScope, count_used: int) -> None:
        """React to a throttled write drawn from ``count_used`` shards; the caller then retries the write."""
        if scope is ThrottleScope.TABLE:
            # More shards cannot help: the table (or account) is at its limit. Retry with back-off only.
            self.stats.table_throttles += 1
            return
        self.stats.partition_throttles += 1
        if not self.policy.enabled:
            return
        now = self.clock.now()
        with self._lock:
            plan = self._growing.setdefault(item_id, _Growing())
            refresh = now - plan.refreshed_at >= self.policy.refresh_seconds or item_id not in self._cache
            if refresh:
                plan.refreshed_at = now
        # Between refreshes the last value read will do: the conditional update refuses a stale one anyway.
        metadata = self._refresh(item_id) if refresh else self._cache[item_id].metadata
        count = metadata.number_of_shards if metadata else self.policy.default_shards
        if count > count_used or count >= self.policy.max_shards:
            return  # someone grew it already (retry in the larger range), or it cannot grow
        last_updated = metadata.last_updated if metadata else None
        with self._lock:
            if plan.seen_last_updated != last_updated or plan.try_after == math.inf:
                # A new cooldown window: count down a fresh random back-off from its end.
                cooldown_end = (last_updated + self.policy.cooldown_seconds) if last_updated is not None else now
                plan.seen_last_updated = last_updated
                plan.try_after = max(now, cooldown_end) + self.rng.uniform(*self.policy.backoff_seconds)
            if now < plan.try_after:
                return
            plan.try_after = math.inf
        self._grow(item_id, metadata, count, now)

    def _grow(self, item_id: str, metadata: ShardMetadata | None, count: int, now: float) -> None:
        changed = self.store.change_count(
            item_id,
            metadata,
            self.policy.grown(count),
            int(now),
            cooldown_seconds=self.policy.cooldown_seconds,
            default=self.policy.default_shards,
        )
        if changed is None:
            self.stats.lost_races += 1
            self._refresh(item_id)
            return
        self.stats.increments += 1
        self._remember(item_id, changed)
        if self.on_change:
            self.on_change(changed)

    def _cached(self, item_id: str) -> ShardMetadata | None:
        now = self.clock.now()
        with self._lock:
            cached = self._cache.get(item_id)
            if cached is not None and cached.expires > now:
                self.stats.cache_hits += 1
                return cached.metadata
        metadata = self.store.get(item_id)
        self.stats.metadata_reads += 1
        self._remember(item_id, metadata)
        return metadata

    def _refresh(self, item_id: str) -> ShardMetadata | None:
        metadata = self.store.get(item_id, consistent=True)
        self.stats.metadata_reads += 1
        self._remember(item_id, metadata)
        return metadata

    def _remember(self, item_id: str, metadata: ShardMetadata | None) -> None:
        ttl = self.policy.cache_ttl_seconds if metadata is None else self.policy.grown_cache_ttl_seconds
        with self._lock:
            self._cache[item_id] = _Cached(metadata, self.clock.now() + ttl)


def readable_shards(metadata: ShardMetadata | None, default_shards: int) -> int:
    """How many shards a reader of all shards must read: every shard that ever took a write."""
    if metadata is None:
        return default_shards
    return max(default_shards, metadata.max_shards, metadata.number_of_shards)


@dataclass(frozen=True)
class ReviewOutcome:
    item_id: str
    views_per_second: float
    shrunk_to: int | None


def review_item(
    store: ShardMetadataStore,
    metadata: ShardMetadata,
    views: int,
    now: int,
    policy: ShardPolicy,
) -> ReviewOutcome:
    """One shrink review of one grown item, given its total views now (from its aggregate).

    Traffic is "low" when half the shards would carry it with the write-shard formula's headroom; it must stay low for
    ``shrink_after_seconds`` and the cooldown must have passed since the last change.
    """
    elapsed = now - metadata.reviewed_at
    measured = metadata.reviewed_at > 0 and elapsed > 0
    rate = (views - metadata.reviewed_views) / elapsed if measured else math.inf
    target = policy.shrunk(metadata.number_of_shards, rate) if measured else None
    quiet_since = (metadata.quiet_since or metadata.reviewed_at) if target is not None else None
    if (
        target is not None
        and quiet_since is not None
        and now - quiet_since >= policy.shrink_after_seconds
        and now - metadata.last_updated >= policy.cooldown_seconds
    ):
        changed = store.change_count(
            metadata.item_id,
            metadata,
            target,
            now,
            cooldown_seconds=policy.cooldown_seconds,
            default=policy.default_shards,
        )
        if changed is not None:
            # The next shrink needs its own quiet period at the new count.
            store.note_review(changed, views, now, None)
            return ReviewOutcome(metadata.item_id, rate, target)
    store.note_review(metadata, views, now, quiet_since)
    return ReviewOutcome(metadata.item_id, rate, None)


def review_all(
    store: ShardMetadataStore, views_of: Callable[[str], int | None], now: int, policy: ShardPolicy
) -> list[ReviewOutcome]:
    """Review every grown item (the metadata table only holds items that needed more than the default)."""
    outcomes = []
    for metadata in store.scan():
        if metadata.number_of_shards <= policy.default_shards:
            continue
        views = views_of(metadata.item_id)
        outcomes.append(review_item(store, metadata, views or 0, now, policy))
    return outcomes
