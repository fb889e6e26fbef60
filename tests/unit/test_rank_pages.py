"""Pages with a pinned cursor and around-me (domain/reading/pages.py) against brute-force sorting: heavy ties, pages
at 0, N and D - 1, windows at the top, the bottom and past N, cursors tampered with, and walks across versions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain.errors import BadInput
from shardboard.domain.ports import PeriodKey, RankParts
from shardboard.domain.publishing.gather import Entry, Gathered, top
from shardboard.domain.publishing.head import Head
from shardboard.domain.reading.pages import (
    EXPIRED,
    Cursor,
    NotRanked,
    around,
    decode_cursor,
    encode_cursor,
    leaderboard_page,
    walk_cursor,
    window,
)
from shardboard.services.snapshots import refresh_rank_version
from shardboard.settings import Settings
from tests.conftest import examples
from tests.heads import head_of_pairs

PERIOD = PeriodKey("global", "all", "all")
T0 = "2026-11-24T06:20:00+00:00"


class VersionBoard:
    """The Board calls pages and around-me make: ranked versions and the head in memory, requests counted."""

    def __init__(self) -> None:
        self.parts: dict[str, RankParts] = {}
        self.head: Head | None = None
        self.requests = 0

    def put_rank_parts(self, period: PeriodKey, parts: RankParts, expires_at: int | None) -> None:
        self.parts[parts.rv] = parts

    def delete_rank_parts(self, period: PeriodKey, rv: str, pages: int, shards: int) -> None:
        self.parts.pop(rv, None)

    def get_rank_shards(self, period: PeriodKey, rv: str, shards: list[int]) -> dict[int, Any]:
        self.requests += 1
        stored = self.parts.get(rv)
        return {shard: stored.shards[shard] for shard in shards if stored and shard in stored.shards}

    def get_rank_pages(self, period: PeriodKey, rv: str, pages: list[int]) -> dict[int, Any]:
        self.requests += 1
        stored = self.parts.get(rv)
        return {page: stored.pages[page] for page in pages if stored and page < len(stored.pages)}

    def get_snapshot(self, period: PeriodKey) -> Head | None:
        self.requests += 1
        return self.head

    def statuses(self, item_ids: list[str]) -> dict[str, str]:
        """The items table's (ItemCatalog.statuses): nothing is taken down here."""
        self.requests += 1
        return {}

    def write(self, counts: dict[str, int], config: Settings, now: str) -> None:
        """A snapshot run: a new ranked version when due and changed, and a fresh head."""
        entries = [Entry(id=item, views=views) for item, views in counts.items()]

        def gather(n: int, hits: Any) -> Gathered:
            return Gathered(top(entries, n), 0, 1, {})

        previous = self.head.rank if self.head else None
        refresh = refresh_rank_version(self, config, PERIOD, previous, now=now, gather=gather, expires_at=None)
        items = [[e.id, e.views] for e in top(entries, config.top_n)]
        threshold = items[-1][1] if len(items) >= config.top_n else 0  # T: 0 while short of N
        self.head = head_of_pairs(items, now=now, threshold=threshold, rank=refresh.block)


def ordered(counts: dict[str, int]) -> list[tuple[int, str, int]]:
    """(competition rank, id, views) in board order, by sorting."""
    ranking = top([Entry(id=i, views=v) for i, v in counts.items()], len(counts))
    return [(1 + sum(1 for v in counts.values() if v > e.views), e.id, e.views) for e in ranking]


def as_tuples(entries: Any) -> list[tuple[int, str, int]]:
    return [(e.rank, e.id, e.views) for e in entries]


boards = st.dictionaries(
    st.text("abcdefgh#/?é", min_size=1, max_size=5), st.integers(1, 6), min_size=1, max_size=320
)  # views 1..6: heavy ties, across the stored pages of 100


@settings(max_examples=examples(60), deadline=None)
@given(counts=boards, top_n=st.integers(1, 20), extra=st.integers(1, 400), size=st.integers(1, 100), data=st.data())
def test_pages_match_sorting_at_0_n_and_d_minus_1(counts, top_n, extra, size, data):
    depth = top_n + extra
    config = Settings(top_n=top_n, rank_depth=depth, page_size=size, snapshot_spare=0)
    board = VersionBoard()
    board.write(counts, config, T0)
    truth = ordered(counts)[:depth]
    for offset in {0, top_n, depth - 1, data.draw(st.integers(0, depth - 1))}:
        limit = min(size, depth - offset)
        board.requests = 0
        head, page = leaderboard_page(
            board, config.policy, None, offset=str(offset), limit=str(limit), cursor="", now=T0
        )
        assert head is board.head
        assert as_tuples(page.entries) == truth[offset : offset + limit]
        assert board.requests <= 2  # the head and one BatchGetItem of pages
        assert (page.cursor is not None) == (offset + limit < len(truth))


