"""Record views: each view is one counter increment on a randomly chosen write shard of its item."""

from __future__ import annotations

import random
from dataclasses import dataclass

from shardboard.domain import validation
from shardboard.store import ViewStore

# Shard choice only needs to be uniform, not secret.
_RNG = random.Random()


@dataclass(frozen=True)
class Recorded:
    item_id: str
    views: int
    write_units: float


def record_views(
    views: ViewStore, item_id: str, count: int, write_shards: int, rng: random.Random | None = None
) -> Recorded:
    """Record ``count`` views of ``item_id``; input is validated first, so bad input writes nothing."""
    item_id = validation.item_id(item_id)
    count = validation.view_count(count)
    rng = rng or _RNG
    units = sum(views.add_view(item_id, rng.randrange(write_shards)) for _ in range(count))
    return Recorded(item_id, count, units)
