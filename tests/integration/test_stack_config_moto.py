"""A stack that describes itself, on moto: `shardboard init` (and a deploy's StackConfig custom resource) publish the
stack's settings; a Recorder, a Leaderboard or a CLI command given only the stack reads them and keys its items as
the stack's functions do. Tables come from template.yaml."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer

import boto3
import pytest
from click.testing import CliRunner
from moto import mock_aws

from shardboard import Leaderboard, Recorder
from shardboard.adapters.keys import PK, STACK_CONFIG_PK
from shardboard.adapters.stack_config import publish, read_published
from shardboard.domain.boards import BoardNotAllowed
from shardboard.domain.clock import FixedClock
from shardboard.domain.periods import bucket_of, bucket_start, coarser_bucket
from shardboard.handlers import stack_config, wiring
from shardboard.services.clock import system_clock
from shardboard.settings import PUBLISHED_VARIABLES, ConfigError, Settings
from shardboard_tools.cli import main
from shardboard_tools.lambda_model.context import LocalContext
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.template import Template, create_tables
from tests.conftest import ROOT, Pipeline

STACK = "prod"
DEPLOYED = {"Periods": "hour,day", "WriteShards": "7"}
VIEWS = {"a": 41, "b": 17, "c": 17, "d": 3}


@pytest.fixture
def moto(monkeypatch):
    # What `shardboard` sets for a terminal, scoped to this test; no setting comes from the shell's environment.
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    for name in (*PUBLISHED_VARIABLES, "VIEWS_TABLE", "BOARD_TABLE", "SHARDS_TABLE", "ITEMS_TABLE", "BOARD_NAME"):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        yield
    wiring.use(None)


def cli(*args, clock=None):
    """``shardboard *args``; ``clock``: the commands' one clock (click's context object), the wall's if None."""
    return CliRunner().invoke(main, list(args), obj=clock, catch_exceptions=False)


def deployed_pipeline(parameters=DEPLOYED, stack=STACK, clock=system_clock):
    """The stack's functions, as a deploy with ``parameters`` configures them (their environment)."""
    runtime = Runtime.from_template(ROOT / "template.yaml", parameters, stack, clock, write_concurrency=4)
    runtime.export_to_handlers()
    return Pipeline(runtime)


def published_item(stack=STACK):
    client = boto3.client("dynamodb", region_name="us-east-1")
    return client.get_item(TableName=f"{stack}-board", Key={PK: {"S": STACK_CONFIG_PK}}).get("Item")


# ------------------------------------------------------------------------------------------------- the library
def test_a_recorder_given_only_the_stack_lands_views_exactly_in_its_hour_and_day_boards(moto):
    # Given a stack initialised with -p Periods=hour,day -p WriteShards=7 (the template's defaults: day,week,month; 20)
    assert cli("--stack", STACK, "-p", "Periods=hour,day", "-p", "WriteShards=7", "init").exit_code == 0
    # One clock for the recorder, the functions and the reads, fixed: the hour cannot turn between them
    moment = datetime.now(UTC)
    clock = FixedClock(moment)
    pipeline = deployed_pipeline(clock=clock)
    # When a Recorder built with only the stack records views
    with Recorder(boto3.Session(), stack=STACK, flush_interval=None, clock=clock) as recorder:
        assert (recorder.settings.write_shards, recorder.settings.periods) == (7, ("hour", "day"))
        for item, views in VIEWS.items():
            for _ in range(views):
                recorder.record(item, boards=["cats"] if item == "b" else ())
        assert recorder.flush().failed_views == 0
    # Then every counter sits on one of the stack's 7 write shards, keyed by its anchor period (the hour)
    counters = pipeline.views.scan_counters_all()
    assert counters and {shard for _, _, shard, _, _ in counters} <= set(range(7))
    assert {bucket for _, bucket, _, _, _ in counters} == {bucket_of("hour", moment)}
    # And once the stack's aggregator and snapshot job ran, its hour and day boards hold exactly those views
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    board = Leaderboard(boto3.Session(), stack=STACK, clock=clock)
    assert board.settings.periods == ("hour", "day")
    expected = [(1, "a", 41), (2, "b", 17), (2, "c", 17), (4, "d", 3)]
    for period in ("hour", "day", "all"):
        standings = board.top(period=period, at=moment)
        assert [(e.rank, e.id, e.views) for e in standings.items] == expected, period
    assert [(e.id, e.views) for e in board.top("cats", "hour", at=moment).items] == [("b", 17)]
    assert pipeline.truth() == VIEWS


