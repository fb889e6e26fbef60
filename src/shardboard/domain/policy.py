"""The small policy values the aggregator and the snapshot job decide by: what each board keeps, what periods exist and
how long they are kept, how the leaderboard index is sharded. ``settings.py`` builds them from the environment; the
domain never reads the settings themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.periods import DEFAULT_PERIODS, HOUR, anchor_kind, coarser_bucket, expires_at, kind_of, weight_of
from shardboard.domain.ports import PeriodKey
from shardboard.domain.trending import DEFAULT_HALF_LIFE_HOURS
from shardboard.domain.windows import RECENT, Window, is_window, summed_by_windows

# An hour summed by rolling windows publishes T from this many times N+R deep (docs/rolling-windows.md).
WINDOW_HOUR_DEPTH = 2


@dataclass(frozen=True)
class Periods:
    """The period kinds counted besides all time (finest first: the finest is the anchor base counters are keyed by),
    how many periods of each kind stay readable once they end (``retention``, in units of the kind) and the
    trending kind's half-life in hours (its epoch's length, its weights)."""

    kinds: tuple[str, ...] = DEFAULT_PERIODS
    retention: tuple[tuple[str, int], ...] = ()
    # Rolling windows read as sums of hour periods (domain/windows.py): naming one puts ``hour`` in ``kinds``.
    windows: tuple[Window, ...] = ()
    half_life_hours: int = DEFAULT_HALF_LIFE_HOURS

    @cached_property
    def anchor(self) -> str:
        return anchor_kind(self.kinds)

    @cached_property
    def coarse(self) -> tuple[str, ...]:
        """The kinds counted besides the anchor (coarser ones: unions of anchor buckets)."""
        return tuple(kind for kind in self.kinds if kind != self.anchor)

    def is_anchor(self, kind: str) -> bool:
        return kind == self.anchor

    @cached_property
    def weighted(self) -> bool:
        """Whether some kind's count is not a count of views (trending's score)."""
        return any(kind_of(kind).decays for kind in self.kinds)

    @cached_property
    def _kept(self) -> dict[str, int]:
        return dict(self.retention)

    def kept(self, kind: str) -> int:
        """Periods of ``kind`` kept past the current one (0: all time, which never expires); hours at least as long
        as the longest window, whose sums read them (trending's recent views too)."""
        kept = self._kept.get(kind, 0)
        if not summed_by_windows(kind):
            return kept
        windows: tuple[Window, ...] = (*self.windows, *(RECENT if self.weighted else ()))
        return max((kept, *(window.hours for window in windows)))

    def window(self, name: str) -> Window | None:
        return next((window for window in self.windows if window.name == name), None)

    def expires(self, period: PeriodKey) -> int | None:
        """When a period's items expire by TTL (None: all time); a window head an hour after its own hour ends."""
        if is_window(period.kind):
            return expires_at(HOUR, period.bucket, 1)
        return expires_at(period.kind, period.bucket, self.kept(period.kind), half_life=self.half_life_hours)

    def bucket(self, kind: str, anchor_bucket: str) -> str:
        """The ``kind`` bucket an anchor bucket falls in."""
        return coarser_bucket(kind, self.anchor, anchor_bucket, half_life=self.half_life_hours)

    def increment(self, kind: str, anchor_bucket: str, views: int) -> int:
        """What ``views`` views of ``anchor_bucket`` add to their ``kind`` period's count: the views themselves, or
        for trending their weighted score (the one place a count's unit depends on its kind)."""
        if not kind_of(kind).decays:  # the aggregator asks per delta and kind: views skip the weight's lookup
            return views
        return views * weight_of(kind, self.anchor, anchor_bucket, half_life=self.half_life_hours)


@dataclass(frozen=True)
class Keep:
    """What one board keeps: its top N in the head, R spares past them (a hide refills from them), and the depth D of
    its ranked versions (D == N: none, the head is the ranking)."""

    top_n: int
    spare: int = 0
    depth: int = 0

    @property
    def gather_depth(self) -> int:
        """How deep a head gather reads: N, and the R spares."""
        return self.top_n + self.spare

    @property
    def ranked_versions(self) -> bool:
        return self.depth > self.top_n


@dataclass(frozen=True)
class Keeping:
    """What the global board and every category board keep, and how ranked versions are paced."""

    main: Keep
    category: Keep
    page_size: int = 100  # P: the head's first P entries carry their metadata (domain/publishing/head_meta.py)
    rank_refresh_seconds: int = 60
    cursor_ttl_seconds: int = 900  # how long a superseded ranked version stays readable

    def of(self, board: str) -> Keep:
        return self.main if board == GLOBAL_BOARD else self.category


@dataclass(frozen=True)
class Indexing:
    """The leaderboard index: sparse (an item is keyed once it reaches the published threshold) or not, and S, the
    board shards of a board that was never resharded."""

    sparse: bool = True
    board_shards: int = 10


@dataclass(frozen=True)
class Leaderboards:
    """Every policy value the aggregator and the snapshot job need; ``board`` is the deployment's own board (the one
    the snapshot job refreshes every run)."""

    board: str = GLOBAL_BOARD
    periods: Periods = field(default_factory=Periods)
    index: Indexing = field(default_factory=Indexing)
    keeping: Keeping = field(default_factory=lambda: Keeping(Keep(100, 32), Keep(100, 32)))

    def keep(self, board: str) -> Keep:
        return self.keeping.of(board)

    def threshold_depth(self, period: PeriodKey) -> int:
        """K: the published T is the K-th best of a period. D with ranked versions on a period kind (T from the
        ranked version), N + R otherwise (all time's deep tier has its own T_D)."""
        keep = self.keep(period.board)
        if keep.ranked_versions and not self.deep_tier_on(period):
            return keep.depth
        if summed_by_windows(period.kind) and self.periods.windows:
            # Windows sum hours: an hour's T must sit well below its N+R-th best, or the sum of the hours' Ts
            # (what an unkeyed item may hold) outgrows a window's N+R-th best and its top cannot be proven.
            return WINDOW_HOUR_DEPTH * keep.gather_depth
        return keep.gather_depth

    def head_depth(self, period: PeriodKey) -> int:
        """How deep a head gather reads: N+R, or down to the T it publishes when that is deeper (an hour summed by
        windows); ranked versions and the deep tier publish their own."""
        keep = self.keep(period.board)
        if keep.ranked_versions:
            return keep.gather_depth
        return max(keep.gather_depth, self.threshold_depth(period))

    def deep_tier_on(self, period: PeriodKey) -> bool:
        """The deep tier serves all-time ranked versions only (a period kind keeps the index tier: T from the D-th
        best), and only with the sparse index (without it every item is in the head)."""
        lasting = kind_of(period.kind).pick(all_time=True, period=False)
        return lasting and self.index.sparse and self.keep(period.board).ranked_versions
