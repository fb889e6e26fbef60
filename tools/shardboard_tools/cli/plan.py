"""``shardboard plan``: write shards, GSI shards and the computed overload risk for a traffic estimate."""

from __future__ import annotations

import json

import click
from rich.table import Table

from shardboard_tools.cli.common import console, fail
from shardboard_tools.planning import plan as make_plan


@click.command()
@click.option(
    "--views-per-sec", type=click.FloatRange(min=0), default=10_000, show_default=True, help="Site-wide views/s."
)
@click.option(
    "--hot-item-share",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Share of all views that go to the single hottest item.",
)
@click.option(
    "--item-kb", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True, help="Base item size."
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Partitions the GSI keys spread over.",
)
@click.option("--top", "top_n", type=click.IntRange(min=1), default=1000, show_default=True, help="Leaderboard size N.")
@click.option(
    "--max-overload-probability",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Accepted chance that some partition holds more than 1.5x its fair share of GSI keys.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(
    *,
    views_per_sec: float,
    hot_item_share: float,
    item_kb: float,
    partitions: int,
    top_n: int,
    max_overload_probability: float,
    as_json: bool,
) -> None:
    """Plan shard counts: write shards per hot item, GSI shards S, overload probability, refresh cost."""
    try:
        result = make_plan(
            views_per_sec=views_per_sec,
            hot_item_share=hot_item_share,
            item_kb=item_kb,
            partitions=partitions,
            top_n=top_n,
            max_overload_probability=max_overload_probability,
        )
    except ValueError as error:
        fail(str(error), 2)
    if as_json:
        click.echo(json.dumps(result.as_json(), indent=2))
        return
    table = Table(title=f"plan: {views_per_sec:,.0f} views/s, hot item {hot_item_share:.0%}, top {top_n:,}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("why", overflow="fold")
    table.add_row(
        "write shards per hot item",
        str(result.write_shards),
        f"seed 001: {views_per_sec * hot_item_share:,.0f} writes/s x ceil({item_kb:g} KB) / 1000 x 2 headroom",
    )
    table.add_row(
        "GSI shards S",
        str(result.gsi_shards),
        f"writes need {result.gsi_shards_for_writes}; placement on {partitions} partitions",
    )
    table.add_row(
        "overload probability",
        f"{result.overload_probability:.2%}",
        f"exact, some partition > 1.5x its fair share (limit {max_overload_probability:.0%})",
    )
    table.add_row(
        "seed 003's rule (S = 10 x partitions)",
        f"{result.seed_rule_overload_probability:.2%}",
        f"S = {result.seed_rule_gsi_shards}: the rule of thumb promises < 5%",
    )
    table.add_row(
        "items read per refresh", f"{result.refresh_items_read:,.0f}", f"N + S = {top_n + result.gsi_shards:,}"
    )
    table.add_row("read units per refresh", f"{result.refresh_read_units:,.1f}", "eventually consistent GSI queries")
    console.print(table)
