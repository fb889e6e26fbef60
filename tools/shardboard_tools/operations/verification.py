"""Check the promise on every board and period: each count equals the sum of its base counters, every contender is
in its period's index, and every snapshot is the exact top N of its period's *visible* items (hidden items keep
counting, so their counts are checked like any other, but no snapshot may show them). Deleted items are out of the
truth: any aggregate or entry of theirs left is a difference; their base counters stay in the views table (the
aggregator skips them) and are reported as leftovers, which do not make the report inexact."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

from shardboard.domain.aggregating.countable import board_of, board_refusal, bucket_refusal, id_refusal
from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.clock import Clock
from shardboard.domain.periods import ALL, HOUR, kind_of, parse_time, previous_bucket
from shardboard.domain.ports import BoardScans, BoardState, CounterReads, PeriodKey, Snapshots, Thresholds
from shardboard.domain.publishing.gather import Entry, top
from shardboard.domain.publishing.head import Head
from shardboard.domain.publishing.refill import holding_threshold, reserve
from shardboard.domain.trending import TRENDING, carried_score
from shardboard.domain.windows import window_bucket
from shardboard.services.clock import system_clock
from shardboard.services.counts import Counts, Stored, stored_counts
from shardboard.services.stores import Container
from shardboard.settings import Settings

# Where the refill and this check share them (the names stay importable from here).
__all__ = [
    "Counts",
    "Difference",
    "HeadLag",
    "Report",
    "Stored",
    "holding_threshold",
    "reserve",
    "stored_counts",
    "verify",
]


class CheckedBoard(BoardScans, Thresholds, Snapshots, Protocol):
    """What `verify` reads of the board table: its counts, the published thresholds (with each period's refresh
    record) and the heads."""


# How long counts may wait for the aggregator beyond the snapshot job's interval: the stream's batching window
# (1 s), Lambda's polling and a batch's retries. A head behind its counts for less than the interval plus this is
# refreshing (normal on a live stack); for longer it is stale.
AGGREGATION_WINDOW_SECONDS = 60


@dataclass(frozen=True)
class HeadLag:
    """A head that does not show its period's exact top N: ``state`` "refreshing" (behind for less than the refresh
    interval plus the aggregation window), "stale" (longer, or its refreshes fail: ``failures`` in a row) or
    "capped" (the exact top, cut to fit its item: docs/head-size.md); ``since`` (ISO-8601) when it fell behind."""

    head: str  # "<board> <kind>:<bucket>"
    state: str
    since: str
    failures: int = 0


@dataclass(frozen=True)
class Difference:
    item_id: str
    expected: int  # sum of the item's base counters in that period (the truth)
    found: int | None  # the stored count; None when nothing holds one
    board: str = GLOBAL_BOARD
    period: str = ALL  # "all", or "<kind>:<bucket>"


@dataclass
class Report:
    items: int
    views: int
    boards: int = 0
    periods: int = 0
    differences: list[Difference] = field(default_factory=list)
    # Items at or above their period's published threshold that lack its GSI key: a snapshot could miss them.
    index_misses: list[str] = field(default_factory=list)
    threshold: int = 0  # the global board's all-time threshold
    snapshot_exact: bool | None = None  # the global board's all-time snapshot equals the top N of the truth
    snapshots_checked: int = 0
    snapshots_inexact: list[str] = field(default_factory=list)  # "<board> <kind>:<bucket>"
    hidden: int = 0  # hidden items: left out of every snapshot's truth
    deleted: int = 0  # deleted items: left out of the truth altogether
    # What of deleted items is left where nothing reads it: their base counters (never counted again) and their
    # entries in periods past retention, which a delete's sweep does not reach and TTL removes.
    deleted_leftovers: int = 0
    # Base counters the aggregator skips (an id, board name or bucket no request could write): never counted.
    uncountable: int = 0
    # Periods with more takedowns above their index threshold than spares: `shardboard refill` repairs them.
    refill_needed: list[str] = field(default_factory=list)  # "<board> <kind>:<bucket>"
    # The inexact heads by why: refreshing (exit 0), stale (exit 1), capped to fit their item (exit 0, a warning).
    heads_behind: list[HeadLag] = field(default_factory=list)
    # Counts below their base counters' sum and none above: the stream has not been processed yet (not a fault of
    # the heads, which show the counts they were given).
    counts_behind: bool = False

    @property
    def stale(self) -> list[HeadLag]:
        return [lag for lag in self.heads_behind if lag.state == STALE]

    @property
    def exact(self) -> bool:
        """Every count, index key and head as promised (a refreshing or capped head passes)."""
        return not self.differences and not self.index_misses and not self.stale

    def as_json(self) -> dict[str, Any]:
        return {"exact": self.exact, **asdict(self)}


REFRESHING, STALE, CAPPED = "refreshing", "stale", "capped"


def truth(views: CounterReads, settings: Settings) -> Counts:
    """Every period's counts from the base table alone."""
    return counted(views, settings).counts


