"""The live view: freshness measurement and a rich table of the current top N with the pipeline's vital signs."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich.console import Group
from rich.table import Table
from rich.text import Text


class FreshnessTracker:
    """Time from a view landing in the base table to the first snapshot that counts it.

    The load generator reports each view's landing time per item; when a snapshot shows an item at V views, the
    views up to V (beyond what the tables held before the run) are credited with ``snapshot time - landing time``.
    Only items in the top N can appear in a snapshot, so that is what is measured: the leaderboard's freshness.
    """

    def __init__(self, baseline: Mapping[str, int] | None = None) -> None:
        self.baseline = dict(baseline or {})
        self.samples: list[float] = []
        self._landed: dict[str, list[float]] = defaultdict(list)
        self._credited: dict[str, int] = {}
        self._lock = threading.Lock()

    def view(self, item_id: str, landed_at: float) -> None:
        with self._lock:
            self._landed[item_id].append(landed_at)

    def snapshot(self, items: Sequence[Sequence[object]], visible_at: float) -> None:
        with self._lock:
            for item_id, views in items:
                assert isinstance(item_id, str) and isinstance(views, int)
                landed = self._landed.get(item_id, [])
                upto = min(views - self.baseline.get(item_id, 0), len(landed))
                start = self._credited.get(item_id, 0)
                self.samples.extend(max(0.0, visible_at - t) for t in landed[start:upto])
                self._credited[item_id] = max(start, upto)

    def percentile(self, fraction: float) -> float | None:
        with self._lock:
            ordered = sorted(self.samples)
        if not ordered:
            return None
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class StreamLag:
    """How far the stream runner is behind the writes: the age of the oldest view not delivered yet.

    Lambda's IteratorAge (now minus the arrival of the last record delivered) cannot be measured here: DynamoDB Local
    rounds each record's ApproximateCreationDateTime down to the minute, which makes it swing between 0 and 60 s.
    The load generator knows when each write landed, and every view is one stream record delivered in write order,
    so the n-th landing time is the arrival of the n-th record.
    """

    def __init__(self) -> None:
        self._landed: list[float] = []
        self._lock = threading.Lock()

    def view(self, landed_at: float) -> None:
        with self._lock:
            self._landed.append(landed_at)

    def seconds(self, delivered: int, now: float) -> float:
        """0 when every view written so far was delivered; else how long ago the first undelivered one landed."""
        with self._lock:
            if delivered >= len(self._landed):
                return 0.0
            return max(0.0, now - self._landed[delivered])


@dataclass
class Vitals:
    """What the live view shows besides the board."""

    views: int
    elapsed: float
    target_seconds: float | None
    records_delivered: int
    stream_lag: float  # StreamLag.seconds: measured from the writes, not from the records' rounded timestamps
    freshness_p50: float | None
    refreshes: int
    web_url: str | None = None


def render(board: Mapping[str, object] | None, vitals: Vitals, rows: int = 10) -> Group:
    """The top ``rows`` of the snapshot, and one line each for load, stream and freshness."""
    table = Table(title="top views (snapshot)", expand=False, min_width=48)
    table.add_column("rank", justify="right")
    table.add_column("item")
    table.add_column("views", justify="right")
    items = board.get("items", []) if board else []
    assert isinstance(items, list)
    for entry in items[:rows]:
        table.add_row(str(entry["rank"]), entry["id"], f"{entry['views']:,}")
    if not items:
        table.add_row("", "waiting for the first snapshot…", "")
    rate = vitals.views / vitals.elapsed if vitals.elapsed else 0.0
    target = f" / {vitals.target_seconds:.0f}s" if vitals.target_seconds else ""
    behind = max(0, vitals.views - vitals.records_delivered)
    fresh = "—" if vitals.freshness_p50 is None else f"{vitals.freshness_p50:.1f}s"
    lines = [
        f"load     {vitals.views:,} views · {rate:,.0f} views/s · {vitals.elapsed:.0f}s{target}",
        f"stream   {vitals.records_delivered:,} records delivered · {behind:,} behind · lag "
        f"{vitals.stream_lag:.1f}s (oldest undelivered view)",
        f"board    {vitals.refreshes} refreshes · freshness p50 {fresh}",
    ]
    if vitals.web_url:
        lines.append(f"web      {vitals.web_url}")
    return Group(table, *(Text(line) for line in lines))


class LiveTicker:
    """Calls ``tick`` every ``interval`` seconds on a thread until stopped (drives rich.Live's refreshes)."""

    def __init__(self, tick: Callable[[], None], interval: float = 0.5) -> None:
        self.tick = tick
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="live-view", daemon=True)

    def __enter__(self) -> LiveTicker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()
