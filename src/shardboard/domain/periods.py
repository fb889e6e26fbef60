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
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

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
        return kind_of(self.kind).as_json(self)


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


T = TypeVar("T")


class PeriodKind:
    """One kind of period, by its stored name: its buckets and their bounds, how long a past one is kept and what a
    view adds to its count. The only place that tells kinds apart: elsewhere a kind is its name, and code asks the
    kind (``kind_of(name)``) rather than comparing the name."""

    name: str

    def start_of(self, moment: datetime, half_life: int) -> datetime:
        raise PeriodError(f"{self.name!r} has no start")

    def end_of(self, start: datetime, half_life: int) -> datetime:
        raise PeriodError(f"{self.name!r} has no end")

    def bucket_start(self, bucket: str) -> datetime:
        raise PeriodError(f"{self.name!r} has no buckets")

    def bucket_of(self, moment: datetime, half_life: int) -> str:
        raise PeriodError(f"{self.name!r} has no buckets")

    def period_of(self, moment: datetime, half_life: int) -> Period:
        raise PeriodError(f"{self.name!r} has no buckets")

    def period_from_bucket(self, bucket: str, half_life: int) -> Period:
        raise PeriodError(f"{self.name!r} has no buckets")

    def is_bucket(self, bucket: str, half_life: int) -> bool:
        raise PeriodError(f"{self.name!r} has no buckets")

    def next_bucket(self, bucket: str, half_life: int) -> str:
        raise PeriodError(f"{self.name!r} has no buckets")

    def previous_bucket(self, bucket: str, half_life: int) -> str:
        raise PeriodError(f"{self.name!r} has no buckets")

    def within(self, anchor: str, anchor_bucket: str, half_life: int) -> str:
        """The bucket of this kind containing the bucket ``anchor_bucket`` of the (finer) kind ``anchor``."""
        raise PeriodError(f"{self.name!r} has no buckets")

    def expires_at(self, bucket: str, retention: int, half_life: int) -> int | None:
        raise PeriodError(f"{self.name!r} has no buckets")

    def weight(self, anchor: str, anchor_bucket: str, half_life: int) -> int:
        """What one view of the anchor bucket ``anchor_bucket`` adds to this kind's count: 1, a view."""
        return 1

    @property
    def decays(self) -> bool:
        """Whether a count of this kind is a decaying score (trending's), not views: a view's weight depends on
        its hour, a head ranks by it plus the previous period's carried, and shows it as views now."""
        return False

    def as_json(self, period: Period) -> dict[str, Any]:
        raise PeriodError(f"{self.name!r} has no buckets")

    def ended(self, now: datetime, lookback: timedelta, half_life: int) -> str | None:
        """The bucket of this kind that ended less than ``lookback`` before ``now`` (None: none did)."""
        raise PeriodError(f"{self.name!r} has no buckets")

    def named(self, prefix: str, all_time: str) -> str:
        """A stored name of this kind (an attribute, an index): ``prefix`` and the kind's name, except all time's,
        which keeps the names of the releases before periods."""
        return f"{prefix}{self.name}"

    def key(self, board: str, bucket: str) -> str:
        """What a period's stored keys carry for it: ``cats#day#2026-11-23``; all time, the board alone."""
        return f"{board}#{self.name}#{bucket}"

    def labelled(self, bucket: str) -> str:
        """How a period of this kind is shown to an operator: ``day 2026-11-23``, ``all time``."""
        return f"{self.name} {bucket}"

    def pick(self, *, all_time: T, period: T) -> T:
        """``period`` for a kind whose periods end, ``all_time`` for the one that never does (what differs between
        them is not the kind's to know: a reader's message, a storage tier)."""
        return period


