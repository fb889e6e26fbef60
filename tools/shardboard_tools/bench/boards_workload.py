"""The ``boards`` scenario's workload: many boards (global + category boards) and calendar periods.

Views of a Zipf-distributed catalogue arrive at a steady rate in virtual time, as in ``workload.Workload``; each item
belongs to exactly one category board, and every view counts on the global board and on its category's board, in the
current day, ISO week, month and all-time buckets.

Category rule (``BoardsWorkload.item_categories``): the target shares of the *expected* views are ``hot_share``
(35 %) for ``cat-00`` and the rest split evenly over the other categories. Items are taken in rank order (most
viewed first) and each goes to the category furthest below its target (largest remaining deficit of expected views);
ties (the equal targets at the start) are broken by a permutation of the categories drawn from the seed. The
realised shares of views then match the targets to within sampling noise (the first item alone draws ~8 % of
views, so a random assignment would not).

The default ``start`` puts a UTC midnight halfway through the default run (``DEFAULT_VIEWS`` at
``DEFAULT_VIEWS_PER_S``), so a day boundary falls halfway; 2026-11-25 is a Wednesday (not a Monday) and not the 1st,
so the week and month do not roll. ``straddling_midnight`` does the same for any size.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from shardboard.domain.periods import bucket_of

if TYPE_CHECKING:  # numpy comes with the bench extra; the rest of the CLI must import this module without it
    import numpy as np

    IntArray = np.ndarray[Any, np.dtype[np.int64]]
    FloatArray = np.ndarray[Any, np.dtype[np.float64]]

GLOBAL_BOARD = "global"
PERIODS = ("day", "week", "month", "all")
SECONDS_PER_DAY = 86_400
# Wed 2026-11-25 00:00 UTC: not a Monday, not the 1st, so only the day rolls there.
DEFAULT_MIDNIGHT = datetime(2026, 11, 25, tzinfo=UTC)
# The scenario's default size (`shardboard bench --scenario boards`): sized so that its three designs finish within
# 10 minutes on a 2-core machine (docs/benchmarks-boards.md, "Workload").
DEFAULT_VIEWS = 200_000
DEFAULT_VIEWS_PER_S = 5_000.0


def category_board(index: int) -> str:
    return f"cat-{index:02d}"


@dataclass(frozen=True)
class Views:
    """Every view in arrival order: item rank (0-based), category index, time offset (seconds from ``start``)."""

    ranks: IntArray
    categories: IntArray
    offsets: FloatArray

    def __iter__(self) -> Iterator[Any]:  # ranks, categories, offsets = workload.views()
        return iter((self.ranks, self.categories, self.offsets))

    def __len__(self) -> int:
        return len(self.ranks)


@dataclass(frozen=True)
class BoardsWorkload:
    views: int = DEFAULT_VIEWS
    items: int = 100_000
    zipf_s: float = 1.0
    views_per_s: float = DEFAULT_VIEWS_PER_S
    categories: int = 20
    # Target share of the views drawn by cat-00; the others split the rest evenly.
    hot_share: float = 0.35
    global_top_n: int = 1_000
    category_top_n: int = 100
    periods: tuple[str, ...] = PERIODS
    # Half the default run before a UTC midnight (Tue 2026-11-24 -> Wed 2026-11-25): the day rolls halfway through.
    start: datetime = DEFAULT_MIDNIGHT - timedelta(seconds=DEFAULT_VIEWS / DEFAULT_VIEWS_PER_S / 2)
    gsi_shards: int = 10
    write_shards: int = 20
    refresh_seconds: float = 10.0
    aggregation_window_seconds: float = 10.0
    batch_size: int = 1_000
    seed: int = 5

    def as_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["start"] = self.start.isoformat().replace("+00:00", "Z")
        document["periods"] = list(self.periods)
        document["boards"] = list(self.boards())
        document["distribution"] = f"zipf(s={self.zipf_s}) over {self.items} items"
        document["category_rule"] = (
            f"rank order, largest deficit of expected views; target {self.hot_share:.0%} for cat-00, "
            f"{(1 - self.hot_share) / max(1, self.categories - 1):.2%} for each other category"
        )
        return document

    @classmethod
    def straddling_midnight(cls, midnight: datetime = DEFAULT_MIDNIGHT, **fields: Any) -> BoardsWorkload:
        """A workload (``fields`` as the constructor's) whose ``start`` puts ``midnight`` halfway through its views."""
        sized = cls(**fields)
        return replace(sized, start=midnight - timedelta(seconds=sized.duration / 2))

    @property
    def duration(self) -> float:
        return self.views / self.views_per_s

    def boards(self) -> tuple[str, ...]:
        return (GLOBAL_BOARD, *(category_board(c) for c in range(self.categories)))

    def top_n(self, board: str) -> int:
        return self.global_top_n if board == GLOBAL_BOARD else self.category_top_n

    def item_id(self, rank: int) -> str:
        return f"images/{rank + 1}.jpg"

    def item_ids(self) -> list[str]:
        return [self.item_id(rank) for rank in range(self.items)]

    def weights(self) -> FloatArray:
        import numpy as np

        weights = 1.0 / np.arange(1, self.items + 1, dtype=np.float64) ** self.zipf_s
        return weights / weights.sum()  # type: ignore[no-any-return]

    def target_shares(self) -> list[float]:
        if self.categories == 1:
            return [1.0]
        rest = (1.0 - self.hot_share) / (self.categories - 1)
        return [self.hot_share, *([rest] * (self.categories - 1))]

    def item_categories(self) -> IntArray:
        """Category index of every item (by rank): the module docstring's largest-deficit rule."""
        import numpy as np

        order = np.random.default_rng(self.seed).permutation(self.categories)
        tie_break = {int(category): position for position, category in enumerate(order)}
        heap = [(-share, tie_break[c], c) for c, share in enumerate(self.target_shares())]
        heapq.heapify(heap)
        assigned = np.empty(self.items, dtype=np.int64)
        for rank, weight in enumerate(self.weights().tolist()):
            deficit, tie, category = heapq.heappop(heap)
            assigned[rank] = category
            heapq.heappush(heap, (deficit + weight, tie, category))
        return assigned

    def view_arrays(self) -> Views:
        """The views (see :class:`Views`), vectorized: view i arrives at i / views_per_s.

        (``views`` is the number of views, as in ``Workload``; hence this name for the brief's ``views()``.)
        """
        import numpy as np

        rng = np.random.default_rng(self.seed)
        ranks = rng.choice(self.items, size=self.views, p=self.weights()).astype(np.int64)
        categories = self.item_categories()[ranks]
        offsets = np.arange(self.views, dtype=np.float64) / self.views_per_s
        return Views(ranks, categories, offsets)

    def epoch_seconds(self, offsets: FloatArray) -> FloatArray:
        return offsets + self.start.timestamp()

    def day_indexes(self, offsets: FloatArray) -> IntArray:
        """UTC day number (days since the epoch) of every offset."""
        import numpy as np

        return np.floor(self.epoch_seconds(offsets) / SECONDS_PER_DAY).astype(np.int64)


def bucket_label(period: str, day: int) -> str:
    """The calendar bucket of UTC day number ``day`` for ``period``: 2026-11-25, 2026-W48, 2026-11, all."""
    return bucket_of(period, datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=day))  # PeriodError: a ValueError


