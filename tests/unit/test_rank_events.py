"""Takedown events in a ranked version (issue 13): rank, percentile, around-me and pages under random hide, unhide
and delete events against brute-force sorting of the visible entries, and page walks that pin their events."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain.errors import BadInput
from shardboard.domain.ports import AggregateState, PeriodKey, RankParts
from shardboard.domain.publishing.gather import Entry, Gathered, top
from shardboard.domain.publishing.head import Head, RankEvent
from shardboard.domain.reading.pages import (
    Cursor,
    NotRanked,
    around,
    decode_cursor,
    encode_cursor,
    leaderboard_page,
    walk_cursor,
    window,
)
from shardboard.domain.reading.percentiles import exclusions, percentile, visible_positions
from shardboard.domain.reading.ranks import lookup_ranks
from shardboard.services.snapshots import refresh_rank_version
from shardboard.settings import Settings
from tests.conftest import examples
from tests.heads import head_of_pairs

PERIOD = PeriodKey("global", "all", "all")
T0 = "2026-11-24T06:20:00+00:00"


class EventBoard:
    """The Board calls of rank, pages and around-me: one head, ranked versions in memory, fixed counts."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.parts: dict[str, RankParts] = {}
        self.head: Head | None = None

    def put_rank_parts(self, period: PeriodKey, parts: RankParts, expires_at: int | None) -> None:
        self.parts[parts.rv] = parts

    def delete_rank_parts(self, period: PeriodKey, rv: str, pages: int, shards: int) -> None:
        self.parts.pop(rv, None)

    def get_rank_shards(self, period: PeriodKey, rv: str, shards: list[int]) -> dict[int, Any]:
        stored = self.parts.get(rv)
        return {shard: stored.shards[shard] for shard in shards if stored and shard in stored.shards}

    def get_rank_pages(self, period: PeriodKey, rv: str, pages: list[int]) -> dict[int, Any]:
        stored = self.parts.get(rv)
        return {page: stored.pages[page] for page in pages if stored and page < len(stored.pages)}

    def get_snapshot(self, period: PeriodKey) -> Head | None:
        return self.head

    def state(self, board: str, item_id: str) -> AggregateState:
        return AggregateState({}, self.counts.get(item_id, 0))

    def statuses(self, item_ids: list[str]) -> dict[str, str]:
        """The items table's (ItemCatalog.statuses): the takedowns of ``take_down`` are in the version's events."""
        return {}

    def write(self, config: Settings, now: str, hidden: frozenset[str] = frozenset()) -> None:
        """A snapshot run: a new ranked version of the visible items when due and changed, and a fresh head."""
        entries = [Entry(id=item, views=views) for item, views in self.counts.items() if item not in hidden]

        def gather(n: int, hits: Any) -> Gathered:
            return Gathered(top(entries, n), 0, 1, {})

        previous = self.head.rank if self.head else None
        refresh = refresh_rank_version(self, config, PERIOD, previous, now=now, gather=gather, expires_at=None)
        items = [[e.id, e.views] for e in top(entries, config.top_n)]
        threshold = items[-1][1] if len(items) >= config.top_n else 0  # T: 0 while short of N
        self.head = head_of_pairs(items, now=now, threshold=threshold, rank=refresh.block)

    def take_down(self, kind: str, item: str, top_n: int) -> None:
        """What a hide/unhide/delete patch does to the head: the event appended, the top N visible refilled."""
        assert self.head is not None and self.head.rank is not None
        block = self.head.rank
        stored = self.parts[block.rv]
        position = next(shard[item].position for shard in stored.shards.values() if item in shard)
        events = (*block.events, RankEvent(kind, item, None if kind == "unhide" else position))
        gone = excluded_ids(events)
        visible = [row for page in stored.pages for row in page if row.id not in gone]
        self.head = dataclasses.replace(
            self.head,
            rank=dataclasses.replace(block, events=events),
            items=tuple(visible[:top_n]),
            threshold=visible[top_n - 1].views if len(visible) >= top_n else 0,
        )


