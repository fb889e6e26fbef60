"""Who sent a view, as far as the counts care (docs/honest-counts.md "Crawlers" and "Anonymous viewers").

A view whose user agent is a known crawler counts on no public board, only on the reserved board ``bots`` (and on
``bots:<board>`` for each board it names, so an operator sees what crawlers fetch where). The crawler list is the
crawler-user-agents package's (data its maintainers keep, about 1,500 patterns), matched as one RE2 automaton:
Python's ``re`` tries the alternatives one by one (~100 us for a browser's user agent), RE2's DFA reads the string
once (a few us; ``shardboard bench --scenario visitors`` measures it).

A browser's view that names no viewer gets one: a keyed hash (HMAC-SHA256) of its address and user agent under a key
of its UTC day, which rotates daily and is stored apart from the views, so dedupe applies to anonymous visitors
without cookies and nobody can link two days' ids (docs/honest-counts.md says where the key lives).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import crawleruseragents
import re2

from shardboard.domain.boards import BOARD_NAME_MAX, BOTS_BOARD, BOTS_PREFIX
from shardboard.domain.clock import Clock
from shardboard.domain.ports import DailyKeys

# RE2's lazy DFA needs room for ~1,500 alternatives: at its 8 MB default it gives up and runs the NFA (~100 us a
# match); 64 MB keeps it a DFA (its cache fills as it meets new user agents, then a match is a few us).
_DFA_MEMORY = 64 << 20
# A daily key outlives its day by this much, then TTL deletes it: a view posted just before midnight and retried just
# after still finds its day's key; past it nobody can recompute that day's ids.
DAILY_KEY_GRACE = timedelta(days=1)
ANONYMOUS_PREFIX = "anon:"
# 128 bits of the digest: collisions among a day's visitors are out of reach, and the id stays short.
_ID_HEX_DIGITS = 32


@cache
def _crawler_patterns() -> Any:
    """The package's patterns as one RE2 automaton, compiled once per process."""
    options = re2.Options()
    options.max_mem = _DFA_MEMORY
    # Only whether it matches: without capture groups a match never leaves the DFA for the slower engines.
    options.never_capture = True
    joined = "|".join(f"(?:{entry['pattern']})" for entry in crawleruseragents.CRAWLER_USER_AGENTS_DATA)
    return re2.compile(joined, options)


def is_crawler(user_agent: str) -> bool:
    """Whether ``user_agent`` matches a known crawler (case-sensitive, as the list's patterns are written)."""
    return _crawler_patterns().search(user_agent) is not None


def crawler_patterns() -> int:
    """How many crawler patterns the list holds (the benchmark names it)."""
    return len(crawleruseragents.CRAWLER_USER_AGENTS_DATA)


def bot_boards(boards: Sequence[str]) -> tuple[str, ...]:
    """Where a crawler's view counts instead of ``boards``: ``bots`` and ``bots:<board>`` per board named (a name too
    long to prefix counts on ``bots`` alone)."""
    prefixed = (BOTS_PREFIX + name for name in boards if len(BOTS_PREFIX) + len(name) <= BOARD_NAME_MAX)
    return (BOTS_BOARD, *prefixed)


def anonymous_viewer(key: bytes, address: str, user_agent: str) -> str:
    """The viewer id of an anonymous browser: HMAC-SHA256 of its address and user agent under its day's key."""
    digest = hmac.new(key, f"{address}\n{user_agent}".encode("utf-8", "surrogateescape"), hashlib.sha256)
    return ANONYMOUS_PREFIX + digest.hexdigest()[:_ID_HEX_DIGITS]


@dataclass
class AnonymousViewers:
    """The ids of anonymous browsers, under the key of the current UTC day (``clock``): fetched from ``keys`` once
    a day per container (the first container of the day stores a random one; every other one gets that one)."""

    keys: DailyKeys
    clock: Clock
    _known: dict[str, bytes] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def viewer(self, address: str, user_agent: str) -> str:
        return anonymous_viewer(self.key_of(self.clock()), address, user_agent)

    def key_of(self, now: datetime) -> bytes:
        day = now.astimezone(UTC).date()
        name = day.isoformat()
        with self._lock:
            key = self._known.get(name)
            if key is None:
                ends = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1) + DAILY_KEY_GRACE
                key = self.keys.daily_key(name, secrets.token_bytes(32), int(ends.timestamp()))
                self._known = {name: key}  # yesterday's key is dropped from memory at once
        return key
