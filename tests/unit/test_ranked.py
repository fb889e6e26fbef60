"""Rank and percentile (domain/reading/percentiles.py, domain/reading/ranks.py) against brute-force sorting, with heavy
ties at the top, at the depth D and beyond it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain.ports import AggregateState, PeriodKey, RankParts
from shardboard.domain.publishing.gather import Entry, Gathered, top
from shardboard.domain.publishing.head import Head, RankEvent
from shardboard.domain.reading.percentiles import (
    approx_rank,
    exclusions,
    percentile,
    rank_of,
    taken_down,
    zipf_exponent,
)
from shardboard.domain.reading.ranks import lookup_ranks
from shardboard.services.snapshots import refresh_rank_version
from shardboard.settings import Settings
from tests.conftest import examples
from tests.heads import head_of_pairs

PERIOD = PeriodKey("global", "all", "all")
NOW = "2026-11-24T06:20:00.000Z"


class CountingBoard:
    """The Board calls a lookup makes, on fixed counts; ranked versions kept in memory; requests counted."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.parts: dict[str, RankParts] = {}
        self.requests = 0

    def put_rank_parts(self, period: PeriodKey, parts: RankParts, expires_at: int | None) -> None:
        self.parts[parts.rv] = parts

    def delete_rank_parts(self, period: PeriodKey, rv: str, pages: int, shards: int) -> None:
        self.parts.pop(rv, None)

    def get_rank_shards(self, period: PeriodKey, rv: str, shards: list[int]) -> dict[int, Any]:
        self.requests += 1
        return {shard: self.parts[rv].shards[shard] for shard in shards if shard in self.parts[rv].shards}

    def state(self, board: str, item_id: str) -> AggregateState:
        self.requests += 1
        return AggregateState({}, self.counts.get(item_id, 0))

    def statuses(self, item_ids: list[str]) -> dict[str, str]:
        """The items table's (ItemCatalog.statuses): nothing is taken down here."""
        self.requests += 1
        return {}


def head_of(counts: dict[str, int], top_n: int, depth: int, board: CountingBoard) -> Head:
    entries = [Entry(id=item, views=views) for item, views in counts.items()]
    config = Settings(top_n=top_n, rank_depth=depth)

    def gather(n: int, hits: Any) -> Gathered:
        return Gathered(top(entries, n), 0, 1, {})

    block = refresh_rank_version(board, config, PERIOD, None, now=NOW, gather=gather, expires_at=None).block
    items = [[e.id, e.views] for e in top(entries, top_n)]
    threshold = items[-1][1] if len(items) >= top_n else 0  # T: 0 while short of N
    return head_of_pairs(items, now=NOW, threshold=threshold, rank=block)


def brute_rank(counts: dict[str, int], item: str) -> int:
    return 1 + sum(1 for views in counts.values() if views > counts[item])


boards = st.dictionaries(
    st.text("abcdefgh#/?é", min_size=1, max_size=4), st.integers(1, 6), min_size=1, max_size=60
)  # views 1..6: heavy ties at the top, at D and beyond


@settings(max_examples=examples(200), deadline=None)
@given(counts=boards, top_n=st.integers(1, 5), extra=st.integers(0, 30))
def test_ranks_match_sorting_within_d_and_are_labelled_approximate_beyond(counts, top_n, extra):
    depth = top_n + extra
    board = CountingBoard(counts)
    config = Settings(top_n=top_n, rank_depth=depth)
    head = head_of(counts, top_n, depth, board)
    ordered = [e.id for e in top([Entry(id=i, views=v) for i, v in counts.items()], len(counts))]
    position = {item: index + 1 for index, item in enumerate(ordered)}
    answers = lookup_ranks(board, config.policy, PERIOD, head, [*counts, "never-viewed"], catalog=board)
    whole = len(counts) < config.rank_depth_of("global")
    for answer in answers[:-1]:
        assert answer.views == counts[answer.id]
        if whole:  # a version shorter than D is the whole board: of is exact
            assert answer.of == len(counts) and answer.of_exact
        if position[answer.id] <= config.rank_depth_of("global"):
            # Then within D the rank is exact (competition: ties share it) and the percentile follows from it
            assert answer.rank == brute_rank(counts, answer.id) and not answer.approximate
            assert answer.percentile == percentile(answer.rank, answer.of)
            assert answer.source == ("snapshot" if position[answer.id] <= top_n else "ranked")
        else:
            # And past D the rank is null, D is named, and the model rank is labelled approximate
            assert answer.rank is None and answer.beyond == config.rank_depth_of("global") and answer.approximate
            assert answer.approximate_rank is not None
            if counts[answer.id] == counts[ordered[depth - 1]]:  # a tie with the D-th shares its rank exactly
                assert answer.approximate_rank == brute_rank(counts, answer.id)
            else:
                assert depth < answer.approximate_rank <= answer.of
    # And an id without views has no rank
    assert answers[-1].rank is None and answers[-1].source == "none" and answers[-1].views == 0


def test_one_id_costs_at_most_three_requests_after_the_head_at_any_depth():
    counts = {f"i{n}": 1000 - n for n in range(300)}
    for item, expected in (("i0", 0), ("i150", 1), ("i299", 3)):
        board = CountingBoard(counts)
        head = head_of(counts, 10, 200, board)
        lookup_ranks(board, Settings(top_n=10, rank_depth=200).policy, PERIOD, head, [item], catalog=board)
        # top N: the head only; within D: one BatchGetItem of rank shards; past D: + its status and its views
        assert board.requests == expected


def test_rank_under_exclusions_and_the_percentile_edges():
    assert rank_of(5, [1, 3, 5, 9]) == 3  # two excluded above it
    assert percentile(1, 200) == 100.0 and percentile(200, 200) == 0.5
    # A Zipf tail is fitted back to its exponent, and the model rank of fewer views lies past the version
    tail = [[rank, round(10_000 / rank)] for rank in range(100, 1001, 100)]
    assert abs((zipf_exponent(tail) or 0) - 1.0) < 0.01
    assert approx_rank(5, 1000, 10, 1.0) == 2000
    assert approx_rank(9, 1000, 10, 1.0) == 1112
    assert approx_rank(9, 1000, 10, 1.0, of=1050) == 1050  # clamped to of


def test_a_nearly_flat_tail_is_no_fit_and_steep_ratios_never_overflow():
    # A tail of nearly equal counts fits s close to 0, whose 1/s overflowed the model (found by hypothesis)
    assert zipf_exponent([[1, 6], [2, 6], [3, 6]]) is None
    assert zipf_exponent([[10, 100], [20, 50], [40, 25]]) == pytest.approx(1.0)
    # Any exponent, however small, gives a finite rank past the version, within the board when its size is known
    for exponent in (8e-32, 1e-3, 0.05, 1.0):
        assert 4 <= approx_rank(1, 3, 6, exponent) < 2**53
        assert 4 <= approx_rank(1, 3, 6, exponent, of=50) <= 50
    assert approx_rank(0, 3, 6, 1.0, of=50) == 50
    assert approx_rank(2, 0, 6, 1.0) == 1


def test_a_delete_in_a_versions_events_is_for_good():
    # A hide of an item deleted already still reaches the version's events (takedown.rank_event): it stays deleted
    stored = [["delete", "a", 2], ["hide", "a", 2], ["hide", "b", 1], ["unhide", "b"], ["hide", "c", 3]]
    events = [RankEvent.from_json(event) for event in stored]
    assert [taken_down(events, item) for item in ("a", "b", "c", "d")] == ["deleted", None, "hidden", None]
    assert exclusions(events) == [2, 3]
