"""The in-memory implementation of each port (``shardboard.domain.ports``), charging every request to a
CapacityEmulator: ``MemoryViewStore`` (ViewCounters), ``MemoryBoardStore`` (Board), ``MemoryShardMetadataStore``,
``MemoryItemStore`` (ItemCatalog).

Items are kept in DynamoDB's wire format and every condition is the adapter's ConditionExpression evaluated in
Python, so the real domain code (recording, the batch fold, ``apply_batch``, ``take_snapshot``) decides every request
while the emulator prices it; tests/contract runs the same cases against these and the DynamoDB adapters. With a
``VirtualClock`` a benchmark runs hundreds of thousands of views in simulated time.

``MemoryViewStore.stream`` collects the base table's stream (NEW_AND_OLD_IMAGES) as Lambda delivers it, so the
real aggregator handler can consume it.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from shardboard.adapters.board_table import (
    BoardStore,
    aggregate_state,
    board_state_from_item,
    entry_state,
    layout_of,
    period_status,
    rank_part_items,
    rank_rows,
    rank_shard_of_text,
    ranks_checkpoint_item,
    ranks_of_checkpoint,
    snapshot_from_item,
    snapshot_item,
    stored_count,
)
from shardboard.adapters.dynamodb import Item, ScanDeadline, throttling_as_domain
from shardboard.adapters.items_table import (
    ItemStore,
    item_record,
    listing_of,
    marker_key,
    old_set_ids,
    old_set_key,
    partition_pk,
    put_values,
    takedown_writes,
    tombstone_writes,
)
from shardboard.adapters.keys import (
    ANSWER,
    APPLIED_PREFIX,
    AT,
    BOARD,
    BOARD_COUNTER_PREFIX,
    BOARD_SHARD,
    BOARD_SHARDS_ATTR,
    BUCKET,
    BY,
    BY_CHANGE_INDEX,
    BY_CREATED_INDEX,
    BY_VIEWS_INDEX,
    CHANGE_PROJECTION,
    CHANGED,
    CHANGED_AT,
    CHANGES,
    CLEAN_BOARD,
    COARSE_FORMAT,
    CREATED_AT,
    CREATED_KEY,
    CREATED_SHARD,
    DAILY_KEY,
    DEEP_KEY,
    DEEP_THRESHOLD,
    DIRTY,
    DIRTY_SINCE,
    EXPIRES_AT,
    FAILING_SINCE,
    FAILURES,
    FINGERPRINT,
    FORMAT,
    IMPORT_ID,
    ITEM_ID,
    ITEM_META,
    ITEM_RECORD_SK,
    ITEM_STATUS,
    LAST_UPDATED,
    LAST_WRITER,
    MAX_SHARDS,
    NUMBER_OF_SHARDS,
    PERIOD_KEY_PREFIX,
    PERIOD_KIND,
    PK,
    PREVIOUS_BOARD_SHARDS_ATTR,
    QUIET_SINCE,
    RANK_ENTRIES,
    RANK_PAGE_PREFIX,
    RANK_SHARD_PREFIX,
    RATE_USED,
    REASON,
    REFRESHED_AT,
    REV,
    REVIEWED_AT,
    REVIEWED_VIEWS,
    SEEN_TOKEN,
    SET_IDS,
    SET_SK,
    SHARD,
    SHARD_HISTORY,
    SK,
    SOURCE_VIEWS,
    TAKEDOWN_PARTITIONS,
    UPDATED_AT,
    VIEWS,
    WRITERS_PK,
    aggregate_pk,
    allowance_pk,
    applied_attr,
    board_counter,
    bucket_attr,
    count_attr,
    daily_key_pk,
    entry_pk,
    idempotency_pk,
    index_key_attr,
    index_name,
    item_record_pk,
    rank_page_pk,
    rank_shard_pk,
    ranks_checkpoint_pk,
    seen_pk,
    shards_pk,
    snapshot_pk,
    threshold_pk,
    view_pk,
    writer_attr,
)
from shardboard.adapters.shards_table import ShardMetadataStore, shard_metadata_from_item
from shardboard.adapters.views_table import ViewStore, counter_attribute
from shardboard.domain import ports
from shardboard.domain.aggregating.batch import ShardMove, views_added
from shardboard.domain.boards import GLOBAL_BOARD, is_reserved
from shardboard.domain.items.lookalike import skeleton_marker
from shardboard.domain.items.records import (
    DEFAULT_CREATED_SHARDS,
    DELETED,
    HIDDEN,
    SKELETONS,
    DeletedItem,
    ItemRecord,
    ShardPage,
    created_key,
    created_shard,
)
from shardboard.domain.periods import ALL, KINDS, bucket_of, kind_of
from shardboard.domain.ports import (
    PRESENT,
    TAKEN,
    WRITTEN,
    AggregateState,
    Allowance,
    BoardState,
    CounterSet,
    IndexKeyAt,
    IndexRow,
    LateMove,
    LateResult,
    MoveResult,
    PastEntry,
    PeriodKey,
    PeriodStatus,
    RankParts,
    RankShard,
    ResumeToken,
    ShardMetadata,
    TakedownListing,
)
from shardboard.domain.publishing.deep_tier import deep_bucket, index_bucket
from shardboard.domain.publishing.head import Head, Row
from shardboard.domain.writing.dedupe import Seen, SeenOutcome
from shardboard.domain.writing.idempotency import (
    Answer,
    IdempotencyKeyReused,
    KeyedOutcome,
    KeyedRequest,
    OnceOutcome,
    OnceWrite,
)
from shardboard_tools.capacity.emulator import CapacityEmulator, Charge
from shardboard_tools.capacity.schema import IndexSchema, TableSchema
from shardboard_tools.capacity.units import item_size, query_units, read_units, write_units

# A Query or Scan page stops at 1 MB of items read.
PAGE_BYTES = 1024 * 1024
STREAM_ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/memory-views/stream/1970-01-01T00:00:00.000"


def views_schema(table: str) -> TableSchema:
    return TableSchema(table, PK)


def board_schema(table: str) -> TableSchema:
    """template.yaml's board table: a GSI per period kind projecting item_id (keys are always projected), all
    time's (KEYS_ONLY), the one all time had before the coarse index (``by-views``: never written here) and the
    sparse by-change index of dirty periods."""
    periods = tuple(
        IndexSchema(index_name(kind), index_key_attr(kind), bucket_attr(kind), frozenset({ITEM_ID})) for kind in KINDS
    )
    all_time = IndexSchema(index_name(ALL), index_key_attr(ALL), bucket_attr(ALL), frozenset())
    views_index = IndexSchema(BY_VIEWS_INDEX, BOARD_SHARD, VIEWS, frozenset({ITEM_ID}))
    changes = IndexSchema(BY_CHANGE_INDEX, CHANGED, None, frozenset(CHANGE_PROJECTION))
    return TableSchema(table, PK, None, (all_time, *periods, views_index, changes))


class MemoryTable:
    """One table's items (wire format) and the bookkeeping shared by both stores."""

    def __init__(self, schema: TableSchema, emulator: CapacityEmulator) -> None:
        self.schema = schema
        self.emulator = emulator
        self.items: dict[str, Item] = {}
        self.lock = threading.RLock()

    def write(self, operation: str, pk: str, new: Item | None, partition: str | None = None) -> Item | None:
        """Replace item ``pk`` by ``new`` (None deletes) after the emulator admits the write; returns the old item.
        ``partition``: the partition key value charged when ``pk`` also holds a sort key (the items table)."""
        old = self.items.get(pk)
        key = {self.schema.hash_key: {"S": partition or pk}}
        self.emulator.admit(operation, self.schema.write_charges(key, old, new))
        if new is None:
            self.items.pop(pk, None)
        else:
            self.items[pk] = new
        return old

    def refuse(self, operation: str, pk: str) -> Item | None:
        """A failed condition still consumes write units (of the item as it stands) and changes nothing."""
        old = self.items.get(pk)
        self.emulator.admit(operation, self.schema.write_charges({self.schema.hash_key: {"S": pk}}, old, old))
        return old

    def read(self, operation: str, pk: str, consistent: bool, partition: str | None = None) -> Item | None:
        item = self.items.get(pk)
        units = read_units(item_size(item), consistent)
        self.emulator.admit(operation, [Charge(self.schema.name, self.schema.name, partition or pk, "read", units)])
        return item

    def scan(self) -> list[Item]:
        """Every item, charged page by page (1 MB each) against the table-level limit only: a Scan spans partitions."""
        items = list(self.items.values())
        page: list[int] = []
        for item in items:
            page.append(item_size(item))
            if sum(page) >= PAGE_BYTES:
                self._charge_scan_page(page)
                page = []
        self._charge_scan_page(page)
        return items

    def _charge_scan_page(self, sizes: Sequence[int]) -> None:
        units = query_units(sizes, consistent=True)
        self.emulator.admit("Scan", [Charge(self.schema.name, self.schema.name, None, "read", units)])