class AllTime(PeriodKind):
    """All time: one bucket for ever, never expires, counted in the aggregate's all-time views."""

    name = ALL

    def bucket_of(self, moment: datetime, half_life: int) -> str:
        return ALL

    def period_of(self, moment: datetime, half_life: int) -> Period:
        return Period(ALL, ALL)

    def period_from_bucket(self, bucket: str, half_life: int) -> Period:
        return Period(ALL, ALL)

    def is_bucket(self, bucket: str, half_life: int) -> bool:
        return bucket == ALL

    def next_bucket(self, bucket: str, half_life: int) -> str:
        return ALL

    def previous_bucket(self, bucket: str, half_life: int) -> str:
        return ALL

    def within(self, anchor: str, anchor_bucket: str, half_life: int) -> str:
        return ALL

    def expires_at(self, bucket: str, retention: int, half_life: int) -> int | None:
        return None

    def as_json(self, period: Period) -> dict[str, Any]:
        return {"kind": ALL}

    def ended(self, now: datetime, lookback: timedelta, half_life: int) -> str | None:
        return None

    def named(self, prefix: str, all_time: str) -> str:
        return all_time

    def key(self, board: str, bucket: str) -> str:
        return board

    def labelled(self, bucket: str) -> str:
        return "all time"

    def pick(self, *, all_time: T, period: T) -> T:
        return all_time


class Calendar(PeriodKind, ABC):
    """A kind whose periods follow each other: a bucket id is the period's start, formatted (``format``), so ids
    sort in time order."""

    # strptime's format of a bucket id (a week's is parsed by hand).
    pattern = "%Y-%m-%dT%H"

    @abstractmethod
    def floor(self, moment: datetime, half_life: int) -> datetime:
        """The start of the period ``moment`` (UTC) falls in."""

    @abstractmethod
    def after(self, start: datetime, periods: int, half_life: int) -> datetime:
        """The start of the period ``periods`` periods after the one starting at ``start``."""

    def format(self, start: datetime) -> str:
        # Formatted by hand: strftime's %Y writes year 1 as "1" on Linux, which neither parses back nor sorts.
        return f"{start.year:04d}-{start.month:02d}-{start.day:02d}T{start.hour:02d}"

    def start_of(self, moment: datetime, half_life: int) -> datetime:
        return self.floor(utc(moment), half_life)

    def end_of(self, start: datetime, half_life: int) -> datetime:
        try:
            return self.after(start, 1, half_life)
        except (OverflowError, ValueError):
            raise PeriodError(f"the {self.name} starting {iso(start)} ends after 9999-12-31") from None

    def bucket_of(self, moment: datetime, half_life: int) -> str:
        return self.format(self.start_of(moment, half_life))

    def bucket_start(self, bucket: str) -> datetime:
        try:
            return datetime.strptime(bucket, self.pattern).replace(tzinfo=UTC)
        except ValueError as error:
            raise PeriodError(f"{bucket!r} is not a {self.name} bucket") from error

    def period_of(self, moment: datetime, half_life: int) -> Period:
        start = self.start_of(moment, half_life)
        return Period(self.name, self.format(start), start, self.end_of(start, half_life))

    def period_from_bucket(self, bucket: str, half_life: int) -> Period:
        return self.period_of(self.bucket_start(bucket), half_life)

    def is_bucket(self, bucket: str, half_life: int) -> bool:
        try:
            return self.bucket_of(self.bucket_start(bucket), half_life) == bucket
        except PeriodError:
            return False

    def next_bucket(self, bucket: str, half_life: int) -> str:
        return self.bucket_of(self.end_of(self.bucket_start(bucket), half_life), half_life)

    def previous_bucket(self, bucket: str, half_life: int) -> str:
        return self.bucket_of(self.bucket_start(bucket) - timedelta(seconds=1), half_life)

    def within(self, anchor: str, anchor_bucket: str, half_life: int) -> str:
        if anchor == self.name:
            return anchor_bucket
        return self.bucket_of(kind_of(anchor).bucket_start(anchor_bucket), half_life)

    def expires_at(self, bucket: str, retention: int, half_life: int) -> int | None:
        start = self.bucket_start(bucket)
        try:
            end = self.after(start, 1 + retention, half_life)
        except (OverflowError, ValueError):
            # Past 9999-12-31 is never: no TTL, rather than a period whose counts cannot be written.
            return None
        return int(end.timestamp())

    def as_json(self, period: Period) -> dict[str, Any]:
        assert period.start is not None and period.end is not None
        return {"kind": self.name, "start": iso(period.start), "end": iso(period.end)}

    def ended(self, now: datetime, lookback: timedelta, half_life: int) -> str | None:
        start = self.start_of(now, half_life)
        return self.bucket_of(start - timedelta(microseconds=1), half_life) if now - start < lookback else None


