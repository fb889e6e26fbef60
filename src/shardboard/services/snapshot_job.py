"""The snapshot job: one run of the scheduled function, of ``shardboard snapshot`` and of the local scheduler.

It refreshes every board and period whose counts changed (services/snapshots.py), then repairs the sparse index of any
period it could not prove exact (more takedowns above T than spares: services/refill.py), within the time left. The
callers report what it returns: the function as metrics and log lines (handlers/snapshot.py), the CLI as lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shardboard.domain.items.taken_down import TakenDown
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.snapshot import RefreshRun
from shardboard.services.refill import Repair, repair_unproven
from shardboard.services.snapshots import refresh_snapshots
from shardboard.services.stores import Container


@dataclass(frozen=True)
class SnapshotJob:
    """One run: the refresh, the repair of its unproven heads, and the board events it announced."""

    run: RefreshRun
    unproven: list[PeriodKey]
    repair: Repair
    events: int

    @property
    def repaired(self) -> int:
        return len(self.unproven) - len(self.repair.unrepaired)

    def raise_if_none_refreshed(self) -> None:
        """Every period failed: the run fails with the first error (Lambda retries it, the CLI exits non-zero)."""
        if self.run.failures and not self.run.results:
            raise next(iter(self.run.failures.values()))

    def summary(self) -> dict[str, Any]:
        """The function's answer (at most 50 refreshed periods listed), which ``shardboard snapshot`` prints."""
        run = self.run
        return {
            "periods": len(run.results),
            "written": run.written,
            "items_read": run.items_read,
            "failed": len(run.failures),
            "stuck": [period._asdict() for period in run.stuck],
            "events": self.events,
            "sum_scans": run.scans,
            "repaired": self.repaired,
            "unproven": len(self.repair.unrepaired),
            "refreshed": [
                {
                    **period._asdict(),
                    "version": r.snapshot.version,
                    "written": r.written,
                    "items": len(r.snapshot.items),
                    "items_read": r.gathered.items_read,
                    "threshold": r.snapshot.threshold,
                }
                for period, r in sorted(run.results.items())
            ][:50],
        }


def run_snapshot_job(stores: Container, deadline: float | None) -> SnapshotJob:
    """Refresh, then repair the heads not proven exact before ``deadline`` (a ``time.monotonic()``; None: no limit).

    A repair that raises (say, throttled past its retries) raises :class:`RepairFailed` from it, whose job holds the
    refresh and counts every unproven head as not repaired."""
    dropped = TakenDown.read(stores.items)
    announced = stores.announcer.sent if stores.announcer else 0
    run = refresh_snapshots(stores, dropped=dropped)
    events = (stores.announcer.sent if stores.announcer else 0) - announced
    unproven = sorted(period for period, result in run.results.items() if not result.proven)
    try:
        repair = repair_unproven(
            stores.board, stores.settings, unproven, dropped=dropped, catalog=stores.items, deadline=deadline
        )
    except Exception as error:
        failed = SnapshotJob(run, unproven, Repair([], unproven, "the repair failed: see the function's error"), events)
        raise RepairFailed(failed, error) from error
    return SnapshotJob(run, unproven, repair, events)


class RepairFailed(RuntimeError):
    """The repair raised ``error`` after the refresh: ``job`` holds the refresh and counts every unproven head
    unrepaired."""

    def __init__(self, job: SnapshotJob, error: Exception) -> None:
        super().__init__(job.repair.why_not)
        self.job = job
        self.error = error
