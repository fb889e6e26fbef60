"""When a period's index threshold no longer holds its best visible items, and which T does (docs/sparse-index.md,
"Takedowns"): the rule the snapshot job's repair (services/refill.py), `shardboard refill` and `verify` share."""

from __future__ import annotations

from collections.abc import Mapping

from shardboard.domain.policy import Leaderboards
from shardboard.domain.ports import BoardState, PeriodKey
from shardboard.domain.publishing.gather import Entry, top


def reserve(policy: Leaderboards, period: PeriodKey, state: BoardState | None) -> tuple[int, int]:
    """The threshold a period's best visible items must stay at or above, and how many of them: T and D with ranked
    versions (their gather reads the top D of the index), T and N + R without; all time with the deep tier, T_D and
    D (the deep tier keys every aggregate down to T_D, and a short head gather falls back on it)."""
    if state is None:
        return 0, 0
    keep = policy.keep(period.board)
    if policy.deep_tier_on(period):
        return state.deep_threshold, keep.depth
    if keep.ranked_versions:
        return state.threshold, keep.depth
    return state.threshold, keep.gather_depth


def holding_threshold(
    counts: Mapping[str, int], published: int, depth: int, dropped: frozenset[str] | set[str]
) -> int | None:
    """The T that holds a period's best ``depth`` visible items, when the published T does not (more takedowns above
    it than spares); None when it does. 0 when fewer are visible."""
    if published <= 0:
        return None
    best = top((Entry(id=i, views=v) for i, v in counts.items() if v > 0 and i not in dropped), depth)
    holds = best[-1].views if len(best) >= depth else 0
    return holds if holds < published else None
