"""The done-when line of issue 22 item 6 on DynamoDB Local, as a user runs it: `shardboard init` of a stack with
-p Periods=hour,day -p WriteShards=7, a ``Recorder(stack=...)`` given nothing else, then `shardboard process --drain`
and `shardboard snapshot` given only the stack: the views land exactly in its hour and day boards."""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner

from shardboard.adapters.dynamodb import dynamodb_client
from shardboard.adapters.views_table import ViewStore
from shardboard.settings import table_name
from shardboard_tools.cli import main
from tests.integration.test_stack_config_moto import (
    assert_exactly_in_the_hour_and_day_boards,
    record_with_only_the_stack,
)

pytestmark = pytest.mark.e2e


def shardboard(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_done_when_on_dynamodb_local(local_env):
    # Given a stack created from template.yaml with -p Periods=hour,day -p WriteShards=7, its settings published
    stack = f"e2e-{uuid.uuid4().hex[:8]}"
    assert "settings: published (write shards 7; periods all, hour, day)" in shardboard(
        "--stack", stack, "-p", "Periods=hour,day", "-p", "WriteShards=7", "init"
    )
    # When a Recorder built with only the stack records views
    record_with_only_the_stack(stack)
    # And the stream is drained and the snapshot job runs, each told only the stack
    assert "processed" in shardboard("--stack", stack, "process", "--drain")
    assert "global: all, hour, day refreshed" in shardboard("--stack", stack, "snapshot")
    # Then the keys used the stack's 7 write shards and its hour and day boards hold exactly those views
    counters = ViewStore(dynamodb_client(), table_name(stack, "views")).scan_counters_all()
    assert_exactly_in_the_hour_and_day_boards(stack, counters)