BucketKey = tuple[str, str, str]  # (board, period, bucket label)


def brute_force_tops(workload: BoardsWorkload, views: Views) -> dict[BucketKey, list[tuple[str, int]]]:
    """The true top N of every (board, period, bucket): counted with numpy, ordered (views desc, id asc)."""
    import numpy as np

    days = workload.day_indexes(views.offsets)
    unique_days = sorted(set(np.unique(days).tolist()))
    tops: dict[BucketKey, list[tuple[str, int]]] = {}
    for period in workload.periods:
        labels = {day: bucket_label(period, day) for day in unique_days}
        for label in sorted(set(labels.values())):
            in_bucket = np.isin(days, [day for day, name in labels.items() if name == label])
            for board in workload.boards():
                mask = in_bucket
                if board != GLOBAL_BOARD:
                    mask = in_bucket & (views.categories == int(board.removeprefix("cat-")))
                counts = np.bincount(views.ranks[mask], minlength=workload.items)
                tops[(board, period, label)] = best_of(workload, counts, workload.top_n(board))
    return tops


def best_of(workload: BoardsWorkload, counts: IntArray, n: int) -> list[tuple[str, int]]:
    """The best ``n`` items of a count per rank, in leaderboard order (ties by id, as strings compare)."""
    import numpy as np

    viewed = int(np.count_nonzero(counts))
    if viewed == 0:
        return []
    floor = int(np.partition(counts, -min(n, viewed))[-min(n, viewed)]) if viewed >= n else 1
    candidates = np.nonzero(counts >= max(floor, 1))[0].tolist()
    pairs = [(workload.item_id(rank), int(counts[rank])) for rank in candidates]
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))[:n]
