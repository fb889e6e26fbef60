"""Change one board's GSI shard count S -> S2 (every period's index with it) while every snapshot stays exact.

1. ``begin``: the board state (threshold item) says S2, and remembers S as the previous layout. From then on the
   aggregator gives joining items S2 keys, and snapshots read the S layout, then the S2 layout.
2. Wait ``grace_seconds``: a batch that read the state before step 1 may still join items with S keys. When the
   caller can tell that no batch is in flight (``settled``: a local runner has handled every stream record), the
   wait ends there.
3. Re-key: scan for aggregates still keyed in layout S, move each with a conditional update (only if it still has
   its old key), in passes until a scan finds none.
4. ``finish``: forget S; snapshots read one layout again.

Each step is idempotent and conditional, so a killed reshard is resumed by running it again with the same S2.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from shardboard.domain.ports import Resharding, Thresholds
from shardboard.domain.sharding import board_shard_of
from shardboard.settings import Settings

# Parallel conditional updates while re-keying: items of one layout spread over S partition key values.
REKEY_CONCURRENCY = 16


class ReshardableBoard(Resharding, Thresholds, Protocol):
    """A reshard's board table: the layout (read from the thresholds' item) and the moves of its index keys."""


class ReshardConflict(RuntimeError):
    """Another reshard (to a different S) is in progress, or the board changed under this one."""


@dataclass
class ReshardReport:
    previous: int
    target: int
    moved: int = 0  # aggregates this run re-keyed
    already_moved: int = 0  # refused: something moved them first (another run of reshard)
    passes: int = 0
    resumed: bool = False
    finished: bool = False
    waited: float = 0  # seconds of the grace wait: until no batch could be in flight


def begin(board: ReshardableBoard, settings: Settings, target: int) -> ReshardReport:
    """Switch the layout to ``target`` (or resume a move to it); the report says from which layout."""
    if target < 1:
        raise ValueError(f"the board needs at least one shard, got {target}")
    state = board.get_board_state(settings.board, consistent=True)
    if state.previous_shards is not None:
        if state.shards != target:
            raise ReshardConflict(
                f"a reshard {state.previous_shards} -> {state.shards} is in progress: finish it first "
                f"(shardboard reshard --gsi-shards {state.shards})"
            )
        return ReshardReport(state.previous_shards, target, resumed=True)
    current = state.shards or settings.board_shards
    report = ReshardReport(current, target)
    if current == target:
        report.finished = True
        return report
    if not board.begin_reshard(settings.board, current, target, current_is_default=state.shards is None):
        raise ReshardConflict("the board layout changed while starting the reshard: run it again")
    return report


def rekey_pass(board: Resharding, settings: Settings, report: ReshardReport) -> int:
    """Move every aggregate still keyed in the previous layout; returns how many were found."""
    found = board.scan_layout(settings.board, report.previous)

    def move(row: tuple[str, str, str, str]) -> bool:
        pk, attribute, old_key, item_id = row
        new_key = relayout(old_key, item_id, report.target)
        return board.rekey(pk, attribute, old_key, new_key)

    with ThreadPoolExecutor(max_workers=REKEY_CONCURRENCY) as pool:
        results = list(pool.map(move, found))
    report.moved += sum(results)
    report.already_moved += len(results) - sum(results)
    report.passes += 1
    return len(found)


def relayout(index_key: str, item_id: str, target: int) -> str:
    """The same period's key in layout ``target``: ``<board>[#kind#bucket]#<S>#<shard>``."""
    return f"{index_key.rsplit('#', 2)[0]}#{target}#{board_shard_of(item_id, target)}"


def wait_for_batches(
    grace_seconds: float, settled: Callable[[], bool] | None, sleep: Callable[[float], None], poll_seconds: float
) -> float:
    """Sleep until no batch that read the old layout can still be running: ``grace_seconds``, or less once
    ``settled`` says so (asked before each ``poll_seconds``). Returns the seconds slept."""
    if settled is None:
        sleep(grace_seconds)
        return grace_seconds
    waited = 0.0
    while waited < grace_seconds and not settled():
        step = min(poll_seconds, grace_seconds - waited)
        sleep(step)
        waited += step
    return waited


def finish(board: Resharding, settings: Settings, report: ReshardReport) -> None:
    if not board.finish_reshard(settings.board, report.previous, report.target):
        raise ReshardConflict("the board state is no longer this move: another reshard finished or replaced it")
    report.finished = True


def reshard(
    board: ReshardableBoard,
    settings: Settings,
    target: int,
    *,
    grace_seconds: float,
    settled: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_pass: Callable[[ReshardReport], None] | None = None,
    max_passes: int = 10,
    poll_seconds: float = 1.0,
) -> ReshardReport:
    """Steps 1-4 of the module docstring; ``on_pass`` sees the report after the grace wait and after each pass."""
    report = begin(board, settings, target)
    if report.finished:
        return report
    report.waited = wait_for_batches(grace_seconds, settled, sleep, poll_seconds)
    for _ in range(max_passes):
        found = rekey_pass(board, settings, report)
        if on_pass:
            on_pass(report)
        if found == 0:
            finish(board, settings, report)
            return report
    raise ReshardConflict(
        f"aggregates kept appearing in the old layout after {max_passes} passes: is an aggregator still running "
        "with a board state older than the grace period? Run reshard again to resume."
    )