class MemoryViewStore:
    """The base table in memory (the ViewCounters port): write-sharded counters plus their stream."""

    def __init__(self, emulator: CapacityEmulator, table: str = "memory-views", anchor: str = ALL) -> None:
        self.table = table
        self.anchor = anchor
        self.data = MemoryTable(views_schema(table), emulator)
        self.stream: list[dict[str, Any]] = []
        self._sequence = 0

    def bucket(self, bucket: str | None = None) -> str:
        """``bucket``, or the current anchor bucket (wall clock) where a view recorded now is counted."""
        return bucket or bucket_of(self.anchor, datetime.now(UTC))

    def add_view(
        self, item_id: str, shard: int, count: int = 1, bucket: str | None = None, boards: Sequence[str] = ()
    ) -> float:
        """``ADD views :count`` (and each board's counter) on one counter item; a throttled write raises
        ``Throttled`` and changes nothing. ``bucket`` None: the current anchor bucket (wall clock)."""
        bucket = self.bucket(bucket)
        pk = view_pk(item_id, shard, bucket)
        with self.data.lock:
            old = self.data.items.get(pk)
            new = _counted(old, pk, item_id, shard, bucket, boards=boards, count=count)
            with throttling_as_domain():
                self.data.write("UpdateItem", pk, new)
            self._emit(pk, old, new)
        return float(self.data.schema.write_charges({PK: {"S": pk}}, old, new)[0].units)

    def claim_writer(self) -> int:
        """``ViewStore.claim_writer``: ``ADD last_writer :1`` on the registry item, its new value."""
        with self.data.lock:
            old = self.data.items.get(WRITERS_PK)
            new: Item = {PK: {"S": WRITERS_PK}, LAST_WRITER: {"N": str(_number(old or {}, LAST_WRITER) + 1)}}
            with throttling_as_domain():
                self.data.write("UpdateItem", WRITERS_PK, new)
            self._emit(WRITERS_PK, old, new)
        return int(new[LAST_WRITER]["N"])

    def add_view_once(
        self,
        item_id: str,
        shard: int,
        count: int,
        once: OnceWrite,
        *,
        bucket: str | None = None,
        boards: Sequence[str] = (),
    ) -> OnceOutcome:
        """``ViewStore.add_view_once``: ``add_view`` plus ``SET w:<writer> = :seq`` if the writer's attribute is absent
        or lower; otherwise nothing changes (the refusal is charged: a failed condition consumes write units)."""
        bucket = self.bucket(bucket)
        pk = view_pk(item_id, shard, bucket)
        attribute = writer_attr(once.writer)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is not None and attribute in old and int(old[attribute]["N"]) >= once.sequence:
                with throttling_as_domain():
                    self.data.refuse("UpdateItem", pk)
                return OnceOutcome(False, float(self.data.schema.write_charges({PK: {"S": pk}}, old, old)[0].units))
            new = _counted(old, pk, item_id, shard, bucket, boards=boards, count=count)
            new[attribute] = {"N": str(once.sequence)}
            with throttling_as_domain():
                self.data.write("UpdateItem", pk, new)
            self._emit(pk, old, new)
        return OnceOutcome(True, float(self.data.schema.write_charges({PK: {"S": pk}}, old, new)[0].units))

    def add_keyed_view(
        self,
        item_id: str,
        shard: int,
        count: int,
        keyed: KeyedRequest,
        *,
        seen: Seen | None = None,
        bucket: str | None = None,
        boards: Sequence[str] = (),
    ) -> KeyedOutcome:
        """``ViewStore.add_keyed_view``: one TransactWriteItems putting the key's marker (unless a marker holds the
        key: absent or expired before ``keyed.now``), with ``seen`` the viewer's marker, and adding ``count`` to the
        counters, all or nothing at twice the units of each item. A held key is a replay (its marker's check
        charged, doubled) or IdempotencyKeyReused; a viewer seen already is a duplicate whose answer is then kept
        under the key (one PutItem). Throttling raises Throttled and changes nothing."""
        bucket = self.bucket(bucket)
        key_pk = idempotency_pk(keyed.key)
        pk = view_pk(item_id, shard, bucket)
        with self.data.lock:
            held = self.data.items.get(key_pk)
            if held is not None and _number(held, EXPIRES_AT) >= keyed.now:
                units = self._refused_transaction(key_pk, held)
                if held.get(FINGERPRINT, {}).get("S") != keyed.fingerprint:
                    raise IdempotencyKeyReused(keyed.key)
                return KeyedOutcome(Answer(held[ANSWER]["S"]), replayed=True, units=units)
            writes: list[tuple[str, Item | None, Item]] = [(key_pk, held, _key_marker(keyed, Answer.COUNTED))]
            if seen is not None:
                marker_pk = seen_pk(seen.window, seen.viewer, item_id)
                existing = self.data.items.get(marker_pk)
                if existing is not None:
                    units = self._refused_transaction(marker_pk, existing)
                    if existing.get(SEEN_TOKEN, {}).get("S") == seen.token:
                        return KeyedOutcome(Answer.COUNTED, replayed=False, units=units)
                    duplicate = _key_marker(keyed, Answer.DUPLICATE)
                    with throttling_as_domain():
                        self.data.write("PutItem", key_pk, duplicate)
                    self._emit(key_pk, held, duplicate)
                    charge = self.data.schema.write_charges({PK: {"S": key_pk}}, held, duplicate)[0].units
                    return KeyedOutcome(Answer.DUPLICATE, replayed=False, units=units + float(charge))
                marker: Item = {
                    PK: {"S": marker_pk},
                    EXPIRES_AT: {"N": str(seen.expires_at)},
                    SEEN_TOKEN: {"S": seen.token},
                }
                writes.append((marker_pk, None, marker))
            old = self.data.items.get(pk)
            writes.append((pk, old, _counted(old, pk, item_id, shard, bucket, boards=boards, count=count)))
            charges = [
                dataclasses.replace(charge, units=charge.units * 2)
                for key, before, after in writes
                for charge in self.data.schema.write_charges({PK: {"S": key}}, before, after)
            ]
            with throttling_as_domain():
                self.data.emulator.admit("TransactWriteItems", charges)
            for key, before, after in writes:
                self.data.items[key] = after
                self._emit(key, before, after)
        return KeyedOutcome(Answer.COUNTED, replayed=False, units=float(sum(charge.units for charge in charges)))

    def _refused_transaction(self, pk: str, existing: Item) -> float:
        """A transaction refused by the condition on ``pk``: its check charged at the transactional rate."""
        charges = self.data.schema.write_charges({PK: {"S": pk}}, existing, existing)
        doubled = [dataclasses.replace(charge, units=charge.units * 2) for charge in charges]
        with throttling_as_domain():
            self.data.emulator.admit("TransactWriteItems", doubled)
        return float(sum(charge.units for charge in doubled))

    def add_seen_view(
        self, item_id: str, shard: int, seen: Seen, bucket: str | None = None, boards: Sequence[str] = ()
    ) -> SeenOutcome:
        """``ViewStore.add_seen_view``: one TransactWriteItems putting the marker (``attribute_not_exists(pk)``) and
        adding 1 to the counters, all or nothing, at twice the units of each item; a marker that exists refuses it
        (its units charged, doubled) and means a duplicate, unless it holds ``seen.token`` (an earlier attempt of
        this same view). Throttling raises Throttled and changes nothing."""
        bucket = self.bucket(bucket)
        marker_pk = seen_pk(seen.window, seen.viewer, item_id)
        pk = view_pk(item_id, shard, bucket)
        with self.data.lock:
            existing = self.data.items.get(marker_pk)
            if existing is not None:
                charges = self.data.schema.write_charges({PK: {"S": marker_pk}}, existing, existing)
                doubled = [dataclasses.replace(charge, units=charge.units * 2) for charge in charges]
                with throttling_as_domain():
                    self.data.emulator.admit("TransactWriteItems", doubled)
                ours = existing.get(SEEN_TOKEN, {}).get("S") == seen.token
                return SeenOutcome(counted=ours, units=float(sum(charge.units for charge in doubled)))
            marker: Item = {
                PK: {"S": marker_pk},
                EXPIRES_AT: {"N": str(seen.expires_at)},
                SEEN_TOKEN: {"S": seen.token},
            }
            old = self.data.items.get(pk)
            new = dict(old or {})
            new |= {PK: {"S": pk}, ITEM_ID: {"S": item_id}, SHARD: {"N": str(shard)}, BUCKET: {"S": bucket}}
            for attribute in (VIEWS, *(board_counter(board) for board in boards)):
                new[attribute] = {"N": str(_number(new, attribute) + 1)}
            charges = [
                *self.data.schema.write_charges({PK: {"S": marker_pk}}, None, marker),
                *self.data.schema.write_charges({PK: {"S": pk}}, old, new),
            ]
            doubled = [dataclasses.replace(charge, units=charge.units * 2) for charge in charges]
            with throttling_as_domain():
                self.data.emulator.admit("TransactWriteItems", doubled)
            self.data.items[marker_pk] = marker
            self.data.items[pk] = new
            self._emit(marker_pk, None, marker)
            self._emit(pk, old, new)
        return SeenOutcome(counted=True, units=float(sum(charge.units for charge in doubled)))

    def take_allowance(self, allowance: Allowance) -> bool:
        """``ViewStore.take_allowance``: ``ADD used :views`` on the client's counter for its window if
        ``attribute_not_exists(used) OR used <= limit - views``; a refusal is charged (a failed condition consumes
        write units) and changes nothing. Throttling raises Throttled and changes nothing."""
        pk = allowance_pk(allowance.window, allowance.kind, allowance.client)
        with self.data.lock:
            old = self.data.items.get(pk)
            used = _number(old or {}, RATE_USED)
            with throttling_as_domain():
                if used > allowance.limit - allowance.views:
                    self.data.refuse("UpdateItem", pk)
                    return False
                new = {
                    **(old or {}),
                    PK: {"S": pk},
                    RATE_USED: {"N": str(used + allowance.views)},
                    EXPIRES_AT: {"N": str(allowance.expires_at)},
                }
                self.data.write("UpdateItem", pk, new)
            self._emit(pk, old, new)
        return True

    def return_allowance(self, allowance: Allowance) -> None:
        """``ViewStore.return_allowance``: ``ADD used :-views`` on the client's counter (no condition)."""
        pk = allowance_pk(allowance.window, allowance.kind, allowance.client)
        with self.data.lock:
            old = self.data.items.get(pk)
            new = {**(old or {}), PK: {"S": pk}, RATE_USED: {"N": str(_number(old or {}, RATE_USED) - allowance.views)}}
            with throttling_as_domain():
                self.data.write("UpdateItem", pk, new)
            self._emit(pk, old, new)

    def set_counters(
        self, item_id: str, shard: int, bucket: str, counts: Mapping[str, int], import_id: str
    ) -> CounterSet:
        """``SET`` absolute counters on a new counter item tagged ``import_id`` if the item does not exist
        (``attribute_not_exists(pk)``); otherwise PRESENT (same import) or TAKEN, with the refused write's units."""
        pk = view_pk(item_id, shard, bucket)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is not None:
                self.data.refuse("UpdateItem", pk)
                units = float(self.data.schema.write_charges({PK: {"S": pk}}, old, old)[0].units)
                return CounterSet(PRESENT if old.get(IMPORT_ID, {}).get("S") == import_id else TAKEN, units)
            new: Item = {
                PK: {"S": pk},
                ITEM_ID: {"S": item_id},
                SHARD: {"N": str(shard)},
                BUCKET: {"S": bucket},
                IMPORT_ID: {"S": import_id},
            }
            new |= {counter_attribute(board): {"N": str(count)} for board, count in counts.items()}
            with throttling_as_domain():
                self.data.write("UpdateItem", pk, new)
            self._emit(pk, None, new)
        return CounterSet(WRITTEN, float(self.data.schema.write_charges({PK: {"S": pk}}, None, new)[0].units))

    def _emit(self, pk: str, old: Item | None, new: Item) -> None:
        self._sequence += 1
        change: dict[str, Any] = {
            "Keys": {PK: {"S": pk}},
            "NewImage": new,
            "SequenceNumber": f"{self._sequence:021d}",
            "SizeBytes": item_size(new) + item_size(old),
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        }
        if old is not None:
            change["OldImage"] = old
        self.stream.append(
            {
                "eventID": f"{self._sequence:x}",
                "eventName": "MODIFY" if old else "INSERT",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "dynamodb": change,
                "eventSourceARN": STREAM_ARN,
            }
        )

    def take_stream(self, limit: int) -> list[dict[str, Any]]:
        """Remove and return the oldest ``limit`` stream records (one Lambda batch)."""
        with self.data.lock:
            batch, self.stream = self.stream[:limit], self.stream[limit:]
        return batch

    def item_total(self, item_id: str, write_shards: int, bucket: str | None = None) -> int:
        """Exact views of one item in one anchor bucket (None: the current one, where ``add_view`` writes): the sum
        of its shard counters (strongly consistent)."""
        bucket = self.bucket(bucket)
        return sum(self._counters(item_id, range(write_shards), bucket).values())

    def shard_counts(self, item_id: str, shards: Iterable[int], bucket: str | None = None) -> dict[int, int]:
        """The counters of ``item_id`` on ``shards`` in one anchor bucket (None: the current one);
        shards never written are left out."""
        return self._counters(item_id, sorted(set(shards)), self.bucket(bucket))

    def _counters(self, item_id: str, shards: Iterable[int], bucket: str) -> dict[int, int]:
        with self.data.lock:
            items = {k: self.data.read("BatchGetItem", view_pk(item_id, k, bucket), True) for k in shards}
        return {k: int(item[VIEWS]["N"]) for k, item in items.items() if item}

    def scan_totals(self, segments: int = 4) -> dict[str, int]:
        """Every item's exact all-time views on the global board (as ``ViewStore.scan_totals``)."""
        totals: dict[str, int] = {}
        for name, _, _, board, views in self.scan_counters_all():
            if board == GLOBAL_BOARD:  # a category board's counter counts the same views again
                totals[name] = totals.get(name, 0) + views
        return totals

    def counters(self, item_id: str, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, int]]:
        found: dict[tuple[str, int], dict[str, int]] = {}
        with self.data.lock:
            for bucket, shard in sorted(set(keys)):
                item = self.data.read("BatchGetItem", view_pk(item_id, shard, bucket), True)
                for _, _, _, board, value in counter_rows(item) if item else ():
                    found.setdefault((bucket, shard), {})[board] = value
        return found

    def scan_counters_all(self, segments: int = 4) -> list[tuple[str, str, int, str, int]]:
        """(item, bucket, shard, board, views) of every board counter of every base item."""
        with self.data.lock:
            return [row for item in self.data.scan() if _is_counter(item) for row in counter_rows(item)]


