"""Lambda's delivery of one stream to one function: batches, filtering, retries, windows, parallel lanes, timeouts.

The model is independent of where records come from: a :class:`ShardFeed` hands it a shard's records (the local
runner's reads DynamoDB Streams with GetRecords, the benchmark's and the scenarios' read an in-memory stream list),
and it decides, as the event source mapping does, what the function is invoked with and where the checkpoint goes.
docs/local-runtime.md tells the rules one by one.

Time is read from an injectable :class:`Clock`. With ``wait=True`` (the runner) the model waits as Lambda does: for
a batching window to fill a batch, and through back-offs between retries. With ``wait=False`` (simulations driven by
a virtual clock) it never waits: a batch that is not due yet stays pending, a batch to retry stays stalled until its
back-off has passed, and the next :meth:`StreamDelivery.deliver` call takes them up.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from shardboard_tools.lambda_model.clock import Clock
from shardboard_tools.lambda_model.context import LocalContext
from shardboard_tools.lambda_model.event_filter import matches_any
from shardboard_tools.lambda_model.mapping import MAX_PAYLOAD_BYTES, EventSourceMapping
from shardboard_tools.lambda_model.records import (
    Record,
    arrival,
    dead_letter,
    failed_index,
    lambda_event,
    sequence_number,
    split_by_partition_key,
)
from shardboard_tools.lambda_model.windows import TumblingWindow

Handler = Callable[[dict[str, Any], Any], Any]
WindowStep = tuple[TumblingWindow, list[Record], bool]  # the window, the records to invoke with, final or not

# Lambda polls each shard four times a second.
POLL_SECONDS = 0.25
# Back-off between retries of a failing batch (doubling up to the cap): a throttled table gets room to recover.
RETRY_BACKOFF_SECONDS = 0.05
RETRY_BACKOFF_CAP_SECONDS = 2.0

log = logging.getLogger(__name__)


@dataclass
class Page:
    """What one read of a shard brought."""

    records: list[Record]
    closed: bool = False  # nothing more will ever arrive on the shard
    rewound: bool = False  # the reader went back to the checkpoint: records read and not yet handled come again


class ShardFeed(Protocol):
    """Where one shard's records come from, in stream order."""

    @property
    def shard_id(self) -> str: ...

    @property
    def stream_arn(self) -> str: ...

    def read(self, limit: int) -> Page: ...


class Checkpoints(Protocol):
    def advance(self, shard_id: str, sequence_number: str) -> None: ...

    def finish(self, shard_id: str) -> None: ...


@dataclass
class MemoryCheckpoints:
    """Checkpoints kept in memory (simulations, which never restart)."""

    positions: dict[str, str] = field(default_factory=dict)
    finished: set[str] = field(default_factory=set)

    def advance(self, shard_id: str, sequence_number: str) -> None:
        self.positions[shard_id] = sequence_number

    def finish(self, shard_id: str) -> None:
        self.finished.add(shard_id)


@dataclass
class RunStats:
    batches: int = 0  # invocations that succeeded (fully or in part)
    records: int = 0  # records handed to the function, retries included
    retries: int = 0  # invocations repeated after a failure
    invocations: int = 0
    function_errors: int = 0  # invocations that raised or ran over the function's timeout
    timeouts: int = 0  # invocations that ran over the function's timeout
    partial_failures: int = 0  # invocations that reported batchItemFailures
    bisections: int = 0
    filtered: int = 0  # records dropped by FilterCriteria before the function
    dead_letter_batches: int = 0
    dead_letter_records: int = 0
    windows: int = 0  # tumbling windows whose final invocation succeeded
    iterator_age_seconds: float = 0.0  # Lambda's IteratorAge: now - arrival of the last record delivered
    last_error: str | None = None


class FunctionTimedOut(Exception):
    """The invocation ran over the function's Timeout: Lambda ends it, a function error."""


