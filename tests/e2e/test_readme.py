"""The README's commands run as written, against a DynamoDB Local the test starts the README's way.

The blocks are read with pytest-codeblocks' parser (its ``<!--pytest-codeblocks:expected-output-->`` convention
marks the output a block must print); this module runs them itself because they share one engine, started by the
README's own `shardboard local` block on a free port instead of 8000.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_codeblocks import CodeBlock, extract_from_file

from shardboard_tools.cli import main
from shardboard_tools.local.engine import free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCKS = [block for block in extract_from_file(README) if block.syntax == "bash"]
ENGINE_BLOCK = "shardboard local --port 8000\n"
README_ADDRESS = "127.0.0.1:8000"
# Bash blocks `make test` does not run as written (first line -> why); every other bash block runs.
NOT_RUN = {
    "make demo   # sets up and runs the whole pipeline on Amazon DynamoDB Local, then prints a report": (
        "make test is the second line; the demo runs in tests/e2e/test_pipeline_local.py"
    ),
    "sam build && sam deploy --guided          # dev: stack shardboard-dev ([default] in samconfig.toml)": (
        "needs an AWS account"
    ),
    "shardboard serve --port 3000": "serves until stopped; tests/e2e/test_serve_local.py runs it on a free port",
    """curl -X POST 127.0.0.1:3000/views -d '{"id": "images/001.jpg"}'""": (
        "needs the serve above; tests/e2e/test_serve_local.py posts and reads the same way"
    ),
}
# The snapshot's generated_at differs on every run.
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def first_line(block: CodeBlock) -> str:
    return block.code.splitlines()[0]


def runnable() -> list[CodeBlock]:
    return [block for block in BLOCKS if block.code != ENGINE_BLOCK and first_line(block) not in NOT_RUN]


def shell_env(state_dir: Path) -> dict[str, str]:
    """The user's shell: `shardboard` on PATH, no endpoint yet (the README exports it), no colours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT_URL") and k != "FORCE_COLOR"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SHARDBOARD_STATE_DIR"] = str(state_dir)
    env["COLUMNS"] = "100"
    return env


@pytest.fixture
def readme_engine(tmp_path: Path) -> Iterator[str]:
    """The README's `shardboard local` block on a free port; yields the address to use instead of 127.0.0.1:8000."""
    address = f"127.0.0.1:{free_port()}"
    command = ENGINE_BLOCK.replace("8000", address.split(":")[1])
    engine = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=tmp_path,
        env=shell_env(tmp_path / "state"),
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


def test_every_bash_block_runs_or_says_why_not():
    assert sum(block.code == ENGINE_BLOCK for block in BLOCKS) == 1
    assert {first_line(block) for block in BLOCKS if first_line(block) in NOT_RUN} == set(NOT_RUN)
    assert [first_line(block) for block in runnable()] == [
        f"export AWS_ENDPOINT_URL_DYNAMODB=http://{README_ADDRESS} AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://{README_ADDRESS}",
        "shardboard verify",
    ]
    assert all(block.expected_output for block in runnable())  # each one's output is checked


def test_the_readme_example_prints_what_the_readme_shows(readme_engine, tmp_path):
    # Given the engine the README starts, and a working directory outside the repository (the packaged template)
    env = shell_env(tmp_path / "state")
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


def test_the_command_table_lists_every_command():
    section = README.read_text(encoding="utf-8").split("## The `shardboard` command")[1].split("\n## ")[0]
    listed = re.findall(r"^\| `([a-z]+)[ `]", section, flags=re.MULTILINE)
    assert sorted(listed) == sorted(main.commands)
