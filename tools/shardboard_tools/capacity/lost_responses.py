"""Lost responses: a store's write lands, then its caller sees a timeout, as when a network fails after DynamoDB
applied a write: the fault the retry-safe writes are measured (``bench --scenario honest-counts``) and tested
against."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any


class ResponseLost(ConnectionError):
    """A store's write landed and its response was lost on the way back (:class:`LostResponses`)."""


class LostResponses:
    """A port (an in-memory store) whose writes land and then, at ``rate`` (changeable at any time), raise ``error()``
    (:class:`ResponseLost`: a timeout after DynamoDB applied the write, as its caller sees it; or what botocore raises
    when a retry of a landed attempt is throttled); every other attribute is the store's own. :attr:`injected`
    counts the lost responses per method."""

    WRITES = frozenset({"add_view", "add_view_once", "add_keyed_view", "add_seen_view", "claim_writer"})

    def __init__(
        self, store: Any, rate: float, rng: random.Random, error: Callable[[], Exception] | None = None
    ) -> None:
        self.store, self.rate, self.rng = store, rate, rng
        self.error = error or (lambda: ResponseLost("injected: the write landed, its response was lost"))
        self.injected: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)
        if name not in self.WRITES:
            return method

        def landed_then_lost(*args: Any, **kwargs: Any) -> Any:
            outcome = method(*args, **kwargs)
            with self._lock:
                lost = self.rng.random() < self.rate
                if lost:
                    self.injected[name] += 1
            if lost:
                raise self.error()
            return outcome

        return landed_then_lost
