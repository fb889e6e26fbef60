"""A period's snapshot is refreshed whenever its counts may have changed without a mark: a batch replayed after the
process died between its count writes and its marks, and a repair (`redrive`, `rebuild`) that adds views. Found by
the chaos run with boards and periods: the final refresh left such periods' snapshots stale."""

from __future__ import annotations

from datetime import UTC, datetime

from shardboard.adapters.stream_records import stream_view_records
from shardboard.domain.aggregation import apply_batch, note_changes
from shardboard.domain.periods import bucket_of
from shardboard.domain.ports import PeriodKey
from shardboard.domain.snapshot import refresh_changed
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryBoardStore, MemoryViewStore
from shardboard_tools.operations.recovery import repair_item
from shardboard_tools.operations.verification import verify

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
CONFIG = Settings(write_concurrency=1, top_n=3, category_top_n=2)
EVERYTHING = PeriodKey("global", "all", "all")


def world() -> tuple[MemoryViewStore, MemoryBoardStore]:
    emulator = CapacityEmulator(VirtualClock())
    return MemoryViewStore(emulator), MemoryBoardStore(emulator)


def record(views: MemoryViewStore, item: str, shard: int = 0) -> list[dict]:
    views.add_view(item, shard, 1, bucket_of(CONFIG.anchor, NOW), ("cats",))
    return views.take_stream(10)


def deliver(board: MemoryBoardStore, records: list[dict], *, marks: bool = True) -> None:
    outcome = apply_batch(board, [s for r in records for s in stream_view_records(r)], CONFIG)
    assert not outcome.failures
    if marks:  # marks=False: the process died after its count writes, before note_changes
        note_changes(board, outcome, CONFIG, now=1)


def test_a_batch_replayed_after_a_death_before_its_marks_marks_its_periods():
    # Given "a" on the cats board, applied and snapshotted
    views, board = world()
    deliver(board, record(views, "a"))
    refresh_changed(board, CONFIG, always=[EVERYTHING])
    # When the next batch's counts are written but the process dies before marking its periods, and Lambda retries it
    batch = record(views, "a")
    deliver(board, batch, marks=False)
    deliver(board, batch)  # the retry: every counter step is a replay
    # Then the retry still marks its periods, so the next refresh makes every snapshot exact again
    refresh_changed(board, CONFIG, always=[EVERYTHING])
    report = verify(views, board, CONFIG)
    assert report.exact and report.snapshots_inexact == []


def test_a_repair_marks_the_periods_it_adds_views_to():
    # Given a snapshotted board, then a batch that never reached the aggregator (the failure destination holds it)
    views, board = world()
    deliver(board, record(views, "a"))
    refresh_changed(board, CONFIG, always=[EVERYTHING])
    record(views, "a")
    # When the item is repaired from its base counters on every board (what `redrive` and `rebuild` do)
    bucket = bucket_of(CONFIG.anchor, NOW)
    for name in ("global", "cats"):
        repair_item(board, CONFIG, name, "a", {(bucket, 0): 2})  # type: ignore[arg-type]
    # Then the periods it changed are marked, and the next refresh makes every snapshot exact
    refresh_changed(board, CONFIG, always=[EVERYTHING])
    report = verify(views, board, CONFIG)
    assert report.exact and report.snapshots_inexact == []
