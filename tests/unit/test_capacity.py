"""The capacity emulator prices and throttles like DynamoDB (units, partition and table limits, virtual clock)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import throttle_scope
from shardboard_tools.capacity import (
    PARTITION_THROTTLED,
    TABLE_THROTTLED,
    CapacityEmulator,
    Charge,
    Limits,
    VirtualClock,
)
from shardboard_tools.capacity.memory import board_schema
from shardboard_tools.capacity.units import item_size, number_size, query_units, read_units, write_units


def write(resource: str, partition: str | None, units: float, table: str = "t") -> Charge:
    return Charge(table, resource, partition, "write", units)


def test_sizes_follow_the_developer_guide():
    # Given DynamoDB's sizing rules: names + values, numbers by significant digits, containers with overhead
    assert item_size({"pk": {"S": "abc"}}) == 2 + 3
    assert number_size("12345") == 4  # 5 digits -> 3 bytes + 1
    assert number_size("100") == 2  # trailing zeros trimmed
    assert item_size({"m": {"M": {"a": {"N": "1"}}}}) == 1 + 3 + (1 + 1 + 2)
    assert item_size({"l": {"L": [{"BOOL": True}, {"NULL": True}]}}) == 1 + 3 + 2 * (1 + 1)
    assert item_size(None) == 0


def test_units_round_up_per_kb_and_per_4kb():
    assert write_units(0) == 1  # even a refused write costs one unit
    assert write_units(1024) == 1
    assert write_units(1025, 10) == 2  # the larger image counts
    assert read_units(4096, consistent=True) == 1
    assert read_units(4097, consistent=False) == 1.0  # two 4 KB steps at half cost
    # A query sums sizes before rounding: 40 items of 100 bytes are one 4 KB step, 41 are two
    assert query_units([100] * 40, consistent=False) == 0.5
    assert query_units([100] * 41, consistent=False) == 1.0
    assert 41 * read_units(100, consistent=False) == 20.5  # what 41 GetItems would cost


def test_a_partition_key_takes_1000_write_units_per_simulated_second():
    # Given an emulator on a virtual clock
    clock = VirtualClock()
    emulator = CapacityEmulator(clock)
    # When 1,000 one-unit writes hit one key within one second, the 1,001st is refused
    for _ in range(1000):
        emulator.admit("UpdateItem", [write("t", "hot", 1)])
    with pytest.raises(ClientError) as refused:
        emulator.admit("UpdateItem", [write("t", "hot", 1)])
    # Then with DynamoDB's code and reason, and nothing booked for the refused request
    assert refused.value.response["Error"]["Code"] == PARTITION_THROTTLED
    assert refused.value.response["ThrottlingReasons"][0]["reason"] == "TableWriteKeyRangeThroughputExceeded"
    assert throttle_scope(refused.value) is not None
    assert emulator.usage.units("write") == 1000
    assert emulator.usage.throttled_requests == 1
    # And another key, or the next simulated second, is fine
    emulator.admit("UpdateItem", [write("t", "cold", 1)])
    clock.advance(1.0)
    emulator.admit("UpdateItem", [write("t", "hot", 1)])
    assert emulator.usage.peak("write").units == 1000
    assert emulator.usage.peak("write").partition == "hot"


def test_reads_have_their_own_3000_unit_ceiling():
    emulator = CapacityEmulator(VirtualClock())
    emulator.admit("Query", [Charge("t", "t/i", "k", "read", 3000)])
    with pytest.raises(ClientError):
        emulator.admit("Query", [Charge("t", "t/i", "k", "read", 0.5)])
    emulator.admit("UpdateItem", [write("t/i", "k", 1000)])  # writes are counted apart


def test_an_index_partition_throttles_the_base_write():
    # Given a GSI key at its limit: a base write that would add an index write there is refused as a whole
    emulator = CapacityEmulator(VirtualClock())
    emulator.admit("UpdateItem", [write("t/by-views", "b#0", 999)])
    with pytest.raises(ClientError) as refused:
        emulator.admit("UpdateItem", [write("t", "item#a", 1), write("t/by-views", "b#0", 2)])
    assert refused.value.response["ThrottlingReasons"][0]["reason"] == "IndexWriteKeyRangeThroughputExceeded"
    assert emulator.usage.units("write", "t") == 0


def test_table_limit_raises_throttling_exception_and_burst_banks_idle_capacity():
    # Given a table limited to 100 write units/s with 2 s of burst
    clock = VirtualClock()
    emulator = CapacityEmulator(clock, Limits(table_write_units=100, burst_seconds=2))
    emulator.admit("PutItem", [write("t", f"k{i}", 100) for i in range(1)])
    with pytest.raises(ClientError) as refused:
        emulator.admit("PutItem", [write("t", "k2", 1)])
    assert refused.value.response["Error"]["Code"] == TABLE_THROTTLED
    # When the table idles for 3 seconds, at most 2 seconds (200 units) are banked on top of the limit
    clock.advance(4.0)
    emulator.admit("PutItem", [write("t", f"k{i}", 100) for i in range(3)])
    with pytest.raises(ClientError):
        emulator.admit("PutItem", [write("t", "k9", 1)])


def test_index_writes_cost_two_when_the_sort_key_moves_and_none_outside_the_index():
    schema = board_schema("board")
    key = {"pk": {"S": "item#a"}}
    outside = {**key, "item_id": {"S": "a"}, "views": {"N": "5"}}
    inside = {**outside, "board_shard": {"S": "global#10#3"}}
    moved = {**inside, "views": {"N": "6"}}
    # Not in the index before or after: only the base write
    assert [c.resource for c in schema.write_charges(key, outside, {**outside, "views": {"N": "6"}})] == ["board"]
    # Joining: one index write on the GSI key
    joined = schema.write_charges(key, outside, inside)
    assert [(c.resource, c.partition) for c in joined] == [("board", "item#a"), ("board/by-views", "global#10#3")]
    # Sort key change: delete + put
    assert [c.resource for c in schema.write_charges(key, inside, moved)].count("board/by-views") == 2
    # A non-indexed attribute changes: the index entry (keys + item_id) is untouched
    assert len(schema.write_charges(key, inside, {**inside, "applied_3": {"N": "1"}})) == 1
