"""DynamoDB capacity, emulated: units priced like DynamoDB, per-partition-key limits, throttling errors.

``emulator`` (limits, clocks, admission), ``units`` (item sizes and units), ``schema`` (which partitions a write
touches, GSIs included), ``memory`` (in-memory stores for the benchmark), ``hook`` (a real boto3 client, throttled).
"""

from shardboard_tools.capacity.emulator import (
    PARTITION_THROTTLED,
    TABLE_THROTTLED,
    CapacityEmulator,
    Charge,
    Limits,
    RealClock,
    Usage,
    VirtualClock,
)

__all__ = [
    "PARTITION_THROTTLED",
    "TABLE_THROTTLED",
    "CapacityEmulator",
    "Charge",
    "Limits",
    "RealClock",
    "Usage",
    "VirtualClock",
]
