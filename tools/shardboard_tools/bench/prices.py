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

# -- The month's bill (``shardboard bench --scenario traffic``): us-east-1 public list prices, as read 2026-11 from the
# page named above each group. A month is AWS's billing month of 730 hours.
MONTH_HOURS = 730

# aws.amazon.com/dynamodb/pricing/provisioned/ (Standard table class): per capacity unit per hour.
WCU_HOUR_DOLLARS = 0.00065
RCU_HOUR_DOLLARS = 0.00013

# aws.amazon.com/api-gateway/pricing/ (HTTP APIs): past the first 300 million requests a month, the next tier.
HTTP_API_TIER_REQUESTS = 300_000_000
HTTP_API_REQUEST_DOLLARS_OVER_TIER = 0.90 / 1_000_000

# aws.amazon.com/eventbridge/pricing/: custom events published to a bus (each 64 KB of an entry is one event).
EVENTBRIDGE_EVENT_DOLLARS = 1.00 / 1_000_000

# aws.amazon.com/cloudwatch/pricing/: a custom metric per month (first 10,000), logs ingested (Standard class).
CLOUDWATCH_METRIC_MONTH_DOLLARS = 0.30
CLOUDWATCH_LOG_GB_DOLLARS = 0.50

# aws.amazon.com/xray/pricing/: traces recorded (the template sets Tracing: Active).
XRAY_TRACE_DOLLARS = 5.00 / 1_000_000

# aws.amazon.com/elasticache/pricing/ (on-demand nodes, Redis OSS engine): node type -> dollars per node-hour.
ELASTICACHE_NODE_HOUR_DOLLARS = {
    "cache.t4g.small": 0.032,
    "cache.m7g.large": 0.158,
}

# The pages the prices above were read from, and when (the traffic report prints them).
PRICE_SOURCES = (
    "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    "https://aws.amazon.com/dynamodb/pricing/provisioned/",
    "https://aws.amazon.com/lambda/pricing/",
    "https://aws.amazon.com/api-gateway/pricing/",
    "https://aws.amazon.com/eventbridge/pricing/",
    "https://aws.amazon.com/cloudwatch/pricing/",
    "https://aws.amazon.com/xray/pricing/",
    "https://aws.amazon.com/elasticache/pricing/",
)
PRICES_READ = "2026-11"
PRICE_REGION = "us-east-1"


def http_api_dollars(requests: float) -> float:
    """A month's HTTP API requests at the tiered price."""
    first = min(requests, HTTP_API_TIER_REQUESTS)
    return first * HTTP_API_REQUEST_DOLLARS + (requests - first) * HTTP_API_REQUEST_DOLLARS_OVER_TIER


def provisioned_dollars(units_per_s: float, unit_hour_dollars: float, target: float, minimum: float) -> float:
    """A month of provisioned capacity (WCUs or RCUs at ``unit_hour_dollars``) that auto scaling keeps at ``target``
    utilisation of the mean rate ``units_per_s``, never below ``minimum`` units (auto scaling's floor)."""
    return MONTH_HOURS * max(minimum, units_per_s / target) * unit_hour_dollars
