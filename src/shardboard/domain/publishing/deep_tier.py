"""The deep tier's gather (issue 13, docs/proposals/items-and-ranks.md section 3, third lever): the exact top D from
the head GSI (items at or above T_N, views projected) and a KEYS_ONLY deep GSI per kind whose range key is a coarse
bucket of the views, so an item keyed there costs index writes only when it joins and when its bucket changes.

Exactness. The invariant (docs/sparse-index.md's argument with T replaced by T_D, published from the D-th best of a
deep gather, and T_D <= v_D): once the stream is drained, every item with views >= T_D carries the head key or a deep
key whose bucket is ``deep_bucket(views)``. Then:

* every head-keyed member of the true top D is in the top D of the head GSI, which ``head`` returns exactly;
* the gather reads the deep GSI a *whole* bucket at a time, best bucket first over every shard, and reads the exact
  views of what it found. Before reading bucket b it stops if it holds D candidates whose D-th best v' >=
  base**(b + 1). Every item it did not read sits in bucket b or below, so its views < base**(b + 1) <= v' <= v_D (the
  candidates are a subset of all items): it is strictly below the D-th best and cannot even tie with it.
* it never reads a bucket below k = deep_bucket(v_D): once every bucket >= k is read, every member of the true top D
  is a candidate, so v' = v_D >= base**k >= base**(b + 1) for any b < k.

``tests/unit/test_deep_tier.py`` checks it against sorting everything under random keyings that keep the invariant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from shardboard.domain.publishing.gather import Entry, top

# The bucket base. The cost model (tools/shardboard_tools/bench/deep_tier_model.py, docs/proposals/deep-tier.md) puts
# powers of 2 at or above the index tier on the benchmark (low counts cross a power of 2 almost every window); powers
# of 4 meet the 0.15 gate (+0.123) only if the aggregator's move knows whether the item is in the head, powers of 16
# (+0.136) even if it does not, which is how the move is built (the reads benchmark measures +0.110). Coarser buckets
# read more at gather time.
DEEP_BUCKET_BASE = 16
# How many buckets above its count's an item is keyed (``index_bucket``).
INDEX_BUCKET_SLACK = 1

# read_bucket(shard) -> that shard's index entries, best bucket first: (bucket, refs of the whole bucket). A ref names
# one stored item (the all-time tier: an aggregate by its id; a period: an aggregate or a past entry by its key).
ReadBuckets = Callable[[int], Iterator[tuple[int, list[str]]]]
# read_views(refs) -> exact counts (BatchGetItem of the aggregates or entries); a ref that is gone is left out
ReadViews = Callable[[Sequence[str]], Mapping[str, int]]


def deep_bucket(views: int, base: int = DEEP_BUCKET_BASE) -> int:
    """floor(log_base(views)) in integers (no float rounding at exact powers); 0 for views <= 1."""
    bucket = 0
    while views >= base:
        views //= base
        bucket += 1
    return bucket


def index_bucket(count: int) -> int:
    """The bucket an item is keyed at: one above its count's, so a count that grows up to sixteenfold after its join
    needs no raise (each costs an aggregate write and two index writes). A bucket above the count's is read sooner,
    never missed: the stopping rule needs only that no item sorts below its count's bucket."""
    return deep_bucket(count) + INDEX_BUCKET_SLACK


@dataclass(frozen=True)
class DeepGathered:
    top: list[Entry]
    deep_keys_read: int  # index entries the Query pages returned (KEYS_ONLY: ~100 bytes each)
    views_read: int  # aggregates BatchGet for their exact views (0.5 RU each, eventually consistent)
    lowest_bucket: int | None  # the last bucket read whole (None: none was needed, or the deep GSI is empty)
    buckets_read: int = 0


def gather_deep(
    depth: int,
    head: Sequence[Entry],
    *,
    shards: int,
    read_buckets: ReadBuckets,
    read_views: ReadViews,
    base: int = DEEP_BUCKET_BASE,
    id_of: Callable[[str], str] = str,
) -> DeepGathered:
    """The exact top ``depth`` given the head GSI's exact top ``depth`` (``head``, empty for an index sorted by
    buckets only) and the bucketed GSI's shards; ``id_of(ref)`` is the item a ref holds a count of (two refs of one
    item, an aggregate and the past entry archived from it, count once, with the larger count)."""
    candidates = {entry.id: entry.views for entry in head}
    head_ids = frozenset(candidates)
    read: set[str] = set()
    cursors = {shard: _Peek(read_buckets(shard)) for shard in range(shards)}
    keys_read = views_read = buckets_read = 0
    lowest: int | None = None
    while True:
        buckets = [bucket for bucket in (cursor.next_bucket() for cursor in cursors.values()) if bucket is not None]
        if not buckets:
            break
        bucket = max(buckets)
        if _enough(candidates, depth, base ** (bucket + 1)):  # all of bucket and below: views < base**(bucket + 1)
            break
        refs = [ref for cursor in cursors.values() for ref in cursor.take(bucket)]
        keys_read += len(refs)
        fresh = [ref for ref in dict.fromkeys(refs) if ref not in read and id_of(ref) not in head_ids]
        read.update(fresh)
        views_read += len(fresh)
        for ref, views in read_views(fresh).items():
            item_id = id_of(ref)
            candidates[item_id] = max(views, candidates.get(item_id, 0))
        lowest = bucket
        buckets_read += 1
    ranked = top((Entry(item_id, views) for item_id, views in candidates.items() if views > 0), depth)
    return DeepGathered(ranked, keys_read, views_read, lowest, buckets_read)


def _enough(candidates: Mapping[str, int], depth: int, floor: int) -> bool:
    """D candidates whose D-th best is at least ``floor``: nothing unread can reach it."""
    if len(candidates) < depth:
        return False
    return sorted(candidates.values(), reverse=True)[depth - 1] >= floor


class _Peek:
    """One shard's buckets, best first, with a look at the next bucket number."""

    def __init__(self, pages: Iterator[tuple[int, list[str]]]) -> None:
        self._pages = pages
        self._next: tuple[int, list[str]] | None = next(pages, None)

    def next_bucket(self) -> int | None:
        return None if self._next is None else self._next[0]

    def take(self, bucket: int) -> list[str]:
        ids: list[str] = []
        while self._next is not None and self._next[0] == bucket:  # a bucket may come in several pages
            ids += self._next[1]
            self._next = next(self._pages, None)
        return ids
