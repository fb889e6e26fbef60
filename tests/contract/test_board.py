"""The board table's role ports (``Board`` is their union): compare-and-set on aggregates, rolls, past entries and
late moves, the sharded sparse GSIs per period kind, period items (thresholds and change marks), the snapshot items,
ranked versions, the scans and resharding."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from shardboard.adapters.dynamodb import ScanDeadline
from shardboard.adapters.keys import ITEM_ID, index_key_attr
from shardboard.domain.aggregating.batch import ShardMove
from shardboard.domain.ports import AggregateState, BoardState, LateMove, LateResult, MoveResult, PastEntry, PeriodKey
from shardboard.domain.publishing.deep_tier import deep_bucket
from shardboard.domain.publishing.head import Head, RankBlock, rows

BOARD = "contract"
D1, D2, D3 = "2026-11-22", "2026-11-23", "2026-11-24"
ALL_TIME = PeriodKey(BOARD, "all", "all")
DAY1, DAY2 = PeriodKey(BOARD, "day", D1), PeriodKey(BOARD, "day", D2)
WEEK = PeriodKey(BOARD, "week", "2026-W48")
LAST_MONTH = PeriodKey(BOARD, "month", "2026-10")


def state(applied, views, bucket=D1, counts=None, *, keyed=(), in_index=False):
    """An aggregate's state whose current day (and week) count equals its views unless ``counts`` says otherwise."""
    keyed = frozenset(keyed) | ({"all"} if in_index else set())
    return AggregateState(applied, views, bucket, {"day": views} if counts is None else counts, keyed)


def move(board, item, moves, *, bucket=D1, kinds=("day",), joins=None, buckets=None):
    """A move; a period kind it joins gets bucket 0, all time the bucket of what the move adds, unless ``buckets``
    says otherwise (the aggregator passes the bucket of the count it is sure of)."""
    joins = joins or {}
    added = sum(m.target - m.expected for m in moves)
    buckets = {kind: deep_bucket(added) if kind == "all" else 0 for kind in joins} | (buckets or {})
    return board.move(BOARD, item, bucket, moves, kinds=kinds, joins=joins, buckets=buckets)


def listed(board, kind, key, limit=10, start=None):
    """One page of a kind's index as (id, count), and its cursor: rows carry the bucket they sort by, and their
    counts are read (``read_counts``), each row checked to sort at or above its count's bucket. Within a page, rows
    are listed by bucket, then count, then id (an index orders equal sort keys as it likes)."""
    rows, cursor = board.query_shard(kind, key, limit, start)
    counts = board.read_counts(kind, [row.ref for row in rows])
    for row in rows:
        assert row.sort >= deep_bucket(counts[row.ref]), (row, counts[row.ref])
    ordered = sorted(rows, key=lambda row: (-row.sort, -counts[row.ref], row.item_id))
    return [(row.item_id, counts[row.ref]) for row in ordered], cursor


def snapshot(version: int, items: list[list[Any]], period: PeriodKey = ALL_TIME) -> Head:
    return Head(
        board=BOARD,
        period={"kind": period.kind} if period.kind == "all" else {"kind": period.kind, "bucket": period.bucket},
        bucket=period.bucket,
        version=version,
        generated_at=f"2026-11-23T06:0{version}:00.000Z",
        items=rows(items),
        items_read=len(items),
        threshold=0,
        shard_hits={0: len(items)},
        digest=f"d{version}",
    )


# -- move: the compare-and-set


def test_a_first_write_needs_the_shard_absent_and_a_replay_is_refused_with_the_state(ports):
    board = ports.board
    # Given a first move of shard 0 (expected 0: attribute_not_exists)
    assert move(board, "a", [ShardMove(0, 0, 3)]) == MoveResult(True, state({0: 3}, 3))
    # When the same move is replayed, it is refused and returns what it found
    assert move(board, "a", [ShardMove(0, 0, 3)]) == MoveResult(False, state({0: 3}, 3))
    # And a move from the applied value advances it; views and each kind's count add the difference
    assert move(board, "a", [ShardMove(0, 3, 5), ShardMove(4, 0, 2)]) == MoveResult(True, state({0: 5, 4: 2}, 7))
    assert board.state(BOARD, "a") == state({0: 5, 4: 2}, 7)
    # And aggregates are per board
    assert board.state("other", "a") == AggregateState({}, 0)


def test_a_move_is_all_or_nothing(ports):
    board = ports.board
    move(board, "a", [ShardMove(0, 0, 3), ShardMove(1, 0, 1)])
    # When one of two shards' expected values is stale
    refused = move(board, "a", [ShardMove(0, 3, 4), ShardMove(1, 0, 6)])
    # Then nothing changed, and the refusal carries the state that refused it
    assert refused == MoveResult(False, state({0: 3, 1: 1}, 4))
    assert board.state(BOARD, "a") == state({0: 3, 1: 1}, 4)


def test_a_move_expecting_a_value_on_a_missing_aggregate_is_refused_without_state(ports):
    # Given no aggregate (a board table lost, before `rebuild`)
    assert ports.board.state(BOARD, "gone") == AggregateState({}, 0)
    # Then a move that expects an applied value is refused, and there is no item to return
    assert move(ports.board, "gone", [ShardMove(0, 5, 6)]) == MoveResult(False, None)
    assert ports.board.state(BOARD, "gone") == AggregateState({}, 0)


def test_a_move_counts_in_the_kinds_it_names_and_only_in_the_aggregates_bucket(ports):
    board = ports.board
    # Given a move that counts in the day and the week
    first = move(board, "a", [ShardMove(0, 0, 3)], kinds=("day", "week"))
    assert first == MoveResult(True, state({0: 3}, 3, counts={"day": 3, "week": 3}))
    # And one that names only the week (all time always counts)
    move(board, "a", [ShardMove(0, 3, 5)], kinds=("week",))
    assert board.state(BOARD, "a") == state({0: 5}, 5, counts={"day": 3, "week": 5})
    # When a move names another anchor bucket than the aggregate's, it is refused with the state, changing nothing
    other = move(board, "a", [ShardMove(0, 0, 9)], bucket=D2)
    assert other == MoveResult(False, state({0: 5}, 5, counts={"day": 3, "week": 5}))
    assert board.state(BOARD, "a") == state({0: 5}, 5, counts={"day": 3, "week": 5})


