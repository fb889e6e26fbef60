"""Record views: each view is one counter increment on a randomly chosen write shard of its item.

With a :class:`~shardboard.domain.dynamic_sharding.ShardRouter` the shard range is the item's current count
(seed 004), and a write throttled at the partition level grows it before the write is retried in the larger range.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import throttle_scope
from shardboard.adapters.views_table import ViewStore
from shardboard.domain import validation
from shardboard.domain.dynamic_sharding import ShardRouter, retry_delay

# Shard choice only needs to be uniform, not secret.
_RNG = random.Random()
# Attempts per view when a router is in charge (each after botocore's own retries): enough for a doubling to land.
MAX_WRITE_ATTEMPTS = 6


@dataclass(frozen=True)
class Recorded:
    item_id: str
    views: int
    write_units: float


def record_views(
    views: ViewStore,
    item_id: str,
    count: int,
    write_shards: int,
    rng: random.Random | None = None,
    *,
    router: ShardRouter | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Recorded:
    """Record ``count`` views of ``item_id``; input is validated first, so bad input writes nothing.

    Without ``router`` every item has ``write_shards`` shards; with it, each item has its own (dynamic) count.
    """
    item_id = validation.item_id(item_id)
    count = validation.view_count(count)
    rng = rng or _RNG
    if router is None:
        units = sum(views.add_view(item_id, rng.randrange(write_shards)) for _ in range(count))
    else:
        units = sum(add_routed_view(views, router, item_id, rng, sleep) for _ in range(count))
    return Recorded(item_id, count, units)


def attempt_view(views: ViewStore, router: ShardRouter, item_id: str) -> float | None:
    """One write on a shard the router picks; None when it was throttled (the router has reacted to it)."""
    shard, drawn_from = router.pick(item_id)
    try:
        return views.add_view(item_id, shard)
    except ClientError as error:
        scope = throttle_scope(error)
        if scope is None:
            raise
        router.throttled(item_id, scope, drawn_from)
        return None


def add_routed_view(
    views: ViewStore,
    router: ShardRouter,
    item_id: str,
    rng: random.Random,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Write one view, retrying throttled attempts with jittered back-off (each retry may land in a larger range)."""
    for attempt in range(MAX_WRITE_ATTEMPTS):
        shard, drawn_from = router.pick(item_id)
        try:
            return views.add_view(item_id, shard)
        except ClientError as error:
            scope = throttle_scope(error)
            if scope is None or attempt == MAX_WRITE_ATTEMPTS - 1:
                raise
            router.throttled(item_id, scope, drawn_from)
            sleep(retry_delay(attempt, rng))
    raise AssertionError("unreachable: the last attempt returns or raises")