def excluded_ids(events: Sequence[RankEvent]) -> set[str]:
    out: set[str] = set()
    for event in events:
        (out.discard if event.kind == "unhide" else out.add)(event.id)
    return out


def ordered(counts: dict[str, int]) -> list[tuple[int, str, int]]:
    """(competition rank, id, views) in board order, by sorting."""
    ranking = top([Entry(id=i, views=v) for i, v in counts.items()], len(counts))
    return [(1 + sum(1 for v in counts.values() if v > e.views), e.id, e.views) for e in ranking]


def as_tuples(entries: Any) -> list[tuple[int, str, int]]:
    return [(e.rank, e.id, e.views) for e in entries]


boards = st.dictionaries(
    st.text("abcdefgh#/?é", min_size=1, max_size=5), st.integers(1, 6), min_size=1, max_size=260
)  # views 1..6: heavy ties, across the stored pages of 100
# (kind, which item by index): applied only when it makes sense (unhide a hidden item, hide a visible one)
takedowns = st.lists(st.tuples(st.sampled_from(["hide", "unhide", "delete"]), st.integers(0, 10**6)), max_size=40)


def taken_down(board: EventBoard, plan: list[tuple[str, int]], top_n: int) -> tuple[set[str], dict[str, str]]:
    """Apply the plan's sensible events to the head; (ids excluded now, id -> "hidden"/"deleted")."""
    block = board.head.rank
    version = [row.id for page in board.parts[block.rv].pages for row in page]
    status: dict[str, str] = {}
    for kind, index in plan:
        if not version:
            break
        item = version[index % len(version)]
        if kind == "unhide" and status.get(item) == "hidden":
            board.take_down("unhide", item, top_n)
            del status[item]
        elif kind != "unhide" and item not in status:
            board.take_down(kind, item, top_n)
            status[item] = "hidden" if kind == "hide" else "deleted"
    return set(status), status


@settings(max_examples=examples(150), deadline=None)
@given(counts=boards, top_n=st.integers(1, 20), extra=st.integers(1, 300), plan=takedowns, data=st.data())
def test_rank_around_and_pages_skip_taken_down_items_exactly(counts, top_n, extra, plan, data):
    depth = top_n + extra
    config = Settings(top_n=top_n, rank_depth=depth, page_size=100, snapshot_spare=0)
    board = EventBoard(counts)
    board.write(config, T0)
    gone, status = taken_down(board, plan, top_n)
    in_version = {row.id for page in board.parts[board.head.rank.rv].pages for row in page}
    visible = {item: views for item, views in counts.items() if item in in_version and item not in gone}
    truth = ordered(visible)
    count = len(truth)

    # Rank: exact among the visible, none for a taken-down item, the percentile of the visible board
    answers = {
        a.id: a for a in lookup_ranks(board, config.policy, PERIOD, board.head, sorted(in_version), catalog=board)
    }
    for rank, item, views in truth:
        assert (answers[item].rank, answers[item].views) == (rank, views)
        if count < depth:
            assert answers[item].of == count and answers[item].percentile == percentile(rank, count)
    for item in gone:
        assert answers[item].rank is None and answers[item].source == status[item]

    # Pages at 0, N and a random offset: the visible list, sliced
    for offset in {0, min(top_n, depth - 1), data.draw(st.integers(0, depth - 1))}:
        limit = min(100, depth - offset)
        _, page = leaderboard_page(board, config.policy, None, offset=str(offset), limit=str(limit), cursor="", now=T0)
        assert as_tuples(page.entries) == truth[offset : offset + limit]
        assert (page.cursor is not None) == (offset + limit < count)

    # Around: 2k + 1 visible neighbours (padded at the ends); a taken-down item has none, and says why
    k = data.draw(st.integers(1, 50))
    item = data.draw(st.sampled_from(sorted(in_version)))
    if item in gone:
        with pytest.raises(NotRanked, match=status[item]):
            around(board, PERIOD, board.head, item, k=k, catalog=board)
        return
    position = next(index + 1 for index, (_, one, _) in enumerate(truth) if one == item)
    answer = around(board, PERIOD, board.head, item, k=k, catalog=board)
    first, last = window(position, k, count)
    assert as_tuples(answer.entries) == truth[first - 1 : last]
    assert answer.position == position and answer.entries[answer.above].id == item


