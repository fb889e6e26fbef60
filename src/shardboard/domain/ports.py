"""What the domain needs from the outside world, as small Protocols, and the values that cross that boundary.

Adapters implement these for DynamoDB (shardboard.adapters), the tools in memory (shardboard_tools.capacity.memory),
and tests/contract runs one suite of cases against both. The domain imports neither boto3 nor botocore: errors
arrive here as domain outcomes (``Throttled``, a refused ``MoveResult``, a False).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple, Protocol

from shardboard.domain.aggregating.batch import ShardMove
from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.items.records import ItemRecord, ShardPage
from shardboard.domain.periods import kind_of
from shardboard.domain.publishing.events import BoardEvent
from shardboard.domain.publishing.head import Head, Row, ShardRow
from shardboard.domain.writing.dedupe import Seen, SeenOutcome
from shardboard.domain.writing.idempotency import KeyedOutcome, KeyedRequest, OnceOutcome, OnceWrite

# A resume token: the key where an index read stopped (each key attribute's typed value), handed back as is to read
# on from there. The domain never looks inside.
ResumeToken = Mapping[str, Mapping[str, str]]


class IndexRow(NamedTuple):
    """One entry of a period index: the item, what the index sorts it by (the bucket of its count) and ``ref``, the
    stored item it is (an aggregate or a past entry) to read its count from."""

    item_id: str
    sort: int
    ref: str


# An aggregate or past entry as a scan of the board table returns it: attribute name -> typed value (type -> text).
StoredItem = Mapping[str, Mapping[str, str]]
# Where an index key of a resharded board sits: (item key, key attribute, index key, item id).
IndexKeyAt = tuple[str, str, str, str]


@dataclass(frozen=True)
class TakedownListing:
    """The ids a listing of one status found, whether that is all of them (False: more exist than it read), and the
    bytes a listing of all of them reads (exact when complete, else estimated from the share of each partition read;
    None: unknown)."""

    ids: frozenset[str]
    complete: bool
    size: int | None = 0


@dataclass(frozen=True)
class Allowance:
    """One client's allowance in one window: ``views`` more views are asked of at most ``limit``."""

    kind: str  # IP or VIEWER
    client: str
    window: int
    limit: int
    views: int
    expires_at: int
    retry_after: int  # seconds until the window ends, when a refused client may try again


class ThrottleScope(Enum):
    """Which limit refused a write. Only a partition limit is helped by more shards."""

    PARTITION = "partition"
    TABLE = "table"


class Throttled(Exception):
    """A write was refused by a capacity limit (after the client's own retries) and changed nothing."""

    def __init__(self, scope: ThrottleScope) -> None:
        super().__init__(f"throttled at the {scope.value} limit")
        self.scope = scope


@dataclass(frozen=True)
class AggregateState:
    """What an aggregate (or a past period's entry) holds.

    ``applied``: per write shard, the last base value applied for the anchor bucket ``bucket``; ``views``: all-time
    views; ``counts``: per period kind, views in the current period of that kind (the one containing ``bucket``);
    ``keyed``: the kinds whose index key the item carries (``"all"`` is the all-time index); ``buckets``: per kind,
    the bucket of the count its index sorts it by (an index write only when it rises; docs/coarse-index.md).
    """

    applied: dict[int, int]
    views: int
    bucket: str | None = None
    counts: Mapping[str, int] = field(default_factory=dict)
    keyed: frozenset[str] = frozenset()
    buckets: Mapping[str, int] = field(default_factory=dict, compare=False)  # index bookkeeping, not the counts

    def count(self, kind: str) -> int:
        return kind_of(kind).pick(all_time=self.views, period=self.counts.get(kind, 0))

    @property
    def in_index(self) -> bool:
        """Carries all time's index key."""
        return "all" in self.keyed


@dataclass(frozen=True)
class MoveResult:
    """Outcome of one compare-and-set on an aggregate: the state after it, or the state that refused it."""

    applied: bool
    state: AggregateState | None  # None only when a refused write did not return the item


class PeriodKey(NamedTuple):
    """One leaderboard: a board and one of its periods, e.g. ``("cats", "week", "2026-W48")`` or all time."""

    board: str
    kind: str
    bucket: str


