"""Items: a small JSON document per item id, created once and replaced by later puts.

``meta`` is the rule every entry point applies to a document (HTTP body, CLI ``--meta``, library): a JSON object
of at most 2,048 UTF-8 bytes once re-serialised compactly, with an optional ``title`` (<= 200 characters) and
``url``/``thumbnail`` (absolute http(s) URLs). The stored form is that compact serialisation, so what is checked is
exactly what is written and later inlined into snapshots (docs/: the head's size budget counts on 2 KB).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from shardboard.domain.errors import BadInput

MAX_META_BYTES = 2048
MAX_TITLE_CHARS = 200
URL_FIELDS = ("url", "thumbnail")
# RequireItems: a container remembers "this id exists" this long, so a viral item costs one items-table read per
# container per 10 s rather than one per view; a missing id is asked again each time (it may be created any moment).
ADMIT_TTL_SECONDS = 10.0
ADMIT_CACHE_SIZE = 10_000
# The by-created index spreads creates over this many partition values (design section 6: ~2,600 creates/s at 8).
DEFAULT_CREATED_SHARDS = 8
# A hidden item: it leaves every board and period but keeps counting, so unhide restores it.
HIDDEN = "hidden"
DELETED = "deleted"  # a tombstone: the id has a deny marker and its counts are removed
# Not a status but a kind of marker: one per skeleton of a deleted id (domain/items/lookalike.py), listed and looked up
# as the takedown markers are (their "ids" are lookalike.skeleton_marker's).
SKELETONS = "skeletons"
MAX_REASON_CHARS = 500


@dataclass(frozen=True)
class ItemRecord:
    """One item as the catalogue holds it; ``meta`` is compact JSON text, ``rev`` counts the puts."""

    item_id: str
    meta: str
    created_at: str
    updated_at: str
    rev: int
    status: str | None = None  # None (visible), HIDDEN or DELETED
    taken_down_at: str | None = None  # when it was hidden or deleted (ISO ms); None: visible, or before this was kept

    def document(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.meta)
        return parsed


@dataclass(frozen=True)
class ShardPage:
    """One created-shard's answer: its newest keys in the range, newest first; ``more`` if Limit cut it."""

    records: Sequence[ItemRecord]
    more: bool


class UnknownItem(LookupError):
    """A view of a deleted id, or of an id never created with RequireItems: HTTP 404 not_found, nothing written."""

    def __init__(self, item_id: str) -> None:
        super().__init__(f"item {item_id!r} was never created (with RequireItems: PUT /item first) or was deleted")
        self.item_id = item_id


class DeletedItem(LookupError):
    """A hide, unhide or put of a deleted item: refused, nothing written (HTTP 404 not_found, CLI exit 1). A delete
    is for good: its kept metadata is the audit's, and only a repeated delete (which finishes its sweep) is taken."""

    def __init__(self, item_id: str) -> None:
        super().__init__(f"item {item_id!r} is deleted: it cannot be hidden, unhidden or put again")
        self.item_id = item_id


class ItemAdmission:
    """RequireItems' check of a viewed id: ``exists(id)`` asked of the catalogue, positive answers kept for
    ``ttl`` seconds in an LRU of ``size`` ids (one per container, shared by its threads)."""

    def __init__(
        self,
        exists: Callable[[str], bool],
        ttl: float = ADMIT_TTL_SECONDS,
        size: int = ADMIT_CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,  # a TTL's age, not a time of day
    ) -> None:
        self._exists = exists
        self._ttl = ttl
        self._size = size
        self._clock = clock
        self._known: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, item_id: str) -> bool:
        now = self._clock()
        with self._lock:
            until = self._known.get(item_id)
            if until is not None and until > now:
                self._known.move_to_end(item_id)
                return True
        if not self._exists(item_id):
            return False
        with self._lock:
            self._known[item_id] = now + self._ttl
            self._known.move_to_end(item_id)
            while len(self._known) > self._size:
                self._known.popitem(last=False)
        return True


class CachedView:
    """A view of markers (``read``), read afresh at most once per ``ttl`` seconds per container: what the deny and
    look-alike checks of every view look ids up in."""

    def __init__(
        self,
        read: Callable[[], Container[str]],
        ttl: float = ADMIT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,  # a TTL's age, not a time of day
    ) -> None:
        self._read = read
        self._ttl = ttl
        self._clock = clock
        self._view: Container[str] = frozenset()
        self._until = -math.inf
        self._lock = threading.Lock()

    def __call__(self) -> Container[str]:
        with self._lock:
            now = self._clock()
            if now >= self._until:
                self._view, self._until = self._read(), now + self._ttl
            return self._view