class MemoryBoardStore:
    """The board table in memory (the Board port): aggregates, past entries, the period GSIs, period items and
    snapshots. Each method evaluates the adapter's ConditionExpression in Python and charges what DynamoDB would."""

    def __init__(self, emulator: CapacityEmulator, table: str = "memory-board") -> None:
        self.table = table
        self.data = MemoryTable(board_schema(table), emulator)
        # Per period index (kind): GSI key -> pk -> count, plus each partition sorted best first (cached).
        self._partitions: dict[str, dict[str, dict[str, int]]] = {kind: {} for kind in (*KINDS, ALL)}
        self._sorted: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self.rank_write_units = 0  # of ranked versions' pages and shards, written and deleted

    # -- aggregates
    def move(
        self,
        board: str,
        item_id: str,
        bucket: str,
        moves: Sequence[ShardMove],
        *,
        kinds: Sequence[str],
        joins: Mapping[str, str],
        weights: Mapping[str, int] | None = None,
        buckets: Mapping[str, int] | None = None,
    ) -> MoveResult:
        pk = aggregate_pk(board, item_id)
        with self.data.lock:
            current = self.data.items.get(pk) or {}
            stored_bucket = current.get(BUCKET, {}).get("S")
            if (stored_bucket not in (None, bucket)) or not _moves_hold(current, moves):
                refused = self.data.refuse("UpdateItem", pk)
                return MoveResult(applied=False, state=aggregate_state(refused) if refused is not None else None)
            delta = views_added(moves)
            new = dict(current)
            new |= {PK: {"S": pk}, ITEM_ID: {"S": item_id}, BOARD: {"S": board}, BUCKET: {"S": bucket}}
            new[FORMAT] = {"N": str(COARSE_FORMAT)}
            new[VIEWS] = {"N": str(_number(current, VIEWS) + delta)}
            for kind in kinds:
                added = delta * (weights or {}).get(kind, 1)
                new[count_attr(kind)] = {"N": str(_number(current, count_attr(kind)) + added)}
            for m in moves:
                new[applied_attr(m.shard)] = {"N": str(m.target)}
            for kind, key in joins.items():  # if_not_exists: only reshard (and a period's end) moves keys
                new.setdefault(index_key_attr(kind), {"S": key})
                if buckets and kind in buckets:
                    new.setdefault(bucket_attr(kind), {"N": str(buckets[kind])})
            if ALL in joins:
                new.pop(BOARD_SHARD, None)
            self._write("UpdateItem", pk, new)
        return MoveResult(applied=True, state=aggregate_state(new))

    def state(self, board: str, item_id: str) -> AggregateState:
        with self.data.lock:
            return aggregate_state(self.data.read("GetItem", aggregate_pk(board, item_id), consistent=True))

    def states(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], AggregateState]:
        """BatchGetItem as the adapter sends it (``_batch_get``)."""
        by_pk = {aggregate_pk(board, item_id): (board, item_id) for board, item_id in keys}
        return {by_pk[pk]: aggregate_state(item) for pk, item in self._batch_get(list(by_pk)).items()}

    def _batch_get(self, pks: Sequence[str]) -> dict[str, Item]:
        """The items of ``pks`` that exist, read as the adapter reads them: BatchGetItem, one request per 100 keys,
        eventually consistent, each key charged by its item's size."""
        found: dict[str, Item] = {}
        with self.data.lock:
            for start in range(0, len(pks), 100):
                items = {pk: self.data.items.get(pk) for pk in pks[start : start + 100]}
                charges = [
                    Charge(self.table, self.table, pk, "read", read_units(item_size(item), False))
                    for pk, item in items.items()
                ]
                self.data.emulator.admit("BatchGetItem", charges)
                found |= {pk: item for pk, item in items.items() if item is not None}
        return found

    def roll(
        self, board: str, item_id: str, old: AggregateState, new: AggregateState, keys: Mapping[str, str | None]
    ) -> bool:
        pk = aggregate_pk(board, item_id)
        with self.data.lock:
            current = self._holding(pk, old)
            if current is None:
                return False
            item = {name: value for name, value in current.items() if not name.startswith(APPLIED_PREFIX)}
            item[BUCKET], item[VIEWS] = {"S": new.bucket or ""}, {"N": str(new.views)}
            item[FORMAT] = {"N": str(COARSE_FORMAT)}
            for shard, value in new.applied.items():
                item[applied_attr(shard)] = {"N": str(value)}
            for kind, count in new.counts.items():
                item[count_attr(kind)] = {"N": str(count)}
                item[bucket_attr(kind)] = {"N": str(new.buckets.get(kind, index_bucket(count)))}
            for kind, key in keys.items():
                if key is None:
                    item.pop(index_key_attr(kind), None)
                else:
                    item[index_key_attr(kind)] = {"S": key}
            self._write("UpdateItem", pk, item)
        return True

    def archive(self, entry: PastEntry) -> None:
        period = entry.period
        pk = entry_pk(period.board, period.kind, period.bucket, entry.item_id)
        with self.data.lock:
            current = self.data.items.get(pk)
            if current is not None and _number(current, SOURCE_VIEWS) >= entry.source_views:
                self.data.refuse("PutItem", pk)
                return
            item: Item = {
                PK: {"S": pk},
                ITEM_ID: {"S": entry.item_id},
                BOARD: {"S": period.board},
                PERIOD_KIND: {"S": period.kind},
                BUCKET: {"S": period.bucket},
                count_attr(period.kind): {"N": str(entry.count)},
                bucket_attr(period.kind): {"N": str(deep_bucket(entry.count))},
                FORMAT: {"N": str(COARSE_FORMAT)},
                SOURCE_VIEWS: {"N": str(entry.source_views)},
            }
            if entry.index_key is not None:
                item[index_key_attr(period.kind)] = {"S": entry.index_key}
            if entry.expires_at is not None:
                item[EXPIRES_AT] = {"N": str(entry.expires_at)}
            for shard, value in (entry.applied or {}).items():
                item[applied_attr(shard)] = {"N": str(value)}
            self._write("PutItem", pk, item)

    def move_late(self, late: LateMove) -> LateResult:
        """TransactWriteItems: every condition is checked first; a transactional write costs twice the units."""
        entry = PeriodKey(late.board, late.anchor_kind, late.bucket)
        entry_key = entry_pk(late.board, late.anchor_kind, late.bucket, late.item_id)
        aggregate_key = aggregate_pk(late.board, late.item_id)
        delta = views_added(late.moves)
        with self.data.lock:
            stored_entry = self.data.items.get(entry_key) or {}
            if not _moves_hold(stored_entry, late.moves):
                refused = self.data.refuse("TransactWriteItems", entry_key)
                return LateResult(applied=False, entry=entry_state(refused, late.anchor_kind) if refused else None)
            aggregate = self.data.items.get(aggregate_key)
            if aggregate is None or aggregate.get(BUCKET, {}).get("S") != late.aggregate_bucket:
                self.data.refuse("TransactWriteItems", aggregate_key)
                return LateResult(applied=False, aggregate_moved=True)
            writes: list[tuple[str, Item]] = []
            for period in (entry, *late.past):
                pk = entry_pk(period.board, period.kind, period.bucket, late.item_id)
                item = dict(self.data.items.get(pk) or {})
                item |= {PK: {"S": pk}, ITEM_ID: {"S": late.item_id}, BOARD: {"S": period.board}}
                item |= {PERIOD_KIND: {"S": period.kind}, BUCKET: {"S": period.bucket}}
                item[FORMAT] = {"N": str(COARSE_FORMAT)}
                added = late.added(period.kind, delta)
                item[count_attr(period.kind)] = {"N": str(_number(item, count_attr(period.kind)) + added)}
                if period == entry:
                    for m in late.moves:
                        item[applied_attr(m.shard)] = {"N": str(m.target)}
                expires = late.expires_at.get(period)
                if expires is not None:
                    item[EXPIRES_AT] = {"N": str(expires)}
                if period in late.joins:
                    item.setdefault(index_key_attr(period.kind), {"S": late.joins[period]})
                    item.setdefault(bucket_attr(period.kind), {"N": str(late.join_buckets.get(period, 0))})
                writes.append((pk, item))
            moved = dict(aggregate)
            moved[VIEWS] = {"N": str(_number(aggregate, VIEWS) + delta)}
            for kind in late.aggregate_kinds:
                added = late.added(kind, delta)
                moved[count_attr(kind)] = {"N": str(_number(aggregate, count_attr(kind)) + added)}
            writes.append((aggregate_key, moved))
            charges = []
            for pk, item in writes:
                for charge in self.data.schema.write_charges({PK: {"S": pk}}, self.data.items.get(pk), item):
                    double = charge.resource == self.data.schema.name
                    charges.append(dataclasses.replace(charge, units=charge.units * 2) if double else charge)
            self.data.emulator.admit("TransactWriteItems", charges)
            for pk, item in writes:
                self._index(pk, self.data.items.get(pk), item)
                self.data.items[pk] = item
        return LateResult(applied=True)

    def _holding(self, pk: str, seen: AggregateState) -> dict[str, Any] | None:
        """The aggregate if it still holds ``seen``'s bucket and views (the table adapter's condition), else None
        with the refused UpdateItem charged. Called under the lock."""
        current = self.data.items.get(pk)
        if current is None or current.get(BUCKET, {}).get("S") != seen.bucket or _number(current, VIEWS) != seen.views:
            self.data.refuse("UpdateItem", pk)
            return None
        return current

    def add_history(self, board: str, item_id: str, seen: AggregateState, adds: Mapping[str, int]) -> bool:
        pk = aggregate_pk(board, item_id)
        with self.data.lock:
            current = self._holding(pk, seen)
            if current is None:
                return False
            item = dict(current)
            for kind, count in adds.items():
                attribute = count_attr(kind)
                item[attribute] = {"N": str(_number(item, attribute) + count)}
            self._write("UpdateItem", pk, item)
        return True

    def entry_state(self, period: PeriodKey, item_id: str) -> AggregateState:
        pk = entry_pk(period.board, period.kind, period.bucket, item_id)
        with self.data.lock:
            return entry_state(self.data.read("GetItem", pk, consistent=True), period.kind)

    def erase(self, board: str, item_id: str, periods: Sequence[PeriodKey]) -> int:
        """The adapter's keys-only BatchGetItem, a BatchWriteItem delete of the entries found, then the aggregate."""
        names = [
            entry_pk(p.board, p.kind, p.bucket, item_id)
            for p in periods
            if p.board == board and kind_of(p.kind).pick(all_time=False, period=True)
        ]
        with self.data.lock:
            found = [pk for pk in names if self.data.read("BatchGetItem", pk, consistent=False) is not None]
            for pk in found:
                self._write("BatchWriteItem", pk, None)
            pk = aggregate_pk(board, item_id)
            aggregate = self.data.items.get(pk)
            self._write("DeleteItem", pk, None)
        return len(found) + (aggregate is not None)

    def join_index(
        self, board: str, item_id: str, keys: Mapping[str, str], buckets: Mapping[str, int] | None = None
    ) -> bool:
        """Without buckets ``attribute_exists(pk) AND (attribute_not_exists(k1) OR ...)``; with them, each bucket
        ``(attribute_not_exists(k) OR attribute_not_exists(b) OR b < :b)``; each key ``if_not_exists``: an indexed
        item keeps its key."""
        pk = aggregate_pk(board, item_id)
        buckets = buckets or {}
        wanted = {index_key_attr(kind): key for kind, key in keys.items()}
        with self.data.lock:
            old = self.data.items.get(pk)
            if buckets:
                holds = old is not None and all(
                    index_key_attr(kind) not in old
                    or bucket_attr(kind) not in old
                    or _number(old, bucket_attr(kind)) < bucket
                    for kind, bucket in buckets.items()
                )
            else:
                holds = old is not None and not all(attribute in old for attribute in wanted)
            if old is None or not holds:
                self.data.refuse("UpdateItem", pk)
                return False
            new = {**{a: {"S": k} for a, k in wanted.items()}, **old}
            new |= {bucket_attr(kind): {"N": str(bucket)} for kind, bucket in buckets.items()}
            if ALL in keys:
                new.pop(BOARD_SHARD, None)
            self._write("UpdateItem", pk, new)
        return True

    def join_entry(self, period: PeriodKey, item_id: str, board_shard: str, bucket: int | None = None) -> bool:
        pk = entry_pk(period.board, period.kind, period.bucket, item_id)
        if bucket is None:
            return self._join(pk, index_key_attr(period.kind), board_shard)
        key, sort = index_key_attr(period.kind), bucket_attr(period.kind)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is None or (key in old and sort in old and _number(old, sort) >= bucket):
                self.data.refuse("UpdateItem", pk)
                return False
            new = {key: {"S": board_shard}, **old, sort: {"N": str(bucket)}}
            self._write("UpdateItem", pk, new)
        return True

    def _join(self, pk: str, attribute: str, key: str) -> bool:
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is None or attribute in old:
                self.data.refuse("UpdateItem", pk)
                return False
            self._write("UpdateItem", pk, {**old, attribute: {"S": key}})
        return True

    def aggregate_views(self, item_id: str, board: str = GLOBAL_BOARD) -> int | None:
        with self.data.lock:
            item = self.data.read("GetItem", aggregate_pk(board, item_id), consistent=False)
        return None if item is None else int(item[VIEWS]["N"])

    def scan_counts(self, segments: int = 4, deadline: float | None = None) -> list[Item]:
        if deadline is not None and time.monotonic() > deadline:  # as BoardStore's paged scan would, at its first page
            raise ScanDeadline("scan of the in-memory board table not finished by its deadline")
        with self.data.lock:
            return [item for item in self.data.scan() if ITEM_ID in item]

    def scan_aggregates(self, board: str = GLOBAL_BOARD, segments: int = 4) -> dict[str, tuple[int, bool]]:
        return {
            item[ITEM_ID]["S"]: (int(item[VIEWS]["N"]), DEEP_KEY in item)
            for item in self.scan_counts(segments)
            if item[PK]["S"] == aggregate_pk(board, item[ITEM_ID]["S"])
        }

    def delete_aggregate(self, item_id: str, board: str = GLOBAL_BOARD) -> None:
        with self.data.lock:
            self._write("DeleteItem", aggregate_pk(board, item_id), None)

    def _write(self, operation: str, pk: str, new: Item | None) -> None:
        old = self.data.write(operation, pk, new)
        self._index(pk, old, new)

    def _index(self, pk: str, old: Item | None, new: Item | None) -> None:
        """Keep each period index's partitions in step with one item's old and new keys."""
        for kind in self._partitions:
            key_attr, count = index_key_attr(kind), bucket_attr(kind)
            for item, add in ((old, False), (new, True)):
                if item and key_attr in item:
                    partition = self._partitions[kind].setdefault(item[key_attr]["S"], {})
                    if add:
                        partition[pk] = _number(item, count)
                    else:
                        partition.pop(pk, None)
                    self._sorted.pop((kind, item[key_attr]["S"]), None)

    # -- the GSIs
    def query_shard(
        self, kind: str, board_shard: str, limit: int, start: ResumeToken | None
    ) -> tuple[list[IndexRow], Item | None]:
        """Like DynamoDB: best first, resumes after ``start``, returns a cursor whenever ``limit`` was reached."""
        count_name, key_name = bucket_attr(kind), index_key_attr(kind)
        index = self.data.schema.index(index_name(kind))
        with self.data.lock:
            ordered = self._sorted.get((kind, board_shard))
            if ordered is None:
                members = self._partitions[kind].get(board_shard, {})
                ordered = self._sorted[(kind, board_shard)] = sorted((-views, pk) for pk, views in members.items())
            first = bisect.bisect_right(ordered, (-int(start[count_name]["N"]), start[PK]["S"])) if start else 0
            rows: list[IndexRow] = []
            sizes: list[int] = []
            cursor: Item | None = None
            for negative_views, pk in ordered[first : first + limit]:
                entry = index.entry(self.data.items[pk], self.data.schema.keys) or {}
                item_id = entry[ITEM_ID]["S"] if ITEM_ID in entry else pk.split("#", 2)[2]  # all time: KEYS_ONLY
                rows.append(IndexRow(item_id, -negative_views, pk))
                sizes.append(item_size(entry))
                if len(rows) == limit or sum(sizes) >= PAGE_BYTES:
                    cursor = {PK: {"S": pk}, key_name: {"S": board_shard}, count_name: {"N": str(-negative_views)}}
                    break
            units = query_units(sizes, consistent=False)
            resource = self.data.schema.resource(index)
            self.data.emulator.admit("Query", [Charge(self.table, resource, board_shard, "read", units)])
        return rows, cursor

    def query_views_index(
        self, board_shard: str, limit: int, start: ResumeToken | None
    ) -> tuple[list[IndexRow], Item | None]:
        """``by-views`` holds nothing here (nothing in memory is of a release before): one empty Query."""
        index = self.data.schema.index(BY_VIEWS_INDEX)
        resource = self.data.schema.resource(index)
        self.data.emulator.admit("Query", [Charge(self.table, resource, board_shard, "read", query_units([], False))])
        return [], None

    def read_counts(self, kind: str, refs: Sequence[str]) -> dict[str, int]:
        """BatchGetItem as the adapter sends it (``_batch_get``)."""
        return {ref: stored_count(item, kind) for ref, item in self._batch_get(refs).items()}

    # -- snapshots and period items
    def get_snapshot(self, period: PeriodKey | str, consistent: bool = False) -> Head | None:
        """A period's snapshot (a bare board name: its all-time one), or None before the first."""
        if isinstance(period, str):
            period = PeriodKey(period, ALL, ALL)
        with self.data.lock:
            item = self.data.read("GetItem", snapshot_pk(*period), consistent)
        return None if item is None else snapshot_from_item(item)

    def put_snapshot(self, snapshot: Head, previous_version: int | None) -> bool:
        item = snapshot_item(snapshot)
        pk = item[PK]["S"]
        with self.data.lock:
            old = self.data.items.get(pk)
            found = int(old["version"]["N"]) if old else None
            if found != previous_version:
                self.data.refuse("PutItem", pk)
                return False
            self.data.write("PutItem", pk, item)
        return True

    def thresholds(self, periods: Sequence[PeriodKey], consistent: bool = False) -> dict[PeriodKey, BoardState]:
        found = {}
        with self.data.lock:
            for period in periods:
                item = self.data.read("BatchGetItem", threshold_pk(*period), consistent=consistent)
                if item is not None:
                    found[period] = board_state_from_item(item)
        return found

    def get_threshold(self, board: str) -> int:
        return self.get_board_state(board).threshold

    def get_board_state(self, board: str, consistent: bool = False) -> BoardState:
        with self.data.lock:
            return board_state_from_item(self.data.read("GetItem", threshold_pk(board), consistent))

    def raise_threshold(self, period: PeriodKey, threshold: int) -> bool:
        pk = threshold_pk(*period)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is not None and "threshold" in old and int(old["threshold"]["N"]) >= threshold:
                self.data.refuse("UpdateItem", pk)
                return False
            self._write("UpdateItem", pk, {**(old or {PK: {"S": pk}}), "threshold": {"N": str(threshold)}})
        return True

    def lower_threshold(self, period: PeriodKey, threshold: int) -> bool:
        pk = threshold_pk(*period)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is None or "threshold" not in old or int(old["threshold"]["N"]) <= threshold:
                self.data.refuse("UpdateItem", pk)
                return False
            self._write("UpdateItem", pk, {**old, "threshold": {"N": str(threshold)}})
        return True

    def raise_deep_threshold(self, board: str, threshold: int) -> bool:
        pk = threshold_pk(board)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is not None and DEEP_THRESHOLD in old and _number(old, DEEP_THRESHOLD) >= threshold:
                self.data.refuse("UpdateItem", pk)
                return False
            self._write("UpdateItem", pk, {**(old or {PK: {"S": pk}}), DEEP_THRESHOLD: {"N": str(threshold)}})
        return True

    # -- board layout (resharding): the adapter's ConditionExpressions
    def begin_reshard(self, board: str, current: int, target: int, current_is_default: bool) -> bool:
        """``attribute_not_exists(p) AND s = :from`` (or ``s`` absent when ``current`` is the default)."""
        pk = threshold_pk(board)
        with self.data.lock:
            old = self.data.items.get(pk) or {}
            stored = old.get(BOARD_SHARDS_ATTR)
            at_current = (stored is None and current_is_default) or (stored is not None and int(stored["N"]) == current)
            if PREVIOUS_BOARD_SHARDS_ATTR in old or not at_current:
                self.data.refuse("UpdateItem", pk)
                return False
            new = {**old, PK: {"S": pk}, BOARD: {"S": board}}
            new |= {BOARD_SHARDS_ATTR: {"N": str(target)}, PREVIOUS_BOARD_SHARDS_ATTR: {"N": str(current)}}
            self._write("UpdateItem", pk, new)
        return True

    def finish_reshard(self, board: str, previous: int, target: int) -> bool:
        """``s = :to AND p = :from``, then REMOVE p."""
        pk = threshold_pk(board)
        with self.data.lock:
            old = self.data.items.get(pk) or {}
            moving = BOARD_SHARDS_ATTR in old and PREVIOUS_BOARD_SHARDS_ATTR in old
            if not moving or (_number(old, BOARD_SHARDS_ATTR), _number(old, PREVIOUS_BOARD_SHARDS_ATTR)) != (
                target,
                previous,
            ):
                self.data.refuse("UpdateItem", pk)
                return False
            self._write("UpdateItem", pk, {k: v for k, v in old.items() if k != PREVIOUS_BOARD_SHARDS_ATTR})
        return True

    def scan_layout(self, board: str, shards: int) -> list[IndexKeyAt]:
        found: list[IndexKeyAt] = []
        with self.data.lock:
            for item in self.data.scan():
                if item.get(BOARD, {}).get("S") != board or ITEM_ID not in item:
                    continue
                for name, value in item.items():
                    keyed = name in {BOARD_SHARD, DEEP_KEY} or name.startswith(PERIOD_KEY_PREFIX)
                    if keyed and layout_of(value["S"]) == shards:
                        found.append((item[PK]["S"], name, value["S"], item[ITEM_ID]["S"]))
        return found

    def rekey(self, pk: str, attribute: str, old_key: str, new_key: str) -> bool:
        """``#bs = :old``, then SET it to ``new_key`` (the index moves with it)."""
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is None or old.get(attribute, {}).get("S") != old_key:
                self.data.refuse("UpdateItem", pk)
                return False
            self._write("UpdateItem", pk, {**old, attribute: {"S": new_key}})
        return True

    def mark_changed(self, periods: Sequence[PeriodKey], now: int, expires_at: Mapping[PeriodKey, int | None]) -> None:
        with self.data.lock:
            for period in periods:
                pk = threshold_pk(*period)
                item = dict(self.data.items.get(pk) or {PK: {"S": pk}})
                item |= {CHANGED: {"S": DIRTY}, CHANGED_AT: {"N": str(now)}, BOARD: {"S": period.board}}
                item.setdefault(DIRTY_SINCE, {"N": str(now)})
                item[CHANGES] = {"N": str(_number(item, CHANGES) + 1)}
                item |= {PERIOD_KIND: {"S": period.kind}, BUCKET: {"S": period.bucket}}
                expires = expires_at.get(period)
                if expires is not None:
                    item[EXPIRES_AT] = {"N": str(expires)}
                self._write("UpdateItem", pk, item)

    def _by_change(self, partition: str) -> list[PeriodStatus]:
        with self.data.lock:
            items = [item for item in self.data.items.values() if item.get(CHANGED, {}).get("S") == partition]
            units = query_units([item_size(item) for item in items], consistent=False)
            resource = self.data.schema.resource(self.data.schema.index(BY_CHANGE_INDEX))
            self.data.emulator.admit("Query", [Charge(self.table, resource, partition, "read", units)])
        return [period_status(item) for item in items]

    def changed_periods(self) -> list[PeriodStatus]:
        return self._by_change(DIRTY)

    def periods(self) -> list[PeriodStatus]:
        return self._by_change(DIRTY) + self._by_change(CLEAN_BOARD)

    def mark_refreshed(self, period: PeriodKey, changes: int, now: int) -> None:
        pk = threshold_pk(*period)
        with self.data.lock:
            old = self.data.items.get(pk)
            if old is None:
                self.data.refuse("UpdateItem", pk)
                return
            item = {key: value for key, value in old.items() if key not in {FAILURES, FAILING_SINCE}}
            item[REFRESHED_AT] = {"N": str(now)}
            if _number(old, CHANGES) != changes:  # a batch counted a change during the refresh: it waits from now
                self.data.refuse("UpdateItem", pk)
                self._write("UpdateItem", pk, {**item, DIRTY_SINCE: {"N": str(now)}})
                return
            item.pop(DIRTY_SINCE, None)
            clean = kind_of(period.kind).pick(all_time=CLEAN_BOARD, period=None)
            if clean:
                item[CHANGED] = {"S": clean}
            else:
                item.pop(CHANGED, None)
            self._write("UpdateItem", pk, item)

    def mark_failed(self, period: PeriodKey, now: int) -> int:
        pk = threshold_pk(*period)
        with self.data.lock:
            item = dict(self.data.items.get(pk) or {PK: {"S": pk}})
            failures = _number(item, FAILURES) + 1
            item |= {FAILURES: {"N": str(failures)}}
            item.setdefault(FAILING_SINCE, {"N": str(now)})
            self._write("UpdateItem", pk, item)
        return failures

    # -- ranks checkpoints
    def put_ranks_checkpoint(self, period: PeriodKey, hour: str, ranks: Mapping[str, int], expires_at: int) -> None:
        item = ranks_checkpoint_item(period, hour, ranks, expires_at)
        with self.data.lock:
            self.data.write("PutItem", item[PK]["S"], item)

    def get_ranks_checkpoint(self, period: PeriodKey, hour: str) -> dict[str, int] | None:
        with self.data.lock:
            item = self.data.read("GetItem", ranks_checkpoint_pk(*period, hour), consistent=False)
        return None if item is None else ranks_of_checkpoint(item)

    # -- ranked versions
    def put_rank_parts(self, period: PeriodKey, parts: RankParts, expires_at: int | None) -> None:
        with self.data.lock:
            for item in rank_part_items(period, parts, expires_at):
                self._rank_write(item[PK]["S"], item)

    def delete_rank_parts(self, period: PeriodKey, rv: str, pages: int, shards: int) -> None:
        keys = [rank_page_pk(*period, rv, page) for page in range(pages)]
        keys += [rank_shard_pk(*period, rv, shard) for shard in range(shards)]
        with self.data.lock:
            for pk in keys:
                self._rank_write(pk, None)

    def _rank_write(self, pk: str, new: Item | None) -> None:
        """One item of a BatchWriteItem, its units also tallied apart (the reads benchmark reports them)."""
        old = self.data.write("BatchWriteItem", pk, new)
        if old is not None or new is not None:
            self.rank_write_units += write_units(item_size(old), item_size(new))

    def get_rank_shards(self, period: PeriodKey, rv: str, shards: Sequence[int]) -> dict[int, RankShard]:
        found: dict[int, RankShard] = {}
        with self.data.lock:
            for shard in shards:
                item = self.data.read("BatchGetItem", rank_shard_pk(*period, rv, shard), consistent=False)
                if item is not None:
                    found[shard] = rank_shard_of_text(item[RANK_ENTRIES]["S"])
        return found

    def get_rank_pages(self, period: PeriodKey, rv: str, pages: Sequence[int]) -> dict[int, list[Row]]:
        found: dict[int, list[Row]] = {}
        with self.data.lock:
            for page in pages:
                item = self.data.read("BatchGetItem", rank_page_pk(*period, rv, page), consistent=False)
                if item is not None:
                    found[page] = rank_rows(item)
        return found

    def rank_part_pks(self) -> list[str]:
        """Keys of every stored ranked-version item (tests check retired versions are deleted)."""
        with self.data.lock:
            return [pk for pk in self.data.items if pk.startswith((RANK_PAGE_PREFIX, RANK_SHARD_PREFIX))]

    def snapshot_item_size(self, period: PeriodKey | None = None) -> int:
        """Bytes of the stored snapshot item: what one frontend read costs."""
        return item_size(self.data.items.get(snapshot_pk(*(period or PeriodKey(GLOBAL_BOARD, ALL, ALL)))))


