"""The Python library: record views and read leaderboards from any Python application, without going through HTTP.

    from shardboard import Leaderboard, Recorder

    with Recorder(stack="shardboard") as recorder:       # the stack's tables and published settings
        recorder.record("images/001.jpg")                # buffered; one counter write per key and flush
    for entry in Leaderboard(stack="shardboard").top(limit=10).items:
        print(entry.rank, entry.id, entry.views)

docs/library.md says how recording, buffering, failures, retried writes and viewers work, what a kill can lose,
and the permissions each side needs.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import random
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from shardboard.domain import validation
from shardboard.domain.boards import GLOBAL_BOARD, BoardGate, InProcessBoards
from shardboard.domain.clock import Clock
from shardboard.domain.items import records as items
from shardboard.domain.items.records import ItemRecord
from shardboard.domain.periods import ALL, Period, known_kind, parse_time, period_from_bucket
from shardboard.domain.ports import RetrySafeViewCounters
from shardboard.domain.publishing.gather import RankedEntry
from shardboard.domain.reading.pages import DEFAULT_AROUND_K, MAX_AROUND_K, Around, NotRanked
from shardboard.domain.reading.percentiles import RankAnswer
from shardboard.domain.writing.dedupe import Seen
from shardboard.domain.writing.dynamic_sharding import ShardRouter
from shardboard.domain.writing.idempotency import OnceWrite
from shardboard.domain.writing.recording import (
    Where,
)
from shardboard.schema import Item as ItemView
from shardboard.schema import RankedItem
from shardboard.services import items as items_service
from shardboard.services import reading, recording
from shardboard.services.clock import system_clock
from shardboard.services.reading import NoSnapshot
from shardboard.services.stack import published_settings
from shardboard.services.stores import Container, MissingCredentials, session_client
from shardboard.settings import DEFAULT_STACK, Settings

BadInput = validation.BadInput
UnknownItem = items.UnknownItem
NoItem = reading.NoItem
log = logging.getLogger("shardboard.client")

# Concurrent counter writes per flush: a flush of 10,000 keys is 10,000 small writes.
DEFAULT_WORKERS = 16

# (item id, anchor bucket, category boards sorted, the viewed view or None): the views of one key are one counter
# write; a viewed view's key is its own (its Seen holds a token made per call), so it is never coalesced.
_Key = tuple[str, str, tuple[str, ...], Seen | None]


@dataclass(frozen=True)
class Stores:
    """Where a recorder writes: the base table (counters and viewers' markers) and the shard router of dynamic
    sharding (None: every item has ``Settings.write_shards`` shards)."""

    views: RetrySafeViewCounters
    router: ShardRouter | None = None
    # RequireItems (``Settings.require_items``): whether an id was created; None when the stack does not require it.
    admit: Callable[[str], bool] | None = None
    # The Boards policy and its registry; None: the settings' policy with a registry in this process's memory.
    boards: BoardGate | None = None


@dataclass(frozen=True)
class _Duplicate:
    """A viewed view refused: its viewer was seen already in the window (nothing written)."""

    units: float


@dataclass(frozen=True)
class _Replayed:
    """A retry-safe write refused because an earlier attempt of it had landed (its response was lost): counted."""

    units: float


@dataclass
class _Write:
    """One counter write of a flush: a buffered key's views. Retry-safe, also the shard and the writer's sequence of
    its first attempt, which every retry of it keeps until it is known applied."""

    key: _Key
    count: int
    shard: int = 0
    drawn_from: int = 0  # the item's shard count the shard was chosen in (the router's growth rule wants it)
    once: OnceWrite | None = None  # None: never sent (a failure before sending puts its views back in the buffer)


class _Deferred:
    """Not sent: an earlier write of the same (item, bucket) in this flush did not complete."""


_DEFERRED = _Deferred()
_Outcome = float | _Duplicate | _Replayed | BaseException | _Deferred
# Jitter for the back-off between attempts of a throttled retry-safe write (timing only).
_RNG = random.Random()


# The library's public names (shardboard/__init__.py serves them): some are the domain's own, re-exported.
__all__ = [
    "Around",
    "BadInput",
    "BufferFull",
    "FlushResult",
    "Leaderboard",
    "MissingCredentials",
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


@dataclass(frozen=True)
class FlushResult:
    """What one flush wrote, and what it kept for the next one."""

    views: int = 0  # views written
    writes: int = 0  # counter writes that landed (one per coalesced key)
    write_units: float = 0.0
    failed_views: int = 0  # views whose write failed (or waits behind one that did): kept for the next flush
    failed_writes: int = 0
    duplicate_views: int = 0  # viewed views refused as duplicates (nothing written)
    replayed_writes: int = 0  # retry-safe writes an earlier attempt had applied (response lost): counted once


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
    replayed_writes: int = 0  # retry-safe writes found applied by an earlier attempt: counted once, not failed
    unresolved_views: int = 0  # in pending_views: in writes sent whose outcome is unknown, to be retried unchanged


def _dynamodb(session: Any, workers: int = DEFAULT_WORKERS) -> Any:
    """A DynamoDB client from ``session`` (boto3's default session when None): standard retry mode, a pool for the
    flush workers; ``AWS_ENDPOINT_URL_DYNAMODB`` points it at DynamoDB Local, as everywhere else, which needs no
    credentials configured (the local engine's key signs); AWS without any raises ``MissingCredentials``."""
    return session_client(session, pool=max(workers, 10))


def _stack_settings(client: Any, stack: str) -> Settings:
    """The settings ``stack`` published at its deploy (or `shardboard init`): one GetItem, read once per client. A
    stack that published none (deployed by an older version), or a caller that may not read them, gets the
    template's defaults and a one-line warning, as before stacks described themselves."""
    settings, lookup = published_settings(client, Settings.for_stack(stack))
    if lookup.published is None:
        log.warning(
            "stack %s: %s; using the template's defaults (settings=Settings.for_stack(...) gives others)",
            stack,
            lookup.why_not,
        )
    return settings


class Recorder:
    """Record views from a Python application: buffered, coalesced per key, flushed in the background.

    ``record`` is thread-safe; one recorder per process serves every thread. See the module's documentation for
    what a flush writes, what a failure keeps, what a lost response cannot double and what a kill can lose.
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
        clock: Clock = system_clock,
        stores: Stores | None = None,
        retry_safe: bool = True,
    ) -> None:
        """``session``: a boto3 Session (None: boto3's default session). ``stack``: names the tables.
        ``flush_interval``: seconds between background flushes (None: no timed flush; the buffer is flushed when
        it holds ``max_pending`` keys, by ``flush()`` and by ``close()``: for an application, or a simulation,
        that keeps its own schedule). ``max_pending``: the most distinct (item, boards, bucket) keys held.
        ``settings``: settings to use instead of those the stack published (it names the tables itself;
        ``Settings.for_stack`` builds one). ``workers``: writes in parallel. ``clock``: the time a
        ``record`` call counts its views at (its period bucket, a viewer's dedupe window); the wall clock unless
        a simulation drives virtual time. ``stores``: where the writes go instead of the stack's tables through
        ``session`` (the benchmark's in-memory tables). ``retry_safe``: each counter write is conditional on the
        recorder's own sequence, so a write whose response was lost counts once when retried (the default; False:
        plain ``ADD`` writes, which such a retry counts twice)."""
        if flush_interval is not None and not flush_interval > 0:
            raise ValueError(f"flush_interval must be > 0 seconds or None, got {flush_interval!r}")
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 1:
            raise ValueError(f"max_pending must be a whole number >= 1, got {max_pending!r}")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
        self.flush_interval = None if flush_interval is None else float(flush_interval)
        self.max_pending = max_pending
        self.retry_safe = bool(retry_safe)
        self._clock = clock
        if stores is None:
            self.client: Any = _dynamodb(session, workers)
            self.settings = settings or _stack_settings(self.client, stack)
            # The collaborators the API function builds (the same stores, the same shard router), on this client.
            container = Container(self.settings, self.client, clock=clock)
            stores = Stores(container.views, container.router, container.admission, container.boards)
        else:
            self.client = None
            self.settings = settings or Settings.for_stack(stack)
        self._views, self._router = stores.views, stores.router
        gate = stores.boards or BoardGate(self.settings.board_policy, InProcessBoards())
        self._admission = recording.Admission(stores.admit, gate)
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # notified when a flush ends or the recorder closes
        self._pending: dict[_Key, int] = {}
        self._in_flight: list[_Write] = []  # the running flush's writes
        # Retry-safe writes sent whose outcome is unknown: retried unchanged, before any later write of their item.
        self._unresolved: list[_Write] = []
        self._writer: int | None = None  # claimed at the first retry-safe write (and again in a forked child)
        self._sequence = itertools.count(1)
        self._stuck = False  # the last flush ended with the buffer still full
        self._closed = False
        self._stats = RecorderStats()
        self._flushing = threading.Lock()  # one flush at a time (the thread's, flush(), close())
        self._wake = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="shardboard-write")
        self._thread = threading.Thread(target=self._run, name="shardboard-recorder", daemon=True)
        self._thread.start()
        _RECORDERS.add(self)
        atexit.register(self.close)

    # -- recording
    def record(
        self,
        item_id: str,
        count: int = 1,
        boards: Iterable[str] = (),
        viewer: str | None = None,
        user_agent: str | None = None,
    ) -> None:
        """Buffer ``count`` views of ``item_id`` on the global board and each of ``boards``, counted in the period
        of now. Bad input raises BadInput (a ValueError) and buffers nothing. Blocks while a flush makes room when
        the buffer is full; raises BufferFull when it cannot, RecorderClosed after close().

        ``viewer`` (1-128 printable characters; ``count`` must then be 1): the view counts once per viewer, item and
        dedupe window, in its own write (not coalesced); see the module's documentation. ``user_agent``: the
        visitor's User-Agent; a known crawler's views count on the reserved board ``bots`` only.
        """
        now = self._clock()
        # The API's rules, RequireItems (UnknownItem) and the Boards policy (BoardNotAllowed, a BadInput): a refused
        # call buffers nothing.
        names = tuple(boards) if isinstance(boards, set | frozenset) else boards
        accepted = recording.accept(
            self._admission,
            self.settings.anchor,
            [item_id],
            count,
            boards=names,
            viewer=viewer,
            at=now,
            user_agent=user_agent,
        )
        item_id, count, who = accepted.item_ids[0], accepted.count, accepted.viewer
        seen = None if who is None else Seen.of(who, self.settings.dedupe_window_seconds, now.timestamp())
        key: _Key = (item_id, accepted.where.bucket, tuple(sorted(accepted.where.boards)), seen)
        with self._lock:
            while key not in self._pending and self._held() >= self.max_pending and not self._retrying(key):
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

    def _retrying(self, key: _Key) -> bool:
        """Whether a write of ``key`` awaits its retry (its key is held: its new views always fit)."""
        return any(write.key == key for write in self._unresolved)

    def _held(self) -> int:
        """Distinct keys held: buffered, being written, or waiting for a retry (a key in two of them counts twice,
        which only errs low)."""
        return len(self._pending) + len(self._in_flight) + len(self._unresolved)

    # -- flushing
    def flush(self) -> FlushResult:
        """Write every buffered key now (one counter write each) and wait for the writes; waits for a running
        background flush first. Retry-safe, writes whose outcome was unknown are retried first, unchanged. Failed
        writes keep their views for the next flush and are logged."""
        with self._flushing:
            with self._lock:
                batch, self._pending = self._pending, {}
                # Retries first: a later write of the same item waits for them (see _write_group).
                writes = [*self._unresolved, *(_Write(key, count) for key, count in batch.items())]
                self._unresolved = []
                self._in_flight = writes
                self._stuck = False
            outcomes = self._write_all(writes)
            kept: dict[_Key, int] = {}
            unresolved: list[_Write] = []
            for write, outcome in zip(writes, outcomes, strict=True):
                if isinstance(outcome, BaseException | _Deferred):
                    if write.once is None:
                        kept[write.key] = kept.get(write.key, 0) + write.count
                    else:  # sent at least once: it may have landed, so only an unchanged retry is safe
                        unresolved.append(write)
            duplicates = sum(1 for outcome in outcomes if isinstance(outcome, _Duplicate))
            replayed = sum(1 for outcome in outcomes if isinstance(outcome, _Replayed))
            units = sum(outcome for outcome in outcomes if isinstance(outcome, float))
            units += sum(outcome.units for outcome in outcomes if isinstance(outcome, _Duplicate | _Replayed))
            failed_views = sum(kept.values()) + sum(write.count for write in unresolved)
            failed_writes = sum(1 for outcome in outcomes if isinstance(outcome, BaseException | _Deferred))
            result = FlushResult(
                views=sum(write.count for write in writes) - failed_views - duplicates,
                writes=len(writes) - failed_writes - duplicates,
                write_units=units,
                failed_views=failed_views,
                failed_writes=failed_writes,
                duplicate_views=duplicates,
                replayed_writes=replayed,
            )
            with self._lock:
                for key, count in kept.items():
                    self._pending[key] = self._pending.get(key, 0) + count
                self._unresolved = unresolved
                self._in_flight = []
                self._stuck = len(self._pending) + len(self._unresolved) >= self.max_pending
                stats = self._stats
                self._stats = replace(
                    stats,
                    written_views=stats.written_views + result.views,
                    writes=stats.writes + result.writes,
                    write_units=stats.write_units + units,
                    failed_writes=stats.failed_writes + result.failed_writes,
                    flushes=stats.flushes + 1,
                    duplicate_views=stats.duplicate_views + duplicates,
                    replayed_writes=stats.replayed_writes + replayed,
                )
                self._room.notify_all()
        errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if errors:
            log.warning(
                "shardboard: %d view(s) in %d write(s) not written (%s: %s); kept for the next flush",
                result.failed_views,
                result.failed_writes,
                type(errors[0]).__name__,
                str(errors[0])[:200],
            )
        return result

    def _write_all(self, writes: list[_Write]) -> list[_Outcome]:
        """Every write's outcome, in order. Plain writes run in parallel; retry-safe ones in one task per (item,
        anchor bucket), one after another, so the recorder never has two writes outstanding on one counter item
        (viewed views, transactions with their own token, each in its own task). On the pool; at interpreter exit
        (no new threads) in this thread."""
        writer: int | BaseException = 0
        if self.retry_safe:
            groups: dict[Any, list[int]] = {}
            for position, write in enumerate(writes):
                item_id, bucket, _, seen = write.key
                groups.setdefault(write.key if seen is not None else (item_id, bucket), []).append(position)
            tasks = list(groups.values())
            if any(write.once is None and write.key[3] is None for write in writes):
                writer = self._writer_number()
        else:
            tasks = [[position] for position in range(len(writes))]
        outcomes: list[_Outcome] = [_DEFERRED] * len(writes)

        def run(task: list[int]) -> None:
            for position, outcome in zip(task, self._write_group([writes[p] for p in task], writer), strict=True):
                outcomes[position] = outcome

        futures: list[Future[None]] = []
        try:
            for task in tasks:
                futures.append(self._pool.submit(run, task))
        except RuntimeError:  # the pool is shut down (interpreter exit, atexit): write the rest here
            pass
        for future in futures:
            future.result()
        for task in tasks[len(futures) :]:
            run(task)
        return outcomes

    def _write_group(self, writes: list[_Write], writer: int | BaseException) -> list[_Outcome]:
        """Write one task's writes in order; after a write that did not complete, the rest are not sent."""
        outcomes: list[_Outcome] = []
        for write in writes:
            stopped = bool(outcomes) and isinstance(outcomes[-1], BaseException | _Deferred)
            outcomes.append(_DEFERRED if stopped else self._write(write, writer))
        return outcomes

    def _write(self, write: _Write, writer: int | BaseException) -> _Outcome:
        """One coalesced key in one counter write (a viewed view: its transaction); the error instead of raising it
        (the flush keeps those views)."""
        item_id, bucket, boards, seen = write.key
        try:
            where = Where(bucket, boards)
            if seen is None and self.retry_safe:
                return self._write_once(write, where, writer)
            shards = self.settings.write_shards
            done = recording.write_accepted(self._views, shards, self._router, item_id, write.count, where, seen)
            return _Duplicate(done.write_units) if done.duplicate else done.write_units
        except Exception as error:  # any failure keeps the views for the next flush, and is logged
            return error

    def _write_once(self, write: _Write, where: Where, writer: int | BaseException) -> float | _Replayed:
        """A retry-safe write: at its first attempt it takes its shard (the recorder's shard for the item) and the
        next sequence; every attempt after that, in this flush or a later one, sends it unchanged
        (``recording.write_once``: a throttled attempt is tried again after a back-off)."""
        item_id = write.key[0]
        if write.once is None:
            if isinstance(writer, BaseException):
                raise writer  # no writer number this flush: nothing sent, the views go back to the buffer
            target = recording.once_shard(self.settings.write_shards, self._router, writer, item_id)
            write.shard, write.drawn_from = target
            write.once = OnceWrite(writer, next(self._sequence))
        target = (write.shard, write.drawn_from)
        done = recording.write_once(self._views, self._router, item_id, write.count, target, write.once, where)
        return done.units if done.applied_now else _Replayed(done.units)

    def _writer_number(self) -> int | BaseException:
        """This recorder's writer number, claimed at its first retry-safe write in this process (a lost response
        only wastes a number); the error when it cannot be claimed now."""
        if self._writer is None:
            try:
                self._writer = self._views.claim_writer()
            except Exception as error:
                return error
        return self._writer

    def _forget_writer(self) -> None:
        """In a forked child: the parent keeps its writer number, so the child claims its own before writing."""
        self._writer = None

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
            unresolved = sum(write.count for write in self._unresolved)
            held = sum(self._pending.values()) + sum(write.count for write in self._in_flight) + unresolved
            return replace(self._stats, pending_views=held, unresolved_views=unresolved)

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
                unknown = sum(write.count for write in self._unresolved)
                lost = sum(self._pending.values()) + unknown
                self._pending.clear()
                self._unresolved.clear()
                self._stats = replace(self._stats, lost_views=self._stats.lost_views + lost)
            log.error(
                "shardboard: closed with %d view(s) the last flush could not write: they are lost (%d of them in"
                " writes whose response was lost: those may have counted, once)",
                lost,
                unknown,
            )

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


# Live recorders: a forked child forgets their writer numbers (its writes must not share its parent's sequence).
_RECORDERS: weakref.WeakSet[Recorder] = weakref.WeakSet()


def _forget_writers() -> None:
    for recorder in list(_RECORDERS):
        recorder._forget_writer()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_writers)


# ----------------------------------------------------------------------------------------------------- reading
@dataclass(frozen=True)
class Entry(RankedEntry):
    """An entry as ``GET /leaderboard`` carries it: rank, id, views, movement, and where the board has them,
    trending's ``score`` and ``recent`` views and the item's metadata (``meta``: PUT /item, the first PageSize)."""

    score: float | None = None
    recent: dict[str, int] | None = None
    meta: dict[str, Any] | None = None

    @classmethod
    def of(cls, item: RankedItem) -> Entry:
        return cls(**item.model_dump())


@dataclass(frozen=True)
class Page:
    """A page of a ranked version, as ``GET /leaderboard?offset=`` or ``?cursor=`` answers it: its entries from
    ``offset`` and the ``cursor`` to the next page of the same version (None: the walk is over)."""

    board: str
    generated_at: datetime
    offset: int
    items: tuple[Entry, ...]
    cursor: str | None


@dataclass(frozen=True)
class NewestItems:
    """A page of the newest items (their records, newest first) and the cursor to the next (None: no more)."""

    items: tuple[ItemRecord, ...]
    cursor: str | None


def _iso_or_none(value: datetime | str | None) -> str | None:
    """A time as the query string carries it: ISO-8601 (a naive datetime means UTC)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    raise BadInput(f"a time must be a datetime or an ISO-8601 string, got {type(value).__name__}")


@dataclass(frozen=True)
class Standings:
    """A leaderboard as ``GET /leaderboard`` returns it: the board, the period, when the snapshot was taken and the
    entries best first (competition ranks: equal views share a rank, 1, 2, 2, 4)."""

    board: str
    period: Period  # kind "all" (start and end None), or a calendar period with its UTC bounds
    generated_at: datetime
    items: tuple[Entry, ...]
    # Today's answer: a cursor at offset 0 of the ranked version (Leaderboard.page(cursor=...) walks it); None
    # without ranked versions, and on windows.
    walk: str | None = None

    def rank_of(self, item_id: str) -> int | None:
        """``item_id``'s rank among these entries, or None when it is not one of them."""
        return next((entry.rank for entry in self.items if entry.id == item_id), None)


class Leaderboard:
    """Read a stack's leaderboards from their snapshot items: one GetItem per call, what the HTTP API reads."""

    def __init__(
        self,
        session: Any = None,
        stack: str = DEFAULT_STACK,
        *,
        settings: Settings | None = None,
        clock: Clock = system_clock,
    ) -> None:
        """``session``: a boto3 Session (None: boto3's default session). ``stack``: names the tables. ``settings``:
        settings to use instead of those the stack published (it names the tables itself). ``clock``: what "now"
        is for a read that names no time (the current period, a window); the wall clock unless a test fixes it."""
        self.client = _dynamodb(session)
        self.settings = settings or _stack_settings(self.client, stack)
        stores = Container(self.settings, self.client, clock=clock)
        self._items = stores.items
        self._reads = reading.BoardReads(stores.board, self._items, self.settings, clock)

    def top(
        self,
        board: str = GLOBAL_BOARD,
        period: str = ALL,
        at: datetime | str | None = None,
        limit: int | None = None,
        window: str | None = None,
    ) -> Standings:
        """The snapshot of ``board`` for the ``period`` kind (``all``, or a configured ``hour``/``day``/``week``/
        ``month``) containing ``at`` (a datetime, naive meaning UTC, or an ISO-8601 string; None: now), its first
        ``limit`` entries (None: all of the snapshot's N); with ``window`` (``24h``: one of the stack's rolling
        windows) that window's top as of now instead (with ``period`` or ``at`` too: BadInput). Bad arguments raise
        BadInput (a ValueError); a period without a snapshot raises NoSnapshot (the API's 404)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise BadInput(f"limit must be a whole number >= 1, got {limit!r}")
        if window is not None:
            # A window is read as of now: a period or a time given with it is refused, never ignored.
            kind = known_kind(period)
            named = kind.pick(all_time=None, period=period) if kind else period
            top = reading.top(self._reads, board=board, window=window, limit=limit, period=named, at=self._moment(at))
        else:
            top = reading.top(self._reads, board=board, period=period, at=self._moment(at))
        key = top.period
        if window is not None:
            span = top.document.period
            shown = Period(key.kind, top.head.bucket, parse_time(span.start), parse_time(span.end))  # type: ignore[union-attr]
        else:
            half_life = self.settings.trending_half_life_hours
            shown = period_from_bucket(key.kind, key.bucket, half_life=half_life)
        return Standings(
            board=top.document.board,
            period=shown,
            generated_at=parse_time(top.document.generated_at),
            items=tuple(Entry.of(entry) for entry in top.document.items[:limit]),
            walk=top.document.walk,
        )

    def page(
        self,
        board: str = GLOBAL_BOARD,
        period: str = ALL,
        at: datetime | str | None = None,
        *,
        offset: int | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page:
        """What ``GET /leaderboard?offset=&limit=`` (or ``?cursor=``) answers: entries of the period's ranked version
        from ``offset`` (0-based), or the next page of the version ``cursor`` pins (a cursor alone names its own
        board and period). The head and one BatchGetItem. Raises BadInput (an expired or tampered cursor too),
        NoSnapshot."""
        if cursor is not None and (board, period, at) == (GLOBAL_BOARD, ALL, None):  # a cursor alone
            found = reading.page(self._reads, offset=offset, limit=limit, cursor=cursor)
        else:
            found = reading.page(
                self._reads, board=board, period=period, at=self._moment(at), offset=offset, limit=limit, cursor=cursor
            )
        return Page(
            board=found.board,
            generated_at=parse_time(found.generated_at),
            offset=found.offset or 0,
            items=tuple(Entry.of(entry) for entry in found.items),
            cursor=found.cursor,
        )

    def item(self, item_id: str) -> ItemView:
        """What ``GET /item?id=`` answers: the item's metadata (when it was created with PUT /item), its takedown
        status and its exact all-time views. Raises NoItem (a LookupError) when it has neither, BadInput."""
        return reading.item(self._reads, item_id)

    def newest(
        self,
        created_after: datetime | str | None = None,
        created_before: datetime | str | None = None,
        *,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> NewestItems:
        """What ``GET /items?created_after=`` answers: items created in [after, before), newest first, ``limit``
        (1-100, 100 by default) of them and the cursor to the next page (None: no more)."""
        found = items_service.newest_page(
            self._items,
            _iso_or_none(created_after),
            _iso_or_none(created_before),
            None if limit is None else str(limit),
            cursor,
        )
        return NewestItems(tuple(found.items), found.cursor)

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
        return reading.ranks(self._reads, item_ids, board=board, period=period, at=self._moment(at)).answers

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
        if isinstance(k, bool) or not isinstance(k, int):
            raise BadInput(f"k must be a whole number from 1 to {MAX_AROUND_K}, got {k!r}")
        found = reading.neighbours(self._reads, item_id, k=k, board=board, period=period, at=self._moment(at))
        return found.around

    @staticmethod
    def _moment(at: object) -> datetime | str | None:
        """``at`` as the library takes it: a datetime, an ISO-8601 string or None."""
        if at is None or isinstance(at, (str, datetime)):
            return at
        raise BadInput(f"at must be a datetime or an ISO-8601 string, got {type(at).__name__}")
