"""Capacity planning: write shards per hot item, GSI shards S, overload risk of a placement, refresh cost.

The overload probability is computed exactly (to double precision), not taken from seed 003's rule of thumb
("shards >= 10 x nodes keeps it under 5%", which only holds for 2-3 nodes): S shard keys hashed uniformly onto P
partitions give counts (X_1..X_P) ~ Multinomial(S, 1/P); a partition is overloaded when X_i > 1.5 S / P.
P(no overload) = P(all X_i <= c) with c = floor(1.5 S / P) is a convolution over partitions:

    f_j(s) = sum_{x=0..min(c,s)} Binomial(s, 1/j)(x) * f_{j-1}(s - x),   f_0(0) = 1,

f_j(s) being the probability that s keys spread uniformly over j partitions leave none above c.
"""

from __future__ import annotations

import math
import operator
import random
from dataclasses import asdict, dataclass
from typing import Any

from shardboard.domain.publishing.gather import Entry, ShardRead, gather_top_n
from shardboard.domain.sharding import write_shards_needed
from shardboard_tools.capacity.units import query_units

# "Overloaded" (seed 003): a partition above 1.5x its fair share of the keys.
OVERLOAD_FACTOR = 1.5
# The index's write load per partition key value is kept below 1,000 units/s with this headroom (as seed 001's).
HEADROOM = 2.0
# Each stream record can move at most one aggregate, and a moved sort key costs two index writes.
INDEX_WRITES_PER_RECORD = 2
PARTITION_WRITE_UNITS = 1000
# A by-views index entry (pk, board_shard, views, item_id) with ids of ~20 characters is about 100 bytes.
INDEX_ENTRY_BYTES = 100
# Refresh cost estimate: trials of the real scatter-gather on random boards, seeded so `plan` is reproducible.
REFRESH_TRIALS = 12
MAX_GSI_SHARDS = 4096


def overload_probability(shards: int, partitions: int, factor: float = OVERLOAD_FACTOR) -> float:
    """Exact P(some partition holds more than ``factor`` x shards/partitions of ``shards`` uniformly hashed keys).

    Plain Python (no numpy) so that ``shardboard plan`` works on a base install; O(1.5 S^2) multiply-adds.
    """
    if shards < 0 or partitions < 1:
        raise ValueError("shards >= 0 and partitions >= 1 are required")
    if partitions == 1 or shards == 0:
        return 0.0
    cap = math.floor(factor * shards / partitions + 1e-12)
    ways = [1.0] + [0.0] * shards  # f_0: no keys on no partitions
    for j in range(1, partitions + 1):
        ways = _add_partition(ways, j, cap)
    return min(1.0, max(0.0, 1.0 - ways[shards]))


def _add_partition(previous: list[float], j: int, cap: int) -> list[float]:
    """f_j from f_{j-1}: the j-th partition takes x <= cap of s keys, each key with probability 1/j.

    The binomial probabilities of x = 0..cap come row by row from Pascal's rule, B(s+1)(x) = B(s)(x) q + B(s)(x-1) p:
    no factorials, and terms too small for a double become 0 instead of overflowing.
    """
    if j == 1:  # the last partition takes every key (x == s), allowed only while s <= cap
        return [previous[0] if total <= cap else 0.0 for total in range(len(previous))]
    p = 1.0 / j
    q = 1.0 - p
    result = [0.0] * len(previous)
    row = [1.0]  # Binomial(total, p)(x) for x = 0..min(cap, total); total = 0 here
    for total in range(len(previous)):
        result[total] = sum(map(operator.mul, row, reversed(previous[total - len(row) + 1 : total + 1])))
        row = [kept * q + moved * p for kept, moved in zip([*row, 0.0], [0.0, *row], strict=True)][: cap + 1]
    return result


def monte_carlo_overload(shards: int, partitions: int, trials: int, seed: int = 0) -> float:
    """The same probability estimated by hashing keys at random ``trials`` times (a check of the exact value).

    Needs numpy (the bench extra): only the tests call it.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    placements = rng.integers(0, partitions, size=(trials, shards))
    counts = np.zeros((trials, partitions), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(trials), shards), placements.ravel()), 1)
    return float(np.mean(counts.max(axis=1) > OVERLOAD_FACTOR * shards / partitions))


def gsi_shards_for_writes(views_per_sec: float) -> int:
    """S so that the index's worst-case write load stays under 1,000 units/s per key with headroom."""
    return shards_for_index_writes(views_per_sec * INDEX_WRITES_PER_RECORD)


def shards_for_index_writes(index_writes_per_sec: float) -> int:
    """The least S that keeps ``index_writes_per_sec`` / S x HEADROOM within a key's 1,000 write units/s."""
    # The epsilon keeps float noise (0.1 x 3 = 0.30000000000000004) from asking for one shard more.
    return max(1, math.ceil(index_writes_per_sec * HEADROOM / PARTITION_WRITE_UNITS - 1e-9))