class Hour(Calendar):
    name = HOUR

    def floor(self, moment: datetime, half_life: int) -> datetime:
        return moment.replace(minute=0, second=0, microsecond=0)

    def after(self, start: datetime, periods: int, half_life: int) -> datetime:
        return start + timedelta(hours=periods)


class Day(Calendar):
    name = DAY
    pattern = "%Y-%m-%d"

    def floor(self, moment: datetime, half_life: int) -> datetime:
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)

    def after(self, start: datetime, periods: int, half_life: int) -> datetime:
        return start + timedelta(days=periods)

    def format(self, start: datetime) -> str:
        return f"{start.year:04d}-{start.month:02d}-{start.day:02d}"


class Week(Day):
    """The ISO week, Monday to Monday (0001-01-01 is a Monday), named ``2026-W48``."""

    name = WEEK

    def floor(self, moment: datetime, half_life: int) -> datetime:
        day = super().floor(moment, half_life)
        return day - timedelta(days=day.weekday())

    def after(self, start: datetime, periods: int, half_life: int) -> datetime:
        return start + timedelta(days=7 * periods)

    def format(self, start: datetime) -> str:
        year, week, _ = start.isocalendar()
        return f"{year:04d}-W{week:02d}"

    def bucket_start(self, bucket: str) -> datetime:
        try:
            year, week = bucket.split("-W")
            return datetime.combine(date.fromisocalendar(int(year), int(week), 1), datetime.min.time(), UTC)
        except ValueError as error:
            raise PeriodError(f"{bucket!r} is not a {self.name} bucket") from error


