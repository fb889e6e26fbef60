"""The one decoder of base-table stream records: a Lambda stream record becomes a domain ``ViewRecord``."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from shardboard.adapters.dynamodb import Item
from shardboard.adapters.keys import (
    BOARD_COUNTER_PREFIX,
    BUCKET,
    IDEMPOTENCY_PREFIX,
    ITEM_ID,
    PK,
    RATE_PREFIX,
    SEEN_PREFIX,
    SHARD,
    VIEWS,
    WRITERS_PK,
    view_pk,
)
from shardboard.domain.aggregating.batch import CounterStep, ViewRecord
from shardboard.domain.aggregating.countable import board_of
from shardboard.domain.boards import GLOBAL_BOARD


class UnexpectedRecord(ValueError):
    """A stream record that is not a base view counter update; ``reason`` names the metric dimension."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


# Items the views table keeps beside the counters (the stream filter drops their records): why each is no counter.
_BESIDE_COUNTERS = {
    SEEN_PREFIX: ("dedupe_marker", "a viewer's dedupe marker, not a counter (the stream filter drops it)"),
    RATE_PREFIX: ("rate_allowance", "a client's rate-limit allowance, not a counter (the stream filter drops it)"),
    IDEMPOTENCY_PREFIX: ("idempotency_key", "an Idempotency-Key's marker, not a counter (the stream filter drops it)"),
    WRITERS_PK: ("writer_registry", "the retry-safe writers' registry, not a counter (the stream filter drops it)"),
}


def _refuse_beside_counters(pk: str) -> None:
    for prefix, (reason, detail) in _BESIDE_COUNTERS.items():
        if pk.startswith(prefix):
            raise UnexpectedRecord(reason, detail)


def view_records(
    event_name: str | None, new_image: Mapping[str, Any] | None, old_image: Mapping[str, Any] | None
) -> list[ViewRecord]:
    """Read a base-table stream record (images already deserialized) as its changed counters, or raise
    UnexpectedRecord. ``views`` is the global board's counter; ``b:<name>`` a category board's."""
    if event_name == "REMOVE":
        raise UnexpectedRecord("remove", "base counters are never deleted; a REMOVE changes no count")
    if event_name not in ("INSERT", "MODIFY"):
        raise UnexpectedRecord("unknown_event", f"event name {event_name!r}")
    if not new_image:
        raise UnexpectedRecord("missing_image", "no NewImage (the stream must be NEW_AND_OLD_IMAGES)")
    _refuse_beside_counters(str(new_image.get(PK, "")))
    item_id, shard, bucket = new_image.get(ITEM_ID), _whole(new_image.get(SHARD)), new_image.get(BUCKET)
    if not isinstance(item_id, str) or shard is None or not isinstance(bucket, str):
        raise UnexpectedRecord("missing_attribute", f"NewImage lacks a valid {ITEM_ID}/{SHARD}/{BUCKET}")
    if new_image.get(PK) != view_pk(item_id, shard, bucket):
        raise UnexpectedRecord("foreign_key", f"pk {new_image.get(PK)!r} is not a view counter key")
    if event_name == "MODIFY" and old_image is None:
        raise UnexpectedRecord("missing_image", "MODIFY without OldImage (the stream must be NEW_AND_OLD_IMAGES)")
    steps = []
    for name, value in new_image.items():
        board = _board_of(name)
        if board is None:
            continue
        new = _whole(value)
        old = _whole(old_image.get(name, 0)) if event_name == "MODIFY" and old_image is not None else 0
        if new is None or old is None:
            raise UnexpectedRecord("missing_attribute", f"counter {name!r} is not a whole number")
        if new > old:
            steps.append(ViewRecord(board, item_id, bucket, shard, old, new))
    if VIEWS not in new_image:
        raise UnexpectedRecord("missing_attribute", f"NewImage lacks {VIEWS}")
    return steps


def _board_of(name: str) -> str | None:
    """The board a NewImage attribute counts on (None: it is no counter)."""
    if name == VIEWS:
        return GLOBAL_BOARD
    return board_of(name[len(BOARD_COUNTER_PREFIX) :]) if _is_counter(name) else None


def _is_counter(name: str) -> bool:
    # ``b:`` alone too: its empty board name is the aggregator's to refuse and count (domain/aggregating/countable.py).
    return name.startswith(BOARD_COUNTER_PREFIX)


def stream_view_records(record: Mapping[str, Any]) -> list[ViewRecord]:
    """A raw Lambda stream record (wire-format images) as its changed counters, or raise UnexpectedRecord."""
    return [ViewRecord._make(step) for step in counter_steps(record)]


