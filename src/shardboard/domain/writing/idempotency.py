"""Exactly once for retried writes (docs/honest-counts.md, "Retried writes"): a write whose response was lost is
sent again, and must be recognised as applied, never counted twice and never reported as a failure.

Two schemes, one per kind of writer:

* **Idempotency keys** (``POST /views`` with an ``Idempotency-Key`` header, the payment APIs' convention): the
  request's views and a marker holding the key, the request's fingerprint and its answer are written in ONE
  transaction, so the key counts at most once for :data:`IDEMPOTENCY_KEY_SECONDS` after its first use, whoever
  retries it, at once or late; a retry is answered as the first request was.
* **Retry-safe writes** (the library's ``Recorder``): a writer that numbers its own writes keeps, in each counter
  item it writes, the number of its last write there (:class:`OnceWrite`); a condition refuses a number not above
  it. One write unit, no marker. Exact because the writer never has two writes outstanding on one counter item.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum

from shardboard.domain.errors import BadInput

# How long a key is remembered after its first use: a day, as payment APIs keep theirs. Measured from the first
# use, not a fixed window, so a retry a second after a boundary is still recognised.
IDEMPOTENCY_KEY_SECONDS = 86_400
MAX_IDEMPOTENCY_KEY_CHARS = 255
# Printable ASCII: what an HTTP header value carries unchanged (API Gateway trims surrounding spaces).
_FIRST_PRINTABLE, _LAST_PRINTABLE = 0x20, 0x7E


class Answer(StrEnum):
    """What a keyed request was answered, kept with its key so that a retry is answered the same."""

    COUNTED = "counted"
    DUPLICATE = "duplicate"  # a viewer's view counted already in its dedupe window: nothing was written


class IdempotencyKeyReused(ValueError):
    """The key was used, within its retention, by a request with other content (HTTP 422): nothing was written."""

    def __init__(self, key: str) -> None:
        super().__init__(
            f"Idempotency-Key {key!r} was used by a request with another id, count, boards or viewer in the last"
            f" {IDEMPOTENCY_KEY_SECONDS // 3600} hours; send a new key for a new request (nothing was recorded)"
        )
        self.key = key


def idempotency_key(value: object) -> str | None:
    """Return ``value`` if it is an idempotency key (None: no key): 1-255 printable ASCII characters."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"Idempotency-Key must be a string, got {type(value).__name__}")
    if not 1 <= len(value) <= MAX_IDEMPOTENCY_KEY_CHARS:
        raise BadInput(f"Idempotency-Key must be 1-{MAX_IDEMPOTENCY_KEY_CHARS} characters, got {len(value)}")
    for position, char in enumerate(value):
        if not _FIRST_PRINTABLE <= ord(char) <= _LAST_PRINTABLE:
            raise BadInput(f"Idempotency-Key must be printable ASCII; U+{ord(char):04X} at position {position} is not")
    return value


def fingerprint(item_id: str, views: int, boards: tuple[str, ...], viewer: str | None) -> str:
    """What a request asks, as a key's marker keeps it: a retry must ask the same (boards in any order)."""
    canonical = json.dumps([item_id, views, sorted(set(boards)), viewer], ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class KeyedRequest:
    """One keyed request as its write sees it: the key, the request's fingerprint, the time of this attempt (a
    marker whose retention ended before it no longer holds the key) and when a marker written now expires."""

    key: str
    fingerprint: str
    now: int
    expires_at: int

    @classmethod
    def of(cls, key: str, fingerprint: str, at: float) -> KeyedRequest:
        """The request's attempt at ``at`` (epoch seconds, the caller's clock)."""
        now = int(at)
        return cls(key, fingerprint, now, now + IDEMPOTENCY_KEY_SECONDS)


@dataclass(frozen=True)
class KeyedOutcome:
    """What a keyed request's write did: the answer (this attempt's, or the first request's when ``replayed``) and
    the write units it consumed."""

    answer: Answer
    replayed: bool
    units: float


@dataclass(frozen=True)
class OnceWrite:
    """A retry-safe counter write: writer ``writer`` (a number no other writer ever holds) numbers its writes with
    ``sequence``, increasing; the counter item keeps the writer's last sequence applied and a condition refuses one
    not above it. Retried unchanged (same shard, count, boards, sequence) until it is known applied."""

    writer: int
    sequence: int


@dataclass(frozen=True)
class OnceOutcome:
    """``applied_now``: this attempt added the views; False: an earlier attempt of the same write had (its response
    was lost), and the condition refused this one. Either way the write counted exactly once."""

    applied_now: bool
    units: float
