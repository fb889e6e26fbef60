"""Where a view and an aggregate live: write shards (base table) and board shards (leaderboard GSI)."""

from __future__ import annotations

import functools
import hashlib
import math

from shardboard.domain.periods import kind_of


@functools.lru_cache(maxsize=65_536)  # an aggregator applies the same hot items batch after batch
def board_shard_of(item_id: str, board_shards: int) -> int:
    """The GSI shard (0..S-1) that holds ``item_id``: a stable hash, so each shard is one sorted list."""
    digest = hashlib.blake2b(item_id.encode("utf-8", errors="surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % board_shards


def write_shards_needed(views_per_second: float, item_kb: float = 1.0, headroom: float = 2.0) -> int:
    """The write-shard formula (docs/background.md): W = ceil(writes/s x ceil(item KB) / 1000 x headroom), >= 1.

    1,000 is DynamoDB's write-unit ceiling per partition key value per second; a write costs one unit per
    started KB.
    """
    if views_per_second < 0 or item_kb <= 0 or headroom < 1:
        raise ValueError("views_per_second >= 0, item_kb > 0 and headroom >= 1 are required")
    return max(1, math.ceil(views_per_second * math.ceil(item_kb) / 1000 * headroom))


def board_layout_prefix(board: str, shards: int) -> str:
    """What every GSI key of one layout starts with (``board_shard_value`` minus the shard number)."""
    return f"{board}#{shards}#"


def board_shard_value(board: str, shard: int, shards: int) -> str:
    """GSI partition key of board shard ``shard`` of ``shards``: naming the layout lets S change without collisions."""
    return f"{board}#{shards}#{shard}"


def period_shard_value(board: str, kind: str, bucket: str, shard: int, shards: int) -> str:
    """GSI partition key of board shard ``shard`` of one period (all time keeps ``board_shard_value``)."""
    return board_shard_value(kind_of(kind).key(board, bucket), shard, shards)
