"""The visitors scenario's CDN model and crawler-match report (no timing is asserted: the figures are printed)."""

from __future__ import annotations

import dataclasses

import pytest

from shardboard_tools.bench import prices
from shardboard_tools.bench.visitors import Traffic, cdn_costs, crawler_match, summary


def test_the_cdn_takes_the_reads_off_the_origin_and_leaves_the_views():
    result = cdn_costs(Traffic())
    origin = result["origin_requests_per_page_load"]
    # Every page load's view passes through either way; reads reach the origin once per URL, cache and max-age
    assert origin["with"] >= 1.0 and origin["without"] == pytest.approx(1.0 + 1.0 + 0.1)
    assert result["origin_read_requests_per_second"]["with"] == pytest.approx(40 * 13 / 60)
    assert result["dynamodb_read_units_per_page_load"]["with"] < result["dynamodb_read_units_per_page_load"]["without"]
    assert (
        result["read_dollars_per_million_page_loads"]["with"] < result["read_dollars_per_million_page_loads"]["without"]
    )


def test_a_quiet_site_gains_nothing_on_origin_requests():
    # Given fewer page loads than a cache could absorb: every read is a miss
    quiet = cdn_costs(dataclasses.replace(Traffic(), page_loads_per_second=0.1))
    assert quiet["origin_read_requests_per_second"]["with"] == pytest.approx(0.1)


def test_a_million_page_loads_without_cdn_is_the_sum_of_its_parts():
    t = Traffic(script_fetches_per_page_load=0.0, page_loads_per_view=1e12, read_kb=0.0)
    expected = (
        prices.HTTP_API_REQUEST_DOLLARS
        + prices.LAMBDA_REQUEST_DOLLARS
        + t.lambda_gb_seconds * prices.LAMBDA_GB_SECOND_DOLLARS
        + t.head_read_units * prices.READ_REQUEST_UNIT_DOLLARS
    ) * 1_000_000
    assert cdn_costs(t)["dollars_per_million_page_loads"]["without"] == pytest.approx(expected, rel=1e-6)


def test_the_report_names_the_prices_and_the_match_budget():
    result = {"crawler_match": crawler_match(rounds=1), "cdn": cdn_costs(Traffic())}
    assert result["crawler_match"]["agrees_with_package"] is True
    text = "\n".join(summary(result))
    assert "CloudFront" in text and "HTTP API" in text and "DynamoDB" in text and "budget 20 us" in text
