"""The library on a machine without AWS credentials: a local endpoint signs with the local engine's key, AWS refuses
at once in one line naming what to set. Only clients are built here: no request is sent (the clients are given their
settings, so they do not read the stack's published ones)."""

from __future__ import annotations

import boto3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardboard import Leaderboard, Recorder
from shardboard.adapters.dynamodb import LOCAL_ACCESS_KEY, MissingCredentials, is_local
from shardboard.settings import Settings
from shardboard_tools.local.engine import LOCAL_CREDENTIALS

NAMES_WHAT_TO_SET = (
    "Unable to locate AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; "
    "for a local engine, export the AWS_ENDPOINT_URL_DYNAMODB line that `shardboard local` prints"
)


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    """A machine where botocore finds no credentials: none in the environment, an empty home, no instance role."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_DYNAMODB",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def signing_key(client: object) -> str:
    credentials = client._request_signer._credentials  # type: ignore[attr-defined]
    return str(credentials.access_key)


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:8000", "http://localhost:4566", "http://[::1]:8000"])
def test_a_local_endpoint_without_credentials_signs_with_the_local_engines_key(no_credentials, monkeypatch, endpoint):
    # Given no credentials and the endpoint `shardboard local` prints
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
    # When a reader and a recorder are built
    board = Leaderboard(boto3.Session(), settings=Settings())
    recorder = Recorder(boto3.Session(), flush_interval=None, settings=Settings())
    try:
        # Then both sign with the key every `shardboard` command uses (DynamoDB Local keeps a database per key id)
        assert signing_key(board.client) == signing_key(recorder.client) == LOCAL_ACCESS_KEY
        assert LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"] == LOCAL_ACCESS_KEY
        assert board.client.meta.endpoint_url == endpoint
    finally:
        recorder.close()


def test_configured_credentials_are_used_on_a_local_endpoint_too(no_credentials, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDMINE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    assert signing_key(Leaderboard(boto3.Session(), settings=Settings()).client) == "AKIDMINE"


@pytest.mark.parametrize(
    "endpoint", [None, "https://dynamodb.eu-west-1.amazonaws.com", "http://dynamodb.internal:8000"]
)
def test_without_credentials_anywhere_else_the_error_names_what_to_set(no_credentials, monkeypatch, endpoint):
    # Given no credentials and AWS (or any endpoint not on this machine)
    if endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
    # When a reader or a recorder is built, Then it refuses at once, in one line naming what to set
    with pytest.raises(MissingCredentials) as refused:
        Leaderboard(boto3.Session())
    assert str(refused.value) == NAMES_WHAT_TO_SET
    with pytest.raises(MissingCredentials):
        Recorder(boto3.Session())


@given(st.ip_addresses())
def test_an_endpoint_is_local_exactly_when_its_address_is_loopback(address):
    host = f"[{address}]" if address.version == 6 else str(address)
    assert is_local(f"http://{host}:8000") == address.is_loopback


@pytest.mark.parametrize(
    ("endpoint", "local"),
    [
        ("http://localhost:8000", True),
        ("http://dynamodb.localhost:8000", True),
        ("http://LOCALHOST:8000", True),
        ("http://localhost.example.com:8000", False),
        ("https://dynamodb.us-east-1.amazonaws.com", False),
        ("http://127.0.0.1.nip.io:8000", False),
        ("", False),
    ],
)
def test_local_names(endpoint, local):
    assert is_local(endpoint) is local