@dataclass(frozen=True)
class PastEntry:
    """A past period's count of one item, as copied from its aggregate when the aggregate moved on."""

    period: PeriodKey
    item_id: str
    count: int
    applied: dict[int, int] | None  # only for an anchor bucket: its per-shard applied values travel with it
    index_key: str | None  # the GSI key when the count can reach that period's top N
    source_views: int  # the aggregate's all-time views when copied: a later copy carries more
    expires_at: int | None


@dataclass(frozen=True)
class LateMove:
    """Views of an anchor bucket older than the aggregate's: its entry moves, and so, in one transaction, do the
    aggregate's all-time count and its coarser periods (``aggregate_kinds``) or their past entries (``past``)."""

    board: str
    item_id: str
    bucket: str
    moves: Sequence[ShardMove]
    anchor_kind: str
    aggregate_bucket: str  # the aggregate's anchor bucket the transaction is conditioned on
    aggregate_kinds: Sequence[str]
    past: Sequence[PeriodKey]
    joins: Mapping[PeriodKey, str]  # index keys set (if absent) on entries whose lower bound reaches the threshold
    expires_at: Mapping[PeriodKey, int | None]
    weights: Mapping[str, int] = field(default_factory=dict)  # per kind, what one view adds when not 1 (trending)
    join_buckets: Mapping[PeriodKey, int] = field(default_factory=dict)  # with ``joins``: their counts' buckets

    def added(self, kind: str, views: int) -> int:
        """What ``views`` views add to the ``kind`` count of the aggregate or of a past entry."""
        return views * self.weights.get(kind, 1)


@dataclass(frozen=True)
class LateResult:
    applied: bool
    entry: AggregateState | None = None  # the entry's state when its compare-and-set refused the move
    aggregate_moved: bool = False  # the aggregate left ``aggregate_bucket`` meanwhile: recompute and retry


@dataclass(frozen=True)
class PeriodStatus:
    """A period item: its published threshold and when its counts last changed and its snapshot was refreshed."""

    period: PeriodKey
    threshold: int
    changed_at: int
    refreshed_at: int
    changes: int = 0  # how many batches changed its counts: a refresh is marked only if none came during it


@dataclass(frozen=True)
class BoardState:
    """The threshold item: sparse-index threshold T, GSI layout S and, during a reshard, the previous S."""

    threshold: int
    shards: int | None  # None until the first reshard: the template's BoardShards holds
    previous_shards: int | None
    deep_threshold: int = 0  # T_D of the all-time deep tier (docs/proposals/deep-tier.md); 0 until a deep gather
    # The period's change count (PeriodStatus.changes): equal on two reads, its counts did not change in between.
    changes: int = field(default=0, compare=False)
    # The head's refresh record (epoch seconds, 0: none): its last refresh, since when counts wait for one (0: none
    # wait), and the refreshes that failed in a row since ``failing_since`` (`shardboard verify`, the alarm).
    refreshed_at: int = field(default=0, compare=False)
    dirty_since: int = field(default=0, compare=False)
    failures: int = field(default=0, compare=False)
    failing_since: int = field(default=0, compare=False)

    def layouts(self, default_shards: int) -> list[int]:
        """Board shard counts to read, oldest first (two while a reshard is moving items)."""
        current = self.shards or default_shards
        return [self.previous_shards, current] if self.previous_shards else [current]


@dataclass(frozen=True)
class ShardMetadata:
    """The shard metadata item (docs/dynamic-sharding.md) for one item that needed more than the default."""

    item_id: str
    number_of_shards: int
    last_updated: int  # epoch seconds of the last change (the optimistic lock and the cooldown's start)
    max_shards: int  # the most shards the item ever had: readers of all shards read this many
    history: frozenset[str] = frozenset()  # "epoch:count"
    # The shrink review's bookkeeping: views and time at the last review, and since when traffic has been low.
    reviewed_views: int = 0
    reviewed_at: int = 0
    quiet_since: int | None = None

    def history_counts(self) -> list[tuple[int, int]]:
        """(epoch, count) pairs in time order."""
        return sorted(tuple(int(part) for part in entry.split(":", 1)) for entry in self.history)  # type: ignore[misc]


class ViewCounters(Protocol):
    """The base table: one item per (item, write shard, anchor bucket) with a counter per board."""

    def add_view(
        self, item_id: str, shard: int, count: int = 1, bucket: str | None = None, boards: Sequence[str] = ()
    ) -> float:
        """Add ``count`` views to one write shard's counters in one write (``views`` and one per category board) in
        anchor bucket ``bucket`` (None: the current one); returns its write units, or raises Throttled."""
        ...