# The done-when line of issue 22 item 6: a Recorder built with only ``stack=`` on a stack deployed with
# -p Periods=hour,day -p WriteShards=7 records views that land exactly in that stack's hour and day boards.
# 60 more items of one view each: a recorder writes each item on one shard of its own (fixed per writer and item,
# docs/honest-counts.md "Retried writes"), so 64 items show the keys spread over every one of the 7 write shards.
TAIL = {f"tail-{n:02d}": 1 for n in range(60)}


def record_with_only_the_stack(stack: str) -> None:
    """VIEWS and TAIL recorded by ``Recorder(stack=stack)`` and nothing else (the default session, flush interval,
    clock, retry-safe writes); leaving the ``with`` block flushes them."""
    with Recorder(stack=stack) as recorder:
        assert (recorder.settings.write_shards, recorder.settings.periods) == (7, ("hour", "day"))
        for item, views in {**VIEWS, **TAIL}.items():
            for _ in range(views):
                recorder.record(item, boards=["cats"] if item == "b" else ())


def assert_exactly_in_the_hour_and_day_boards(stack: str, counters: list[tuple[str, str, int, str, int]]) -> None:
    """Every counter on one of the 7 write shards, keyed by the hour; each hour and day board of the stack (and all
    time) holds exactly the views its counters hold, read by a Leaderboard given only the stack. (Expected boards
    come from the counters' own buckets, so views recorded across an hour's end are checked in both hours.)"""
    # 64 items on a shard each: every one of the 7 is used (were the shards drawn at random, 1 run in 1,400 would
    # miss one), none past them (the template's default is 20)
    assert {shard for _, _, shard, _, _ in counters} == set(range(7))
    expected: dict[tuple[str, str, str], Counter] = {}
    for item, hour, _, name, views in counters:
        for kind in ("hour", "day", "all"):
            expected.setdefault((name, kind, coarser_bucket(kind, "hour", hour)), Counter())[item] += views
    assert expected[("global", "all", "all")] == Counter({**VIEWS, **TAIL})
    board = Leaderboard(stack=stack)
    assert board.settings.periods == ("hour", "day")
    for (name, kind, bucket), views in sorted(expected.items()):
        at = None if kind == "all" else bucket_start(kind, bucket)
        standings = board.top(name, kind, at=at)
        best = sorted(views.items(), key=lambda entry: (-entry[1], entry[0]))
        assert [(e.id, e.views) for e in standings.items] == best, (name, kind, bucket)
    assert {kind for _, kind, _ in expected} == {"hour", "day", "all"}


def test_done_when_a_recorder_built_with_only_the_stack_lands_views_exactly_in_its_hour_and_day_boards(moto):
    # Given a stack created from template.yaml with -p Periods=hour,day -p WriteShards=7, its settings published
    assert cli("--stack", STACK, "-p", "Periods=hour,day", "-p", "WriteShards=7", "init").exit_code == 0
    functions = deployed_pipeline()
    # When a Recorder built with only the stack records views
    record_with_only_the_stack(STACK)
    # And the stack's aggregator and snapshot job run
    functions.aggregate(functions.stream_records())
    functions.snapshot()
    # Then the keys used the stack's 7 write shards and its hour and day boards hold exactly those views
    assert_exactly_in_the_hour_and_day_boards(STACK, functions.views.scan_counters_all())


