"""Board events: an item entered or left a board's top N, a period closed (docs/events.md).

The events of a head are a pure function of that head: its entries (the top N and the spares) ranked, the ranks its
entries held in the snapshot before (``previous``, kept for ``previous_rank`` anyway) and the ranks of the ids that
were in the top N before and are no longer held (``gone``). So the snapshot job can publish them after its
compare-and-set head write, and whoever reads the stored head later derives the very same events with the very same
ids: a retry, or the next run after a crash between the write and the publish, re-publishes, consumers dedupe.

The top N is by competition rank: an entry is in it when its rank is at most N (a spare tied with the N-th is in).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from shardboard.domain.periods import ALL
from shardboard.domain.publishing.gather import Entry, RankedEntry, with_ranks
from shardboard.domain.publishing.head import Head, Row, TopChange, day_before_rank

ENTERED = "entered"
LEFT = "left"
CLOSED = "closed"
EVENT_TYPES = (ENTERED, LEFT, CLOSED)
# A closed event lists the period's final top N unless that makes its detail larger than this (EventBridge takes
# 256 KB per entry): then only where to read it (``route``) is given.
MAX_DETAIL_BYTES = 200_000


@dataclass(frozen=True)
class BoardEvent:
    """One event: ``item``, its ``rank`` and ``views`` in the head (None: no longer held) and ``previous_rank`` for
    entered and left; ``top`` (the period's final top N, as ranked entries) for closed."""

    id: str
    type: str
    board: str
    period: Mapping[str, Any]
    bucket: str
    version: int  # the head version the event was derived from
    generated_at: str
    top_n: int
    item: str | None = None
    rank: int | None = None
    views: int | None = None
    previous_rank: int | None = None
    top: tuple[RankedEntry, ...] = field(default=())

    def detail(self) -> dict[str, Any]:
        """The event as consumers get it (EventBridge's ``detail``, one line of the local file)."""
        detail: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "board": self.board,
            "period": dict(self.period),
            "version": self.version,
            "generated_at": self.generated_at,
            "top_n": self.top_n,
        }
        if self.type != CLOSED:
            return {
                **detail,
                "item": self.item,
                "rank": self.rank,
                "views": self.views,
                "previous_rank": self.previous_rank,
            }
        closed = {**detail, "route": leaderboard_route(self.board, self.period)}
        listed = {**closed, "items": [entry.as_json() for entry in self.top]}
        return listed if len(json.dumps(listed, ensure_ascii=False).encode()) <= MAX_DETAIL_BYTES else closed


def event_id(board: str, kind: str, bucket: str, *parts: object) -> str:
    """A stable id: the same inputs give the same id in every process and run (consumers dedupe on it)."""
    text = json.dumps([board, kind, bucket, *parts], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def ranks_of(head: Head) -> dict[str, RankedEntry]:
    """The head's entries (items, then spares) by id, with their competition ranks."""
    held = [Entry(id=row.id, views=row.views) for row in (*head.items, *head.spare)]
    return {ranked.id: ranked for ranked in with_ranks(held)}


def departed(previous: Head | None, entries: Sequence[Row], top_n: int) -> dict[str, int]:
    """The ids in ``previous``'s top N that ``entries`` (a new head's items and spares) no longer hold, by their rank
    there: what a ``left`` event needs beyond ``previous`` (which only covers the new head's own entries)."""
    if previous is None:
        return {}
    held = {row.id for row in entries}
    before = ranks_of(previous).items()
    return {item: ranked.rank for item, ranked in before if ranked.rank <= top_n and item not in held}


def patch_changes(head: Head, entries: Sequence[Row], version: int, top_n: int) -> tuple[TopChange, ...]:
    """``head.patched`` once a patch (a takedown) replaces the head's entries with ``entries`` as ``version``: what
    left the top N (by rank before) and what the spares refilled it with (by rank now) appended."""
    before = ranks_of(head)
    was = {item for item, ranked in before.items() if ranked.rank <= top_n}
    now = with_ranks([Entry(id=row.id, views=row.views) for row in entries])
    is_in = {ranked.id for ranked in now if ranked.rank <= top_n}
    left = sorted((before[item].rank, item) for item in was - is_in)
    entered = [ranked.id for ranked in now if ranked.id in is_in - was]
    return (
        *head.patched,
        *(TopChange(version, LEFT, item, rank) for rank, item in left),
        *(TopChange(version, ENTERED, item, before[item].rank if item in before else None) for item in entered),
    )


def head_events(head: Head, top_n: int) -> list[BoardEvent]:
    """The changes of the top N this head announces: its gather's (``left`` by previous rank, then ``entered`` by
    rank), then those of the patches since (in order). A gather's events are named by its version
    (``events_version``), a patch's by the patch's: a patched head derives its gather's events again under the same
    ids (their top N is the current one with the patches undone), and adds its own."""
    kind = head.period.get("kind", ALL)
    basis = head.events_version or head.version
    now = ranks_of(head)
    before = {**head.previous, **head.gone}
    gathered = {item for item, ranked in now.items() if ranked.rank <= top_n}
    for change in reversed(head.patched):  # undone, latest first
        (gathered.discard if change.type == ENTERED else gathered.add)(change.id)

    def event(version: int, kind_of_event: str, item: str, previous_rank: int | None) -> BoardEvent:
        ranked = now.get(item)
        return _of_head(
            head,
            top_n,
            event_id(head.board, kind, head.bucket, version, kind_of_event, item),
            kind_of_event,
            item=item,
            rank=ranked.rank if ranked else None,
            views=ranked.views if ranked else None,
            previous_rank=previous_rank,
        )

    left = sorted((rank, item) for item, rank in before.items() if rank <= top_n and item not in gathered)
    # Board order: the entries held, then those a patch dropped since (they were in the gather's top N).
    order = [*now, *(change.id for change in head.patched if change.id not in now)]
    entered = [item for item in dict.fromkeys(order) if item in gathered and head.previous.get(item, top_n + 1) > top_n]
    return [
        *(event(basis, LEFT, item, rank) for rank, item in left),
        *(event(basis, ENTERED, item, head.previous.get(item)) for item in entered),
        *(event(change.version, change.type, change.id, change.previous_rank) for change in head.patched),
    ]


def closed_event(head: Head, top_n: int) -> BoardEvent:
    """The period closed: its head's top N as the period ends (one id per board and period)."""
    kind = head.period.get("kind", ALL)
    return _of_head(
        head,
        top_n,
        event_id(head.board, kind, head.bucket, CLOSED),
        CLOSED,
        top=tuple(
            RankedEntry(
                ranked.rank, ranked.id, ranked.views, head.previous.get(ranked.id), day_before_rank(head, ranked.id)
            )
            for ranked in ranks_of(head).values()
            if ranked.rank <= top_n
        ),
    )


def _of_head(head: Head, top_n: int, event: str, kind_of_event: str, **about: Any) -> BoardEvent:
    """An event of ``head``: what every event says of the head it was derived from, and ``about`` its own part."""
    return BoardEvent(
        id=event,
        type=kind_of_event,
        board=head.board,
        period=head.period,
        bucket=head.bucket,
        version=head.version,
        generated_at=head.generated_at,
        top_n=top_n,
        **about,
    )


def leaderboard_route(board: str, period: Mapping[str, Any]) -> str:
    """Where the period's leaderboard is read over HTTP (``GET /leaderboard``), relative to the API's URL."""
    kind = period.get("kind", ALL)
    query = {"board": board} if "start" not in period else {"board": board, "period": kind, "at": period["start"]}
    return f"/leaderboard?{urlencode(query)}"
