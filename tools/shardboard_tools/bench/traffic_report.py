"""The traffic scenario's table, chart and page (docs/benchmarks-traffic.md, docs/benchmarks-traffic.png)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.table import Table

from shardboard_tools.bench.traffic import COMPONENTS, DESIGNS, REDIS

NAMES = (*DESIGNS, REDIS)
LABELS = {
    "dynamodb_writes": "DynamoDB writes",
    "dynamodb_reads": "DynamoDB reads (aggregator)",
    "refresh_reads": "refresh reads",
    "frontend_reads": "frontend reads",
    "lambda": "Lambda",
    "api_gateway": "API Gateway",
    "eventbridge": "EventBridge",
    "cloudwatch": "CloudWatch",
    "xray": "X-Ray",
    "elasticache": "ElastiCache",
}


def dollars(value: float) -> str:
    return f"${value:,.0f}" if value >= 100 else f"${value:,.2f}"


def rounded(value: float) -> str:
    """Two significant figures, written out: 2,300; 0.12."""
    if value < 10:
        return f"{value:.2g}"
    digits = 10 ** (math.floor(math.log10(value)) - 1)
    return f"{round(value / digits) * digits:,.0f}"


def per_day(views: float) -> str:
    """10^k for a power of ten, else the number."""
    power = round(math.log10(views))
    return f"10^{power}" if views == 10**power else f"{views:,.0f}"


def table(result: dict[str, Any]) -> Table:
    """One row per level and design: the month's bill, its largest components, the measured ratios."""
    shown = Table(title="traffic: a month's bill per level (us-east-1 list prices)")
    for column in ("views/day", "design", "bill/month", "per 1M views", "where it goes", "refresh ratio", "page RU"):
        shown.add_column(column, justify="left" if column in ("design", "where it goes") else "right")
    shown.add_column("exact")
    for level in result["levels"]:
        for name in NAMES:
            if name not in level["designs"]:
                continue
            design = level["designs"][name]
            shown.add_row(
                per_day(level["views_per_day"]),
                name,
                dollars(design["bill"]),
                dollars(design["per_million_views"]),
                top_components(design, 3),
                f"{design['refresh_read_ratio']:.2f}" if "refresh_read_ratio" in design else "",
                f"{design['first_page_read_units']:g}" if "first_page_read_units" in design else "",
                {True: "yes", False: "NO", None: "n/a"}[design["exact"]],
            )
    return shown


def top_components(design: dict[str, Any], count: int) -> str:
    parts = sorted(design["components"].items(), key=lambda pair: -pair[1])[:count]
    total = design["bill"] or 1.0
    return ", ".join(f"{LABELS[name]} {value / total:.0%}" for name, value in parts if value)