def counter_rows(item: Mapping[str, Any]) -> list[tuple[str, str, int, str, int]]:
    """(item, bucket, shard, board, views) of each counter of one base item (``views`` is the global board's)."""
    name, bucket, shard = item[ITEM_ID]["S"], item[BUCKET]["S"], int(item[SHARD]["N"])
    return [
        (
            name,
            bucket,
            shard,
            GLOBAL_BOARD if attribute == VIEWS else attribute[len(BOARD_COUNTER_PREFIX) :],
            int(v["N"]),
        )
        for attribute, v in item.items()
        if attribute == VIEWS or attribute.startswith(BOARD_COUNTER_PREFIX)
    ]


def _is_counter(item: Mapping[str, Any]) -> bool:
    """A base counter item, not a dedupe marker (``seen#...``) or anything else: what verify and rebuild sum."""
    try:
        return bool(item[PK]["S"] == view_pk(item[ITEM_ID]["S"], int(item[SHARD]["N"]), item[BUCKET]["S"]))
    except (KeyError, TypeError, ValueError):
        return False


def _moves_hold(item: Mapping[str, Any], moves: Sequence[ShardMove]) -> bool:
    """The compare-and-set's condition: every applied value is what the move expects (0 = absent)."""
    return all(_applied(item, m.shard) == (m.expected or None) for m in moves)


