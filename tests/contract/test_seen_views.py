"""The dedupe contract (docs/honest-counts.md) on every implementation of the base table: a viewed view counts once
per (viewer, item, window), a retry of the same view (its token) is counted, not refused, and markers never count
as views. Also the cost per view with and without a viewer, from each implementation's own accounting."""

from __future__ import annotations

import threading

from shardboard.domain.writing.dedupe import Seen
from tests.contract.conftest import Ports, memory_ports

DAY = 86_400
BUCKET = "2026-11-23"


def test_a_viewed_view_counts_once_per_viewer_item_and_window(ports: Ports) -> None:
    seen = Seen.of("u1", DAY, at=1_795_000_000)
    first = ports.views.add_seen_view("a", 0, seen, BUCKET)
    again = ports.views.add_seen_view("a", 1, Seen.of("u1", DAY, at=1_795_000_001), BUCKET)
    retried = ports.views.add_seen_view("a", 2, seen, BUCKET)  # the same view retried: its own marker
    other_viewer = ports.views.add_seen_view("a", 0, Seen.of("u2", DAY, at=1_795_000_000), BUCKET, ("cats",))
    next_window = ports.views.add_seen_view("a", 0, Seen.of("u1", DAY, at=1_795_000_000 + DAY), BUCKET)
    assert [o.counted for o in (first, again, retried, other_viewer, next_window)] == [True, False, True, True, True]
    assert ports.views.item_total("a", 3, BUCKET) == 3
    assert ports.views.scan_totals() == {"a": 3}
    counters = ports.views.counters("a", [(BUCKET, 0)])
    assert counters == {(BUCKET, 0): {"global": 3, "cats": 1}}
    # The counter records on the stream step 0 -> 1 -> 2 -> 3 on shard 0: markers are not counter records
    steps = [r["dynamodb"]["NewImage"]["views"]["N"] for r in ports.counter_records()]
    assert steps == ["1", "2", "3"]


def test_concurrent_duplicates_count_once(ports: Ports) -> None:
    barrier, outcomes = threading.Barrier(6), []

    def one(shard: int) -> None:
        seen = Seen.of("u1", DAY, at=1_795_000_000)  # a token of its own: six requests, not retries
        barrier.wait()
        outcomes.append(ports.views.add_seen_view("hot", shard, seen, BUCKET).counted)

    threads = [threading.Thread(target=one, args=(shard,)) for shard in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == [False] * 5 + [True]
    assert ports.views.scan_totals() == {"hot": 1}


def test_cost_per_view_with_and_without_a_viewer() -> None:
    # Priced by the capacity emulator (DynamoDB's rules): moto reports 0.5 per UpdateItem and no ConsumedCapacity for
    # transactions, so this is not a contract case run on every implementation.
    ports = memory_ports()
    plain = ports.views.add_view("a", 0, 1, BUCKET)
    plain_again = ports.views.add_view("a", 0, 1, BUCKET)
    viewed = ports.views.add_seen_view("b", 0, Seen.of("u1", DAY, at=1_795_000_000), BUCKET)
    refused = ports.views.add_seen_view("b", 0, Seen.of("u1", DAY, at=1_795_000_000), BUCKET)
    # One write unit for an ADD on an item under 1 KB; a transaction of two such items costs 2 x 2 = 4; a refused
    # one is charged 2 by the emulator (the marker's condition, at the transactional rate).
    assert (plain, plain_again) == (1.0, 1.0)
    assert viewed.units == 4.0
    assert refused.units == 2.0 and not refused.counted
