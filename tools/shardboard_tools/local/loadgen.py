"""Generate views: Zipf-popular items, an optional viral item, a target rate over worker threads.

Each item belongs to one category board (a skewed draw: the first category is the busiest, and holds the viral item),
and each of its views names that board besides the global one, in the anchor bucket of the time it is written.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from shardboard.adapters.views_table import ViewStore
from shardboard.domain.clock import Clock
from shardboard.domain.periods import DEFAULT_PERIODS, anchor_kind
from shardboard.domain.writing.recording import Where, record_views
from shardboard.services.clock import system_clock

OnView = Callable[[str, float], None]
# The category boards of the demo's items, busiest first, and the share of items in each.
DEFAULT_CATEGORIES = ("music", "sports", "news", "games")
DEFAULT_CATEGORY_WEIGHTS = (0.45, 0.25, 0.18, 0.12)


@dataclass(frozen=True)
class LoadSpec:
    """A workload. Stops at ``total_views`` or after ``duration_seconds``, whichever comes first (one is required)."""

    items: int = 2000
    zipf_exponent: float = 1.0  # popularity of the k-th item ~ 1 / k**s (s=1: the classic web popularity curve)
    viral_share: float = 0.0  # share of all views going to one extra item, "viral"
    viral_item: str = "viral"
    views_per_second: float = 0.0  # 0: as fast as the workers go
    concurrency: int = 8
    duration_seconds: float | None = None
    total_views: int | None = None
    seed: int | None = None
    # The category boards items belong to (busiest first; empty: views count on the global board only).
    categories: tuple[str, ...] = DEFAULT_CATEGORIES
    category_weights: tuple[float, ...] = DEFAULT_CATEGORY_WEIGHTS

    def __post_init__(self) -> None:
        if self.items < 1 or self.concurrency < 1 or self.zipf_exponent < 0:
            raise ValueError("items and concurrency must be >= 1 and the Zipf exponent >= 0")
        if len(self.category_weights) != len(self.categories) or any(w <= 0 for w in self.category_weights):
            raise ValueError("give one positive weight per category")
        if not 0 <= self.viral_share <= 1:
            raise ValueError("the viral share must be between 0 and 1")
        if self.duration_seconds is None and self.total_views is None:
            raise ValueError("give a duration or a total number of views")

    def item_name(self, rank: int) -> str:
        return f"item-{rank:05d}"

    @property
    def busiest_category(self) -> str | None:
        """The category most items (and the viral item) belong to."""
        return self.categories[0] if self.categories else None

    def category_of(self, item_id: str) -> str | None:
        """The category board of an item: a fixed, skewed draw from its name (the viral item is in the busiest)."""
        if not self.categories:
            return None
        if item_id == self.viral_item:
            return self.categories[0]
        return random.Random(f"category:{item_id}").choices(self.categories, self.category_weights)[0]


@dataclass
class LoadResult:
    views: int = 0
    write_units: float = 0.0  # from ReturnConsumedCapacity
    errors: int = 0
    seconds: float = 0.0

    @property
    def views_per_second(self) -> float:
        return self.views / self.seconds if self.seconds else 0.0

    @property
    def write_units_per_view(self) -> float:
        return self.write_units / self.views if self.views else 0.0


class ItemPicker:
    """Draws item ids: the viral item with probability ``viral_share``, else Zipf over ``items`` (O(log n))."""

    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        weights = [1.0 / (rank**spec.zipf_exponent) for rank in range(1, spec.items + 1)]
        self.cumulative = list(itertools.accumulate(weights))
        self.names = [spec.item_name(rank) for rank in range(1, spec.items + 1)]
        self.categories = {name: spec.category_of(name) for name in [*self.names, spec.viral_item]}

    def pick(self, rng: random.Random) -> str:
        if self.spec.viral_share and rng.random() < self.spec.viral_share:
            return self.spec.viral_item
        return rng.choices(self.names, cum_weights=self.cumulative)[0]


class _Pacer:
    """Hands out send times ``1/rate`` apart to every worker, so the total rate holds whatever the concurrency."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.next = time.monotonic()
        self.lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            slot = self.next = max(self.next + self.interval, time.monotonic() - 1.0)
        delay = slot - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def generate(
    views: ViewStore,
    spec: LoadSpec,
    write_shards: int,
    *,
    on_view: OnView | None = None,
    show_progress: bool = True,
    stop: threading.Event | None = None,
    anchor: str = anchor_kind(DEFAULT_PERIODS),
    clock: Clock = system_clock,
) -> LoadResult:
    """Record views per ``spec``, each on the global board and its item's category board, in the ``anchor`` bucket
    (the deployment's finest period) of its time (``clock``'s); ``on_view(item, t)`` is called after each write
    lands."""
    picker = ItemPicker(spec)
    pacer = _Pacer(spec.views_per_second)
    result = LoadResult()
    lock = threading.Lock()
    stop = stop or threading.Event()
    started = time.monotonic()
    deadline = started + spec.duration_seconds if spec.duration_seconds is not None else float("inf")
    budget = itertools.count()  # each next() claims one view of total_views

    def worker(index: int) -> None:
        rng = random.Random(None if spec.seed is None else spec.seed * 1000 + index)
        while not stop.is_set() and time.monotonic() < deadline:
            if spec.total_views is not None and next(budget) >= spec.total_views:
                return
            pacer.wait()
            item = picker.pick(rng)
            category = picker.categories[item]
            try:
                where = Where.of(anchor, (category,) if category else (), at=clock())
                recorded = record_views(views, item, 1, write_shards, rng, where=where)
            except Exception:  # a failed write is counted, not retried: botocore already retried it
                with lock:
                    result.errors += 1
                continue
            landed = time.time()
            with lock:
                result.views += 1
                result.write_units += recorded.write_units
            if on_view:
                on_view(item, landed)

    with _ProgressBar(spec, show_progress) as advance, ThreadPoolExecutor(spec.concurrency) as pool:
        futures = [pool.submit(worker, i) for i in range(spec.concurrency)]
        while not all(f.done() for f in futures):
            time.sleep(0.1)
            advance(result.views, time.monotonic() - started)
        for future in futures:
            future.result()
    result.seconds = time.monotonic() - started
    return result


class _ProgressBar:
    """A rich progress bar over views (or seconds, for a timed run); a no-op when hidden."""

    def __init__(self, spec: LoadSpec, visible: bool) -> None:
        self.spec = spec
        self.bar = (
            Progress(
                TextColumn("[bold]load"),
                BarColumn(),
                TextColumn("{task.fields[views]:,} views · {task.fields[rate]:,.0f}/s"),
                TimeElapsedColumn(),
                transient=True,
            )
            if visible
            else None
        )

    def __enter__(self) -> Callable[[int, float], None]:
        if self.bar is None:
            return lambda views, elapsed: None
        self.bar.start()
        by_views = self.spec.total_views is not None
        total = self.spec.total_views if by_views else self.spec.duration_seconds
        task = self.bar.add_task("load", total=total, views=0, rate=0.0)

        def advance(views: int, elapsed: float) -> None:
            assert self.bar is not None
            rate = views / elapsed if elapsed else 0.0
            self.bar.update(task, completed=views if by_views else elapsed, views=views, rate=rate)

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
