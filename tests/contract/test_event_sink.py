"""The EventSink port on each implementation: in memory (tests), the JSON-lines file (`serve`, `demo`) and an
EventBridge bus on moto (a rule's queue reads it back). Each delivers every event, in order, with its detail whole."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from shardboard.adapters.event_bus import EventBusSink, events_client
from shardboard.domain.ports import EventSink
from shardboard.domain.publishing.events import head_events
from shardboard_tools.local.events import FileEvents, MemoryEvents
from tests.heads import head_of_pairs

Sink = tuple[EventSink, Callable[[], list[dict[str, Any]]]]


def on_moto() -> Iterator[Sink]:
    from moto import mock_aws

    with mock_aws():
        events, sqs = events_client(), boto3.client("sqs", region_name="us-east-1")
        events.create_event_bus(Name="bus")
        url = sqs.create_queue(QueueName="read")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        events.put_rule(Name="all", EventBusName="bus", EventPattern=json.dumps({"source": ["shardboard"]}))
        events.put_targets(Rule="all", EventBusName="bus", Targets=[{"Id": "q", "Arn": arn}])

        def read() -> list[dict[str, Any]]:
            found = []
            while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
                found += [json.loads(message["Body"])["detail"] for message in messages]
                sqs.delete_message_batch(
                    QueueUrl=url,
                    Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
                )
            return found

        yield EventBusSink(events, "bus"), read


@pytest.fixture(params=["memory", "file", "moto"])
def sinks(request: pytest.FixtureRequest, tmp_path) -> Iterator[Sink]:
    if request.param == "memory":
        memory = MemoryEvents()
        yield memory, memory.details
    elif request.param == "file":
        file = FileEvents(tmp_path / "events.jsonl")
        yield file, file.read
    else:
        yield from on_moto()


def test_publish_delivers_every_event_in_order_with_its_detail(sinks):
    sink, read = sinks
    # Given 23 events (more than one PutEvents batch)
    head = head_of_pairs([[f"item-{i:02d}", 100 - i] for i in range(23)])
    events = head_events(head, 23)
    # When they are published in two calls
    sink.publish(events[:5])
    sink.publish(events[5:])
    # Then each arrives once, in order, as its detail
    assert read() == [event.detail() for event in events]
