"""Backfill historical views (``shardboard import``): parse and validate JSON Lines, aggregate, write idempotently.

A line is ``{"id": str, "time": ISO-8601, "count": int = 1, "boards": [str] = []}``. The whole file is read and
validated first and aggregated per (item, anchor bucket of the line's own time) into absolute totals per board, so
views of any age land in their own periods. Each (item, bucket) is then ONE write: a new base counter item on an
*import write shard* holding those totals (``ViewStore.set_counters``), created only if it does not exist and
tagged with the import's identity, a hash of everything it writes. So:

- a re-run of the same import (or an interrupted one) finds its counters present and writes only the missing ones:
  nothing is counted twice, and no checkpoint is needed;
- another import lands on other counters (its own shard; on a clash of shard numbers the next one is probed) and
  never overwrites this one;
- every counter is still written once from nothing to its total and never decreases, so the aggregator, which
  applies each stream record's absolute OLD and NEW values per (anchor bucket, write shard), stays exact.

The identity is the hash of the aggregated counters, not of the bytes: the same views in another line order or
formatting are the same import. Two *different* files that overlap (the same views exported twice in two ranges)
are two imports: nothing can tell their common views apart.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from shardboard.domain import validation
from shardboard.domain.boards import GLOBAL_BOARD, BoardGate
from shardboard.domain.periods import OutOfRange, PeriodError, bucket_of, parse_time
from shardboard.domain.ports import PRESENT, TAKEN, WRITTEN, CounterImports
from shardboard.domain.retrying import retry_throttled

# Import write shards: IMPORT_SHARD_BASE + (hash + probe) % IMPORT_SHARDS, far above any writer's shard
# (0..MaxWriteShards-1), so an import never touches a counter the writers add to.
IMPORT_SHARD_BASE = 1_000_000
IMPORT_SHARDS = 1_000_000
# Shards tried per counter when another import holds the first: a clash needs two imports of one (item, bucket)
# whose hashes agree modulo a million, so a second probe is already rare.
MAX_PROBES = 16
# Throttled writes are retried with jittered back-off this many times before the import stops (a re-run resumes).
MAX_WRITE_ATTEMPTS = 8
# One counter item's SET names every board its lines named: bounded so the update expression stays far below
# DynamoDB's 4 KB expression limit.
MAX_BOARDS_PER_COUNTER = 100
FIELDS = frozenset({"id", "time", "count", "boards"})
# The earliest time accepted: before it, period bounds and TTLs are not epoch seconds.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# (item id, anchor bucket) -> per board (the global board's under GLOBAL_BOARD), the views of that bucket.
Counters = dict[tuple[str, str], dict[str, int]]


class ImportConflict(RuntimeError):
    """Every import shard probed for one counter holds another import's counter."""


@dataclass(frozen=True)
class BadLine:
    number: int  # 1-based
    reason: str

    def __str__(self) -> str:
        return f"line {self.number}: {self.reason}"


@dataclass
class Parsed:
    """A file read: its lines, its good views aggregated per (item, anchor bucket), and its bad lines."""

    lines: int = 0  # non-blank lines
    views: int = 0  # views of the good lines
    counters: Counters = field(default_factory=dict)
    bad: list[BadLine] = field(default_factory=list)
    boards: dict[str, None] = field(default_factory=dict)  # the category boards of the good lines, in file order

    @property
    def good_lines(self) -> int:
        return self.lines - len(self.bad)

    def refusal(self) -> str:
        """The one line that names the first bad line and how many there are."""
        first, count = self.bad[0], len(self.bad)
        more = f" ({count} bad lines of {self.lines})" if count > 1 else f" (1 bad line of {self.lines})"
        return f"{first}{more}; nothing imported (--skip-bad imports the good lines)"


