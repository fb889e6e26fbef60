"""The clock the delivery model reads and waits on: the wall clock, or a simulated one that tests and runs drive."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    """Epoch seconds, and a wait that a stop event may cut short."""

    def now(self) -> float: ...

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> None: ...


class WallClock:
    """The machine's clock: waits really wait."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> None:
        if stop is not None:
            stop.wait(seconds)
        else:
            time.sleep(seconds)


class SimulatedClock:
    """A clock that moves only when told to, or when something waits on it: no test waits on the wall clock."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._now

    def set(self, moment: float) -> None:
        with self._lock:
            self._now = moment

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> None:
        if stop is None or not stop.is_set():
            self.advance(max(0.0, seconds))


class DrivenClock:
    """A simulation's virtual time read through ``now``: the simulation moves it, so nothing may wait on it."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> None:
        raise RuntimeError("a driven clock cannot be waited on: deliver with wait=False")
