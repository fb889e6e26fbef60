"""``set_counters`` (what `shardboard import` writes): one create-if-absent write of absolute counters, tagged with the
import; the same import finds it PRESENT, another import finds it TAKEN, neither changes it; the stream carries the
one step from nothing to the totals."""

from __future__ import annotations

from shardboard.adapters.stream_records import stream_view_records
from shardboard.domain.ports import PRESENT, TAKEN, WRITTEN

SHARD = 1_000_042


def test_set_counters_creates_once_and_never_overwrites(ports):
    # Given a counter set by one import
    first = ports.views.set_counters("a#1", SHARD, "2025-01-15", {"global": 7, "cats": 5, "bw": 1}, "import-1")
    # When the same import sets it again, and another import sets other values on it
    again = ports.views.set_counters("a#1", SHARD, "2025-01-15", {"global": 7, "cats": 5, "bw": 1}, "import-1")
    other = ports.views.set_counters("a#1", SHARD, "2025-01-15", {"global": 99}, "import-2")
    # Then only the first wrote; each consumed write units
    assert (first.outcome, again.outcome, other.outcome) == (WRITTEN, PRESENT, TAKEN)
    assert min(first.units, again.units, other.units) > 0
    # And the counters are the first import's, read like any writer's counter
    assert ports.views.shard_counts("a#1", [SHARD], "2025-01-15") == {SHARD: 7}
    assert ports.views.scan_totals() == {"a#1": 7}
    # And the stream holds one record: every board's step from 0 to its total, on the import shard
    records = ports.counter_records()
    assert len(records) == 1
    steps = sorted((s.board, s.item_id, s.bucket, s.shard, s.old, s.new) for s in stream_view_records(records[0]))
    assert steps == [
        ("bw", "a#1", "2025-01-15", SHARD, 0, 1),
        ("cats", "a#1", "2025-01-15", SHARD, 0, 5),
        ("global", "a#1", "2025-01-15", SHARD, 0, 7),
    ]


def test_set_counters_never_touches_a_writers_counter(ports):
    # Given a counter that a writer added views to (it carries no import tag)
    ports.views.add_view("a", 3, 4, "2025-01-15")
    # When an import tries the same key, it is TAKEN and the writer's counter is unchanged
    assert ports.views.set_counters("a", 3, "2025-01-15", {"global": 100}, "import-1").outcome == TAKEN
    assert ports.views.shard_counts("a", [3], "2025-01-15") == {3: 4}
