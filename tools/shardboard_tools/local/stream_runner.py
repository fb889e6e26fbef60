"""Deliver the base table's stream to the aggregator as the Lambda event source mapping does.

The mapping's settings come from template.yaml (AggregatorFunction's DynamoDB event); what Lambda does with them
(batches, filters, retries, windows, parallel lanes, timeouts) is the one delivery model in
:mod:`shardboard_tools.lambda_model`. This module is what is local about it: shards read parents first through the
DynamoDB Streams API, each shard's checkpoint persisted in the state directory (a runner killed with SIGKILL resumes
where it stopped), the on-failure destination a JSON-lines file. docs/local-runtime.md tells the rules one by one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import error_code
from shardboard_tools.lambda_model.clock import Clock, WallClock
from shardboard_tools.lambda_model.context import invoke
from shardboard_tools.lambda_model.delivery import POLL_SECONDS, Page, RunStats, StreamDelivery
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.lambda_model.records import Record, iso_millis
from shardboard_tools.local.streams import lambda_record, latest_stream_arn, shards_parents_first
from shardboard_tools.template import Template, TemplateError

Handler = Callable[[dict[str, Any], Any], Any]

STATE_DIR_ENV = "SHARDBOARD_STATE_DIR"
DEFAULT_STATE_DIR = Path(".shardboard")
DEAD_LETTERS_FILE = "dead-letters.jsonl"
# One GetRecords call returns at most 1,000 records.
GET_RECORDS_LIMIT = 1000

log = logging.getLogger(__name__)


def default_state_dir() -> Path:
    """``SHARDBOARD_STATE_DIR``, else ``./.shardboard``."""
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


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
            "updatedAt": iso_millis(time.time()),
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


def handled_everything(dynamodb: Any, streams: Any, table: str, state_dir: Path) -> bool:
    """Whether the runner of ``state_dir`` has handled every record of ``table``'s stream so far, so that no batch of
    its aggregator is in flight. False when it cannot tell: a shard without a checkpoint here (a deployed stack's
    stream is read by Lambda, not by this directory's runner)."""
    arn = latest_stream_arn(dynamodb, table)
    checkpoints = CheckpointStore(state_dir / "checkpoints" / f"{table}.json")
    checkpoints.load(arn)
    for description in shards_parents_first(streams, arn):
        shard_id = description["ShardId"]
        checkpoint = checkpoints.shards.get(shard_id)
        if checkpoint is None or checkpoint.sequence_number is None:
            return False
        if checkpoint.finished:
            continue
        iterator = streams.get_shard_iterator(
            StreamArn=arn,
            ShardId=shard_id,
            ShardIteratorType="AFTER_SEQUENCE_NUMBER",
            SequenceNumber=checkpoint.sequence_number,
        ).get("ShardIterator")
        if iterator is not None and streams.get_records(ShardIterator=iterator, Limit=1).get("Records"):
            return False
    return True


# ----------------------------------------------------------------------------------------------- reading a shard
@dataclass
class StreamsShard:
    """One shard of a DynamoDB stream read with GetRecords, from its checkpoint (or the starting position)."""

    streams: Any
    stream_arn: str
    shard_id: str
    checkpoints: CheckpointStore
    starting_position: str  # for a first read without a checkpoint: TRIM_HORIZON or LATEST
    iterator: str | None = None

    def read(self, limit: int) -> Page:
        """One GetRecords call; an expired iterator goes back to the checkpoint (what was read comes again)."""
        if self.iterator is None:
            self.iterator = self._open()
        if self.iterator is None:
            return Page([], closed=True)
        try:
            response = self.streams.get_records(ShardIterator=self.iterator, Limit=min(limit, GET_RECORDS_LIMIT))
        except ClientError as error:
            if error_code(error) in ("ExpiredIteratorException", "TrimmedDataAccessException"):
                self.iterator = None  # re-open from the checkpoint on the next read
                return Page([], rewound=True)
            raise
        records = [lambda_record(r, self.stream_arn) for r in response.get("Records", [])]
        self.iterator = response.get("NextShardIterator")
        return Page(records, closed=self.iterator is None)

    def _open(self) -> str | None:
        after = self.checkpoints.get(self.shard_id).sequence_number
        kwargs: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": self.shard_id}
        if after:
            kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=after)
        else:
            kwargs["ShardIteratorType"] = self.starting_position
        try:
            return self.streams.get_shard_iterator(**kwargs).get("ShardIterator")  # type: ignore[no-any-return]
        except ClientError as error:
            if error_code(error) != "TrimmedDataAccessException":
                raise
            # The checkpoint fell off the 24-hour retention: Lambda too can only go on from the oldest record.
            kwargs = {"StreamArn": self.stream_arn, "ShardId": self.shard_id, "ShardIteratorType": "TRIM_HORIZON"}
            return self.streams.get_shard_iterator(**kwargs).get("ShardIterator")  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------------------------- the runner
