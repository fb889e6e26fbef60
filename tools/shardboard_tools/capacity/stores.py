"""The stack's real stores (``shardboard.adapters``) on the in-process engine, tables from template.yaml.

What the benchmark, the fast tests and the contract suite build instead of a DynamoDB endpoint: the adapters are the
only implementation of each port, the engine executes and prices their requests (``capacity.engine``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.items_table import ItemStore
from shardboard.adapters.keys import SK, item_record_pk
from shardboard.adapters.shards_table import ShardMetadataStore
from shardboard.adapters.views_table import ViewStore
from shardboard.services.stores import Container
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.engine import InProcessEngine
from shardboard_tools.template import Template

AUDIT_PREFIX = "audit#"  # adapters.keys.audit_sk


@functools.cache
def _template() -> Template:
    return Template.load()


def table_requests() -> list[dict[str, Any]]:
    """template.yaml's CreateTable requests (the stack's default table names)."""
    return list(_template().create_table_requests().values())


@dataclass
class EngineStores:
    """One in-process engine and the stack's stores over it."""

    engine: InProcessEngine
    settings: Settings
    container: Container

    @property
    def emulator(self) -> CapacityEmulator:
        return self.engine.emulator

    @property
    def views(self) -> ViewStore:
        return self.container.views

    @property
    def board(self) -> BoardStore:
        return self.container.board

    @property
    def shard_metadata(self) -> ShardMetadataStore:
        return self.container.shard_metadata

    @property
    def items(self) -> ItemStore:
        return self.container.items

    @property
    def stream(self) -> list[dict[str, Any]]:
        """The base table's stream records so far, as Lambda receives them (the list itself: take from it)."""
        return self.engine.stream(self.settings.views_table)

    def audit_rows(self, item_id: str) -> list[dict[str, Any]]:
        """The item's audit rows in the order they were written (tests read who hid it and why), unpriced."""
        table = self.engine.tables[self.settings.items_table]
        partition = table.partitions.get(item_record_pk(item_id))
        rows = partition.items.values() if partition else ()
        return [row for row in rows if row[SK]["S"].startswith(AUDIT_PREFIX)]

    def take_stream(self, limit: int) -> list[dict[str, Any]]:
        """Remove and return the oldest ``limit`` stream records (one Lambda batch)."""
        records = self.stream
        batch = records[:limit]
        del records[:limit]
        return batch


def in_process(
    emulator: CapacityEmulator | None = None, settings: Settings | None = None, **changes: Any
) -> EngineStores:
    """The stores on a fresh engine (a virtual clock's unless ``emulator`` is given), its tables named as ``settings``
    name them (default: template.yaml's settings, with ``changes``)."""
    settings = settings or _template().settings(**changes)
    defaults = _template().settings()
    renamed = {
        defaults.views_table: settings.views_table,
        defaults.board_table: settings.board_table,
        defaults.shards_table: settings.shards_table,
        defaults.items_table: settings.items_table,
    }
    requests = [{**r, "TableName": renamed.get(r["TableName"], r["TableName"])} for r in table_requests()]
    engine = InProcessEngine(requests, emulator or CapacityEmulator(VirtualClock()))
    return EngineStores(engine, settings, Container(settings, engine))