def test_a_move_keys_the_aggregate_once_per_kind_and_never_rekeys_it(ports):
    board = ports.board
    # Given an aggregate that joined the all-time and day indexes in its first move
    joined = move(board, "a", [ShardMove(0, 0, 9)], joins={"all": "contract#4#1", "day": "contract#day#4#1"})
    # (``keyed`` lists the kinds whose keys it carries; ``in_index`` says all time is one)
    assert joined == MoveResult(True, state({0: 9}, 9, keyed=("day",), in_index=True))
    # When a later move names other keys (another layout, mid-reshard) and joins the week
    move(board, "a", [ShardMove(0, 9, 10)], kinds=("day", "week"), joins={"all": "contract#8#5", "week": "wk#4#1"})
    # Then it keeps its first keys (if_not_exists), gains the week's, and each index ranks it by its kind's count
    assert listed(board, "all", "contract#4#1", 10, None) == ([("a", 10)], None)
    assert listed(board, "all", "contract#8#5", 10, None) == ([], None)
    assert listed(board, "day", "contract#day#4#1", 10, None) == ([("a", 10)], None)
    assert listed(board, "week", "wk#4#1", 10, None) == ([("a", 1)], None)
    assert board.state(BOARD, "a").keyed == frozenset({"all", "day", "week"})


def test_join_index_keys_only_an_existing_aggregate_not_yet_in_that_kinds_index(ports):
    board = ports.board
    # Given no aggregate, the join is refused
    assert board.join_index(BOARD, "a", {"all": "contract#4#1"}, {"all": 0}) is False
    assert board.state(BOARD, "a") == AggregateState({}, 0)
    # Given an aggregate outside the (sparse) indexes, the join keys it into one kind's
    move(board, "a", [ShardMove(0, 0, 7)])
    assert listed(board, "all", "contract#4#1", 10, None) == ([], None)
    assert board.join_index(BOARD, "a", {"all": "contract#4#1"}, {"all": 0}) is True
    assert board.state(BOARD, "a").in_index
    assert board.join_index(BOARD, "a", {"day": "contract#day#4#1"}, {"day": 0}) is True
    assert board.state(BOARD, "a").keyed == frozenset({"all", "day"})
    # When a second join names another key (during a reshard), it is refused and the item keeps its key
    assert board.join_index(BOARD, "a", {"all": "contract#8#5"}, {"all": 0}) is False
    assert listed(board, "all", "contract#4#1", 10, None) == ([("a", 7)], None)
    assert listed(board, "all", "contract#8#5", 10, None) == ([], None)
    assert listed(board, "day", "contract#day#4#1", 10, None) == ([("a", 7)], None)


def test_join_index_keys_several_kinds_in_one_write_and_keeps_the_keys_it_has(ports):
    board = ports.board
    # Given an aggregate keyed into all time only
    move(board, "a", [ShardMove(0, 0, 7)])
    assert board.join_index(BOARD, "a", {"all": "contract#4#1"}, {"all": 0}) is True
    # When one join names all time (another layout's key) and two kinds it lacks
    keys = {"all": "contract#8#5", "day": "contract#day#4#1", "week": "wk#4#1"}
    assert board.join_index(BOARD, "a", keys, {"day": 0, "week": 0}) is True
    # Then it is keyed into both new kinds and keeps its all-time key; a join of keys it all has is refused
    assert board.state(BOARD, "a").keyed == frozenset({"all", "day", "week"})
    assert listed(board, "all", "contract#4#1", 10, None) == ([("a", 7)], None)
    assert listed(board, "day", "contract#day#4#1", 10, None) == ([("a", 7)], None)
    assert board.join_index(BOARD, "a", {"day": "contract#day#4#1", "week": "wk#4#1"}) is False


# -- the GSIs


def test_each_kinds_index_ranks_by_its_own_count_and_pages(ports):
    board = ports.board
    # Given aggregates whose all-time order differs from their week's order, keyed in the week's index
    for item, (views, week) in {"a": (50, 5), "b": (40, 20), "c": (30, 10)}.items():
        move(board, item, [ShardMove(0, 0, views - week)], kinds=(), joins={"all": "all#1#0"})
        buckets = {"week": deep_bucket(week)}  # as the aggregator's raise leaves it
        move(
            board, item, [ShardMove(0, views - week, views)], kinds=("week",), joins={"week": "wk#1#0"}, buckets=buckets
        )
    # And a past entry keyed in the same week index (a past week's entries share it, under their own key)
    board.archive(PastEntry(WEEK, "z", 15, None, "wk#1#0", 90, None))
    # When each index is read
    assert listed(board, "all", "all#1#0", 10, None) == ([("a", 50), ("b", 40), ("c", 30)], None)
    rows, cursor = board.query_shard("week", "wk#1#0", 1, None)
    # Then the week's is ordered by the bucket of the week's count (20 is in bucket 1, the rest in 0), pages with its
    # cursor, and holds both kinds of item, each with its exact count
    assert [(row.item_id, row.sort) for row in rows] == [("b", 1)]
    assert cursor is not None
    rest = board.query_shard("week", "wk#1#0", 10, cursor)[0]
    assert sorted((row.item_id, row.sort) for row in rest) == [("a", 0), ("c", 0), ("z", 0)]
    assert listed(board, "week", "wk#1#0", 10, None)[0] == [("b", 20), ("z", 15), ("c", 10), ("a", 5)]
    assert listed(board, "day", "wk#1#0", 10, None) == ([], None)


def test_a_page_that_fills_its_limit_has_a_cursor_even_when_nothing_follows(ports):
    # Given two indexed aggregates on one shard
    move(ports.board, "a", [ShardMove(0, 0, 2)], joins={"all": "contract#1#0"})
    move(ports.board, "b", [ShardMove(0, 0, 1)], joins={"all": "contract#1#0"})
    # When a page of exactly two is read
    rows, cursor = listed(ports.board, "all", "contract#1#0", 2, None)
    assert rows == [("a", 2), ("b", 1)]
    # Then DynamoDB (and the in-memory board) return a cursor, since a Query that stops at its Limit cannot know that
    # nothing follows; moto returns none here, a difference of moto's that the snapshot's gather tolerates either way
    assert (cursor is not None) is (ports.name != "moto")
    if cursor is not None:
        assert listed(ports.board, "all", "contract#1#0", 2, cursor) == ([], None)