@dataclass
class _Failure:
    index: int  # records before it are done
    function_error: bool  # the function raised (bisect applies) rather than reporting items


@dataclass
class _Stalled:
    """A batch waiting for its retry (``wait=False``): what is left of it, and when it may go again."""

    queue: deque[list[Record]]
    attempts: int
    at: float
    last_sequence: str | None = None  # the checkpoint once it is done (its cut's last record, filtered ones included)
    window_records: list[Record] | None = None  # a tumbling window's invocation to repeat
    final: bool = False


@dataclass
class _ShardState:
    pending: deque[Record] = field(default_factory=deque)  # read, not yet handled
    matching: int = 0  # pending records that pass FilterCriteria: only they fill a batch
    closed: bool = False
    gathering_since: float | None = None  # when the oldest pending record was read (the batching window)
    window: TumblingWindow | None = None  # the open tumbling window (in memory, as Lambda's state)
    stalled: _Stalled | None = None


class StreamDelivery:
    """The event source mapping of one function: :meth:`deliver` hands a shard's due records to ``function``.

    ``destination`` receives each on-failure message (the mapping's OnFailure destination); ``partition_key`` is
    the base table's hash key attribute, by which ParallelizationFactor lanes are chosen; ``environments`` makes
    the function of each further lane (Lambda runs concurrent batches in their own execution environments; None:
    the lanes take turns in ``function``, since an in-process handler with module state cannot take two calls).
    """

    def __init__(
        self,
        mapping: EventSourceMapping,
        function: Handler,
        clock: Clock,
        *,
        checkpoints: Checkpoints | None = None,
        destination: Callable[[dict[str, Any]], None] | None = None,
        partition_key: Callable[[], str] | None = None,
        wait: bool = True,
        stop: threading.Event | None = None,
        environments: Callable[[], Handler] | None = None,
    ) -> None:
        self.mapping = mapping
        self.function = function
        self.clock = clock
        self.checkpoints: Checkpoints = checkpoints if checkpoints is not None else MemoryCheckpoints()
        self.destination = destination
        self.partition_key = partition_key or (lambda: "pk")
        self.wait = wait
        self.stop = stop or threading.Event()
        self.stats = RunStats()
        self._shards: dict[str, _ShardState] = {}
        self._lock = threading.Lock()  # parallel lanes share the stats and the failure destination
        self._environments = environments
        self._lane_functions: list[Handler] = [function]
        self._lane = threading.local()  # the function of the lane a thread delivers
        self._turns = threading.Lock()  # lanes without environments of their own take turns in the one function

    # -- what the caller sees
    def open_windows(self) -> bool:
        return any(s.window is not None for s in self._shards.values())

    def backlog(self, shard_id: str) -> int:
        """Records read and not yet handled, plus one for an open window or a stalled batch."""
        state = self._shards.get(shard_id)
        if state is None:
            return 0
        return len(state.pending) + (state.window is not None) + (state.stalled is not None)

    def forget(self, shard_id: str) -> None:
        """Drop what is held for the shard (its reader went back to the checkpoint)."""
        self._shards.pop(shard_id, None)

    def deliver(self, feed: ShardFeed) -> int:
        """Deliver what is due on the shard, up to its current end; returns the records handed to the function."""
        state = self._shards.setdefault(feed.shard_id, _ShardState())
        if state.stalled is not None and self.clock.now() < state.stalled.at:
            return 0
        if self.mapping.tumbling_window_seconds:
            return self._deliver_windows(feed, state)
        delivered = self._resume(feed, state) if state.stalled is not None else 0
        while state.stalled is None and not self.stop.is_set():
            batch = self._next_batch(feed, state)
            if batch is None:
                break
            records, last_sequence = batch
            if records and self._lanes() > 1:
                delivered += self._deliver_in_parallel(feed, records)
            elif records:
                delivered += self._deliver(feed, state, deque([records]), 0, last_sequence)
                if _stalled(state):
                    break
            self.checkpoints.advance(feed.shard_id, last_sequence)
        self._finish_if_done(feed, state)
        return delivered

    def _finish_if_done(self, feed: ShardFeed, state: _ShardState) -> None:
        done = state.closed and not state.pending and state.window is None and state.stalled is None
        if done and not self.stop.is_set():
            self.checkpoints.finish(feed.shard_id)

    # -- cutting batches
    def _next_batch(self, feed: ShardFeed, state: _ShardState) -> tuple[list[Record], str] | None:
        """Up to BatchSize matching records (per lane), filtered first; with the last record taken (filtered ones
        included) for the checkpoint. None when nothing is due."""
        due = self._gather(feed, state)
        if not state.pending or not due:
            return None
        taken = self._take(state, limit=self._cut_size())
        return self._filtered(taken), sequence_number(taken[-1])

    def _cut_size(self) -> int:
        """Matching records taken at once: a batch for each of the shard's lanes."""
        return self.mapping.batch_size * self._lanes()

    def _lanes(self) -> int:
        """ParallelizationFactor; a shard in tumbling windows is one lane (each window's state is one sequence)."""
        return 1 if self.mapping.tumbling_window_seconds else self.mapping.parallelization_factor

    def _gather(self, feed: ShardFeed, state: _ShardState) -> bool:
        """Read until a cut's worth of matching records is pending; whether a batch is due.

        Lambda filters before it batches: records FilterCriteria drops do not count towards BatchSize. A batch is
        due when full, when the shard is closed, or when the batching window has passed since gathering started.
        """
        wanted, window = self._cut_size(), self.mapping.batching_window_seconds
        started = self.clock.now()
        while state.matching < wanted and not state.closed:
            if self._read(feed, state, wanted - state.matching):
                continue
            # Waiting, the window runs from now; not waiting, from when the oldest pending record was read.
            since = started if self.wait or state.gathering_since is None else state.gathering_since
            waited = self.clock.now() - since
            if not state.pending or waited >= window or self.stop.is_set():
                break
            if not self.wait:
                return False
            self.clock.sleep(min(POLL_SECONDS, window - waited))
        return True

    def _read(self, feed: ShardFeed, state: _ShardState, wanted: int) -> bool:
        """One read into ``state.pending``; returns whether it brought records."""
        page = feed.read(wanted)
        if page.rewound:
            state.pending.clear()
            state.matching = 0
            state.window = None  # read again from the checkpoint, before the open window: its state goes too
            return False
        if not state.pending:
            state.gathering_since = self.clock.now()
        state.pending.extend(page.records)
        state.matching += sum(1 for r in page.records if self._matches(r))
        state.closed = page.closed
        return bool(page.records)

    def _take(
        self,
        state: _ShardState,
        holds: Callable[[Record], bool] | None = None,
        size: int = 2,
        limit: int | None = None,
    ) -> list[Record]:
        """Pop pending records up to BatchSize matching ones (while ``holds`` accepts them) within the payload cap.

        Records FilterCriteria drops are popped too (the checkpoint passes them) but neither count nor weigh.
        ``size`` is the event's size without records (2: the ``{"Records": [...]}`` wrapper).
        """
        limit = limit or self.mapping.batch_size
        cap = MAX_PAYLOAD_BYTES * self._lanes()
        taken = self._pop(state, holds, limit)
        # One measure of the whole batch; record by record only when it is over the cap (rare: 6 MB).
        if size + len(json.dumps([r for r in taken if self._matches(r)], default=str)) > cap:
            self._put_back(state, taken)
            taken = self._pop(state, holds, limit, (size, cap))
        if not state.pending:
            state.gathering_since = None
        return taken

    def _pop(
        self,
        state: _ShardState,
        holds: Callable[[Record], bool] | None,
        limit: int,
        payload: tuple[int, int] | None = None,
    ) -> list[Record]:
        """Pop up to ``limit`` matching records and the filtered ones among them; ``payload`` (size so far, cap)
        stops before the first matching record that would not fit."""
        taken: list[Record] = []
        kept = 0
        while state.pending and kept < limit:
            record = state.pending[0]
            if holds is not None and not holds(record):
                break
            if self._matches(record) and payload is not None:
                record_size = len(json.dumps(record, default=str)) + 1
                if kept and payload[0] + record_size > payload[1]:
                    break
                payload = (payload[0] + record_size, payload[1])
            if self._matches(record):
                state.matching -= 1
                kept += 1
            taken.append(state.pending.popleft())
        return taken

    def _put_back(self, state: _ShardState, taken: list[Record]) -> None:
        state.pending.extendleft(reversed(taken))
        state.matching += sum(1 for r in taken if self._matches(r))

    def _matches(self, record: Record) -> bool:
        patterns = self.mapping.filter_patterns
        return not patterns or matches_any(patterns, record)

    def _filtered(self, taken: list[Record]) -> list[Record]:
        """``taken`` minus the records FilterCriteria drops before the function."""
        kept = [r for r in taken if self._matches(r)]
        self.stats.filtered += len(taken) - len(kept)
        return kept

    # -- one batch: retries, partial failures, bisect, the failure destination
    def _resume(self, feed: ShardFeed, state: _ShardState) -> int:
        """Take up a stalled batch whose back-off has passed."""
        stalled, state.stalled = state.stalled, None
        assert stalled is not None
        if stalled.window_records is not None:
            assert state.window is not None
            records = stalled.window_records
            return self._deliver_window(feed, state, state.window, records, final=stalled.final, stalled=stalled)
        delivered = self._deliver(feed, state, stalled.queue, stalled.attempts, stalled.last_sequence)
        if state.stalled is None and stalled.last_sequence is not None:
            self.checkpoints.advance(feed.shard_id, stalled.last_sequence)
        return delivered

    def _deliver(
        self,
        feed: ShardFeed,
        state: _ShardState | None,
        queue: deque[list[Record]],
        attempts: int,
        last_sequence: str | None = None,
    ) -> int:
        """Invoke until every record of the batch succeeded or went to the failure destination.

        ``state`` None: a lane of a parallel cut, whose checkpoint moves when every lane is done. A batch to retry
        without waiting (``wait=False``) is left stalled in ``state``.
        """
        delivered = 0
        advance = self.checkpoints.advance if state is not None else _no_checkpoint
        while queue:
            batch = self._expire(feed, queue.popleft(), attempts, checkpoint=state is not None)
            if not batch:
                continue
            failure = self._invoke(batch)
            delivered += len(batch)
            if failure is None:
                advance(feed.shard_id, sequence_number(batch[-1]))
                attempts = 0
                continue
            if failure.index > 0:  # records before the lowest failed one are done: Lambda checkpoints there
                advance(feed.shard_id, sequence_number(batch[failure.index - 1]))
                queue.appendleft(batch[failure.index :])
                attempts = 0
                continue
            if failure.function_error and self.mapping.bisect_on_function_error and len(batch) > 1:
                half = len(batch) // 2  # splitting does not use up the retry quota
                queue.extendleft([batch[half:], batch[:half]])
                self._count("bisections")
                continue
            attempts += 1
            if 0 <= self.mapping.max_retry_attempts < attempts:
                self._dead_letter(feed, batch, "RetryAttemptsExhausted", attempts, failure.function_error)
                advance(feed.shard_id, sequence_number(batch[-1]))
                attempts = 0
                continue
            self._count("retries")
            queue.appendleft(batch)
            if not self.wait and state is not None:
                state.stalled = _Stalled(queue, attempts, self.clock.now() + backoff_seconds(attempts), last_sequence)
                return delivered
            self.clock.sleep(backoff_seconds(attempts), self.stop)
        return delivered

    def _deliver_in_parallel(self, feed: ShardFeed, records: list[Record]) -> int:
        """ParallelizationFactor N: the cut's records go to N lanes by partition key, each lane's batches in order.

        Lanes run at once (one invocation each at a time), so records of one partition key stay in order while
        different keys overlap; the shard's checkpoint passes the cut when every lane is done, as Lambda moves it
        only past records every lane has handled. Lanes always wait out their back-offs.
        """
        lanes = split_by_partition_key(records, self.mapping.parallelization_factor, self.partition_key())
        size = self.mapping.batch_size
        while self._environments is not None and len(self._lane_functions) < len(lanes):
            self._lane_functions.append(self._environments())

        def lane(number: int, part: list[Record]) -> int:
            self._lane.function = self._lane_functions[min(number, len(self._lane_functions) - 1)]
            batches = [part[i : i + size] for i in range(0, len(part), size)]
            return sum(self._deliver(feed, None, deque([batch]), 0) for batch in batches)

        with ThreadPoolExecutor(len(lanes), thread_name_prefix=f"lane-{feed.shard_id}") as pool:
            return sum(pool.map(lane, range(len(lanes)), lanes))

    def _expire(self, feed: ShardFeed, batch: list[Record], attempts: int, *, checkpoint: bool = True) -> list[Record]:
        """Drop (to the failure destination) the leading records older than MaximumRecordAgeInSeconds.

        With -1 the limit is the stream's 24-hour retention: such records are gone from the stream. ``checkpoint``
        False leaves the checkpoint where it is (a tumbling window, a parallel lane).
        """
        limit, now = self.mapping.record_age_limit_seconds, self.clock.now()
        fresh = next((i for i, r in enumerate(batch) if now - arrival(r) <= limit), len(batch))
        if fresh:
            self._dead_letter(feed, batch[:fresh], "RecordAgeExceeded", attempts, function_error=False)
            if checkpoint:
                self.checkpoints.advance(feed.shard_id, sequence_number(batch[fresh - 1]))
        return batch[fresh:]

    def _invoke(self, batch: list[Record]) -> _Failure | None:
        """Call the function once; None when the whole batch succeeded."""
        self._count_invocation(batch)
        try:
            response = self._call(lambda_event(batch))
        except Exception as error:  # a function error: Lambda sees an Unhandled error, whatever it was
            self._function_error(error, len(batch))
            return _Failure(0, function_error=True)
        self._count("batches")
        if not self.mapping.report_batch_item_failures:
            return None
        index = failed_index(batch, response)
        if index is not None:
            self._count("partial_failures")
            return _Failure(index, function_error=False)
        return None

    def _call(self, event: dict[str, Any]) -> Any:
        """The function's response; an invocation that ran over the function's Timeout raises FunctionTimedOut.

        Lambda stops such an invocation and counts it as a function error; in-process it cannot be interrupted, so
        its response is discarded when it returns.
        """
        started = self.clock.now()
        context = LocalContext(
            function_name=self.mapping.function_name,
            timeout_seconds=self.mapping.function_timeout_seconds,
            clock=self.clock.now,
        )
        response = self._run_function(event, context)
        if self.clock.now() - started > self.mapping.function_timeout_seconds:
            self._count("timeouts")
            raise FunctionTimedOut(f"Task timed out after {self.mapping.function_timeout_seconds:.2f} seconds")
        return response

    def _run_function(self, event: dict[str, Any], context: Any) -> Any:
        function = getattr(self._lane, "function", None)
        if function is not None and self._environments is not None:
            return function(event, context)
        with self._turns:
            return self.function(event, context)

    def _count_invocation(self, records: list[Record]) -> None:
        with self._lock:
            self.stats.invocations += 1
            self.stats.records += len(records)
            if records:
                self.stats.iterator_age_seconds = max(0.0, self.clock.now() - arrival(records[-1]))

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)

    def _function_error(self, error: Exception, records: int) -> None:
        with self._lock:
            self.stats.function_errors += 1
            self.stats.last_error = repr(error)
        log.warning("function error", extra={"error": repr(error), "records": records})

    def _dead_letter(
        self, feed: ShardFeed, batch: list[Record], condition: str, attempts: int, function_error: bool
    ) -> None:
        """Send the batch's description where Lambda's on-failure destination would (records are not included)."""
        with self._lock:
            self.stats.dead_letter_batches += 1
            self.stats.dead_letter_records += len(batch)
            if not self.mapping.on_failure_destination or self.destination is None:
                return  # Lambda discards the records silently
            letter = dead_letter(
                feed.stream_arn,
                feed.shard_id,
                batch,
                condition=condition,
                attempts=attempts,
                function_error=function_error,
                function_name=self.mapping.function_name,
                now=self.clock.now(),
            )
            self.destination(letter)

    # -- one shard in tumbling windows
    def _deliver_windows(self, feed: ShardFeed, state: _ShardState) -> int:
        """The shard window by window: each invocation carries its window's state; checkpoints move at window ends."""
        delivered = self._resume(feed, state) if state.stalled is not None else 0
        while state.stalled is None and not self.stop.is_set():
            step = self._next_window_batch(feed, state)
            if step is None:
                break
            window, records, final = step
            delivered += self._deliver_window(feed, state, window, records, final=final)
        self._finish_if_done(feed, state)
        return delivered

    def _next_window_batch(self, feed: ShardFeed, state: _ShardState) -> WindowStep | None:
        """The open window's next records (up to BatchSize, filtered) and whether they are its final invocation.

        A window opens with the first record read after the previous one ended. None: nothing to invoke yet (no
        record, or the open window waits for more records or for its end).
        """
        window = state.window
        if window is not None and window.terminated_early:
            return window, [], True  # the state outgrew 1 MB: a final invocation with it, before any more records
        due = self._gather(feed, state)
        window = self._open_window(state)
        if window is None or (not due and self._window_goes_on(state, window)):
            return None  # no record, or not a full batch yet and more of the window may come (the cheap test)
        taken = self._take(state, window.holds, window.event_bytes(feed.stream_arn, feed.shard_id))
        final = self._window_over(feed, state, window)
        if _window_lost(state):
            return None  # rewound while looking ahead: the window is read again from the checkpoint
        if (not taken or not due) and not final:  # nothing, or not a full batch yet while the window goes on
            self._put_back(state, taken)
            return None
        window.took(taken)
        return window, self._filtered(taken), final

    def _open_window(self, state: _ShardState) -> TumblingWindow | None:
        """The shard's open window; the first pending record opens one when none is (or a rewind dropped it)."""
        if state.window is None and state.pending:
            state.window = TumblingWindow.opened_by(state.pending[0], self.mapping.tumbling_window_seconds)
        return state.window

    def _window_goes_on(self, state: _ShardState, window: TumblingWindow) -> bool:
        """Whether, as far as the newest record read tells, the window goes on (records arrive in time order)."""
        newest = state.pending[-1] if state.pending else None
        in_window = newest is None or window.holds(newest)
        return in_window and not state.closed and self.clock.now() < window.end

    def _window_over(self, feed: ShardFeed, state: _ShardState, window: TumblingWindow) -> bool:
        """Whether the window has no more records to come.

        It has not while a record of it is pending. It is over when the next record belongs to a later window, when
        the shard is closed and read to the end, or when the clock is past its end and the shard's current end is
        reached (a record written from now on arrives in a later window).
        """
        if not state.pending and not state.closed:
            self._read(feed, state, self.mapping.batch_size)  # look ahead once: does the window go on?
        if state.pending:
            return not window.holds(state.pending[0])
        return state.closed or self.clock.now() >= window.end

    def _deliver_window(
        self,
        feed: ShardFeed,
        state: _ShardState,
        window: TumblingWindow,
        records: list[Record],
        *,
        final: bool,
        stalled: _Stalled | None = None,
    ) -> int:
        """Invoke until the function returns a state, or send the window so far to the failure destination.

        A failure retries the same invocation with the same input state. BisectBatchOnFunctionError does not apply:
        halves of a batch would each need the state the other one returns.
        """
        attempts, delivered = (stalled.attempts if stalled else 0), 0
        while True:
            # Expired records go to the failure destination; the window's checkpoint passes them at its end.
            records = self._expire(feed, records, attempts, checkpoint=False)
            if not records and not (final and window.delivered):
                if final:  # nothing reached the function in this window (all filtered or expired): no invocation
                    self._end_window(feed, state, window)
                return delivered
            outcome = self._invoke_window(feed, window, records, final=final)
            delivered += len(records)
            if not isinstance(outcome, _Failure):
                window.succeeded(records, outcome, final=final)
                if final:
                    self._count("windows")
                    self._end_window(feed, state, window)
                return delivered
            attempts += 1
            if 0 <= self.mapping.max_retry_attempts < attempts:
                all_records = window.delivered + records
                self._dead_letter(feed, all_records, "RetryAttemptsExhausted", attempts, outcome.function_error)
                self._end_window(feed, state, window)  # past them, and their state with them
                return delivered
            self._count("retries")
            if not self.wait:
                at = self.clock.now() + backoff_seconds(attempts)
                state.stalled = _Stalled(deque(), attempts, at, window_records=records, final=final)
                return delivered
            self.clock.sleep(backoff_seconds(attempts), self.stop)

    def _end_window(self, feed: ShardFeed, state: _ShardState, window: TumblingWindow) -> None:
        """Checkpoint at the last record the window took and drop its state.

        A window ended early (or given up on) before its time goes on: its next record opens it again, same bounds,
        with an empty state.
        """
        if window.last_sequence is not None:
            self.checkpoints.advance(feed.shard_id, window.last_sequence)
        state.window = None

    def _invoke_window(
        self, feed: ShardFeed, window: TumblingWindow, records: list[Record], *, final: bool
    ) -> dict[str, Any] | _Failure:
        """Call the function once with the window's event; the state it returned, or the failure."""
        self._count_invocation(records)
        try:
            event = window.event(feed.stream_arn, feed.shard_id, records, final=final)
            # Lambda serialises the response: one that is not JSON fails like a raised error.
            response = json.loads(json.dumps(self._call(event)))
        except Exception as error:
            self._function_error(error, len(records))
            return _Failure(0, function_error=True)
        state = response.get("state") if isinstance(response, dict) else None
        if not isinstance(state, dict):
            self.stats.last_error = "the response of a tumbling window invocation has no state"
            log.warning("response without a state", extra={"records": len(records)})
            return _Failure(0, function_error=False)
        if self.mapping.report_batch_item_failures and response.get("batchItemFailures"):
            self._count("partial_failures")  # a window cannot skip records: the whole invocation is retried
            return _Failure(0, function_error=False)
        self._count("batches")
        return state


def _stalled(state: _ShardState) -> bool:
    """Whether a batch of the shard waits for its retry (read afresh: a call may have stalled it)."""
    return state.stalled is not None


def _window_lost(state: _ShardState) -> bool:
    """Whether the open window was dropped (read afresh: a look-ahead read may have rewound the shard)."""
    return state.window is None


def backoff_seconds(attempts: int) -> float:
    return min(RETRY_BACKOFF_CAP_SECONDS, RETRY_BACKOFF_SECONDS * 2.0 ** (attempts - 1))


def _no_checkpoint(shard_id: str, sequence_number: str) -> None:
    """A lane of a parallel cut leaves the shard's checkpoint to the cut."""
