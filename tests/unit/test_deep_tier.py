"""The deep tier's gather against sorting everything, under random keyings that keep the T_D invariant."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain.publishing.deep_tier import DEEP_BUCKET_BASE, deep_bucket, gather_deep
from shardboard.domain.publishing.gather import Entry, top
from tests.conftest import examples


class DeepIndex:
    """Deep keys spread over shards, served best bucket first in pages that may split a bucket; ids unordered."""

    def __init__(self, keyed: dict[str, int], shards: int, rng: random.Random, page: int) -> None:
        self.shards: list[list[tuple[int, str]]] = [[] for _ in range(shards)]
        for item_id, views in keyed.items():
            self.shards[rng.randrange(shards)].append((deep_bucket(views), item_id))
        for entries in self.shards:
            rng.shuffle(entries)
            entries.sort(key=lambda pair: -pair[0])  # the range key orders buckets, nothing orders ids within one
        self.page = page
        self.buckets_read: set[int] = set()

    def read(self, shard: int) -> Iterator[tuple[int, list[str]]]:
        entries = self.shards[shard]
        start = 0
        while start < len(entries):
            bucket = entries[start][0]
            self.buckets_read.add(bucket)
            chunk = [item_id for b, item_id in entries[start : start + self.page] if b == bucket]
            start += len(chunk)
            yield bucket, chunk


items = st.dictionaries(st.text(alphabet="abcxyz#/ü ", min_size=1, max_size=4), st.integers(0, 80), max_size=90)


@settings(max_examples=examples(500), deadline=None)
@given(
    views=items,
    depth=st.integers(1, 40),
    top_n=st.integers(1, 10),
    shard_count=st.integers(1, 5),
    page=st.integers(1, 6),
    stale=st.floats(0, 1),
    seed=st.integers(0, 10**6),
)
def test_gather_deep_equals_sorting_everything(  # noqa: PLR0917 - hypothesis arguments
    views, depth, top_n, shard_count, page, stale, seed
):
    rng = random.Random(seed)
    everything = top((Entry(i, v) for i, v in views.items() if v > 0), len(views))
    truth = everything[:depth]
    # Given thresholds published as the pipeline does: T_N <= the N-th best, T_D <= min(T_N, the D-th best)
    v_n = everything[top_n - 1].views if len(everything) >= top_n else 0
    v_d = truth[-1].views if len(truth) >= depth else 0
    t_n = rng.choice([v_n, rng.randint(0, v_n)])
    t_d = rng.randint(0, min(t_n, v_d))
    # and keys that keep the invariant: views >= T_N -> head key; T_D <= views -> head or deep key; plus stale keys
    # of items that joined while a threshold was lower (rule 3: a key is never lost)
    head = {i for i, v in views.items() if v > 0 and (v >= max(1, t_n) or rng.random() < stale)}
    deep = {i: v for i, v in views.items() if v > 0 and i not in head and (v >= max(1, t_d) or rng.random() < stale)}
    index = DeepIndex(deep, shard_count, rng, page)
    read: list[str] = []

    def read_views(ids: Sequence[str]) -> Mapping[str, int]:
        read.extend(ids)
        return {i: views[i] for i in ids}

    head_top = top((Entry(i, views[i]) for i in head), depth)
    # When the top D is gathered from the head's top D and the deep buckets
    gathered = gather_deep(depth, head_top, shards=shard_count, read_buckets=index.read, read_views=read_views)
    # Then it is exactly the top D of everything, in leaderboard order
    assert gathered.top == truth
    # and it reads each item's views once, only for deep items, and no bucket below the one holding the D-th best
    assert len(read) == len(set(read)) == gathered.views_read
    assert set(read) <= set(deep)
    if len(truth) == depth and gathered.lowest_bucket is not None:
        assert gathered.lowest_bucket >= deep_bucket(v_d)


def test_buckets_are_exact_at_powers_of_the_base():
    for exponent in range(30):
        power = DEEP_BUCKET_BASE**exponent
        assert deep_bucket(power) == exponent
        assert deep_bucket(power * DEEP_BUCKET_BASE - 1) == exponent
    assert [deep_bucket(v, 4) for v in range(17)] == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]
    assert [deep_bucket(v, 16) for v in (0, 1, 15, 16, 255, 256)] == [0, 0, 0, 1, 1, 2]
    assert deep_bucket(10**9) == math.floor(math.log(10**9, DEEP_BUCKET_BASE))


def test_the_gather_stops_above_buckets_that_cannot_reach_the_dth_best():
    # Given a full top 2 in the head and deep keys in buckets that hold at most 3 views (4**1 - 1)
    views = {"a": 50, "b": 40, "c": 3, "d": 2}
    read: list[str] = []

    def read_views(ids: Sequence[str]) -> Mapping[str, int]:
        read.extend(ids)
        return {i: views[i] for i in ids}

    gathered = gather_deep(
        2,
        [Entry("a", 50), Entry("b", 40)],
        shards=1,
        read_buckets=lambda _: iter([(0, ["c", "d"])]),
        read_views=read_views,
    )
    # Then bucket 0 is never read: nothing in it can reach 40
    assert [e.id for e in gathered.top] == ["a", "b"]
    assert (read, gathered.deep_keys_read, gathered.lowest_bucket) == ([], 0, None)


def test_a_deep_item_beats_the_head():
    # Given the head's best is below a deep item (it joined the deep tier and has not yet reached T_N's head)
    views = {"a": 90, "h": 20, "z": 5}
    pages = iter([(deep_bucket(90), ["a"]), (deep_bucket(5), ["z"])])
    gathered = gather_deep(
        2, [Entry("h", 20)], shards=1, read_buckets=lambda _: pages, read_views=lambda ids: {i: views[i] for i in ids}
    )
    # Then it ranks first, and bucket 1 (4..15 views) is not read once a and h are in hand
    assert [(e.id, e.views) for e in gathered.top] == [("a", 90), ("h", 20)]
    assert gathered.lowest_bucket == deep_bucket(90)


def test_a_bucket_is_read_when_its_best_could_beat_the_dth_best():
    # Given a stale head item at 20 and a deep item at 30 in bucket 2 (16..63 views)
    views = {"h": 20, "a": 30}
    gathered = gather_deep(
        1,
        [Entry("h", 20)],
        shards=1,
        read_buckets=lambda _: iter([(2, ["a"])]),
        read_views=lambda ids: {i: views[i] for i in ids},
    )
    # Then bucket 2 is read although 20 >= 16, its least views: it may hold more than 20
    assert [(e.id, e.views) for e in gathered.top] == [("a", 30)]


@settings(max_examples=examples(300), deadline=None)
@given(
    counts=st.dictionaries(st.sampled_from("abcdefghijklmnop"), st.integers(1, 600), max_size=16),
    copies=st.dictionaries(st.sampled_from("abcdefghijklmnop"), st.integers(1, 600), max_size=8),
    raised=st.dictionaries(st.sampled_from("abcdefghijklmnop"), st.integers(0, 2), max_size=16),
    depth=st.integers(1, 12),
    shard_count=st.integers(1, 4),
    seed=st.integers(0, 10**6),
)
def test_a_period_gather_by_buckets_equals_sorting_everything(  # noqa: PLR0917 - hypothesis arguments
    counts, copies, raised, depth, shard_count, seed
):
    """A period's index (docs/coarse-index.md): no head, refs that are aggregates or the past entries archived from
    them (an item listed twice counts once, with its larger count), buckets at or above their count's (a bucket
    raised early by a writer that saw more is still sound), pages that split buckets."""
    rng = random.Random(seed)
    stored = {f"item#{item}": count for item, count in counts.items()}
    stored |= {f"entry#{item}": count for item, count in copies.items()}
    owner = {ref: ref.split("#", 1)[1] for ref in stored}
    shards: list[list[tuple[int, str]]] = [[] for _ in range(shard_count)]
    for ref, count in stored.items():
        bucket = deep_bucket(count) + raised.get(owner[ref], 0)
        shards[rng.randrange(shard_count)].append((bucket, ref))
    for entries in shards:
        rng.shuffle(entries)
        entries.sort(key=lambda pair: -pair[0])

    def read(shard: int) -> Iterator[tuple[int, list[str]]]:
        entries = shards[shard]
        start = 0
        while start < len(entries):
            bucket = entries[start][0]
            chunk = [ref for b, ref in entries[start : start + 2] if b == bucket]
            start += len(chunk)
            yield bucket, chunk

    def read_views(refs: Sequence[str]) -> Mapping[str, int]:
        return {ref: stored[ref] for ref in refs}

    gathered = gather_deep(
        depth, (), shards=shard_count, read_buckets=read, read_views=read_views, id_of=owner.__getitem__
    )
    best: dict[str, int] = {}
    for ref, count in stored.items():
        best[owner[ref]] = max(count, best.get(owner[ref], 0))
    assert gathered.top == top((Entry(item, count) for item, count in best.items()), depth)