class SeenViewCounters(ViewCounters, Protocol):
    """The base table with dedupe markers (docs/honest-counts.md): a viewed view counts once per dedupe window."""

    def add_seen_view(
        self, item_id: str, shard: int, seen: Seen, bucket: str | None = None, boards: Sequence[str] = ()
    ) -> SeenOutcome:
        """Add one view (as ``add_view``) and the marker of ``seen`` in one transaction unless the marker exists;
        raises Throttled (nothing written)."""
        ...


class DailyKeys(Protocol):
    """The keys anonymous viewer ids are hashed under, one per UTC day, kept apart from the views and deleted (TTL)
    after their day (domain/writing/visitors.py)."""

    def daily_key(self, day: str, candidate: bytes, expires_at: int) -> bytes:
        """``day``'s key: the one stored, or ``candidate`` stored now with its expiry (the first caller wins)."""
        ...


class AllowanceCounters(Protocol):
    """Rate-limit allowances (docs/honest-counts.md "Rate limits"): one counter per (client, window) of the views
    table, written by the views-table adapter and mirrored in memory."""

    def take_allowance(self, allowance: Allowance) -> bool:
        """Add ``allowance.views`` to its counter unless that would pass
        ``allowance.limit``; False: refused, nothing written. Raises Throttled (nothing written)."""
        ...

    def return_allowance(self, allowance: Allowance) -> None:
        """Give back views taken by ``take_allowance`` whose view was not written. Raises Throttled."""
        ...


class AggregateWrites(Protocol):
    """The aggregator's compare-and-set on an item's aggregate (its current periods) and its past periods' entries."""

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
        """Advance ``applied_k`` (anchor bucket ``bucket``, which must be the aggregate's) and add the difference to
        all-time views and each kind's count, all or nothing; ``joins``: index keys to set if absent, per kind (all
        time too), with ``buckets`` (the buckets of their counts) set if absent; ``weights``: per kind, what one view
        adds to its count when not 1 (a trending score)."""
        ...

    def roll(
        self, board: str, item_id: str, old: AggregateState, new: AggregateState, keys: Mapping[str, str | None]
    ) -> bool:
        """Move the aggregate to a newer anchor bucket: replace its state if it is still ``old``; ``keys`` sets (or
        with None removes) the index key of each kind whose period changed."""
        ...

    def archive(self, entry: PastEntry) -> None:
        """Keep a past period's count (unless a copy from a later state is stored already)."""
        ...

    def move_late(self, late: LateMove) -> LateResult:
        """Apply an older anchor bucket's views to its entry, the aggregate and past entries, all or nothing."""
        ...

    def add_history(self, board: str, item_id: str, seen: AggregateState, adds: Mapping[str, int]) -> bool:
        """Add ``adds`` (per kind; ``"all"`` is all-time views) to an aggregate if it is still as ``seen`` (same
        anchor bucket and all-time views); False otherwise. ``rebuild`` gives a recreated aggregate back the views
        of its surviving past entries."""
        ...


class AggregateReads(Protocol):
    """An item's counts as the aggregates and past entries hold them."""

    def state(self, board: str, item_id: str) -> AggregateState:
        """An aggregate's state, strongly consistent (empty when it does not exist)."""
        ...

    def entry_state(self, period: PeriodKey, item_id: str) -> AggregateState:
        """A past entry's state, strongly consistent (empty when there is none)."""
        ...

    def states(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], AggregateState]:
        """The aggregates of several (board, item id) pairs, eventually consistent: a hint for planning writes,
        each of which stays conditioned. Pairs without an aggregate are left out."""
        ...

    def aggregate_views(self, item_id: str, board: str = GLOBAL_BOARD) -> int | None:
        """An item's views on a board all time (eventually consistent), or None when it has none."""
        ...


class Aggregates(AggregateWrites, AggregateReads, Protocol):
    """Aggregates and past entries, written by compare-and-set and read back: what the aggregator and a repair of
    the board table (``rebuild``, ``redrive``) need."""