def test_the_recorder_enforces_the_board_policy_the_stack_published(moto):
    # Given a stack whose Boards policy allows only the cats board (the template's default: any 1,000 boards)
    assert cli("--stack", STACK, "-p", "Boards=max=5 pattern=cats", "init").exit_code == 0
    assert published_item()["settings"]["M"]["BOARDS"] == {"S": "max=5 pattern=cats"}
    # When a Recorder given only the stack records views on cats and on dogs
    with Recorder(stack=STACK, flush_interval=None) as recorder:
        assert str(recorder.settings.board_policy) == "max=5 pattern=cats"
        recorder.record("a", boards=["cats"])
        # Then dogs is refused as the stack's functions refuse it (422 board_not_allowed), and nothing is buffered
        with pytest.raises(BoardNotAllowed):
            recorder.record("a", boards=["dogs"])
        flushed = recorder.flush()
        assert (flushed.views, flushed.failed_views) == (1, 0)


def test_the_published_settings_are_read_once_per_client_and_settings_override_them(moto):
    assert cli("--stack", STACK, "-p", "WriteShards=7", "init").exit_code == 0
    # Given a session whose clients count their GetItems on the board table (clients inherit the session's hooks)
    session = boto3.Session()
    reads = Counter()

    def on_get_item(params, **_):
        reads[params["TableName"]] += 1

    session.events.register("provide-client-params.dynamodb.GetItem", on_get_item)
    # When a Recorder is made, records and flushes
    with Recorder(session, stack=STACK, flush_interval=None) as recorder:
        assert reads[f"{STACK}-board"] == 1
        for _ in range(5):
            recorder.record("a")
        recorder.flush()
        # Then it read the settings once, at construction, and never again
        assert recorder.settings.write_shards == 7
        assert reads[f"{STACK}-board"] == 1
    assert Leaderboard(session, stack=STACK).settings.write_shards == 7
    assert reads[f"{STACK}-board"] == 2
    # And explicit settings are used as given, without a read
    explicit = Settings.for_stack(STACK, write_shards=3)
    with Recorder(session, stack=STACK, flush_interval=None, settings=explicit) as given:
        assert given.settings is explicit
    assert Leaderboard(session, settings=explicit).settings is explicit
    assert reads[f"{STACK}-board"] == 2


def test_the_settings_read_is_one_strongly_consistent_get_item(moto):
    assert cli("--stack", STACK, "-p", "TopN=7", "init").exit_code == 0
    client = boto3.client("dynamodb", region_name="us-east-1")
    seen = []
    client.meta.events.register("provide-client-params.dynamodb.*", lambda params, model, **_: seen.append(model.name))
    consistent = []
    client.meta.events.register("provide-client-params.dynamodb.GetItem", lambda params, **_: consistent.append(params))
    lookup = read_published(client, f"{STACK}-board")
    assert seen == ["GetItem"] and consistent[0]["ConsistentRead"] is True
    assert lookup.published is not None and lookup.published.variables["TOP_N"] == "7"
    assert lookup.published.published_by == "shardboard init"


def test_a_stack_that_published_nothing_gets_the_defaults_and_one_warning(moto, caplog):
    # Given a stack deployed by an older version: its tables, no settings item
    create_tables(boto3.client("dynamodb", region_name="us-east-1"), Template.load(stack=STACK))
    with caplog.at_level(logging.WARNING, logger="shardboard.client"):
        with Recorder(boto3.Session(), stack=STACK, flush_interval=None) as recorder:
            recorder.record("a")
        board = Leaderboard(boto3.Session(), stack=STACK)
    # Then both behave as before stacks described themselves, each saying so in one line
    assert recorder.settings == board.settings == Settings.for_stack(STACK)
    warnings = [r.getMessage() for r in caplog.records if r.name == "shardboard.client"]
    assert len(warnings) == 2 and all("\n" not in w and "no published settings" in w for w in warnings)
    assert recorder.stats().written_views == 1


def test_a_stack_without_tables_gets_the_defaults_with_a_warning_naming_the_table(moto, caplog):
    with caplog.at_level(logging.WARNING, logger="shardboard.client"):
        board = Leaderboard(boto3.Session(), stack="nowhere")
    assert board.settings == Settings.for_stack("nowhere")
    assert "there is no table nowhere-board" in caplog.text


