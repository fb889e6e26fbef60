"""A window-level cost model of the deep tier (docs/proposals/items-and-ranks.md section 3, third lever),
before building it: ``python -m shardboard_tools.bench.deep_tier_model``.

It replays the reads benchmark's workload (``bench.workload.Workload``: the same 400,000 views) one aggregation window
(10 s, 50,000 views) at a time, with the snapshot job after each window, and counts index writes by the emulator's
rules: a keyed item whose sort key changes pays 2 (delete + put), a join 1, and a join the window's count alone does
not prove is a separate UpdateItem (1 more base write). It is calibrated by the two designs the benchmark measured:
the head GSI keyed from T_N (D = N) and the index tier (T from the D-th best). The deep tier adds, per kind, a
KEYS_ONLY GSI keyed by floor(log_base(views)): an item joins it when its views reach T_D and it is not in the head
GSI (in the move when the window's count proves it, at that count's bucket, fixed by one more UpdateItem if wrong),
leaves it when it joins the head if the move knows (``head_known``), and pays a separate UpdateItem plus 2 index
writes whenever its bucket changes (the aggregator learns the new count only from the move's answer). A deep gather
reads whole buckets down to the one holding the D-th best and BatchGets every deep item read (0.5 RU each, eventually
consistent); head items come with their views from the head GSI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from shardboard_tools.bench.workload import Workload

WINDOWS = 8
# Bytes of one KEYS_ONLY index entry read by Query (table key, index hash and range keys) and of one aggregate.
KEY_ENTRY_BYTES = 100
RU_PER_AGGREGATE = 0.5

Counts = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True)
class Cost:
    index_units_per_view: float
    extra_base_units_per_view: float  # separate UpdateItems (joins not proven by the window, bucket changes)
    deep_keyed: int
    read_units_last_version: float  # the run's last deep gather: Query of keys plus BatchGet of deep items

    @property
    def per_view(self) -> float:
        return self.index_units_per_view + self.extra_base_units_per_view


def nth_best(counts: Counts, n: int) -> int:
    ranked = np.sort(counts)[::-1]
    return int(ranked[n - 1]) if int((ranked > 0).sum()) >= n else 0


def buckets(counts: Counts, base: int) -> Counts:
    return np.where(counts > 0, np.floor(np.log(np.maximum(counts, 1)) / math.log(base) + 1e-9), -1).astype(np.int64)


def run(  # noqa: PLR0917 - the model's knobs
    workload: Workload, mode: str, depth: int, refresh_windows: int, base: int = 2, head_known: bool = True
) -> Cost:
    """mode: "head" (D = N), "index" (T from the D-th best), "deep" (head from T_N, a deep tier from T_D)."""
    views = workload.view_sequence()
    per_window = len(views) // WINDOWS
    counts: Counts = np.zeros(workload.items, np.int64)
    head = np.zeros(workload.items, bool)
    deep = np.zeros(workload.items, bool)
    deep_bucket: Counts = np.full(workload.items, -1, np.int64)
    threshold = deep_threshold = 0
    last_version: int | None = None
    index = extra = 0
    read_units: list[float] = []
    for window in range(WINDOWS):
        delta = np.bincount(views[window * per_window : (window + 1) * per_window], minlength=workload.items)
        moved = delta > 0
        counts += delta
        index += 2 * int((moved & head).sum())
        joins = moved & ~head & (counts >= max(1, threshold))
        index += int(joins.sum())
        extra += int((joins & (delta < threshold)).sum())
        head |= joins
        if mode == "deep":
            now = buckets(counts, base)
            if head_known:
                index += int((deep & head).sum())  # left the deep tier in the UpdateItem that joined the head
                deep &= ~head
            changed = moved & deep & (now != deep_bucket)
            index += 2 * int(changed.sum())
            extra += int(changed.sum())
            # Joined in the move when the window's count proves T_D, at that count's bucket (fixed by a separate
            # UpdateItem if wrong); the window's count stands in for the aggregator's lower bound, which sums the
            # moved write shards' absolute counters and is never less. A move does not know whether the item is in
            # the head: ``head_known`` supposes it does; otherwise head items join the deep tier too (harmless for
            # exactness, not for cost). Joins the lower bound does not prove are separate UpdateItems.
            proven = moved & ~deep & ~joins & (delta >= max(1, deep_threshold))
            in_move = proven & ~head if head_known else proven
            separate = moved & ~deep & ~head & ~in_move & (counts >= max(1, deep_threshold))
            index += int(in_move.sum()) + int(separate.sum())
            extra += int(separate.sum())
            refixed = in_move & (buckets(delta, base) != now)
            index += 2 * int(refixed.sum())
            extra += int(refixed.sum())
            deep |= in_move | separate
            deep_bucket = np.where(deep, now, -1)
        due = last_version is None or (window - last_version) >= 0.9 * refresh_windows
        nth, dth = nth_best(counts, workload.top_n), nth_best(counts, depth)
        if mode == "index":
            if due:
                threshold, last_version = max(threshold, dth), window
            continue
        threshold = max(threshold, nth)
        if mode == "deep" and due:
            deep_threshold, last_version = max(deep_threshold, dth), window
            read = deep & (deep_bucket >= buckets(np.array([max(dth, 1)]), base)[0])
            keys = int(read.sum())
            read_units.append(math.ceil(keys * KEY_ENTRY_BYTES / 4096) * 0.5 + RU_PER_AGGREGATE * keys)
    total = len(views)
    return Cost(index / total, extra / total, int(deep.sum()), read_units[-1] if read_units else 0.0)


def main() -> None:
    workload = Workload()
    baseline = run(workload, "head", workload.top_n, 6)
    print(f"D = N: index {baseline.index_units_per_view:.3f} wu/view (the benchmark measured 0.232)")
    for seconds in (60, 10):
        windows = seconds // 10
        tier = run(workload, "index", 10_000, windows)
        print(f"index tier, every {seconds} s: extra +{tier.per_view - baseline.per_view:.3f} wu/view")
        for head_known in (True, False):
            for base in (2, 4, 8, 16):
                cost = run(workload, "deep", 10_000, windows, base, head_known)
                print(
                    f"deep tier base {base:2}, head {'known' if head_known else 'unknown'}, every {seconds} s:"
                    f" extra +{cost.per_view - baseline.per_view:.3f} wu/view (index {cost.index_units_per_view:.3f},"
                    f" separate updates {cost.extra_base_units_per_view:.4f}), {cost.deep_keyed:,} deep keys,"
                    f" {cost.read_units_last_version:,.0f} RU, last version"
                )


if __name__ == "__main__":
    main()
