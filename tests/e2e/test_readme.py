"""The README's commands run as written, against a DynamoDB Local the test starts the README's way, on a machine
without AWS credentials; its sample outputs are what the commands print.

The blocks are read with pytest-codeblocks' parser (its ``<!--pytest-codeblocks:expected-output-->`` convention
marks the output a block must print); this module runs them itself because they share one engine, started by the
README's own `shardboard local` block on a free port instead of 8000. Every block is run or checked, or says why not.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from pytest_codeblocks import CodeBlock, extract_from_file

from shardboard_tools.cli import main
from shardboard_tools.local.engine import ENDPOINT_VARIABLES, free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
ALL_BLOCKS = extract_from_file(README)
BLOCKS = [block for block in ALL_BLOCKS if block.syntax == "bash"]
ENGINE_BLOCK = "shardboard local --port 8000\n"
README_ADDRESS = "127.0.0.1:8000"
LIBRARY_EXAMPLE = "from shardboard import Leaderboard, Recorder"
SERVE_BLOCK = "shardboard serve --port 3000\n"
DEMO_REPORT = "shardboard demo"
SERVE_LINE = "shardboard serve: http://127.0.0.1:3000/ ("
# Blocks `make test` does not run or check as written (first line -> why); every other block is run or checked.
NOT_RUN = {
    "make demo   # sets up and runs the whole pipeline on Amazon DynamoDB Local, then prints a report": (
        "make test is the second line; the demo's report is checked below, its run in tests/e2e/test_pipeline_local.py"
    ),
    "make build && sam deploy --guided          # dev: stack shardboard-dev ([default] in samconfig.toml)": (
        "needs an AWS account"
    ),
    """curl -X POST 127.0.0.1:3000/views -d '{"id": "images/001.jpg"}'""": (
        "needs the serve above; tests/e2e/test_serve_local.py posts and reads the same way"
    ),
    "import json, urllib.request, boto3": "signs for a deployed API (tests/integration/test_local_gateway_auth.py)",
    '{"board": "cats", "generated_at": "2026-11-23T08:00:00.000Z",': (
        "an answer's shape: docs/openapi.json, checked by tests/unit/test_openapi.py"
    ),
    "writers (POST /views, library, CLI)": "a diagram",
    '<script type="module" src="https://API/shardboard.js"></script>': (
        "the two lines a site pastes: tests/e2e/test_embed_local.py pastes them into a page for serve"
    ),
    "template.yaml              the one schema: tables, GSI, functions, stream settings (local tables are built"
    " from it)": "the layout",
}
# The snapshot's generated_at differs on every run.
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
# A figure of the demo's report (a count, a ratio, seconds or none yet): the run decides them, not the README.
FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?(?: s\b)?|—")
# What `serve` says it runs on: the README's own engine there, the test's here.
ENGINE = re.compile(r" on [a-z-]+ at http://127\.0\.0\.1:\d+;")
# botocore's places to find credentials: a newcomer's machine has none of them.
CREDENTIALS = re.compile(
    r"AWS_(ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|SECURITY_TOKEN|PROFILE|DEFAULT_PROFILE"
    r"|SHARED_CREDENTIALS_FILE|CONFIG_FILE|CONTAINER_.*|WEB_IDENTITY_TOKEN_FILE|ROLE_ARN|REGION"
    r"|DEFAULT_REGION)"
)


def first_line(block: CodeBlock) -> str:
    return block.code.splitlines()[0].strip()


def runnable() -> list[CodeBlock]:
    return [
        block for block in BLOCKS if block.code not in {ENGINE_BLOCK, SERVE_BLOCK} and first_line(block) not in NOT_RUN
    ]


def the_block(start: str) -> CodeBlock:
    """The one block whose first line starts with ``start``."""
    (block,) = [block for block in ALL_BLOCKS if first_line(block).startswith(start.strip())]
    return block


def shell_env(home: Path) -> dict[str, str]:
    """The user's shell on a machine without AWS credentials (an empty home, none in the environment): `shardboard`
    and `python` on PATH, no endpoint yet (the README exports it), no colours."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AWS_ENDPOINT_URL") and not CREDENTIALS.fullmatch(k) and k != "FORCE_COLOR"
    }
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SHARDBOARD_STATE_DIR"] = str(home / "state")
    env["COLUMNS"] = "100"
    return env


def shape(text: str) -> list[list[str]]:
    """Each line's cells, every figure as '#': the rows and labels of a report, whatever the run measured."""
    cells = (re.split(r"[│┌┬┐└┴┘├┼┤]", line) for line in text.strip("\n").splitlines())
    return [[FIGURE.sub("#", cell).strip() for cell in line if cell.strip(" ─")] for line in cells]


