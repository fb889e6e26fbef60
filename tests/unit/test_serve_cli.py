"""`shardboard serve`'s refusals: one line, the right status, and nothing started (no engine, no tables)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def shardboard(*arguments: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from shardboard_tools.cli import main; main()", *arguments],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def test_jwt_without_issuer_and_audience_exits_2_naming_the_parameters():
    result = shardboard("serve", "--auth", "jwt")
    assert result.returncode == 2
    assert result.stderr == ("shardboard: --auth jwt needs the issuer and audience: -p 'Jwt=https://... AUDIENCE'\n")


def test_jwt_with_a_jwks_file_that_is_not_a_jwks_exits_2(tmp_path):
    keys = tmp_path / "jwks.json"
    keys.write_text("not json", encoding="utf-8")
    issuer = ["-p", "JwtIssuer=https://issuer.example.com", "-p", "JwtAudience=app"]
    result = shardboard(*issuer, "serve", "--auth", "jwt", "--jwks", str(keys))
    assert result.returncode == 2
    assert result.stderr.startswith(f"shardboard: cannot read the issuer's keys ({keys}): ")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_a_taken_port_exits_2_before_anything_starts(command):
    # Given a port in use and an endpoint nothing listens on
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = shardboard(command, "--port", str(port), AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:9")
    # Then one line says so and what to do, before any engine, table or load (found: a traceback after 50 s)
    assert result.returncode == 2
    assert (
        result.stderr
        == f"shardboard: cannot listen on 127.0.0.1:{port}: Address already in use (--port P, or 0 for a free one)\n"
    )
    assert result.stdout == ""
