"""`shardboard bench --scenario viral-ramp`: run the ramp, print the figures, write the JSON and the timeline chart."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.table import Table

from shardboard_tools.scenarios.viral_ramp import RampResult, RampSpec, Second, run_viral_ramp

# The bench's ramp: 100 -> 20,000 views/s in 120 s, 30 s at the peak, then 13 minutes back at 100 views/s so the
# shrink review (10 minutes of low traffic) halves the count once.
BENCH_SPEC = RampSpec(ramp_seconds=120.0, hold_seconds=30.0, calm_seconds=780.0)
# The growth comparison: the same ramp with additive growth (+1 shard per change). Run at 1/10 scale (same shard
# counts and timings): additive growth throttles for minutes and every throttled view is retried, so at full
# scale it would simulate tens of millions of requests.
ADDITIVE_SPEC = replace(RampSpec(ramp_seconds=120.0, hold_seconds=60.0, growth="add"), seed=7).scaled(10)
SCENARIOS = {"viral-ramp": BENCH_SPEC, "viral-ramp-additive": ADDITIVE_SPEC}
HEADLINE = (
    "peak_views_per_s",
    "max_shards",
    "seconds_to_stop_throttling",
    "throttled_after_ramp",
    "increments",
    "cooldown_violations",
    "exact",
)


def run_scenario(name: str, as_json: bool, out: Path, write_files: bool) -> dict[str, Any]:
    spec = SCENARIOS[name]
    screen = Console(stderr=True) if as_json else Console()
    with Progress(
        TextColumn(name), BarColumn(), TaskProgressColumn(), console=Console(stderr=True), transient=True
    ) as progress:
        task = progress.add_task(name, total=spec.duration)

        def advance(second: Second) -> None:
            progress.update(task, completed=second.t + 1)

        result = run_viral_ramp(spec, advance)
    screen.print(summary(name, result))
    document = result.as_json()
    if write_files:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        png = chart(result, out / f"{name}.png", spec)
        screen.print(f"wrote {out / f'{name}.json'} and {png}")
    if as_json:
        click.echo(json.dumps({key: document[key] for key in HEADLINE}))
    return document


def summary(name: str, result: RampResult) -> Table:
    details = result.details
    table = Table(title=f"{name} (virtual time, capacity emulator)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any]] = [
        *((key, getattr(result, key)) for key in HEADLINE),
        ("shard history (epoch:count)", " ".join(details["shard_history"])),
        ("first / last throttle (s)", f"{details['first_throttle_at']} / {details['last_throttle_at']}"),
        ("longest throttling episode (s)", details["longest_throttling_episode_s"]),
        ("viral throttled requests", details["viral_throttled_requests"]),
        ("long tail: max shards / throttled", f"{details['tail_max_shards']} / {details['tail_throttled_requests']}"),
        ("views offered", details["views_offered"]),
        ("metadata reads / cache hit ratio", f"{details['metadata_reads']} / {details['metadata_cache_hit_ratio']}"),
        ("busiest metadata key (read units/s)", details["metadata_peak_read_units_per_s"]),
        ("lost optimistic-lock races", details["lost_races"]),
        ("final shards (after the calm)", details["final_shards"]),
    ]
    for figure, value in rows:
        table.add_row(figure, f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value))
    return table


def chart(result: RampResult, path: Path, spec: RampSpec) -> Path:
    """Top: the ramp (offered, written, capacity of the current shards, throttles). Bottom: shards, whole run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timeline = result.timeline
    window = [s for s in timeline if s.t <= spec.ramp_seconds + min(spec.hold_seconds, 30) + 5]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7.5), height_ratios=(3, 2))
    t = [s.t for s in window]
    top.plot(t, [s.offered for s in window], label="offered views/s", color="tab:gray", linestyle="--")
    top.plot(t, [s.written for s in window], label="written views/s", color="tab:blue")
    top.step(
        t,
        [s.shards * spec.partition_write_units for s in window],
        where="post",
        label="shards x partition limit",
        color="tab:green",
    )
    top.set_yscale("log")
    top.set_ylabel("views/s (log)")
    throttles = top.twinx()
    throttles.bar(t, [s.throttled for s in window], color="tab:red", alpha=0.4, width=1.0, label="throttled/s")
    throttles.set_ylabel("throttled requests/s")
    lines, labels = top.get_legend_handles_labels()
    more, more_labels = throttles.get_legend_handles_labels()
    top.legend(lines + more, labels + more_labels, loc="upper left", fontsize=8)
    top.set_title(
        f"viral item {spec.start_views_per_s:g} -> {spec.peak_views_per_s:,.0f} views/s, {spec.writers} writers, "
        f"{spec.growth} growth, cooldown {spec.cooldown_seconds:g}s"
    )
    bottom.step([s.t for s in timeline], [s.shards for s in timeline], where="post", color="tab:green")
    bottom.axvspan(0, spec.ramp_seconds, color="tab:orange", alpha=0.1, label="ramp")
    bottom.axvspan(spec.ramp_seconds, spec.ramp_seconds + spec.hold_seconds, color="tab:red", alpha=0.1, label="peak")
    bottom.set_yscale("log", base=2)
    bottom.set_xlabel("virtual seconds")
    bottom.set_ylabel("write shards (log2)")
    bottom.legend(loc="upper right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