class Erasure(Protocol):
    """Removing an item's counts from a board: a delete's sweep, and the loss a repair is tested against."""

    def erase(self, board: str, item_id: str, periods: Sequence[PeriodKey]) -> int:
        """Delete the item's past entries of ``periods`` (all time has none) and then its aggregate on ``board``, with
        their index keys; absent ones are skipped. Returns how many were deleted. The aggregate goes last, so a
        sweep cut short still finds the board the next time (a deleted item's ``state`` is what names its boards)."""
        ...

    def delete_aggregate(self, item_id: str, board: str = GLOBAL_BOARD) -> None:
        """Remove one aggregate and nothing else (chaos runs and tests lose the board table so; ``rebuild`` restores
        it)."""
        ...


class BoardIndex(Protocol):
    """The sparse leaderboard index: each period kind's S board shards (all time's too), best bucket of the count
    first. An item joins by carrying a key; a read resumes where the last one stopped."""

    def join_index(
        self, board: str, item_id: str, keys: Mapping[str, str], buckets: Mapping[str, int] | None = None
    ) -> bool:
        """Key an existing aggregate into the index of each kind in ``keys`` (kind -> key) and set the buckets of
        ``buckets`` (kind -> bucket of its count), in one write; a kind it is keyed in already keeps its key. Refused
        (False) if it has no aggregate, if it is keyed in every one of ``keys`` already and ``buckets`` is empty, or if
        a kind it is keyed in holds a bucket not lower (a stale writer never moves a bucket back)."""
        ...

    def join_entry(self, period: PeriodKey, item_id: str, board_shard: str, bucket: int | None = None) -> bool:
        """Key an existing past entry into its kind's index, or raise its bucket; False if there is none, or it is
        keyed already and its bucket is not lower than ``bucket`` (None: key it only)."""
        ...

    def query_shard(
        self, kind: str, board_shard: str, limit: int, start: ResumeToken | None
    ) -> tuple[list[IndexRow], ResumeToken | None]:
        """Best ``limit`` rows of one board shard of a kind's index after ``start``, and the resume token (None: the
        shard is read to its end), sorted by the bucket of the count."""
        ...

    def read_counts(self, kind: str, refs: Sequence[str]) -> dict[str, int]:
        """The ``kind`` counts of the stored items ``refs`` names (``IndexRow.ref``) that still exist: one batched,
        eventually consistent read."""
        ...

    def query_views_index(
        self, board_shard: str, limit: int, start: ResumeToken | None
    ) -> tuple[list[IndexRow], ResumeToken | None]:
        """Best ``limit`` rows of one shard of all time's index as releases before the coarse index kept it (sorted
        by the views, ``sort`` is the views): read until `shardboard migrate` has moved its items, never written."""
        ...


class Thresholds(Protocol):
    """Each period's published sparse-index threshold T (only ever raised, but by a refill), and for all time the
    board's layout S and the deep tier's T_D."""

    def get_board_state(self, board: str, consistent: bool = False) -> BoardState:
        """All-time threshold and layout, in one read."""
        ...

    def get_threshold(self, board: str) -> int:
        """The published all-time threshold T (0 before the first snapshot)."""
        ...

    def thresholds(self, periods: Sequence[PeriodKey], consistent: bool = False) -> dict[PeriodKey, BoardState]:
        """Published thresholds (and for all time the layout) of several periods in one round trip; a period with
        none published is left out."""
        ...

    def raise_threshold(self, period: PeriodKey, threshold: int) -> bool:
        """Publish T if it is higher than the published one; False otherwise."""
        ...

    def lower_threshold(self, period: PeriodKey, threshold: int) -> bool:
        """Lower a published T (only `shardboard refill` does, after keying what the lower T admits); False when
        none is published or it is not higher."""
        ...

    def raise_deep_threshold(self, board: str, threshold: int) -> bool:
        """Publish the all-time T_D if it is higher than the published one; False otherwise."""
        ...


class PeriodLedger(Protocol):
    """Which periods exist and which changed since their snapshot was refreshed: what the snapshot job works from."""

    def mark_changed(self, periods: Sequence[PeriodKey], now: int, expires_at: Mapping[PeriodKey, int | None]) -> None:
        """Note that these periods' counts changed at ``now`` (the snapshot job refreshes them)."""
        ...

    def changed_periods(self) -> list[PeriodStatus]:
        """Every period whose counts changed after its last refresh."""
        ...

    def periods(self) -> list[PeriodStatus]:
        """Every period item (boards and their periods)."""
        ...

    def mark_refreshed(self, period: PeriodKey, changes: int, now: int) -> None:
        """The snapshot includes every change counted up to ``changes`` (unless another batch counted one since)."""
        ...

    def mark_failed(self, period: PeriodKey, now: int) -> int:
        """A refresh of the period failed at ``now``: how many have failed in a row since its last refresh."""
        ...


