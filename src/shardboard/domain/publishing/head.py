"""The snapshot head and its ranked version's block as typed values, and the JSON they are stored as.

A head is the one board-table item a frontend reads per board and period (domain/publishing/snapshot.py builds it); its
``rank`` block names the current ranked version (domain/publishing/ranked_versions.py). Entries are stored compactly as
JSON lists (``[id, views]``, a page's ``[start, first views, last views, tie start]``...): the rows below are
NamedTuples so that they serialise to those same lists, and the adapters convert the rest (events, retired versions)
here, so the stored attributes stay what they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# An entry's inline document by id, or None ("asked, never put"): domain/publishing/head_meta.py.
Meta = dict[str, dict[str, Any] | None]


class Row(NamedTuple):
    """One entry of a head (its items and spares) or of a ranked version's stored page: ``[id, views]``."""

    id: str
    views: int


class ShardRow(NamedTuple):
    """One id's entry in a rank shard: ``[position, tie start, views]``, 1-based (the tie start is its competition
    rank: the position of the first entry with the same views)."""

    position: int
    tie_start: int
    views: int


class PageBounds(NamedTuple):
    """A ranked version's page as its head's index holds it: ``[start position, first views, last views, tie start
    of its first entry]``."""

    start: int
    first_views: int
    last_views: int
    tie_start: int


class LastEntry(NamedTuple):
    """A ranked version's last entry: its views and competition rank (a lookup past the version compares with it)."""

    views: int
    tie_start: int


class TopChange(NamedTuple):
    """A change of the top N a patch of the head made (a takedown dropped ``id``, or refilled the top N with it):
    ``[version of the patched head, "left" or "entered", id, its rank before the patch]`` (domain/publishing/events.py).
    """

    version: int
    type: str
    id: str
    previous_rank: int | None


class RankEvent(NamedTuple):
    """A takedown appended to a ranked version: ``[kind, id, position]`` for a hide or delete (``kind`` "hide" or
    "delete"), ``[kind, id]`` for an unhide (no position)."""

    kind: str
    id: str
    position: int | None = None

    def as_json(self) -> list[Any]:
        return [self.kind, self.id] if self.position is None else [self.kind, self.id, self.position]

    @classmethod
    def from_json(cls, event: Sequence[Any]) -> RankEvent:
        return cls(event[0], event[1], int(event[2]) if len(event) > 2 else None)


class Retired(NamedTuple):
    """A superseded ranked version still readable by cursors: ``[rv, retired at, pages, shards, events, count]``
    (the last two absent in entries written before events existed: ``entries`` None)."""

    rv: str
    retired_at: str
    pages: int
    shards: int
    events: tuple[RankEvent, ...] = ()
    entries: int | None = None  # its count (``tuple.count`` is taken)

    def as_json(self) -> list[Any]:
        entry: list[Any] = [self.rv, self.retired_at, self.pages, self.shards]
        if self.entries is None:
            return entry
        return [*entry, [event.as_json() for event in self.events], self.entries]

    @classmethod
    def from_json(cls, entry: Sequence[Any]) -> Retired:
        events = tuple(RankEvent.from_json(e) for e in entry[4]) if len(entry) > 4 else ()
        count = int(entry[5]) if len(entry) > 5 else None
        return cls(entry[0], entry[1], int(entry[2]), int(entry[3]), events, count)


@dataclass(frozen=True)
class RankBlock:
    """A head's ``rank`` block: its current ranked version (the exact top ``depth``, ``count`` entries as pages of
    ``page_size`` and ``shards`` rank shards under ``rv``), its takedown ``events`` and the ``retired`` versions."""

    rv: str
    generated_at: str
    depth: int
    count: int
    page_size: int
    shards: int
    pages: tuple[PageBounds, ...]
    last: LastEntry
    events: tuple[RankEvent, ...]
    hits: Mapping[int, int]  # the gather's reads per board shard (the next gather's hint)
    digest: str
    threshold: int
    retired: tuple[Retired, ...]

    def as_json(self) -> dict[str, Any]:
        """The block as stored (this key order: the stored text, and so its digest, must not change)."""
        return {
            "rv": self.rv,
            "generated_at": self.generated_at,
            "depth": self.depth,
            "count": self.count,
            "page_size": self.page_size,
            "shards": self.shards,
            "pages": [list(page) for page in self.pages],
            "last": list(self.last),
            "events": [event.as_json() for event in self.events],
            "hits": {str(shard): hits for shard, hits in self.hits.items()},
            "digest": self.digest,
            "threshold": self.threshold,
            "retired": [entry.as_json() for entry in self.retired],
        }

    @classmethod
    def from_json(cls, block: Mapping[str, Any]) -> RankBlock:
        return cls(
            rv=block["rv"],
            generated_at=block["generated_at"],
            depth=block["depth"],
            count=block["count"],
            page_size=block["page_size"],
            shards=block["shards"],
            pages=tuple(PageBounds(*page) for page in block["pages"]),
            last=LastEntry(*block["last"]),
            events=tuple(RankEvent.from_json(event) for event in block.get("events", [])),
            hits={int(shard): hits for shard, hits in (block.get("hits") or {}).items()},
            digest=block["digest"],
            threshold=block["threshold"],
            retired=tuple(Retired.from_json(entry) for entry in block.get("retired", [])),
        )


