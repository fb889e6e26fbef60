"""DynamoDB's on-demand request prices: the one definition every benchmark's dollar figure is computed from."""

from __future__ import annotations

# aws.amazon.com/dynamodb/pricing/on-demand/ (us-east-1, Standard table class), the prices since 1 November 2024.
WRITE_REQUEST_UNIT_DOLLARS = 0.625 / 1_000_000
READ_REQUEST_UNIT_DOLLARS = 0.125 / 1_000_000


def on_demand_dollars(write_units: float, read_units: float) -> float:
    """What ``write_units`` write request units and ``read_units`` read request units cost on demand."""
    return write_units * WRITE_REQUEST_UNIT_DOLLARS + read_units * READ_REQUEST_UNIT_DOLLARS