def parse_line(text: str, anchor: str, now: datetime) -> tuple[str, str, int, tuple[str, ...]]:
    """One line as (item id, anchor bucket, count, category boards), or raise BadInput."""
    try:
        value = validation.json_value(text, "the line")
    except json.JSONDecodeError as error:
        raise validation.BadInput(f"not JSON ({error.msg})") from None
    if not isinstance(value, dict):
        raise validation.BadInput(f"expected a JSON object, got {type(value).__name__}")
    unknown = sorted(set(value) - FIELDS)
    if unknown:
        raise validation.BadInput(f"unknown field(s): {', '.join(unknown)}")
    for name in ("id", "time"):
        if name not in value:
            raise validation.BadInput(f"missing field: {name}")
    item = validation.item_id(value["id"])
    count = validation.view_count(value.get("count", 1))
    boards = validation.boards(value.get("boards"))
    return item, bucket_of(anchor, _moment(value["time"], now)), count, boards


def _moment(value: Any, now: datetime) -> datetime:
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    try:
        moment = parse_time(value)
    except OutOfRange:  # an offset moved it past year 1 or 9999: far outside 1970..now either way
        raise validation.BadInput(f"time {shown} is not from 1970 to now in UTC") from None
    except PeriodError:
        raise validation.BadInput(f"time must be an ISO-8601 date or date-time, got {shown}") from None
    if moment < EPOCH:
        raise validation.BadInput(f"time {moment.isoformat()} is before 1970")
    if moment > now:
        raise validation.BadInput(f"time {moment.isoformat()} is in the future")
    return moment


def parse_lines(
    lines: Iterable[bytes],
    anchor: str,
    now: datetime | None = None,
    on_line: Callable[[int], None] | None = None,
    refused: Mapping[str, str] | None = None,
) -> Parsed:
    """Read every line (bytes, as split on newlines; blank lines are skipped), aggregating the good ones.

    ``on_line(bytes)`` is called after each line (a progress bar's advance). A bad line adds nothing. ``refused``:
    boards the stack's Boards policy refuses, with why (``BoardGate.refusals``): a line naming one is bad.
    """
    now = now or datetime.now(UTC)
    parsed = Parsed()
    for number, raw in enumerate(lines, 1):
        if on_line:
            on_line(len(raw))
        if not raw.strip():
            continue
        parsed.lines += 1
        try:
            item, bucket, count, boards = parse_line(raw.decode("utf-8"), anchor, now)
            refusal = next((refused[board] for board in boards if board in refused), None) if refused else None
            if refusal is not None:
                raise validation.BadInput(refusal)
            counts = parsed.counters.get((item, bucket), {})
            if len(set(counts) | set(boards)) > MAX_BOARDS_PER_COUNTER + 1:
                raise validation.BadInput(
                    f"{item!r} would count on more than {MAX_BOARDS_PER_COUNTER} boards in {bucket}: split the file"
                )
        except UnicodeDecodeError:
            parsed.bad.append(BadLine(number, "not UTF-8"))
            continue
        except validation.BadInput as error:
            parsed.bad.append(BadLine(number, str(error)))
            continue
        parsed.views += count
        parsed.boards.update(dict.fromkeys(boards))
        for board in (GLOBAL_BOARD, *boards):
            counts[board] = counts.get(board, 0) + count
        parsed.counters[(item, bucket)] = counts
    return parsed


class ImportRefused(Exception):
    """A file with bad lines, imported without ``skip_bad``: nothing is imported and no board registered."""

    def __init__(self, parsed: Parsed) -> None:
        super().__init__(parsed.refusal())
        self.parsed = parsed


def prepare(
    lines: Sequence[bytes],
    anchor: str,
    gate: BoardGate | None,
    *,
    skip_bad: bool = False,
    on_line: Callable[[int], None] | None = None,
) -> Parsed:
    """Every rule of an import, checked before its first write: each line (``parse_lines``), then the Boards
    policy (``gate``; None: any board): new boards take the room left under its cap in file order, and a line
    naming a board it refuses is a bad line too. Without ``skip_bad`` any bad line raises ImportRefused; the boards
    of the lines kept are registered only once the import is known to go ahead."""
    parsed = parse_lines(lines, anchor, on_line=on_line)
    if parsed.bad and not skip_bad:
        raise ImportRefused(parsed)
    if gate is None:
        return parsed
    refused = gate.refusals(parsed.boards)
    if refused:
        parsed = parse_lines(lines, anchor, refused=refused)
        if not skip_bad:
            raise ImportRefused(parsed)
    for board in parsed.boards:
        gate.admit((board,))
    return parsed