def test_a_bucket_only_rises_and_a_count_change_within_it_leaves_the_index_entry_alone(ports):
    board = ports.board
    # Given an aggregate keyed into the day's index at the bucket of the count its move was sure of
    move(board, "a", [ShardMove(0, 0, 7)], joins={"day": "d1#1#0"}, buckets={"day": 0})
    assert board.state(BOARD, "a").buckets == {"day": 0}
    # When its count grows past 16 (bucket 1), the aggregator raises the bucket (one write: the key stays)
    move(board, "a", [ShardMove(0, 7, 40)])
    assert board.join_index(BOARD, "a", {"day": "d1#2#1"}, {"day": 1}) is True
    assert board.state(BOARD, "a").buckets == {"day": 1}
    assert listed(board, "day", "d1#1#0") == ([("a", 40)], None)
    assert [row.sort for row in board.query_shard("day", "d1#1#0", 10, None)[0]] == [1]
    # Then a stale writer's raise to a bucket not higher is refused and changes nothing
    assert board.join_index(BOARD, "a", {"day": "d1#1#0"}, {"day": 1}) is False
    assert board.join_index(BOARD, "a", {"day": "d1#1#0"}, {"day": 0}) is False
    assert board.state(BOARD, "a").buckets == {"day": 1}
    # And a move's join never lowers a bucket it finds (if_not_exists)
    move(board, "a", [ShardMove(0, 40, 41)], joins={"day": "d1#1#0"}, buckets={"day": 0})
    assert board.state(BOARD, "a").buckets == {"day": 1}


def test_read_counts_reads_aggregates_and_past_entries_by_the_rows_refs(ports):
    board = ports.board
    move(board, "a", [ShardMove(0, 0, 30)], kinds=("day", "week"), joins={"week": "wk#1#0"}, buckets={"week": 1})
    board.archive(PastEntry(WEEK, "z", 15, None, "wk#1#0", 90, None))
    rows, _ = board.query_shard("week", "wk#1#0", 10, None)
    refs = {row.item_id: row.ref for row in rows}
    assert board.read_counts("week", [refs["a"], refs["z"], "gone"]) == {refs["a"]: 30, refs["z"]: 15}
    assert board.read_counts("day", [refs["a"]]) == {refs["a"]: 30}
    assert board.read_counts("week", []) == {}


def test_join_entry_raises_a_past_entrys_bucket_only_upwards(ports):
    board = ports.board
    board.archive(PastEntry(DAY1, "a", 6, {0: 6}, "d1#1#0", 6, None))
    assert board.entry_state(DAY1, "a").buckets == {"day": 0}
    assert board.join_entry(DAY1, "a", "d1#1#0", 0) is False
    assert board.join_entry(DAY1, "a", "d1#2#1", 1) is True
    assert board.entry_state(DAY1, "a").buckets == {"day": 1}
    assert listed(board, "day", "d1#1#0") == ([("a", 6)], None)  # keeps its key


# -- roll and past entries


def test_roll_replaces_the_state_only_if_it_is_unchanged(ports):
    board = ports.board
    move(board, "a", [ShardMove(0, 0, 4), ShardMove(1, 0, 2)], kinds=("day", "week"), joins={"day": "d1#1#0"})
    old = board.state(BOARD, "a")
    # When the aggregate rolls to the next day: applied values of the new bucket, the day's count restarts
    new = AggregateState({1: 3}, 9, D2, {"day": 3, "week": 9})
    assert board.roll(BOARD, "a", old, new, {"day": "d2#1#0"}) is True
    # Then its state is the new one, and the day index holds it under the new day's key only
    assert board.state(BOARD, "a") == state({1: 3}, 9, D2, {"day": 3, "week": 9}, keyed=("day",))
    assert listed(board, "day", "d1#1#0", 10, None) == ([], None)
    assert listed(board, "day", "d2#1#0", 10, None) == ([("a", 3)], None)
    # When a roll computed from the stale state comes (another invocation rolled first), it is refused
    stale = AggregateState({0: 1}, 1, D3, {"day": 1, "week": 1})
    assert board.roll(BOARD, "a", old, stale, {"day": None}) is False
    assert board.state(BOARD, "a") == state({1: 3}, 9, D2, {"day": 3, "week": 9}, keyed=("day",))
    # And a key of None removes the aggregate from that kind's index
    newer = AggregateState({}, 9, D3, {"day": 0, "week": 9})
    assert board.roll(BOARD, "a", board.state(BOARD, "a"), newer, {"day": None}) is True
    assert board.state(BOARD, "a") == state({}, 9, D3, {"day": 0, "week": 9})
    assert listed(board, "day", "d2#1#0", 10, None) == ([], None)
    # And a missing aggregate does not roll
    assert board.roll(BOARD, "gone", old, new, {}) is False
    assert board.state(BOARD, "gone") == AggregateState({}, 0)


def test_archive_keeps_the_copy_from_the_latest_source(ports):
    board = ports.board
    # Given a past day's entry copied when the aggregate had 10 views, with its applied values and index key
    board.archive(PastEntry(DAY1, "a", 6, {0: 4, 1: 2}, "d1#1#0", 10, 2_000_000_000))
    assert board.entry_state(DAY1, "a") == state({0: 4, 1: 2}, 6, D1, keyed=("day",))
    # When a copy from an earlier aggregate state arrives (a slower invocation), it is refused
    board.archive(PastEntry(DAY1, "a", 3, {0: 3}, None, 8, None))
    board.archive(PastEntry(DAY1, "a", 5, {0: 5}, None, 10, None))
    assert board.entry_state(DAY1, "a") == state({0: 4, 1: 2}, 6, D1, keyed=("day",))
    assert listed(board, "day", "d1#1#0", 10, None) == ([("a", 6)], None)
    # And a copy from a later state replaces it whole
    board.archive(PastEntry(DAY1, "a", 7, {0: 5, 1: 2}, None, 11, None))
    assert board.entry_state(DAY1, "a") == state({0: 5, 1: 2}, 7, D1)
    assert listed(board, "day", "d1#1#0", 10, None) == ([], None)
    # And a coarser past period's entry has no applied values; entries are per period and item
    board.archive(PastEntry(LAST_MONTH, "a", 40, None, None, 11, None))
    assert board.entry_state(LAST_MONTH, "a") == AggregateState({}, 40, "2026-10", {"month": 40})
    assert board.entry_state(DAY2, "a") == AggregateState({}, 0)
    assert board.state(BOARD, "a") == AggregateState({}, 0)


