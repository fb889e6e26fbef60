"""`shardboard verify` on the heads (issue 35): a head behind its counts is "refreshing" for the refresh interval plus
the aggregation window (exit 0), then "stale" (exit 1), at once when its refreshes fail; counts behind the views
table say that the stream has not been processed and what to run."""

from __future__ import annotations

import json
import time

import boto3

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.keys import DIRTY_SINCE, threshold_pk
from shardboard.settings import DEFAULT_STACK, table_name
from tests.integration.test_cli import cli  # noqa: F401 - the fixture


def board() -> BoardStore:
    return BoardStore(boto3.client("dynamodb", region_name="us-east-1"), table_name(DEFAULT_STACK, "board"))


def behind(cli):  # noqa: F811
    """A stack whose heads were refreshed, then more views aggregated and no refresh since."""
    cli("init")
    cli("record", "a", "-n", "3")
    cli("record", "b", "-n", "2")
    cli("process", "--drain")
    cli("snapshot")
    cli("record", "b", "-n", "5")
    cli("process", "--drain")


def test_counts_behind_the_views_table_say_what_to_run(cli):  # noqa: F811
    # Given views recorded and not aggregated yet
    cli("init")
    cli("record", "a", "b", "-n", "2")
    # When verify runs
    result = cli("verify")
    # Then it says the stream has not been processed and what to run, and exits 1
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "verify: behind the stream" in text and "shardboard process --drain" in text
    assert json.loads(cli("verify", "--json").output)["counts_behind"] is True


def test_a_head_behind_for_less_than_the_interval_is_refreshing_and_passes(cli):  # noqa: F811
    # Given heads behind counts that changed just now
    behind(cli)
    # When verify runs
    result = cli("verify")
    report = json.loads(cli("verify", "--json").output)
    # Then every inexact head is refreshing, and verify passes
    assert result.exit_code == 0, result.output
    assert report["heads_behind"] and {lag["state"] for lag in report["heads_behind"]} == {"refreshing"}
    assert "refreshing: behind its counts since" in " ".join(result.output.split())


def test_a_head_behind_for_longer_is_stale_and_verify_exits_1(cli):  # noqa: F811
    # Given heads whose counts have waited an hour for a refresh
    behind(cli)
    table = board()
    hour_ago = int(time.time()) - 3600
    for status in table.changed_periods():
        table.client.update_item(
            TableName=table.table,
            Key={"pk": {"S": threshold_pk(*status.period)}},
            UpdateExpression="SET #since = :t",
            ExpressionAttributeNames={"#since": DIRTY_SINCE},
            ExpressionAttributeValues={":t": {"N": str(hour_ago)}},
        )
    # When verify runs
    result = cli("verify")
    report = json.loads(cli("verify", "--json").output)
    # Then they are stale since then, named, and verify exits 1
    assert result.exit_code == 1
    stale = [lag for lag in report["heads_behind"] if lag["state"] == "stale"]
    assert stale and report["exact"] is False
    assert {lag["since"] for lag in stale} == {time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(hour_ago))}
    assert "global all" in {lag["head"] for lag in stale}
    assert "stale: behind its counts since" in " ".join(result.output.split())


def test_a_head_whose_refreshes_fail_is_stale_at_once(cli):  # noqa: F811
    # Given heads behind their counts, and the all-time head's last two refreshes failed
    behind(cli)
    table = board()
    everything = next(s.period for s in table.changed_periods() if s.period.kind == "all")
    first = int(time.time()) - 5
    assert table.mark_failed(everything, first) == 1
    assert table.mark_failed(everything, first + 2) == 2
    # When verify runs
    result = cli("verify")
    report = json.loads(cli("verify", "--json").output)
    # Then that head is stale, unwritable since its first failure, and verify exits 1
    assert result.exit_code == 1
    (lag,) = [lag for lag in report["heads_behind"] if lag["head"] == "global all"]
    assert (lag["state"], lag["failures"]) == ("stale", 2)
    assert lag["since"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(first))
    assert "unwritable since" in " ".join(result.output.split())
    # And a refresh that succeeds ends it
    cli("snapshot")
    assert cli("verify").exit_code == 0
    assert table.thresholds([everything])[everything].failures == 0
