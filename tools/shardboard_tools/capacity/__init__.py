"""DynamoDB capacity, emulated: units priced like DynamoDB, per-partition-key limits, throttling errors.

``emulator`` (limits, clocks, admission), ``units`` (item sizes and units), ``schema`` (which partitions a write
touches, GSIs included), ``engine`` and ``expressions`` (DynamoDB in process: the adapters' requests executed and
priced), ``stores`` (the stack's stores on it), ``memory`` (the older in-memory stores, for the unit tests not yet on
the engine), ``hook`` (a real boto3 client, throttled).
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
