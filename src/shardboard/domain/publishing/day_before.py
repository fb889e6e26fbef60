"""The rank a day before: each head entry's rank in the same board and period kind as it stood 24 hours earlier.

Read at hour granularity from ranks checkpoints. The first head the snapshot job writes for a period in an hour (UTC)
also writes that head's ranks (its entries and spares, competition ranks) as the period's checkpoint of that hour,
expiring after two days. A head generated at ``t`` carries the checkpoint of the hour 24 hours before ``t``, of the
kind's period that contained that hour: yesterday's day board as it stood then (for ``day``), the same clock hour
yesterday as it stood at its first head (for ``hour``), the week or month a day ago (the one before once it turned),
all time a day ago. An entry absent from that checkpoint, or a checkpoint never written (no head written that hour)
or expired, gives no rank. The head keeps its own entries' ranks of the checkpoint it read (aligned with them), so
the job reads one checkpoint per period per hour (again when an id new to the head enters), writes one, and a reader
reads the head alone: docs/boards-and-periods.md, "The rank a day before". Both hours follow
from the head's ``generated_at`` (a gather sets it, a takedown's or a document's patch keeps it), so the head stores
no hour of its own: a head of the same hour as the one before it has that head's checkpoint written and its ranks
read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta

from shardboard.domain.periods import ALL, HOUR, bucket_of, parse_time
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.events import ranks_of
from shardboard.domain.publishing.head import Head

DAY_BACK = timedelta(hours=24)
# A checkpoint is read 24 hours after its hour: two days leave a late or slow job a day to spare.
CHECKPOINT_TTL = timedelta(days=2)


@dataclass(frozen=True)
class DayBack:
    """Which checkpoint a head generated at a given time reads: the kind's ``period`` that contained the moment a day
    before, and that moment's ``hour`` (an hour bucket id)."""

    period: PeriodKey
    hour: str


@dataclass(frozen=True)
class Checkpoint:
    """The ranks checkpoint a head writes: its ``ranks`` under (``period``, ``hour``), expiring at ``expires_at``."""

    period: PeriodKey
    hour: str
    ranks: Mapping[str, int]
    expires_at: int


def hour_of(generated_at: str) -> str:
    """The hour bucket a head generated at ``generated_at`` (ISO-8601) falls in."""
    return bucket_of(HOUR, parse_time(generated_at))


def day_back(period: PeriodKey, generated_at: str) -> DayBack:
    """The checkpoint a head of ``period`` generated at ``generated_at`` takes its day-before ranks from."""
    then = parse_time(generated_at) - DAY_BACK
    return DayBack(PeriodKey(period.board, period.kind, bucket_of(period.kind, then)), bucket_of(HOUR, then))


def carried(previous: Head | None, head: Head) -> Mapping[str, int] | None:
    """The day-before ranks the previous head carries when it was gathered in ``head``'s hour and held every entry
    of ``head`` (a head keeps only its own entries' ranks), else None: read the checkpoint (also for a head stored
    without them)."""
    if previous is None or previous.day_before is None or hour_of(previous.generated_at) != hour_of(head.generated_at):
        return None
    held = {row.id for row in previous.entries}
    if any(row.id not in held for row in head.entries):
        return None
    return previous.day_before


def checkpoint_of(previous: Head | None, head: Head) -> Checkpoint | None:
    """The checkpoint to write with ``head``: the competition ranks of its entries and spares (as ``previous_rank``
    reads a head), or None when a head of this period was checkpointed in this hour already."""
    hour = hour_of(head.generated_at)
    if previous is not None and hour_of(previous.generated_at) == hour:
        return None
    period = PeriodKey(head.board, head.period.get("kind", ALL), head.bucket)
    expires = int((parse_time(head.generated_at) + CHECKPOINT_TTL).timestamp())
    return Checkpoint(period, hour, {item: ranked.rank for item, ranked in ranks_of(head).items()}, expires)


def with_day_before(head: Head, ranks: Mapping[str, int]) -> Head:
    """``head`` carrying the day-before ``ranks`` (those of the checkpoint ``day_back`` names for it) of its own
    entries: the rest of the checkpoint is not stored (the head's size stays a function of its entries)."""
    return replace(head, day_before={row.id: ranks[row.id] for row in head.entries if row.id in ranks})
