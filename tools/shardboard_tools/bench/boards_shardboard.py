"""shardboard itself in the boards scenario: the real code on in-memory tables, in virtual time.

``record_views`` writes each view once (its global counter and its category's, in its day's base item); the real
aggregator handler consumes the stream in 1,000-record batches inside Lambda tumbling windows (``lambda_model``);
``refresh_changed`` refreshes every changed (board, period) each refresh interval, with an ``Announcer`` over an
in-memory event sink (``BenchEvents``), and then closes the ended periods, as the deployed job does
(``refresh_snapshots``). Units are booked by role: the base table, the board table while aggregating (aggregates, past
entries, change marks), its GSIs, and the board table while refreshing (snapshots, thresholds); reads likewise. The
events are counted apart (they are EventBridge entries, not DynamoDB units), and so are the reads closing makes (the
ledger and the ended heads).
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import Counter
from collections.abc import Sequence

from botocore.exceptions import ClientError

from shardboard.adapters.event_bus import batches, entry, entry_size
from shardboard.domain.periods import ALL, bucket_of, from_epoch, iso, kind_of
from shardboard.domain.ports import ItemCatalog, PeriodKey, Throttled
from shardboard.domain.publishing.events import EVENT_TYPES, BoardEvent
from shardboard.domain.writing.recording import Where, record_views
from shardboard.services.events import Announcer, moment
from shardboard.services.snapshots import refresh_changed
from shardboard.settings import Settings
from shardboard_tools.bench.boards_designs import BoardsRun, ProgressCallback
from shardboard_tools.bench.boards_workload import BoardsWorkload, BucketKey, Views, category_board
from shardboard_tools.bench.designs import ShardboardDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock

SHARDBOARD = "shardboard"
BOARD_TABLE = "memory-board"
VIEWS_TABLE = "memory-views"
EVENT_BUS = "bench-board-events"
# EventBridge bills each 64 KB of an entry as one event.
BILLED_CHUNK_BYTES = 64 * 1024


class BenchEvents:
    """The bench's event sink: keeps what was published, in order, and what the EventBridge adapter would send for it
    (its PutEvents requests, at most 10 entries and 256 KB each) and be billed (64 KB chunks)."""

    def __init__(self) -> None:
        self.events: list[BoardEvent] = []
        self.requests = 0
        self.billed = 0
        self._lock = threading.Lock()

    def publish(self, events: Sequence[BoardEvent]) -> None:
        entries = [entry(event, EVENT_BUS) for event in events]
        requests = len(batches(entries))
        billed = sum(-(-entry_size(put) // BILLED_CHUNK_BYTES) for put in entries)
        with self._lock:
            self.events.extend(events)
            self.requests += requests
            self.billed += billed


class ShardboardBoardsDesign:
    """The single-board benchmark's ShardboardDesign (the real handler on the in-memory tables), with boards."""

    name = SHARDBOARD

    def __init__(self, workload: BoardsWorkload, extra: tuple[str, ...] = ()) -> None:
        """``extra``: periods beside the workload's (a window, trending), named in the design's name."""
        self.workload = workload
        self.name = f"{SHARDBOARD}+{'+'.join(extra)}" if extra else SHARDBOARD
        self.clock = VirtualClock()
        self.emulator = CapacityEmulator(self.clock)
        single = Workload(
            items=workload.items,
            views=workload.views,
            views_per_s=workload.views_per_s,
            batch_size=workload.batch_size,
            top_n=workload.global_top_n,
            gsi_shards=workload.gsi_shards,
            write_shards=workload.write_shards,
            refresh_seconds=workload.refresh_seconds,
            aggregation_window_seconds=workload.aggregation_window_seconds,
            seed=workload.seed,
            periods=workload.periods,
            start_epoch=workload.start.timestamp(),
        )
        self.design = ShardboardDesign(single, self.emulator)
        self.design.settings = Settings(
            views_table=VIEWS_TABLE,
            board_table=BOARD_TABLE,
            write_shards=workload.write_shards,
            board_shards=workload.gsi_shards,
            top_n=workload.global_top_n,
            category_top_n=workload.category_top_n,
            periods=(*(p for p in workload.periods if kind_of(p).pick(all_time=False, period=True)), *extra),
            write_concurrency=1,
            # D = N: this scenario prices head refreshes (docs/benchmarks-boards.md); ranked versions are priced by
            # `--scenario reads`.
            rank_depth=0,
            category_rank_depth=0,
            snapshot_spare=0,  # no takedown spares either: the figures are the ranking's own
        )
        self.settings = self.design.settings
        self.rng = random.Random(workload.seed)
        self.events = BenchEvents()
        self.announcer = Announcer(self.events, self.settings.policy, max(1, round(workload.refresh_seconds)))
        self.events_per_run: list[int] = []
        self.events_by_type: Counter[str] = Counter()
        self.closing_read_units = 0.0
        self.scan_fallbacks = 0
        # The items table whose documents the heads inline (``--scenario traffic``); None: heads carry none.
        self.catalog: ItemCatalog | None = None

    def run(self, views: Views, on_progress: ProgressCallback | None = None) -> BoardsRun:
        started = time.perf_counter()
        workload, result = self.workload, BoardsRun(views_offered=len(views))
        ids = workload.item_ids()
        boards = [category_board(c) for c in range(workload.categories)]
        start = workload.start.timestamp()
        # The first scheduled refresh after the first view (a later run on the same design starts later).
        next_refresh = workload.refresh_seconds * (1 + math.floor(float(views.offsets[0]) / workload.refresh_seconds))
        refresh_writes = refresh_reads = 0.0
        bucket_cache: dict[int, str] = {}
        for position, (rank, category, offset) in enumerate(
            zip(views.ranks.tolist(), views.categories.tolist(), views.offsets.tolist(), strict=True)
        ):
            self.clock.set(offset)
            if offset >= next_refresh:
                writes, reads = self._refresh(result, offset)
                refresh_writes, refresh_reads = refresh_writes + writes, refresh_reads + reads
                next_refresh += workload.refresh_seconds
            second = int(start + offset)
            bucket = bucket_cache.get(second) or bucket_cache.setdefault(
                second, bucket_of(self.settings.anchor, from_epoch(second))
            )
            before = len(self.design.stream_records)
            try:
                record_views(
                    self.design.views,
                    ids[rank],
                    1,
                    self.settings.write_shards,
                    self.rng,
                    where=Where(bucket, (boards[category],)),
                )
                result.views_recorded += 1
            except (Throttled, ClientError):
                pass  # a lost view: the brute-force truth counts it, so exactness would show it
            for record in self.design.stream_records[before:]:  # its arrival places it in its tumbling window
                record["dynamodb"]["ApproximateCreationDateTime"] = offset
            self.design.settle()
            if on_progress and position % 50_000 == 0:
                on_progress(position)
        while self.design.pending():
            self.clock.advance(1.0)
            self.design.settle(final=True)
        writes, reads = self._refresh(result, self.clock.now())
        refresh_writes, refresh_reads = refresh_writes + writes, refresh_reads + reads
        self._collect(result, refresh_writes, refresh_reads)
        result.seconds = time.perf_counter() - started
        return result

    def _refresh(self, result: BoardsRun, at: float) -> tuple[float, float]:
        """The snapshot job: every changed period, then the ended ones closed; returns the write and read units its
        refreshes used (closing's reads are booked apart)."""
        usage = self.emulator.usage
        writes_before, reads_before = usage.units("write", BOARD_TABLE), usage.units("read")
        sent_before, received_before = self.announcer.sent, len(self.events.events)
        now = iso(from_epoch(self.workload.start.timestamp() + at))
        everything = PeriodKey(self.settings.board, ALL, ALL)
        clock = self.design.virtual_clock()
        run = refresh_changed(
            self.design.board,
            self.settings,
            now=now,
            always=[everything],
            announcer=self.announcer,
            catalog=self.catalog,
            clock=clock,
        )
        for period, refreshed in run.results.items():
            top_n = self.settings.top_n_of(period.board)
            key: BucketKey = (period.board, period.kind, period.bucket)
            result.note_refresh(key, refreshed.gathered.items_read, top_n, self.settings.board_shards, at)
            result.tops[key] = [(item, views) for item, views in refreshed.snapshot.items]
        if run.failures:
            raise next(iter(run.failures.values()))
        used = usage.units("write", BOARD_TABLE) - writes_before, usage.units("read") - reads_before
        closing_before = usage.units("read")
        self.announcer.close_ended(self.design.board, moment(now))
        self.closing_read_units += usage.units("read") - closing_before
        self.events_per_run.append(self.announcer.sent - sent_before)
        self.events_by_type.update(event.type for event in self.events.events[received_before:])
        self.scan_fallbacks += run.scans
        return used

    def _collect(self, result: BoardsRun, refresh_writes: float, refresh_reads: float) -> None:
        usage = self.emulator.usage
        board_writes = usage.units("write", BOARD_TABLE)
        result.throttled_requests = usage.throttled_requests
        result.write_units["base"] = usage.units("write", VIEWS_TABLE)
        result.write_units["aggregates"] = board_writes - refresh_writes
        result.write_units["index"] = sum(
            v
            for (resource, kind), v in usage.consumed.items()
            if kind == "write" and resource.startswith(f"{BOARD_TABLE}/")
        )
        result.write_units["snapshots"] = refresh_writes
        result.refresh_read_units = refresh_reads
        result.other_read_units = usage.units("read") - refresh_reads - self.closing_read_units
        result.extra = {
            "records": self.design.records,
            "windows": self.design.windows,
            "index_write_units_by_index": {
                resource.split("/", 1)[1]: round(v / max(1, result.views_offered), 4)
                for (resource, kind), v in usage.consumed.items()
                if kind == "write" and resource.startswith(f"{BOARD_TABLE}/")
            },
            "aggregator_cpu_us_per_record": self.design.aggregator_cpu_us_per_record(),
            "events": self._events(),
            "scan_fallbacks": self.scan_fallbacks,
        }

    def _events(self) -> dict[str, float]:
        """What the announcer published over the run (EventBridge entries) and the read units closing used."""
        runs = self.events_per_run
        return {
            "published": self.announcer.sent,
            "per_refresh_mean": sum(runs) / max(1, len(runs)),
            "per_refresh_max": max(runs, default=0),
            "refresh_runs": len(runs),
            "put_events_requests": self.events.requests,
            "billed_events": self.events.billed,
            **{kind: self.events_by_type[kind] for kind in EVENT_TYPES},
            "closing_read_units": self.closing_read_units,
        }


def shardboard_tops(design: ShardboardBoardsDesign) -> dict[BucketKey, list[tuple[str, int]]]:
    """Every period's stored snapshot (for tests)."""
    found: dict[BucketKey, list[tuple[str, int]]] = {}
    for status in design.design.board.periods():
        snapshot = design.design.board.get_snapshot(status.period)
        if snapshot:
            found[(status.period.board, status.period.kind, status.period.bucket)] = list(snapshot.items)
    return found
