"""`shardboard` starts without what its commands need: each command's module, boto3, the models, the X-Ray SDK and the
benchmark load only when a command that uses them runs. Checked by what a fresh interpreter imported, not by time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest

from shardboard_tools.cli import COMMANDS, demo, importing, items, main, pipeline, plan, recovery, reshard, serve
from shardboard_tools.cli import bench as bench_commands

# What a start must not load: the benchmark's numpy and matplotlib, the X-Ray SDK, moto, boto3 and pydantic.
HEAVY = ("numpy", "matplotlib", "aws_xray_sdk", "moto", "boto3", "pydantic")


def loaded_after(code: str, **env: str) -> list[str]:
    """The heavy packages a fresh interpreter has imported after running ``code`` (its SystemExit is expected)."""
    probe = (
        "import json, sys\n"
        f"try:\n    {code}\nexcept SystemExit:\n    pass\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stderr.splitlines()[-1]))


def test_importing_the_command_loads_nothing_heavy():
    assert loaded_after("import shardboard_tools.cli") == []


@pytest.mark.parametrize(
    "arguments",
    [["--version"], ["--help"], ["top", "--help"], ["record", "--help"], ["local", "--help"], ["plan", "--help"]],
    ids=" ".join,
)
def test_version_help_and_a_commands_help_load_nothing_heavy(arguments):
    code = f"from shardboard_tools.cli import main; main({arguments!r}, prog_name='shardboard')"
    assert loaded_after(code, COLUMNS="100") == []


def test_the_functions_load_no_x_ray_sdk_where_tracing_is_off():
    # Outside Lambda (a local command, a test), Powertools would disable its tracer; importing the handlers then
    # loads no X-Ray SDK
    code = "import shardboard.handlers.aggregate, shardboard.handlers.read_api, shardboard.handlers.record_views"
    assert "aws_xray_sdk" not in loaded_after(code, POWERTOOLS_TRACE_DISABLED="false")


def test_in_lambda_the_functions_trace_with_powertools():
    # In Lambda (LAMBDA_TASK_ROOT set, tracing not disabled) the tracer is Powertools' own, as before
    env = {k: v for k, v in os.environ.items() if k not in {"POWERTOOLS_TRACE_DISABLED", "AWS_SAM_LOCAL"}}
    code = "from shardboard.handlers.observability import tracer; print(type(tracer).__module__, type(tracer).__name__)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env | {"LAMBDA_TASK_ROOT": "/var/task"},
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["aws_lambda_powertools.tracing.tracer", "Tracer"]


@pytest.mark.parametrize(
    ("env", "traced"),
    [
        ({"LAMBDA_TASK_ROOT": "/var/task"}, True),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "1"}, False),
        ({"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"}, False),
        ({}, False),
    ],
)
def test_tracing_is_on_where_powertools_traces(monkeypatch, env, traced):
    from shardboard.handlers.observability import tracing_enabled

    for name in ("LAMBDA_TASK_ROOT", "POWERTOOLS_TRACE_DISABLED", "AWS_SAM_LOCAL", "AWS_CHALICE_CLI_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert tracing_enabled() is traced


def test_every_command_is_listed_where_it_is_defined():
    # The commands each module declares are exactly the ones the group lists, each at the place it names
    declared = [
        *pipeline.COMMANDS,
        *items.COMMANDS,
        *recovery.COMMANDS,
        *importing.COMMANDS,
        *demo.COMMANDS,
        *serve.COMMANDS,
        *reshard.COMMANDS,
        plan.plan,
        bench_commands.bench,
    ]
    assert sorted(command.name or "" for command in declared) == sorted(COMMANDS)
    context = click.Context(main)
    for command in declared:
        assert main.get_command(context, command.name or "") is command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_listed_summary_is_the_first_sentence_of_the_commands_help(name):
    command = main.get_command(click.Context(main), name)
    assert command is not None
    assert COMMANDS[name][1] == command.get_short_help_str(limit=10_000)
