"""``store.ShardMetadataStore`` in memory, charged to the capacity emulator like the other in-memory stores.

Same conditions as the DynamoDB expressions (optimistic lock on ``last_updated``, server-side cooldown cutoff), so
the scenario exercises the real races; every GetItem and UpdateItem is priced, so a hot metadata key would throttle.
"""

from __future__ import annotations

import math
from typing import Any

from shardboard.adapters.keys import (
    ITEM_ID,
    LAST_UPDATED,
    MAX_SHARDS,
    NUMBER_OF_SHARDS,
    PK,
    QUIET_SINCE,
    REVIEWED_AT,
    REVIEWED_VIEWS,
    SHARD_HISTORY,
    shards_pk,
)
from shardboard.adapters.shards_table import shard_metadata_from_item
from shardboard.domain.dynamic_sharding import ShardMetadata
from shardboard_tools.capacity.emulator import CapacityEmulator
from shardboard_tools.capacity.memory import MemoryTable
from shardboard_tools.capacity.schema import TableSchema


class MemoryShardMetadataStore:
    def __init__(self, emulator: CapacityEmulator, table: str = "memory-shards") -> None:
        self.data = MemoryTable(TableSchema(table, PK), emulator)

    def get(self, item_id: str, consistent: bool = False) -> ShardMetadata | None:
        with self.data.lock:
            item = self.data.read("GetItem", shards_pk(item_id), consistent)
        return None if item is None else shard_metadata_from_item(item)

    def change_count(
        self,
        item_id: str,
        expected: ShardMetadata | None,
        count: int,
        now: int,
        *,
        cooldown_seconds: float,
        default: int,
    ) -> ShardMetadata | None:
        pk = shards_pk(item_id)
        with self.data.lock:
            old = self.data.items.get(pk)
            if not _condition_holds(old, expected, now, cooldown_seconds):
                self.data.refuse("UpdateItem", pk)
                return None
            history = set(old[SHARD_HISTORY]["SS"]) if old and SHARD_HISTORY in old else set()
            history.add(f"{now}:{count}")
            if expected is None:
                history.add(f"0:{default}")
            most = max(count, default if expected is None else expected.max_shards)
            new: dict[str, Any] = {
                **(old or {PK: {"S": pk}}),
                ITEM_ID: {"S": item_id},
                NUMBER_OF_SHARDS: {"N": str(count)},
                LAST_UPDATED: {"N": str(now)},
                MAX_SHARDS: {"N": str(most)},
                SHARD_HISTORY: {"SS": sorted(history)},
            }
            self.data.write("UpdateItem", pk, new)
        return shard_metadata_from_item(new)

    def note_review(self, metadata: ShardMetadata, views: int, now: int, quiet_since: int | None) -> None:
        pk = shards_pk(metadata.item_id)
        with self.data.lock:
            old = self.data.items[pk]
            new = {**old, REVIEWED_VIEWS: {"N": str(views)}, REVIEWED_AT: {"N": str(now)}}
            new.pop(QUIET_SINCE, None)
            if quiet_since is not None:
                new[QUIET_SINCE] = {"N": str(quiet_since)}
            self.data.write("UpdateItem", pk, new)

    def scan(self) -> list[ShardMetadata]:
        with self.data.lock:
            return [shard_metadata_from_item(item) for item in self.data.scan() if ITEM_ID in item]


def _condition_holds(old: dict[str, Any] | None, expected: ShardMetadata | None, now: int, cooldown: float) -> bool:
    """The ConditionExpression of ``store.ShardMetadataStore.change_count``."""
    if expected is None:
        return old is None or LAST_UPDATED not in old
    if old is None or LAST_UPDATED not in old:
        return False
    last_updated = int(old[LAST_UPDATED]["N"])
    return (
        last_updated == expected.last_updated
        and int(old[NUMBER_OF_SHARDS]["N"]) == expected.number_of_shards
        and last_updated <= math.floor(now - cooldown)
    )