class Snapshots(Protocol):
    """Each period's head: the one item a frontend reads, replaced only over the version it was read at."""

    def get_snapshot(self, period: PeriodKey | str, consistent: bool = False) -> Head | None:
        """The snapshot, or None before the first one."""
        ...

    def put_snapshot(self, snapshot: Head, previous_version: int | None) -> bool:
        """Write the snapshot if the stored one is still ``previous_version`` (None: there is none yet)."""
        ...


class RankCheckpoints(Protocol):
    """Each period's ranks as its first head of an hour held them: what a head's ``day_before_rank`` reads a day
    later (domain/publishing/day_before.py)."""

    def put_ranks_checkpoint(self, period: PeriodKey, hour: str, ranks: Mapping[str, int], expires_at: int) -> None:
        """Write the checkpoint of ``period`` for ``hour`` (an hour bucket id): ``ranks`` by id, expiring by TTL."""
        ...

    def get_ranks_checkpoint(self, period: PeriodKey, hour: str) -> dict[str, int] | None:
        """The checkpoint of ``period`` for ``hour``, or None when none was written (or it expired)."""
        ...


class RankedVersions(Protocol):
    """Ranked versions: a period's exact top D as stored pages and rank shards, named by the head that points at
    them."""

    def put_rank_parts(self, period: PeriodKey, parts: RankParts, expires_at: int | None) -> None:
        """Write a ranked version's pages and rank shards (before the head that names it)."""
        ...

    def delete_rank_parts(self, period: PeriodKey, rv: str, pages: int, shards: int) -> None:
        """Delete a ranked version's pages ``0..pages-1`` and rank shards ``0..shards-1`` (absent ones are fine)."""
        ...

    def get_rank_shards(self, period: PeriodKey, rv: str, shards: Sequence[int]) -> dict[int, RankShard]:
        """Rank shards of one ranked version (one batched read); a missing shard is absent from the answer."""
        ...

    def get_rank_pages(self, period: PeriodKey, rv: str, pages: Sequence[int]) -> dict[int, list[Row]]:
        """Stored pages (rows of id and views, board order) of one ranked version (one batched read); a missing page
        is absent from the answer."""
        ...


class BoardScans(Protocol):
    """The whole board table read at once: what `verify`, the refill and the tools' checks count from."""

    def scan_counts(self, segments: int = 4, deadline: float | None = None) -> Sequence[StoredItem]:
        """Every aggregate and past entry, as stored (``board_counts.stored_counts`` reads them); raises
        ``ScanDeadline`` when still reading at ``deadline`` (``time.monotonic()``)."""
        ...

    def scan_aggregates(self, board: str = GLOBAL_BOARD, segments: int = 4) -> dict[str, tuple[int, bool]]:
        """Every aggregate of one board: item id -> (all-time views, carries the all-time index key)."""
        ...


class Resharding(Protocol):
    """Moving a board's index from S to S' board shards (`shardboard reshard`): the layout's switch and the rekey
    of every index key still in the old layout."""

    def begin_reshard(self, board: str, current: int, target: int, current_is_default: bool) -> bool:
        """Switch the layout to ``target``, remembering ``current`` until the move is done; False if the layout is
        not ``current`` (``current_is_default``: no layout stored yet counts as ``current``) or a move is under
        way."""
        ...

    def finish_reshard(self, board: str, previous: int, target: int) -> bool:
        """End the move: snapshots read one layout again. False if the layout is not that move."""
        ...

    def scan_layout(self, board: str, shards: int) -> list[IndexKeyAt]:
        """Every index key of ``board`` (aggregates and past entries, every kind and the deep tier) still in layout
        ``shards``, strongly consistent."""
        ...

    def rekey(self, pk: str, attribute: str, old_key: str, new_key: str) -> bool:
        """Move one index key (``pk`` and ``attribute`` as ``scan_layout`` named them) to ``new_key`` if it is still
        ``old_key``; False if it had moved already."""
        ...