def chart(result: dict[str, Any], path: Path) -> Path:
    """The month's bill against views a day, log-log, one line per design."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = [level["views_per_day"] for level in result["levels"]]
    figure, axes = plt.subplots(figsize=(8, 5.5))
    styles = {
        DESIGNS[0]: ("#4f81bd", "o-"),
        DESIGNS[1]: ("#9bbb59", "s-"),
        DESIGNS[2]: ("#c0504d", "^--"),
        REDIS: ("#7f7f7f", "D:"),
    }
    for name in NAMES:
        if all(name in level["designs"] for level in result["levels"]):
            colour, style = styles[name]
            bills = [level["designs"][name]["bill"] for level in result["levels"]]
            axes.plot(levels, bills, style, color=colour, label=name)
    for crossings in result["crossover_with_redis"].values():
        for crossing in crossings:
            axes.plot([crossing["views_per_day"]], [crossing["bill"]], "x", color="black", markersize=9)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("views per day")
    axes.set_ylabel("bill per month (US dollars)")
    axes.set_title("One site, 21 boards, 5 periods: a month's bill (x: crossing with Redis)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def crossover_sentence(result: dict[str, Any]) -> list[str]:
    """The crossings with Redis, plainly."""
    lines = []
    levels = [level["views_per_day"] for level in result["levels"]]
    for name, crossings in result["crossover_with_redis"].items():
        if not crossings:
            bills = [level["designs"][name]["bill"] for level in result["levels"]]
            redis = [level["designs"][REDIS]["bill"] for level in result["levels"]]
            side = "cheaper" if all(b < r for b, r in zip(bills, redis, strict=True)) else "dearer"
            lines.append(
                f"- **{name}** does not cross the managed Redis between {per_day(levels[0])} and "
                f"{per_day(levels[-1])} views a day: it is {side} at every level measured."
            )
        for crossing in crossings:
            low, high = crossing["between"]
            cheaper = name if crossing["cheaper_below"] == "ours" else "the managed Redis"
            lines.append(
                f"- **{name}** crosses the managed Redis at about **{rounded(crossing['views_per_day'])} views a day** "
                f"(between {per_day(low)} and {per_day(high)}, interpolated in log-log space; "
                f"{dollars(crossing['bill'])} a month there): below it {cheaper} is cheaper."
            )
    return lines


def markdown(result: dict[str, Any], command: str, png: str) -> str:
    """docs/benchmarks-traffic.md."""
    workload, assumptions, price = result["workload"], result["workload"]["assumptions"], result["prices"]
    levels = result["levels"]
    lines = [
        "# A month's bill at every traffic level",
        "",
        *wrap(
            f"Generated by `{command}` (the traffic scenario: tools/shardboard_tools/bench/traffic.py); "
            f"{result['seconds']:.0f} s on the machine that made it. Every figure below is a measurement on a slice "
            "of virtual time scaled to a month, as the method section says. Do not edit by hand."
        ),
        "",
        f"![bill per month against views per day]({png})",
        "",
        "## The curve",
        "",
        "| views/day | " + " | ".join(NAMES) + " |",
        "|---:|" + "---:|" * len(NAMES),
    ]
    for level in levels:
        cells = [dollars(level["designs"][name]["bill"]) if name in level["designs"] else "" for name in NAMES]
        lines.append(f"| {per_day(level['views_per_day'])} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Per million views:",
        "",
        "| views/day | " + " | ".join(NAMES) + " |",
        "|---:|" + "---:|" * len(NAMES),
    ]
    for level in levels:
        cells = [
            dollars(level["designs"][name]["per_million_views"]) if name in level["designs"] else "" for name in NAMES
        ]
        lines.append(f"| {per_day(level['views_per_day'])} | " + " | ".join(cells) + " |")
    lines += ["", "## The crossover with Redis", "", *crossover_sentence(result), ""]
    lines += ["## Where the money goes", ""]
    for level in levels:
        lines += [f"### {per_day(level['views_per_day'])} views a day", ""]
        names = [name for name in NAMES if name in level["designs"]]
        lines += ["| component | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for component in COMPONENTS:
            values = [level["designs"][name]["components"][component] for name in names]
            if any(values):
                lines.append(f"| {LABELS[component]} | " + " | ".join(dollars(v) for v in values) + " |")
        lines.append("| **total** | " + " | ".join(f"**{dollars(level['designs'][n]['bill'])}**" for n in names) + " |")
        lines += ["", *measured_rows(level), ""]
    lines += method(result, workload, assumptions, price)
    return "\n".join(lines) + "\n"


def measured_rows(level: dict[str, Any]) -> list[str]:
    """The slice's own figures per DynamoDB design, and Redis's sizing."""
    rows = [
        "| measured on the slice | " + " | ".join(DESIGNS) + " |",
        "|---|" + "---:|" * len(DESIGNS),
    ]
    designs = [level["designs"][name] for name in DESIGNS if name in level["designs"]]
    figures: tuple[tuple[str, Callable[[dict[str, Any]], str]], ...] = (
        (
            "views in the slice (virtual seconds)",
            lambda d: f"{d['measured']['slice_views']:,} ({d['measured']['slice_seconds']:g} s)",
        ),
        (
            "write units per view (views' own: base, aggregates, index)",
            lambda d: f"{d['measured']['view_write_units_per_view']:.3f}",
        ),
        ("refresh runs in the slice", lambda d: f"{d['measured']['refresh_runs']}"),
        ("period refreshes per run", lambda d: f"{d['measured']['period_refreshes_per_run']:.1f}"),
        ("refresh write units per run", lambda d: f"{d['measured']['refresh_write_units_per_run']:,.0f}"),
        ("refresh read units per run", lambda d: f"{d['measured']['refresh_read_units_per_run']:,.0f}"),
        ("refresh_read_ratio (items read per period refresh / minimum)", lambda d: f"{d['refresh_read_ratio']:.2f}"),
        ("first_page_read_units", lambda d: f"{d['first_page_read_units']:g}"),
        (
            "tables provisioned",
            lambda d: ", ".join(t for t, v in d["tables"].items() if v["mode"] == "provisioned") or "none",
        ),
        ("exact", lambda d: "yes" if d["exact"] else "NO"),
    )
    for label, show in figures:
        rows.append(f"| {label} | " + " | ".join(show(d) for d in designs) + " |")
    redis = level["designs"][REDIS]
    rows += [
        "",
        f"Redis: {rounded(redis['ops_per_s_mean'])} operations/s on average, sized for "
        f"{rounded(redis['ops_per_s_peak'])}: "
        f"{redis['shards']} shard(s) of {redis['node_type']}, primary + replica ({redis['nodes']} nodes).",
    ]
    return rows


def method(result: dict[str, Any], workload: dict[str, Any], a: dict[str, Any], price: dict[str, Any]) -> list[str]:
    slices = ", ".join(
        f"{per_day(level['views_per_day'])}: {level['slice_seconds']:g} s ({level['slice_views']:,} views, "
        f"after {level['warmup_views']:,} warm-up views)"
        for level in workload["levels"]
    )
    nodes = ", ".join(f"{node} {ops:,.0f}/s" for node, ops in a["redis_nodes"])
    hourly = ", ".join(f"{node} ${p}/h" for node, p in price["elasticache_node_hour"].items())
    return [
        "## Method: what is measured and what is scaled",
        "",
        *wrap(
            f"**The site.** {workload['categories'] + 1} boards (global + {workload['categories']} categories, one of "
            f"them drawing 35 % of the views), day, week, month and all time plus trending, N = {workload['top_n']} "
            f"on every board, {workload['distribution']}, each item with a {workload['document_bytes']:,}-byte "
            "document that the heads inline for their first page. Everything else is the template's default: "
            "R = 32 spares, S = 10 index shards, ranked versions at D = 10,000 (global) and 1,000 (categories) at "
            f"most every minute, one refresh a minute ({workload['refresh_seconds']} s), 1,000-record stream batches "
            f"with a 1 s batching window and no tumbling window, {result['memory_mb']} MB functions."
        ),
        "",
        *wrap(
            "**The slice.** Each level runs in virtual time on the capacity emulator through the real code (the "
            "boards scenario's shardboard design, the library scenario's Recorders, the boards scenario's "
            "straightforward design): a warm-up of the site's earlier traffic, compressed (not measured), then a "
            f"slice at the level's own rate ({slices}). The slice ends on a scheduled refresh; every figure is the "
            "emulator's usage after the slice minus before it, and `exact` compares every board and period with a "
            "brute-force count of all the views offered."
        ),
        "",
        *wrap(
            "**Scaled to a month (730 hours).** What the views cause (base writes, aggregates, index entries, the "
            "aggregator's reads and invocations) is measured per view and multiplied by the month's views. What the "
            "snapshot job causes (its reads, its head and ranked-version writes, its events) is measured per refresh "
            "run and multiplied by the month's runs (one a minute, 43,800: they do not scale with views; what each "
            "finds changed does, and that is what the slice measures). Frontend reads are "
            f"{a['page_loads_per_view']} page loads per view x `first_page_read_units` (one eventually consistent "
            "GetItem of the global board's all-time head as the slice leaves it; the straightforward design's head "
            "holds no documents, so its page also reads the page's documents). No CDN is assumed in front."
        ),
        "",
        *wrap(
            "**Provisioned or on demand.** Each table is priced both ways and billed the cheaper: provisioned capacity "
            f"with auto scaling keeping {a['target_utilisation']:.0%} utilisation of the month's mean rate, each "
            f"index its own capacity, never below {a['min_capacity_units']:g} unit (bursts within a minute are "
            "left to DynamoDB's burst capacity). The per-level tables above name the tables provisioned."
        ),
        "",
        *wrap(
            "**Derived, with stated assumptions.** Lambda: every POST /views and every page load is one invocation "
            f"({a['record_ms']:g} ms and {a['read_ms']:g} ms billed), the aggregator's invocations as measured "
            f"({a['aggregator_ms_per_invocation']:g} ms each + {a['aggregator_ms_per_record']:g} ms per record), the "
            f"snapshot job ({a['snapshot_ms_per_run']:g} ms) and the shard review ({a['shard_review_ms_per_run']:g} "
            "ms) once a minute; through the library no request reaches API Gateway or Lambda (the site's own "
            "processes record and read). API Gateway: one HTTP API request per POST /views and per page load. "
            "EventBridge: the events the snapshot job published in the slice (64 KB chunks). CloudWatch: "
            f"{a['custom_metrics']} custom metrics, {a['request_log_bytes']} bytes of logs per request invocation "
            f"and {a['background_log_bytes']:,} per background invocation. X-Ray (the template traces every "
            f"function): the default rule's {a['xray_reservoir_per_s']:g} trace a second + "
            f"{a['xray_rate']:.0%} of the rest. Not counted: storage, data transfer, the site's own servers."
        ),
        "",
        *wrap(
            "**The managed Redis.** ElastiCache (Redis OSS), each shard a primary and a replica, the nodes sized "
            f"for {a['redis_peak_to_mean']:g} x the mean operations per second: {a['redis_ops_per_view']} ZINCRBY per "
            "view (2 boards x 5 periods) + one ZREVRANGE per page load, a node counted on for "
            f"{nodes}; the smallest type that carries the peak on one shard, else shards of the largest. "
            "It is the store alone (the site's servers call it directly, as the library does): no front door, no "
            "durability of a view beyond the replica's lag."
        ),
        "",
        *wrap(
            f"**Prices** ({price['region']}, list prices read {price['read']}; "
            "tools/shardboard_tools/bench/prices.py): "
            f"DynamoDB ${price['write_request_unit'] * 1e6:g} per million write request units, "
            f"${price['read_request_unit'] * 1e6:g} per million read request units, ${price['wcu_hour']} per "
            f"WCU-hour, ${price['rcu_hour']} per RCU-hour; Lambda ${price['lambda_gb_second']} per GB-s and "
            f"${price['lambda_request'] * 1e6:g} per million requests; HTTP API ${price['http_api_request'] * 1e6:g} "
            f"per million requests (first 300 million); EventBridge ${price['eventbridge_event'] * 1e6:g} per "
            f"million events; CloudWatch ${price['cloudwatch_metric_month']} per metric-month, "
            f"${price['cloudwatch_log_gb']} per GB of logs; X-Ray ${price['xray_trace'] * 1e6:g} per million traces; "
            f"ElastiCache {hourly}. Sources: " + ", ".join(price["sources"]) + "."
        ),
    ]


def wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=120, break_long_words=False, break_on_hyphens=False)
