"""`shardboard refill`: the snapshot job's own repair (shardboard.services.refill), run by hand against any stack.

The job runs it by itself for the boards whose heads it could not prove exact; an operator runs it when the
UnprovenSnapshotsAlarm says the job could not (a board table too big to scan within the function's time, or a period
the repair left unproven: docs/operations.md), or to repair every board at once.
"""

from __future__ import annotations

from shardboard.services.refill import Refill, refill, short_periods

__all__ = ["Refill", "refill", "short_periods"]
