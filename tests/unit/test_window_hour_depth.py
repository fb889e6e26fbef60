"""Why the hours of a window publish T at WINDOW_HOUR_DEPTH x (N+R): a model of a full 24 h window (25 hours of Zipf
counts, stable popularity, the last hour half full), each hour's sparse index holding the items at or above its T, and
the job's ``sum_top`` run on them. At depth 1 the sum of the hours' thresholds outgrows the window's (N+R)-th best and
the proof fails (the job would scan the board table); at the policy's depth every window is proven
(docs/rolling-windows.md, "The hours' threshold depth")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from shardboard.domain.policy import WINDOW_HOUR_DEPTH
from shardboard.domain.publishing.gather import Entry
from shardboard.domain.publishing.sums import Part, sum_top

ITEMS = 100_000
HOURS = 25


def proven_windows(views_per_hour: int, depth_n: int, depth: int, windows: int, seed: int = 1) -> int:
    """How many of ``windows`` random windows ``sum_top`` proves when each hour's T is its (depth x N+R)-th best."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, ITEMS + 1)
    weights /= weights.sum()
    proven = 0
    for _ in range(windows):
        views = [views_per_hour] * (HOURS - 1) + [views_per_hour // 2]  # the current hour, half way
        proven += window_proven([rng.multinomial(count, weights) for count in views], depth_n, depth)
    return proven


def window_proven(counts: Sequence[np.ndarray], depth_n: int, depth: int) -> bool:
    """Whether ``sum_top`` proves the top ``depth_n`` of the hours' ``counts`` (item i's views at index i)."""
    hours = []
    for hour in counts:
        order = np.argsort(-hour, kind="stable")
        threshold = int(hour[order[depth * depth_n - 1]])
        hours.append((hour, order[hour[order] >= max(threshold, 1)], threshold))

    def gather(part: int, n: int) -> Part:
        hour, keyed, threshold = hours[part]
        return Part([Entry(f"i{i:06d}", int(hour[i])) for i in keyed[:n]], more=len(keyed) > n, threshold=threshold)

    def read(wanted: Mapping[int, Sequence[str]]) -> dict[int, dict[str, int]]:
        return {part: {item: int(hours[part][0][int(item[1:])]) for item in ids} for part, ids in wanted.items()}

    return sum_top(depth_n, len(hours), gather, read).proven


def test_a_full_window_is_proven_at_the_policy_depth_and_not_always_at_n_plus_r() -> None:
    assert proven_windows(100_000, 100, WINDOW_HOUR_DEPTH, windows=4) == 4
    assert proven_windows(6_000_000, 100, 1, windows=4) < 4