@dataclass
class StreamRunner:
    """Reads ``table``'s stream and invokes ``handler`` with Lambda's events and event-source-mapping semantics.

    ``mapping`` defaults to the template's settings for AggregatorFunction; ``batch_size`` / ``max_retries``
    override it. ``state_dir`` (e.g. :func:`default_state_dir`) persists checkpoints and receives the dead-letter
    file; without it positions live in memory and dead letters only in :attr:`dead_letters`. ``clock`` is read for
    batching windows, window ends, record ages, timeouts and back-offs (a :class:`SimulatedClock` in tests).
    ``lane_handler`` makes the handler of each further ParallelizationFactor lane (its own execution environment);
    None: the lanes take turns in ``handler`` (the deployed aggregator keeps per-invocation state in a module-level
    processor: two calls at once would share it).
    """

    dynamodb: Any
    streams: Any
    table: str
    handler: Handler
    batch_size: int | None = None
    max_retries: int | None = None
    mapping: EventSourceMapping | None = None
    state_dir: Path | None = None
    dead_letters: list[dict[str, Any]] = field(default_factory=list)
    clock: Clock = field(default_factory=WallClock)
    lane_handler: Callable[[], Handler] | None = None

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
        self._stop = threading.Event()
        self.delivery = StreamDelivery(
            self.settings,
            self._call_handler,
            self.clock,
            checkpoints=self.checkpoints,
            destination=self._send_to_destination,
            partition_key=self._partition_key,
            stop=self._stop,
            environments=self.lane_handler,
        )
        self._shards: dict[str, StreamsShard] = {}
        # Shards open when the mapping first read the stream: the only ones StartingPosition LATEST applies to.
        self._initial_shards: set[str] | None = None
        self._hash_key: str | None = None

    def _call_handler(self, event: dict[str, Any], context: Any) -> Any:
        # looked up per call: the handler may be swapped between passes
        return invoke(self.handler, event, context)

    @property
    def stats(self) -> RunStats:
        return self.delivery.stats

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
            delivered += self.delivery.deliver(self._shard(arn, shard_id))
            if self._stop.is_set():
                break
        return delivered

    def drain(self, idle_passes: int = 1) -> RunStats:
        """Deliver until ``idle_passes`` passes in a row find nothing new (a previous :meth:`stop` is lifted).

        An open tumbling window is waited for: its final invocation comes when the clock passes its end.
        """
        self._stop.clear()
        quiet = 0
        while quiet < idle_passes and not self._stop.is_set():
            delivered = self.run_once()
            if delivered == 0 and self.delivery.open_windows():
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

    # -- shards
    def _shard(self, arn: str, shard_id: str) -> StreamsShard:
        shard = self._shards.get(shard_id)
        if shard is None or shard.stream_arn != arn:
            self.delivery.forget(shard_id)
            shard = StreamsShard(self.streams, arn, shard_id, self.checkpoints, self._starting_position(shard_id))
            self._shards[shard_id] = shard
        return shard

    def _open_at_start(self, shard: Record) -> bool:
        """Open when the mapping starts, and not the child of a shard it has already read (a restart)."""
        parent = self.checkpoints.shards.get(shard.get("ParentShardId") or "")
        closed = "EndingSequenceNumber" in shard.get("SequenceNumberRange", {})
        return not closed and (parent is None or (parent.sequence_number is None and not parent.finished))

    def _starting_position(self, shard_id: str) -> str:
        """StartingPosition for a shard without a checkpoint.

        LATEST applies to the shards open when the mapping started; a shard split off later (the child of a shard
        the mapping read) starts at TRIM_HORIZON, or its first records would be skipped.
        """
        if self.settings.starting_position == "LATEST" and shard_id in (self._initial_shards or set()):
            return "LATEST"
        return "TRIM_HORIZON"

    def _partition_key(self) -> str:
        """The base table's partition key attribute (Lambda routes a record to a lane by its hash)."""
        if self._hash_key is None:
            schema = self.dynamodb.describe_table(TableName=self.table)["Table"]["KeySchema"]
            self._hash_key = next(k["AttributeName"] for k in schema if k["KeyType"] == "HASH")
        return self._hash_key

    # -- the failure destination
    def _send_to_destination(self, letter: dict[str, Any]) -> None:
        """Keep the on-failure message, and append it to ``<state>/dead-letters.jsonl`` (fsynced)."""
        self.dead_letters.append(letter)
        if self.state_dir is not None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            with (self.state_dir / DEAD_LETTERS_FILE).open("a", encoding="utf-8") as out:
                out.write(json.dumps(letter, separators=(",", ":")) + "\n")
                out.flush()
                os.fsync(out.fileno())
        log.warning("batch sent to the failure destination", extra={"batch": letter["DDBStreamBatchInfo"]})


def read_dead_letters(state_dir: Path) -> list[dict[str, Any]]:
    """Every batch description in ``<state_dir>/dead-letters.jsonl`` (empty when there is none)."""
    path = state_dir / DEAD_LETTERS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