@settings(max_examples=examples(200), deadline=None)
@given(
    counts=boards,
    top_n=st.integers(1, 20),
    extra=st.integers(0, 300),
    k=st.one_of(st.integers(1, 3), st.integers(1, 50)),
    data=st.data(),
)
def test_around_matches_sorting_with_padding_at_the_top_and_bottom(counts, top_n, extra, k, data):
    depth = top_n + extra
    config = Settings(top_n=top_n, rank_depth=depth, snapshot_spare=0)
    board = VersionBoard()
    board.write(counts, config, T0)
    truth = ordered(counts)[:depth]
    item = data.draw(st.sampled_from(sorted(counts)))
    position = next((index + 1 for index, (_, one, _) in enumerate(truth) if one == item), None)
    board.requests = 0
    if position is None:
        with pytest.raises(NotRanked, match=f"not in the top {depth}"):
            around(board, PERIOD, board.head, item, k=k, catalog=board)
        return
    answer = around(board, PERIOD, board.head, item, k=k, catalog=board)
    first, last = window(position, k, len(truth))
    assert as_tuples(answer.entries) == truth[first - 1 : last]
    assert len(answer.entries) == min(2 * k + 1, len(truth))
    assert answer.entries[answer.above].id == item and answer.position == position
    assert answer.above + answer.below + 1 == len(answer.entries)
    assert board.requests <= 2  # a rank shard and one BatchGetItem of pages (the head was read before)
    if answer.source == "snapshot":
        assert board.requests == 0


@settings(max_examples=examples(200), deadline=None)
@given(rv=st.text(min_size=1, max_size=12), offset=st.integers(0, 10**6), limit=st.integers(1, 100), data=st.data())
def test_cursors_round_trip_and_any_edit_is_refused_or_decodes_to_what_it_says(rv, offset, limit, data):
    cursor = Cursor(PeriodKey("global", "week", "2026-W48"), rv, offset, limit)
    text = encode_cursor(cursor)
    assert decode_cursor(text, 100) == cursor
    at = data.draw(st.integers(0, len(text) - 1))
    edited = text[:at] + data.draw(st.sampled_from("AZaz09-_=+/ ")) + text[at + 1 :]
    try:
        decoded = decode_cursor(edited, 100)
    except BadInput as refused:
        assert "cursor is malformed" in str(refused)
    else:
        assert encode_cursor(decoded) == edited  # only another well-formed cursor decodes


@pytest.mark.parametrize(
    ("cursor", "reason"),
    [
        ("", "malformed"),
        ("!!!", "malformed"),
        ("e30", "malformed"),  # {}
        (encode_cursor(Cursor(PERIOD, "rv", 0, 101)), "malformed"),  # limit past PageSize
        (encode_cursor(Cursor(PERIOD, "rv", -1, 10)), "malformed"),
    ],
)
def test_malformed_cursors_are_refused(cursor, reason):
    with pytest.raises(BadInput, match=reason):
        decode_cursor(cursor, 100)


def test_a_walk_sees_its_version_while_new_versions_are_written_and_expires_after_the_ttl():
    config = Settings(top_n=5, rank_depth=250, page_size=30, rank_refresh_seconds=60, cursor_ttl_seconds=900)
    counts = {f"i{n:03}": 1 + n % 7 for n in range(240)}
    board = VersionBoard()
    board.write(counts, config, T0)
    pinned = ordered(counts)
    assert board.head is not None
    cursor = walk_cursor(board.head, PERIOD, config.page_size)
    seen: list[tuple[int, str, int]] = []
    minute = 0
    while cursor:
        _, page = leaderboard_page(
            board, config.policy, None, offset="", limit="", cursor=cursor, now=at_minute(minute)
        )
        seen += as_tuples(page.entries)
        cursor = page.cursor
        minute += 1
        for item in list(counts)[minute::9]:  # views arrive; every run writes a new version
            counts[item] += 3
        board.write(counts, config, at_minute(minute))
    assert seen == pinned  # no duplicate, no gap, the pinned version's ranks
    first = walk_cursor(board.head, PERIOD, config.page_size)
    stale = encode_cursor(Cursor(PERIOD, pinned_rv(board), 30, 30))
    with pytest.raises(BadInput, match=EXPIRED):
        leaderboard_page(board, config.policy, None, offset="", limit="", cursor=stale, now=at_minute(30))
    assert first is not None


def pinned_rv(board: VersionBoard) -> str:
    assert board.head is not None
    return board.head.rank.retired[0].rv if board.head.rank.retired else "gone"


def at_minute(minute: int) -> str:
    return f"2026-11-24T{6 + (20 + minute) // 60:02}:{(20 + minute) % 60:02}:00+00:00"


def test_without_ranked_versions_pages_and_around_come_from_the_head_and_a_cursor_is_refused():
    # D = N: the head is the whole ranking the stack keeps
    config = Settings(top_n=6, rank_depth=6, page_size=4)
    counts = {"a": 5, "b": 5, "c": 4, "d": 3, "e": 3, "f": 1, "g": 1}
    board = VersionBoard()
    board.write(counts, config, T0)
    assert board.head is not None and board.head.rank is None
    assert walk_cursor(board.head, PERIOD, config.page_size) is None
    _, page = leaderboard_page(board, config.policy, PERIOD, offset="2", limit="4", cursor="", now=T0)
    assert as_tuples(page.entries) == ordered(counts)[2:6] and page.cursor is None and page.rv is None
    with pytest.raises(BadInput, match="offset \\+ limit must be at most the depth 6"):
        leaderboard_page(board, config.policy, PERIOD, offset="3", limit="4", cursor="", now=T0)
    cursor = encode_cursor(Cursor(PERIOD, "rv", 0, 4))
    with pytest.raises(BadInput, match=EXPIRED):
        leaderboard_page(board, config.policy, None, offset="", limit="", cursor=cursor, now=T0)
    answer = around(board, PERIOD, board.head, "f", k=2, catalog=board)
    assert [e.id for e in answer.entries] == ["b", "c", "d", "e", "f"] and (answer.above, answer.below) == (4, 0)
    with pytest.raises(NotRanked, match="not in the top 6"):
        around(board, PERIOD, board.head, "g", k=2, catalog=board)
