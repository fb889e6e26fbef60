"""Rank and percentile of an item (issue 13; docs/proposals/items-and-ranks.md section 3). Pure.

Within the depth D of a ranked version the rank is exact: the competition rank ("1224") the board shows, i.e. the
position of the first entry with the same views. Beyond D it is a model, labelled approximate: the views of the
version's ranks D/10..D fitted to Zipf's law (log views = a - s log rank), extrapolated to the item's views.

``of`` is the number of items on the board in the period, never below a rank answered nor below what the head shows.
It is exact when the head holds fewer than N (the whole board, as of the head), or the ranked version fewer than D
entries that the head does not outnumber; a full version knows only that there are at least D, so ``of`` is then the
same model's rank of an item with one view, labelled ``of_exact: false``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shardboard.domain.publishing.head import Head, PageBounds, RankEvent, Row

# An answer may name at most this many ids (one BatchGetItem of rank shards reads at most 100 keys).
MAX_RANK_IDS = 100
# A fitted tail flatter than this cannot be extrapolated: rank ~ (views ratio)^(1/s) explodes as s -> 0 (a hypothesis
# case fitted s = 8e-32 to three nearly equal counts and overflowed). Such a tail is treated as no fit.
MIN_ZIPF_EXPONENT = 0.05
MAX_LOG_RANK = math.log(2**53)  # the largest modelled rank: any board is far smaller


@dataclass(frozen=True)
class RankAnswer:
    id: str
    views: int
    rank: int | None  # exact competition rank; None beyond the depth, taken down, or without views
    percentile: float | None
    of: int
    of_exact: bool
    approximate: bool
    # "snapshot" (the head's top N, or its spares), "ranked" (a rank shard), "beyond" (past D), "none" (no views),
    # "hidden" or "deleted" (taken down: no rank, whenever it was)
    source: str
    as_of: str
    beyond: int | None = None  # D, when the item is past it
    approximate_rank: int | None = None

    def as_json(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "id": self.id,
            "views": self.views,
            "rank": self.rank,
            "percentile": self.percentile,
            "of": self.of,
            "of_exact": self.of_exact,
            "approximate": self.approximate,
            "source": self.source,
            "as_of": self.as_of,
        }
        if self.beyond is not None:
            answer |= {"beyond": self.beyond, "approximate_rank": self.approximate_rank}
        return answer


# Kinds of a ranked version's events: the first two take a position out of the ranking, unhide puts it back.
EXCLUDING = ("hide", "delete")


def exclusions(events: Sequence[RankEvent]) -> list[int]:
    """Sorted 1-based positions a ranked version's events take out: ``["hide", id, pos]`` and ``["delete", id,
    pos]`` not followed by an ``["unhide", id]`` (an unhidden item kept its counts, so its position comes back)."""
    out: dict[str, int] = {}
    for event in events:
        if event.kind in EXCLUDING:
            out[event.id] = int(event.position or 0)  # a hide or delete always names its position
        else:
            out.pop(event.id, None)
    return sorted(out.values())


def excluded_ids(events: Sequence[RankEvent]) -> set[str]:
    """Ids whose position the events take out (see ``exclusions``)."""
    out: set[str] = set()
    for event in events:
        (out.add if event.kind in EXCLUDING else out.discard)(event.id)
    return out


def taken_down(events: Sequence[RankEvent], item: str) -> str | None:
    """``"hidden"`` or ``"deleted"`` when the events take the item out of the version: a delete for good (a hide
    repeated on a deleted item leaves it deleted), else the last event of it."""
    kinds = [event.kind for event in events if event.id == item]
    if "delete" in kinds:
        return "deleted"
    return {"hide": "hidden"}.get(kinds[-1] if kinds else "")


def visible_index(position: int, excluded: Sequence[int]) -> int:
    """1-based index among the visible entries of the (visible) entry at ``position``."""
    return position - bisect.bisect_left(excluded, position)


def visible_positions(start: int, stop: int, excluded: Sequence[int], count: int) -> list[int]:
    """1-based positions of the visible entries at 0-based visible offsets [start, stop), among ``count``
    positions (``excluded`` sorted): the O-th visible entry is the O-th position not excluded."""
    position = start + 1
    for taken in excluded:  # the first visible position whose count of visible positions up to it is start + 1
        if taken > position:
            break
        position += 1
    gone = set(excluded)
    positions: list[int] = []
    while len(positions) < stop - start and position <= count:
        if position not in gone:
            positions.append(position)
        position += 1
    return positions


def rank_of(tie_start: int, excluded: Sequence[int] = ()) -> int:
    """Competition rank of an entry whose tie group starts at ``tie_start``, with the positions in ``excluded``
    (hidden or deleted since the version was written) taken out of the ranking above it."""
    return tie_start - sum(1 for position in excluded if position < tie_start)


def percentile(rank: float, of: int) -> float:
    """Share of the board at or below this rank, in percent: rank 1 of 200 -> 100.0, rank 200 of 200 -> 0.5."""
    if of <= 0:
        return 100.0
    return round(100 * (1 - (min(rank, of) - 1) / of), 4)


def head_entries(head: Head) -> list[Row]:
    """The entries of a snapshot head that reads rank from it: its top N, and with a ranked version (D >= N + R) its
    R spares too, the exact next entries of the same gather (without one, D = N and the spares are past D)."""
    return [*head.items, *head.spare] if head.rank is not None else list(head.items)


def holds_whole_board(head: Head) -> bool:
    """Whether a snapshot head holds every visible item of its period: it shows fewer than N, so its threshold T (the
    N-th best views, kept by every gather and takedown patch) is 0. Read from the head itself, so that a reader
    with another N in its settings (the library's defaults) answers as the API does."""
    return not head.threshold


def head_size(version: tuple[int, bool], head: Head) -> tuple[int, bool]:
    """``of`` and whether it is exact, from the version's (``board_size`` less its exclusions) and the head. The head
    is never older than the version (it is gathered every run, the version every RankRefreshSeconds): a head short
    of N holds the whole visible board, so its count is ``of``, exactly; a full one holds ``head_entries`` of a
    board at least that large."""
    of, exact = version
    if holds_whole_board(head):
        shown = len(head.items)
        return (shown, True) if of <= shown else (of, False)
    held = len(head_entries(head))
    return max(of, held), exact and of >= held


def head_ranks(items: Sequence[Row]) -> dict[str, tuple[int, int]]:
    """id -> (competition rank, views) of a snapshot head's items (board order)."""
    ranks: dict[str, tuple[int, int]] = {}
    rank = 0
    for position, (item_id, views) in enumerate(items, start=1):
        if position == 1 or items[position - 2].views != views:
            rank = position
        ranks[item_id] = (rank, views)
    return ranks


def zipf_exponent(tail: Sequence[Sequence[int]]) -> float | None:
    """s of log views = a - s log rank, least squares over (rank, views) points; None when it cannot be fitted
    (fewer than two distinct ranks, or views that do not fall with rank, or hardly: below MIN_ZIPF_EXPONENT)."""
    points = [(math.log(rank), math.log(views)) for rank, views in tail if rank > 0 and views > 0]
    if len({x for x, _ in points}) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    return -slope if -slope >= MIN_ZIPF_EXPONENT else None


def tail_points(pages: Sequence[PageBounds], depth: int) -> list[list[int]]:
    """(rank, views) points of a version's ranks D/10..D, from the head's page index [start, first, last, tie]."""
    return [[page.start, page.first_views] for page in pages if page.start >= depth // 10]


def approx_rank(views: int, count: int, last_views: int, exponent: float | None, of: int | None = None) -> int:
    """Model rank of an item with ``views`` past a version of ``count`` entries whose last has ``last_views``:
    count x (last_views / views)^(1/s), clamped to [count + 1, of]."""
    if views <= 0:
        estimate = math.inf
    elif exponent is None or count < 1:
        estimate = count + 1.0
    else:
        # In logs, capped where a float still holds every integer exactly: a steep ratio cannot overflow.
        estimate = math.exp(min(math.log(count) + math.log(last_views / views) / exponent, MAX_LOG_RANK))
    low = count + 1
    high = of if of is not None else math.exp(MAX_LOG_RANK)
    return int(max(low, min(high, math.ceil(estimate) if math.isfinite(estimate) else high)))


def board_size(count: int, depth: int, last_views: int, exponent: float | None) -> tuple[int, bool]:
    """``of`` and whether it is exact: a version shorter than D is the whole board."""
    if count < depth:
        return count, True
    if exponent is None or last_views <= 1:
        return count, False
    return approx_rank(1, count, last_views, exponent), False