def test_join_entry_keys_only_an_existing_entry_not_yet_keyed(ports):
    board = ports.board
    assert board.join_entry(DAY1, "a", "d1#1#0") is False
    assert board.entry_state(DAY1, "a") == AggregateState({}, 0)
    board.archive(PastEntry(DAY1, "a", 6, {0: 6}, None, 6, None))
    assert board.join_entry(DAY1, "a", "d1#1#0") is True
    assert board.join_entry(DAY1, "a", "d1#2#1") is False
    assert board.entry_state(DAY1, "a").keyed == frozenset({"day"})
    assert listed(board, "day", "d1#1#0", 10, None) == ([("a", 6)], None)
    assert listed(board, "day", "d1#2#1", 10, None) == ([], None)


def test_erase_deletes_the_named_entries_then_the_aggregate_and_their_index_keys(ports):
    board = ports.board
    # Given an item with an aggregate keyed in the day index, two keyed past entries, and another item
    move(board, "a", [ShardMove(0, 0, 5)], bucket=D2, joins={"day": "d2#1#0"})
    board.archive(PastEntry(DAY1, "a", 6, {0: 6}, "d1#1#0", 11, None))
    board.archive(PastEntry(LAST_MONTH, "a", 40, None, None, 11, None))
    move(board, "b", [ShardMove(0, 0, 3)], bucket=D2, joins={"day": "d2#1#0"})
    board.archive(PastEntry(DAY1, "b", 2, {0: 2}, "d1#1#0", 5, None))
    # When it is erased over its periods (all time has no entry; a period with none, and another board's, are skipped)
    other = PeriodKey("elsewhere", "day", D1)
    erased = board.erase(BOARD, "a", [ALL_TIME, DAY1, DAY2, WEEK, LAST_MONTH, other])
    # Then its aggregate and both entries are gone, out of the indexes, and nothing else moved
    assert erased == 3
    assert board.state(BOARD, "a") == AggregateState({}, 0)
    assert board.entry_state(DAY1, "a") == AggregateState({}, 0)
    assert board.entry_state(LAST_MONTH, "a") == AggregateState({}, 0)
    assert listed(board, "day", "d2#1#0", 10, None) == ([("b", 3)], None)
    assert listed(board, "day", "d1#1#0", 10, None) == ([("b", 2)], None)
    assert board.entry_state(DAY1, "b") == state({0: 2}, 2, D1, keyed=("day",))
    # And a repeat finds nothing to erase
    assert board.erase(BOARD, "a", [ALL_TIME, DAY1, LAST_MONTH]) == 0


# -- late moves


def late(moves, aggregate_bucket=D2, joins=None):
    """Views of day D1 arriving after the aggregate rolled to ``aggregate_bucket``: they count in D1's entry, the
    aggregate's all time and week, and last month's past entry."""
    return LateMove(
        BOARD,
        "a",
        D1,
        moves,
        "day",
        aggregate_bucket,
        ("week",),
        (LAST_MONTH,),
        joins or {},
        {DAY1: 2_000_000_000, LAST_MONTH: None},
    )


def rolled(board):
    """An aggregate in D2 with 10 views (6 of them in D1, archived with their applied values)."""
    move(board, "a", [ShardMove(0, 0, 4)], bucket=D2, kinds=("day", "week"))
    board.roll(BOARD, "a", board.state(BOARD, "a"), AggregateState({0: 4}, 10, D2, {"day": 4, "week": 10}), {})
    board.archive(PastEntry(DAY1, "a", 6, {0: 6}, None, 10, None))


def test_a_move_adds_a_weighted_kinds_delta_times_its_weight(ports):
    board = ports.board
    weight = 2**40 + 7  # a trending weight: larger than 2^32, not a power of two
    # Given a move that counts in the day and in a weighted kind
    first = board.move(
        BOARD, "a", D1, [ShardMove(0, 0, 3)], kinds=("day", "trending"), joins={}, weights={"trending": weight}
    )
    # Then all time and the day add the views, the weighted kind the views times its weight
    assert first == MoveResult(True, state({0: 3}, 3, counts={"day": 3, "trending": 3 * weight}))
    board.move(BOARD, "a", D1, [ShardMove(0, 3, 5)], kinds=("day", "trending"), joins={}, weights={"trending": weight})
    assert board.state(BOARD, "a") == state({0: 5}, 5, counts={"day": 5, "trending": 5 * weight})


def test_a_late_move_adds_a_weighted_kinds_delta_times_its_weight_to_the_aggregate_and_past_entries(ports):
    board = ports.board
    rolled(board)
    weights = {"week": 1000, "month": 3}
    # When D1's shard 0 advances from 6 to 9 with the week and the month weighted (as trending would be)
    result = board.move_late(dataclasses.replace(late([ShardMove(0, 6, 9)]), weights=weights))
    # Then the entry's own count adds 3, the aggregate's week 3 x 1000, last month's entry 3 x 3
    assert result == LateResult(True)
    assert board.entry_state(DAY1, "a") == state({0: 9}, 9, D1)
    assert board.state(BOARD, "a") == state({0: 4}, 13, D2, {"day": 4, "week": 10 + 3000})
    assert board.entry_state(LAST_MONTH, "a") == AggregateState({}, 9, "2026-10", {"month": 9})


def test_a_late_move_moves_the_entry_the_aggregate_and_past_entries_together(ports):
    board = ports.board
    rolled(board)
    # When D1's shard 0 advances from 6 to 9 and shard 1 appears with 2
    result = board.move_late(late([ShardMove(0, 6, 9), ShardMove(1, 0, 2)], joins={DAY1: "d1#1#0"}))
    # Then it applied: the entry's applied values and count, the aggregate's all time and week (not its day), and
    # last month's entry (created) all moved by 5
    assert result == LateResult(True)
    assert board.entry_state(DAY1, "a") == state({0: 9, 1: 2}, 11, D1, keyed=("day",))
    assert board.state(BOARD, "a") == state({0: 4}, 15, D2, {"day": 4, "week": 15})
    assert board.entry_state(LAST_MONTH, "a") == AggregateState({}, 5, "2026-10", {"month": 5})
    assert listed(board, "day", "d1#1#0", 10, None) == ([("a", 11)], None)


