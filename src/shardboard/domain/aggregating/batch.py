"""Fold a stream batch into one exactly-once update per item (pure: no AWS here).

Each base item (item, write shard k) is a counter; its stream records carry the shard's OLD and NEW absolute
values. The aggregate remembers, per shard, the last value it applied (``applied_k``) and moves it forward with a
compare-and-set. Replays, re-split batches and duplicate deliveries therefore never double count, and a lost record
is healed by the next record of its shard. The argument is in docs/exactly-once.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple


class ViewRecord(NamedTuple):
    """One counter of one stream record: ``board``'s counter of write shard ``shard`` of ``item_id`` in anchor
    bucket ``bucket`` went from ``old`` to ``new`` views (a record holds one such counter per board it counts on).

    A NamedTuple, not a frozen dataclass: one is built per counter per stream record and this is 3x cheaper to build.
    No sequence number: the fold needs none (a shard's NEW values order its records), nor does a window's state.
    """

    board: str
    item_id: str
    bucket: str
    shard: int
    old: int
    new: int


@dataclass(slots=True)
class ShardStep:
    """What one batch saw of one write shard: the value before its first record and after its last.

    Mutable: the fold advances ``after`` in place, one record at a time (the aggregator's hottest loop).
    """

    before: int
    after: int


# (board, item id, bucket, write shard, OLD, NEW): what the fold reads of a counter. A ViewRecord is one; so is a
# step unpacked from a tumbling window's state (domain/aggregating/window.py).
CounterStep = ViewRecord | tuple[str, str, str, int, int, int]
# What one delta is about: a board's counter of one item in one anchor bucket.
DeltaKey = tuple[str, str, str]


@dataclass(slots=True)  # one per item per batch
class ItemDelta:
    """Everything one batch says about one item's counter on one board in one anchor bucket, keyed by write shard."""

    item_id: str
    shards: dict[int, ShardStep] = field(default_factory=dict)
    board: str = "global"
    bucket: str = "all"


def fold(records: Iterable[CounterStep]) -> dict[DeltaKey, ItemDelta]:
    """Group a batch's counters by (board, item, bucket), preserving stream order (records are ordered per base
    item). The aggregator's hottest loop: fields unpacked at once (a ViewRecord is a tuple), one dict lookup per
    counter.
    """
    deltas: dict[DeltaKey, ItemDelta] = {}
    for board, item_id, bucket, shard, old, new in records:
        key = (board, item_id, bucket)
        delta = deltas.get(key)
        if delta is None:  # not setdefault: that would build a throwaway ItemDelta for every record
            deltas[key] = ItemDelta(item_id, {shard: ShardStep(old, new)}, board, bucket)
            continue
        step = delta.shards.get(shard)
        if step is None:
            delta.shards[shard] = ShardStep(old, new)
        elif new > step.after:
            # Counters only grow; a record older than one already seen (a duplicate inside one batch) adds nothing.
            step.after = new
    return deltas


class ShardMove(NamedTuple):  # immutable; a NamedTuple because one or more are built per item per batch
    """Move ``applied_k`` from ``expected`` (0 means absent) to ``target``, adding ``target - expected`` views."""

    shard: int
    expected: int
    target: int


def optimistic_moves(delta: ItemDelta) -> list[ShardMove]:
    """First attempt: assume the aggregate stands exactly where this batch starts (the common, in-order case)."""
    if len(delta.shards) == 1:  # most deltas of a batch: nothing to sort
        ((shard, step),) = delta.shards.items()
        return [ShardMove(shard, step.before, step.after)] if step.after > step.before else []
    return [ShardMove(k, s.before, s.after) for k, s in sorted(delta.shards.items()) if s.after > s.before]


def optimistic_lower_bound(delta: ItemDelta) -> int:
    """``lower_bound_after(optimistic_moves(delta))`` without building the moves (asked of every delta of a batch)."""
    views = 0
    for step in delta.shards.values():
        if step.after > step.before:
            views += step.after
    return views


def catch_up_moves(delta: ItemDelta, applied: Mapping[int, int]) -> list[ShardMove]:
    """After a failed compare-and-set: move each shard from what is applied to the newest value seen.

    A shard already at or past the batch's newest value was applied before (a replay): it is left alone.
    """
    moves = []
    for shard, step in sorted(delta.shards.items()):
        current = applied.get(shard, 0)
        if step.after > current:
            moves.append(ShardMove(shard, current, step.after))
    return moves


def views_added(moves: Iterable[ShardMove]) -> int:
    """Views ``moves`` add to the aggregate (each shard's target over its expected value)."""
    views = 0
    for move in moves:  # a loop, not sum() of a generator: asked per delta, which mostly has one move
        views += move.target - move.expected
    return views


def lower_bound_after(moves: Iterable[ShardMove]) -> int:
    """Views the aggregate has at least once ``moves`` are applied (other shards hold >= 0)."""
    views = 0
    for move in moves:  # a loop, not sum() of a generator: asked per delta, which mostly has one move
        views += move.target
    return views