def rows(pairs: Sequence[Sequence[Any]]) -> tuple[Row, ...]:
    """Rows from stored ``[id, views]`` pairs."""
    return tuple(Row(item_id, views) for item_id, views in pairs)


@dataclass(frozen=True)
class Head:
    """A period's snapshot head: the exact top N (``items``) and R ``spare`` entries of one gather, the index
    threshold T, what the gather read, the first P entries' metadata (``meta``, when the job has a catalog) and the
    ranked version (``rank``, when the period keeps one)."""

    board: str
    period: Mapping[str, Any]  # the period's JSON (``{"kind": "all"}`` for all time), as the API answers it
    bucket: str
    version: int
    generated_at: str
    items: tuple[Row, ...]
    items_read: int
    # T, the N-th best views: an item below it can never reach the top N (0: the head holds the whole board).
    threshold: int
    shard_hits: Mapping[int, int]
    digest: str
    spare: tuple[Row, ...] = ()
    expires_at: int | None = None  # a past period's TTL (read back: a takedown's patch keeps it)
    meta: Meta | None = None
    meta_at: str | None = None  # when ``meta`` was last read in full; set whenever ``meta`` is
    rank: RankBlock | None = None
    # Movement: each entry's competition rank in the snapshot this one replaced (ids absent there: new, no key). Stored
    # as a list aligned with the entries (``stored_attributes``), so the id is never repeated.
    previous: Mapping[str, int] = field(default_factory=dict)
    # Events (domain/publishing/events.py): the ids of the top N before that this head no longer holds, by their rank
    # there, the version whose gather set ``previous`` and ``gone`` (0: this head's own; a patch keeps it), and the
    # changes of the top N the patches since that gather made.
    gone: Mapping[str, int] = field(default_factory=dict)
    events_version: int = 0
    patched: tuple[TopChange, ...] = ()
    # The rank a day before (domain/publishing/day_before.py): the ranks the checkpoint of the hour 24 hours before
    # ``generated_at`` gives the head's entries (None: none read; empty: none found). Stored aligned with the entries.
    day_before: Mapping[str, int] | None = None
    # A trending head's recent views: per entry of the top N, its views in each window of domain/windows.py RECENT
    # (the last hour, the last 24), as of ``generated_at``. Stored aligned with the top N.
    recent: Mapping[str, Sequence[int]] = field(default_factory=dict)

    @property
    def entries(self) -> tuple[Row, ...]:
        """The top N, then the spares: the order the lists stored beside them follow."""
        return (*self.items, *self.spare)