def _counted(
    old: Item | None, pk: str, item_id: str, shard: int, bucket: str, *, boards: Sequence[str], count: int
) -> Item:
    """A counter item after ``ADD count`` to ``views`` and each board's counter (``SET`` of its key attributes)."""
    new = dict(old or {})
    new |= {PK: {"S": pk}, ITEM_ID: {"S": item_id}, SHARD: {"N": str(shard)}, BUCKET: {"S": bucket}}
    for attribute in (VIEWS, *(board_counter(board) for board in boards)):
        new[attribute] = {"N": str(_number(new, attribute) + count)}
    if any(is_reserved(board) for board in boards):  # a crawler's view: the global counter is added 0 (views_table)
        new[VIEWS] = {"N": str(_number(old or {}, VIEWS))}
    return new


def _key_marker(keyed: KeyedRequest, answer: Answer) -> Item:
    return {
        PK: {"S": idempotency_pk(keyed.key)},
        EXPIRES_AT: {"N": str(keyed.expires_at)},
        FINGERPRINT: {"S": keyed.fingerprint},
        ANSWER: {"S": answer.value},
    }


def _number(item: Mapping[str, Any], attribute: str) -> int:
    value = item.get(attribute)
    return int(value["N"]) if value else 0


def _applied(item: Mapping[str, Any], shard: int) -> int | None:
    value = item.get(applied_attr(shard))
    return int(value["N"]) if value else None


