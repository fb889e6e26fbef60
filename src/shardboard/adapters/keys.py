"""The key scheme: every key, attribute name and index name of the three tables (template.yaml defines them).

A key is built from its parts but never parsed: the item id and shard number are stored as their own attributes,
so any id (``a#1``, ``x/y.jpg``) is safe.
"""

from __future__ import annotations

PK = "pk"
ITEM_ID = "item_id"
SHARD = "shard"
VIEWS = "views"
BOARD_SHARD = "board_shard"
BY_VIEWS_INDEX = "by-views"
APPLIED_PREFIX = "applied_"
# Board state on the threshold item: the GSI layout (S) and, while a reshard is moving items, the previous S.
BOARD_SHARDS_ATTR = "board_shards"
PREVIOUS_BOARD_SHARDS_ATTR = "previous_board_shards"


def view_pk(item_id: str, shard: int) -> str:
    return f"view#{shard}#{item_id}"


def aggregate_pk(item_id: str) -> str:
    return f"item#{item_id}"


def snapshot_pk(board: str) -> str:
    return f"snapshot#{board}"


def threshold_pk(board: str) -> str:
    return f"threshold#{board}"


def shards_pk(item_id: str) -> str:
    return f"shards#{item_id}"


def applied_attr(shard: int) -> str:
    return f"{APPLIED_PREFIX}{shard}"


# Shard metadata (docs/dynamic-sharding.md).
NUMBER_OF_SHARDS = "number_of_shards"
LAST_UPDATED = "last_updated"
MAX_SHARDS = "max_shards"
SHARD_HISTORY = "shard_history"
REVIEWED_VIEWS = "reviewed_views"
REVIEWED_AT = "reviewed_at"
QUIET_SINCE = "quiet_since"