def test_a_late_move_refused_by_the_entry_changes_nothing_and_returns_the_entry(ports):
    board = ports.board
    rolled(board)
    # When the entry's applied value is not the one expected (a replay)
    result = board.move_late(late([ShardMove(0, 3, 9), ShardMove(1, 0, 2)]))
    # Then nothing moved anywhere, and the refusal carries the entry's state
    assert result == LateResult(False, state({0: 6}, 6, D1))
    assert board.entry_state(DAY1, "a") == state({0: 6}, 6, D1)
    assert board.state(BOARD, "a") == state({0: 4}, 10, D2, {"day": 4, "week": 10})
    assert board.entry_state(LAST_MONTH, "a") == AggregateState({}, 0)


def test_a_late_move_refused_by_the_aggregates_bucket_reports_it_moved(ports):
    board = ports.board
    rolled(board)
    # When the aggregate is no longer in the bucket the move was computed for (it rolled on meanwhile)
    result = board.move_late(late([ShardMove(0, 6, 9)], aggregate_bucket=D1))
    # Then nothing moved, and the result says to recompute
    assert result == LateResult(False, None, aggregate_moved=True)
    assert board.entry_state(DAY1, "a") == state({0: 6}, 6, D1)
    assert board.state(BOARD, "a") == state({0: 4}, 10, D2, {"day": 4, "week": 10})
    # And with no aggregate at all (a lost board table) it is the same outcome
    board.delete_aggregate("a", BOARD)
    assert board.move_late(late([ShardMove(0, 6, 9)])) == LateResult(False, None, aggregate_moved=True)
    assert board.entry_state(DAY1, "a") == state({0: 6}, 6, D1)


# -- period items


def test_the_threshold_only_rises_per_period_and_reads_in_one_call(ports):
    board = ports.board
    assert board.get_board_state(BOARD) == BoardState(0, None, None)
    assert board.thresholds([ALL_TIME, DAY1]) == {}
    assert board.raise_threshold(ALL_TIME, 10) is True
    assert board.raise_threshold(ALL_TIME, 5) is False
    assert board.raise_threshold(ALL_TIME, 10) is False
    assert board.raise_threshold(ALL_TIME, 12) is True
    assert board.get_board_state(BOARD, consistent=True) == BoardState(12, None, None)
    # And each period has its own threshold; a period with none published is left out
    assert board.raise_threshold(DAY1, 3) is True
    assert board.raise_threshold(DAY1, 2) is False
    found = board.thresholds([ALL_TIME, DAY1, DAY2])
    assert found == {ALL_TIME: BoardState(12, None, None), DAY1: BoardState(3, None, None)}


def test_only_refill_lowers_a_published_threshold(ports):
    board = ports.board
    # Nothing published: nothing to lower
    assert board.lower_threshold(DAY1, 3) is False
    assert board.thresholds([DAY1]) == {}
    # Given a published T, lowering it takes only a lower value, and T rises again from there
    assert board.raise_threshold(DAY1, 10) is True
    assert board.lower_threshold(DAY1, 10) is False
    assert board.lower_threshold(DAY1, 12) is False
    assert board.lower_threshold(DAY1, 4) is True
    assert board.thresholds([DAY1], consistent=True) == {DAY1: BoardState(4, None, None)}
    assert board.raise_threshold(DAY1, 6) is True
    assert board.thresholds([DAY1], consistent=True) == {DAY1: BoardState(6, None, None)}


def test_a_change_counted_after_the_read_keeps_the_period_dirty(ports):
    board = ports.board
    assert board.changed_periods() == [] and board.periods() == []
    # Given a batch that changed all time and day 1
    board.mark_changed([ALL_TIME, DAY1], 100, {ALL_TIME: None, DAY1: 2_000_000_000})
    read = {status.period: status for status in board.changed_periods()}
    assert set(read) == {ALL_TIME, DAY1}
    assert (read[DAY1].changed_at, read[DAY1].changes, read[DAY1].refreshed_at) == (100, 1, 0)
    # When another batch changes day 1 while the snapshot job refreshes both
    board.mark_changed([DAY1], 110, {})
    board.mark_refreshed(ALL_TIME, read[ALL_TIME].changes, 120)
    board.mark_refreshed(DAY1, read[DAY1].changes, 120)
    # Then all time is clean, day 1 stays dirty with both changes counted; its refresh is recorded all the same
    (dirty,) = board.changed_periods()
    assert (dirty.period, dirty.changed_at, dirty.changes, dirty.refreshed_at) == (DAY1, 110, 2, 120)
    # And a read of the periods' thresholds tells their change counts too (a reader's "changed since I read it"),
    # and since when day 1's counts wait for a refresh: the refresh that missed its second change (`verify`)
    found = board.thresholds([ALL_TIME, DAY1], consistent=True)
    assert (found[ALL_TIME].changes, found[DAY1].changes) == (1, 2)
    assert (found[ALL_TIME].dirty_since, found[DAY1].dirty_since) == (0, 120)
    # And `periods` lists the board's all-time item (clean) and the dirty day
    listed = {status.period: status for status in board.periods()}
    assert set(listed) == {ALL_TIME, DAY1}
    assert (listed[ALL_TIME].refreshed_at, listed[ALL_TIME].changes) == (120, 1)
    # When the next refresh covers both changes, the day leaves the lists; all time stays listed
    board.mark_refreshed(DAY1, 2, 130)
    assert board.changed_periods() == []
    assert [status.period for status in board.periods()] == [ALL_TIME]


def test_period_items_carry_their_threshold(ports):
    board = ports.board
    board.raise_threshold(DAY1, 7)
    board.mark_changed([DAY1], 100, {})
    (status,) = board.changed_periods()
    assert (status.period, status.threshold) == (DAY1, 7)


# -- snapshots


def test_the_snapshot_is_written_only_over_the_version_it_read(ports):
    board = ports.board
    assert board.get_snapshot(ALL_TIME) is None
    first = snapshot(1, [["a", 50], ["b", 40]])
    # Given the first snapshot, written over none
    assert board.put_snapshot(first, None) is True
    # Then another job that also read none loses the race
    assert board.put_snapshot(snapshot(1, [["z", 1]]), None) is False
    # And the next version is written over version 1, only once
    second = snapshot(2, [["b", 60], ["a", 50]])
    assert board.put_snapshot(second, 1) is True
    assert board.put_snapshot(snapshot(2, [["z", 2]]), 1) is False
    # And it reads back as written (shard_hits keys are board shard numbers)
    assert board.get_snapshot(ALL_TIME, consistent=True) == second


