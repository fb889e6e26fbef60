"""Deliver the base table's stream to the aggregator as the Lambda event source mapping does.

The mapping's settings come from template.yaml (AggregatorFunction's DynamoDB event): BatchSize,
MaximumBatchingWindowInSeconds, FunctionResponseTypes [ReportBatchItemFailures], BisectBatchOnFunctionError,
MaximumRetryAttempts, MaximumRecordAgeInSeconds, FilterCriteria, TumblingWindowInSeconds, the on-failure
destination. Shards are read parents first through the DynamoDB Streams API; each shard's checkpoint is persisted in
the state directory, so a runner killed with SIGKILL resumes where it stopped. docs/local-runtime.md tells the rules
one by one.

With a tumbling window (:class:`TumblingWindow`) each shard is delivered window by window: every invocation carries
the state the previous one of its window returned, the window ends with a final invocation, and the checkpoint moves
only then, so a runner killed mid-window delivers the whole window again with an empty state, as Lambda does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import error_code
from shardboard_tools.lambda_model.clock import Clock, WallClock
from shardboard_tools.local.event_filter import matches_any
from shardboard_tools.local.lambda_context import LocalContext
from shardboard_tools.local.streams import lambda_event, lambda_record, latest_stream_arn, shards_parents_first
from shardboard_tools.local.template import Template, TemplateError

Handler = Callable[[dict[str, Any], Any], Any]
Record = dict[str, Any]

STATE_DIR_ENV = "SHARDBOARD_STATE_DIR"
DEFAULT_STATE_DIR = Path(".shardboard")
DEAD_LETTERS_FILE = "dead-letters.jsonl"
# Lambda's synchronous invocation payload limit: a batch is cut before it would exceed it.
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
# One GetRecords call returns at most 1,000 records.
GET_RECORDS_LIMIT = 1000
# Lambda polls each shard four times a second.
POLL_SECONDS = 0.25
# Back-off between retries of a failing batch (doubling up to the cap): a throttled table gets room to recover.
RETRY_BACKOFF_SECONDS = 0.05
RETRY_BACKOFF_CAP_SECONDS = 2.0
# TumblingWindowInSeconds: 0 (off) to 15 minutes.
MAX_TUMBLING_WINDOW_SECONDS = 900
# A window's state above 1 MB ends the window early (isWindowTerminatedEarly).
MAX_WINDOW_STATE_BYTES = 1024 * 1024
# DynamoDB Streams keeps a record 24 hours: with MaximumRecordAgeInSeconds -1 that is how long a batch is retried.
STREAM_RETENTION_SECONDS = 24 * 3600
# ParallelizationFactor: 1 to 10 concurrent batches per shard.
MAX_PARALLELIZATION_FACTOR = 10

log = logging.getLogger(__name__)


def default_state_dir() -> Path:
    """``SHARDBOARD_STATE_DIR``, else ``./.shardboard``."""
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


# ----------------------------------------------------------------------------------------------- mapping settings
@dataclass(frozen=True)
class EventSourceMapping:
    """The stream event source settings; the defaults are Lambda's own (CreateEventSourceMapping)."""

    batch_size: int = 100
    batching_window_seconds: float = 0.0
    report_batch_item_failures: bool = False
    bisect_on_function_error: bool = False
    max_retry_attempts: int = -1  # -1: until the record expires
    max_record_age_seconds: int = -1  # -1: until the record expires (24 h on DynamoDB Streams)
    filter_patterns: tuple[dict[str, Any], ...] = ()
    starting_position: str = "TRIM_HORIZON"
    on_failure_destination: bool = False
    function_name: str = "AggregatorFunction"
    function_timeout_seconds: float = 3.0
    tumbling_window_seconds: int = 0  # 0: no window
    parallelization_factor: int = 1  # concurrent batches per shard, records of one partition key in order

    def __post_init__(self) -> None:
        if not 0 <= self.tumbling_window_seconds <= MAX_TUMBLING_WINDOW_SECONDS:
            raise ValueError(f"TumblingWindowInSeconds must be 0..{MAX_TUMBLING_WINDOW_SECONDS}")
        if not 1 <= self.parallelization_factor <= MAX_PARALLELIZATION_FACTOR:
            raise ValueError(f"ParallelizationFactor must be 1..{MAX_PARALLELIZATION_FACTOR}")

    @classmethod
    def from_template(cls, template: Template, function: str = "AggregatorFunction") -> EventSourceMapping:
        """The DynamoDB event of ``function`` in template.yaml, parameters resolved."""
        resources = template.body.get("Resources", {})
        if function not in resources:
            raise TemplateError(f"template has no resource {function}")
        properties = resources[function].get("Properties", {})
        events = [e for e in properties.get("Events", {}).values() if e.get("Type") == "DynamoDB"]
        if not events:
            raise TemplateError(f"{function} has no DynamoDB event")
        source = events[0].get("Properties", {})

        def setting(name: str, default: Any) -> Any:
            return template.resolve(source[name]) if name in source else default

        globals_timeout = template.body.get("Globals", {}).get("Function", {}).get("Timeout", 3)
        patterns = [f.get("Pattern") for f in setting("FilterCriteria", {}).get("Filters", [])]
        return cls(
            batch_size=int(setting("BatchSize", cls.batch_size)),
            batching_window_seconds=float(setting("MaximumBatchingWindowInSeconds", 0)),
            report_batch_item_failures="ReportBatchItemFailures" in setting("FunctionResponseTypes", []),
            bisect_on_function_error=_boolean(setting("BisectBatchOnFunctionError", False)),
            max_retry_attempts=int(setting("MaximumRetryAttempts", -1)),
            max_record_age_seconds=int(setting("MaximumRecordAgeInSeconds", -1)),
            filter_patterns=tuple(json.loads(p) if isinstance(p, str) else p for p in patterns if p),
            starting_position=str(setting("StartingPosition", "TRIM_HORIZON")),
            # The destination's ARN is a !GetAtt of a deployed queue; locally only its presence matters.
            on_failure_destination="OnFailure" in source.get("DestinationConfig", {}),
            function_name=function,
            function_timeout_seconds=float(template.resolve(properties.get("Timeout", globals_timeout))),
            tumbling_window_seconds=int(setting("TumblingWindowInSeconds", 0)),
            parallelization_factor=int(setting("ParallelizationFactor", 1)),
        )


