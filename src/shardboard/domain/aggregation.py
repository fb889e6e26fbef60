"""Apply a stream batch to the aggregates: at most one compare-and-set write per item, exactly once.

See domain/batch.py for the fold and docs/exactly-once.md for why replays never double count.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

from shardboard.domain.batch import (
    ItemDelta,
    ViewRecord,
    catch_up_moves,
    fold,
    lower_bound_after,
    optimistic_moves,
)
from shardboard.domain.ports import AggregateState, Board
from shardboard.domain.sharding import board_shard_of, board_shard_value
from shardboard.settings import Settings

# A refused compare-and-set is retried against the values it found. Only a concurrent writer on the same write
# shard (two runners on one stream by mistake) can refuse it again; five rounds is far beyond that.
MAX_CAS_ATTEMPTS = 5


class AggregateContention(RuntimeError):
    """The compare-and-set kept losing; the item's records are reported failed and Lambda retries them."""


class ItemOutcome(NamedTuple):  # immutable and, built once per item per batch, cheaper than a frozen dataclass
    views_added: int = 0
    writes: int = 0
    replay_absorbed: bool = False  # some of the batch had been applied before (a replay, a re-split batch)
    gap_healed: bool = False  # records before this batch never arrived (failure destination); NEW values healed it
    joined_index: bool = False


@dataclass
class BatchOutcome:
    items: dict[str, ItemOutcome] = field(default_factory=dict)
    failures: dict[str, BaseException] = field(default_factory=dict)
    threshold: int = 0

    @property
    def views_added(self) -> int:
        return sum(o.views_added for o in self.items.values())

    @property
    def aggregate_writes(self) -> int:
        return sum(o.writes for o in self.items.values())

    @property
    def replays_absorbed(self) -> int:
        return sum(o.replay_absorbed for o in self.items.values())

    @property
    def gaps_healed(self) -> int:
        return sum(o.gap_healed for o in self.items.values())

    @property
    def index_joins(self) -> int:
        return sum(o.joined_index for o in self.items.values())


def apply_item(board: Board, delta: ItemDelta, board_shard: str, threshold: int) -> ItemOutcome:
    """Advance one aggregate by what this batch saw, exactly once; join the GSI once views reach ``threshold``."""
    moves = optimistic_moves(delta)
    if not moves:
        return ItemOutcome()
    writes, replayed, healed, added = 0, False, False, 0
    state: AggregateState | None = None
    for _ in range(MAX_CAS_ATTEMPTS):
        join = board_shard if lower_bound_after(moves) >= threshold else None
        result = board.move(delta.item_id, moves, join)
        writes += 1
        if result.applied:
            state = result.state
            added = sum(m.target - m.expected for m in moves)
            break
        state = result.state or board.state(delta.item_id)
        found = [(state.applied.get(shard, 0), step.before) for shard, step in delta.shards.items()]
        replayed |= any(applied > before for applied, before in found)
        healed |= any(applied < before for applied, before in found)
        moves = catch_up_moves(delta, state.applied)
        if not moves:
            break
    else:
        raise AggregateContention(f"item {delta.item_id!r}: {MAX_CAS_ATTEMPTS} compare-and-set attempts lost")
    assert state is not None
    joined = False
    # Also on a pure replay: a crash between the count and the index write is healed here.
    if not state.in_index and state.views >= threshold:
        joined = board.join_index(delta.item_id, board_shard)
        writes += 1
    return ItemOutcome(added, writes, replayed, healed, joined)


def apply_batch(board: Board, records: Iterable[ViewRecord], settings: Settings) -> BatchOutcome:
    """Fold ``records`` by item and apply every item in parallel; failures are per item, never per batch."""
    return apply_deltas(board, fold(records), settings)


def apply_deltas(board: Board, deltas: dict[str, ItemDelta], settings: Settings) -> BatchOutcome:
    """Apply folded deltas (one batch's, or a whole tumbling window's): one compare-and-set write per item."""
    outcome = BatchOutcome()
    if not deltas:
        return outcome
    # One read per batch: the sparse-index threshold (docs/sparse-index.md) and the board layout, which a reshard
    # changes (items joining the index take the new layout's keys; docs/dynamic-sharding.md).
    state = board.get_board_state(settings.board)
    outcome.threshold = state.threshold if settings.sparse_index else 0
    shards = state.shards or settings.board_shards

    def apply(delta: ItemDelta) -> ItemOutcome:
        shard = board_shard_value(settings.board, board_shard_of(delta.item_id, shards), shards)
        return apply_item(board, delta, shard, outcome.threshold)

    if settings.write_concurrency == 1:  # nothing to overlap (an in-memory store): skip the pool's dispatch cost
        for item, delta in deltas.items():
            try:
                outcome.items[item] = apply(delta)
            except Exception as failure:  # per item, like a future's exception: the item's records are retried
                outcome.failures[item] = failure
        return outcome
    with ThreadPoolExecutor(max_workers=min(settings.write_concurrency, len(deltas))) as pool:
        futures = {item: pool.submit(apply, delta) for item, delta in deltas.items()}
    for item, future in futures.items():
        error = future.exception()
        if error is None:
            outcome.items[item] = future.result()
        else:
            outcome.failures[item] = error
    return outcome