class MemoryDailyKeys:
    """Anonymous viewers' daily keys in memory (the DailyKeys port), as the shards table keeps them: the first key
    stored for a day stays, with its expiry; every UpdateItem priced."""

    def __init__(self, emulator: CapacityEmulator, table: str = "memory-shards") -> None:
        self.data = MemoryTable(TableSchema(table, PK), emulator)

    def daily_key(self, day: str, candidate: bytes, expires_at: int) -> bytes:
        pk = daily_key_pk(day)
        with self.data.lock:
            old = self.data.items.get(pk)
            new = old or {PK: {"S": pk}, DAILY_KEY: {"B": candidate}, EXPIRES_AT: {"N": str(expires_at)}}
            self.data.write("UpdateItem", pk, new)
        return bytes(new[DAILY_KEY]["B"])


class MemoryShardMetadataStore:
    """The shard metadata table in memory (the ShardMetadataStore port), every GetItem and UpdateItem priced.

    Same conditions as the adapter's expressions (optimistic lock on ``last_updated``, server-side cooldown cutoff),
    so the viral ramp exercises the real races, and a hot metadata key would throttle.
    """

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
    """The ConditionExpression of ``adapters.shards_table.ShardMetadataStore.change_count``."""
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


def items_schema(table: str) -> TableSchema:
    """template.yaml's items table: pk + sk, and the by-created index projecting everything."""
    return TableSchema(table, PK, SK, (IndexSchema(BY_CREATED_INDEX, CREATED_SHARD, CREATED_KEY, None),))