def counter_steps(record: Mapping[str, Any]) -> list[CounterStep]:
    """``stream_view_records`` as plain tuples (board, item id, bucket, write shard, OLD, NEW), for the aggregator.

    Its hottest call: a record as this table writes it is read with a handful of lookups, and anything else takes
    the careful path (``stream_image`` + ``view_records``), which gives the precise reason.
    """
    try:
        stream = record["dynamodb"]
        new_image = stream["NewImage"]
        item_id, shard, bucket = new_image[ITEM_ID]["S"], new_image[SHARD]["N"], new_image[BUCKET]["S"]
        event_name = record["eventName"]
        old_image = stream["OldImage"] if event_name == "MODIFY" else _EMPTY
        # isdigit: DynamoDB's canonical whole numbers only (int() alone would take "-1", " 1" or "1_0").
        if event_name in ("INSERT", "MODIFY") and type(item_id) is str and type(bucket) is str and shard.isdigit():
            number = int(shard)
            # view_pk's key, spelled out: a call per record costs more than the formatting.
            if new_image[PK]["S"] == f"view#{number}#{bucket}#{item_id}":
                if len(new_image) == _GLOBAL_ONLY:  # the key attributes and the global counter: one counter to read
                    text, before = new_image[VIEWS]["N"], old_image[VIEWS]["N"] if VIEWS in old_image else "0"
                    if text.isdigit() and before.isdigit():
                        count, prior = int(text), int(before)
                        # Plain tuples: a NamedTuple costs four times as much to build (one per counter per record).
                        return [(GLOBAL_BOARD, item_id, bucket, number, prior, count)] if count > prior else []
                else:
                    steps = _board_steps(new_image, old_image, item_id, bucket, number)
                    if VIEWS in new_image:
                        return steps
    except (KeyError, TypeError, AttributeError):
        pass
    stream = record.get("dynamodb")
    if not isinstance(stream, dict):
        raise UnexpectedRecord("malformed", "record has no dynamodb section")
    new_image = stream_image(stream.get("NewImage"))
    old_image = stream_image(stream.get("OldImage"), counters_only=True)
    return list(view_records(record.get("eventName"), new_image, old_image))


def _board_steps(
    new_image: Mapping[str, Any], old_image: Mapping[str, Any], item_id: str, bucket: str, number: int
) -> list[CounterStep]:
    """The fast path's steps of a record that counts on category boards too: one per counter that grew; raises
    KeyError (or TypeError, AttributeError) for anything the careful path must read instead."""
    steps: list[CounterStep] = []
    for name, value in new_image.items():
        if name == VIEWS:
            board = GLOBAL_BOARD
        elif name.startswith(BOARD_COUNTER_PREFIX):
            board = board_of(name[2:])
        else:
            continue
        text, before = value["N"], old_image[name]["N"] if name in old_image else "0"
        if not (text.isdigit() and before.isdigit()):
            raise KeyError(name)
        count, prior = int(text), int(before)
        if count > prior:
            steps.append((board, item_id, bucket, number, prior, count))
    return steps


_EMPTY: Mapping[str, Any] = {}
# A NewImage of exactly these attributes counts on the global board alone: the fast path reads one counter.
_GLOBAL_ONLY = len({PK, ITEM_ID, SHARD, BUCKET, VIEWS})


def stream_image(image: Mapping[str, Any] | None, counters_only: bool = False) -> Item | None:
    """The attributes ``view_records`` reads, from a stream record's wire-format image ({"N": "5"} -> 5).

    Deserializing only these attributes, not the whole image, was most of the aggregator's CPU per record.
    A value of an unexpected type is left out, so ``view_records`` reports it as ``missing_attribute``.
    """
    if image is None or not isinstance(image, Mapping):
        return None
    names = [name for name in image if name == VIEWS or _is_counter(name)]
    if not counters_only:
        names += [PK, ITEM_ID, SHARD, BUCKET]
    plain: Item = {}
    for name in names:
        value = image.get(name)
        if isinstance(value, dict):  # a concrete type check: an ABC check costs more than the rest together
            text = value.get("S")
            if isinstance(text, str):
                plain[name] = text
                continue
            text = value.get("N")
            if isinstance(text, str):
                plain[name] = int(text) if text.isdigit() else Decimal(text)
    return plain


def _whole(value: Any) -> int | None:
    """A non-negative whole number as the deserializer yields it (Decimal) or as Python int; else None."""
    if type(value) is int:  # the common case (stream_image yields ints; bool is not int here): no generic checks
        return value if value >= 0 else None
    try:
        if value is None or isinstance(value, bool) or value < 0 or int(value) != value:
            return None
        return int(value)
    except (TypeError, ValueError, ArithmeticError):
        return None
