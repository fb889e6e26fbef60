"""Announce what changed on the boards: after each head the snapshot job writes, its events (an item entered or left
the top N, domain/publishing/events.py) go to the ``EventSink``; a period that ended gets its ``closed`` event.

At least once, exactly once per id for a consumer that dedupes (docs/events.md). Events derive from a stored head
alone, so what this container published is all it needs to remember: per period, the last head version whose events
it published. A head it does not know as published (written by a run that died before its publish, by another
container, by a takedown's gather) is announced at its next refresh, under the same ids. A fresh container knows
nothing and so announces each period's latest head once more: duplicates, never gaps.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from shardboard.domain.periods import kind_of, parse_time
from shardboard.domain.policy import Leaderboards
from shardboard.domain.ports import EventSink, PeriodKey, PeriodLedger, Snapshots
from shardboard.domain.publishing.events import BoardEvent, closed_event, head_events
from shardboard.domain.publishing.head import Head
from shardboard.domain.publishing.snapshot import SnapshotResult

# A period that ended at most this many schedule intervals ago gets its closed event (a run or two may fail or be
# late); a job down for longer leaves it to the consumer's catch-up (docs/events.md).
CLOSE_LOOKBACK_RUNS = 3


class ClosingBoard(PeriodLedger, Snapshots, Protocol):
    """What closing reads: the boards there are (the ledger lists each board's all-time item) and their heads."""


class Announcer:
    """One container's announcements: the sink, and what it has published (thread-safe: periods refresh in
    parallel)."""

    def __init__(self, sink: EventSink, policy: Leaderboards, refresh_seconds: int) -> None:
        self.sink = sink
        self.policy = policy
        self.lookback = timedelta(seconds=CLOSE_LOOKBACK_RUNS * refresh_seconds)
        self._published: dict[PeriodKey, int] = {}
        # Per period, the ids published for its latest gather (``events_version``): a takedown's patched head derives
        # that gather's events again under the same ids, and only its own changes need to go out.
        self._sent: dict[PeriodKey, tuple[int, set[str]]] = {}
        self._closed: set[PeriodKey] = set()
        self._lock = threading.Lock()
        self.sent = 0  # events published by this container (the handler's metric)

    def refreshed(self, period: PeriodKey, result: SnapshotResult) -> int:
        """After one period's refresh: publish the events of the head read before it, if not known published, and
        of the head it wrote; the number of events published."""
        heads = [head for head in (result.previous,) if head is not None and self._outstanding(period, head)]
        if result.written:
            heads.append(result.snapshot)
        if not heads:
            return 0
        top_n = self.policy.keep(period.board).top_n
        return self._publish(period, heads, [event for head in heads for event in head_events(head, top_n)])

    def close_ended(self, board: ClosingBoard, now: datetime) -> int:
        """Publish ``closed`` for the periods that ended within the lookback, on every board that has a head in
        them; the number published. Reads the ledger only in the runs just after a period boundary."""
        half_life = self.policy.periods.half_life_hours
        ended = [
            (kind, bucket)
            for kind in self.policy.periods.kinds
            if (bucket := kind_of(kind).ended(now, self.lookback, half_life)) is not None
        ]
        if not ended:
            return 0
        boards = sorted({status.period.board for status in board.periods()})
        sent = 0
        for period in (PeriodKey(name, kind, bucket) for name in boards for kind, bucket in ended):
            with self._lock:
                if period in self._closed:
                    continue
            head = board.get_snapshot(period, consistent=True)
            if head is not None:
                self.sink.publish([closed_event(head, self.policy.keep(period.board).top_n)])
                sent += 1
            with self._lock:
                self._closed.add(period)
                self.sent += head is not None
        return sent

    def _outstanding(self, period: PeriodKey, head: Head) -> bool:
        with self._lock:
            return self._published.get(period, 0) < head.version

    def _publish(self, period: PeriodKey, heads: Sequence[Head], events: list[BoardEvent]) -> int:
        with self._lock:
            gather, sent = self._sent.get(period, (0, set()))
        unique = [event for event in {event.id: event for event in events}.values() if event.id not in sent]
        if unique:
            self.sink.publish(unique)
        latest = max(head.events_version or head.version for head in heads)
        with self._lock:
            self._published[period] = max(self._published.get(period, 0), *(head.version for head in heads))
            ids = sent if latest == gather else set()
            self._sent[period] = (latest, ids | {event.id for event in unique})
            self.sent += len(unique)
        return len(unique)


def moment(now: str) -> datetime:
    """The run's time: ``now``, ISO-8601 as the snapshot job takes it (from the composition root's clock)."""
    return parse_time(now)
