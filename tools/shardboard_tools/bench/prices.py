"""DynamoDB's on-demand request prices: the one definition every benchmark's dollar figure is computed from."""

from __future__ import annotations

# aws.amazon.com/dynamodb/pricing/on-demand/ (us-east-1, Standard table class), the prices since 1 November 2024.
WRITE_REQUEST_UNIT_DOLLARS = 0.625 / 1_000_000
READ_REQUEST_UNIT_DOLLARS = 0.125 / 1_000_000


def on_demand_dollars(write_units: float, read_units: float) -> float:
    """What ``write_units`` write request units and ``read_units`` read request units cost on demand."""
    return write_units * WRITE_REQUEST_UNIT_DOLLARS + read_units * READ_REQUEST_UNIT_DOLLARS


# Reads at internet scale (docs/benchmarks.md "Visitors: a CDN in front of reads"), us-east-1 public prices:
# aws.amazon.com/api-gateway/pricing/ (HTTP APIs, first 300 million requests a month, each up to 512 KB).
HTTP_API_REQUEST_DOLLARS = 1.00 / 1_000_000
# aws.amazon.com/lambda/pricing/ (x86): per request, and per GB-second of duration.
LAMBDA_REQUEST_DOLLARS = 0.20 / 1_000_000
LAMBDA_GB_SECOND_DOLLARS = 0.0000166667
# aws.amazon.com/cloudfront/pricing/ (United States, Mexico, Canada and Europe): HTTPS requests and data transfer out
# to the internet (first 10 TB a month); fetches from an AWS origin transfer nothing billable.
CLOUDFRONT_HTTPS_REQUEST_DOLLARS = 0.0100 / 10_000
CLOUDFRONT_TRANSFER_GB_DOLLARS = 0.085
# aws.amazon.com/ec2/pricing/on-demand/ (data transfer out to the internet, first 10 TB a month): what API Gateway's
# answers to browsers cost without a CDN.
API_TRANSFER_GB_DOLLARS = 0.09