def gsi_shards_for_placement(minimum: int, partitions: int, max_probability: float) -> int:
    """The smallest S >= ``minimum`` whose overload probability on ``partitions`` is at most ``max_probability``.

    Scans upward: the probability is not monotone in S (c = floor(1.5 S / P) moves in steps), so no bisection.
    """
    for shards in range(max(1, minimum), MAX_GSI_SHARDS + 1):
        if overload_probability(shards, partitions) <= max_probability:
            return shards
    raise ValueError(f"no S up to {MAX_GSI_SHARDS} keeps the overload probability under {max_probability}")


@dataclass(frozen=True)
class RefreshCost:
    items_read: float
    read_units: float
    rounds: float


def refresh_cost(top_n: int, shards: int, trials: int = REFRESH_TRIALS, seed: int = 1) -> RefreshCost:
    """Expected items, read units and rounds of one steady-state refresh, measured on the real ``gather_top_n``.

    Each trial hashes (top_n x 4) items with distinct random views onto the shards and gathers twice: the second
    gather uses the first's per-shard hits for its first page sizes, as a refresh after a previous snapshot does.
    """
    rng = random.Random(seed)
    items = units = rounds = 0.0
    for _ in range(trials):
        board = _random_board(top_n * 4, shards, rng)
        first = gather_top_n(top_n, shards, _fetcher(board, []), None)
        pages: list[int] = []
        second = gather_top_n(top_n, shards, _fetcher(board, pages), first.shard_hits)
        items += second.items_read
        rounds += second.rounds
        units += sum(query_units([INDEX_ENTRY_BYTES] * size) for size in pages)
    return RefreshCost(items / trials, units / trials, rounds / trials)


def _random_board(size: int, shards: int, rng: random.Random) -> list[list[Entry]]:
    board: list[list[Entry]] = [[] for _ in range(shards)]
    for views, index in enumerate(rng.sample(range(size * 10), size)):
        board[rng.randrange(shards)].append(Entry(id=f"i{index}", views=views * 7 + index % 7))
    return [sorted(entries) for entries in board]


def _fetcher(board: list[list[Entry]], pages: list[int]) -> Any:
    offsets = [0] * len(board)

    def fetch(shard: int, limit: int, first_page: bool) -> ShardRead:
        start = 0 if first_page else offsets[shard]
        page = board[shard][start : start + limit]
        offsets[shard] = start + len(page)
        pages.append(len(page))
        return ShardRead(page, more=offsets[shard] < len(board[shard]))

    return fetch


@dataclass(frozen=True)
class Plan:
    views_per_sec: float
    hot_item_share: float
    item_kb: float
    partitions: int
    top_n: int
    max_overload_probability: float
    write_shards: int
    gsi_shards: int
    gsi_shards_for_writes: int
    overload_probability: float
    seed_rule_gsi_shards: int
    seed_rule_overload_probability: float
    refresh_items_read: float
    refresh_read_units: float
    refresh_rounds: float

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def plan(
    *,
    views_per_sec: float,
    hot_item_share: float,
    item_kb: float,
    partitions: int,
    top_n: int,
    max_overload_probability: float,
) -> Plan:
    """Write shards per hot item, GSI shards S and what they cost, for one leaderboard."""
    if not 0 <= hot_item_share <= 1:
        raise ValueError("hot_item_share must be between 0 and 1")
    if not 0 < max_overload_probability < 1:
        raise ValueError("max_overload_probability must be between 0 and 1 (exclusive)")
    if top_n < 1 or partitions < 1:
        raise ValueError("top_n and partitions must be at least 1")
    for_writes = gsi_shards_for_writes(views_per_sec)
    shards = gsi_shards_for_placement(for_writes, partitions, max_overload_probability)
    seed_rule = 10 * partitions
    cost = refresh_cost(top_n, shards)
    return Plan(
        views_per_sec=views_per_sec,
        hot_item_share=hot_item_share,
        item_kb=item_kb,
        partitions=partitions,
        top_n=top_n,
        max_overload_probability=max_overload_probability,
        write_shards=write_shards_needed(views_per_sec * hot_item_share, item_kb, HEADROOM),
        gsi_shards=shards,
        gsi_shards_for_writes=for_writes,
        overload_probability=overload_probability(shards, partitions),
        seed_rule_gsi_shards=seed_rule,
        seed_rule_overload_probability=overload_probability(seed_rule, partitions),
        refresh_items_read=cost.items_read,
        refresh_read_units=cost.read_units,
        refresh_rounds=cost.rounds,
    )
