"""Repairs and replays with boards and periods (found while extending the chaos run to them).

A period's snapshot is refreshed whenever its counts may have changed without a mark: a batch replayed after the
process died between its count writes and its marks, and a repair (`redrive`, `rebuild`) that adds views. And a lost
aggregate that the stream recreated before `rebuild` read it is rebuilt with its history (its past entries)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shardboard.adapters.stream_records import stream_view_records
from shardboard.domain.periods import bucket_of
from shardboard.domain.ports import PeriodKey
from shardboard.services.aggregating import apply_batch, note_changes
from shardboard.services.snapshots import refresh_changed
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryBoardStore, MemoryViewStore
from shardboard_tools.operations.recovery import RebuildProgress, rebuild, repair_item
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


def test_a_lost_aggregate_recreated_by_the_stream_before_the_rebuild_gets_its_past_buckets_back():
    # Given "a" with views three days ago (archived into a past entry) and today
    views, board = world()
    views.add_view("a", 0, 1, bucket_of(CONFIG.anchor, NOW - timedelta(days=3)), ("cats",))
    deliver(board, views.take_stream(10))
    deliver(board, record(views, "a", 0))
    # When its aggregate is lost and the stream recreates it from today's next views before the rebuild reads it
    board.delete_aggregate("a")
    deliver(board, record(views, "a", 1))
    rebuild(views, board, CONFIG, RebuildProgress.fresh(1))  # type: ignore[arg-type]
    # Then all time and the periods containing both days count the old views again
    report = verify(views, board, CONFIG)  # type: ignore[arg-type]
    assert report.differences == []
