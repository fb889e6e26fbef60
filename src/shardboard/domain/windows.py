"""Rolling windows: "the last 24 hours" of a board, as the sum of its hour periods.

A window of H hours read at a moment covers the H whole hours before the current hour *and* the current hour so far:
its counts are the sums of H + 1 hour periods, whose exact counts the aggregator keeps anyway. So a window adds no
write of its own per view; only its head (one item per board, window and hour) is written by the snapshot job.
Windows are named ``<n>h`` or ``<n>d`` (``1h``, ``24h``, ``7d``) in the ``Periods`` setting, beside the calendar kinds;
naming one counts hours too. docs/rolling-windows.md has the proof that the top N of a window is exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from shardboard.domain.periods import (
    HOUR,
    KINDS,
    WINDOW_NAME,
    PeriodError,
    bucket_of,
    bucket_start,
    iso,
    parse_periods,
    start_of,
)
from shardboard.domain.trending import TRENDING

MAX_WINDOW_HOURS = 90 * 24


@dataclass(frozen=True, order=True)
class Window:
    """A rolling window of ``hours`` whole hours plus the current one (``name`` as configured: ``24h``, ``7d``)."""

    hours: int
    name: str

    def hour_buckets(self, bucket: str) -> list[str]:
        """The hour buckets a window ending in the hour ``bucket`` sums, newest (``bucket`` itself) first."""
        end = bucket_start(HOUR, bucket)
        return [bucket_of(HOUR, end - timedelta(hours=back)) for back in range(self.hours + 1)]

    def span(self, bucket: str) -> dict[str, str]:
        """The window's JSON ``period``: its kind (the window's name) and UTC bounds [start, end) when it ends in the
        hour ``bucket`` (the end is the end of that hour: views up to now count)."""
        end = bucket_start(HOUR, bucket) + timedelta(hours=1)
        return {"kind": self.name, "start": iso(end - timedelta(hours=self.hours + 1)), "end": iso(end)}


def summed_by_windows(kind: str) -> bool:
    """Whether windows sum the periods of ``kind`` (hours: a window's thresholds and retention come from them)."""
    return kind == HOUR


def is_window(name: str) -> bool:
    return WINDOW_NAME.fullmatch(name) is not None


def parse_window(name: str) -> Window:
    """``24h`` -> Window(24, "24h"); ``7d`` -> Window(168, "7d"); PeriodError for anything else."""
    matched = WINDOW_NAME.fullmatch(name)
    if matched is None:
        raise PeriodError(f"{name!r} is not a window: write <n>h or <n>d, like 24h or 7d")
    hours = int(matched[1]) * (24 if matched[2] == "d" else 1)
    if hours > MAX_WINDOW_HOURS:
        raise PeriodError(f"window {name} is longer than {MAX_WINDOW_HOURS // 24} days")
    return Window(hours, name)


def parse_names(text: str) -> tuple[str, ...]:
    """The ``Periods`` setting: calendar kinds (finest first) then windows (shortest first), ``"day,week,24h"``."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    windows = sorted({parse_window(name) for name in names if is_window(name)})
    try:
        kinds = parse_periods(",".join(name for name in names if not is_window(name)))
    except PeriodError as error:
        raise PeriodError(f"{error}, or a window like 24h or 7d") from None
    return (*kinds, *(window.name for window in windows))


def split_names(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[Window, ...]]:
    """The period kinds counted (with ``hour`` when a window or trending needs it) and the windows, from the setting's
    names."""
    windows = tuple(sorted(parse_window(name) for name in names if is_window(name)))
    kinds = {name for name in names if not is_window(name)}
    kinds |= {HOUR} if windows or TRENDING in kinds else set()  # both read hour periods
    return tuple(kind for kind in KINDS if kind in kinds), windows


# The windows a trending entry shows its views in (its "parts" beside the score): the last hour and the last 24.
RECENT = (Window(1, "1h"), Window(24, "24h"))


def window_bucket(moment: datetime) -> str:
    """The bucket a window head read at ``moment`` is kept under: the current hour (the window ends with it)."""
    return bucket_of(HOUR, start_of(HOUR, moment))
