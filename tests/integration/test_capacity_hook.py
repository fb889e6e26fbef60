"""The capacity hook throttles a real boto3 client with DynamoDB's errors, through botocore's retries.

The engine is moto's server over HTTP on a free loopback port, as DynamoDB Local would be: moto's in-process stub
would also execute a request the hook refused (botocore calls every before-send handler).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.dynamodb import dynamodb_client, throttle_scope
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.aggregating.batch import ShardMove
from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard_tools.capacity import PARTITION_THROTTLED, CapacityEmulator, Limits, VirtualClock
from shardboard_tools.capacity.hook import attach, install_from_env, uninstall
from shardboard_tools.capacity.schema import TableSchema
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.template import create_tables
from tests.conftest import ROOT


@pytest.fixture
def pipeline(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{server._server.server_port}"
        monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
        runtime = Runtime.from_template(ROOT / "template.yaml")
        create_tables(runtime.dynamodb, runtime.template)
        yield SimpleNamespace(runtime=runtime, settings=runtime.settings)
    finally:
        server.stop()


def schemas(pipeline: Any) -> dict[str, TableSchema]:
    requests = pipeline.runtime.template.create_table_requests().values()
    return {r["TableName"]: TableSchema.from_create_table(r) for r in requests}


def test_a_hot_key_is_throttled_after_botocore_retries(pipeline):
    # Given a client with two attempts per call, throttled on a virtual clock that does not move
    client = dynamodb_client(Config(retries={"mode": "standard", "total_max_attempts": 2}))
    # (a 50-unit partition limit keeps the test short; the default is DynamoDB's 1,000)
    emulator = CapacityEmulator(VirtualClock(), Limits(partition_write_units=50))
    attach(client, schemas(pipeline), emulator)
    views = ViewStore(client, pipeline.settings.views_table, clock=pipeline.runtime.clock)
    # When one write shard of one item takes its limit of views in one simulated second
    for _ in range(50):
        views.add_view("viral.jpg", 0)
    # Then the next view fails with DynamoDB's code after botocore retried it, as the domain's Throttled outcome
    with pytest.raises(Throttled) as refused:
        views.add_view("viral.jpg", 0)
    assert refused.value.scope is ThrottleScope.PARTITION
    error = refused.value.__cause__
    assert isinstance(error, ClientError)
    assert error.response["Error"]["Code"] == PARTITION_THROTTLED
    assert error.response["ResponseMetadata"]["RetryAttempts"] == 1
    assert error.response["ThrottlingReasons"][0]["reason"] == "TableWriteKeyRangeThroughputExceeded"
    assert throttle_scope(error) is ThrottleScope.PARTITION
    assert emulator.usage.throttled_requests == 2
    # And another write shard of the same item is not affected (the point of write sharding)
    views.add_view("viral.jpg", 1)
    assert views.item_total("viral.jpg", 2) == 51


def test_writes_are_priced_from_the_item_and_its_index_entry(pipeline):
    # Given the hook on the board table
    client = dynamodb_client()
    emulator = CapacityEmulator(VirtualClock())
    attach(client, schemas(pipeline), emulator)
    board = BoardStore(client, pipeline.settings.board_table)
    index = f"{pipeline.settings.board_table}/by-deep"  # all time's
    # When an aggregate is created outside the index, then joins it, then its views move inside their bucket
    board.move("global", "a", "all", [ShardMove(0, 0, 3)], kinds=(), joins={})
    assert emulator.usage.units("write", index) == 0
    board.join_index("global", "a", {"all": "global#10#1"}, {"all": 0})
    assert emulator.usage.units("write", index) == 1
    board.move("global", "a", "all", [ShardMove(0, 3, 5)], kinds=(), joins={"all": "global#10#1"}, buckets={"all": 0})
    assert emulator.usage.units("write", index) == 1
    # Then raising the bucket (the sort key) costs a delete and a put on the GSI key
    board.move("global", "a", "all", [ShardMove(0, 5, 20)], kinds=(), joins={})
    board.join_index("global", "a", {"all": "global#10#1"}, {"all": 1})
    assert emulator.usage.units("write", index) == 3
    assert emulator.usage.peak("write").units >= 1
    # And a query is booked on the index partition it read
    rows, _ = board.query_shard("all", "global#10#1", 10, None)
    assert [(row.item_id, row.sort) for row in rows] == [("a", 1)]
    assert emulator.usage.units("read", index) >= 0.5


def test_install_from_env_is_opt_in(pipeline, monkeypatch):
    requests = pipeline.runtime.template.create_table_requests()
    monkeypatch.delenv("SHARDBOARD_EMULATE_CAPACITY", raising=False)
    assert install_from_env(requests) is None
    monkeypatch.setenv("SHARDBOARD_EMULATE_CAPACITY", "1")
    hook = install_from_env(requests)
    assert hook is not None
    try:
        # Every client created afterwards from boto3's default session is priced
        ViewStore(dynamodb_client(), pipeline.settings.views_table, clock=pipeline.runtime.clock).add_view("x", 0)
        assert hook.emulator.usage.units("write") == 1
    finally:
        uninstall()
    assert install_from_env(requests) is not hook  # uninstalled: a new one would be made
    uninstall()
