"""The snapshot job's decisions: what a period's head holds after an exact top-N gather, and which thresholds it
publishes. Pure: ``services/snapshots.py`` reads, calls these and executes what they return (and owns the pools).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shardboard.domain.periods import ALL, bucket_of, kind_of, parse_time, period_from_bucket
from shardboard.domain.policy import Leaderboards
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.events import departed
from shardboard.domain.publishing.gather import Entry, Gathered, with_ranks
from shardboard.domain.publishing.head import Head, Row, with_previous_rank
from shardboard.domain.publishing.head_size import Degraded
from shardboard.domain.publishing.ranked_versions import RankRefresh
from shardboard.domain.trending import DEFAULT_HALF_LIFE_HOURS, decayed
from shardboard.domain.windows import RECENT, is_window, parse_window


@dataclass(frozen=True)
class SnapshotResult:
    snapshot: Head
    written: bool  # False when the content had not changed (or a newer snapshot won the race)
    gathered: Gathered
    # False when hides above the sparse index's T outran the spares and no deeper index could make up for them: the
    # head is the exact top of the *keyed* visible items only (``proven_exact``; `shardboard refill` repairs it).
    proven: bool = True
    previous: Head | None = None  # the head read before the gather (its events may still be unpublished)
    degraded: Degraded = field(default_factory=Degraded)  # what the head left out to fit (head_size.py ``fit``)


def head_digest(items: Sequence[Row], spare: Sequence[Row]) -> str:
    """What a snapshot's content is compared by: its top N and its spares (a stale spare would refill wrongly)."""
    return hashlib.sha256(json.dumps([*items, *spare], ensure_ascii=False).encode()).hexdigest()


def index_threshold(gathered: list[Entry], depth: int) -> int:
    """The T published to the sparse index: the (N+R)-th best visible, so that every spare is exact too (an item
    below T may be missing from the index) and up to R hides leave N visible items at or above T (proposal
    section 2's argument with N+R for D)."""
    return gathered[depth - 1].views if len(gathered) >= depth else 0


def proven_exact(top: Sequence[Entry], depth: int, threshold: int) -> bool:
    """Whether a gather of the keyed items is the exact top ``depth`` of every visible item. Every item at or above
    the published T is keyed (docs/sparse-index.md), so the gather is exact when its ``depth``-th entry is at or
    above T, or when T is 0 (everything is keyed). Only takedowns break it: more hides above T than spares."""
    return threshold <= 0 or (len(top) >= depth and top[depth - 1].views >= threshold)


def previous_ranks(previous: Head | None, entries: Sequence[Row]) -> dict[str, int]:
    """Each of ``entries``' competition rank in the ``previous`` head (its entries and spares, in board order); an id
    it did not hold has none. What an entry's ``previous_rank`` reads, at no write of its own."""
    if previous is None:
        return {}
    wanted = {row.id for row in entries}
    held = [Entry(id=row.id, views=row.views) for row in (*previous.items, *previous.spare)]
    return {ranked.id: ranked.rank for ranked in with_ranks(held) if ranked.id in wanted}


def plan_head(  # noqa: PLR0917 - one head's inputs
    policy: Leaderboards,
    period: PeriodKey,
    previous: Head | None,
    gathered: Gathered,
    rank: RankRefresh,
    now: str,
) -> Head | None:
    """The head to write after a gather of the exact top N+R visible (top N in ``items``, the R spares in ``spare``),
    or None when its content and ranked version are the previous head's (nothing to write)."""
    keep = policy.keep(period.board)
    top_n = keep.top_n
    items = tuple(Row(e.id, e.views) for e in gathered.top[:top_n])
    spare = tuple(Row(e.id, e.views) for e in gathered.top[top_n : keep.gather_depth])
    digest = head_digest(items, spare)
    if previous is not None and previous.digest == digest and rank.block == previous.rank:
        return None
    version = previous.version + 1 if previous else 1
    return Head(
        board=period.board,
        period=period_json(period, half_life=policy.periods.half_life_hours),
        bucket=period.bucket,
        version=version,
        generated_at=now,
        items=items,
        spare=spare,
        items_read=gathered.items_read,
        # T, the N-th best views: an item below it can never reach the top N (docs/sparse-index.md).
        threshold=items[-1].views if len(items) >= top_n else 0,
        shard_hits=gathered.shard_hits,
        digest=digest,
        expires_at=policy.periods.expires(period),
        rank=rank.block,
        previous=previous_ranks(previous, (*items, *spare)),
        gone=departed(previous, (*items, *spare), top_n),
        events_version=version,
    )


@dataclass(frozen=True)
class Publish:
    """The thresholds to raise once a head is written (0: none): T of the sparse index, T_D of the deep tier."""

    threshold: int = 0
    deep_threshold: int = 0


