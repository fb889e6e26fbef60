"""The ``shardboard`` command: run the pipeline against any DynamoDB endpoint.

Point it at DynamoDB Local, moto or AWS with the standard ``AWS_ENDPOINT_URL_DYNAMODB`` and
``AWS_ENDPOINT_URL_DYNAMODB_STREAMS`` variables; tables and settings come from template.yaml.
Each module of this package holds a group of commands. This one lists them without importing them: a command's
module, and what it needs (boto3, the handlers, the benchmark), loads only when that command runs, so
``--version`` and ``--help`` start at once. The runtime is built by the first command that asks for one.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from shardboard.services.clock import system_clock
from shardboard.settings import DEFAULT_STACK
from shardboard_tools.cli.common import RuntimeSource, use_local_credentials_if_needed

# Every command: where it is defined ("module:attribute" in this package) and the summary `shardboard --help` lists,
# the first sentence of its docstring (tests/unit/test_cli_startup.py checks that they agree).
COMMANDS: dict[str, tuple[str, str]] = {
    "around": (
        "pipeline:around_command",
        "ITEM's neighbours in a period, as GET /around answers: the k entries above and below it, 2k + 1 in all, "
        "shifted at the top and bottom, with exact ranks.",
    ),
    "bench": (
        "bench:bench",
        "Same workload, same emulator: seed-unsharded, seed-sharded and shardboard; table, JSON, chart, markdown.",
    ),
    "boards": (
        "pipeline:boards",
        "List the boards (a board exists once a view names it) with their GSI shards, N and last refresh, crawlers'"
        " views per period (counted apart, on the reserved boards), and how many category boards the registry holds"
        " under the Boards policy's maximum.",
    ),
    "chaos": (
        "chaos:chaos",
        "Run a workload under a random schedule of every fault, then prove the counts exact (exit 1 if not).",
    ),
    "demo": (
        "demo:demo",
        "Run everything locally: DynamoDB Local, load, stream runner, snapshots, live view; then report and verify.",
    ),
    "import": (
        "importing:import_views",
        'Backfill views from FILE (JSON Lines; - reads stdin), one object a line: {"id": "images/1.jpg", '
        '"time": "2026-11-23T14:05:00Z", "count": 1, "boards": ["cats"]}.',
    ),
    "init": (
        "pipeline:init",
        "Create the tables of template.yaml and publish the stack's settings, as a deploy does (idempotent: a re-run "
        "keeps the published settings a -p does not change).",
    ),
    "item": ("items:item", "Create, replace and read items (their metadata and views)."),
    "items": (
        "items:items",
        "The items created in [--since, --until), newest first, exact across the by-created shards.",
    ),
    "local": (
        "demo:local_command",
        "Run the DynamoDB Local that `make dynamodb-local` installed until Ctrl-C; print the variables to export.",
    ),
    "migrate": (
        "recovery:migrate",
        "Convert the tables an earlier release wrote to this release's shape, once after `sam deploy` of it.",
    ),
    "plan": (
        "plan:plan",
        "Plan shard counts: write shards per hot item, GSI shards S, overload probability, refresh cost.",
    ),
    "process": (
        "pipeline:process",
        "Deliver the base table's stream to the aggregator, as the Lambda event source mapping does.",
    ),
    "rank": (
        "pipeline:rank",
        "Rank and percentile of each ITEM (at most 100) in a period, as GET /rank answers: exact within the ranked "
        "version's depth D, approximate past it.",
    ),
    "rebuild": (
        "recovery:rebuild",
        "Recompute every aggregate, past entry and index membership, on every board and period, from the base table.",
    ),
    "record": (
        "pipeline:record",
        "Record COUNT views of each ITEM: one write per ITEM (ADD views COUNT, and each board's counter) on a random "
        "write shard, in today's anchor bucket.",
    ),
    "redrive": (
        "recovery:redrive",
        "Repair exactly the items of the batches the failure destination received (safe to run twice).",
    ),
    "refill": (
        "recovery:refill",
        "Give the sparse index back the items that more takedowns than spares left out (UnprovenSnapshotsAlarm).",
    ),
    "reshard": (
        "reshard:reshard",
        "Move one board's GSIs (every period's) from its S board shards to S2; snapshots stay exact during the move.",
    ),
    "serve": (
        "serve:serve",
        "Serve every route template.yaml deploys on 127.0.0.1 through the real handlers, until Ctrl-C.",
    ),
    "shards": (
        "reshard:shards",
        "Items whose write shards grew past the default (the shard metadata table: docs/dynamic-sharding.md).",
    ),
    "snapshot": ("pipeline:snapshot", "Refresh the snapshot item now (what the scheduled function does)."),
    "top": (
        "pipeline:top",
        "Show a board's leaderboard for a period from its snapshot item (one GetItem), as GET /leaderboard does; "
        "with --offset or --cursor, a page of its ranked version (the cursor to go on is printed).",
    ),
    "verify": (
        "pipeline:verify_command",
        "Compare every count with its base counters and every head with its exact top N; exit 1 on any difference.",
    ),
}


class LazyGroup(click.Group):
    """A group that imports a command's module when the command is resolved (click's "Lazily Loading Subcommands").

    Its own ``--help`` lists the summaries given with the commands instead of loading every module to ask them.
    """

    def __init__(self, *args: Any, lazy_commands: Mapping[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy_commands:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = self.lazy_commands[cmd_name][0].partition(":")
        command = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module}:{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = [(name, self._listed(ctx, name).get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _listed(self, ctx: click.Context, name: str) -> click.Command:
        """The command as the listing shows it: a stand-in holding its summary when it is lazy."""
        if name in self.lazy_commands:
            return click.Command(name, help=self.lazy_commands[name][1])
        command = super().get_command(ctx, name)
        assert command is not None
        return command


def _parameters(values: tuple[str, ...]) -> dict[str, str]:
    parameters = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint="--parameter")
        parameters[name] = setting
    return parameters


@click.group(cls=LazyGroup, lazy_commands=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--template",
    "template_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="template.yaml to take tables and parameters from.",
)
@click.option("--stack", default=DEFAULT_STACK, show_default=True, help="Stack name used in table names.")
@click.option(
    "-p",
    "--parameter",
    "parameters",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a template parameter (e.g. -p TopN=10). Repeatable.",
)
@click.option("-v", "--verbose", is_flag=True, help="Show the functions' structured logs and EMF metrics.")
@click.version_option(package_name="shardboard", prog_name="shardboard", message="%(prog)s %(version)s")
@click.pass_context
def main(
    ctx: click.Context, template_path: Path | None, stack: str, parameters: tuple[str, ...], verbose: bool
) -> None:
    """Exact top-N leaderboards on DynamoDB: write-sharded views, exactly-once aggregation, one-item reads."""
    if not verbose:  # the in-process functions log JSON for CloudWatch; a terminal wants the summary lines
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        # The functions' Logger exists already when the command's module imported a handler (the bench imports
        # the aggregator): give it the level now.
        observability = sys.modules.get("shardboard.handlers.observability")
        if observability is not None:
            observability.logger.setLevel(os.environ["POWERTOOLS_LOG_LEVEL"])
    use_local_credentials_if_needed()
    overrides = _parameters(parameters)
    ctx.meta["parameters"] = overrides  # commands that build their own stack (chaos) take the overrides too
    # A program that embeds the command (a test) may hand it a clock as click's context object: its one "now".
    clock = ctx.obj if callable(ctx.obj) else system_clock
    ctx.obj = RuntimeSource(template_path, overrides, stack, clock)
