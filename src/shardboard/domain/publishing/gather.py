"""Exact top N over S sorted shards, reading close to the minimum N + S items.

Each board shard is a list sorted by views (the GSI). Read ``m`` items from every shard in parallel; let T be the
N-th best views gathered. A shard is finished when it is exhausted or the last views it returned are below T: every
item it still holds is worse than N items already in hand. Otherwise page that shard again. Ties are ordered by id,
and because the GSI orders equal views arbitrarily, a shard whose last item equals T must be read further.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class Entry:
    """An item and its views. Sorting entries gives leaderboard order: views desc, then id asc."""

    sort_key: tuple[int, str] = field(init=False, repr=False)
    id: str = field(compare=False)
    views: int = field(compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sort_key", (-self.views, self.id))


@dataclass(frozen=True)
class RankedEntry:
    """A leaderboard entry as every answer shows it (top, pages, around-me)."""

    rank: int  # exact competition rank
    id: str
    views: int
    previous_rank: int | None = None  # its rank in the snapshot before (movement); None: new, or not known
    day_before_rank: int | None = None  # its rank a day before (domain/publishing/day_before.py); None: not known

    def as_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "id": self.id,
            "views": self.views,
            "previous_rank": self.previous_rank,
            "day_before_rank": self.day_before_rank,
        }


def top(entries: Iterable[Entry], n: int) -> list[Entry]:
    """The n best entries in leaderboard order."""
    return sorted(entries)[:n]


def with_ranks(ordered: Sequence[Entry]) -> list[RankedEntry]:
    """Competition ranks ("1224"): equal views share a rank, the next rank skips."""
    ranked: list[RankedEntry] = []
    for position, entry in enumerate(ordered, start=1):
        rank = ranked[-1].rank if ranked and ranked[-1].views == entry.views else position
        ranked.append(RankedEntry(rank, entry.id, entry.views))
    return ranked


@dataclass(frozen=True)
class ShardRead:
    """One query result of a board shard, best first. ``more`` is False when the shard is exhausted."""

    entries: list[Entry]
    more: bool


# fetch(shard, limit, first_page) -> ShardRead; the fetcher keeps each shard's paging cursor.
Fetch = Callable[[int, int, bool], ShardRead]
# Request = (shard, limit, first_page)
Request = tuple[int, int, bool]
# each(call, requests) -> the pages, in the requests' order: ``map``, or a thread pool's map (the caller owns it)
Each = Callable[[Callable[[Request], ShardRead], list[Request]], Iterable[ShardRead]]


@dataclass(frozen=True)
class Gathered:
    top: list[Entry]
    items_read: int
    rounds: int
    # How many of the top N each shard held: next refresh's first-round page sizes.
    shard_hits: dict[int, int]
    # Sums of periods (a window, a trending head) the indexes could not prove, counted from a scan instead.
    scans: int = 0


def first_page_size(n: int, shards: int, previous_hits: Mapping[int, int] | None, shard: int) -> int:
    """Round-one page: the shard's expected share of the top N, a margin, and one item to see below T.

    Without history the share is N/S and the margin ~2 standard deviations of a binomial share. With the previous
    snapshot's exact per-shard count, the margin only covers the drift since then (half a standard deviation):
    a 2-sigma margin there read ~1.2 x (N + S) items per refresh instead of ~1.05 x.
    """
    if previous_hits and shard in previous_hits:
        expected: float = previous_hits[shard]
        spread = math.sqrt(expected) / 2
    else:
        expected = n / shards
        spread = 2 * math.sqrt(max(expected, 1.0) * (1 - 1 / shards)) if shards > 1 else 0
    return max(1, min(n, math.ceil(expected + spread) + 1))


def next_page_size(n: int, shards: int) -> int:
    """Later rounds: shards still open usually lack only a few items; a small page avoids over-reading."""
    return max(2, math.ceil(n / shards / 4))


def gather_top_n(
    n: int,
    shards: int,
    fetch: Fetch,
    previous_hits: Mapping[int, int] | None = None,
    each: Each = map,
) -> Gathered:
    """Exact top ``n`` across ``shards`` sorted shards (see module docstring for the rule); ``each`` reads a round's
    pages (the snapshot job passes a thread pool's ``map``: a round is then one round trip)."""
    # By id: an item may be read twice (from two layouts during a reshard, or as an aggregate and the past entry
    # archived from it); it counts once, with its larger views, or the N-th best would be wrong.
    gathered: dict[str, Entry] = {}
    origin: dict[str, int] = {}
    last_seen: dict[int, int] = {}
    page_sizes = {s: first_page_size(n, shards, previous_hits, s) for s in range(shards)}
    rounds = items_read = 0
    while page_sizes:
        rounds += 1
        requests = [(shard, size, rounds == 1) for shard, size in page_sizes.items()]
        exhausted = set()
        for (shard, _, _), page in zip(requests, each(lambda r: fetch(*r), requests), strict=True):
            items_read += len(page.entries)
            for entry in page.entries:
                if entry.id not in gathered or entry.views > gathered[entry.id].views:
                    gathered[entry.id] = entry
                    origin[entry.id] = shard
            if page.entries:
                last_seen[shard] = page.entries[-1].views
            if not page.more:
                exhausted.add(shard)
        threshold = _nth_best_views(list(gathered.values()), n)
        page_sizes = {
            s: next_page_size(n, shards)
            for s in page_sizes
            if s not in exhausted and (threshold is None or last_seen.get(s, math.inf) >= threshold)
        }
    best = top(gathered.values(), n)
    hits = Counter(origin[e.id] for e in best)
    return Gathered(best, items_read, rounds, dict(hits))


def _nth_best_views(entries: Sequence[Entry], n: int) -> int | None:
    if len(entries) < n:
        return None
    return sorted((e.views for e in entries), reverse=True)[n - 1]
