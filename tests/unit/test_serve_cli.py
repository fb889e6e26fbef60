"""`shardboard serve`'s refusals: one line, the right status, and nothing started (no engine, no tables)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STARTING = "shardboard serve: starting the engine, the tables, the stream runner and the snapshots..."


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


def test_a_taken_port_exits_1_before_any_table_is_touched():
    # Given a port in use and an endpoint nothing listens on (a table call would fail differently)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = shardboard("serve", "--port", str(port), AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:9")
    # Then, after the line saying it is starting, one line says so and what to do
    assert result.returncode == 1
    starting, refused = result.stderr.splitlines()
    assert starting == STARTING
    assert refused.startswith(f"shardboard: cannot listen on 127.0.0.1:{port}: ")
    assert refused.endswith("(--port P, or 0 for a free one)")
