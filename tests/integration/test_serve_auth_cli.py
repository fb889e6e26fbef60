"""`shardboard serve --auth` and `-p WriteAuth` are one configuration: the README's own `serve --auth jwt` command
accepts a valid token, `-p WriteAuth=jwt` alone checks tokens, and two that disagree exit 2 with one line before
anything starts (found: every valid token refused; every write answered 500). `serve` runs as a subprocess on moto's
DynamoDB server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parents[2]
ISSUER = "https://issuer.example.com/pool"
AUDIENCE = "app-client-1"
JWT = f"Jwt={ISSUER} {AUDIENCE}"
VIEW = b'{"id": "images/001.jpg"}'


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def jwks(tmp_path: Path, key: rsa.RSAPrivateKey) -> Path:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [{**public, "kid": "k1", "alg": "RS256"}]}), encoding="utf-8")
    return path


def token(key: rsa.RSAPrivateKey) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "exp": now + 300, "iat": now, "scope": "views:write"}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})


def environment(endpoint: str, tmp_path: Path) -> dict[str, str]:
    return os.environ | {
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
        "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": endpoint,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": "us-east-1",
        "SHARDBOARD_STATE_DIR": str(tmp_path / "state"),
    }


def shardboard(endpoint: str, tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from shardboard_tools.cli import main; main()", *arguments]
    env = environment(endpoint, tmp_path)
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def serve(endpoint: str, tmp_path: Path) -> Iterator[Any]:
    """``serve(*arguments)`` -> the base URL of `shardboard ARGUMENTS` (a serve on a free port), stopped after."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*arguments: str) -> str:
        out, err = tmp_path / f"serve{len(started)}.out", tmp_path / f"serve{len(started)}.err"
        command = [sys.executable, "-c", "from shardboard_tools.cli import main; main()", *arguments]
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                command, cwd=ROOT, env=environment(endpoint, tmp_path), stdout=stdout, stderr=stderr
            )
        started.append(process)
        deadline = time.monotonic() + 120
        while not out.read_text("utf-8").strip() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        line = out.read_text("utf-8")
        assert line.startswith("shardboard serve: http://127.0.0.1:"), err.read_text("utf-8")[-2000:]
        return line.split()[2]

    yield start
    for process in started:
        process.terminate()
        process.wait(60)


def post(url: str, body: bytes = VIEW, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers or {})  # noqa: S310 - local
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - http://127.0.0.1 only
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_readmes_serve_auth_jwt_command_accepts_a_valid_token(serve, key, jwks):
    # Given the README's command: -p 'Jwt=ISSUER CLIENT_ID' serve --auth jwt (keys from a file, offline)
    url = serve("-p", JWT, "serve", "--auth", "jwt", "--jwks", str(jwks), "--port", "0")
    # Then a valid token writes, no token is the authorizer's 401
    assert post(url + "views", headers={"Authorization": f"Bearer {token(key)}"})[0] == 202
    assert post(url + "views") == (401, {"message": "Unauthorized"})


def test_write_auth_jwt_alone_makes_serve_check_tokens(serve, key, jwks):
    url = serve("-p", "WriteAuth=jwt", "-p", JWT, "serve", "--jwks", str(jwks), "--port", "0")
    assert post(url + "views", headers={"Authorization": f"Bearer {token(key)}"})[0] == 202
    assert post(url + "views") == (401, {"message": "Unauthorized"})


def test_serve_auth_iam_accepts_a_signed_write_and_refuses_an_unsigned_one(serve):
    url = serve("serve", "--auth", "iam", "--port", "0")
    request = AWSRequest(method="POST", url=url + "views", data=VIEW, headers={"Content-Type": "application/json"})
    SigV4Auth(ReadOnlyCredentials("local", "local", None), "execute-api", "us-east-1").add_auth(request)
    assert post(url + "views", VIEW, dict(request.headers))[0] == 202
    assert post(url + "views") == (403, {"message": "Forbidden"})


@pytest.mark.parametrize(
    ("arguments", "auth", "write_auth"),
    [
        pytest.param(
            ["-p", "WriteAuth=jwt", "-p", JWT, "serve", "--auth", "iam"], "iam", "jwt", id="jwt-served-as-iam"
        ),
        pytest.param(
            ["-p", "WriteAuth=iam", "-p", JWT, "serve", "--auth", "jwt"], "jwt", "iam", id="iam-served-as-jwt"
        ),
    ],
)
def test_auth_and_write_auth_that_disagree_exit_2_with_one_line(endpoint, tmp_path, arguments, auth, write_auth):
    result = shardboard(endpoint, tmp_path, *arguments, "--port", "0")
    assert result.returncode == 2
    assert result.stderr == (
        f"shardboard: --auth {auth} and -p WriteAuth={write_auth} disagree: give one of them (--auth sets WriteAuth)\n"
    )
    assert result.stdout == ""
