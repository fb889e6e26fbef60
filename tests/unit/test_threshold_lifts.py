"""A batch's own threshold (docs/sparse-index.md, "The batch's own threshold"): when K of a batch's items are sure to
hold at least T' once written, the batch writes them first, publishes T' and keys nothing below it."""

from __future__ import annotations

import dataclasses
from collections import Counter

from shardboard.domain.aggregating.aggregation import Context, threshold_lifts
from shardboard.domain.aggregating.batch import ItemDelta, ShardStep
from shardboard.domain.periods import ALL
from shardboard.domain.policy import Indexing, Keep, Keeping, Leaderboards, Periods
from shardboard.domain.ports import BoardState, PeriodKey
from shardboard.services.aggregating import apply_deltas
from tests.unit.test_sparse_index import brute_force_top, index_misses, pipeline

EVERYTHING = PeriodKey("global", ALL, ALL)


def policy(top_n: int, spare: int = 0, sparse: bool = True) -> Leaderboards:
    keep = Keep(top_n, spare)
    return Leaderboards(periods=Periods(kinds=()), index=Indexing(sparse=sparse), keeping=Keeping(keep, keep))


def delta(item: str, *steps: tuple[int, int]) -> ItemDelta:
    """An all-time delta of ``item``: one (before, after) per write shard."""
    return ItemDelta(item, {shard: ShardStep(before, after) for shard, (before, after) in enumerate(steps)})


def test_the_lift_is_the_kth_best_lower_bound_and_its_witnesses_are_the_k_best():
    ctx = Context(policy(top_n=2, spare=1), {})
    deltas = [delta("a", (0, 3), (2, 4)), delta("b", (0, 5)), delta("c", (1, 2)), delta("d", (0, 6))]
    # Lower bounds: the shards' NEW values once applied: a 7, b 5, c 2, d 6 -> K = N + R = 3, T' = 5
    (lift,) = threshold_lifts(ctx, deltas)
    assert (lift.period, lift.threshold) == (EVERYTHING, 5)
    assert lift.witnesses == {("global", "a"), ("global", "d"), ("global", "b")}


def test_no_lift_without_k_items_once_a_threshold_is_published_or_without_the_sparse_index():
    deltas = [delta("a", (0, 9)), delta("b", (0, 4)), delta("idle", (3, 3))]
    assert threshold_lifts(Context(policy(top_n=3), {}), deltas) == []  # only two items moved
    assert threshold_lifts(Context(policy(top_n=2), {EVERYTHING: BoardState(4, None, None)}), deltas) == []
    assert threshold_lifts(Context(policy(top_n=2, sparse=False), {}), deltas) == []
    # (once the job published a T, even below what the batch proves, it stands: the job's T counts visible items)
    assert threshold_lifts(Context(policy(top_n=2), {EVERYTHING: BoardState(3, None, None)}), deltas) == []
    (lift,) = threshold_lifts(Context(policy(top_n=2), {EVERYTHING: BoardState(0, None, None)}), deltas)
    assert lift.threshold == 4


def test_a_raised_context_keeps_the_layout_it_read():
    ctx = Context(policy(top_n=1), {EVERYTHING: BoardState(0, 7, None, deep_threshold=1)})
    (lift,) = threshold_lifts(ctx, [delta("a", (0, 9))])
    raised = ctx.raised([lift])
    assert raised.states[EVERYTHING] == BoardState(9, 7, None, deep_threshold=1)
    assert raised.threshold(EVERYTHING) == 9


def counted(design, views: dict[str, int]) -> Counter[str]:
    for item, count in views.items():
        for _ in range(count):
            design.view(item)
    return Counter(views)


def keyed(design) -> set[str]:
    return {item for item, (_, indexed) in design.board.scan_aggregates().items() if indexed}


def test_a_first_batch_keys_only_what_its_own_threshold_admits():
    # Given an empty board (T = 0: no snapshot yet), N = 2 and no spares, and one batch of a long tail
    design = pipeline(top_n=2, board_shards=2, batch_size=100)
    design.settings = dataclasses.replace(design.settings, snapshot_spare=0)
    counts = counted(design, {"a": 5, "b": 4, "c": 4, "d": 1, "e": 2, "f": 1})
    # When the batch is applied
    design.settle(final=True)
    # Then it published T' = 4 (the 2nd best it was sure of) and keyed only what reaches it: ties included
    assert design.board.get_threshold("global") == 4
    assert keyed(design) == {"a", "b", "c"}
    assert index_misses(design) == []
    # And the snapshot is exact
    design.refresh()
    assert design.top() == brute_force_top(counts, 2)


def test_a_witness_that_fails_cancels_the_lift_and_the_batch_keys_under_the_threshold_it_read(monkeypatch):
    # Given an empty board and a batch whose best item's write fails
    design = pipeline(top_n=2, board_shards=2, batch_size=100)
    settings = dataclasses.replace(design.settings, snapshot_spare=0, periods=())
    deltas = {("global", d.item_id, "all"): d for d in (delta("a", (0, 5)), delta("b", (0, 4)), delta("c", (0, 3)))}
    move = design.board.move

    def failing(board: str, item_id: str, *args, **kwargs):
        if item_id == "a":
            raise RuntimeError("throttled")
        return move(board, item_id, *args, **kwargs)

    monkeypatch.setattr(design.board, "move", failing)
    # When the batch is applied
    outcome = apply_deltas(design.board, deltas, settings)
    # Then only the failed item failed, nothing was published, and every item written is keyed (T = 0 still holds)
    assert set(outcome.failures) == {("global", "a")}
    assert design.board.get_threshold("global") == 0
    assert keyed(design) == {"b", "c"}
    # When the retry succeeds
    monkeypatch.setattr(design.board, "move", move)
    apply_deltas(design.board, deltas, settings)
    # Then the batch's own T is published, over every item it wrote
    assert design.board.get_threshold("global") == 4
    assert keyed(design) == {"a", "b", "c"}
    assert index_misses(design) == []