class Month(Day):
    name = MONTH
    pattern = "%Y-%m"

    def floor(self, moment: datetime, half_life: int) -> datetime:
        return super().floor(moment, half_life).replace(day=1)

    def after(self, start: datetime, periods: int, half_life: int) -> datetime:
        months = start.month - 1 + periods
        return start.replace(year=start.year + months // 12, month=months % 12 + 1)

    def format(self, start: datetime) -> str:
        return f"{start.year:04d}-{start.month:02d}"


class Trending(Hour):
    """Trending's epochs of m half-lives (domain/trending.py), counted in whole hours from 0001-01-01T00 and named by
    their landmark hour; a view adds its hour's weight, not 1."""

    name = TRENDING

    @property
    def decays(self) -> bool:
        return True

    def floor(self, moment: datetime, half_life: int) -> datetime:
        epoch = timedelta(hours=epoch_hours(half_life))
        return EARLIEST + (moment - EARLIEST) // epoch * epoch

    def after(self, start: datetime, periods: int, half_life: int) -> datetime:
        return start + timedelta(hours=epoch_hours(half_life)) * periods

    def weight(self, anchor: str, anchor_bucket: str, half_life: int) -> int:
        """W(k) for the anchor hour k hours after its epoch's landmark."""
        if anchor != HOUR:
            raise PeriodError("trending needs base counters keyed by hour")
        hour = HOURLY.bucket_start(anchor_bucket)
        return weight((hour - self.start_of(hour, half_life)) // timedelta(hours=1), half_life)


class Windowed(PeriodKind):
    """A rolling window's name (``24h``) as a period's kind: a head per hour, read as a sum of hour periods
    (domain/windows.py); it has no buckets of its own."""

    def __init__(self, name: str) -> None:
        self.name = name


HOURLY = Hour()
# ``24h``, ``7d``: at most 90 days, so a window's hours stay a few thousand and a retention of them stays cheap.
WINDOW_NAME = re.compile(r"([1-9][0-9]{0,3})([hd])")
_BY_NAME: dict[str, PeriodKind] = {kind.name: kind for kind in (AllTime(), HOURLY, Day(), Week(), Month(), Trending())}


@functools.lru_cache(maxsize=256)
def kind_of(name: str) -> PeriodKind:
    """The period kind stored as ``name``, a window's included (PeriodError for a name that is none)."""
    if WINDOW_NAME.fullmatch(name):
        return Windowed(name)
    return _kind(name, "is not a period kind")


def known_kind(name: str) -> PeriodKind | None:
    """The counted kind stored as ``name`` (all time, a calendar kind, trending); None for any other name (a
    window's, a visitor's typo)."""
    return _BY_NAME.get(name)


def _kind(name: str, missing: str) -> PeriodKind:
    found = _BY_NAME.get(name)
    if found is None:
        raise PeriodError(f"{name!r} {missing}")
    return found


def start_of(kind: str, moment: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> datetime:
    """The start of the ``kind`` period that ``moment`` falls in (UTC). Every period starts within the range:
    0001-01-01 is a Monday, the first day of an ISO week, and the landmark of the first epoch."""
    return _kind(kind, "has no start").start_of(moment, half_life)


def end_of(kind: str, start: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> datetime:
    """The end (exclusive) of the ``kind`` period starting at ``start``; PeriodError for a last period of 9999,
    whose end is past what ``datetime`` holds."""
    return _kind(kind, "has no end").end_of(start, half_life)


def bucket_of(kind: str, moment: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> str:
    """The bucket id of the ``kind`` period that ``moment`` falls in."""
    return _kind(kind, "has no start").bucket_of(moment, half_life)


def period_of(kind: str, moment: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> Period:
    """The ``kind`` period ``moment`` falls in, with its bounds (PeriodError for a last period of 9999)."""
    return _kind(kind, "has no start").period_of(moment, half_life)


def period_from_bucket(kind: str, bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> Period:
    """The period a bucket id names (the inverse of ``bucket_of``)."""
    return _kind(kind, "has no buckets").period_from_bucket(bucket, half_life)


def bucket_start(kind: str, bucket: str) -> datetime:
    """When the period a bucket id names starts (a trending id is its landmark hour, whatever the half-life)."""
    return _kind(kind, "has no buckets").bucket_start(bucket)


@functools.lru_cache(maxsize=4096)  # the aggregator checks every record's bucket; a batch has a handful of them
def is_bucket(kind: str, bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> bool:
    """Whether ``bucket`` is a bucket id of ``kind`` as ``bucket_of`` writes it."""
    found = _BY_NAME.get(kind)
    return found is not None and found.is_bucket(bucket, half_life)


def next_bucket(kind: str, bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> str:
    """The bucket of ``kind`` just after ``bucket`` (PeriodError past 9999; all time: itself)."""
    return _kind(kind, "has no buckets").next_bucket(bucket, half_life)


@functools.lru_cache(maxsize=4096)
def previous_bucket(kind: str, bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> str:
    """The bucket of ``kind`` just before ``bucket`` (all time has none before it: itself)."""
    return _kind(kind, "has no buckets").previous_bucket(bucket, half_life)


@functools.lru_cache(maxsize=65_536)  # a handful of distinct buckets per batch, looked up for every item
def coarser_bucket(kind: str, anchor: str, anchor_bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> str:
    """The ``kind`` bucket containing the anchor bucket ``anchor_bucket`` (all time contains everything)."""
    return _kind(kind, "has no buckets").within(anchor, anchor_bucket, half_life)


@functools.lru_cache(maxsize=65_536)
def weight_of(kind: str, anchor: str, anchor_bucket: str, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> int:
    """What one view of the anchor bucket ``anchor_bucket`` adds to its ``kind`` period's count: 1, except for
    trending, whose count is a score: W(k) for the anchor hour k hours after its epoch's landmark."""
    return kind_of(kind).weight(anchor, anchor_bucket, half_life)


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
    return _kind(kind, "has no buckets").expires_at(bucket, retention, half_life)


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
