"""Every row of docs/bad-input.md, run: the answer it documents, and nothing written to any table."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qsl, unquote

import pytest
from click.testing import CliRunner
from moto import mock_aws

from shardboard_tools.cli import main
from tests.bad_input_catalogue import CLI, CLI_FILES, HTTP, STREAM, CliCase, HttpCase, StreamCase, render
from tests.conftest import ROOT, Pipeline, build_pipeline, load_event

GOOD = json.dumps({"id": "ok", "count": 2})


def table_items(pipeline):
    client = pipeline.runtime.dynamodb
    return {
        table: client.scan(TableName=table, ConsistentRead=True)["Items"]
        for table in (
            pipeline.settings.views_table,
            pipeline.settings.board_table,
            pipeline.settings.items_table,
            pipeline.settings.shards_table,  # the board registry: a refused board is not registered
        )
    }


def test_the_page_is_the_catalogue():
    assert (ROOT / "docs" / "bad-input.md").read_text(encoding="utf-8") == render()


def http_event(case: HttpCase):
    name = "record_views_post.json" if case.method == "POST" else "read_leaderboard_get.json"
    event = copy.deepcopy(load_event(name))
    # API Gateway (HTTP API) decodes the path before the function sees it.
    event["rawPath"] = event["requestContext"]["http"]["path"] = unquote(case.path)
    event["requestContext"]["http"]["method"] = case.method
    event["routeKey"] = f"{case.method} {case.path}"
    event["rawQueryString"] = case.query
    # As API Gateway derives them (decoded, repeated names joined by commas): the functions read rawQueryString.
    parameters: dict[str, str] = {}
    for name, value in parse_qsl(case.query, keep_blank_values=True):
        parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
    event["queryStringParameters"] = parameters or None
    event["body"] = case.body
    event["headers"] = {**event["headers"], **dict(case.headers)}
    return event


class TestBadHttpRequest:
    """The HTTP rows share a board per set of template parameters: a bad request writes nothing (each row asserts it
    on every table). Class scope: the next rows (stream, CLI) get tables of their own, not these."""

    @pytest.fixture(scope="class")
    def boards(self) -> Iterator[Callable[[tuple[tuple[str, str], ...]], Pipeline]]:
        """A board of 10 holding views and a snapshot, on moto, built the first time a row names its parameters."""
        from shardboard.handlers import record_views, wiring

        built: dict[tuple[tuple[str, str], ...], Pipeline] = {}

        def board(parameters: tuple[tuple[str, str], ...]) -> Pipeline:
            if parameters not in built:
                pipeline = build_pipeline(f"bad-input-{len(built)}", TopN="10", **dict(parameters))
                pipeline.runtime.invoke(record_views.handler, http_event(HttpCase("", "POST", "/views", body=GOOD)))
                pipeline.aggregate(pipeline.stream_records())
                pipeline.snapshot()
                built[parameters] = pipeline
            built[parameters].runtime.export_to_handlers()
            return built[parameters]

        with mock_aws():
            yield board
        wiring.use(None)

    @pytest.mark.parametrize("case", HTTP, ids=[c.what for c in HTTP])
    def test_bad_http_request(self, boards, case):
        from shardboard.handlers import items_admin, read_api, record_views

        # Given a board of 10 holding views and a snapshot
        pipeline = boards(case.parameters)
        before = table_items(pipeline)
        # When the bad request arrives
        handlers = {"POST": record_views.handler, "PUT": items_admin.handler, "DELETE": items_admin.handler}
        handler = items_admin.handler if case.path.startswith("/item/") else handlers.get(case.method, read_api.handler)
        response = pipeline.runtime.invoke(handler, http_event(case))
        # Then it gets the documented status and message, and nothing is written
        assert response["statusCode"] == case.status
        answer = json.loads(response["body"])
        assert set(answer) == {"message", "code"} and answer["code"] == case.code
        assert case.message in answer["message"]
        assert table_items(pipeline) == before


def stream_record(case: StreamCase):
    record = copy.deepcopy(load_event("aggregate_stream_batch.json")["Records"][1])  # a valid MODIFY
    assert record["eventName"] == "MODIFY"
    for key, value in case.change.items():
        target = record if key in ("eventName", "dynamodb") else record["dynamodb"]
        if value is None:
            target.pop(key)
        else:
            target[key] = value
    for image, change in (("NewImage", case.image_change), ("OldImage", case.old_image_change)):
        for key, value in (change or {}).items():
            if value is None:
                record["dynamodb"][image].pop(key)
            else:
                record["dynamodb"][image][key] = value
    return record


@pytest.mark.parametrize("case", STREAM, ids=[c.what for c in STREAM])
def test_bad_stream_record(pipeline, capsys, caplog, case):
    before = table_items(pipeline)
    # When a batch holding only the bad record is delivered
    response = pipeline.aggregate([stream_record(case)])
    # Then the batch succeeds, the record is skipped with its reason and counted, and nothing is written
    out = capsys.readouterr().out
    assert response == {"batchItemFailures": []}
    skipped = [r for r in caplog.records if r.getMessage() == "stream record skipped"]
    assert [r.reason for r in skipped] == [case.reason]
    emf = [json.loads(line) for line in out.splitlines() if '"_aws"' in line]
    assert emf[-1]["RecordsSkipped"] == [1.0]
    assert table_items(pipeline) == before


@pytest.fixture
def cli(monkeypatch, tmp_path):
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    for name in ("VIEWS_TABLE", "BOARD_TABLE", "BOARD_NAME", "WRITE_SHARDS", "BOARD_SHARDS", "TOP_N"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    with mock_aws():
        yield lambda *args: runner.invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("case", CLI, ids=[c.what for c in CLI])
def test_bad_cli_input(cli, tmp_path: Path, case: CliCase):
    # Given tables holding two views, and the files the rows name
    files = {}
    for name, text in CLI_FILES.items():
        files[f"{{{name}}}"] = path = tmp_path / f"{name}.jsonl"
        path.write_text(text, encoding="utf-8")
    assert cli("init").exit_code == 0
    assert cli("record", "kept", "-n", "2").exit_code == 0
    before = json.loads(cli("verify", "--json").output)
    # When the bad command runs
    result = cli(*(str(files.get(arg, arg)) for arg in case.args))
    # Then it exits 2 with the documented reason, and nothing was written
    assert result.exit_code == case.code
    assert case.message in " ".join(result.output.split())
    assert json.loads(cli("verify", "--json").output) == before
