"""The board events on an EventBridge bus (``PutEvents``): the snapshot job's ``EventSink`` (docs/events.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import boto3
from botocore.config import Config

from shardboard.adapters.dynamodb import region
from shardboard.domain.publishing.events import CLOSED, ENTERED, LEFT, BoardEvent

SOURCE = "shardboard"
# The detail-type a rule matches on, one per event type.
DETAIL_TYPES = {ENTERED: "Item entered top N", LEFT: "Item left top N", CLOSED: "Period closed"}
# PutEvents takes at most 10 entries and 256 KB a request.
BATCH_ENTRIES = 10
BATCH_BYTES = 256 * 1024
# Entries the bus refused (throttling, an internal error) are sent again this many times in all, backing off.
ATTEMPTS = 5
BACKOFF_SECONDS = 0.1


class EventsNotPublished(RuntimeError):
    """Some entries were still refused after every attempt (the job publishes them again on its next run)."""


def events_client(config: Config | None = None) -> Any:
    """An EventBridge client; ``AWS_ENDPOINT_URL_EVENTS`` points it at moto or LocalStack."""
    return boto3.client(
        "events",
        region_name=region(),
        config=config or Config(retries={"mode": "standard", "total_max_attempts": 5}, connect_timeout=5),
    )


def entry(event: BoardEvent, bus: str) -> dict[str, Any]:
    return {
        "Source": SOURCE,
        "DetailType": DETAIL_TYPES[event.type],
        "Detail": json.dumps(event.detail(), ensure_ascii=False, separators=(",", ":")),
        "EventBusName": bus,
    }


def entry_size(put: dict[str, Any]) -> int:
    """What PutEvents counts of an entry: its Source, DetailType and Detail in UTF-8 (no Time, no Resources)."""
    return sum(len(put[name].encode()) for name in ("Source", "DetailType", "Detail"))


def batches(entries: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Consecutive batches of at most BATCH_ENTRIES entries and BATCH_BYTES, in order."""
    found: list[list[dict[str, Any]]] = []
    size = 0
    for put in entries:
        if not found or len(found[-1]) == BATCH_ENTRIES or size + entry_size(put) > BATCH_BYTES:
            found.append([])
            size = 0
        found[-1].append(put)
        size += entry_size(put)
    return found


class EventBusSink:
    """Publishes to one bus, in order, batch by batch; an entry the response marks failed is sent again."""

    def __init__(self, client: Any, bus: str, sleep: Any = time.sleep) -> None:
        self.client = client
        self.bus = bus
        self.sleep = sleep

    def publish(self, events: Sequence[BoardEvent]) -> None:
        for batch in batches([entry(event, self.bus) for event in events]):
            self._put(batch)

    def _put(self, batch: list[dict[str, Any]]) -> None:
        pending = batch
        for attempt in range(ATTEMPTS):
            if attempt:
                self.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
            response = self.client.put_events(Entries=pending)
            if not response.get("FailedEntryCount"):
                return
            # The response's entries line up with the request's: the failed ones carry an ErrorCode.
            pending = [put for put, result in zip(pending, response["Entries"], strict=True) if "ErrorCode" in result]
        raise EventsNotPublished(f"{len(pending)} of {len(batch)} events refused by bus {self.bus!r}")
