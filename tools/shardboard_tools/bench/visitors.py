"""``shardboard bench --scenario visitors``: what a site's visitors cost (docs/benchmarks.md "Visitors").

Two figures. **The crawler match**: the CPU time of judging one view's user agent against the kept crawler list
(domain/writing/visitors.py), over the list's own crawler examples and common browsers, once the automaton has met
them (a Lambda container judges the same few hundred user agents all day); the package's own ``is_crawler`` (Python's
``re``) beside it. **The CDN**: for a stated traffic (page loads per second, page loads per recorded view, the read
URLs pages ask for, the refresh interval that is the reads' max-age), origin requests per page load and the cost per
million page loads with and without CloudFront in front of the reads, at the public prices of
``shardboard_tools.bench.prices``. A model, stated in full, not a measurement of CloudFront.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import crawleruseragents

from shardboard.domain.writing.visitors import crawler_patterns, is_crawler
from shardboard_tools.bench import prices

# The budget the issue set for a view's crawler match.
MATCH_BUDGET_US = 20.0
# Browsers as sites see them most (desktop and phone Chrome, Safari, Firefox, Edge, Samsung Internet).
BROWSERS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 "
    "Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 "
    "Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 "
    "Edg/131.0.0.0",
    "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 "
    "Chrome/122.0.0.0 Mobile Safari/537.36",
)


@dataclass(frozen=True)
class Traffic:
    """The stated traffic of the CDN figures (every field is printed beside them)."""

    page_loads_per_second: float = 1_000.0  # 86.4 million page loads a day
    page_loads_per_view: float = 1.0  # each page load records one view (the element's record="ITEM")
    read_urls: int = 40  # distinct board/period/limit URLs pages ask for
    max_age_seconds: int = 60  # the reads' Cache-Control: one snapshot refresh (SnapshotSchedule)
    # CloudFront's regional edge caches (13): each may miss a URL once per max-age without Origin Shield.
    regional_caches: int = 13
    script_fetches_per_page_load: float = 0.1  # the browser's cache holds the script on 9 loads in 10
    read_kb: float = 3.0  # a leaderboard answer, gzipped
    script_kb: float = 10.0  # the element, gzipped (its budget)
    head_read_units: float = 5.5  # one GetItem of a head at N = 1,000 (eventually consistent)
    write_units_per_view: float = 2.4  # the benchmark's per-batch figure (docs/benchmarks.md)
    lambda_gb_seconds: float = 0.5 * 0.010  # 512 MB for 10 ms billed per API call


def crawler_match(rounds: int = 3) -> dict[str, Any]:
    """Microseconds per user agent judged: the crawler list's examples and the browsers, after one warm-up pass."""
    crawlers = [ua for entry in crawleruseragents.CRAWLER_USER_AGENTS_DATA for ua in entry.get("instances", [])]
    corpus = crawlers + list(BROWSERS) * max(1, len(crawlers) // len(BROWSERS))

    def per_call(judge: Any, agents: list[str]) -> float:
        for agent in agents:  # warm-up: the DFA's states, the regex caches
            judge(agent)
        best = []
        for _ in range(rounds):
            started = time.perf_counter()
            for agent in agents:
                judge(agent)
            best.append((time.perf_counter() - started) / len(agents) * 1e6)
        return min(best)

    agreed = sum(is_crawler(agent) == crawleruseragents.is_crawler(agent) for agent in corpus)
    ours = {
        "all": per_call(is_crawler, corpus),
        "browsers": per_call(is_crawler, list(BROWSERS) * 50),
        "crawlers": per_call(is_crawler, crawlers),
    }
    return {
        "patterns": crawler_patterns(),
        "package_version": _version("crawler-user-agents"),
        "user_agents": len(corpus),
        "us_per_view": ours,
        "package_is_crawler_us_per_view": per_call(crawleruseragents.is_crawler, corpus[:: max(1, len(corpus) // 500)]),
        "agrees_with_package": agreed == len(corpus),
        "within_budget": max(ours.values()) <= MATCH_BUDGET_US,
        "budget_us": MATCH_BUDGET_US,
    }


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def cdn_costs(traffic: Traffic) -> dict[str, Any]:
    """Origin requests per page load and dollars per million page loads, without and with the CDN."""
    t = traffic
    views = 1 / t.page_loads_per_view
    # Without a CDN every read and script fetch reaches API Gateway, Lambda and (reads) DynamoDB.
    reads_direct = 1.0
    script_direct = t.script_fetches_per_page_load
    # With it: a URL misses at most once per regional cache per max-age, never more often than it is asked for.
    read_misses_per_second = min(t.read_urls * t.regional_caches / t.max_age_seconds, t.page_loads_per_second)
    reads_cdn = read_misses_per_second / t.page_loads_per_second
    script_cdn = 0.0  # versioned and cached a year: its misses round to nothing
    origin = {"without": reads_direct + script_direct + views, "with": reads_cdn + script_cdn + views}

    def api_call(read_units: float) -> float:
        return (
            prices.HTTP_API_REQUEST_DOLLARS
            + prices.LAMBDA_REQUEST_DOLLARS
            + t.lambda_gb_seconds * prices.LAMBDA_GB_SECOND_DOLLARS
            + prices.on_demand_dollars(0, read_units)
        )

    view = api_call(0) + prices.on_demand_dollars(t.write_units_per_view, 0)
    gb = 1 / 1024 / 1024
    without = (
        reads_direct * (api_call(t.head_read_units) + t.read_kb * gb * prices.API_TRANSFER_GB_DOLLARS)
        + script_direct * (api_call(0) + t.script_kb * gb * prices.API_TRANSFER_GB_DOLLARS)
        + views * view
    )
    edge = prices.CLOUDFRONT_HTTPS_REQUEST_DOLLARS
    with_cdn = (
        reads_cdn * api_call(t.head_read_units)
        + (edge + t.read_kb * gb * prices.CLOUDFRONT_TRANSFER_GB_DOLLARS)
        + t.script_fetches_per_page_load * (edge + t.script_kb * gb * prices.CLOUDFRONT_TRANSFER_GB_DOLLARS)
        + views * (view + edge)
    )
    reads_only = {
        "without": reads_direct * (api_call(t.head_read_units) + t.read_kb * gb * prices.API_TRANSFER_GB_DOLLARS)
        + script_direct * (api_call(0) + t.script_kb * gb * prices.API_TRANSFER_GB_DOLLARS),
        "with": reads_cdn * api_call(t.head_read_units)
        + edge
        + t.read_kb * gb * prices.CLOUDFRONT_TRANSFER_GB_DOLLARS
        + t.script_fetches_per_page_load * (edge + t.script_kb * gb * prices.CLOUDFRONT_TRANSFER_GB_DOLLARS),
    }
    million = 1_000_000
    return {
        "traffic": asdict(t),
        "origin_requests_per_page_load": origin,
        "origin_read_requests_per_second": {"without": t.page_loads_per_second, "with": read_misses_per_second},
        "dollars_per_million_page_loads": {"without": without * million, "with": with_cdn * million},
        "read_dollars_per_million_page_loads": {k: v * million for k, v in reads_only.items()},
        "dynamodb_read_units_per_page_load": {
            "without": reads_direct * t.head_read_units,
            "with": reads_cdn * t.head_read_units,
        },
        "prices": {
            "http_api_per_million_requests": prices.HTTP_API_REQUEST_DOLLARS * million,
            "lambda_per_million_requests": prices.LAMBDA_REQUEST_DOLLARS * million,
            "lambda_per_gb_second": prices.LAMBDA_GB_SECOND_DOLLARS,
            "cloudfront_per_million_https_requests": prices.CLOUDFRONT_HTTPS_REQUEST_DOLLARS * million,
            "cloudfront_transfer_per_gb": prices.CLOUDFRONT_TRANSFER_GB_DOLLARS,
            "api_transfer_per_gb": prices.API_TRANSFER_GB_DOLLARS,
            "dynamodb_per_million_read_units": prices.READ_REQUEST_UNIT_DOLLARS * million,
            "dynamodb_per_million_write_units": prices.WRITE_REQUEST_UNIT_DOLLARS * million,
        },
    }


def run_visitors(traffic: Traffic | None = None, rounds: int = 3) -> dict[str, Any]:
    return {"crawler_match": crawler_match(rounds), "cdn": cdn_costs(traffic or Traffic())}


def summary(result: dict[str, Any]) -> list[str]:
    """The section's lines (docs/benchmarks.md)."""
    match, cdn = result["crawler_match"], result["cdn"]
    t, us = cdn["traffic"], match["us_per_view"]
    origin, dollars = cdn["origin_requests_per_page_load"], cdn["dollars_per_million_page_loads"]
    reads = cdn["read_dollars_per_million_page_loads"]
    p = cdn["prices"]
    return [
        "## Visitors: crawlers apart, a CDN in front of reads",
        "",
        f"**Crawler match** (crawler-user-agents {match['package_version']}, {match['patterns']:,} patterns, one RE2 "
        f"automaton): {us['all']:.1f} us per view over {match['user_agents']:,} user agents ({us['browsers']:.1f} us "
        f"for browsers, {us['crawlers']:.1f} us for the list's crawler examples); budget {match['budget_us']:g} us: "
        f"{'within' if match['within_budget'] else 'OVER'}. The package's own is_crawler (Python re): "
        f"{match['package_is_crawler_us_per_view']:.0f} us. Same verdict on every one: "
        f"{'yes' if match['agrees_with_package'] else 'NO'}.",
        "",
        f"**CDN** at {t['page_loads_per_second']:,.0f} page loads/s, {t['page_loads_per_view']:g} page load(s) per "
        f"recorded view, {t['read_urls']} read URLs, max-age {t['max_age_seconds']} s, {t['regional_caches']} "
        f"regional caches, the script fetched on {t['script_fetches_per_page_load']:.0%} of page loads:",
        "",
        "| | without CDN | with CDN |",
        "|---|---:|---:|",
        f"| origin requests per page load (reads + script + view) | {origin['without']:.3f} | {origin['with']:.3f} |",
        f"| origin reads per second | {cdn['origin_read_requests_per_second']['without']:,.0f} | "
        f"{cdn['origin_read_requests_per_second']['with']:,.1f} |",
        f"| DynamoDB read units per page load | {cdn['dynamodb_read_units_per_page_load']['without']:.3f} | "
        f"{cdn['dynamodb_read_units_per_page_load']['with']:.4f} |",
        f"| $ per million page loads, reads and script | {reads['without']:.2f} | {reads['with']:.2f} |",
        f"| $ per million page loads, with the view | {dollars['without']:.2f} | {dollars['with']:.2f} |",
        "",
        f"Prices (us-east-1, public): HTTP API ${p['http_api_per_million_requests']:g} per million requests; Lambda "
        f"${p['lambda_per_million_requests']:g} per million requests + ${p['lambda_per_gb_second']:g} per GB-s "
        f"({t['lambda_gb_seconds']:g} GB-s a call); CloudFront ${p['cloudfront_per_million_https_requests']:g} per "
        f"million HTTPS requests + ${p['cloudfront_transfer_per_gb']:g}/GB out; API transfer out "
        f"${p['api_transfer_per_gb']:g}/GB; DynamoDB ${p['dynamodb_per_million_read_units']:g} per million read units "
        f"and ${p['dynamodb_per_million_write_units']:g} per million write units ({t['head_read_units']:g} read "
        f"units a head read, {t['write_units_per_view']:g} write units a view). The view (POST /views) passes through "
        "either way. A model of the misses (each URL once per regional cache per max-age), not a CloudFront "
        "measurement: tools/shardboard_tools/bench/visitors.py.",
    ]