class Board(
    Aggregates,
    Erasure,
    BoardIndex,
    Thresholds,
    PeriodLedger,
    Snapshots,
    RankCheckpoints,
    RankedVersions,
    BoardScans,
    Resharding,
    Protocol,
):
    """The whole board table, every role at once: for the composition root and the tools that hand it on, never
    a use case's parameter (those name the roles they use)."""


class RankedHeads(Snapshots, RankedVersions, Protocol):
    """A head and the ranked version it names: what a deep page is read from."""


class RankReads(RankedVersions, AggregateReads, Protocol):
    """Rank shards and, for an id ranked in none, its current count: what a rank lookup reads."""


# A rank shard: item id -> [position, tie start position (its competition rank), views] in one ranked version.
RankShard = dict[str, ShardRow]


@dataclass(frozen=True)
class RankParts:
    """The stored items of one ranked version: pages of (id, views) in board order and rank shards by id hash."""

    rv: str
    pages: list[list[Row]]
    shards: dict[int, RankShard]


class EventSink(Protocol):
    """Where the snapshot job announces what changed on the boards (docs/events.md): an EventBridge bus, a file."""

    def publish(self, events: Sequence[BoardEvent]) -> None:
        """Deliver every event, in order, at least once; raises when some could not be delivered (the caller
        publishes them again later, under the same ids)."""
        ...


class ShardMetadataStore(Protocol):
    """What the writers and the review need of the shard metadata table."""

    def get(self, item_id: str, consistent: bool = False) -> ShardMetadata | None:
        """The item's metadata, or None while it has the default shard count."""
        ...

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
        """Set the count if nobody changed it since ``expected`` and the cooldown has passed; None if refused."""
        ...

    def note_review(self, metadata: ShardMetadata, views: int, now: int, quiet_since: int | None) -> None:
        """Remember what the shrink review measured (never touches the count or the lock)."""
        ...

    def scan(self) -> list[ShardMetadata]:
        """Every item that ever grew."""
        ...


class ItemCatalog(Protocol):
    """The items table (issue 13): one record per item id, created once, replaced by later puts."""

    def put(self, item_id: str, meta: str, now: str) -> ItemRecord:
        """Create or replace the item's metadata (``meta``: checked compact JSON; ``now``: ISO ms). ``created_at``
        is set by the first put only; ``rev`` counts the puts."""
        ...

    def get(self, item_id: str, consistent: bool = False) -> ItemRecord | None:
        """The item, or None if it was never put."""
        ...

    def get_many(self, item_ids: Sequence[str]) -> dict[str, ItemRecord]:
        """The records of those ids that were put (eventually consistent, BatchGetItem): absent ids are missing."""
        ...

    def statuses(self, item_ids: Sequence[str]) -> dict[str, str]:
        """The takedown status (HIDDEN or DELETED) of those ids that have one, put or not (an item hidden without a
        put has a status-only record that ``get`` does not return): one eventually consistent BatchGetItem of their
        records per 100 ids; visible and unknown ids are missing."""
        ...

    def newest(self, shard: str, low: str, high: str, limit: int) -> ShardPage:
        """Up to ``limit`` records of one by-created shard with ``low <= created key <= high``, newest first
        (eventually consistent, as every GSI read); ``more`` when the shard may hold older ones in the range."""
        ...

    def set_hidden(self, item_id: str, hidden: bool, by: str, reason: str, now: str) -> bool:
        """Hide (or unhide) the item: its status, an audit row and its hidden marker (put or deleted), in one
        transaction. False, with nothing written, when it is hidden (visible) already."""
        ...

    def set_deleted(self, item_id: str, by: str, reason: str, now: str) -> bool:
        """Delete the item: a tombstone status (its metadata kept for the audit), an audit row, its deny marker put and
        its hidden marker deleted, in one transaction. False, with nothing written, when it is deleted already (a
        repeated delete still sweeps the item's counts: that is what makes a delete resumable)."""
        ...

    def list_taken_down(self, status: str, limit: int | None = None, consistent: bool = False) -> TakedownListing:
        """The ids whose takedown status is ``status`` (``HIDDEN`` or ``DELETED``): one Query per partition (in
        parallel), every page when ``limit`` is None, else at most about ``limit`` markers in all (``complete`` False
        when a partition holds more). Ids in the String Sets of earlier releases are listed too."""
        ...

    def taken_down_among(self, item_ids: Sequence[str], status: str, consistent: bool = False) -> frozenset[str]:
        """Those of ``item_ids`` whose status is ``status``, by their markers (one BatchGetItem per 100 ids). Ids
        only an earlier release's String Set holds are not seen: ``list_taken_down`` lists those."""
        ...

    def hidden(self) -> frozenset[str]:
        """Every hidden id (every page of every partition: the tools' reads, not the functions')."""
        ...

    def denied(self, consistent: bool = False) -> frozenset[str]:
        """Every deleted id (as ``hidden``; ``consistent``: strongly consistent)."""
        ...

    def migrate_takedown_sets(self) -> int:
        """Move the ids of an earlier release's String Sets to markers, each in a transaction conditioned on the
        record's status (an id whose status changed meanwhile only leaves its set); returns how many moved."""
        ...

    def mark_skeletons(self, item_ids: Sequence[str]) -> int:
        """Put the skeleton marker (``lookalike.skeleton_marker``) of each of ``item_ids`` that has none: the deleted
        ids of a release before the markers, whose look-alikes are refused from then on. One consistent BatchGetItem
        per 100 markers, a PutItem per missing one; returns how many were put (a second run puts none)."""
        ...


