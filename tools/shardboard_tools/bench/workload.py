"""The benchmark's workload: views of a Zipf-distributed catalogue arriving at a steady rate in virtual time."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy comes with the bench extra; the rest of the CLI must import this module without it
    import numpy as np


@dataclass(frozen=True)
class Workload:
    items: int = 100_000
    zipf_s: float = 1.0
    views: int = 400_000
    # Site-wide arrival rate: every design is offered the same views at the same simulated instants.
    views_per_s: float = 5_000.0
    batch_size: int = 1_000
    top_n: int = 1_000
    gsi_shards: int = 10
    write_shards: int = 20
    # Snapshot refresh interval in simulated seconds (the seeds' designs re-query at the same cadence).
    refresh_seconds: float = 10.0
    # Lambda tumbling window of the aggregator in simulated seconds (0: every batch is applied as it comes). This
    # run's single stream carries 5,000 records/s; a real stream shard carries at most ~1,000 (one partition's
    # write limit), so 10 s here is like a 50 s window on a busy shard: 50,000 records, ~0.4 MB of state.
    aggregation_window_seconds: float = 10.0
    # Simulated seconds each probe of the viral-item bisection lasts.
    probe_seconds: float = 2.0
    seed: int = 5
    # Periods kept besides all time. The single-board comparison keeps none (Periods=""): the seeds' designs keep
    # one all-time board, and so does this run; `--scenario boards` prices the periods (docs/benchmarks.md).
    periods: tuple[str, ...] = ()
    # D, the depth of ranked versions (RankDepth). 0 gives D = N: no ranked versions, the snapshot is the ranking
    # (the cost these designs are compared at); `--scenario reads` prices D = 10,000 beside it.
    rank_depth: int = 0
    rank_refresh_seconds: int = 60  # RankRefreshSeconds, in simulated seconds
    # R, the spares a snapshot keeps past N for hides (SnapshotSpare). 0 here, like D = N: the designs are compared
    # at the cost of the ranking alone; takedowns' spares cost R more keyed items and reads (docs/benchmarks.md).
    snapshot_spare: int = 0
    # Virtual second 0 as a UTC time (epoch seconds): mid-morning, so no period ends during the run.
    start_epoch: float = 1_795_856_400.0  # 2026-11-24T06:20:00Z, a Tuesday

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "distribution": f"zipf(s={self.zipf_s}) over {self.items} items"}

    def item_ids(self) -> list[str]:
        return [f"images/{rank}.jpg" for rank in range(1, self.items + 1)]

    def view_sequence(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Item ranks (0-based) of every view, in arrival order: P(rank k) proportional to 1 / (k+1)^s."""
        import numpy as np

        weights = 1.0 / np.arange(1, self.items + 1, dtype=np.float64) ** self.zipf_s
        rng = np.random.default_rng(self.seed)
        return rng.choice(self.items, size=self.views, p=weights / weights.sum()).astype(np.int64)
