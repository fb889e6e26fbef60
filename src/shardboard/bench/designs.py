"""The three designs the benchmark compares, each pricing its requests on its own CapacityEmulator.

``seed-unsharded`` and ``seed-sharded`` are seed 002's designs as the article describes them (one image item per
image, ``UpdateItem ADD ViewCount :1`` per view, a leaderboard GSI on "IMAGES" or on a random ``PARTITION_k`` set at
creation, and a refresh that queries N items from every GSI partition). ``shardboard`` is this project's real code:
``record_views`` on the in-memory base table, the real aggregator processor on its stream in 1,000-record batches,
``take_snapshot`` on the in-memory board.
"""

from __future__ import annotations

import gc
import random
import time
from typing import Protocol

from aws_lambda_powertools.utilities.batch import process_partial_response

from shardboard.bench.workload import Workload
from shardboard.capacity.emulator import CapacityEmulator, Charge
from shardboard.capacity.memory import MemoryBoardStore, MemoryTable, MemoryViewStore, metering_overhead_seconds
from shardboard.capacity.schema import IndexSchema, TableSchema
from shardboard.capacity.units import item_size, query_units, read_units
from shardboard.config import Settings
from shardboard.domain.recording import record_views
from shardboard.domain.snapshot import take_snapshot
from shardboard.handlers.aggregate import AggregatingProcessor, read_view

SEED_TABLE = "seed-images"
SEED_INDEX = "leaderboard"
SEED_UNSHARDED = "seed-unsharded"
SEED_SHARDED = "seed-sharded"
SHARDBOARD = "shardboard"
DESIGNS = (SEED_UNSHARDED, SEED_SHARDED, SHARDBOARD)


class Design(Protocol):
    name: str
    emulator: CapacityEmulator

    def view(self, item_id: str) -> None:
        """Record one view (raises the throttling ClientError when refused)."""
        ...

    def settle(self, final: bool = False) -> None:
        """Background work due now (the aggregator's full batches; every leftover record when ``final``)."""
        ...

    def pending(self) -> int:
        """Records still waiting for background work."""
        ...

    def refresh(self) -> int:
        """Rebuild the leaderboard the design's way; returns the items it read."""
        ...

    def frontend_read_units(self) -> float:
        """Read units one frontend request for the leaderboard costs."""
        ...

    def top(self) -> list[tuple[str, int]]:
        """The leaderboard it would show: (id, views), best first."""
        ...

    def aggregator_cpu_us_per_record(self) -> float | None: ...


class SeedDesign:
    """Seed 002: image items with ViewCount, a leaderboard GSI on one or S partition values, N read per value."""

    def __init__(self, workload: Workload, sharded: bool, emulator: CapacityEmulator) -> None:
        self.name = SEED_SHARDED if sharded else SEED_UNSHARDED
        self.emulator = emulator
        self.top_n = workload.top_n
        self.partitions = workload.gsi_shards if sharded else 1
        self.sharded = sharded
        index = IndexSchema(SEED_INDEX, "GSIHash", "ViewCount", None)
        self.table = MemoryTable(TableSchema(SEED_TABLE, "Image", None, (index,)), emulator)
        self.members: dict[str, dict[str, int]] = {}
        self.rng = random.Random(workload.seed)
        self._last_top: list[tuple[str, int]] = []

    def view(self, item_id: str) -> None:
        old = self.table.items.get(item_id)
        if old is None:  # seed 002: a new image is randomly assigned a partition at creation
            gsi_hash = f"PARTITION_{self.rng.randrange(self.partitions)}" if self.sharded else "IMAGES"
            old_views = 0
        else:
            gsi_hash, old_views = old["GSIHash"]["S"], int(old["ViewCount"]["N"])
        new = {"Image": {"S": item_id}, "ViewCount": {"N": str(old_views + 1)}, "GSIHash": {"S": gsi_hash}}
        self.table.write("UpdateItem", item_id, new)
        self.members.setdefault(gsi_hash, {})[item_id] = old_views + 1

    def settle(self, final: bool = False) -> None:
        """No background work: the seed writes the index on every view."""

    def pending(self) -> int:
        return 0

    def refresh(self) -> int:
        """Query the best N of every partition value and merge them (seed 002's scatter-gather)."""
        gathered: list[tuple[str, int]] = []
        for partition, members in self.members.items():
            best = sorted(members.items(), key=lambda pair: (-pair[1], pair[0]))[: self.top_n]
            sizes = [item_size(self.table.items[item]) for item, _ in best]
            units = query_units(sizes, consistent=False)
            self.emulator.admit("Query", [Charge(SEED_TABLE, f"{SEED_TABLE}/{SEED_INDEX}", partition, "read", units)])
            gathered.extend(best)
        self._last_top = sorted(gathered, key=lambda pair: (-pair[1], pair[0]))[: self.top_n]
        return len(gathered) if self.members else 0

    def frontend_read_units(self) -> float:
        """The seed has no stored leaderboard: each frontend request runs the scatter-gather queries itself."""
        size = item_size({"Image": {"S": "images/00000.jpg"}, "ViewCount": {"N": "12345"}, "GSIHash": {"S": "IMAGES"}})
        return self.partitions * query_units([size] * self.top_n, consistent=False)

    def top(self) -> list[tuple[str, int]]:
        return self._last_top

    def aggregator_cpu_us_per_record(self) -> float | None:
        return None