@pytest.fixture
def readme_engine(tmp_path: Path) -> Iterator[str]:
    """The README's `shardboard local` block on a free port; yields the address to use instead of 127.0.0.1:8000."""
    address = f"127.0.0.1:{free_port()}"
    command = ENGINE_BLOCK.replace("8000", address.split(":")[1])
    engine = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=tmp_path,
        env=shell_env(tmp_path / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert engine.stdout is not None
        printed = engine.stdout.readline()
        # What it prints is the line the next block starts with, for the port it was given.
        assert printed == first_line(runnable()[0]).replace(README_ADDRESS, address) + "\n"
        yield address
    finally:
        engine.terminate()
        engine.wait(30)


def test_every_block_is_run_or_checked_or_says_why_not():
    assert sum(block.code == ENGINE_BLOCK for block in BLOCKS) == 1
    assert {first_line(block) for block in ALL_BLOCKS if first_line(block) in NOT_RUN} == set(NOT_RUN)
    assert [first_line(block) for block in runnable()] == [
        f"export AWS_ENDPOINT_URL_DYNAMODB=http://{README_ADDRESS} AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://{README_ADDRESS}",
        "shardboard verify",
    ]
    assert all(block.expected_output for block in runnable())  # each one's output is checked
    # The other blocks are the engine, and what the tests below run or compare
    checked = [the_block(start) for start in (ENGINE_BLOCK, SERVE_BLOCK, SERVE_LINE, DEMO_REPORT, LIBRARY_EXAMPLE)]
    others = [block for block in ALL_BLOCKS if block not in runnable() and first_line(block) not in NOT_RUN]
    assert sorted(block.lineno for block in others) == sorted(block.lineno for block in checked)
    assert the_block(LIBRARY_EXAMPLE).expected_output


def test_the_readme_builds_with_make_build():
    # A bare `sam build` needs python3.12 on PATH; `make build` finds pyenv's too and says what to install otherwise.
    commands = [line.strip() for block in BLOCKS for line in block.code.splitlines()]
    assert not [line for line in commands if re.match(r"(.*(&&|;)\s*)?sam build\b", line)]
    assert any(line.startswith("make build && sam deploy") for line in commands)


def test_the_readme_example_prints_what_the_readme_shows(readme_engine, tmp_path):
    # Given the engine the README starts, and a working directory outside the repository (the packaged template)
    env = shell_env(tmp_path / "home")
    exports: dict[str, str] = {}
    for block in runnable():
        # When each block runs in order, as a user pastes them (the endpoint exported by the first one stays)
        code = block.code.replace(README_ADDRESS, readme_engine)
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", code + "\nenv | grep ^AWS_ENDPOINT_URL_DYNAMODB >&2 || true"],
            cwd=tmp_path,
            env=env | exports,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        # Then it succeeds and prints what the README says it prints
        assert result.returncode == 0, f"README line {block.lineno}: {result.stderr}"
        exports |= dict(line.split("=", 1) for line in result.stderr.splitlines() if line.startswith("AWS_ENDPOINT"))
        if block.expected_output is not None:
            assert TIMESTAMP.sub("<time>", result.stdout) == TIMESTAMP.sub("<time>", block.expected_output), (
                f"README line {block.lineno}"
            )
    # And the library's example, run as printed with the endpoint exported and no credentials, prints what it shows
    library = the_block(LIBRARY_EXAMPLE)
    (tmp_path / "example.py").write_text(library.code, encoding="utf-8")
    result = subprocess.run(
        ["python", "example.py"],
        cwd=tmp_path,
        env=env | exports,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"README line {library.lineno}: {result.stderr}"
    assert result.stdout == library.expected_output, f"README line {library.lineno}"
    # And a user who has AWS credentials reads the same tables: one database whatever key signs (-sharedDb)
    with_credentials = {"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY": "example/secret"}
    result = subprocess.run(
        ["python", "example.py"],
        cwd=tmp_path,
        env=env | exports | with_credentials,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, library.expected_output), result.stderr


def test_the_sample_outputs_are_what_serve_and_demo_print(readme_engine, tmp_path):
    # Given the README's engine, its endpoint exported in a shell without credentials
    endpoint = f"http://{readme_engine}"
    env = shell_env(tmp_path / "home") | dict.fromkeys(ENDPOINT_VARIABLES, endpoint)
    # When the README's serve block runs (on a free port instead of 3000)
    port = str(free_port())
    serve = subprocess.Popen(
        ["bash", "-c", "exec " + SERVE_BLOCK.replace("3000", port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        printed = serve.stdout.readline()
    finally:
        serve.send_signal(signal.SIGTERM)
        _, said = serve.communicate(timeout=60)
    # Then it said it was starting, and its line is the README's: the same routes, auth and schedule
    assert said.startswith("shardboard serve: starting"), said
    readme_line = the_block(SERVE_LINE).code.replace(":3000/", f":{port}/")
    assert ENGINE.sub(" on <engine>;", printed) == ENGINE.sub(" on <engine>;", readme_line)
    # When the demo runs a short workload on that engine
    short = ["--views", "40", "--rate", "0", "--refresh", "0.5", "--no-live", "--no-web"]
    demo = subprocess.run(
        ["shardboard", "--stack", "readme-demo", "demo", *short],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # Then its report ends as the README's sample does: the same rows and labels (the figures are the run's)
    assert demo.returncode == 0, demo.stderr
    sample = shape(the_block(DEMO_REPORT).code)
    assert shape(demo.stdout)[-len(sample) :] == sample


def test_the_command_table_lists_every_command():
    section = README.read_text(encoding="utf-8").split("## The `shardboard` command")[1].split("\n## ")[0]
    listed = re.findall(r"^\| `([a-z]+)[ `]", section, flags=re.MULTILINE)
    assert sorted(listed) == main.list_commands(click.Context(main))