class MemoryItemStore:
    """The items table in memory (the ItemCatalog port): the adapter's UpdateItem (``if_not_exists`` on the
    creation attributes, ``ADD rev``) and transactions applied in Python, every request priced. The takedown markers
    (and an earlier release's String Sets) live under ``<pk>\0<sk>`` with each partition's sort keys kept in order,
    so a listing reads them as the adapter's Query does."""

    def __init__(
        self, emulator: CapacityEmulator, table: str = "memory-items", created_shards: int = DEFAULT_CREATED_SHARDS
    ) -> None:
        self.data = MemoryTable(items_schema(table), emulator)
        self.created_shards = created_shards
        self._sort_keys: dict[str, list[str]] = {}  # partition -> its markers' (and old set's) sort keys, ascending

    def put(self, item_id: str, meta: str, now: str) -> ItemRecord:
        pk = item_record_pk(item_id)
        values = put_values(item_id, meta, now, self.created_shards)
        with self.data.lock:
            old = self.data.items.get(pk) or {PK: {"S": pk}, SK: {"S": ITEM_RECORD_SK}}
            new = {
                **old,
                ITEM_ID: values[":id"],
                ITEM_META: values[":meta"],
                UPDATED_AT: values[":now"],
                CREATED_AT: old.get(CREATED_AT, values[":now"]),
                REV: {"N": str(int(old.get(REV, {"N": "0"})["N"]) + 1)},
            }
            if ITEM_STATUS in old:  # the adapter's PUT_CONDITION refused (charged), PUT_TAKEN_DOWN: no index keys
                self.data.refuse("UpdateItem", pk)
                if old[ITEM_STATUS]["S"] == DELETED:  # and PUT_NOT_DELETED refused too
                    self.data.refuse("UpdateItem", pk)
                    raise DeletedItem(item_id)
            else:
                new |= {
                    CREATED_SHARD: old.get(CREATED_SHARD, values[":cs"]),
                    CREATED_KEY: old.get(CREATED_KEY, values[":ck"]),
                }
            self.data.write("UpdateItem", pk, new)
        return item_record(new)

    def get(self, item_id: str, consistent: bool = False) -> ItemRecord | None:
        with self.data.lock:
            item = self.data.read("GetItem", item_record_pk(item_id), consistent)
        return None if item is None or ITEM_META not in item else item_record(item)

    def set_hidden(self, item_id: str, hidden: bool, by: str, reason: str, now: str) -> bool:
        """The adapter's transactional writes (takedown_writes), applied in Python under the table's lock."""
        pk = item_record_pk(item_id)
        with self.data.lock:
            old = self.data.items.get(pk)
            status_now = (old or {}).get(ITEM_STATUS, {}).get("S")
            # The adapter's conditions: a hide needs no status, an unhide needs "hidden" (a tombstone refuses both).
            if status_now != (None if hidden else HIDDEN):
                self.data.refuse("TransactWriteItems", pk)
                return False
            old_set = not hidden and self._in_old_set(HIDDEN, item_id)
            table = self.data.schema.name
            status, audit, *others = takedown_writes(
                table, item_id, hidden, by=by, reason=reason, now=now, old_set=old_set
            )
            values = status["Update"]["ExpressionAttributeValues"]
            record = {
                k: v
                for k, v in (old or {PK: {"S": pk}, SK: {"S": ITEM_RECORD_SK}}).items()
                if k not in {ITEM_STATUS, AT}
            }
            record |= {ITEM_ID: values[":id"], BY: values[":by"], REASON: values[":reason"]}
            # A hide takes the record out of the by-created index; an unhide puts it back from its created_at.
            for key in (CREATED_SHARD, CREATED_KEY):
                record.pop(key, None)
            if hidden:
                record[ITEM_STATUS] = values[":hidden"]
                record[AT] = values[":now"]
            elif CREATED_AT in record:
                created_at = record[CREATED_AT]["S"]
                record[CREATED_SHARD] = {"S": created_shard(item_id, self.created_shards)}
                record[CREATED_KEY] = {"S": created_key(created_at, item_id)}
            self.data.write("TransactWriteItems", pk, record)
            self._put_audit(audit)
            for write in others:
                self._apply(write)
        return True

    def set_deleted(self, item_id: str, by: str, reason: str, now: str) -> bool:
        """The adapter's transactional writes (tombstone_writes), applied in Python under the table's lock."""
        pk = item_record_pk(item_id)
        with self.data.lock:
            old_set = self._in_old_set(HIDDEN, item_id)
            table = self.data.schema.name
            status, audit, *others = tombstone_writes(table, item_id, by=by, reason=reason, now=now, old_set=old_set)
            old = self.data.items.get(pk)
            values = status["Update"]["ExpressionAttributeValues"]
            if (old or {}).get(ITEM_STATUS) == values[":deleted"]:
                self.data.refuse("TransactWriteItems", pk)
                return False
            record = dict(old or {PK: {"S": pk}, SK: {"S": ITEM_RECORD_SK}})
            record |= {ITEM_ID: values[":id"], BY: values[":by"], REASON: values[":reason"]}
            record[ITEM_STATUS] = values[":deleted"]
            record[AT] = values[":now"]
            for key in (CREATED_SHARD, CREATED_KEY):  # out of the by-created index
                record.pop(key, None)
            self.data.write("TransactWriteItems", pk, record)
            self._put_audit(audit)
            for write in others:
                self._apply(write)
        return True

    def _put_audit(self, audit: Mapping[str, Any]) -> None:
        row = audit["Put"]["Item"]
        self.data.write("TransactWriteItems", f"audit\0{row[PK]['S']}\0{row[SK]['S']}", row, row[PK]["S"])

    def _apply(self, write: Mapping[str, Any]) -> None:
        """One of the adapter's marker writes (Put, Delete) or old-set DELETEs, under the lock."""
        if "Put" in write:
            item = write["Put"]["Item"]
            self._store(item[PK]["S"], item[SK]["S"], dict(item))
        elif "Delete" in write:
            key = write["Delete"]["Key"]
            self._store(key[PK]["S"], key[SK]["S"], None)
        else:  # DELETE ids from an old String Set: emptied, DynamoDB keeps the key alone
            update = write["Update"]
            pk, sk = update["Key"][PK]["S"], update["Key"][SK]["S"]
            ids = set(old_set_ids(self.data.items.get(f"{pk}\0{sk}") or {}))
            ids -= set(update["ExpressionAttributeValues"][":ids"]["SS"])
            self._store(pk, sk, {**update["Key"], **({SET_IDS: {"SS": sorted(ids)}} if ids else {})})

    def _store(self, pk: str, sk: str, item: Item | None, op: str = "TransactWriteItems") -> None:
        """Write (None: delete) the item ``pk``/``sk`` of a takedown partition, keeping its sort keys in order."""
        self.data.write(op, f"{pk}\0{sk}", item, pk)
        keys = self._sort_keys.setdefault(pk, [])
        at = bisect.bisect_left(keys, sk)
        present = at < len(keys) and keys[at] == sk
        if item is not None and not present:
            keys.insert(at, sk)
        elif item is None and present:
            del keys[at]

    def as_old_release(self, status: str, item_id: str) -> None:
        """Turn a takedown into what an earlier release wrote for it: the id in its status's String Set rather than a
        marker (the upgrade tests plant it, as raw writes do on DynamoDB)."""
        key = marker_key(status, item_id)
        old_set = old_set_key(status, item_id)
        pk = old_set[PK]["S"]
        with self.data.lock:
            self._store(pk, key[SK]["S"], None)
            ids = set(old_set_ids(self.data.items.get(f"{pk}\0{SET_SK}") or {})) | {item_id}
            self._store(pk, SET_SK, {**old_set, SET_IDS: {"SS": sorted(ids)}})

    def as_release_before_skeletons(self, item_id: str) -> None:
        """Turn a delete into what a release before the skeleton markers wrote: no marker of the id's skeleton (the
        upgrade tests plant it, as raw writes do on DynamoDB)."""
        key = marker_key(SKELETONS, skeleton_marker(item_id))
        with self.data.lock:
            self._store(key[PK]["S"], key[SK]["S"], None, "DeleteItem")

    def _in_old_set(self, status: str, item_id: str) -> bool:
        """The adapter's consistent GetItem of the id's old set, under the lock."""
        key = old_set_key(status, item_id)
        pk = key[PK]["S"]
        item = self.data.read("GetItem", f"{pk}\0{key[SK]['S']}", consistent=True, partition=pk)
        return item_id in old_set_ids(item or {})

    def list_taken_down(self, status: str, limit: int | None = None, consistent: bool = False) -> TakedownListing:
        """The adapter's Query of each partition, highest sort key first, ``limit`` split over the partitions; each
        page (1 MB, or the limit) priced by its items' total size."""
        per_partition = None if limit is None else max(1, math.ceil(limit / TAKEDOWN_PARTITIONS))
        pages: list[tuple[list[Item], bool]] = []
        with self.data.lock:
            for partition in range(TAKEDOWN_PARTITIONS):
                pk = partition_pk(status, partition)
                keys = list(reversed(self._sort_keys.get(pk, [])))
                read = keys if per_partition is None else keys[:per_partition]
                items = [self.data.items[f"{pk}\0{sk}"] for sk in read]
                self._charge_query(pk, [item_size(item) for item in items], consistent)
                pages.append((items, len(read) == len(keys)))
        return listing_of(pages)

    def _charge_query(self, pk: str, sizes: Sequence[int], consistent: bool) -> None:
        """A Query's pages of up to 1 MB, each priced by its total size (an empty partition: one empty page)."""
        page: list[int] = []
        pages: list[list[int]] = []
        for size in sizes:
            page.append(size)
            if sum(page) >= PAGE_BYTES:
                pages.append(page)
                page = []
        if page or not pages:
            pages.append(page)
        for sizes_of_page in pages:
            units = query_units(sizes_of_page, consistent)
            self.data.emulator.admit("Query", [Charge(self.data.schema.name, self.data.schema.name, pk, "read", units)])

    def taken_down_among(self, item_ids: Sequence[str], status: str, consistent: bool = False) -> frozenset[str]:
        """The adapter's BatchGetItem of the ids' markers: each key priced as a read of its item (or of nothing)."""
        found: set[str] = set()
        with self.data.lock:
            for item_id in dict.fromkeys(item_ids):
                key = marker_key(status, item_id)
                pk = key[PK]["S"]
                if self.data.read("BatchGetItem", f"{pk}\0{key[SK]['S']}", consistent, partition=pk) is not None:
                    found.add(item_id)
        return frozenset(found)

    def hidden(self) -> frozenset[str]:
        return self.list_taken_down(HIDDEN).ids

    def denied(self, consistent: bool = False) -> frozenset[str]:
        return self.list_taken_down(DELETED, consistent=consistent).ids

    def mark_skeletons(self, item_ids: Sequence[str]) -> int:
        """The adapter's consistent BatchGetItem of the markers, then a PutItem per missing one."""
        markers = sorted({skeleton_marker(item_id) for item_id in item_ids})
        missing = set(markers) - self.taken_down_among(markers, SKELETONS, consistent=True)
        with self.data.lock:
            for marker in sorted(missing):
                key = marker_key(SKELETONS, marker)
                self._store(key[PK]["S"], key[SK]["S"], dict(key), "PutItem")
        return len(missing)

    def migrate_takedown_sets(self) -> int:
        """The adapter's migration: each old set's ids to markers (if the record still has the status), then the
        emptied set's item deleted."""
        moved = 0
        with self.data.lock:
            for status in (HIDDEN, DELETED):
                for partition in range(TAKEDOWN_PARTITIONS):
                    pk = partition_pk(status, partition)
                    item = self.data.read("GetItem", f"{pk}\0{SET_SK}", consistent=True, partition=pk)
                    for item_id in old_set_ids(item or {}):
                        record = self.data.items.get(item_record_pk(item_id)) or {}
                        if record.get(ITEM_STATUS, {}).get("S") == status:
                            self._apply({"Put": {"Item": marker_key(status, item_id)}})
                            moved += 1
                        self._apply(
                            {
                                "Update": {
                                    "Key": {PK: {"S": pk}, SK: {"S": SET_SK}},
                                    "ExpressionAttributeValues": {":ids": {"SS": [item_id]}},
                                }
                            }
                        )
                    if item is not None:
                        self._store(pk, SET_SK, None)
        return moved

    def audit_rows(self, item_id: str) -> list[Item]:
        """The item's audit rows in the order they were written (tests read who hid it and why)."""
        prefix = f"audit\0{item_record_pk(item_id)}\0"
        with self.data.lock:
            return [item for key, item in self.data.items.items() if key.startswith(prefix)]

    def get_many(self, item_ids: Sequence[str]) -> dict[str, ItemRecord]:
        """The adapter's BatchGetItem: each key priced as an eventually consistent read."""
        found: dict[str, ItemRecord] = {}
        with self.data.lock:
            for item_id in dict.fromkeys(item_ids):
                item = self.data.read("BatchGetItem", item_record_pk(item_id), consistent=False)
                if item is not None and ITEM_META in item:  # a status-only record (hidden, never put) was never put
                    found[item_id] = item_record(item)
        return found

    def statuses(self, item_ids: Sequence[str]) -> dict[str, str]:
        """The adapter's BatchGetItem of the records' status: each key priced as an eventually consistent read."""
        found: dict[str, str] = {}
        with self.data.lock:
            for item_id in dict.fromkeys(item_ids):
                item = self.data.read("BatchGetItem", item_record_pk(item_id), consistent=False)
                if item is not None and ITEM_STATUS in item:
                    found[item_id] = item[ITEM_STATUS]["S"]
        return found

    def newest(self, shard: str, low: str, high: str, limit: int) -> ShardPage:
        """The adapter's by-created Query: the shard's keys in [low, high], newest first, ``limit`` of them."""
        index = self.data.schema.index(BY_CREATED_INDEX)
        with self.data.lock:
            inside = sorted(
                (
                    item
                    for item in self.data.items.values()
                    if item.get(CREATED_SHARD, {}).get("S") == shard and low <= item[CREATED_KEY]["S"] <= high
                ),
                key=lambda item: item[CREATED_KEY]["S"],
                reverse=True,
            )
            page = inside[:limit]
            units = query_units([item_size(item) for item in page], consistent=False)
            charge = Charge(self.data.schema.name, self.data.schema.resource(index), shard, "read", units)
            self.data.emulator.admit("Query", [charge])
        return ShardPage([item_record(item) for item in page], more=len(inside) > limit)


# The type checker holds both implementations of each port to it: a method missing or typed differently in either
# fails `make lint` (the behaviour is held to DynamoDB's by tests/contract).
IMPLEMENTATIONS: tuple[
    tuple[type[ports.RetrySafeViewCounters], ...],
    tuple[type[ports.AllowanceCounters], ...],
    tuple[type[ports.CounterImports], ...],
    tuple[type[ports.CounterReads], ...],
    tuple[type[ports.Board], ...],
    tuple[type[ports.ShardMetadataStore], ...],
    tuple[type[ports.ItemCatalog], ...],
] = (
    (MemoryViewStore, ViewStore),
    (MemoryViewStore, ViewStore),
    (MemoryViewStore, ViewStore),
    (MemoryViewStore, ViewStore),
    (MemoryBoardStore, BoardStore),
    (MemoryShardMetadataStore, ShardMetadataStore),
    (MemoryItemStore, ItemStore),
)
