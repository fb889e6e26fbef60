"""The ``boards`` scenario's two baseline designs, each priced on CapacityEmulators in virtual time.

``seed-per-board``: seed 002's sharded design (``designs.SeedDesign``) applied naively per (board, period bucket):
one image-counter item per (board, bucket, item), so every view is an ``UpdateItem ADD`` on 2 boards x 4 periods =
8 items, each keyed in its bucket's leaderboard GSI under a random ``PARTITION_k`` and refreshed by querying N items
from every partition value. Each (board, bucket) is one ``SeedDesign`` with its own emulator (its table, items and
GSI partition values are distinct keys in DynamoDB, so they never share a partition), all on one virtual clock.

``straightforward``: the straightforward extension of today's shardboard design. One base-table write per view (an
``UpdateItem ADD`` on a write-sharded counter), an aggregator folding 10 s tumbling windows (epoch-aligned, as
Lambda's) into one ``UpdateItem`` per (board, item) on an aggregate item holding the day, week, month and all-time
counters; one sparse GSI per period with the period's views as sort key, which an item joins (for its current
bucket) when its count reaches the period's published threshold T (the N-th best views of the last refresh, 0 for a
new bucket) and never leaves within that bucket (as today's aggregator). When a bucket rolls over (a new day), the
item's next update moves its entry to the new bucket's key (2 index writes) or removes it (1) if below the new T.
Every ``refresh_seconds`` each (board, period) bucket current or updated since the last refresh is gathered exactly
with ``gather_top_n`` over the GSI shards, a snapshot item written, and T published in a threshold item, which the
aggregator reads once per window per (board, period). A bucket that closes gets a closing snapshot after its last
window and before its successor's first, which is its final leaderboard. The aggregation is simulated directly (not
the real Lambda handler): it applies what the handler would, without its exactly-once bookkeeping (``applied_k`` per
write shard).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import THROTTLING_CODES, error_code
from shardboard.domain.publishing.gather import Entry, ShardRead, gather_top_n
from shardboard.domain.sharding import board_shard_of
from shardboard.settings import Settings
from shardboard_tools.bench.boards_workload import (
    GLOBAL_BOARD,
    BoardsWorkload,
    BucketKey,
    Views,
    bucket_label,
    category_board,
)
from shardboard_tools.bench.designs import REQUEST_LATENCY_S, SeedDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity.emulator import CapacityEmulator, Charge, PacedClock, VirtualClock
from shardboard_tools.capacity.memory import MemoryTable
from shardboard_tools.capacity.schema import IndexSchema, TableSchema
from shardboard_tools.capacity.units import item_size, query_units, read_units

if TYPE_CHECKING:
    import numpy as np

SEED_PER_BOARD = "seed-per-board"
STRAIGHTFORWARD = "straightforward"
SHARDBOARD_BOARDS = "shardboard"
# shardboard with a 24 h rolling window on every board too (hours counted, the window summed at each refresh).
SHARDBOARD_WINDOWED = "shardboard+24h"
# shardboard with a trending board beside every board's periods (hours counted, two epochs summed per head).
SHARDBOARD_TRENDING = "shardboard+trending"
BOARDS_DESIGNS = (SEED_PER_BOARD, STRAIGHTFORWARD, SHARDBOARD_BOARDS, SHARDBOARD_WINDOWED, SHARDBOARD_TRENDING)
# A refused write (throttled) is retried by the aggregator at most this many times before the run fails loudly.
MAX_WRITE_ATTEMPTS = 1_000
BREAKDOWN = ("base", "aggregates", "index", "snapshots")

ProgressCallback = Callable[[int], None]


@dataclass
class BoardsRun:
    """What one design did over the whole workload: units by role, requests refused, refreshes, final boards."""

    views_offered: int = 0
    views_recorded: int = 0
    # Write units by role: base, aggregates, index, snapshots.
    write_units: dict[str, float] = field(default_factory=lambda: dict.fromkeys(BREAKDOWN, 0.0))
    refresh_read_units: float = 0.0
    # Reads that are neither refresh nor frontend (the aggregator's threshold reads).
    other_read_units: float = 0.0
    throttled_requests: int = 0
    refreshes: int = 0
    refresh_items_read: int = 0
    # Worst (items read / (N + S)) of one refresh, over boards, periods and refreshes, and where it happened.
    max_refresh_read_ratio: float = 0.0
    max_refresh_read_at: str | None = None
    # Sum of (N + S) over the refreshes counted: items read / this = the mean ratio.
    refresh_minimum_items: int = 0
    # The last leaderboard each (board, period, bucket) refresh produced.
    tops: dict[BucketKey, list[tuple[str, int]]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def note_refresh(self, key: BucketKey, items_read: int, n: int, shards: int, at: float) -> None:
        """Count one refresh of ``key`` at ``at`` (seconds into the run) that read ``items_read`` items."""
        self.refreshes += 1
        self.refresh_items_read += items_read
        self.refresh_minimum_items += n + shards
        ratio = items_read / (n + shards)
        if ratio > self.max_refresh_read_ratio:
            self.max_refresh_read_ratio = ratio
            self.max_refresh_read_at = f"{'/'.join(key)} at {at:g} s"


class BoardsDesign(Protocol):
    name: str

    def run(self, views: Views, on_progress: ProgressCallback | None = None) -> BoardsRun:
        """Offer every view in virtual time and return what it cost and the final boards."""
        ...


def _is_throttle(error: ClientError) -> bool:
    return error_code(error) in THROTTLING_CODES


def _day_keys(workload: BoardsWorkload, days: list[int]) -> dict[int, dict[str, str]]:
    """Each UTC day's bucket label per period."""
    return {day: {period: bucket_label(period, day) for period in workload.periods} for day in days}


