"""The ViewCounters port (the base table): ADD on one item's counters (global and per board) in one anchor bucket, exact
reads, and the stream's OLD/NEW images."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber

from shardboard.adapters.stream_records import stream_view_records
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.aggregating.batch import ViewRecord
from shardboard.domain.clock import FixedClock
from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard_tools.capacity.emulator import CapacityEmulator, Limits, VirtualClock
from shardboard_tools.capacity.stores import in_process


def test_add_view_adds_count_to_one_counter(ports):
    # Given three writes on two counters of "a" and one of "b"
    ports.views.add_view("a", 0, 1, "all")
    ports.views.add_view("a", 0, 4, "all")
    ports.views.add_view("a", 2, 3, "all")
    ports.views.add_view("b", 1, 1000, "all")
    # Then each counter holds the sum of what was added to it, and the reads agree
    assert ports.views.shard_counts("a", [0, 1, 2], "all") == {0: 5, 2: 3}
    assert ports.views.item_total("a", 3, "all") == 8
    assert ports.views.item_total("a", 1, "all") == 5
    assert ports.views.item_total("c", 3, "all") == 0
    assert ports.views.scan_totals() == {"a": 8, "b": 1000}


def test_the_stream_carries_each_counters_absolute_old_and_new_values(ports):
    # Given a counter created by one write and advanced by two more, and another counter of the same item
    ports.views.add_view("a", 0, 1, "all")
    ports.views.add_view("a", 0, 4, "all")
    ports.views.add_view("a", 7, 2, "all")
    ports.views.add_view("a", 0, 10, "all")
    # When the stream is read as Lambda receives it
    records = ports.counter_records()
    # Then there is one record per write: INSERT (no OldImage) then MODIFY, in order per counter
    assert [r["eventName"] for r in records if r["dynamodb"]["Keys"]["pk"]["S"] == "view#0#all#a"] == [
        "INSERT",
        "MODIFY",
        "MODIFY",
    ]
    assert all(("OldImage" in r["dynamodb"]) == (r["eventName"] == "MODIFY") for r in records)
    steps = [(v.item_id, v.shard, v.old, v.new) for r in records for v in stream_view_records(r)]
    assert [s for s in steps if s[1] == 0] == [("a", 0, 0, 1), ("a", 0, 1, 5), ("a", 0, 5, 15)]
    assert [s for s in steps if s[1] == 7] == [("a", 7, 0, 2)]
    assert all(isinstance(v, ViewRecord) for r in records for v in stream_view_records(r))


def test_a_write_counts_on_the_global_board_and_each_board_named_in_its_anchor_bucket(ports):
    views = ports.views
    # Given views of "a" in two days, some of them also on the "cats" and "dogs" boards
    views.add_view("a", 0, 2, "2026-11-22", ("cats",))
    views.add_view("a", 0, 3, "2026-11-22", ("cats", "dogs"))
    views.add_view("a", 1, 4, "2026-11-23")
    views.add_view("a", 0, 1, "2026-11-23", ("dogs",))
    views.add_view("b", 0, 7, "2026-11-23", ("cats",))
    # Then each (bucket, shard) item holds a counter per board, ``views`` being the global board's
    assert views.counters("a", [("2026-11-22", 0), ("2026-11-23", 0), ("2026-11-23", 1), ("2026-11-24", 0)]) == {
        ("2026-11-22", 0): {"global": 5, "cats": 5, "dogs": 3},
        ("2026-11-23", 0): {"global": 1, "dogs": 1},
        ("2026-11-23", 1): {"global": 4},
    }
    # And the global reads are per bucket
    assert views.shard_counts("a", [0, 1], "2026-11-23") == {0: 1, 1: 4}
    assert views.item_total("a", 2, "2026-11-22") == 5
    assert views.item_total("a", 2, "all") == 0  # no view was counted in the all-time bucket
    # And the exact totals sum every bucket of the global board only (category counters are not extra views)
    assert views.scan_totals() == {"a": 10, "b": 7}
    # And each write's record carries one view record per board counter it changed, in its bucket
    steps = [
        [(v.board, v.bucket, v.old, v.new) for v in stream_view_records(r)]
        for r in ports.counter_records()
        if r["dynamodb"]["NewImage"]["item_id"]["S"] == "a" and r["dynamodb"]["NewImage"]["shard"]["N"] == "0"
    ]
    assert [sorted(step) for step in steps] == [
        [("cats", "2026-11-22", 0, 2), ("global", "2026-11-22", 0, 2)],
        [("cats", "2026-11-22", 2, 5), ("dogs", "2026-11-22", 0, 3), ("global", "2026-11-22", 2, 5)],
        [("dogs", "2026-11-23", 0, 1), ("global", "2026-11-23", 0, 1)],
    ]


def test_a_throttled_write_is_the_domain_outcome_and_writes_nothing_in_process():
    # Given the adapters on the in-process engine, whose partitions take 2 write units a second
    stores = in_process(CapacityEmulator(VirtualClock(), Limits(partition_write_units=2)))
    views = stores.views
    views.add_view("a", 0, bucket="2026-11-22")
    views.add_view("a", 0, 5, bucket="2026-11-22")
    # When a third write hits the same counter in the same second
    with pytest.raises(Throttled) as refused:
        views.add_view("a", 0, 100, bucket="2026-11-22")
    # Then it is refused at the partition level, as the adapter reports it, and nothing was written
    assert refused.value.scope is ThrottleScope.PARTITION
    assert views.item_total("a", 1, bucket="2026-11-22") == 6
    assert len(stores.stream) == 2


@pytest.mark.parametrize(
    ("code", "reasons", "scope"),
    [
        ("ProvisionedThroughputExceededException", ["TableWriteKeyRangeThroughputExceeded"], ThrottleScope.PARTITION),
        ("ProvisionedThroughputExceededException", ["TableWriteProvisionedThroughputExceeded"], ThrottleScope.TABLE),
        ("ThrottlingException", [], ThrottleScope.TABLE),
    ],
)
def test_a_throttled_write_is_the_domain_outcome_on_dynamodb(code, reasons, scope):
    # Given DynamoDB refusing the write (after botocore's retries) with its code and ThrottlingReasons
    client = boto3.client("dynamodb", region_name="us-east-1")
    views = ViewStore(client, "views", clock=FixedClock(datetime(2026, 11, 23, tzinfo=UTC)))
    listed = {"ThrottlingReasons": [{"reason": r, "resource": "views"} for r in reasons]} if reasons else None
    with Stubber(client) as stub:
        stub.add_client_error(
            "update_item",
            code,
            "rate exceeded",
            400,
            modeled_fields=listed,
        )
        # When a view is recorded, the adapter raises the domain's Throttled with the limit's scope
        with pytest.raises(Throttled) as refused:
            views.add_view("a", 0, 3)
    assert refused.value.scope is scope


def test_the_counter_scan_names_each_board_anchor_bucket_and_write_shard(ports):
    views = ports.views
    views.add_view("a", 0, 2, "2026-11-22", ("cats",))
    views.add_view("a", 1, 4, "2026-11-23")
    views.add_view("b", 0, 1, "2026-11-23", ("cats",))
    assert sorted(views.scan_counters_all()) == [
        ("a", "2026-11-22", 0, "cats", 2),
        ("a", "2026-11-22", 0, "global", 2),
        ("a", "2026-11-23", 1, "global", 4),
        ("b", "2026-11-23", 0, "cats", 1),
        ("b", "2026-11-23", 0, "global", 1),
    ]


def test_a_view_without_a_bucket_is_counted_in_the_current_anchor_bucket(ports):
    views = ports.views
    # A named bucket is itself; no bucket is the current anchor bucket, where a view without one is counted
    assert views.bucket("2026-11-22") == "2026-11-22"
    current = views.bucket()
    views.add_view("a", 0, 3)
    assert views.item_total("a", 1, current) == 3
    assert views.shard_counts("a", [0], current) == {0: 3}
    assert views.item_total("a", 1, "2026-11-22") == 0