def test_a_malformed_published_setting_is_refused_with_its_name(moto):
    assert cli("--stack", STACK, "init").exit_code == 0
    client = boto3.client("dynamodb", region_name="us-east-1")
    publish(
        client,
        f"{STACK}-board",
        {**Settings().published_variables(), "PERIODS": "fortnight"},
        by="test",
        when=datetime(2026, 11, 23, tzinfo=UTC),
    )
    with pytest.raises(ConfigError, match="PERIODS"):
        Leaderboard(boto3.Session(), stack=STACK)


def test_variables_a_newer_stack_publishes_are_ignored(moto):
    assert cli("--stack", STACK, "init").exit_code == 0
    client = boto3.client("dynamodb", region_name="us-east-1")
    variables = {**Settings(write_shards=5).published_variables(), "SOMETHING_NEW": "x", "VIEWS_TABLE": "elsewhere"}
    publish(client, f"{STACK}-board", variables, by="test", when=datetime(2026, 11, 23, tzinfo=UTC))
    settings = Leaderboard(boto3.Session(), stack=STACK).settings
    # the tables are always the stack's own: a published table name never redirects a client
    assert settings == Settings.for_stack(STACK, write_shards=5)


# ------------------------------------------------------------------------------------------------------ the CLI
def boards_json(*args):
    result = cli(*args, "boards", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_every_cli_command_uses_the_published_settings_unless_a_p_says_otherwise(moto):
    assert cli("--stack", STACK, "-p", "Periods=hour,day", "-p", "WriteShards=7", "init").exit_code == 0
    # A command given only the stack uses the published periods; a -p given on its command line wins
    assert boards_json("--stack", STACK)["periods"] == ["hour", "day"]
    assert boards_json("--stack", STACK, "-p", "Periods=week")["periods"] == ["week"]
    # record writes on the stack's 7 shards, keyed by its hour (one clock for the commands: the hour cannot turn)
    clock = FixedClock(datetime.now(UTC))
    assert cli("--stack", STACK, "record", "a", "-n", "5", clock=clock).exit_code == 0
    counters = deployed_pipeline().views.scan_counters_all()
    assert {shard for _, _, shard, _, _ in counters} <= set(range(7))
    assert {bucket for _, bucket, _, _, _ in counters} == {bucket_of("hour", clock())}
    # process and snapshot run the functions with the stack's settings: the hour board exists and is exact
    assert cli("--stack", STACK, "process", "--drain", clock=clock).exit_code == 0
    assert cli("--stack", STACK, "snapshot", clock=clock).exit_code == 0
    hour = json.loads(cli("--stack", STACK, "top", "--period", "hour", "--json", clock=clock).output)
    assert [(e["id"], e["views"]) for e in hour["items"]] == [("a", 5)]


def test_init_again_keeps_what_was_published_and_changes_what_a_p_says(moto):
    assert cli("--stack", STACK, "-p", "Periods=hour,day", "-p", "WriteShards=7", "init").exit_code == 0
    again = cli("--stack", STACK, "init")
    assert again.exit_code == 0
    assert "settings: published (write shards 7; periods all, hour, day)" in again.output
    assert cli("--stack", STACK, "-p", "WriteShards=9", "init").exit_code == 0
    variables = read_published(boto3.client("dynamodb", region_name="us-east-1"), f"{STACK}-board").published
    assert variables is not None
    assert (variables.variables["WRITE_SHARDS"], variables.variables["PERIODS"]) == ("9", "hour,day")


def test_a_cli_command_on_a_stack_that_published_nothing_warns_in_one_line(moto):
    create_tables(boto3.client("dynamodb", region_name="us-east-1"), Template.load(stack=STACK))
    result = CliRunner().invoke(main, ["--stack", STACK, "boards", "--json"], catch_exceptions=False)
    assert result.exit_code == 0
    (warning,) = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warning.startswith(f"shardboard: warning: stack {STACK}: {STACK}-board holds no published settings")
    assert json.loads(result.stdout)["periods"] == ["day", "week", "month"]


def test_a_stack_not_created_yet_is_not_warned_about_by_init(moto):
    result = CliRunner().invoke(main, ["--stack", STACK, "init"], catch_exceptions=False)
    assert result.exit_code == 0 and "warning" not in result.stderr


# ---------------------------------------------------------------------------------- the deploy's custom resource
class _CloudFormation(BaseHTTPRequestHandler):
    """The pre-signed URL a custom resource answers: keeps each PUT's JSON body."""

    answers: list[dict] = []

    def do_PUT(self):
        length = int(self.headers["Content-Length"])
        type(self).answers.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_):
        pass