def stored_attributes(head: Head) -> dict[str, str | int]:
    """Every attribute of the head's item but its key, in the order written: numbers as ints, the rest compact JSON
    text (adapters/board_table.py wraps them). What sits beside the entries is stored as lists aligned with them
    (an entry's slot, null when it has none; trailing nulls left out), so no id is stored twice but in ``gone``
    (the ids that left the top N: at most N) and ``meta`` (the first P entries' documents)."""
    stored: dict[str, str | int] = {
        "board": head.board,
        "period": json.dumps(head.period, separators=(",", ":")),
        "bucket": head.bucket,
        "version": head.version,
        "generated_at": head.generated_at,
        # Compact JSON pairs keep the item (and the frontend's one read) small.
        "items": compact(head.items),
        "items_read": head.items_read,
        "threshold": head.threshold,
        "shard_hits": json.dumps({str(k): v for k, v in head.shard_hits.items()}),
        "digest": head.digest,
    }
    if head.expires_at:
        stored["expires_at"] = head.expires_at
    if head.meta is not None:  # {id: document or null} of the first PageSize entries (head_meta.py)
        assert head.meta_at is not None, "a head's meta is written with the time it was read"
        stored["meta"] = compact(head.meta)
        stored["meta_at"] = head.meta_at
    if head.rank is not None:
        stored["rank"] = compact(head.rank.as_json())
    # The entries past N (SnapshotSpare) a hide refills from; never part of the public leaderboard.
    stored["spare"] = compact(head.spare)
    entries = head.entries
    if head.previous:  # each entry's rank in the snapshot this one replaced: its previous_rank
        stored["previous"] = compact(aligned(head.previous, entries))
    if head.gone:  # {id: rank} of the top N before that this head no longer holds: its ``left`` events
        stored["gone"] = compact(head.gone)
    if head.events_version:
        stored["events_version"] = head.events_version
    if head.patched:  # the top N's changes a takedown's patch made: [version, type, id, previous rank]
        stored["patched"] = compact(head.patched)
    if head.day_before is not None:  # each entry's rank in the checkpoint a day before: its day_before_rank
        stored["day_before"] = compact(aligned(head.day_before, entries))
    if head.recent:  # each top-N entry's [views in the last hour, in the last 24]: a trending entry's recent views
        stored["recent"] = compact(aligned(head.recent, head.items))
    return stored


def head_from_stored(stored: Mapping[str, Any]) -> Head:
    """The head from its stored attributes (``stored_attributes``' form; numbers may come as ints or text). Heads
    written before the aligned lists hold id-keyed maps there: those read as they are (converted on read)."""
    items = rows(json.loads(stored["items"]))
    spare = rows(json.loads(stored["spare"])) if "spare" in stored else ()
    entries = (*items, *spare)

    def number(name: str) -> int:
        return int(stored.get(name) or 0)

    def beside(name: str, over: Sequence[Row]) -> Any:
        value = json.loads(stored[name])
        return value if isinstance(value, dict) else unaligned(value, over)

    return Head(
        board=stored["board"],
        period=json.loads(stored["period"]) if "period" in stored else {"kind": "all"},
        bucket=stored.get("bucket", "all"),
        version=number("version"),
        generated_at=stored["generated_at"],
        items=items,
        items_read=number("items_read"),
        threshold=number("threshold"),
        shard_hits={int(k): v for k, v in json.loads(stored["shard_hits"]).items()},
        digest=stored["digest"],
        spare=spare,
        meta=json.loads(stored["meta"]) if "meta" in stored else None,
        meta_at=stored["meta_at"] if "meta" in stored else None,
        rank=RankBlock.from_json(json.loads(stored["rank"])) if "rank" in stored else None,
        previous=beside("previous", entries) if "previous" in stored else {},
        # Read back so that a takedown's patch of a past period's head keeps its TTL.
        expires_at=number("expires_at") if "expires_at" in stored else None,
        gone=json.loads(stored["gone"]) if "gone" in stored else {},
        events_version=number("events_version"),
        patched=tuple(TopChange(*change) for change in json.loads(stored["patched"])) if "patched" in stored else (),
        day_before=beside("day_before", entries) if "day_before" in stored else None,
        recent=beside("recent", items) if "recent" in stored else {},
    )


def aligned(by_id: Mapping[str, Any], entries: Sequence[Row]) -> list[Any]:
    """``by_id``'s value for each of ``entries`` in their order (null: none), without the trailing nulls."""
    slots = [by_id.get(entry.id) for entry in entries]
    while slots and slots[-1] is None:
        slots.pop()
    return slots


def unaligned(slots: Sequence[Any], entries: Sequence[Row]) -> dict[str, Any]:
    """An aligned list read back as a map by id (a slot past the list's end, or null, has no value)."""
    return {entry.id: slot for entry, slot in zip(entries, slots, strict=False) if slot is not None}


def compact(value: Any) -> str:
    """The stored text of a head attribute: compact JSON, UTF-8 as is (what the item's size counts)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def with_previous_rank(entry: dict[str, Any], head: Head) -> dict[str, Any]:
    """A leaderboard entry (``{"rank", "id", "views"}``) with its ``previous_rank``: its rank in the snapshot before
    ``head`` (None: it was not there), and its ``day_before_rank``: its rank a day before (None: not known)."""
    item = entry["id"]
    return {**entry, "previous_rank": head.previous.get(item), "day_before_rank": day_before_rank(head, item)}


def day_before_rank(head: Head, item: str) -> int | None:
    """``item``'s rank a day before as ``head`` carries it (None: not in the checkpoint, or none read)."""
    return (head.day_before or {}).get(item)