def test_each_period_has_its_own_snapshot(ports):
    board = ports.board
    day = snapshot(1, [["a", 5]], DAY1)
    assert board.put_snapshot(day, None) is True
    assert board.get_snapshot(ALL_TIME) is None
    assert board.get_snapshot(DAY2) is None
    assert board.get_snapshot(DAY1, consistent=True) == day
    assert board.put_snapshot(snapshot(1, [["b", 1]]), None) is True


def test_a_head_with_day_before_ranks_reads_back_as_written(ports):
    board = ports.board
    head = dataclasses.replace(snapshot(1, [["a", 5], ["b", 4]]), day_before={"b": 1})
    assert board.put_snapshot(head, None) is True
    assert board.get_snapshot(ALL_TIME, consistent=True) == head
    # (stored aligned with the entries: a rank of an id the head does not hold is not stored)
    assert board.put_snapshot(dataclasses.replace(head, version=2, day_before={"b": 1, "gone": 2}), 1) is True
    assert board.get_snapshot(ALL_TIME, consistent=True) == dataclasses.replace(head, version=2)


def test_refreshes_failed_in_a_row_are_counted_until_one_succeeds(ports):
    board = ports.board
    # Given a changed period whose refreshes fail twice
    board.mark_changed([DAY1], 100, {DAY1: 2_000_000_000})
    assert (board.mark_failed(DAY1, 110), board.mark_failed(DAY1, 170)) == (1, 2)
    state = board.thresholds([DAY1], consistent=True)[DAY1]
    # Then its item tells how many, since the first, and since when its counts wait
    assert (state.failures, state.failing_since, state.dirty_since) == (2, 110, 100)
    # And a refresh that succeeds ends the count and the wait
    (status,) = board.changed_periods()
    board.mark_refreshed(DAY1, status.changes, 200)
    state = board.thresholds([DAY1], consistent=True)[DAY1]
    assert (state.failures, state.failing_since, state.dirty_since, state.refreshed_at) == (0, 0, 0, 200)


# -- ranks checkpoints: a period's head ranks per hour, read a day later


def test_a_ranks_checkpoint_is_kept_per_period_and_hour_and_a_missing_one_is_none(ports):
    board = ports.board
    expires = int(time.time()) + 2 * 86400
    assert board.get_ranks_checkpoint(DAY1, "2026-11-22T06") is None
    # Given the checkpoint of day 1 at 06:00 (ids of any bytes, ranks shared by ties)
    ranks = {"a": 1, "b#1": 2, "ü/x y": 2}
    board.put_ranks_checkpoint(DAY1, "2026-11-22T06", ranks, expires)
    # Then it reads back by period and hour, and no other period or hour has it
    assert board.get_ranks_checkpoint(DAY1, "2026-11-22T06") == ranks
    assert board.get_ranks_checkpoint(DAY1, "2026-11-22T07") is None
    assert board.get_ranks_checkpoint(DAY2, "2026-11-22T06") is None
    assert board.get_ranks_checkpoint(ALL_TIME, "2026-11-22T06") is None
    # And a second write of the same hour replaces it (a job that lost the head's race wrote it first)
    board.put_ranks_checkpoint(DAY1, "2026-11-22T06", {"c": 1}, expires)
    assert board.get_ranks_checkpoint(DAY1, "2026-11-22T06") == {"c": 1}
    # And an empty head's checkpoint is an empty one, not none
    board.put_ranks_checkpoint(ALL_TIME, "2026-11-22T06", {}, expires)
    assert board.get_ranks_checkpoint(ALL_TIME, "2026-11-22T06") == {}


def test_checkpoints_are_not_counts(ports):
    board = ports.board
    board.put_ranks_checkpoint(ALL_TIME, "2026-11-22T06", {"a": 1}, int(time.time()) + 86400)
    assert board.scan_counts() == []


# -- ranked versions: pages and rank shards, and the head's rank block