def _boolean(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


# ----------------------------------------------------------------------------------------------- state on disk
@dataclass
class ShardCheckpoint:
    sequence_number: str | None = None  # last record handled (delivered, dropped by the filter or dead-lettered)
    finished: bool = False  # closed and read to the end: its children may start


class CheckpointStore:
    """Per-shard checkpoints of one table's stream, in ``<state>/checkpoints/<table>.json`` (None: memory only)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.stream_arn: str | None = None
        self.shards: dict[str, ShardCheckpoint] = {}

    def load(self, stream_arn: str) -> None:
        """Read the checkpoints of ``stream_arn``; a different (re-created) stream starts from scratch."""
        if self.stream_arn == stream_arn:
            return
        self.stream_arn, self.shards = stream_arn, {}
        if self.path is None or not self.path.exists():
            return
        stored = json.loads(self.path.read_text(encoding="utf-8"))
        if stored.get("streamArn") == stream_arn:
            self.shards = {
                shard: ShardCheckpoint(value.get("sequenceNumber"), bool(value.get("finished")))
                for shard, value in stored.get("shards", {}).items()
            }

    def get(self, shard_id: str) -> ShardCheckpoint:
        return self.shards.setdefault(shard_id, ShardCheckpoint())

    def advance(self, shard_id: str, sequence_number: str) -> None:
        self.get(shard_id).sequence_number = sequence_number
        self._save()

    def finish(self, shard_id: str) -> None:
        self.get(shard_id).finished = True
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        body = {
            "streamArn": self.stream_arn,
            "updatedAt": _iso(time.time()),
            "shards": {
                shard: {"sequenceNumber": c.sequence_number, "finished": c.finished} for shard, c in self.shards.items()
            },
        }
        write_atomically(self.path, json.dumps(body, indent=1))


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file in the same directory and rename it over ``path``: a kill leaves old or new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise


# ----------------------------------------------------------------------------------------------- the runner
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


@dataclass
class _Shard:
    shard_id: str
    iterator: str | None = None
    closed: bool = False  # GetRecords returned no NextShardIterator: nothing more will arrive
    pending: deque[Record] = field(default_factory=deque)  # read, not yet handled (Lambda-shaped)
    matching: int = 0  # pending records that pass FilterCriteria: only they fill a batch
    rewound: bool = False  # an expired iterator sent the reader back to the checkpoint (read by the window path)


class FunctionTimedOut(Exception):
    """The invocation ran over the function's Timeout: Lambda ends it, a function error."""


@dataclass
class _Failure:
    index: int  # records before it are done
    function_error: bool  # the function raised (bisect applies) rather than reporting items


@dataclass
class TumblingWindow:
    """A shard's open tumbling window: its bounds, the state the function returned, what it has taken so far.

    Windows are aligned on multiples of their length of the records' arrival time (ApproximateCreationDateTime).
    """

    start: int  # epoch seconds
    seconds: int
    state: dict[str, Any] = field(default_factory=dict)
    delivered: list[Record] = field(default_factory=list)  # records of the invocations that built ``state``
    last_sequence: str | None = None  # last record taken, filtered ones included: the checkpoint at the window's end
    terminated_early: bool = False  # the state outgrew 1 MB: the next invocation is a final one, then it reopens

    @classmethod
    def opened_by(cls, record: Record, seconds: int) -> TumblingWindow:
        return cls(window_start(record, seconds), seconds)

    @property
    def end(self) -> int:
        return self.start + self.seconds

    def holds(self, record: Record) -> bool:
        # A record stamped before the open window (clock skew) cannot reopen a closed one: it joins the open window.
        return window_start(record, self.seconds) <= self.start

    def took(self, records: Sequence[Record]) -> None:
        if records:
            self.last_sequence = records[-1]["dynamodb"]["SequenceNumber"]

    def succeeded(self, records: Sequence[Record], state: dict[str, Any], *, final: bool) -> None:
        self.delivered.extend(records)
        self.state = state
        # A state over 1 MB ends the window early; a final invocation's state is dropped anyway.
        if not final and len(json.dumps(state)) > MAX_WINDOW_STATE_BYTES:
            self.terminated_early = True

    def event(self, stream_arn: str, shard_id: str, records: list[Record], *, final: bool) -> dict[str, Any]:
        """The invocation event of a DynamoDB stream with a tumbling window."""
        return {
            **lambda_event(records),
            "window": {"start": _iso_seconds(self.start), "end": _iso_seconds(self.end)},
            # Lambda passes the state as JSON: the function never gets back the object it returned, and a retry
            # gets the same state even if the failed attempt changed its copy.
            "state": json.loads(json.dumps(self.state)),
            "shardId": shard_id,
            "eventSourceARN": stream_arn,
            "isFinalInvokeForWindow": final,
            "isWindowTerminatedEarly": final and self.terminated_early,
        }


def window_start(record: Record, seconds: int) -> int:
    """Start of the tumbling window ``record`` belongs to: its arrival, floored to a multiple of ``seconds``."""
    return int(_arrival(record) // seconds) * seconds


@dataclass
class StreamRunner:
    """Reads ``table``'s stream and invokes ``handler`` with Lambda's events and event-source-mapping semantics.

    ``mapping`` defaults to the template's settings for AggregatorFunction; ``batch_size`` / ``max_retries``
    override it. ``state_dir`` (e.g. :func:`default_state_dir`) persists checkpoints and receives the dead-letter
    file; without it positions live in memory and dead letters only in :attr:`dead_letters`. ``clock`` is read for
    batching windows, window ends, record ages, timeouts and back-offs (a :class:`SimulatedClock` in tests).
    """

    dynamodb: Any
    streams: Any
    table: str
    handler: Handler
    batch_size: int | None = None
    max_retries: int | None = None
    mapping: EventSourceMapping | None = None
    state_dir: Path | None = None
    stats: RunStats = field(default_factory=RunStats)
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    clock: Clock = field(default_factory=WallClock)

    def __post_init__(self) -> None:
        if self.mapping is None:
            try:
                self.mapping = EventSourceMapping.from_template(Template.load())
            except TemplateError:
                self.mapping = EventSourceMapping()
        if self.batch_size is not None:
            self.mapping = replace(self.mapping, batch_size=self.batch_size)
        if self.max_retries is not None:
            self.mapping = replace(self.mapping, max_retry_attempts=self.max_retries)
        self.settings: EventSourceMapping = self.mapping
        self.checkpoints = CheckpointStore(
            self.state_dir / "checkpoints" / f"{self.table}.json" if self.state_dir else None
        )
        self._shards: dict[str, _Shard] = {}
        self._windows: dict[str, TumblingWindow] = {}  # shard id -> its open window (in memory, as Lambda's state)
        self._stop = threading.Event()
        self._lock = threading.Lock()  # parallel batches of one shard share the stats and the failure destination
        # Shards open when the mapping first read the stream: the only ones StartingPosition LATEST applies to.
        self._initial_shards: set[str] | None = None
        self._partition_key: str | None = None

    @property
    def positions(self) -> dict[str, str]:
        """Shard id -> sequence number of the last record handled."""
        return {s: c.sequence_number for s, c in self.checkpoints.shards.items() if c.sequence_number}

    # -- driving
    def run_once(self) -> int:
        """One pass over every shard whose parent is done, up to its current end; returns records delivered."""
        arn = latest_stream_arn(self.dynamodb, self.table)
        self.checkpoints.load(arn)
        delivered = 0
        shards = shards_parents_first(self.streams, arn)
        known = {s["ShardId"] for s in shards}
        if self._initial_shards is None:
            self._initial_shards = {s["ShardId"] for s in shards if self._open_at_start(s)}
        for description in shards:
            shard_id, parent = description["ShardId"], description.get("ParentShardId")
            if self.checkpoints.get(shard_id).finished:
                continue
            if parent is not None and parent in known and not self.checkpoints.get(parent).finished:
                continue  # Lambda finishes a parent before it reads the child
            delivered += self._process_shard(arn, self._shards.setdefault(shard_id, _Shard(shard_id)))
            if self._stop.is_set():
                break
        return delivered

    def drain(self, idle_passes: int = 1) -> RunStats:
        """Deliver until ``idle_passes`` passes in a row find nothing new (a previous :meth:`stop` is lifted).

        An open tumbling window is waited for: its final invocation comes when the wall clock passes its end.
        """
        self._stop.clear()
        quiet = 0
        while quiet < idle_passes and not self._stop.is_set():
            delivered = self.run_once()
            if delivered == 0 and self._windows:
                self.clock.sleep(POLL_SECONDS, self._stop)
                continue
            quiet = quiet + 1 if delivered == 0 else 0
        return self.stats

    def run_forever(self, poll_seconds: float = POLL_SECONDS) -> None:
        """Follow the stream until :meth:`stop` (or Ctrl-C).

        Every pass also looks at the open tumbling windows, so a window ends on time when no record arrives.
        """
        while not self._stop.is_set():
            if self.run_once() == 0:
                self.clock.sleep(poll_seconds, self._stop)

    def stop(self) -> None:
        self._stop.set()

    def _open_at_start(self, shard: Record) -> bool:
        """Open when the mapping starts, and not the child of a shard it has already read (a restart)."""
        parent = self.checkpoints.shards.get(shard.get("ParentShardId") or "")
        closed = "EndingSequenceNumber" in shard.get("SequenceNumberRange", {})
        return not closed and (parent is None or (parent.sequence_number is None and not parent.finished))

    # -- one shard
    def _process_shard(self, arn: str, shard: _Shard) -> int:
        if self.settings.tumbling_window_seconds:
            return self._process_windows(arn, shard)
        delivered = 0
        while not self._stop.is_set():
            batch = self._next_batch(arn, shard)
            if batch is None:
                break
            records, last_sequence = batch
            if records and self.settings.parallelization_factor > 1:
                delivered += self._deliver_in_parallel(arn, shard.shard_id, records)
            elif records:
                delivered += self._deliver(arn, shard.shard_id, records)
            self.checkpoints.advance(shard.shard_id, last_sequence)
        if shard.closed and not shard.pending and not self._stop.is_set():
            self.checkpoints.finish(shard.shard_id)
        return delivered

    def _next_batch(self, arn: str, shard: _Shard) -> tuple[list[Record], str] | None:
        """Up to BatchSize matching records (waiting up to the batching window to fill it), filtered first.

        Returns the records to invoke with and the sequence number of the last record taken (filtered ones
        included), or None when the shard has nothing new.
        """
        self._gather(arn, shard)
        if not shard.pending:
            return None
        taken = self._take(shard, limit=self._cut_size())
        return self._filtered(taken), taken[-1]["dynamodb"]["SequenceNumber"]

    def _cut_size(self) -> int:
        """Matching records taken at once: a batch for each of the shard's ParallelizationFactor lanes."""
        return self.settings.batch_size * self.settings.parallelization_factor

    def _gather(self, arn: str, shard: _Shard) -> None:
        """Read until a cut's worth of matching records is pending, waiting up to the batching window for it.

        Lambda filters before it batches: records FilterCriteria drops do not count towards BatchSize.
        """
        settings, wanted = self.settings, self._cut_size()
        started = self.clock.now()
        while shard.matching < wanted and not shard.closed:
            if self._read(arn, shard, wanted - shard.matching):
                continue
            waited = self.clock.now() - started
            if not shard.pending or waited >= settings.batching_window_seconds or self._stop.is_set():
                break
            self.clock.sleep(min(POLL_SECONDS, settings.batching_window_seconds - waited))

    def _take(
        self,
        shard: _Shard,
        holds: Callable[[Record], bool] | None = None,
        size: int = 2,
        limit: int | None = None,
    ) -> list[Record]:
        """Pop pending records up to BatchSize matching ones (while ``holds`` accepts them) within the payload cap.

        Records FilterCriteria drops are popped too (the checkpoint passes them) but neither count nor weigh.
        ``size`` is the event's size without records (2: the ``{"Records": [...]}`` wrapper).
        """
        taken: list[Record] = []
        kept, limit = 0, limit or self.settings.batch_size
        while shard.pending and kept < limit:
            if holds is not None and not holds(shard.pending[0]):
                break
            if not self._matches(shard.pending[0]):
                taken.append(shard.pending.popleft())
                continue
            record_size = len(json.dumps(shard.pending[0], default=str)) + 1
            if kept and size + record_size > MAX_PAYLOAD_BYTES * self.settings.parallelization_factor:
                break
            taken.append(shard.pending.popleft())
            shard.matching -= 1
            kept += 1
            size += record_size
        return taken

    def _matches(self, record: Record) -> bool:
        patterns = self.settings.filter_patterns
        return not patterns or matches_any(patterns, record)

    def _filtered(self, taken: list[Record]) -> list[Record]:
        """``taken`` minus the records FilterCriteria drops before the function."""
        kept = [r for r in taken if self._matches(r)]
        self.stats.filtered += len(taken) - len(kept)
        return kept

    def _read(self, arn: str, shard: _Shard, wanted: int) -> bool:
        """One GetRecords call into ``shard.pending``; returns whether it brought records."""
        if shard.iterator is None:
            shard.iterator = self._iterator(arn, shard.shard_id)
        if shard.iterator is None:
            shard.closed = True
            return False
        try:
            response = self.streams.get_records(ShardIterator=shard.iterator, Limit=min(wanted, GET_RECORDS_LIMIT))
        except ClientError as error:
            if error_code(error) in ("ExpiredIteratorException", "TrimmedDataAccessException"):
                shard.iterator = None  # re-open from the checkpoint on the next read
                shard.pending.clear()
                shard.matching = 0
                shard.rewound = True
                return False
            raise
        records = [lambda_record(r, arn) for r in response.get("Records", [])]
        shard.pending.extend(records)
        shard.matching += sum(1 for r in records if self._matches(r))
        shard.iterator = response.get("NextShardIterator")
        if shard.iterator is None:
            shard.closed = True
        return bool(records)

    def _iterator(self, arn: str, shard_id: str) -> str | None:
        after = self.checkpoints.get(shard_id).sequence_number
        kwargs: dict[str, Any] = {"StreamArn": arn, "ShardId": shard_id}
        if after:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=after)
        else:
            kwargs["ShardIteratorType"] = self._starting_position(shard_id)
        try:
            return self.streams.get_shard_iterator(**kwargs).get("ShardIterator")  # type: ignore[no-any-return]
        except ClientError as error:
            if error_code(error) != "TrimmedDataAccessException":
                raise
            # The checkpoint fell off the 24-hour retention: Lambda too can only go on from the oldest record.
            kwargs = {"StreamArn": arn, "ShardId": shard_id, "ShardIteratorType": "TRIM_HORIZON"}
            return self.streams.get_shard_iterator(**kwargs).get("ShardIterator")  # type: ignore[no-any-return]

    def _starting_position(self, shard_id: str) -> str:
        """StartingPosition for a shard without a checkpoint.

        LATEST applies to the shards open when the mapping started; a shard split off later (the child of a shard
        the mapping read) starts at TRIM_HORIZON, or its first records would be skipped.
        """
        initial = self._initial_shards or set()
        if self.settings.starting_position == "LATEST" and shard_id in initial:
            return "LATEST"
        return "TRIM_HORIZON"

    # -- one batch: retries, partial failures, bisect, the failure destination
    def _deliver(self, arn: str, shard_id: str, records: list[Record], *, checkpoint: bool = True) -> int:
        """Invoke until every record of the batch succeeded or went to the failure destination.

        ``checkpoint=False``: a lane of a parallel cut, whose checkpoint moves when every lane is done.
        """
        queue: deque[list[Record]] = deque([records])
        attempts, delivered = 0, 0
        advance = self.checkpoints.advance if checkpoint else _no_checkpoint
        while queue:
            batch = self._expire(arn, shard_id, queue.popleft(), attempts, checkpoint=checkpoint)
            if not batch:
                continue
            failure = self._invoke(batch)
            delivered += len(batch)
            if failure is None:
                advance(shard_id, batch[-1]["dynamodb"]["SequenceNumber"])
                attempts = 0
                continue
            if failure.index > 0:  # records before the lowest failed one are done: Lambda checkpoints there
                advance(shard_id, batch[failure.index - 1]["dynamodb"]["SequenceNumber"])
                queue.appendleft(batch[failure.index :])
                attempts = 0
                continue
            if failure.function_error and self.settings.bisect_on_function_error and len(batch) > 1:
                half = len(batch) // 2  # splitting does not use up the retry quota
                queue.extendleft([batch[half:], batch[:half]])
                self.stats.bisections += 1
                continue
            attempts += 1
            if 0 <= self.settings.max_retry_attempts < attempts:
                self._dead_letter(
                    arn,
                    shard_id,
                    batch,
                    condition="RetryAttemptsExhausted",
                    attempts=attempts,
                    function_error=failure.function_error,
                )
                advance(shard_id, batch[-1]["dynamodb"]["SequenceNumber"])
                attempts = 0
                continue
            with self._lock:
                self.stats.retries += 1
            queue.appendleft(batch)
            self.clock.sleep(_backoff_seconds(attempts), self._stop)
        return delivered

    def _deliver_in_parallel(self, arn: str, shard_id: str, records: list[Record]) -> int:
        """ParallelizationFactor N: the cut's records go to N lanes by partition key, each lane's batches in order.

        Lanes run at once (one invocation each at a time), so records of one partition key stay in order while
        different keys overlap; the shard's checkpoint passes the cut when every lane is done, as Lambda moves it
        only past records every lane has handled.
        """
        lanes = split_by_partition_key(records, self.settings.parallelization_factor, self._partition_key_of())
        size = self.settings.batch_size

        def lane(part: list[Record]) -> int:
            batches = [part[i : i + size] for i in range(0, len(part), size)]
            return sum(self._deliver(arn, shard_id, batch, checkpoint=False) for batch in batches)

        with ThreadPoolExecutor(len(lanes), thread_name_prefix=f"lane-{shard_id}") as pool:
            return sum(pool.map(lane, lanes))

    def _partition_key_of(self) -> str:
        """The base table's partition key attribute (Lambda routes a record to a lane by its hash)."""
        if self._partition_key is None:
            schema = self.dynamodb.describe_table(TableName=self.table)["Table"]["KeySchema"]
            self._partition_key = next(k["AttributeName"] for k in schema if k["KeyType"] == "HASH")
        return self._partition_key

    def _expire(
        self, arn: str, shard_id: str, batch: list[Record], attempts: int, *, checkpoint: bool = True
    ) -> list[Record]:
        """Drop (to the failure destination) the leading records older than MaximumRecordAgeInSeconds.

        ``checkpoint=False`` leaves the checkpoint where it is (a tumbling window moves it at its end).
        """
        limit = self.settings.max_record_age_seconds
        if limit < 0:  # no limit of the mapping's own: the stream's retention is one (the records are gone)
            limit = STREAM_RETENTION_SECONDS
        now = self.clock.now()
        fresh = next((i for i, r in enumerate(batch) if now - _arrival(r) <= limit), len(batch))
        if fresh:
            self._dead_letter(
                arn, shard_id, batch[:fresh], condition="RecordAgeExceeded", attempts=attempts, function_error=False
            )
            if checkpoint:
                self.checkpoints.advance(shard_id, batch[fresh - 1]["dynamodb"]["SequenceNumber"])
        return batch[fresh:]

    def _invoke(self, batch: list[Record]) -> _Failure | None:
        """Call the function once; None when the whole batch succeeded."""
        with self._lock:
            self.stats.invocations += 1
            self.stats.records += len(batch)
            self.stats.iterator_age_seconds = max(0.0, self.clock.now() - _arrival(batch[-1]))
        try:
            response = self._call(lambda_event(batch))
        except Exception as error:  # a function error: Lambda sees an Unhandled error, whatever it was
            self._function_error(error, len(batch))
            return _Failure(0, function_error=True)
        with self._lock:
            self.stats.batches += 1
        if not self.settings.report_batch_item_failures:
            return None
        index = failed_index(batch, response)
        if index is not None:
            with self._lock:
                self.stats.partial_failures += 1
            return _Failure(index, function_error=False)
        return None

    def _call(self, event: dict[str, Any]) -> Any:
        """The function's response; an invocation that ran over the function's Timeout raises FunctionTimedOut.

        Lambda stops such an invocation and counts it as a function error; in-process it cannot be interrupted, so
        its response is discarded when it returns.
        """
        started = self.clock.now()
        response = self.handler(event, self._context())
        elapsed = self.clock.now() - started
        if elapsed > self.settings.function_timeout_seconds:
            with self._lock:
                self.stats.timeouts += 1
            raise FunctionTimedOut(f"Task timed out after {self.settings.function_timeout_seconds:.2f} seconds")
        return response

    def _function_error(self, error: Exception, records: int) -> None:
        with self._lock:
            self.stats.function_errors += 1
            self.stats.last_error = repr(error)
        log.warning("function error", extra={"error": repr(error), "records": records})

    def _context(self) -> LocalContext:
        return LocalContext(
            function_name=self.settings.function_name,
            timeout_seconds=self.settings.function_timeout_seconds,
            clock=self.clock.now,
        )

    # -- one shard in tumbling windows
    def _process_windows(self, arn: str, shard: _Shard) -> int:
        """The shard window by window: each invocation carries its window's state; checkpoints move at window ends."""
        delivered = 0
        while not self._stop.is_set():
            step = self._next_window_batch(arn, shard)
            if shard.rewound:
                # An expired iterator sent the reader back to the checkpoint, before the open window's records: the
                # window is read again from its start, so its state goes too (what Lambda does when it loses one).
                shard.rewound = False
                self._windows.pop(shard.shard_id, None)
                continue
            if step is None:
                break
            window, records, final = step
            delivered += self._deliver_window(arn, shard.shard_id, window, records, final=final)
        done = shard.closed and not shard.pending and shard.shard_id not in self._windows
        if done and not self._stop.is_set():
            self.checkpoints.finish(shard.shard_id)
        return delivered

    def _next_window_batch(self, arn: str, shard: _Shard) -> tuple[TumblingWindow, list[Record], bool] | None:
        """The open window's next records (up to BatchSize, filtered) and whether they are its final invocation.

        A window opens with the first record read after the previous one ended. None: nothing to invoke yet (no
        record, or the open window waits for more records or for its end).
        """
        window = self._windows.get(shard.shard_id)
        if window is not None and window.terminated_early:
            return window, [], True  # the state outgrew 1 MB: a final invocation with it, before any more records
        self._gather(arn, shard)
        if window is None:
            if not shard.pending:
                return None
            window = TumblingWindow.opened_by(shard.pending[0], self.settings.tumbling_window_seconds)
            self._windows[shard.shard_id] = window
        taken = self._take(shard, window.holds, len(json.dumps(window.event(arn, shard.shard_id, [], final=False))))
        final = self._window_over(arn, shard, window)
        if not taken and not final:
            return None
        window.took(taken)
        return window, self._filtered(taken), final

    def _window_over(self, arn: str, shard: _Shard, window: TumblingWindow) -> bool:
        """Whether the window has no more records to come.

        It has not while a record of it is pending. It is over when the next record belongs to a later window, when
        the shard is closed and read to the end, or when the wall clock is past its end and the shard's current end
        is reached (a record written from now on arrives in a later window).
        """
        if not shard.pending and not shard.closed:
            self._read(arn, shard, self.settings.batch_size)  # look ahead once: does the window go on?
        if shard.pending:
            return not window.holds(shard.pending[0])
        return shard.closed or self.clock.now() >= window.end

    def _deliver_window(
        self, arn: str, shard_id: str, window: TumblingWindow, records: list[Record], *, final: bool
    ) -> int:
        """Invoke until the function returns a state, or send the window so far to the failure destination.

        A failure retries the same invocation with the same input state. BisectBatchOnFunctionError does not apply:
        halves of a batch would each need the state the other one returns.
        """
        attempts, delivered = 0, 0
        while True:
            # Expired records go to the failure destination; the window's checkpoint passes them at its end.
            records = self._expire(arn, shard_id, records, attempts, checkpoint=False)
            if not records and not (final and window.delivered):
                if final:  # nothing reached the function in this window (all filtered or expired): no invocation
                    self._end_window(shard_id, window)
                return delivered
            outcome = self._invoke_window(arn, shard_id, window, records, final=final)
            delivered += len(records)
            if not isinstance(outcome, _Failure):
                window.succeeded(records, outcome, final=final)
                if final:
                    self.stats.windows += 1
                    self._end_window(shard_id, window)
                return delivered
            attempts += 1
            if 0 <= self.settings.max_retry_attempts < attempts:
                self._dead_letter(
                    arn,
                    shard_id,
                    window.delivered + records,
                    condition="RetryAttemptsExhausted",
                    attempts=attempts,
                    function_error=outcome.function_error,
                )
                self._end_window(shard_id, window)  # past them, and their state with them
                return delivered
            self.stats.retries += 1
            self.clock.sleep(_backoff_seconds(attempts), self._stop)

    def _end_window(self, shard_id: str, window: TumblingWindow) -> None:
        """Checkpoint at the last record the window took and drop its state.

        A window ended early (or given up on) before its time goes on: its next record opens it again, same bounds,
        with an empty state.
        """
        if window.last_sequence is not None:
            self.checkpoints.advance(shard_id, window.last_sequence)
        del self._windows[shard_id]

    def _invoke_window(
        self, arn: str, shard_id: str, window: TumblingWindow, records: list[Record], *, final: bool
    ) -> dict[str, Any] | _Failure:
        """Call the function once with the window's event; the state it returned, or the failure."""
        self.stats.invocations += 1
        self.stats.records += len(records)
        if records:
            self.stats.iterator_age_seconds = max(0.0, self.clock.now() - _arrival(records[-1]))
        try:
            # Lambda serialises the response: one that is not JSON fails like a raised error.
            response = json.loads(json.dumps(self._call(window.event(arn, shard_id, records, final=final))))
        except Exception as error:
            self._function_error(error, len(records))
            return _Failure(0, function_error=True)
        state = response.get("state") if isinstance(response, dict) else None
        if not isinstance(state, dict):
            self.stats.last_error = "the response of a tumbling window invocation has no state"
            log.warning("response without a state", extra={"records": len(records)})
            return _Failure(0, function_error=False)
        if self.settings.report_batch_item_failures and response.get("batchItemFailures"):
            self.stats.partial_failures += 1  # a window cannot skip records: the whole invocation is retried
            return _Failure(0, function_error=False)
        self.stats.batches += 1
        return state

    def _dead_letter(
        self, arn: str, shard_id: str, batch: list[Record], *, condition: str, attempts: int, function_error: bool
    ) -> None:
        """Send the batch's description where Lambda's on-failure destination would (records are not included)."""
        with self._lock:
            self._send_to_destination(
                arn, shard_id, batch, condition=condition, attempts=attempts, function_error=function_error
            )

    def _send_to_destination(
        self, arn: str, shard_id: str, batch: list[Record], *, condition: str, attempts: int, function_error: bool
    ) -> None:
        self.stats.dead_letter_batches += 1
        self.stats.dead_letter_records += len(batch)
        if not self.settings.on_failure_destination:
            return  # Lambda discards the records silently
        letter = dead_letter(
            arn,
            shard_id,
            batch,
            condition=condition,
            attempts=attempts,
            function_error=function_error,
            function_name=self.settings.function_name,
            now=self.clock.now(),
        )
        self.dead_letters.append(letter)
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            with (self.state_dir / DEAD_LETTERS_FILE).open("a", encoding="utf-8") as out:
                out.write(json.dumps(letter, separators=(",", ":")) + "\n")
                out.flush()
                os.fsync(out.fileno())
        log.warning("batch sent to the failure destination", extra={"batch": letter["DDBStreamBatchInfo"]})


def failed_index(batch: Sequence[Record], response: Any) -> int | None:
    """Position of the lowest failed record in a ReportBatchItemFailures response; None when all succeeded.

    Lambda's rules: a null or empty response or list is a success; an empty, null or unknown itemIdentifier fails
    the whole batch.
    """
    if not isinstance(response, Mapping):
        return None
    failures = response.get("batchItemFailures")
    if not failures:
        return None
    positions = {r["dynamodb"]["SequenceNumber"]: i for i, r in enumerate(batch)}
    indexes = []
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not identifier or identifier not in positions:
            return 0
        indexes.append(positions[identifier])
    return min(indexes)


def dead_letter(
    stream_arn: str,
    shard_id: str,
    batch: Sequence[Record],
    *,
    condition: str,
    attempts: int,
    function_error: bool,
    function_name: str,
    now: float | None = None,
) -> dict[str, Any]:
    """The JSON Lambda sends to an SQS/SNS on-failure destination for a DynamoDB stream batch.

    ``responseContext.functionError`` is present when the function raised; a batch failed through
    batchItemFailures returned normally, so it has none.
    """
    response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if function_error:
        response["functionError"] = "Unhandled"
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": LocalContext(function_name=function_name).invoked_function_arn,
            "condition": condition,
            "approximateInvokeCount": attempts,
        },
        "responseContext": response,
        "version": "1.0",
        "timestamp": _iso(time.time() if now is None else now),
        "DDBStreamBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": batch[0]["dynamodb"]["SequenceNumber"],
            "endSequenceNumber": batch[-1]["dynamodb"]["SequenceNumber"],
            "approximateArrivalOfFirstRecord": _iso(_arrival(batch[0])),
            "approximateArrivalOfLastRecord": _iso(_arrival(batch[-1])),
            "batchSize": len(batch),
            "streamArn": stream_arn,
        },
    }


