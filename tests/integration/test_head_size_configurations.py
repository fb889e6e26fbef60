"""The three configurations that outgrew DynamoDB's 400 KB item (issue 35), on the in-memory engine with every head
write checked against the limit as DynamoDB sizes items: each period's head is written, and follows a new #1.

1. TopN 100, Periods=day,trending, 140 ids of 512 bytes with 2 KB documents (the trending head was 403,475 bytes);
2. TopN 5000 with 6,000 ids of 29 bytes and no documents (items 201 KB + previous ranks keyed by id 188 KB);
3. TopN 1000 with 92-byte URL ids and 100 documents of 2 KB."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from shardboard.adapters.board_table import snapshot_item
from shardboard.adapters.stream_records import stream_view_records
from shardboard.domain.items.records import MAX_META_BYTES
from shardboard.domain.periods import bucket_of
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.head import Head
from shardboard.domain.publishing.head_size import ITEM_LIMIT_BYTES
from shardboard.services.aggregating import apply_batch, note_changes
from shardboard.services.snapshots import refresh_changed
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryBoardStore, MemoryItemStore, MemoryViewStore
from shardboard_tools.capacity.units import item_size

NOW = datetime.now(UTC).replace(minute=30, second=0, microsecond=0)  # mid-hour: the refreshes share their hour
T0 = NOW.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LimitedBoard(MemoryBoardStore):
    """The in-memory board table refusing a head past 400 KB, as DynamoDB does (and recording the largest)."""

    largest = 0

    def put_snapshot(self, snapshot: Head, previous_version: int | None) -> bool:
        size = item_size(snapshot_item(snapshot))
        LimitedBoard.largest = max(LimitedBoard.largest, size)
        if size > ITEM_LIMIT_BYTES:
            raise ValueError(f"Item size has exceeded the maximum allowed size ({size} bytes)")
        return super().put_snapshot(snapshot, previous_version)


def document(n: int) -> str:
    """A document of exactly MAX_META_BYTES as compact JSON."""
    text = json.dumps({"title": f"item {n}", "note": ""}, separators=(",", ":"))
    return json.dumps({"title": f"item {n}", "note": "x" * (MAX_META_BYTES - len(text))}, separators=(",", ":"))


def run(
    settings: Settings, ids: list[str], documents: int
) -> tuple[MemoryViewStore, LimitedBoard, dict[PeriodKey, Head]]:
    emulator = CapacityEmulator(VirtualClock())
    views, board, items = MemoryViewStore(emulator), LimitedBoard(emulator), MemoryItemStore(emulator)
    for n, item in enumerate(ids[len(ids) - documents :]):  # the most viewed: the first P entries
        items.put(item, document(n), T0)
    bucket = bucket_of(settings.anchor, NOW)
    for n, item in enumerate(ids):  # views 1..len(ids): every entry a different count
        views.add_view(item, n % settings.write_shards, n + 1, bucket)

    def deliver_and_refresh() -> dict[PeriodKey, Head]:
        records = views.take_stream(len(ids) + 10)
        outcome = apply_batch(board, [s for r in records for s in stream_view_records(r)], settings)
        assert not outcome.failures
        note_changes(board, outcome, settings, now=1)
        refreshed = refresh_changed(board, settings, now=T0, catalog=items)
        assert not refreshed.failures, refreshed.failures
        return {period: result.snapshot for period, result in refreshed.results.items()}

    first = deliver_and_refresh()
    # The #1 changes: the #2 (the second most views) takes the lead
    views.add_view(ids[-2], 0, 10 * len(ids), bucket)
    second = deliver_and_refresh()
    assert first.keys() == second.keys() and first
    for period, head in second.items():
        assert head.items[0].id == ids[-2], period
        assert head.version == first[period].version + 1, period
    return views, board, second


@pytest.mark.parametrize(
    ("settings", "ids", "documents"),
    [
        pytest.param(
            Settings(write_concurrency=1, top_n=100, periods=("day", "trending")),
            [f"{n:03d}" + "x" * 509 for n in range(140)],
            140,
            id="TopN=100 day,trending 512-byte ids 2 KB documents",
        ),
        pytest.param(
            Settings(write_concurrency=1, top_n=5000, periods=("day",)),
            [f"images/2026/11/{n:06d}-pic.jpg" for n in range(6000)],
            0,
            id="TopN=5000 6000 short ids",
        ),
        pytest.param(
            Settings(write_concurrency=1, top_n=1000, periods=("day",)),
            [f"https://cdn.example.com/images/2026/11/{n:06d}/" + "p" * 44 + ".jpg" for n in range(1100)],
            100,
            id="TopN=1000 92-byte URL ids 100 documents",
        ),
    ],
)
def test_every_period_head_of_the_configurations_that_outgrew_the_item_refreshes(settings, ids, documents):
    LimitedBoard.largest = 0
    _, _, heads = run(settings, ids, documents)
    # Then every period's head was written within the limit, and shows its entries' movement and the new #1
    assert 0 < LimitedBoard.largest <= ITEM_LIMIT_BYTES
    for head in heads.values():
        assert documents == 0 or sum(doc is not None for doc in (head.meta or {}).values()) > 0
        # it climbed: its previous rank is kept (aligned with the entries, not keyed by id), and the old #1's too
        assert (head.previous[ids[-2]], head.previous[ids[-1]]) == (2, 1)
