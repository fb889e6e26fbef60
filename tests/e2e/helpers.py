"""Small builders shared by the end-to-end tests."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from shardboard.domain.publishing.gather import Entry, top
from shardboard_tools.local.runtime import Runtime


def record_random_views(rt: Runtime, views: int, items: int, seed: int = 7) -> None:
    """``views`` views over ``items`` items (skewed: item k gets weight 1/k), written by 8 threads."""
    rng = random.Random(seed)
    names = [f"item-{k:03d}" for k in range(1, items + 1)]
    picks = rng.choices(names, weights=[1 / k for k in range(1, items + 1)], k=views)
    shards = [rng.randrange(rt.settings.write_shards) for _ in picks]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(rt.views.add_view, picks, shards))


def brute_force_top(rt: Runtime) -> list[list[object]]:
    """The exact top N from the base table, the slow obvious way."""
    truth = rt.views.scan_totals()
    return [[e.id, e.views] for e in top((Entry(id=i, views=v) for i, v in truth.items()), rt.settings.top_n)]
