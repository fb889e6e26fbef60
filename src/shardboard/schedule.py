"""The interval of an EventBridge schedule expression: ``rate(5 minutes)`` or ``cron(min hour dom month dow year)``.

It sets the refresh interval readers are told (Cache-Control max-age) and the local scheduler's tick, so a ``cron``
schedule gets the smallest interval between two consecutive firings: a cache never keeps a snapshot longer than the
next refresh. The grammar is EventBridge's (docs: "Schedule expressions for rules"): six fields, ``? L W #`` in the
day fields, names in month and day-of-week, day-of-week 1-7 = SUN-SAT, and exactly one day field is ``?``.
No library parses that grammar (``?``, year field, 1-based weekdays), hence this small parser.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from datetime import date
from functools import cache
from itertools import pairwise

_RATE = re.compile(r"rate\(([0-9]+) (minute|minutes|hour|hours|day|days)\)")
_CRON = re.compile(r"cron\(([^()]*)\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_MONTHS = {name.upper(): number for number, name in enumerate(calendar.month_abbr) if name}
_WEEKDAYS = {name: number for number, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}
# Weekday patterns repeat every 28 years between 1901 and 2099; one more year catches the turn of the cycle.
_ANY_YEAR = range(2001, 2030)
_YEARS = (1970, 2199)


class ScheduleError(ValueError):
    """A schedule expression EventBridge would refuse, or one that does not repeat."""


@cache
def interval_seconds(expression: str) -> int:
    """Smallest number of seconds between two consecutive firings of ``expression``; ScheduleError if malformed."""
    text = expression.strip()
    if rate := _RATE.fullmatch(text):
        return _rate_seconds(int(rate.group(1)), rate.group(2))
    if cron := _CRON.fullmatch(text):
        return _cron_seconds(cron.group(1).split())
    raise ScheduleError("expected rate(N unit) or cron(minutes hours day-of-month month day-of-week year)")


def _rate_seconds(value: int, unit: str) -> int:
    # EventBridge's own rule: "1 minute" but "5 minutes", and never 0.
    if value < 1 or (value == 1) != (not unit.endswith("s")):
        raise ScheduleError(f"rate needs a positive value, singular unit for 1 and plural otherwise: {value} {unit}")
    return value * _UNIT_SECONDS[unit.rstrip("s")]


def _cron_seconds(fields: list[str]) -> int:
    if len(fields) != 6:
        raise ScheduleError(
            f"cron needs 6 fields (minutes hours day-of-month month day-of-week year), got {len(fields)}"
        )
    minutes, hours, day_of_month, month, day_of_week, year = fields
    if (day_of_month == "?") == (day_of_week == "?"):
        raise ScheduleError("cron needs ? in exactly one of day-of-month and day-of-week")
    times = sorted(h * 60 + m for h in _values(hours, 0, 23, "hours") for m in _values(minutes, 0, 59, "minutes"))
    years = _ANY_YEAR if year == "*" else sorted(_values(year, *_YEARS, "year"))
    months = _values(month, 1, 12, "month", _MONTHS)
    days = list(_firing_days(years, months, day_of_month, day_of_week))
    if not days:
        raise ScheduleError("cron never fires: no day matches its day, month and year fields")
    # Within a day, from one time to the next; across days, from the last time of one to the first of the next.
    gaps = [later - earlier for earlier, later in pairwise(times)]
    gaps += [(later - earlier) * 1440 + times[0] - times[-1] for earlier, later in pairwise(days)]
    if not gaps:
        raise ScheduleError("cron fires only once: a snapshot schedule must repeat")
    return min(gaps) * 60


def _firing_days(years: range | list[int], months: set[int], day_of_month: str, day_of_week: str) -> Iterator[int]:
    """Ordinals of the days the day fields select, in order."""
    for year in years:
        for month in sorted(months):
            length = calendar.monthrange(year, month)[1]
            if day_of_week == "?":
                selected = _month_days(day_of_month, year, month, length)
            else:
                selected = _week_days(day_of_week, year, month, length)
            yield from (date(year, month, day).toordinal() for day in sorted(selected))


def _month_days(field: str, year: int, month: int, length: int) -> set[int]:
    days: set[int] = set()
    for part in field.split(","):
        if part == "L":
            days.add(length)
        elif part == "LW":
            days.add(_nearest_weekday(year, month, length, length))
        elif part.endswith("W") and part[:-1].isdecimal():
            days.add(_nearest_weekday(year, month, _number(part[:-1], 1, 31, "day-of-month"), length))
        else:
            days |= {day for day in _values(part, 1, 31, "day-of-month") if day <= length}
    return days


def _week_days(field: str, year: int, month: int, length: int) -> set[int]:
    def weekday(day: int) -> int:  # EventBridge's 1 (SUN) .. 7 (SAT)
        return (date(year, month, day).weekday() + 1) % 7 + 1

    days: set[int] = set()
    for part in field.split(","):
        if "#" in part:  # 3#2: the second Tuesday
            name, _, nth = part.partition("#")
            wanted, n = _number(name, 1, 7, "day-of-week", _WEEKDAYS), _number(nth, 1, 5, "day-of-week #")
            matching = [day for day in range(1, length + 1) if weekday(day) == wanted]
            days |= set(matching[n - 1 : n])
        elif part.endswith("L") and len(part) > 1:  # 6L: the last Friday
            wanted = _number(part[:-1], 1, 7, "day-of-week", _WEEKDAYS)
            days.add(max(day for day in range(1, length + 1) if weekday(day) == wanted))
        else:
            wanted_days = {7} if part == "L" else _values(part, 1, 7, "day-of-week", _WEEKDAYS)
            days |= {day for day in range(1, length + 1) if weekday(day) in wanted_days}
    return days


def _nearest_weekday(year: int, month: int, day: int, length: int) -> int:
    """The weekday (Mon-Fri) nearest ``day`` within its month (EventBridge's ``W``)."""
    day = min(day, length)
    weekday = date(year, month, day).weekday()  # 5 Saturday, 6 Sunday
    if weekday == 5:
        return day - 1 if day > 1 else day + 2
    if weekday == 6:
        return day + 1 if day < length else day - 2
    return day


def _values(field: str, low: int, high: int, name: str, names: dict[str, int] | None = None) -> set[int]:
    """The numbers a field selects: ``*``, ``5``, ``MON``, ``1-5``, ``0/5``, ``*/10``, ``8-18/2``, lists of them."""
    selected: set[int] = set()
    for part in field.split(","):
        span, slash, step_text = part.partition("/")
        step = _number(step_text, 1, high - low + 1 if high > low else 1, f"{name} step") if slash else 1
        if span == "*":
            first, last = low, high
        elif "-" in span:
            start, _, end = span.partition("-")
            first, last = _number(start, low, high, name, names), _number(end, low, high, name, names)
        else:
            first = _number(span, low, high, name, names)
            last = high if slash else first
        # A range may wrap (FRI-MON, 22-2), as in the Quartz grammar EventBridge follows.
        ordered = range(first, last + 1) if first <= last else [*range(first, high + 1), *range(low, last + 1)]
        selected |= set(list(ordered)[::step])
    return selected


def _number(text: str, low: int, high: int, name: str, names: dict[str, int] | None = None) -> int:
    if names and text.upper() in names:
        return names[text.upper()]
    if not (text.isascii() and text.isdecimal()) or not low <= int(text) <= high:
        raise ScheduleError(f"cron {name} must be from {low} to {high}, got {text!r}")
    return int(text)
