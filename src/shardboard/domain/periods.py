"""Calendar periods in UTC: which hour, day, ISO week and month a view falls in, and all time.

A period is a kind and a bucket: ``("day", "2026-11-23")``, ``("week", "2026-W48")``, ``("month", "2026-11")``,
``("hour", "2026-11-23T14")``, ``("trending", "2026-11-23T00")`` and ``("all", "all")``. Bucket ids sort in time
order within a kind, so comparing two ids of one kind compares the periods. A week is the ISO week (Monday to Monday,
week 53 in long years). A trending period is an *epoch* of m half-lives (domain/trending.py), counted in whole
hours from 0001-01-01T00 and named by its first hour, its landmark; the functions that need its length take the
half-life (``half_life``, hours).

Times run from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z, what ``datetime`` holds in UTC: ``parse_time``
refuses a time whose offset moves it outside, and every function here either answers for every time in the range
or raises PeriodError (the last periods of 9999 have no end ``datetime`` can hold).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from shardboard.domain.trending import DEFAULT_HALF_LIFE_HOURS, TRENDING, epoch_hours, weight

ALL = "all"
HOUR, DAY, WEEK, MONTH = "hour", "day", "week", "month"
# Finest first: the finest configured kind is the one base counters are keyed by (see ``anchor_kind``). Trending
# comes last: its scores are weighted per hour, so it always comes with the hour kind (``parse_periods``).
KINDS = (HOUR, DAY, WEEK, MONTH, TRENDING)
DEFAULT_PERIODS = (DAY, WEEK, MONTH)
# The first instant there is (datetime.min in UTC): the first period of every kind starts here.
EARLIEST = datetime(1, 1, 1, tzinfo=UTC)


class PeriodError(ValueError):
    """A period kind, bucket or time that is not one we accept."""


class OutOfRange(PeriodError):
    """A time whose UTC offset moves it before 0001-01-01 or after 9999-12-31 (``datetime``'s range)."""


@dataclass(frozen=True, order=True)
class Period:
    """One calendar period: its kind, its bucket id and its UTC bounds [start, end)."""

    kind: str
    bucket: str
    start: datetime | None = None  # None for all time
    end: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        if self.kind == ALL:
            return {"kind": ALL}
        assert self.start is not None and self.end is not None
        return {"kind": self.kind, "start": iso(self.start), "end": iso(self.end)}


def iso(moment: datetime) -> str:
    """``2026-11-23T00:00:00Z``: ISO-8601 in UTC with a Z (milliseconds only when there are some)."""
    moment = moment.astimezone(UTC)
    spec = "milliseconds" if moment.microsecond else "seconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")


def parse_periods(text: str) -> tuple[str, ...]:
    """The ``Periods`` parameter (``"day,week,month"``; empty keeps all time only), finest first. ``trending``
    implies ``hour``: its weights are per hour, so base counters must be keyed by hour."""
    kinds = {part.strip().lower() for part in text.split(",") if part.strip()}
    unknown = kinds - set(KINDS)
    if unknown:
        raise PeriodError(f"unknown period kind(s) {sorted(unknown)}: choose from {', '.join(KINDS)}")
    if TRENDING in kinds:
        kinds.add(HOUR)
    return tuple(kind for kind in KINDS if kind in kinds)


def anchor_kind(periods: Iterable[str]) -> str:
    """The kind base counters are keyed by: the finest configured period, or all time when none is configured.

    Every coarser period is a union of anchor buckets, which is what lets one counter per anchor bucket feed them.
    """
    configured = set(periods)
    return next((kind for kind in KINDS if kind in configured), ALL)


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC (naive means UTC already), or PeriodError when its offset moves it outside the years
    1-9999."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except (OverflowError, ValueError):
        raise OutOfRange(f"{moment.isoformat()} is outside 0001-01-01..9999-12-31 in UTC") from None