def _refresh_times(workload: BoardsWorkload) -> list[float]:
    count = int(workload.duration // workload.refresh_seconds)
    return [workload.refresh_seconds * k for k in range(1, count + 1)]


class SeedPerBoardDesign:
    """Seed 002's sharded design per (board, period bucket): 8 image-counter items per view."""

    name = SEED_PER_BOARD

    def __init__(self, workload: BoardsWorkload) -> None:
        self.workload = workload
        self.clock = VirtualClock()
        self.instances: dict[BucketKey, SeedDesign] = {}
        self.item_writes = 0

    def instance(self, key: BucketKey) -> SeedDesign:
        design = self.instances.get(key)
        if design is None:
            board = key[0]
            settings = Workload(
                top_n=self.workload.top_n(board),
                gsi_shards=self.workload.gsi_shards,
                seed=self.workload.seed * 1_000 + len(self.instances),
            )
            design = self.instances[key] = SeedDesign(settings, True, CapacityEmulator(self.clock))
        return design

    def run(self, views: Views, on_progress: ProgressCallback | None = None) -> BoardsRun:
        started = time.perf_counter()
        workload, result = self.workload, BoardsRun(views_offered=len(views))
        item_ids = workload.item_ids()
        days = workload.day_indexes(views.offsets)
        keys_of_day = _day_keys(workload, sorted(set(days.tolist())))
        categories = [category_board(c) for c in range(workload.categories)]
        touched: set[BucketKey] = set()
        refreshes = _refresh_times(workload)
        next_refresh = 0
        throttled_views = 0
        for position, (rank, category, offset, day) in enumerate(
            zip(views.ranks.tolist(), views.categories.tolist(), views.offsets.tolist(), days.tolist(), strict=True)
        ):
            self.clock.set(offset)
            while next_refresh < len(refreshes) and offset >= refreshes[next_refresh]:
                self._refresh(result, touched, keys_of_day[day])
                next_refresh += 1
            item_id, labels, lost = item_ids[rank], keys_of_day[day], False
            for board in (GLOBAL_BOARD, categories[category]):
                for period, label in labels.items():
                    key = (board, period, label)
                    try:
                        self.instance(key).view(item_id)
                        self.item_writes += 1
                    except ClientError as error:
                        if not _is_throttle(error):
                            raise
                        lost = True
                    touched.add(key)
            throttled_views += lost
            if on_progress and position % 100_000 == 0:
                on_progress(position)
        final_day = int(days[-1]) if len(days) else 0
        self._refresh(result, touched, keys_of_day.get(final_day, {}))
        for design in self.instances.values():
            usage = design.emulator.usage
            result.throttled_requests += usage.throttled_requests
            for (resource, kind), units in usage.consumed.items():
                if kind == "write":
                    result.write_units["index" if "/" in resource else "base"] += units
                else:
                    result.refresh_read_units += units
        result.views_recorded = len(views) - throttled_views
        result.extra = {
            "item_writes": self.item_writes,
            "write_units_per_item_write": sum(result.write_units.values()) / max(1, self.item_writes),
            "views_with_a_throttled_write": throttled_views,
            "board_buckets": len(self.instances),
        }
        result.seconds = time.perf_counter() - started
        return result

    def _refresh(self, result: BoardsRun, touched: set[BucketKey], current: dict[str, str]) -> None:
        """Every bucket written since the last refresh, and the current ones, re-query every partition value."""
        keys = touched | {
            (board, period, label) for board in self.workload.boards() for period, label in current.items()
        }
        for key in sorted(keys):
            design = self.instances.get(key)
            if design is None:
                continue
            result.note_refresh(key, design.refresh(), design.top_n, design.partitions, self.clock.now())
            result.tops[key] = list(design.top())
        touched.clear()


# -- the straightforward extension of today's design

SF_BASE = "sf-views"
SF_BOARD = "sf-board"
SF_SNAPSHOTS = "sf-snapshots"
PK_ATTR = "pk"
ITEM_ATTR = "item_id"


def _gsi_attr(period: str) -> str:
    return f"{period}_gsi"


def _views_attr(period: str) -> str:
    return f"{period}_views"


def _index_name(period: str) -> str:
    return f"by-{period}"


def straightforward_board_schema(periods: tuple[str, ...]) -> TableSchema:
    """Aggregates keyed by (board, item); one sparse GSI per period: hash = board#period#bucket#shard, range = views."""
    indexes = tuple(IndexSchema(_index_name(p), _gsi_attr(p), _views_attr(p), frozenset({ITEM_ATTR})) for p in periods)
    return TableSchema(SF_BOARD, PK_ATTR, None, indexes)


class StraightforwardDesign:
    """Base counter per view, a windowed aggregate per (board, item) with 4 period counters, 4 sparse GSIs."""

    name = STRAIGHTFORWARD

    def __init__(self, workload: BoardsWorkload) -> None:
        self.workload = workload
        self.clock = VirtualClock()
        self.emulator = CapacityEmulator(self.clock)
        self.base = MemoryTable(TableSchema(SF_BASE, PK_ATTR), self.emulator)
        self.board = MemoryTable(straightforward_board_schema(workload.periods), self.emulator)
        self.snapshots = MemoryTable(TableSchema(SF_SNAPSHOTS, PK_ATTR), self.emulator)
        # The GSIs' content, mirrored: (board, period, bucket) -> shard -> item -> views.
        self.index: dict[BucketKey, dict[int, dict[str, int]]] = {}
        self.thresholds: dict[BucketKey, int] = {}
        self.hits: dict[BucketKey, dict[int, int]] = {}
        self.touched: set[BucketKey] = set()
        # The deployed aggregator's requests in flight (as ShardboardDesign stamps them).
        self.concurrency = Settings().write_concurrency
        self.aggregate_writes = 0
        self.index_joins = 0
        self.windows = 0
        self._shards: dict[str, int] = {}
        self.current_labels: dict[str, str] = {}

    def shard_of(self, item_id: str) -> int:
        shard = self._shards.get(item_id)
        if shard is None:
            shard = self._shards[item_id] = board_shard_of(item_id, self.workload.gsi_shards)
        return shard

    # -- the run

    def run(self, views: Views, on_progress: ProgressCallback | None = None) -> BoardsRun:
        import numpy as np

        started = time.perf_counter()
        workload, result = self.workload, BoardsRun(views_offered=len(views))
        accepted = self._record_base(views, result)
        # The base pass moved the clock to the last view; the aggregator and refreshes replay time from the start
        # (the base table's partitions are not theirs, so their per-second windows are unaffected).
        self.clock = VirtualClock()
        self.emulator.clock = self.clock
        days = workload.day_indexes(views.offsets)
        keys_of_day = _day_keys(workload, sorted(set(days.tolist())))
        epoch = workload.epoch_seconds(views.offsets)
        windows = np.floor(epoch / workload.aggregation_window_seconds).astype(np.int64)
        cuts = (np.nonzero((np.diff(windows) != 0) | (np.diff(days) != 0))[0] + 1).tolist()
        bounds = list(zip([0, *cuts], [*cuts, len(views)], strict=True))
        item_categories = workload.item_categories()
        refreshes = _refresh_times(workload)
        next_refresh = 0
        start_epoch = workload.start.timestamp()
        for first, last in bounds:
            if first == last:
                continue
            day = int(days[first])
            window_end = min((int(windows[first]) + 1) * workload.aggregation_window_seconds, float((day + 1) * 86_400))
            end = window_end - start_epoch
            while next_refresh < len(refreshes) and refreshes[next_refresh] < end:
                self._refresh_all(result, refreshes[next_refresh], keys_of_day[day])
                next_refresh += 1
            self._close_buckets(result, keys_of_day[day])
            segment = views.ranks[first:last][accepted[first:last]]
            ranks, counts = np.unique(segment, return_counts=True)
            self._apply_window(
                end,
                ranks=ranks.tolist(),
                counts=counts.tolist(),
                item_categories=item_categories,
                labels=keys_of_day[day],
                result=result,
            )
            if on_progress:
                on_progress(last)
        final_labels = keys_of_day[int(days[-1])] if len(views) else {}
        while next_refresh < len(refreshes):
            self._refresh_all(result, refreshes[next_refresh], final_labels)
            next_refresh += 1
        self._refresh_all(result, max(workload.duration, self.clock.now()), final_labels)
        usage = self.emulator.usage
        result.throttled_requests = usage.throttled_requests
        result.write_units["base"] = usage.units("write", SF_BASE)
        result.write_units["aggregates"] = usage.units("write", SF_BOARD)
        result.write_units["index"] = sum(
            usage.units("write", self.board.schema.resource(index)) for index in self.board.schema.indexes
        )
        result.write_units["snapshots"] = usage.units("write", SF_SNAPSHOTS)
        result.views_recorded = int(accepted.sum())
        result.extra = {
            "aggregate_writes": self.aggregate_writes,
            "index_joins": self.index_joins,
            "windows": self.windows,
            "threshold_read_units": result.other_read_units,
        }
        result.seconds = time.perf_counter() - started
        return result

    def _record_base(self, views: Views, result: BoardsRun) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """One UpdateItem ADD per view on one of the item's write-sharded counters; a throttled view is lost."""
        import numpy as np

        shards = np.random.default_rng(self.workload.seed + 1).integers(0, self.workload.write_shards, len(views))
        accepted = np.ones(len(views), dtype=np.bool_)
        counters: dict[str, int] = {}
        item_ids = self.workload.item_ids()
        for position, (rank, shard, offset) in enumerate(
            zip(views.ranks.tolist(), shards.tolist(), views.offsets.tolist(), strict=True)
        ):
            self.clock.set(offset)
            pk = f"{item_ids[rank]}#{shard}"
            count = counters.get(pk, 0) + 1
            new = {PK_ATTR: {"S": pk}, "views": {"N": str(count)}}
            try:
                self.base.write("UpdateItem", pk, new)
            except ClientError as error:
                if not _is_throttle(error):
                    raise
                accepted[position] = False
                continue
            counters[pk] = count
        return accepted

    def _admit_write(self, table: MemoryTable, pk: str, new: dict[str, Any]) -> None:
        """A write the aggregator retries until admitted (its clock moves on with every request)."""
        for _ in range(MAX_WRITE_ATTEMPTS):
            try:
                table.write("UpdateItem", pk, new)
                return
            except ClientError as error:
                if not _is_throttle(error):
                    raise
        raise RuntimeError(f"{pk}: throttled {MAX_WRITE_ATTEMPTS} times in a row")

    def _apply_window(
        self,
        end: float,
        *,
        ranks: list[int],
        counts: list[int],
        item_categories: np.ndarray[Any, np.dtype[np.int64]],
        labels: dict[str, str],
        result: BoardsRun,
    ) -> None:
        """The window's views folded by (board, item): one aggregate write each, stamped as the function sends them."""
        self.windows += 1
        workload = self.workload
        self.clock.set(max(self.clock.now(), end))
        paced = PacedClock(end, REQUEST_LATENCY_S, self.concurrency)
        self.emulator.clock = paced
        try:
            boards = workload.boards()
            thresholds: dict[tuple[str, str], int] = {}
            for board in boards:  # one threshold read per (board, period) per window
                for period, label in labels.items():
                    item = self.snapshots.read("GetItem", f"threshold#{board}#{period}#{label}", consistent=False)
                    result.other_read_units += read_units(item_size(item), consistent=False)
                    thresholds[(board, period)] = self.thresholds.get((board, period, label), 0)
            categories = item_categories[ranks].tolist() if ranks else []
            for rank, count, category in zip(ranks, counts, categories, strict=True):
                item_id = workload.item_id(rank)
                for board in (GLOBAL_BOARD, category_board(category)):
                    self._update_aggregate(board, item_id, count, labels, thresholds)
        finally:
            self.emulator.clock = self.clock

    def _update_aggregate(
        self, board: str, item_id: str, count: int, labels: dict[str, str], thresholds: dict[tuple[str, str], int]
    ) -> None:
        pk = f"{board}#{item_id}"
        old = self.board.items.get(pk)
        new: dict[str, dict[str, str]] = {PK_ATTR: {"S": pk}, ITEM_ATTR: {"S": item_id}}
        moves: list[tuple[str, BucketKey | None, BucketKey | None, int]] = []
        shard = self.shard_of(item_id)
        for period, label in labels.items():
            same_bucket = old is not None and old[period]["S"] == label
            views = int(old[_views_attr(period)]["N"]) + count if old is not None and same_bucket else count
            new[period] = {"S": label}
            new[_views_attr(period)] = {"N": str(views)}
            was = old.get(_gsi_attr(period)) if old is not None else None
            old_key = _bucket_of(board, period, was["S"]) if was is not None else None
            key = (board, period, label)
            if (same_bucket and was is not None) or views >= thresholds[(board, period)]:
                new[_gsi_attr(period)] = {"S": f"{board}#{period}#{label}#{shard}"}
                moves.append((period, old_key, key, views))
            elif old_key is not None:
                moves.append((period, old_key, None, views))
        self._admit_write(self.board, pk, new)
        self.aggregate_writes += 1
        for _, old_key, new_key, views in moves:
            if old_key is not None and old_key != new_key:
                # The bucket is closed (its closing snapshot is taken): moving out does not change its leaderboard.
                self.index[old_key][shard].pop(item_id, None)
            if new_key is not None:
                members = self.index.setdefault(new_key, {}).setdefault(shard, {})
                self.index_joins += item_id not in members
                members[item_id] = views
                self.touched.add(new_key)

    # -- refresh

    def _close_buckets(self, result: BoardsRun, labels: dict[str, str]) -> None:
        """Before the first window of a new bucket (a new day): the closing snapshot of every bucket it replaces."""
        if self.current_labels and labels != self.current_labels:
            for period, label in self.current_labels.items():
                if labels[period] != label:
                    for board in self.workload.boards():
                        key = (board, period, label)
                        self._refresh(key, result)
                        self.touched.discard(key)
        self.current_labels = labels

    def _refresh_all(self, result: BoardsRun, at: float, current: dict[str, str]) -> None:
        self.clock.set(max(self.clock.now(), at))
        keys = self.touched | {(b, p, label) for b in self.workload.boards() for p, label in current.items()}
        for key in sorted(keys):
            self._refresh(key, result)
        self.touched.clear()

    def _refresh(self, key: BucketKey, result: BoardsRun) -> None:
        board, period, label = key
        n, shards = self.workload.top_n(board), self.workload.gsi_shards
        partitions = self.index.get(key, {})
        index = self.board.schema.index(_index_name(period))
        resource = self.board.schema.resource(index)
        sorted_shards: dict[int, list[Entry]] = {}
        cursors: dict[int, int] = {}

        def fetch(shard: int, limit: int, first_page: bool) -> ShardRead:
            if first_page:
                members = partitions.get(shard, {})
                sorted_shards[shard] = sorted(Entry(item, views) for item, views in members.items())
                cursors[shard] = 0
            entries, at = sorted_shards[shard], cursors[shard]
            page = entries[at : at + limit]
            cursors[shard] = at + len(page)
            sizes = [item_size(index.entry(self.board.items[f"{board}#{e.id}"], self.board.schema.keys)) for e in page]
            partition = f"{board}#{period}#{label}#{shard}"
            units = query_units(sizes, consistent=False)
            self.emulator.admit("Query", [Charge(SF_BOARD, resource, partition, "read", units)])
            result.refresh_read_units += units
            return ShardRead(page, cursors[shard] < len(entries))

        gathered = gather_top_n(n, shards, fetch, self.hits.get(key))
        self.hits[key] = gathered.shard_hits
        top = [(entry.id, entry.views) for entry in gathered.top]
        threshold = top[-1][1] if len(top) >= n else 0
        if partitions:  # a bucket's index can be empty (nothing viewed on a category board yet): nothing to read
            result.note_refresh(key, gathered.items_read, n, shards, self.clock.now())
        result.tops[key] = top
        snapshot = {
            PK_ATTR: {"S": f"snapshot#{board}#{period}#{label}"},
            "items": {"S": json.dumps(top, separators=(",", ":"))},
            "threshold": {"N": str(threshold)},
            "items_read": {"N": str(gathered.items_read)},
        }
        self._admit_write(self.snapshots, snapshot[PK_ATTR]["S"], snapshot)
        if threshold != self.thresholds.get(key, 0):
            pk = f"threshold#{board}#{period}#{label}"
            self._admit_write(self.snapshots, pk, {PK_ATTR: {"S": pk}, "threshold": {"N": str(threshold)}})
        self.thresholds[key] = threshold


def _bucket_of(board: str, period: str, gsi_value: str) -> BucketKey:
    """(board, period, bucket) of a GSI hash value ``board#period#bucket#shard``."""
    label = gsi_value.split("#")[2]
    return (board, period, label)
