"""The one retry policy of the code: full-jitter exponential back-off (what botocore's standard mode does between its
own attempts), for writes DynamoDB throttled and for a batch's unprocessed keys.

``sleep`` and ``rng`` are handed in, so a simulation or a test runs the same loop without waiting.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from shardboard.domain.ports import Throttled

# Attempts of one write before its Throttled reaches the caller (an HTTP 503, a library flush that keeps its views).
MAX_WRITE_ATTEMPTS = 6
# A retry after a table-level or partition throttle waits base x 2^attempt (capped), with full jitter.
RETRY_BASE_SECONDS = 0.05
RETRY_CAP_SECONDS = 1.0

_RNG = random.Random()
_T = TypeVar("_T")


def retry_delay(attempt: int, rng: random.Random) -> float:
    """The wait after failed attempt ``attempt`` (0-based): uniform in [0, min(cap, base x 2^attempt)]."""
    return rng.uniform(0, min(RETRY_CAP_SECONDS, RETRY_BASE_SECONDS * 2**attempt))


def backoff(
    attempts: int, rng: random.Random | None = None, sleep: Callable[[float], None] = time.sleep
) -> Iterator[int]:
    """The attempt numbers 0 to ``attempts`` - 1, sleeping :func:`retry_delay` before each one after the first: the
    loop of a batch whose unprocessed keys are asked again (``for attempt in backoff(n): ... break``)."""
    rng = rng or _RNG
    for attempt in range(attempts):
        if attempt:
            sleep(retry_delay(attempt - 1, rng))
        yield attempt


def retry_throttled(
    write: Callable[[], _T],
    *,
    attempts: int = MAX_WRITE_ATTEMPTS,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> _T:
    """``write()`` again after each attempt DynamoDB throttled (:class:`Throttled`), backing off; the last attempt's
    Throttled is raised. Only for writes a retry cannot count twice (conditional, or written nowhere when throttled).
    """
    for attempt in backoff(attempts, rng, sleep):
        try:
            return write()
        except Throttled:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")