@pytest.fixture
def cloudformation():
    _CloudFormation.answers = []
    server = HTTPServer(("127.0.0.1", 0), _CloudFormation)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/answer", _CloudFormation.answers
    server.shutdown()
    server.server_close()


def custom_resource_event(url, request_type, parameters=DEPLOYED, stack=STACK):
    """What CloudFormation sends the StackConfig function for a deploy with ``parameters``: the template's own
    StackConfig properties, resolved as CloudFormation resolves them."""
    template = Template.load(ROOT / "template.yaml", parameters, stack)
    # (less the ServiceToken, a !GetAtt of the function: not resolvable here, and not the function's business)
    declared = {k: v for k, v in template.body["Resources"]["StackConfig"]["Properties"].items() if k != "ServiceToken"}
    properties = template.resolve(declared)
    return {
        "RequestType": request_type,
        "ResponseURL": url,
        "StackId": f"arn:aws:cloudformation:us-east-1:000000000000:stack/{stack}/1",
        "RequestId": "r-1",
        "LogicalResourceId": "StackConfig",
        "ResourceType": "Custom::StackConfig",
        "ResourceProperties": properties,
    }


def test_a_deploy_publishes_what_its_functions_run_with(moto, cloudformation):
    url, answers = cloudformation
    create_tables(boto3.client("dynamodb", region_name="us-east-1"), Template.load(stack=STACK))
    functions = deployed_pipeline()
    # When CloudFormation creates the StackConfig resource of a stack deployed with Periods=hour,day WriteShards=7
    stack_config.handler(custom_resource_event(url, "Create"), LocalContext())
    # Then it heard SUCCESS, and a client given only the stack gets exactly the functions' settings
    assert [a["Status"] for a in answers] == ["SUCCESS"]
    assert answers[0]["PhysicalResourceId"] == f"{STACK}-board/stack#config"
    client = Leaderboard(boto3.Session(), stack=STACK).settings
    # (write concurrency is each process's own tuning, not published)
    assert client == replace(functions.settings, write_concurrency=Settings().write_concurrency)
    assert (client.write_shards, client.periods) == (7, ("hour", "day"))
    assert published_item()["published_by"] == {"S": "deploy"}


def test_a_deploy_with_a_setting_the_functions_refuse_fails_and_publishes_nothing(moto, cloudformation):
    url, answers = cloudformation
    create_tables(boto3.client("dynamodb", region_name="us-east-1"), Template.load(stack=STACK))
    event = custom_resource_event(url, "Create")
    event["ResourceProperties"]["Settings"]["SNAPSHOT_SCHEDULE"] = "every minute"
    stack_config.handler(event, LocalContext())
    assert [a["Status"] for a in answers] == ["FAILED"]
    assert "ConfigError: schedule 'every minute' is not a valid EventBridge schedule" in answers[0]["Reason"]
    assert published_item() is None


def test_a_rollback_publishes_the_previous_settings_and_a_delete_keeps_them(moto, cloudformation):
    url, answers = cloudformation
    create_tables(boto3.client("dynamodb", region_name="us-east-1"), Template.load(stack=STACK))
    deployed_pipeline()
    stack_config.handler(custom_resource_event(url, "Update", {"WriteShards": "9"}), LocalContext())
    stack_config.handler(custom_resource_event(url, "Update"), LocalContext())  # the rollback: previous properties
    assert Leaderboard(boto3.Session(), stack=STACK).settings.write_shards == 7
    stack_config.handler(custom_resource_event(url, "Delete"), LocalContext())
    assert [a["Status"] for a in answers] == ["SUCCESS"] * 3
    assert published_item()["settings"]["M"]["WRITE_SHARDS"] == {"S": "7"}