def plan_publish(policy: Leaderboards, period: PeriodKey, gathered: Gathered, rank: RankRefresh) -> Publish:
    """Raise the sparse-index T once the head is written: the (N+R)-th best visible, or with ranked versions on
    only the D-th best visible of a deep gather (D >= N+R; a head refresh then publishes nothing). All time with
    ranked versions has the deep tier instead: T stays the (N+R)-th best, and a deep gather raises T_D to its D-th
    best."""
    keep = policy.keep(period.board)
    deep = policy.deep_tier_on(period)
    threshold = (
        rank.threshold
        if keep.ranked_versions and not deep
        else index_threshold(gathered.top, policy.threshold_depth(period))
    )
    return Publish(
        threshold if policy.index.sparse and threshold > 0 else 0,
        rank.threshold if deep and rank.threshold > 0 else 0,
    )


def period_json(period: PeriodKey, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> dict[str, Any]:
    if is_window(period.kind):
        return parse_window(period.kind).span(period.bucket)
    return period_from_bucket(period.kind, period.bucket, half_life=half_life).as_json()


# A period whose head failed this many refreshes in a row is stuck: its readers are served an old head (the alarm).
STUCK_AFTER_FAILURES = 3


@dataclass(frozen=True)
class RefreshRun:
    """One run of the snapshot job: the periods it refreshed and what each cost, the failed ones and how many of
    their refreshes have failed in a row (``failing``)."""

    results: dict[PeriodKey, SnapshotResult]
    failures: dict[PeriodKey, BaseException]
    failing: dict[PeriodKey, int] = field(default_factory=dict)

    @property
    def stuck(self) -> list[PeriodKey]:
        """The periods that failed their last ``STUCK_AFTER_FAILURES`` refreshes (or more)."""
        return sorted(period for period, count in self.failing.items() if count >= STUCK_AFTER_FAILURES)

    @property
    def degraded(self) -> dict[PeriodKey, Degraded]:
        """The heads written with parts left out to fit their item (head_size.py ``fit``)."""
        return {period: r.degraded for period, r in self.results.items() if r.written and r.degraded}

    @property
    def items_read(self) -> int:
        return sum(r.gathered.items_read for r in self.results.values())

    @property
    def written(self) -> int:
        return sum(r.written for r in self.results.values())

    @property
    def scans(self) -> int:
        """Sums of periods proven by a scan of the board table (sums.py: the indexes' thresholds could not)."""
        return sum(r.gathered.scans for r in self.results.values())


def leaderboard_json(snapshot: Head, limit: int | None = None) -> dict[str, Any]:
    """The public leaderboard document: ``{"board", "generated_at", "period", "items": [{"rank", "id", "views",
    "previous_rank"}]}``; an entry whose metadata the head carries also has ``"meta"``
    (domain/publishing/head_meta.py)."""
    entries = [Entry(id=item, views=views) for item, views in snapshot.items[:limit]]
    meta = snapshot.meta or {}
    ranked = with_ranks(entries)
    items = [_with_meta(with_previous_rank(entry.as_json(), snapshot), meta.get(entry.id)) for entry in ranked]
    if kind_of(snapshot.period.get("kind", ALL)).decays:
        items = [_as_trending(entry, snapshot) for entry in items]
    return {
        "board": snapshot.board,
        "generated_at": snapshot.generated_at,
        "period": snapshot.period or {"kind": ALL},
        "items": items,
    }


def _as_trending(entry: dict[str, Any], snapshot: Head) -> dict[str, Any]:
    """A trending entry: ranked by its exact integer score; ``score`` is that score as views at the head's time
    (a view then counts 1, a view a half-life older 1/2), ``views`` the same rounded (the integer is ~10^30)."""
    start, end, at = (
        parse_time(moment) for moment in (snapshot.period["start"], snapshot.period["end"], snapshot.generated_at)
    )
    score = decayed(entry["views"], start, end, at)
    recent = snapshot.recent.get(entry["id"])
    parts = {} if recent is None else {"recent": dict(zip((w.name for w in RECENT), recent, strict=True))}
    return {**entry, "views": round(score), "score": round(score, 3), **parts}


def _with_meta(entry: dict[str, Any], document: dict[str, Any] | None) -> dict[str, Any]:
    return entry if document is None else {**entry, "meta": document}


def period_at(board: str, kind: str, moment: datetime, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> PeriodKey:
    """The period of ``kind`` containing ``moment`` (the caller's clock) on ``board`` (``half_life``: trending's)."""
    return PeriodKey(board, kind, bucket_of(kind, moment, half_life=half_life))


def opening_head(period: PeriodKey, *, half_life: int = DEFAULT_HALF_LIFE_HOURS) -> Head:
    """A period's head at its first second, before the snapshot job's first run in it: no entries, generated at the
    period's start (true of every period then; the job's next run replaces it). Version 0: never stored."""
    shown = period_json(period, half_life=half_life)
    start = parse_time(shown["start"]).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return Head(period.board, shown, period.bucket, 0, start, (), 0, 0, {}, "")


def not_found(period: PeriodKey) -> str:
    """Why a period has no snapshot, in one line (HTTP 404, CLI exit 1)."""
    return kind_of(period.kind).pick(
        all_time=f"board {period.board!r} has no views yet (or the snapshot job has not run since its first view)",
        period=f"board {period.board!r} has no views in the {period.kind} {period.bucket} (or it has expired)",
    )
