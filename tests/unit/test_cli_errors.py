"""One-line errors of the `shardboard` command say what to do, not only what failed."""

from __future__ import annotations

import pytest
from botocore.exceptions import EndpointConnectionError, NoCredentialsError

from shardboard_tools.cli.common import one_line_errors


def failure_line(error: Exception, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited, one_line_errors():
        raise error
    return int(str(exited.value.code)), capsys.readouterr().err


def test_no_credentials_and_no_endpoint_points_at_the_local_engine(monkeypatch, capsys):
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    code, err = failure_line(NoCredentialsError(), capsys)
    assert code == 1
    assert err == (
        "shardboard: cannot reach DynamoDB: Unable to locate credentials (no AWS_ENDPOINT_URL_DYNAMODB: for DynamoDB"
        " Local, `shardboard local` starts one and prints the variables to export; for AWS, configure credentials)\n"
    )


def test_an_unreachable_endpoint_names_it(monkeypatch, capsys):
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9")
    code, err = failure_line(EndpointConnectionError(endpoint_url="http://127.0.0.1:9/"), capsys)
    assert code == 1
    assert err == (
        'shardboard: cannot reach DynamoDB: Could not connect to the endpoint URL: "http://127.0.0.1:9/"'
        " (AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9: is the engine running? `shardboard local` starts one)\n"
    )