def start_of(kind: str, moment: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> datetime:
    """The start of the ``kind`` period that ``moment`` falls in (UTC). Every period starts within the range:
    0001-01-01 is a Monday, the first day of an ISO week, and the landmark of the first epoch."""
    moment = utc(moment)
    if kind == HOUR:
        return moment.replace(minute=0, second=0, microsecond=0)
    if kind == TRENDING:
        epoch = timedelta(hours=epoch_hours(half_life))
        return EARLIEST + (moment - EARLIEST) // epoch * epoch
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if kind == DAY:
        return day
    if kind == WEEK:
        return day - timedelta(days=day.weekday())
    if kind == MONTH:
        return day.replace(day=1)
    raise PeriodError(f"{kind!r} has no start")


def end_of(kind: str, start: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> datetime:
    """The end (exclusive) of the ``kind`` period starting at ``start``; PeriodError for a last period of 9999,
    whose end is past what ``datetime`` holds."""
    try:
        if kind == HOUR:
            return start + timedelta(hours=1)
        if kind == TRENDING:
            return start + timedelta(hours=epoch_hours(half_life))
        if kind == DAY:
            return start + timedelta(days=1)
        if kind == WEEK:
            return start + timedelta(days=7)
        if kind == MONTH:
            return (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    except OverflowError:
        raise PeriodError(f"the {kind} starting {iso(start)} ends after 9999-12-31") from None
    raise PeriodError(f"{kind!r} has no end")


def bucket_of(kind: str, moment: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> str:
    """The bucket id of the ``kind`` period that ``moment`` falls in."""
    if kind == ALL:
        return ALL
    start = start_of(kind, moment, half_life=half_life)
    # Formatted by hand: strftime's %Y writes year 1 as "1" on Linux, which neither parses back nor sorts.
    if kind in (HOUR, TRENDING):
        return f"{start.year:04d}-{start.month:02d}-{start.day:02d}T{start.hour:02d}"
    if kind == DAY:
        return f"{start.year:04d}-{start.month:02d}-{start.day:02d}"
    if kind == WEEK:
        year, week, _ = start.isocalendar()
        return f"{year:04d}-W{week:02d}"
    return f"{start.year:04d}-{start.month:02d}"


def period_of(kind: str, moment: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> Period:
    """The ``kind`` period ``moment`` falls in, with its bounds (PeriodError for a last period of 9999)."""
    if kind == ALL:
        return Period(ALL, ALL)
    start = start_of(kind, moment, half_life=half_life)
    return Period(kind, bucket_of(kind, start, half_life=half_life), start, end_of(kind, start, half_life=half_life))


def period_from_bucket(kind: str, bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> Period:
    """The period a bucket id names (the inverse of ``bucket_of``)."""
    return period_of(kind, bucket_start(kind, bucket), half_life=half_life)


def bucket_start(kind: str, bucket: str) -> datetime:
    """When the period a bucket id names starts (a trending id is its landmark hour, whatever the half-life)."""
    try:
        if kind in (HOUR, TRENDING):
            return datetime.strptime(bucket, "%Y-%m-%dT%H").replace(tzinfo=UTC)
        if kind == DAY:
            return datetime.strptime(bucket, "%Y-%m-%d").replace(tzinfo=UTC)
        if kind == WEEK:
            year, week = bucket.split("-W")
            return datetime.combine(date.fromisocalendar(int(year), int(week), 1), datetime.min.time(), UTC)
        if kind == MONTH:
            return datetime.strptime(bucket, "%Y-%m").replace(tzinfo=UTC)
    except ValueError as error:
        raise PeriodError(f"{bucket!r} is not a {kind} bucket") from error
    raise PeriodError(f"{kind!r} has no buckets")


@functools.lru_cache(maxsize=4096)  # the aggregator checks every record's bucket; a batch has a handful of them
def is_bucket(kind: str, bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> bool:
    """Whether ``bucket`` is a bucket id of ``kind`` as ``bucket_of`` writes it."""
    if kind == ALL:
        return bucket == ALL
    try:
        return bucket_of(kind, bucket_start(kind, bucket), half_life=half_life) == bucket
    except PeriodError:
        return False


def next_bucket(kind: str, bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> str:
    """The bucket of ``kind`` just after ``bucket`` (PeriodError past 9999; all time: itself)."""
    if kind == ALL:
        return ALL
    end = end_of(kind, bucket_start(kind, bucket), half_life=half_life)
    return bucket_of(kind, end, half_life=half_life)


@functools.lru_cache(maxsize=4096)
def previous_bucket(kind: str, bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> str:
    """The bucket of ``kind`` just before ``bucket`` (all time has none before it: itself)."""
    if kind == ALL:
        return ALL
    return bucket_of(kind, bucket_start(kind, bucket) - timedelta(seconds=1), half_life=half_life)


@functools.lru_cache(maxsize=65_536)  # a handful of distinct buckets per batch, looked up for every item
def coarser_bucket(kind: str, anchor: str, anchor_bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> str:
    """The ``kind`` bucket containing the anchor bucket ``anchor_bucket`` (all time contains everything)."""
    if kind in (ALL, anchor):
        return ALL if kind == ALL else anchor_bucket
    return bucket_of(kind, bucket_start(anchor, anchor_bucket), half_life=half_life)


@functools.lru_cache(maxsize=65_536)
def weight_of(kind: str, anchor: str, anchor_bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> int:
    """What one view of the anchor bucket ``anchor_bucket`` adds to its ``kind`` period's count: 1, except for
    trending, whose count is a score: W(k) for the anchor hour k hours after its epoch's landmark."""
    if kind != TRENDING:
        return 1
    if anchor != HOUR:
        raise PeriodError("trending needs base counters keyed by hour")
    hour = bucket_start(HOUR, anchor_bucket)
    return weight((hour - start_of(TRENDING, hour, half_life=half_life)) // timedelta(hours=1), half_life)


def parse_time(text: str) -> datetime:
    """An ISO-8601 date or date-time (``2026-11-23``, ``2026-11-23T14:05:00Z``, an offset); naive means UTC."""
    if not isinstance(text, str) or not text.strip():
        raise PeriodError("a time must be an ISO-8601 date or date-time")
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as error:
        raise PeriodError(f"{text!r} is not an ISO-8601 date or date-time") from error
    return utc(moment)


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def expires_at(kind: str, bucket: str, retention: int, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> int | None:
    """When a past period's snapshot and entries may go (epoch seconds for DynamoDB's TTL): ``retention`` periods
    of its kind after its end. All time never expires."""
    if kind == ALL:
        return None
    start = bucket_start(kind, bucket)
    try:
        end = end_of(kind, start, half_life=half_life)
        if kind == MONTH:
            months = end.month - 1 + retention
            end = end.replace(year=end.year + months // 12, month=months % 12 + 1)
        elif kind == TRENDING:
            end += timedelta(hours=epoch_hours(half_life)) * retention
        else:
            end += {HOUR: timedelta(hours=1), DAY: timedelta(days=1), WEEK: timedelta(days=7)}[kind] * retention
    except (PeriodError, OverflowError, ValueError):
        # Past 9999-12-31 is never: no TTL, rather than a period whose counts cannot be written.
        return None
    return int(end.timestamp())


def retained_buckets(
    kind: str, moment: datetime, retention: int, *, half_life: int = DEFAULT_HALF_LIFE_HOURS
) -> list[str]:
    """The bucket of ``kind`` containing ``moment`` and the ``retention`` before it, newest first (the periods
    whose snapshots may still be read)."""
    found = []
    start = start_of(kind, moment, half_life=half_life)
    for _ in range(retention + 1):
        found.append(bucket_of(kind, start, half_life=half_life))
        if start == EARLIEST:  # the first period of year 1 has none before it
            break
        start = start_of(kind, start - timedelta(microseconds=1), half_life=half_life)
    return found
