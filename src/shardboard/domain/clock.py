"""What "now" is, as a value handed in: the composition roots (the functions' wiring, the CLI's runtime, the library)
give every use case one clock, and a test gives them a fixed one, so no result depends on the minute it runs.

The domain reads no wall clock: the system clock is the services' (services/clock.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

# A clock returns an aware datetime in UTC.
Clock = Callable[[], datetime]


@dataclass(frozen=True)
class FixedClock:
    """A clock stopped at ``at`` (tests, a replay at a known time)."""

    at: datetime

    def __post_init__(self) -> None:
        if self.at.utcoffset() != timedelta(0):
            raise ValueError(f"a clock tells UTC time: give an aware UTC datetime, got {self.at!r}")

    def __call__(self) -> datetime:
        return self.at


@dataclass(frozen=True)
class EpochSeconds:
    """A clock read as epoch seconds, for what compares plain numbers (a shard router's TTLs and ``last_updated``)."""

    clock: Clock

    def now(self) -> float:
        return self.clock().timestamp()