class Counted(NamedTuple):
    counts: Counts
    leftovers: int  # base counters of deleted ids, left out
    uncountable: int  # base counters the aggregator skips too (an id, board or bucket a request could not name)


def counted(views: CounterReads, settings: Settings, deleted: frozenset[str] = frozenset()) -> Counted:
    """Every period's counts from the base table alone, as the aggregator counts them: without the deleted ids and
    without what it skips (domain/aggregating/countable.py), with how many counters of each were left out. A trending
    score's truth is the sum over the epoch's hour buckets of each bucket's count times its weight."""
    counts: Counts = defaultdict(lambda: defaultdict(int))
    leftovers = uncountable = 0
    periods = settings.policy.periods
    for item, bucket, _, board, value in views.scan_counters_all():
        if item in deleted:
            leftovers += 1
            continue
        if (
            id_refusal(item)
            or bucket_refusal(periods, bucket)
            or (board != settings.board and board_refusal(board_of(board)))
        ):
            uncountable += 1
            continue
        for kind in (*settings.policy.periods.kinds, ALL):
            counts[PeriodKey(board, kind, periods.bucket(kind, bucket))][item] += periods.increment(kind, bucket, value)
    return Counted(counts, leftovers, uncountable)


def stored(board: BoardScans, settings: Settings) -> tuple[Counts, dict[PeriodKey, set[str]]]:
    """Every period's counts as the board table holds them (an aggregate for its current periods, past entries
    for the others), and which items carry each period's index key."""
    found = stored_counts(board, settings.policy.periods)
    return found.counts, found.keyed


def verify_stack(stores: Container) -> Report:
    """The operator's check of a whole stack (``shardboard verify``, the chaos run): every board and period, with
    the hidden and deleted ids read from its items table first."""
    return verify(
        stores.views, stores.board, stores.settings, stores.items.hidden(), stores.items.denied(), clock=stores.clock
    )


def ranked_by(expected: Counts, period: PeriodKey, settings: Settings) -> dict[str, int]:
    """What a period's head ranks by: its counts, or for trending the epoch's scores plus the previous epoch's
    carried (domain/trending.py)."""
    own = expected.get(period, {})
    if not kind_of(period.kind).decays:
        return own
    half_life = settings.trending_half_life_hours
    before = expected.get(period._replace(bucket=previous_bucket(TRENDING, period.bucket, half_life=half_life)), {})
    return {item: own.get(item, 0) + carried_score(before.get(item, 0)) for item in own.keys() | before.keys()}


def verify(
    views: CounterReads,
    board: CheckedBoard,
    settings: Settings,
    hidden: frozenset[str] = frozenset(),
    deleted: frozenset[str] = frozenset(),
    *,
    clock: Clock = system_clock,
) -> Report:
    """The report; ``hidden``: the hidden ids (ItemCatalog.hidden), which no snapshot may show; ``deleted``: the
    deleted ids (ItemCatalog.denied), which nothing may hold; ``clock``: the stack's now (retention, heads' lag)."""
    expected, leftovers, uncountable = counted(views, settings, deleted)
    found, keyed = stored(board, settings)
    everything = PeriodKey(settings.board, ALL, ALL)
    overall = expected.get(everything, {})
    report = Report(items=len(overall), views=sum(overall.values()), hidden=len(hidden), deleted=len(deleted))
    report.deleted_leftovers = leftovers
    report.uncountable = uncountable
    report.boards = len({p.board for p in expected})
    now = clock().timestamp()
    report.periods = len(expected)
    # Each period's item: its threshold and its head's refresh record (read whether or not the index is sparse).
    states = board.thresholds(sorted(expected.keys() | found.keys()))
    thresholds = states if settings.sparse_index else {}
    report.threshold = thresholds[everything].threshold if everything in thresholds else 0
    for period in sorted(expected.keys() | found.keys()):
        truth_counts, stored_counts = expected.get(period, {}), found.get(period, {})
        label = kind_of(period.kind).pick(all_time=ALL, period=f"{period.kind}:{period.bucket}")
        expired = _expired(period, settings, now)
        for item in sorted(truth_counts.keys() | stored_counts.keys()):
            want, have = truth_counts.get(item, 0), stored_counts.get(item)
            if expired and item in deleted:
                report.deleted_leftovers += 1
                continue
            if have != want and not (want == 0 and have is None):
                report.differences.append(Difference(item, want, have, period.board, label))
        state = thresholds.get(period)
        threshold = state.threshold if state else 0
        for item, count in stored_counts.items():
            if count > 0 and count >= threshold and item not in keyed.get(period, set()):
                report.index_misses.append(f"{period.board} {label} {item}")
        if holding_threshold(stored_counts, *reserve(settings.policy, period, state), hidden | deleted) is not None:
            report.refill_needed.append(f"{period.board} {label}")
        snapshot = board.get_snapshot(period)
        # A head past its retention is no longer patched by takedowns (they patch retained periods): its TTL deletes
        # it within days, and until then it is not checked (docs/operations.md).
        if snapshot is not None and not (snapshot.expires_at is not None and snapshot.expires_at < now):
            # (deleted ids are out of the truth already)
            shown = ranked_by(expected, period, settings)
            visible = (Entry(id=i, views=v) for i, v in shown.items() if v and i not in hidden)
            best = top(visible, settings.top_n_of(period.board))
            exact = list(snapshot.items) == [(e.id, e.views) for e in best]
            report.snapshots_checked += 1
            if not exact:
                report.snapshots_inexact.append(f"{period.board} {label}")
                lag = head_lag(snapshot, best, stored_counts, states.get(period), settings, now, hidden)
                if f"{period.board} {label}" in report.refill_needed:  # no refresh brings what the index misses
                    lag = HeadLag("", STALE, snapshot.generated_at)
                if lag is not None:
                    report.heads_behind.append(replace(lag, head=f"{period.board} {label}"))
            if period == everything:
                report.snapshot_exact = exact
    _check_windows(board, settings, expected, hidden, report, at=datetime.fromtimestamp(now, UTC))
    report.counts_behind = bool(report.differences) and all(
        diff.found is None or diff.found < diff.expected for diff in report.differences
    )
    return report