@settings(max_examples=examples(300), deadline=None)
@given(
    count=st.integers(0, 300),
    taken=st.sets(st.integers(1, 300), max_size=60),
    start=st.integers(0, 300),
    size=st.integers(0, 120),
)
def test_visible_positions_are_the_positions_left_in_order(count, taken, start, size):
    excluded = sorted(p for p in taken if p <= count)
    left = [p for p in range(1, count + 1) if p not in taken]
    assert visible_positions(start, start + size, excluded, count) == left[start : start + size]


def test_exclusions_follow_the_last_event_of_each_id():
    stored = [["hide", "a", 3], ["delete", "b", 1], ["unhide", "a"], ["hide", "c", 7], ["hide", "a", 3]]
    events = [RankEvent.from_json(event) for event in stored]
    assert exclusions(events) == [1, 3, 7]
    assert exclusions([*events, RankEvent("unhide", "a"), RankEvent("unhide", "c")]) == [1]


def test_a_walk_pins_its_events_so_a_hide_mid_walk_neither_repeats_nor_skips_an_entry():
    # Given a version of 250 entries with heavy ties, and a walk in pages of 30
    config = Settings(top_n=5, rank_depth=250, page_size=30, rank_refresh_seconds=60, cursor_ttl_seconds=900)
    counts = {f"i{n:03}": 1 + n % 7 for n in range(250)}
    board = EventBoard(counts)
    board.write(config, T0)
    early = ordered(counts)[3][1]
    board.take_down("hide", early, config.top_n)  # hidden before the walk: never in it
    pinned = ordered({item: views for item, views in counts.items() if item != early})
    cursor = walk_cursor(board.head, PERIOD, config.page_size)
    seen: list[tuple[int, str, int]] = []
    pages = 0
    while cursor:
        _, page = leaderboard_page(board, config.policy, None, offset="", limit="", cursor=cursor, now=T0)
        seen += as_tuples(page.entries)
        cursor = page.cursor
        pages += 1
        if pages == 2:  # When, mid-walk, one item already shown and one still ahead are hidden
            board.take_down("hide", seen[10][1], config.top_n)
            board.take_down("delete", pinned[200][1], config.top_n)
        if pages == 4:  # and a new version is written (the old one retires with its events)
            board.write(config, "2026-11-24T06:21:00+00:00", frozenset({early, seen[10][1], pinned[200][1]}))
    # Then the walk is the list it pinned: no duplicate, no gap, the same ranks
    assert seen == pinned
    # And a new walk, or any page by offset, no longer shows what was taken down
    fresh = []
    for offset in range(0, 250, 30):
        limit = str(min(30, 250 - offset))
        _, page = leaderboard_page(board, config.policy, None, offset=str(offset), limit=limit, cursor="", now=T0)
        fresh += [e.id for e in page.entries]
    assert len(fresh) == 247 and seen[10][1] not in fresh and pinned[200][1] not in fresh


def test_a_cursor_naming_more_events_than_its_version_holds_is_refused():
    config = Settings(top_n=2, rank_depth=20, page_size=5)
    board = EventBoard({f"i{n}": n for n in range(1, 15)})
    board.write(config, T0)
    tampered = encode_cursor(Cursor(PERIOD, board.head.rank.rv, 0, 5, 1))
    assert decode_cursor(tampered, 5).events == 1
    with pytest.raises(BadInput, match="cursor is malformed"):
        leaderboard_page(board, config.policy, None, offset="", limit="", cursor=tampered, now=T0)
    with pytest.raises(BadInput, match="cursor is malformed"):
        decode_cursor(encode_cursor(Cursor(PERIOD, "rv", 0, 5, -1)), 5)