def test_ranked_version_parts_are_written_read_by_shard_and_deleted(ports):
    from shardboard.domain.publishing.gather import Entry
    from shardboard.domain.publishing.ranked_versions import build_parts

    board = ports.board
    # Given a ranked version of 260 entries (3 pages, 2 rank shards at D = 260), ids with '#' and Unicode
    ranked = sorted(Entry(id=f"img#{i}/é", views=1000 - i // 3) for i in range(260))
    parts = build_parts(ranked, depth=260, rv="rv1")
    board.put_rank_parts(WEEK, parts, expires_at=1_900_000_000)
    # Then its rank shards read back as written, and a missing shard is absent from the answer
    assert board.get_rank_shards(WEEK, "rv1", [0, 1, 7]) == {0: parts.shards[0], 1: parts.shards[1]}
    # And another version or period does not see them
    assert board.get_rank_shards(DAY1, "rv1", [0]) == {} and board.get_rank_shards(WEEK, "rv2", [0]) == {}
    # And its pages read back by number (one BatchGetItem), a page past the last absent
    assert board.get_rank_pages(WEEK, "rv1", [1, 2, 3]) == {1: parts.pages[1], 2: parts.pages[2]}
    assert board.get_rank_pages(WEEK, "rv2", [0]) == {}
    # When the version is deleted (twice: a retried GC), nothing of it remains
    board.delete_rank_parts(WEEK, "rv1", len(parts.pages), len(parts.shards))
    board.delete_rank_parts(WEEK, "rv1", len(parts.pages), len(parts.shards))
    assert board.get_rank_shards(WEEK, "rv1", [0, 1]) == {} and board.get_rank_pages(WEEK, "rv1", [0]) == {}


def test_the_snapshot_head_keeps_its_rank_block(ports):
    board = ports.board
    rank = RankBlock.from_json(
        {
            "rv": "abc",
            "generated_at": "2026-11-23T06:01:00.000Z",
            "depth": 10,
            "count": 1,
            "page_size": 100,
            "shards": 1,
            "pages": [[1, 9, 2, 1]],
            "last": [9, 1],
            "events": [["hide", "b", 2], ["unhide", "b"]],
            "hits": {"0": 3},
            "digest": "r1",
            "threshold": 0,
            "retired": [["x", "t", 1, 1], ["y", "u", 2, 1, [["delete", "c", 1]], 150]],
        }
    )
    assert board.put_snapshot(dataclasses.replace(snapshot(1, [["a", 9]]), rank=rank), None)
    assert board.get_snapshot(ALL_TIME).rank == rank
    # And a head without one reads back without one
    assert board.put_snapshot(snapshot(2, [["a", 9]]), 1)
    assert board.get_snapshot(ALL_TIME).rank is None


# -- all time's index (docs/coarse-index.md): KEYS_ONLY, sorted by the bucket of the views


def all_time_pages(board, key, limit):
    """Every (id, bucket) of one shard of all time's index, page by page, and how many pages it took."""
    rows, cursor, pages = [], None, 0
    while True:
        page, cursor = board.query_shard("all", key, limit, cursor)
        rows += [(row.item_id, row.sort) for row in page]
        pages += 1
        if cursor is None:
            return rows, pages


def test_a_move_keys_all_time_only_if_absent_and_a_join_only_raises_its_bucket(ports):
    board = ports.board
    # Given a move that keys an aggregate into all time's index at bucket 0
    assert move(board, "a", [ShardMove(0, 0, 5)], kinds=(), joins={"all": "contract#2#0"}).applied
    assert board.state(BOARD, "a").buckets == {"all": 0} and board.state(BOARD, "a").in_index
    assert all_time_pages(board, "contract#2#0", 10)[0] == [("a", 0)]
    # When a later move names another key and bucket, the stored ones stay (if_not_exists)
    joins, buckets = {"all": "contract#2#1"}, {"all": 3}
    assert move(board, "a", [ShardMove(0, 5, 6)], kinds=(), joins=joins, buckets=buckets).applied
    assert board.state(BOARD, "a").buckets == {"all": 0}
    assert all_time_pages(board, "contract#2#1", 10)[0] == []
    # And a join raises the bucket but keeps the key (only `reshard` moves keys)
    assert board.join_index(BOARD, "a", {"all": "contract#2#1"}, {"all": 1}) is True
    assert all_time_pages(board, "contract#2#0", 10)[0] == [("a", 1)]
    # And a stale writer never moves it back, nor writes the same bucket again
    assert board.join_index(BOARD, "a", {"all": "contract#2#0"}, {"all": 1}) is False
    assert board.join_index(BOARD, "a", {"all": "contract#2#0"}, {"all": 0}) is False
    assert board.state(BOARD, "a") == AggregateState({0: 6}, 6, D1, {}, frozenset({"all"}), {"all": 1})
    # And there is no join without an aggregate
    assert board.join_index(BOARD, "gone", {"all": "contract#2#0"}, {"all": 1}) is False
    assert board.state(BOARD, "gone") == AggregateState({}, 0)


def test_all_time_s_index_is_best_bucket_first_pages_with_its_cursor_and_reads_the_views(ports):
    board = ports.board
    # Given aggregates in three buckets of one shard (ids holding '#'), one on another shard, one not keyed
    keyed = {"a": 2, "b#x": 0, "c": 1, "d": 2, "e#": 0}
    for item, bucket in keyed.items():
        move(board, item, [ShardMove(0, 0, 16**bucket)], kinds=())
        assert board.join_index(BOARD, item, {"all": "contract#2#0"}, {"all": bucket})
    move(board, "other", [ShardMove(0, 0, 1)], kinds=(), joins={"all": "contract#2#1"})
    move(board, "tail", [ShardMove(0, 0, 1)], kinds=())
    # When the shard is read two at a time
    rows, pages = all_time_pages(board, "contract#2#0", 2)
    # Then it sees exactly that shard's keys, best bucket first (the order inside a bucket is the index's)
    assert sorted(rows) == sorted(keyed.items()) and pages == 3
    assert [bucket for _, bucket in rows] == sorted(keyed.values(), reverse=True)
    # And the rows' refs read the exact views (what exists only)
    refs = {row.item_id: row.ref for row in board.query_shard("all", "contract#2#0", 10, None)[0]}
    assert board.read_counts("all", [refs["a"], refs["b#x"], "item#contract#missing"]) == {
        refs["a"]: 256,
        refs["b#x"]: 1,
    }
    # And a bucket raised moves the item up
    assert board.join_index(BOARD, "b#x", {"all": "contract#2#0"}, {"all": 5})
    assert all_time_pages(board, "contract#2#0", 1)[0][0] == ("b#x", 5)


def test_the_views_index_of_the_releases_before_is_never_written(ports):
    board = ports.board
    # Given aggregates keyed in all time's index
    move(board, "a", [ShardMove(0, 0, 3)], kinds=(), joins={"all": "contract#2#0"})
    # Then `by-views` holds nothing: a read of it is one empty page
    assert board.query_views_index("contract#2#0", 10, None) == ([], None)


def test_the_deep_threshold_only_rises_beside_t(ports):
    board = ports.board
    assert board.raise_deep_threshold(BOARD, 4) is True
    assert board.raise_deep_threshold(BOARD, 3) is False
    assert board.raise_deep_threshold(BOARD, 4) is False
    assert board.raise_threshold(ALL_TIME, 30) is True
    assert board.raise_deep_threshold(BOARD, 6) is True
    assert board.get_board_state(BOARD, consistent=True) == BoardState(30, None, None, deep_threshold=6)
    assert board.thresholds([ALL_TIME]) == {ALL_TIME: BoardState(30, None, None, deep_threshold=6)}


def test_add_history_adds_to_an_aggregate_only_as_it_was_seen(ports):
    board = ports.board
    # Given an aggregate, as ``rebuild`` reads it before giving it back its past entries' views
    move(board, "a", [ShardMove(0, 0, 3)], kinds=("day", "week"), joins={"all": "contract#4#1"})
    seen = board.state(BOARD, "a")
    # When views are added per kind ("all": all-time views), the index ranks it by its new count
    assert board.add_history(BOARD, "a", seen, {"all": 5, "week": 2}) is True
    assert board.state(BOARD, "a") == state({0: 3}, 8, counts={"day": 3, "week": 5}, in_index=True)
    assert listed(board, "all", "contract#4#1", 10, None) == ([("a", 8)], None)
    # Then an add from a state it no longer holds (other views, another bucket, no aggregate) is refused
    assert board.add_history(BOARD, "a", seen, {"all": 1}) is False
    assert board.add_history(BOARD, "a", state({0: 3}, 8, D2), {"all": 1}) is False
    assert board.add_history(BOARD, "gone", AggregateState({}, 0), {"all": 1}) is False
    assert board.state(BOARD, "a").views == 8
    assert board.state(BOARD, "gone") == AggregateState({}, 0)


def test_aggregate_views_reads_one_aggregate_per_board(ports):
    board = ports.board
    move(board, "a", [ShardMove(0, 0, 3), ShardMove(2, 0, 4)])
    assert board.aggregate_views("a", BOARD) == 7
    # The global board's is another aggregate; an item without one has none
    assert board.aggregate_views("a") is None
    assert board.aggregate_views("missing", BOARD) is None
    board.delete_aggregate("a", BOARD)
    assert board.aggregate_views("a", BOARD) is None


def test_states_reads_many_aggregates_at_once_and_leaves_out_those_without_one(ports):
    board = ports.board
    move(board, "a", [ShardMove(0, 0, 3), ShardMove(2, 0, 4)])
    move(board, "b", [ShardMove(1, 0, 2)], bucket=D2)
    keys = [(BOARD, "a"), (BOARD, "b"), (BOARD, "missing"), ("global", "a")]
    keys += [(BOARD, f"none-{n}") for n in range(120)]  # more than one request's worth (100 keys)
    found = board.states(keys)
    assert found == {(BOARD, "a"): state({0: 3, 2: 4}, 7), (BOARD, "b"): state({1: 2}, 2, bucket=D2)}


def test_get_threshold_is_the_published_all_time_t(ports):
    board = ports.board
    assert board.get_threshold(BOARD) == 0
    assert board.raise_threshold(DAY1, 9) is True  # another period's T is not all time's
    assert board.get_threshold(BOARD) == 0
    assert board.raise_threshold(ALL_TIME, 4) is True
    assert board.get_threshold(BOARD) == 4


# -- scans


def test_the_count_scan_reads_every_aggregate_and_past_entry_and_only_those(ports):
    board = ports.board
    # Given two aggregates, one of them keyed, a past entry, and period items, a snapshot and a ranked version
    move(board, "a", [ShardMove(0, 0, 5)], bucket=D2, joins={"all": "contract#4#1"})
    move(board, "b", [ShardMove(0, 0, 2)], bucket=D2)
    board.archive(PastEntry(DAY1, "a", 6, {0: 6}, None, 11, None))
    board.raise_threshold(ALL_TIME, 3)
    board.mark_changed([DAY2], 100, {DAY2: None})
    assert board.put_snapshot(snapshot(1, [["a", 5]]), None)
    # Then the scan returns the three counts, and the aggregates of one board by id
    rows = board.scan_counts()
    assert sorted(row[ITEM_ID]["S"] for row in rows) == ["a", "a", "b"]
    assert board.scan_aggregates(BOARD) == {"a": (5, True), "b": (2, False)}
    assert board.scan_aggregates() == {}
    # And a scan still reading at its deadline stops
    with pytest.raises(ScanDeadline):
        board.scan_counts(deadline=time.monotonic() - 1)


# -- resharding


def test_a_reshard_begins_only_from_the_current_layout_and_finishes_only_that_move(ports):
    board = ports.board
    # Given no layout stored: the template's default counts as current only when the caller says it is
    assert board.begin_reshard(BOARD, 4, 8, current_is_default=False) is False
    assert board.begin_reshard(BOARD, 4, 8, current_is_default=True) is True
    assert board.get_board_state(BOARD, consistent=True) == BoardState(0, 8, 4)
    # While it moves, no other move begins, and only that move finishes
    assert board.begin_reshard(BOARD, 8, 16, current_is_default=False) is False
    assert board.finish_reshard(BOARD, 4, 16) is False
    assert board.finish_reshard(BOARD, 4, 8) is True
    assert board.get_board_state(BOARD, consistent=True) == BoardState(0, 8, None)
    assert board.finish_reshard(BOARD, 4, 8) is False
    # The next move starts from the stored layout, and a published T stays
    assert board.raise_threshold(ALL_TIME, 6) is True
    assert board.begin_reshard(BOARD, 4, 16, current_is_default=True) is False
    assert board.begin_reshard(BOARD, 8, 16, current_is_default=False) is True
    assert board.get_board_state(BOARD, consistent=True) == BoardState(6, 16, 8)


def test_the_layout_scan_finds_the_keys_left_in_a_layout_and_rekey_moves_each_once(ports):
    board = ports.board
    # Given keys in layout 4 (an aggregate in all time and a day, a past entry), one in layout 8, and another board's
    # key in layout 4
    day_key = "contract#day#2026-11-23#4#1"
    move(board, "a", [ShardMove(0, 0, 5)], bucket=D2, joins={"all": "contract#4#1", "day": day_key})
    board.archive(PastEntry(DAY1, "b", 6, {0: 6}, "contract#day#2026-11-22#4#3", 11, None))
    move(board, "c", [ShardMove(0, 0, 7)], bucket=D2, joins={"all": "contract#8#2"})
    board.move("elsewhere", "a", D2, [ShardMove(0, 0, 1)], kinds=("day",), joins={"all": "elsewhere#4#1"})
    # When the layout is scanned
    found = board.scan_layout(BOARD, 4)
    # Then every key of the board still in layout 4 is named, with its item
    named = sorted((attribute, key, item) for _, attribute, key, item in found)
    assert named == sorted(
        [
            (index_key_attr("all"), "contract#4#1", "a"),
            (index_key_attr("day"), day_key, "a"),
            (index_key_attr("day"), "contract#day#2026-11-22#4#3", "b"),
        ]
    )
    assert [(key, item) for _, _, key, item in board.scan_layout(BOARD, 8)] == [("contract#8#2", "c")]
    # When the aggregate's all-time key is moved to layout 8, its index follows; a second move of it is refused
    pk, attribute, old, _ = next(where for where in found if where[2] == "contract#4#1")
    assert board.rekey(pk, attribute, old, "contract#8#5") is True
    assert board.rekey(pk, attribute, old, "contract#8#6") is False
    assert listed(board, "all", "contract#4#1", 10, None) == ([], None)
    assert listed(board, "all", "contract#8#5", 10, None) == ([("a", 5)], None)
    assert len(board.scan_layout(BOARD, 4)) == 2
    assert sorted(item for _, _, _, item in board.scan_layout(BOARD, 8)) == ["a", "c"]
