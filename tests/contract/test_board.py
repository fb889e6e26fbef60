"""The Board port: compare-and-set on aggregates, the sparse sharded GSI, the threshold and the snapshot item."""

from __future__ import annotations

from shardboard.domain.batch import ShardMove
from shardboard.domain.ports import AggregateState, BoardState, MoveResult

BOARD = "contract"


def snapshot(version: int, items: list[list[object]]) -> dict[str, object]:
    return {
        "board": BOARD,
        "version": version,
        "generated_at": f"2026-11-23T06:0{version}:00.000Z",
        "items": items,
        "items_read": len(items),
        "threshold": 0,
        "shard_hits": {0: len(items)},
        "digest": f"d{version}",
    }


def test_a_first_write_needs_the_shard_absent_and_a_replay_is_refused_with_the_state(ports):
    board = ports.board
    # Given a first move of shard 0 (expected 0: attribute_not_exists)
    first = board.move("a", [ShardMove(0, 0, 3)], None)
    assert first == MoveResult(True, AggregateState({0: 3}, 3, False))
    # When the same move is replayed, it is refused and returns what it found
    assert board.move("a", [ShardMove(0, 0, 3)], None) == MoveResult(False, AggregateState({0: 3}, 3, False))
    # And a move from the applied value advances it; views add the difference
    assert board.move("a", [ShardMove(0, 3, 5), ShardMove(4, 0, 2)], None) == MoveResult(
        True, AggregateState({0: 5, 4: 2}, 7, False)
    )
    assert board.state("a") == AggregateState({0: 5, 4: 2}, 7, False)


def test_a_move_is_all_or_nothing(ports):
    board = ports.board
    board.move("a", [ShardMove(0, 0, 3), ShardMove(1, 0, 1)], None)
    # When one of two shards' expected values is stale
    refused = board.move("a", [ShardMove(0, 3, 4), ShardMove(1, 0, 6)], None)
    # Then nothing changed, and the refusal carries the state that refused it
    assert refused == MoveResult(False, AggregateState({0: 3, 1: 1}, 4, False))
    assert board.state("a") == AggregateState({0: 3, 1: 1}, 4, False)


def test_a_move_expecting_a_value_on_a_missing_aggregate_is_refused_without_state(ports):
    # Given no aggregate (a board table lost, before `rebuild`)
    assert ports.board.state("gone") == AggregateState({}, 0, False)
    # Then a move that expects an applied value is refused, and there is no item to return
    assert ports.board.move("gone", [ShardMove(0, 5, 6)], None) == MoveResult(False, None)
    assert ports.board.state("gone") == AggregateState({}, 0, False)


def test_a_move_keys_the_aggregate_once_and_never_rekeys_it(ports):
    board = ports.board
    # Given an aggregate that joined the index in its first move
    board.move("a", [ShardMove(0, 0, 9)], "contract#4#1")
    # When a later move names another key (another layout, mid-reshard)
    board.move("a", [ShardMove(0, 9, 10)], "contract#8#5")
    # Then it keeps the first key (if_not_exists)
    assert board.query_shard("contract#4#1", 10, None) == ([("a", 10)], None)
    assert board.query_shard("contract#8#5", 10, None) == ([], None)


def test_join_index_keys_only_an_existing_aggregate_not_yet_in_the_index(ports):
    board = ports.board
    # Given no aggregate, the join is refused
    assert board.join_index("a", "contract#4#1") is False
    assert board.state("a") == AggregateState({}, 0, False)
    # Given an aggregate outside the (sparse) index, the join keys it
    board.move("a", [ShardMove(0, 0, 7)], None)
    assert board.query_shard("contract#4#1", 10, None) == ([], None)
    assert board.join_index("a", "contract#4#1") is True
    assert board.state("a").in_index
    # When a second join names another key (during a reshard), it is refused and the item keeps its key
    assert board.join_index("a", "contract#8#5") is False
    assert board.query_shard("contract#4#1", 10, None) == ([("a", 7)], None)
    assert board.query_shard("contract#8#5", 10, None) == ([], None)


def test_the_gsi_query_is_best_first_and_pages_with_its_cursor(ports):
    board = ports.board
    # Given five indexed aggregates on one board shard, one on another shard, and one outside the index
    for item, views in [("c", 30), ("a", 50), ("e", 10), ("b", 40), ("d", 20)]:
        board.move(item, [ShardMove(0, 0, views)], "contract#2#0")
    board.move("other", [ShardMove(0, 0, 45)], "contract#2#1")
    board.move("sparse", [ShardMove(0, 0, 60)], None)
    # When the shard is read two at a time
    first, cursor = board.query_shard("contract#2#0", 2, None)
    assert first == [("a", 50), ("b", 40)]
    assert cursor is not None
    second, cursor = board.query_shard("contract#2#0", 2, cursor)
    assert second == [("c", 30), ("d", 20)]
    third, cursor = board.query_shard("contract#2#0", 2, cursor)
    # Then it sees exactly that shard's indexed items, in descending views, and the last page has no cursor
    assert third == [("e", 10)]
    assert cursor is None
    # And an aggregate's views move its position (the GSI's sort key)
    board.move("e", [ShardMove(0, 10, 55)], None)
    assert board.query_shard("contract#2#0", 1, None)[0] == [("e", 55)]


def test_the_threshold_only_rises(ports):
    board = ports.board
    assert board.get_board_state(BOARD) == BoardState(0, None, None)
    assert board.raise_threshold(BOARD, 10) is True
    assert board.raise_threshold(BOARD, 5) is False
    assert board.raise_threshold(BOARD, 10) is False
    assert board.raise_threshold(BOARD, 12) is True
    assert board.get_board_state(BOARD, consistent=True) == BoardState(12, None, None)


def test_the_snapshot_is_written_only_over_the_version_it_read(ports):
    board = ports.board
    assert board.get_snapshot(BOARD) is None
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
    assert board.get_snapshot(BOARD, consistent=True) == second


def test_a_page_that_fills_its_limit_has_a_cursor_even_when_nothing_follows(ports):
    # Given two indexed aggregates on one shard
    ports.board.move("a", [ShardMove(0, 0, 2)], "contract#1#0")
    ports.board.move("b", [ShardMove(0, 0, 1)], "contract#1#0")
    # When a page of exactly two is read
    rows, cursor = ports.board.query_shard("contract#1#0", 2, None)
    assert rows == [("a", 2), ("b", 1)]
    # Then DynamoDB (and the in-memory board) return a cursor, since a Query that stops at its Limit cannot know that
    # nothing follows; moto returns none here, a difference of moto's that the snapshot's gather tolerates either way
    assert (cursor is not None) is (ports.name != "moto")
    if cursor is not None:
        assert ports.board.query_shard("contract#1#0", 2, cursor) == ([], None)
