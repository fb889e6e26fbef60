"""The many-boards scenario's table: one run of the snapshot job over every changed period, and its time."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def table(result: dict[str, Any]) -> Table:
    """The figures a reader needs to judge "1,000 active boards within one schedule interval"."""
    latency, parallelism = result["latency_ms"], result["parallelism"]
    shown = Table(title=f"many-boards: {result['boards']:,} boards, one snapshot run ({result['schedule']})")
    shown.add_column("figure")
    shown.add_column("value", justify="right")
    rows = [
        ("periods refreshed (snapshots written)", f"{result['periods_refreshed']:,} ({result['snapshots_written']:,})"),
        ("failures / throttled requests", f"{result['failures']} / {result['throttled_requests']}"),
        ("DynamoDB calls", f"{result['calls_total']:,}"),
        *((f"  {name}", f"{count:,}") for name, count in result["calls"].items()),
        ("calls per period", f"{result['calls_per_period']:.2f}"),
        ("round trips per period (a gather round is one)", f"{result['round_trips_per_period']:.2f}"),
        ("read units (write units)", f"{result['read_units']:,.0f} ({result['write_units']:,.0f})"),
        (f"modelled run at {latency:g} ms, {parallelism} in flight", f"{result['modelled_seconds']:.1f} s"),
        ("headroom: interval / modelled run", f"{result['headroom']:.1f}x"),
        ("  if every call were its own round trip", f"{result['modelled_seconds_serial']:.1f} s"),
        (
            "CPU on the in-memory stores (per period)",
            f"{result['cpu_seconds']:.1f} s ({result['cpu_ms_per_period']:.2f} ms)",
        ),
        ("  that CPU on the 512 MB function's share", f"{result['lambda_cpu_seconds']:.1f} s"),
    ]
    check = result.get("latency_check")
    if check:
        rows.append((f"wall clock with {latency:g} ms slept per call", f"{check['wall_seconds']:.1f} s"))
    for label, value in rows:
        shown.add_row(label, value)
    return shown


def scaling(result: dict[str, Any]) -> Table:
    """The model at several latencies: run time is round trips x latency / parallelism."""
    shown = Table(title=f"modelled run time vs the {result['schedule_interval_seconds']} s interval")
    for column in ("latency", "run", "headroom", "every call a round trip", "headroom"):
        shown.add_column(column, justify="right")
    for row in result["model"]:
        shown.add_row(
            f"{row['latency_ms']:g} ms",
            f"{row['modelled_seconds']:.1f} s",
            f"{row['headroom']:.1f}x",
            f"{row['modelled_seconds_serial']:.1f} s",
            f"{row['headroom_serial']:.1f}x",
        )
    return shown
