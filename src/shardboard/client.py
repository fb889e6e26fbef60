"""The Python library: record views and read leaderboards from any Python application, without going through HTTP.

    from shardboard import Leaderboard, Recorder

    with Recorder(stack="shardboard") as recorder:       # boto3's default session, the stack's tables
        recorder.record("images/001.jpg")                # buffered; written within flush_interval
        recorder.record("images/002.jpg", count=3, boards=["cats"])
    for entry in Leaderboard(stack="shardboard").top(limit=10).items:
        print(entry.rank, entry.id, entry.views)

**Recording.** :meth:`Recorder.record` validates its input with the API's own rules (``POST /views``: a bad id,
count or board raises :class:`~shardboard.domain.validation.BadInput`, a ``ValueError``, and buffers nothing) and
adds the views to an in-memory buffer keyed by (item, anchor bucket of the time of the call, boards). A background
thread flushes the buffer every ``flush_interval`` seconds, and at once when it holds ``max_pending`` distinct keys:
each key becomes ONE counter write, ``ADD`` of its summed count on a random write shard of the item's current shard
count (dynamic sharding), through the write path of the API (``domain.recording.write_views``). The aggregator
applies absolute counter values exactly once, so one write of k views counts exactly like k writes of one view, and
a site pays one write per distinct (item, boards) per flush instead of one per view.

**Bounded memory.** The buffer holds at most ``max_pending`` distinct keys, counting the keys a flush is writing.
Views of a key already buffered always fit; a new key waits (``record`` blocks) while a flush makes room, and raises
:class:`BufferFull` when the last flush could not write enough to make room (DynamoDB unreachable or refusing): its
views are then not buffered and the caller decides.

**Failures.** The client retries throttled and failed requests with botocore's standard retry mode (exponential
backoff with jitter); with dynamic sharding on, a write still throttled at the partition level grows the item's shard
count and is retried with back-off, as the API does. A write that still fails keeps its views in the buffer for the
next flush (counted in :attr:`RecorderStats.failed_writes` and logged on the ``shardboard.client`` logger); a throttled
write wrote nothing, so retrying it cannot double count. A write whose *response* was lost (a read timeout, a reset
connection, a 500 after DynamoDB applied it) may have landed: botocore sends it again, and so does the next flush,
and a counter ``ADD`` carries no token, so such a write counts twice, as a client retrying ``POST /views`` after a
timeout would (tests/e2e/test_client_local.py shows it). A viewed view carries its token and counts once. Making the
plain write idempotent would need a condition on a per-writer token kept in every counter item, or a transaction at
twice the write units: neither fits a write meant to cost one unit. :meth:`Recorder.close` (also run at interpreter
exit through ``atexit``, and by the ``with`` block) flushes what is left; views it still cannot write are logged as
lost (:attr:`RecorderStats.lost_views`).

**What a kill can lose.** The buffer lives in the process: ``kill -9`` (or a crash, or an exit that skips ``atexit``
such as ``os._exit``) loses the views recorded since the last flush began, at most ``max_pending`` distinct keys
(about ``flush_interval`` seconds of views), plus the views a failing flush was keeping; killed during a flush, it
loses the keys that flush had not written yet, each key whole (one write per key: all of its views or none). It
cannot lose or double a completed flush: :meth:`flush` returns once DynamoDB acknowledged each of its writes (the
failed ones are in :attr:`FlushResult.failed_views`), a dead process re-sends nothing, and the aggregator applies
each counter's absolute values exactly once whatever the stream replays. tests/e2e/test_client_local.py kills a
recording process with SIGKILL between and during flushes and checks both.

**Configuration.** ``stack`` names the tables as ``shardboard --stack`` does (``<stack>-views``, ``<stack>-board``,
``<stack>-shards``), and the client reads the settings that stack published at its deploy (``WriteShards``,
``Periods``, ``TopN``...: one GetItem of the board table at construction, adapters/stack_config.py), so it keys its
writes as the stack's functions do. ``settings=Settings.for_stack("prod", write_shards=40)`` overrides them; a stack
deployed by an older version publishes nothing and gets the template's defaults with a warning. The writer needs
``dynamodb:UpdateItem`` on the views table, ``GetItem`` and ``UpdateItem`` on the shards table (dynamic sharding)
and ``GetItem`` on the board table (the settings); a reader ``GetItem`` on the board table. With the stack's
``RequireItems``, ``record`` raises ``UnknownItem`` for an id never created with ``PUT /item`` and buffers nothing:
one items-table GetItem per id, positive answers kept 10 s (the writer then needs ``GetItem`` on the items table).

**Viewers.** ``record(item, viewer="u-42")`` (issue 14 item 5, docs/honest-counts.md) counts the view once per
viewer, item and dedupe window (``Settings.dedupe_window_seconds``: the stack's ``DedupeWindow``). Such a view is
never coalesced: it is its own write, one TransactWriteItems that puts the viewer's marker and adds 1 to the counter,
or writes nothing when the marker exists (a duplicate: :attr:`RecorderStats.duplicate_views`). Its window is the
one of the ``record`` call, and it carries a token made at that call: a write retried by a later flush after a lost
response finds its own marker and is counted once. Needs ``dynamodb:PutItem`` (and ``GetItem``) on the views table.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import boto3

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.dynamodb import client_config, region
from shardboard.adapters.stack_config import read_published
from shardboard.domain import items, validation
from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.dedupe import Seen
from shardboard.domain.dynamic_sharding import ShardRouter
from shardboard.domain.periods import ALL, Period, bucket_of, parse_time, period_from_bucket
from shardboard.domain.ports import PeriodKey, SeenViewCounters
from shardboard.domain.rank_lookup import lookup_ranks
from shardboard.domain.rank_pages import DEFAULT_AROUND_K, MAX_AROUND_K, Around, NotRanked, around
from shardboard.domain.ranked import MAX_RANK_IDS, RankAnswer
from shardboard.domain.ranking import RankedEntry
from shardboard.domain.recording import Where, admitted, record_seen_view, write_views
from shardboard.domain.snapshot import leaderboard_json, not_found, period_at
from shardboard.handlers.wiring import Container
from shardboard.settings import DEFAULT_STACK, Settings

BadInput = validation.BadInput
UnknownItem = items.UnknownItem
log = logging.getLogger("shardboard.client")

# Concurrent counter writes per flush: a flush of 10,000 keys is 10,000 small writes.
DEFAULT_WORKERS = 16

# (item id, anchor bucket, category boards sorted, the viewed view or None): the views of one key are one counter
# write; a viewed view's key is its own (its Seen holds a token made per call), so it is never coalesced.
_Key = tuple[str, str, tuple[str, ...], Seen | None]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Stores:
    """Where a recorder writes: the base table (counters and viewers' markers) and the shard router of dynamic
    sharding (None: every item has ``Settings.write_shards`` shards)."""

    views: SeenViewCounters
    router: ShardRouter | None = None
    # RequireItems (``Settings.require_items``): whether an id was created; None when the stack does not require it.
    admit: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class _Duplicate:
    """A viewed view refused: its viewer was seen already in the window (nothing written)."""

    units: float


# The library's public names (shardboard/__init__.py serves them): some are the domain's own, re-exported.
__all__ = [
    "Around",
    "BadInput",
    "BufferFull",
    "FlushResult",
    "Leaderboard",
    "NoSnapshot",
    "NotRanked",
    "RankAnswer",
    "Recorder",
    "RecorderClosed",
    "RecorderStats",
    "Standings",
    "UnknownItem",
]


class RecorderClosed(RuntimeError):
    """``record`` after ``close``: the views were not recorded."""


class BufferFull(RuntimeError):
    """The buffer holds ``max_pending`` distinct keys and the last flush could not write enough of them to make room
    (DynamoDB throttling or unreachable): these views were not buffered."""


class NoSnapshot(LookupError):
    """The period has no snapshot (HTTP 404): no views yet, the snapshot job has not run since, or it expired."""

    def __init__(self, period: PeriodKey) -> None:
        super().__init__(not_found(period))
        self.period = period


@dataclass(frozen=True)
class FlushResult:
    """What one flush wrote, and what it kept for the next one."""

    views: int = 0  # views written
    writes: int = 0  # counter writes that landed (one per coalesced key)
    write_units: float = 0.0
    failed_views: int = 0  # views whose write failed: back in the buffer
    failed_writes: int = 0
    duplicate_views: int = 0  # viewed views refused as duplicates (nothing written)


@dataclass(frozen=True)
class RecorderStats:
    """Counts since the recorder was made."""

    recorded_views: int = 0  # accepted by record()
    written_views: int = 0
    writes: int = 0
    write_units: float = 0.0
    failed_writes: int = 0  # writes that failed after every retry (their views were kept for the next flush)
    flushes: int = 0
    pending_views: int = 0  # in the buffer now (including a running flush's)
    lost_views: int = 0  # still unwritten when the recorder closed
    duplicate_views: int = 0  # viewed views refused: that viewer's view of the item counted already in its window


def _dynamodb(session: Any, workers: int = DEFAULT_WORKERS) -> Any:
    """A DynamoDB client from ``session`` (boto3's default session when None): standard retry mode, a pool for the
    flush workers; ``AWS_ENDPOINT_URL_DYNAMODB`` points it at DynamoDB Local, as everywhere else."""
    if session is None:
        session = boto3.DEFAULT_SESSION or boto3.Session()
    return session.client(
        "dynamodb", region_name=session.region_name or region(), config=client_config(max(workers, 10))
    )


def _stack_settings(client: Any, stack: str) -> Settings:
    """The settings ``stack`` published at its deploy (or `shardboard init`): one GetItem, read once per client. A
    stack that published none (deployed by an older version), or a caller that may not read them, gets the
    template's defaults and a one-line warning, as before stacks described themselves."""
    defaults = Settings.for_stack(stack)
    lookup = read_published(client, defaults.board_table)
    if lookup.published is None:
        log.warning(
            "stack %s: %s; using the template's defaults (settings=Settings.for_stack(...) gives others)",
            stack,
            lookup.why_not,
        )
        return defaults
    return defaults.with_published(lookup.published.variables)


class Recorder:
    """Record views from a Python application: buffered, coalesced per key, flushed in the background.

    ``record`` is thread-safe; one recorder per process serves every thread. See the module's documentation for
    what a flush writes, what a failure keeps and what a kill can lose.
    """

    def __init__(
        self,
        session: Any = None,
        stack: str = DEFAULT_STACK,
        *,
        flush_interval: float | None = 1.0,
        max_pending: int = 10_000,
        settings: Settings | None = None,
        workers: int = DEFAULT_WORKERS,
        clock: Callable[[], datetime] = _utc_now,
        stores: Stores | None = None,
    ) -> None:
        """``session``: a boto3 Session (None: boto3's default session). ``stack``: names the tables.
        ``flush_interval``: seconds between background flushes (None: no timed flush; the buffer is flushed when
        it holds ``max_pending`` keys, by ``flush()`` and by ``close()``: for an application, or a simulation,
        that keeps its own schedule). ``max_pending``: the most distinct (item, boards, bucket) keys held.
        ``settings``: settings to use instead of those the stack published (it names the tables itself;
        ``Settings.for_stack`` builds one). ``workers``: writes in parallel. ``clock``: the time a
        ``record`` call counts its views at (its period bucket, a viewer's dedupe window); the wall clock unless
        a simulation drives virtual time. ``stores``: where the writes go instead of the stack's tables through
        ``session`` (the benchmark's in-memory tables)."""
        if flush_interval is not None and not flush_interval > 0:
            raise ValueError(f"flush_interval must be > 0 seconds or None, got {flush_interval!r}")
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 1:
            raise ValueError(f"max_pending must be a whole number >= 1, got {max_pending!r}")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
        self.flush_interval = None if flush_interval is None else float(flush_interval)
        self.max_pending = max_pending
        self._clock = clock
        if stores is None:
            self.client: Any = _dynamodb(session, workers)
            self.settings = settings or _stack_settings(self.client, stack)
            # The collaborators the API function builds (the same stores, the same shard router), on this client.
            container = Container(self.settings, self.client)
            stores = Stores(container.views, container.router, container.admission)
        else:
            self.client = None
            self.settings = settings or Settings.for_stack(stack)
        self._views, self._router, self._admit = stores.views, stores.router, stores.admit
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # notified when a flush ends or the recorder closes
        self._pending: dict[_Key, int] = {}
        self._in_flight: dict[_Key, int] = {}
        self._stuck = False  # the last flush ended with the buffer still full
        self._closed = False
        self._stats = RecorderStats()
        self._flushing = threading.Lock()  # one flush at a time (the thread's, flush(), close())
        self._wake = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="shardboard-write")
        self._thread = threading.Thread(target=self._run, name="shardboard-recorder", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # -- recording
    def record(self, item_id: str, count: int = 1, boards: Iterable[str] = (), viewer: str | None = None) -> None:
        """Buffer ``count`` views of ``item_id`` on the global board and each of ``boards``, counted in the period
        of now. Bad input raises BadInput (a ValueError) and buffers nothing. Blocks while a flush makes room when
        the buffer is full; raises BufferFull when it cannot, RecorderClosed after close().

        ``viewer`` (1-128 printable characters; ``count`` must then be 1): the view counts once per viewer, item and
        dedupe window, in its own write (not coalesced); see the module's documentation.
        """
        item_id = validation.item_id(item_id)
        count = validation.view_count(count)
        who = validation.viewer(viewer)
        validation.viewed_count(count, who)
        names = validation.boards(tuple(boards) if isinstance(boards, set | frozenset) else boards)
        admitted(item_id, self._admit)  # RequireItems: an id never created raises UnknownItem, nothing buffered
        now = self._clock()
        seen = None if who is None else Seen.of(who, self.settings.dedupe_window_seconds, now.timestamp())
        key: _Key = (item_id, bucket_of(self.settings.anchor, now), tuple(sorted(names)), seen)
        with self._lock:
            while key not in self._pending and self._held() >= self.max_pending:
                if self._closed:
                    break
                if self._stuck:
                    raise BufferFull(
                        f"{self._held()} keys are waiting to be written (max_pending={self.max_pending}) and the"
                        f" last flush could not write them: {count} view(s) of {item_id!r} were not recorded"
                    )
                self._wake.set()
                self._room.wait()
            if self._closed:
                raise RecorderClosed(f"the recorder is closed: {count} view(s) of {item_id!r} were not recorded")
            self._pending[key] = self._pending.get(key, 0) + count
            self._stats = replace(self._stats, recorded_views=self._stats.recorded_views + count)
            if len(self._pending) >= self.max_pending:
                self._wake.set()  # the size threshold: flush now, not at the next tick

    def _held(self) -> int:
        """Distinct keys held: buffered plus being written (a key in both counts twice, which only errs low)."""
        return len(self._pending) + len(self._in_flight)

    # -- flushing
    def flush(self) -> FlushResult:
        """Write every buffered key now (one counter write each) and wait for the writes; waits for a running
        background flush first. Failed writes keep their views for the next flush and are logged."""
        with self._flushing:
            with self._lock:
                batch, self._pending = self._pending, {}
                self._in_flight = batch
                self._stuck = False
            outcomes = self._write_all(batch)
            failed = {key: batch[key] for key, outcome in outcomes.items() if isinstance(outcome, BaseException)}
            duplicates = sum(1 for outcome in outcomes.values() if isinstance(outcome, _Duplicate))
            units = sum(outcome for outcome in outcomes.values() if isinstance(outcome, float))
            units += sum(outcome.units for outcome in outcomes.values() if isinstance(outcome, _Duplicate))
            result = FlushResult(
                views=sum(batch.values()) - sum(failed.values()) - duplicates,
                writes=len(batch) - len(failed) - duplicates,
                write_units=units,
                failed_views=sum(failed.values()),
                failed_writes=len(failed),
                duplicate_views=duplicates,
            )
            with self._lock:
                for key, count in failed.items():
                    self._pending[key] = self._pending.get(key, 0) + count
                self._in_flight = {}
                self._stuck = len(self._pending) >= self.max_pending
                stats = self._stats
                self._stats = replace(
                    stats,
                    written_views=stats.written_views + result.views,
                    writes=stats.writes + result.writes,
                    write_units=stats.write_units + units,
                    failed_writes=stats.failed_writes + result.failed_writes,
                    flushes=stats.flushes + 1,
                    duplicate_views=stats.duplicate_views + duplicates,
                )
                self._room.notify_all()
        if failed:
            errors = [outcome for outcome in outcomes.values() if isinstance(outcome, BaseException)]
            log.warning(
                "shardboard: %d view(s) in %d write(s) not written (%s: %s); kept for the next flush",
                result.failed_views,
                result.failed_writes,
                type(errors[0]).__name__,
                str(errors[0])[:200],
            )
        return result

    def _write_all(self, batch: dict[_Key, int]) -> dict[_Key, float | _Duplicate | BaseException]:
        """Write every key, in parallel on the pool; at interpreter exit (no new threads) in this thread."""
        futures: dict[_Key, Future[float | _Duplicate | BaseException]] = {}
        try:
            for key, count in batch.items():
                futures[key] = self._pool.submit(self._write, key, count)
        except RuntimeError:  # the pool is shut down (interpreter exit, atexit): write the rest here
            pass
        return {
            key: futures[key].result() if key in futures else self._write(key, count) for key, count in batch.items()
        }

    def _write(self, key: _Key, count: int) -> float | _Duplicate | BaseException:
        """One coalesced key in one counter write (a viewed view: its transaction); the error instead of raising it
        (the flush keeps those views)."""
        item_id, bucket, boards, seen = key
        try:
            where = Where(bucket, boards)
            shards = self.settings.write_shards
            if seen is not None:
                done = record_seen_view(self._views, item_id, shards, seen, router=self._router, where=where)
                return _Duplicate(done.write_units) if done.duplicate else done.write_units
            return write_views(self._views, item_id, count, shards, router=self._router, where=where)
        except Exception as error:  # any failure keeps the views for the next flush, and is logged
            return error

    def _run(self) -> None:
        """The background thread: flush every flush_interval, or at once when woken (size threshold, close)."""
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            if self._closed:
                return
            try:
                self.flush()
            except Exception:  # a flush reports its write errors itself; never let the thread die of anything else
                log.exception("shardboard: background flush failed")

    def stats(self) -> RecorderStats:
        """Counts since the recorder was made (a consistent copy)."""
        with self._lock:
            held = sum(self._pending.values()) + sum(self._in_flight.values())
            return replace(self._stats, pending_views=held)

    # -- closing
    def close(self) -> None:
        """Stop the background thread and flush what is left (idempotent; also run at interpreter exit). Views a
        final flush cannot write are logged as lost."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._room.notify_all()  # record() calls waiting for room give up
        atexit.unregister(self.close)
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        result = self.flush()
        self._pool.shutdown(wait=True)
        if result.failed_views:
            with self._lock:
                lost = sum(self._pending.values())
                self._pending.clear()
                self._stats = replace(self._stats, lost_views=self._stats.lost_views + lost)
            log.error("shardboard: closed with %d view(s) the last flush could not write: they are lost", lost)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


# ----------------------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Standings:
    """A leaderboard as ``GET /leaderboard`` returns it: the board, the period, when the snapshot was taken and the
    entries best first (competition ranks: equal views share a rank, 1, 2, 2, 4)."""

    board: str
    period: Period  # kind "all" (start and end None), or a calendar period with its UTC bounds
    generated_at: datetime
    items: tuple[RankedEntry, ...]

    def rank_of(self, item_id: str) -> int | None:
        """``item_id``'s rank among these entries, or None when it is not one of them."""
        return next((entry.rank for entry in self.items if entry.id == item_id), None)


class Leaderboard:
    """Read a stack's leaderboards from their snapshot items: one GetItem per call, what the HTTP API reads."""

    def __init__(self, session: Any = None, stack: str = DEFAULT_STACK, *, settings: Settings | None = None) -> None:
        """``session``: a boto3 Session (None: boto3's default session). ``stack``: names the tables. ``settings``:
        settings to use instead of those the stack published (it names the tables itself)."""
        self.client = _dynamodb(session)
        self.settings = settings or _stack_settings(self.client, stack)
        self._board = BoardStore(self.client, self.settings.board_table)

    def top(
        self, board: str = GLOBAL_BOARD, period: str = ALL, at: datetime | str | None = None, limit: int | None = None
    ) -> Standings:
        """The snapshot of ``board`` for the ``period`` kind (``all``, or a configured ``hour``/``day``/``week``/
        ``month``) containing ``at`` (a datetime, naive meaning UTC, or an ISO-8601 string; None: now), its first
        ``limit`` entries (None: all of the snapshot's N). Bad arguments raise BadInput (a ValueError); a period
        without a snapshot raises NoSnapshot (the API's 404)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise BadInput(f"limit must be a whole number >= 1, got {limit!r}")
        key, snapshot = self._snapshot(board, period, at)
        document = leaderboard_json(snapshot, limit)
        shown = Period(ALL, ALL) if key.kind == ALL else period_from_bucket(key.kind, key.bucket)
        return Standings(
            board=document["board"],
            period=shown,
            generated_at=parse_time(document["generated_at"]),
            items=tuple(RankedEntry(entry["rank"], entry["id"], entry["views"]) for entry in document["items"]),
        )

    def rank(
        self, item_id: str, board: str = GLOBAL_BOARD, period: str = ALL, at: datetime | str | None = None
    ) -> int | None:
        """``item_id``'s exact competition rank in the period (ties as on the board), or None when it is past the
        ranked depth D (``RankDepth``) or has no views: :meth:`ranks` says which, with the approximate rank."""
        return self.ranks([item_id], board, period, at)[0].rank

    def ranks(
        self, item_ids: Sequence[str], board: str = GLOBAL_BOARD, period: str = ALL, at: datetime | str | None = None
    ) -> list[RankAnswer]:
        """What ``GET /rank`` answers, one :class:`RankAnswer` per id in the order given (1 to 100 ids): exact within
        the depth D from the snapshot (one GetItem) or its ranked version (one BatchGetItem more), approximate past
        it. Raises BadInput for a bad id or count, NoSnapshot for a period without views."""
        if isinstance(item_ids, str):
            raise BadInput("item_ids must be a sequence of ids, not one string")
        ids = [validation.item_id(item) for item in item_ids]
        if not 1 <= len(ids) <= MAX_RANK_IDS:
            raise BadInput(f"between 1 and {MAX_RANK_IDS} ids per call, got {len(ids)}")
        key, snapshot = self._snapshot(board, period, at)
        return lookup_ranks(self._board, self.settings, key, snapshot, ids)

    def around(
        self,
        item_id: str,
        k: int = DEFAULT_AROUND_K,
        board: str = GLOBAL_BOARD,
        period: str = ALL,
        at: datetime | str | None = None,
    ) -> Around:
        """What ``GET /around`` answers: the ``k`` (1-50) entries above and below ``item_id`` in board order with
        exact ranks, shifted at the top and bottom. Raises NotRanked (a LookupError) past the depth D or without
        views, NoSnapshot for a period without views, BadInput for a bad id or k."""
        item_id = validation.item_id(item_id)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_AROUND_K:
            raise BadInput(f"k must be a whole number from 1 to {MAX_AROUND_K}, got {k!r}")
        key, snapshot = self._snapshot(board, period, at)
        return around(self._board, key, snapshot, item_id, k=k, depth=self.settings.rank_depth_of(key.board))

    def _snapshot(self, board: str, period: str, at: datetime | str | None) -> tuple[PeriodKey, dict[str, Any]]:
        key = self._period(board, period, at)
        snapshot = self._board.get_snapshot(key)
        if snapshot is None:
            raise NoSnapshot(key)
        return key, snapshot

    def _period(self, board: str, period: str, at: datetime | str | None) -> PeriodKey:
        """The API's validation of ``board``, ``period`` and ``at``, then the period they name."""
        name = validation.board_name(board)
        kind = validation.period_kind(period, self.settings.periods)
        if isinstance(at, datetime):
            moment: datetime | None = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
        elif at is None or isinstance(at, str):
            moment = validation.moment(at)
        else:
            raise BadInput(f"at must be a datetime or an ISO-8601 string, got {type(at).__name__}")
        return period_at(name, kind, moment)
