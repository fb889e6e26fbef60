"""`shardboard demo` without Java falls back to moto's server: quietly, and without figures moto cannot measure."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from shardboard_tools.cli import main


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
    assert "│ write units per view   │ not measured on moto │" in output
    assert "verify: exact" in output
    # And moto's server printed no access log line on either stream
    captured = capfd.readouterr()
    assert "HTTP/1.1" not in output + captured.out + captured.err


def test_the_json_report_has_no_write_units_on_moto(without_java):
    output = run_demo("--json")
    report = json.loads(output[output.index("{") :])
    assert report["write_units_per_view"] is None
    assert report["views"] == 40 and report["verify_exact"] is True