def import_id(counters: Mapping[tuple[str, str], Mapping[str, int]]) -> str:
    """The import's identity: SHA-256 of its counters in a canonical order (hex)."""
    digest = hashlib.sha256()
    for (item, bucket), counts in sorted(counters.items()):
        digest.update(json.dumps([item, bucket, sorted(counts.items())], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def import_shard(identity: str, probe: int = 0) -> int:
    """The write shard of an import's counters (its ``probe``-th alternative on a clash)."""
    return IMPORT_SHARD_BASE + (int(identity[:6], 16) + probe) % IMPORT_SHARDS


@dataclass
class Imported:
    """What an import run did: counters created, counters found from an earlier run of the same import, units."""

    written: int = 0
    present: int = 0
    probes: int = 0  # extra shards tried because another import held one
    units: float = 0.0

    def add(self, outcome: str, units: float, probes: int) -> None:
        if outcome == WRITTEN:
            self.written += 1
        else:
            self.present += 1
        self.units += units
        self.probes += probes


def write_counter(
    store: CounterImports,
    identity: str,
    key: tuple[str, str],
    counts: Mapping[str, int],
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> tuple[str, float, int]:
    """Write one (item, bucket) counter of an import: (WRITTEN or PRESENT, write units, extra probes)."""
    item, bucket = key
    units = 0.0
    rng = rng or random.Random()
    for probe in range(MAX_PROBES):
        write = functools.partial(store.set_counters, item, import_shard(identity, probe), bucket, counts, identity)
        result = retry_throttled(
            write,
            attempts=MAX_WRITE_ATTEMPTS,
            rng=rng,
            sleep=sleep,
        )
        units += result.units
        if result.outcome != TAKEN:
            return result.outcome, units, probe
    raise ImportConflict(f"{item!r} in {bucket}: {MAX_PROBES} import shards are held by other imports")


def run_import(
    store: CounterImports,
    counters: Mapping[tuple[str, str], Mapping[str, int]],
    identity: str | None = None,
    *,
    workers: int = 1,
    on_write: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Imported:
    """Write every counter of an import (in a stable order, ``workers`` at a time). Safe to re-run after any
    failure: what was written is found PRESENT and counted once. ``on_write(outcome)`` follows each counter."""
    identity = identity or import_id(counters)
    done = Imported()
    keys = sorted(counters, key=lambda key: (key[1], key[0]))

    def one(key: tuple[str, str]) -> tuple[str, float, int]:
        return write_counter(store, identity, key, counters[key], sleep=sleep)

    if workers <= 1:
        results: Iterable[tuple[str, float, int]] = map(one, keys)
    else:
        pool = ThreadPoolExecutor(max_workers=workers)
        results = pool.map(one, keys)
    try:
        for outcome, units, probes in results:
            done.add(outcome, units, probes)
            if on_write:
                on_write(outcome)
    finally:
        if workers > 1:
            pool.shutdown(wait=True, cancel_futures=True)
    return done


def summary(parsed: Parsed, done: Imported) -> str:
    """The closing line: lines, views, counters and write units."""
    units = f"{done.units:g}" if math.isfinite(done.units) else "?"
    again = f", {done.present} already present (an earlier run of this import)" if done.present else ""
    return (
        f"imported {parsed.good_lines} line(s): {parsed.views} views into {len(parsed.counters)} (item, bucket)"
        f" counter(s); {done.written} written{again}; {units} write units"
    )


__all__ = [
    "PRESENT",
    "TAKEN",
    "WRITTEN",
    "BadLine",
    "ImportConflict",
    "ImportRefused",
    "Imported",
    "Parsed",
    "import_id",
    "import_shard",
    "parse_line",
    "parse_lines",
    "prepare",
    "run_import",
    "summary",
    "write_counter",
]