class RetrySafeViewCounters(SeenViewCounters, Protocol):
    """The base table's writes that a retry after a lost response cannot count twice (docs/honest-counts.md,
    "Retried writes"): keyed requests (``POST /views`` with an Idempotency-Key) and a writer's numbered writes."""

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
        """Add ``count`` views (as ``add_view``) and the marker of ``keyed`` in one transaction unless the key is
        held: then nothing is written and the answer is the first request's (``replayed``), or
        ``IdempotencyKeyReused`` is raised when the key was used by another request. With ``seen`` the viewer's
        marker joins the transaction and a viewer seen already is answered ``DUPLICATE`` (the key remembers that
        answer too). Raises Throttled (nothing written)."""
        ...

    def claim_writer(self) -> int:
        """A writer number no other writer ever got (an atomic counter): the identity of a retry-safe writer."""
        ...

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
        """``add_view`` unless the counter item holds ``once.writer``'s sequence ``once.sequence`` or a later one:
        then nothing is added (an earlier attempt of this write landed). Raises Throttled (nothing written by this
        attempt)."""
        ...


# Outcomes of ``set_counters``: the counter was created; it holds this import already; another import holds it.
WRITTEN, PRESENT, TAKEN = "written", "present", "taken"


class CounterSet(NamedTuple):
    """What one ``set_counters`` did and the write units it consumed (a refused condition consumes some too)."""

    outcome: str  # WRITTEN, PRESENT or TAKEN
    units: float


class CounterImports(Protocol):
    """The base table as `shardboard import` writes it: counters created once, from nothing to their total."""

    def set_counters(
        self, item_id: str, shard: int, bucket: str, counts: Mapping[str, int], import_id: str
    ) -> CounterSet:
        """Create one counter holding the absolute ``counts`` (per board), tagged with ``import_id``, unless it
        exists: then it is PRESENT when the same import wrote it, TAKEN when another did. Raises Throttled."""
        ...


class CounterReads(Protocol):
    """The base table's counters read back: the truth `verify`, `rebuild` and the tests check the boards against."""

    def bucket(self, bucket: str | None = None) -> str:
        """``bucket``, or the current anchor bucket (the store's clock) where a view recorded now is counted."""
        ...

    def item_total(self, item_id: str, write_shards: int, bucket: str | None = None) -> int:
        """Exact global views of one item in one anchor bucket (None: the current one): the sum of its write shards'
        counters, strongly consistent."""
        ...

    def shard_counts(self, item_id: str, shards: Iterable[int], bucket: str | None = None) -> dict[int, int]:
        """Global views per write shard of ``item_id`` in one anchor bucket (None: the current one; strongly
        consistent); shards never written are left out."""
        ...

    def counters(self, item_id: str, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, int]]:
        """Every board's counter of ``item_id`` on each (anchor bucket, write shard) in ``keys`` (consistent)."""
        ...

    def scan_counters_all(self, segments: int = 4) -> list[tuple[str, str, int, str, int]]:
        """(item, anchor bucket, write shard, board, views) of every board counter, from one scan of the table."""
        ...

    def scan_totals(self, segments: int = 4) -> dict[str, int]:
        """Every item's exact all-time views on the global board."""
        ...
