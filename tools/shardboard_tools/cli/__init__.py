"""The ``shardboard`` command: run the pipeline against any DynamoDB endpoint.

Point it at DynamoDB Local, moto or AWS with the standard ``AWS_ENDPOINT_URL_DYNAMODB`` and
``AWS_ENDPOINT_URL_DYNAMODB_STREAMS`` variables; tables and settings come from template.yaml.
Each module of this package holds a group of commands; this one builds the runtime and registers them.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from shardboard.settings import DEFAULT_STACK
from shardboard_tools.cli import bench, demo, importing, items, pipeline, plan, recovery, reshard, serve
from shardboard_tools.cli.common import one_line_errors
from shardboard_tools.local.runtime import Runtime, use_local_credentials_if_needed


def _parameters(values: tuple[str, ...]) -> dict[str, str]:
    parameters = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint="--parameter")
        parameters[name] = setting
    return parameters


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
        # The functions' Logger may already exist (the bench imports the aggregator): give it the level now.
        from shardboard.handlers.observability import logger

        logger.setLevel(os.environ["POWERTOOLS_LOG_LEVEL"])
    use_local_credentials_if_needed()
    overrides = _parameters(parameters)
    ctx.meta["parameters"] = overrides  # commands that build their own stack (chaos) take the overrides too
    with one_line_errors():
        ctx.obj = Runtime.from_template(template_path, overrides, stack)


for command in [*pipeline.COMMANDS, *items.COMMANDS, *recovery.COMMANDS, *importing.COMMANDS]:
    main.add_command(command)
for command in [*demo.COMMANDS, *serve.COMMANDS]:
    main.add_command(command)
main.add_command(plan.plan)
main.add_command(bench.bench)
for command in reshard.COMMANDS:
    main.add_command(command)
