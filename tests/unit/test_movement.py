"""Movement: each head entry's rank in the snapshot it replaced (``previous_rank``), kept with the head at no write
of its own; a property against a brute-force ranking of the two snapshots."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shardboard.adapters.board_table import snapshot_from_item, snapshot_item
from shardboard.domain.publishing.head import with_previous_rank
from shardboard.domain.publishing.snapshot import leaderboard_json, previous_ranks
from tests.heads import head_of_pairs


def competition_ranks(pairs: list[tuple[str, int]]) -> dict[str, int]:
    """Brute force: 1 + how many entries have more views."""
    return {item: 1 + sum(1 for _, other in pairs if other > views) for item, views in pairs}


def test_an_entry_keeps_its_rank_of_the_snapshot_before_and_a_new_one_has_none():
    # Given a snapshot with a tie and a spare
    before = head_of_pairs([["a", 5], ["b", 3], ["c", 3]], spare=[["d", 1]])
    # When the next one ranks e first, c past a, and d (a spare before) on the board
    after = head_of_pairs([["e", 9], ["c", 6], ["a", 5], ["d", 2]])
    # Then each entry's previous rank is its competition rank before (ties shared), e has none
    assert previous_ranks(before, after.items) == {"c": 2, "a": 1, "d": 4}
    assert previous_ranks(None, after.items) == {}


def test_the_leaderboard_json_carries_previous_rank_and_null_for_a_new_entry():
    head = head_of_pairs([["e", 9], ["c", 6]])
    moved = type(head)(**{**head.__dict__, "previous": {"c": 2}})
    assert [(e["id"], e["rank"], e["previous_rank"]) for e in leaderboard_json(moved)["items"]] == [
        ("e", 1, None),
        ("c", 2, 2),
    ]
    assert with_previous_rank({"rank": 1, "id": "x", "views": 1}, moved)["previous_rank"] is None


def test_the_stored_head_keeps_previous_ranks_and_writes_nothing_without_them():
    head = head_of_pairs([["e", 9], ["c", 6]])
    assert "previous" not in snapshot_item(head)  # the item of a head without movement is as it was
    moved = type(head)(**{**head.__dict__, "previous": {"c": 2}})
    assert snapshot_from_item(snapshot_item(moved)).previous == {"c": 2}


boards = st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 9), max_size=8).map(
    lambda counts: sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))
)


@given(before=boards, after=boards, top_n=st.integers(1, 6))
def test_previous_rank_is_the_rank_among_the_previous_entries_and_spares(before, after, top_n):
    previous = head_of_pairs(before[:top_n], spare=before[top_n:])
    current = head_of_pairs(after)
    truth = competition_ranks(before)
    assert previous_ranks(previous, current.items) == {item: truth[item] for item, _ in after if item in truth}
