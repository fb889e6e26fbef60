"""The ports under contract: each test in this folder runs against every implementation of them.

``memory``: the in-memory stores (shardboard_tools.capacity.memory) on a virtual clock; ``engine``: the DynamoDB
adapters on the in-process engine (shardboard_tools.capacity.engine, a virtual clock); ``moto``: the DynamoDB adapters
on moto; ``dynamodb-local``: the DynamoDB adapters on Amazon DynamoDB Local (e2e: a java subprocess). The tables of
the last three come from template.yaml, as in every other test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from shardboard.adapters.shards_table import DailyKeyStore
from shardboard.domain.ports import (
    AllowanceCounters,
    Board,
    CounterImports,
    CounterReads,
    DailyKeys,
    ItemCatalog,
    RetrySafeViewCounters,
    ShardMetadataStore,
)
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import (
    MemoryBoardStore,
    MemoryDailyKeys,
    MemoryItemStore,
    MemoryShardMetadataStore,
    MemoryViewStore,
)
from shardboard_tools.capacity.stores import in_process
from shardboard_tools.local.runtime import Runtime
from tests.conftest import Pipeline

IMPLEMENTATIONS = ["memory", "engine", "moto", pytest.param("dynamodb-local", marks=pytest.mark.e2e)]


class ViewTable(RetrySafeViewCounters, AllowanceCounters, CounterReads, CounterImports, Protocol):
    """Every port of the base table: its writes, the rate limits' allowances, its reads and the import's writes."""


@dataclass
class Ports:
    """One implementation of each port, plus how to read the base table's stream as Lambda receives it (records in
    the event's JSON shape: not a port)."""

    name: str
    views: ViewTable
    board: Board  # every role of the board table (tests/contract/test_board.py runs each)
    shards: ShardMetadataStore
    stream: Callable[[], list[dict[str, Any]]]
    items: ItemCatalog
    keys: DailyKeys

    def counter_records(self) -> list[dict[str, Any]]:
        """The base stream's counter records. moto also emits a key-only INSERT before the one an UpdateItem that
        creates an item emits; DynamoDB emits only the second (that difference is moto's, not the port's)."""
        return [r for r in self.stream() if "item_id" in r["dynamodb"]["NewImage"]]


def dynamodb_ports(name: str, runtime: Runtime) -> Ports:
    pipeline = Pipeline(runtime)
    keys = DailyKeyStore(runtime.dynamodb, runtime.settings.shards_table)
    return Ports(
        name, runtime.views, runtime.board, runtime.shard_metadata, pipeline.stream_records, runtime.items, keys
    )


def memory_ports() -> Ports:
    emulator = CapacityEmulator(VirtualClock())
    views = MemoryViewStore(emulator)
    return Ports(
        "memory",
        views,
        MemoryBoardStore(emulator),
        MemoryShardMetadataStore(emulator),
        lambda: views.stream,
        MemoryItemStore(emulator),
        MemoryDailyKeys(emulator),
    )


def engine_ports() -> Ports:
    """The DynamoDB adapters on the in-process engine (shardboard_tools.capacity.engine), tables from template.yaml."""
    stores = in_process()
    records = stores.stream
    keys = DailyKeyStore(stores.engine, stores.settings.shards_table)
    return Ports("engine", stores.views, stores.board, stores.shard_metadata, lambda: records, stores.items, keys)


@pytest.fixture(params=IMPLEMENTATIONS)
def ports(request: pytest.FixtureRequest) -> Ports:
    """Fresh, empty tables of one implementation."""
    if request.param == "memory":
        return memory_ports()
    if request.param == "engine":
        return engine_ports()
    if request.param == "moto":
        return dynamodb_ports("moto", request.getfixturevalue("make_pipeline")().runtime)
    return dynamodb_ports("dynamodb-local", request.getfixturevalue("make_local")())
