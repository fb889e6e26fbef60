"""The one decoder of base-table stream records: a Lambda stream record becomes a domain ``ViewRecord``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from shardboard.adapters.dynamodb import Item
from shardboard.adapters.keys import ITEM_ID, PK, SHARD, VIEWS, view_pk
from shardboard.domain.batch import ViewRecord


class UnexpectedRecord(ValueError):
    """A stream record that is not a base view counter update; ``reason`` names the metric dimension."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def view_record(
    event_name: str | None,
    new_image: Mapping[str, Any] | None,
    old_image: Mapping[str, Any] | None,
    sequence_number: str,
) -> ViewRecord:
    """Read a base-table stream record (images already deserialized) as a counter step, or raise UnexpectedRecord."""
    if event_name == "REMOVE":
        raise UnexpectedRecord("remove", "base counters are never deleted; a REMOVE changes no count")
    if event_name not in ("INSERT", "MODIFY"):
        raise UnexpectedRecord("unknown_event", f"event name {event_name!r}")
    if not new_image:
        raise UnexpectedRecord("missing_image", "no NewImage (the stream must be NEW_AND_OLD_IMAGES)")
    item_id, shard, new = new_image.get(ITEM_ID), _whole(new_image.get(SHARD)), _whole(new_image.get(VIEWS))
    if not isinstance(item_id, str) or shard is None or new is None:
        raise UnexpectedRecord("missing_attribute", f"NewImage lacks a valid {ITEM_ID}/{SHARD}/{VIEWS}")
    if new_image.get(PK) != view_pk(item_id, shard):
        raise UnexpectedRecord("foreign_key", f"pk {new_image.get(PK)!r} is not a view counter key")
    if event_name == "INSERT":
        old = 0
    elif old_image is None:
        raise UnexpectedRecord("missing_image", "MODIFY without OldImage (the stream must be NEW_AND_OLD_IMAGES)")
    else:
        old_views = _whole(old_image.get(VIEWS, 0))
        if old_views is None:
            raise UnexpectedRecord("missing_attribute", "OldImage views is not a whole number")
        old = old_views
    return ViewRecord(item_id, shard, old, new, sequence_number)


def stream_view_record(record: Mapping[str, Any]) -> ViewRecord:
    """A raw Lambda stream record (wire-format images) as a counter step, or raise UnexpectedRecord.

    The aggregator's hottest call: a record as this table writes it is read with a handful of lookups, and anything
    else takes the careful path (``stream_image`` + ``view_record``), which gives the precise reason.
    """
    try:
        stream = record["dynamodb"]
        new_image = stream["NewImage"]
        item_id, shard, new = new_image[ITEM_ID]["S"], new_image[SHARD]["N"], new_image[VIEWS]["N"]
        event_name = record["eventName"]
        old = stream["OldImage"][VIEWS]["N"] if event_name == "MODIFY" else "0"
        # isdigit: DynamoDB's canonical whole numbers only (int() alone would take "-1", " 1" or "1_0").
        if (
            event_name in ("INSERT", "MODIFY")
            and type(item_id) is str
            and shard.isdigit()
            and new.isdigit()
            and old.isdigit()
            and new_image[PK]["S"] == view_pk(item_id, int(shard))
        ):
            return ViewRecord(item_id, int(shard), int(old), int(new), str(stream.get("SequenceNumber") or ""))
    except (KeyError, TypeError, AttributeError):
        pass
    stream = record.get("dynamodb")
    if not isinstance(stream, dict):
        raise UnexpectedRecord("malformed", "record has no dynamodb section")
    return view_record(
        record.get("eventName"),
        stream_image(stream.get("NewImage")),
        stream_image(stream.get("OldImage"), (VIEWS,)),  # only the previous count is read from OldImage
        str(stream.get("SequenceNumber") or ""),
    )


def stream_image(image: Mapping[str, Any] | None, names: Sequence[str] = (PK, ITEM_ID, SHARD, VIEWS)) -> Item | None:
    """The attributes ``view_record`` reads, from a stream record's wire-format image ({"N": "5"} -> 5).

    Deserializing only these attributes, not the whole image, was most of the aggregator's CPU per record.
    A value of an unexpected type is left out, so ``view_record`` reports it as ``missing_attribute``.
    """
    if image is None:
        return None
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
