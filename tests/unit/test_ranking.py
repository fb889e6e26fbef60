"""The exact top-N merge against sorting everything (ties included), and competition ranks."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain.publishing.gather import Entry, ShardRead, first_page_size, gather_top_n, top, with_ranks
from tests.conftest import examples


class FakeShards:
    """S sorted shards served in pages like a GSI query: views desc, equal views in an arbitrary order."""

    def __init__(self, shards: list[list[Entry]], seed: int) -> None:
        rng = random.Random(seed)
        self.shards = []
        for entries in shards:
            shuffled = entries[:]
            rng.shuffle(shuffled)  # the GSI does not order equal views by id
            self.shards.append(sorted(shuffled, key=lambda e: -e.views))
        self.cursor = [0] * len(shards)
        self.read = 0

    def fetch(self, shard: int, limit: int, first_page: bool) -> ShardRead:
        start = 0 if first_page else self.cursor[shard]
        page = self.shards[shard][start : start + limit]
        self.cursor[shard] = start + len(page)
        self.read += len(page)
        return ShardRead(page, more=self.cursor[shard] < len(self.shards[shard]))


entries = st.lists(
    st.tuples(st.text(alphabet="abcxyz#/ü ", min_size=1, max_size=4), st.integers(0, 12)),
    max_size=80,
    unique_by=lambda pair: pair[0],
)


@settings(max_examples=examples(300), deadline=None)
@given(entries=entries, shard_count=st.integers(1, 7), n=st.integers(1, 30), seed=st.integers(0, 10**6))
def test_gather_equals_sorting_everything(entries, shard_count, n, seed):
    # Given items spread over shards by any rule (the merge must not rely on the hash)
    rng = random.Random(seed)
    shards: list[list[Entry]] = [[] for _ in range(shard_count)]
    for item_id, views in entries:
        shards[rng.randrange(shard_count)].append(Entry(id=item_id, views=views))
    fake = FakeShards(shards, seed)
    # When the top n is gathered with adaptive paging
    with ThreadPoolExecutor(2) as pool:
        gathered = gather_top_n(n, shard_count, fake.fetch, each=pool.map)
    # Then it is exactly the top n of everything, in leaderboard order
    everything = [Entry(id=i, views=v) for i, v in entries]
    assert gathered.top == top(everything, n)
    assert gathered.items_read == fake.read
    assert sum(gathered.shard_hits.values()) == len(gathered.top)


def test_threshold_rule_reads_close_to_n_plus_s():
    # Given 10 shards of 2,000 distinct scores each and N = 1,000
    rng = random.Random(1)
    shards = [[Entry(id=f"{s}-{i}", views=rng.randrange(10**9)) for i in range(2000)] for s in range(10)]
    fake = FakeShards(shards, 1)
    gathered = gather_top_n(1000, 10, fake.fetch)
    # Then far fewer than S x N = 10,000 items are read, and the result is exact
    assert gathered.top == top([e for shard in shards for e in shard], 1000)
    assert gathered.items_read <= 1.3 * (1000 + 10)


def test_previous_hits_size_the_first_round():
    assert first_page_size(1000, 10, {3: 250}, 3) > first_page_size(1000, 10, {3: 50}, 3)
    assert first_page_size(5, 1, None, 0) == 5


def test_competition_ranks_share_and_skip():
    ordered = top([Entry(id="d", views=5), Entry(id="a", views=9), Entry(id="c", views=7), Entry(id="b", views=7)], 4)
    assert [(r.rank, r.id, r.views) for r in with_ranks(ordered)] == [
        (1, "a", 9),
        (2, "b", 7),
        (2, "c", 7),
        (4, "d", 5),
    ]


def test_order_is_views_desc_then_id_asc():
    assert [e.id for e in top([Entry(id="b", views=1), Entry(id="a", views=1), Entry(id="z", views=2)], 3)] == [
        "z",
        "a",
        "b",
    ]