class ShardboardDesign:
    """Our real code on in-memory tables: record_views -> stream -> aggregator handler -> take_snapshot."""

    name = SHARDBOARD

    def __init__(self, workload: Workload, emulator: CapacityEmulator) -> None:
        self.emulator = emulator
        self.batch_size = workload.batch_size
        self.settings = Settings(
            views_table="memory-views",
            board_table="memory-board",
            write_shards=workload.write_shards,
            board_shards=workload.gsi_shards,
            top_n=workload.top_n,
            # The in-memory store has no network latency to overlap; threads would only add dispatch cost.
            write_concurrency=1,
        )
        self.views = MemoryViewStore(emulator, self.settings.views_table)
        self.board = MemoryBoardStore(emulator, self.settings.board_table)
        self.processor = AggregatingProcessor(lambda: self.board, lambda: self.settings)
        self.rng = random.Random(workload.seed)
        self.cpu_seconds = 0.0
        self.metering_overhead = metering_overhead_seconds()  # calibrated now, outside any measured window
        self.records = 0
        self.failed_batches = 0
        self._top: list[tuple[str, int]] = []

    def view(self, item_id: str) -> None:
        record_views(self.views, item_id, 1, self.settings.write_shards, self.rng)

    def settle(self, final: bool = False) -> None:
        """Run the aggregator on every full batch, as Lambda polls the stream; a batch with failed records puts
        them back (Lambda resumes from the lowest failed sequence number) and waits for the next second."""
        while len(self.views.stream) >= self.batch_size or (final and self.views.stream):
            batch = self.views.take_stream(self.batch_size)
            # A Lambda's heap is small; the in-memory tables' is not: keep them out of the garbage collector's
            # full passes, which would otherwise be billed to the aggregator.
            gc.freeze()
            started, in_store, calls = time.process_time(), self.board.cpu_seconds, self.board.metered_calls
            response = process_partial_response(
                event={"Records": batch}, record_handler=read_view, processor=self.processor
            )
            store = self.board.cpu_seconds - in_store + (self.board.metered_calls - calls) * self.metering_overhead
            self.cpu_seconds += time.process_time() - started - store
            self.records += len(batch)
            failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
            if failed:
                self.failed_batches += 1
                first = min(i for i, r in enumerate(batch) if r["dynamodb"]["SequenceNumber"] in failed)
                self.views.stream[:0] = batch[first:]
                return

    def pending(self) -> int:
        return len(self.views.stream)

    def refresh(self) -> int:
        result = take_snapshot(self.board, self.settings, now="1970-01-01T00:00:00.000Z")
        self._top = [(item, views) for item, views in result.snapshot["items"]]
        return result.gathered.items_read

    def frontend_read_units(self) -> float:
        """GET /leaderboard: one eventually consistent GetItem of the snapshot item."""
        return read_units(self.board.snapshot_item_size(self.settings.board), consistent=False)

    def top(self) -> list[tuple[str, int]]:
        return self._top

    def aggregator_cpu_us_per_record(self) -> float | None:
        return self.cpu_seconds / self.records * 1e6 if self.records else None


def make_design(name: str, workload: Workload, emulator: CapacityEmulator) -> Design:
    if name == SHARDBOARD:
        return ShardboardDesign(workload, emulator)
    if name in (SEED_SHARDED, SEED_UNSHARDED):
        return SeedDesign(workload, name == SEED_SHARDED, emulator)
    raise ValueError(f"unknown design {name!r}; choose from {', '.join(DESIGNS)}")