class DenyCheck:
    """Admits every id not deleted: a view of the deleted ids (``read``: ``taken_down.TakenDown.read`` of DELETED),
    read afresh at most once per ``ttl`` seconds per container, so a delete refuses new views within ``ttl`` seconds
    (the aggregator drops any that slip through). While few ids are deleted the view lists them all; past that it
    asks about each id once per ``ttl`` (one read of its marker)."""

    def __init__(
        self,
        read: Callable[[], Container[str]],
        ttl: float = ADMIT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,  # a TTL's age, not a time of day
    ) -> None:
        self._denied = CachedView(read, ttl, clock)

    def __call__(self, item_id: str) -> bool:
        return item_id not in self._denied()  # outside the lock: a lookup of one id never holds up the others


def admit_all(*checks: Callable[[str], bool]) -> Callable[[str], bool]:
    """An id is admitted when every check admits it (the deny check first: a cached read)."""
    return lambda item_id: all(check(item_id) for check in checks)


def meta(value: Any) -> str:
    """``value`` (a parsed JSON value) as the compact JSON text stored for it, or BadInput naming the rule."""
    if not isinstance(value, dict):
        raise BadInput(f"meta must be a JSON object, got {_json_type(value)}")
    title = value.get("title")
    if "title" in value and (not isinstance(title, str) or len(title) > MAX_TITLE_CHARS):
        raise BadInput(f"meta.title must be a string of at most {MAX_TITLE_CHARS} characters")
    for name in URL_FIELDS:
        if name in value and not _http_url(value[name]):
            raise BadInput(f"meta.{name} must be an absolute http(s) URL")
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        size = len(text.encode("utf-8"))
    except (ValueError, TypeError, UnicodeEncodeError) as error:
        # NaN/Infinity (not JSON) or a lone surrogate from a bad escape (not UTF-8): either cannot be stored.
        raise BadInput(f"meta is not storable JSON: {str(error).splitlines()[0]}") from None
    if size > MAX_META_BYTES:
        raise BadInput(f"meta is {size} bytes as compact JSON; the maximum is {MAX_META_BYTES} bytes of UTF-8")
    return text


def meta_text(text: str) -> str:
    """``meta`` of a JSON text (CLI ``--meta``, a raw HTTP body)."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as error:
        raise BadInput(f"meta is not valid JSON: {str(error).splitlines()[0]}") from None
    return meta(value)


def iso_ms(moment: datetime) -> str:
    """ISO-8601 UTC with milliseconds: sorts as text in time order (created_at, the by-created range key). The year
    is padded by hand: strftime's %Y prints year 1 as "1" on glibc, which sorts after "2026"."""
    return f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def created_key(created_at: str, item_id: str) -> str:
    """The by-created range key: creation time first, the id breaks ties (no two items share a key)."""
    return f"{created_at}#{item_id}"


def created_shard(item_id: str, shards: int = DEFAULT_CREATED_SHARDS) -> str:
    """The by-created partition value of an item: a stable hash, so creates spread evenly over ``shards`` values."""
    digest = hashlib.blake2b(item_id.encode("utf-8", errors="surrogatepass"), digest_size=8).digest()
    return f"c#{int.from_bytes(digest, 'big') % shards}"


def set_shard(item_id: str, shards: int) -> int:
    """Which partition holds an id's takedown markers: a stable hash, so the partitions fill evenly."""
    digest = hashlib.blake2b(item_id.encode("utf-8", errors="surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def marker_order(item_id: str) -> int:
    """Where an id's takedown marker sorts in its partition: a stable 32-bit hash, so markers lie evenly in order."""
    digest = hashlib.blake2b(item_id.encode("utf-8", errors="surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def reason(value: str | None) -> str:
    """A takedown's reason as stored in its audit row: optional, at most MAX_REASON_CHARS printable characters."""
    text = value or ""
    if len(text) > MAX_REASON_CHARS or not text.isprintable():
        raise BadInput(f"reason must be at most {MAX_REASON_CHARS} printable characters")
    return text


def _http_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "number" if math.isfinite(value) else "a non-finite number"
    return names.get(type(value), type(value).__name__)
