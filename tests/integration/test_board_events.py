"""Board events through the real snapshot function on moto (docs/events.md): on an EventBridge bus (a rule's SQS
target reads them back), once per change of the top N, the same ids again after a failed publish, a takedown's
changes, and a period's closed event."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import boto3
import pytest

from shardboard.adapters.dynamodb import dynamodb_client
from shardboard.domain.periods import DAY, bucket_of, start_of
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.events import head_events
from shardboard.handlers import wiring
from shardboard.services.stores import Container
from shardboard_tools.local.events import MemoryEvents
from tests.integration.test_http_api import call
from tests.integration.test_takedowns_http import drain, record, takedown

BUS = "board-events"
EVERYTHING = PeriodKey("global", "all", "all")


def changes(details: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(detail["type"], detail.get("item")) for detail in details]


def with_events(pipeline, events: MemoryEvents | None = None, **settings: Any) -> Container:
    """Hand the functions a container (a fresh one: what a new Lambda container knows) with these events."""
    stores = Container(replace(pipeline.settings, **settings), dynamodb_client(), events)
    wiring.use(stores)
    return stores


@pytest.fixture
def board(make_pipeline):
    return make_pipeline(TopN="2", SnapshotSpare="1", RankDepth="0", Periods="")


@pytest.fixture
def queue(board) -> Any:
    """A bus, and a rule sending every shardboard event on it to a queue: what a consumer reads."""
    events, sqs = boto3.client("events"), boto3.client("sqs")
    events.create_event_bus(Name=BUS)
    url = sqs.create_queue(QueueName="board-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="all", EventBusName=BUS, EventPattern=json.dumps({"source": ["shardboard"]}))
    events.put_targets(Rule="all", EventBusName=BUS, Targets=[{"Id": "queue", "Arn": arn}])

    def received() -> list[dict[str, Any]]:
        found = []
        while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
            for message in messages:
                found.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return found

    return received


def test_each_run_puts_the_changes_of_its_top_n_on_the_bus_once(board, queue):
    # Given the snapshot function told the bus by its settings (EventBusName)
    with_events(board, event_bus=BUS)
    record(board, {"a": 5, "b": 4, "c": 3})
    drain(board)
    # When the job runs: a and b entered the top 2
    assert board.snapshot()["events"] == 2
    first = queue()
    assert changes([event["detail"] for event in first]) == [("entered", "a"), ("entered", "b")]
    assert {(e["source"], e["detail-type"]) for e in first} == {("shardboard", "Item entered top N")}
    # When c climbs past both and the job runs again: b left (ranked 3rd), c entered
    record(board, {"c": 7}, seed=8)
    drain(board)
    board.snapshot()
    second = [event["detail"] for event in queue()]
    assert changes(second) == [("left", "b"), ("entered", "c")]
    assert (second[0]["rank"], second[0]["previous_rank"], second[1]["views"]) == (3, 2, 10)
    # And a run that changes nothing publishes nothing
    assert board.snapshot()["events"] == 0
    assert queue() == []
    # And every id is new
    ids = [event["detail"]["id"] for event in first] + [detail["id"] for detail in second]
    assert len(set(ids)) == 4


def test_a_run_that_dies_before_its_publish_is_published_by_the_next_under_the_same_ids(board):
    events = MemoryEvents()
    stores = with_events(board, events)
    record(board, {"a": 5, "b": 4, "c": 3})
    drain(board)
    # Given a run whose head is written but whose publish fails (the bus refuses, or the function dies there)
    events.fail_next = 1
    with pytest.raises(ConnectionError):
        board.snapshot()
    head = stores.board.get_snapshot(EVERYTHING, consistent=True)
    assert head is not None and events.events == []
    # Then the period stays marked for the next run
    assert EVERYTHING in {status.period for status in stores.board.changed_periods()}
    # When the next run finds the head unchanged, it publishes the stored head's events: the ids derived from it
    board.snapshot()
    expected = [event.id for event in head_events(head, 2)]
    assert [event.id for event in events.events] == expected
    # And the container remembers: a third run publishes nothing
    board.snapshot()
    assert len(events.events) == 2
    # And a fresh container (a cold start) announces the latest head once more, under the same ids
    fresh = MemoryEvents()
    with_events(board, fresh)
    board.snapshot()
    assert [event.id for event in fresh.events] == expected


def test_a_hidden_item_leaves_and_a_spare_enters_at_the_next_run(board):
    events = MemoryEvents()
    with_events(board, events)
    record(board, {"a": 5, "b": 4, "c": 3})
    drain(board)
    board.snapshot()
    # When a is hidden (the head is patched: c comes up from the spares) and the job runs
    status, _, _ = call(board, "items_admin", takedown("hide", "id=a"))
    assert status == 200
    board.snapshot()
    # Then a left and c entered
    assert changes([event.detail() for event in events.events]) == [
        ("entered", "a"),
        ("entered", "b"),
        ("left", "a"),
        ("entered", "c"),
    ]


def test_a_period_that_ended_gets_one_closed_event_with_its_final_top_n(make_pipeline):
    pipeline = make_pipeline(TopN="2", SnapshotSpare="1", RankDepth="0", Periods="day")
    events = MemoryEvents()
    stores = with_events(pipeline, events)
    record(pipeline, {"a": 5, "b": 4, "c": 3})
    drain(pipeline)
    pipeline.snapshot()
    today = pipeline.runtime.clock()
    tomorrow = start_of(DAY, today) + timedelta(days=1)
    before = len(events.events)
    announcer = stores.announcer
    assert announcer is not None
    # When the job runs in the day's last minutes: nothing closes
    assert announcer.close_ended(stores.board, tomorrow - timedelta(minutes=1)) == 0
    # When it runs just after midnight, twice: the day closes, once
    assert announcer.close_ended(stores.board, tomorrow + timedelta(seconds=30)) == 1
    assert announcer.close_ended(stores.board, tomorrow + timedelta(seconds=90)) == 0
    (closed,) = [event.detail() for event in events.events[before:]]
    assert closed["type"] == "closed" and closed["period"]["kind"] == DAY
    assert [entry["id"] for entry in closed["items"]] == ["a", "b"]
    assert closed["route"].startswith("/leaderboard?board=global&period=day&at=")
    assert bucket_of(DAY, today) in {event.bucket for event in events.events[before:]}