def split_by_partition_key(records: Sequence[Record], lanes: int, partition_key: str) -> list[list[Record]]:
    """The non-empty lanes of ``records``: one partition key always in the same lane, in stream order."""
    parts: list[list[Record]] = [[] for _ in range(lanes)]
    for record in records:
        key = json.dumps(record["dynamodb"]["Keys"].get(partition_key), sort_keys=True)
        parts[zlib.crc32(key.encode()) % lanes].append(record)
    return [part for part in parts if part]


def _no_checkpoint(shard_id: str, sequence_number: str) -> None:
    """A lane of a parallel cut leaves the shard's checkpoint to the cut."""


def read_dead_letters(state_dir: Path) -> list[dict[str, Any]]:
    """Every batch description in ``<state_dir>/dead-letters.jsonl`` (empty when there is none)."""
    path = state_dir / DEAD_LETTERS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _arrival(record: Mapping[str, Any]) -> float:
    return float(record["dynamodb"].get("ApproximateCreationDateTime") or time.time())


def _backoff_seconds(attempts: int) -> float:
    return min(RETRY_BACKOFF_CAP_SECONDS, RETRY_BACKOFF_SECONDS * 2.0 ** (attempts - 1))


def _iso_seconds(epoch: int) -> str:
    """A window bound as Lambda writes it, e.g. 2020-12-09T07:04:00Z."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(epoch * 1000) % 1000:03d}Z"
