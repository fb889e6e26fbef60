"""Ranked versions: a period's exact top D, rewritten by the snapshot job at most every RankRefreshSeconds.

docs/proposals/items-and-ranks.md section 3. A ranked version is one deep gather (``gather_top_n`` with n = D) stored
as pages of P entries in board order and rank shards (id -> position) under a version id ``rv`` unique to the write.
The snapshot head names the current version in its ``rank`` block; superseded versions stay listed in ``retired``
for ``CursorTtlSeconds`` (with their takedown events), then their items are deleted. With ranked versions on, a
period kind's deep gather alone publishes the sparse-index threshold: T = the D-th best views, so every item that can
reach the top D stays keyed (the argument of docs/sparse-index.md with N replaced by D); a head refresh (N <= D) is
exact under the same T. All time has the deep tier instead (domain/publishing/deep_tier.py,
docs/proposals/deep-tier.md): T stays the (N+R)-th best and the gather publishes T_D, the D-th best, for the deep index.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from shardboard.domain.policy import Keep, Keeping
from shardboard.domain.ports import RankParts, RankShard
from shardboard.domain.publishing.gather import Entry, Gathered
from shardboard.domain.publishing.head import LastEntry, PageBounds, RankBlock, Retired, Row, ShardRow

# Entries per page (the proposal's P): ~4 KB, half a read unit.
RANK_PAGE_SIZE = 100
# Entries per rank shard: ~10 KB, so a lookup reads one small item whatever the depth.
ENTRIES_PER_RANK_SHARD = 250
# A version is due when this share of RankRefreshSeconds has passed: a job firing every 60 s then rewrites every
# 60 s although its start time jitters by a second or two, instead of every other run.
DUE_SHARE = 0.9


@dataclass(frozen=True)
class RankRefresh:
    """What the snapshot job does with ranked versions in one run of one period: delete the ``expired`` versions'
    items, write the new version's parts (``written``), then the head with its ``block``."""

    block: RankBlock | None  # the head's ``rank`` block to write (the previous one when nothing is due)
    threshold: int  # T to publish once the head is written (0: none)
    written: RankParts | None  # parts to write this run (deleted again if the head loses its race)
    expired: list[Retired]  # retired versions whose items are deleted this run


def rank_shard_count(depth: int) -> int:
    return max(1, math.ceil(depth / ENTRIES_PER_RANK_SHARD))


def rank_shard_of(item_id: str, shards: int) -> int:
    """The rank shard holding an id: a stable hash (not Python's, which changes per process)."""
    return int.from_bytes(hashlib.blake2b(item_id.encode(), digest_size=8).digest(), "big") % shards


def build_parts(ranked: Sequence[Entry], depth: int, rv: str) -> RankParts:
    """Pages and rank shards of the entries ``ranked`` (board order). A shard entry is [pos, tie start, views],
    1-based: the tie start is the position of the first entry with the same views, i.e. its competition rank."""
    pages = [
        [Row(e.id, e.views) for e in ranked[start : start + RANK_PAGE_SIZE]]
        for start in range(0, len(ranked), RANK_PAGE_SIZE)
    ]
    count = rank_shard_count(depth)
    shards: dict[int, RankShard] = {shard: {} for shard in range(count)}
    tie_start = 0
    for position, entry in enumerate(ranked, start=1):
        if position == 1 or ranked[position - 2].views != entry.views:
            tie_start = position
        shards[rank_shard_of(entry.id, count)][entry.id] = ShardRow(position, tie_start, entry.views)
    return RankParts(rv, pages, shards)


def page_index(ranked: Sequence[Entry]) -> list[PageBounds]:
    """Per page: [start position, first views, last views, tie start of its first entry] (the head keeps these)."""
    index = []
    for start in range(0, len(ranked), RANK_PAGE_SIZE):
        first = ranked[start]
        tie = start
        while tie > 0 and ranked[tie - 1].views == first.views:
            tie -= 1
        last = ranked[min(start + RANK_PAGE_SIZE, len(ranked)) - 1]
        index.append(PageBounds(start + 1, first.views, last.views, tie + 1))
    return index


def last_tie(ranked: Sequence[Entry]) -> int:
    tie = len(ranked)
    while tie > 1 and ranked[tie - 2].views == ranked[-1].views:
        tie -= 1
    return tie


def seconds_between(earlier: str, later: str) -> float:
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()


def due(previous: RankBlock | None, now: str, keeping: Keeping) -> bool:
    """A new version is due when there is none, or RankRefreshSeconds (less the jitter share) have passed."""
    if previous is None:
        return True
    return seconds_between(previous.generated_at, now) >= DUE_SHARE * keeping.rank_refresh_seconds


def digest_of(ranked: Sequence[Entry]) -> str:
    pairs = [Row(e.id, e.views) for e in ranked]
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()


def unchanged(previous: RankBlock | None) -> RankRefresh:
    """Nothing due: the head keeps its block."""
    return RankRefresh(previous, 0, None, [])


def plan_rank_version(
    keep: Keep, keeping: Keeping, previous: RankBlock | None, gathered: Gathered, *, now: str, rv: str
) -> RankRefresh:
    """The new ranked version ``rv`` of a due gather of the exact top D, unless the ranking did not change.

    Retired versions older than CursorTtlSeconds are deleted *before* the head that drops them is written: a crash
    in between leaves them listed, so the next run deletes them again (deletes are idempotent)."""
    depth = keep.depth
    ranked = gathered.top
    threshold = ranked[-1].views if len(ranked) >= depth else 0
    digest = digest_of(ranked)
    if previous is not None and previous.digest == digest:
        return RankRefresh(previous, threshold, None, [])
    retired = list(previous.retired) if previous else []
    if previous is not None:
        # Its events and length go with it: a cursor on it still reads the list its walk pinned.
        retired.append(Retired(previous.rv, now, len(previous.pages), previous.shards, previous.events, previous.count))
    expired = [r for r in retired if seconds_between(r.retired_at, now) >= keeping.cursor_ttl_seconds]
    parts = build_parts(ranked, depth, rv)
    block = RankBlock(
        rv=parts.rv,
        generated_at=now,
        depth=depth,
        count=len(ranked),
        page_size=RANK_PAGE_SIZE,
        shards=len(parts.shards),
        pages=tuple(page_index(ranked)),
        # The last entry's views and competition rank: a lookup past the version compares its views with them.
        last=LastEntry(ranked[-1].views, last_tie(ranked)) if ranked else LastEntry(0, 0),
        events=(),  # takedowns append here (services/takedowns.py); the gather already dropped hidden ids
        hits=dict(gathered.shard_hits),
        digest=digest,
        threshold=threshold,
        retired=tuple(r for r in retired if r not in expired),
    )
    return RankRefresh(block, threshold, parts, expired)


def previous_hits(block: RankBlock | None) -> dict[int, int] | None:
    return dict(block.hits) if block and block.hits else None