def head_lag(  # noqa: PLR0917 - one head's evidence
    head: Head,
    best: Sequence[Entry],
    stored_counts: Mapping[str, int],
    state: BoardState | None,
    settings: Settings,
    now: float,
    hidden: frozenset[str],
) -> HeadLag | None:
    """Why ``head`` is not the exact top ``best``: None when it is the top of the counts the board table holds (the
    stream is behind, not the head: ``counts_behind``); else capped, refreshing or stale, and since when."""
    shown = [(row.id, row.views) for row in head.items]
    if shown and shown == [(e.id, e.views) for e in best[: len(shown)]] and len(shown) < len(best):
        return HeadLag("", CAPPED, head.generated_at)
    held = top(
        (Entry(id=i, views=v) for i, v in stored_counts.items() if v and i not in hidden),
        settings.top_n_of(head.board),
    )
    if not kind_of(head.period.get("kind", ALL)).decays and shown == [(e.id, e.views) for e in held]:
        return None
    if state is not None and state.failures:
        return HeadLag("", STALE, _iso(state.failing_since), state.failures)
    since = state.dirty_since if state is not None and state.dirty_since else 0
    if not since:  # its counts are not marked changed: it fell behind at its last refresh at the latest
        since = max(int(parse_time(head.generated_at).timestamp()), state.refreshed_at if state else 0)
    grace = settings.refresh_seconds + AGGREGATION_WINDOW_SECONDS
    return HeadLag("", REFRESHING if now - since <= grace else STALE, _iso(since))


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _expired(period: PeriodKey, settings: Settings, now: float) -> bool:
    """Whether the period is past retention: nothing reads it, and its entries' TTL has come."""
    end = settings.policy.periods.expires(period)
    return end is not None and end < now


def _check_windows(
    board: CheckedBoard, settings: Settings, expected: Counts, hidden: frozenset[str], report: Report, *, at: datetime
) -> None:
    """Every window head of the current hour against the sum of its hours' true counts (a head from an earlier
    hour, read until the job's first run of this hour, is not checked). ``at``: now."""
    bucket = window_bucket(at)
    for name in sorted({period.board for period in expected}):
        for window in settings.policy.periods.windows:
            head = board.get_snapshot(PeriodKey(name, window.name, bucket))
            if head is None:
                continue
            sums: Counter[str] = Counter()
            for hour in window.hour_buckets(bucket):
                sums.update(expected.get(PeriodKey(name, HOUR, hour), {}))
            visible = (Entry(id=i, views=v) for i, v in sums.items() if v and i not in hidden)
            best = top(visible, settings.top_n_of(name))
            report.snapshots_checked += 1
            if list(head.items) != [(e.id, e.views) for e in best]:
                report.snapshots_inexact.append(f"{name} {window.name}:{bucket}")
                # A window's head has no period item of its own: its lag is its age.
                lag = head_lag(head, best, {}, None, settings, at.timestamp(), hidden)
                if lag is not None:
                    report.heads_behind.append(replace(lag, head=f"{name} {window.name}:{bucket}"))
