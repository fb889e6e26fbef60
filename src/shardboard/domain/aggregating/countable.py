"""What the aggregator and the repair tools count: a base counter whose item id and board name the API itself would
take, in an anchor bucket every period computation can hold. Anything else in the views table was not written by
shardboard (or was written before a rule): it is skipped and counted, never applied and never a failure
(docs/bad-input.md, "Stream records").

The id and board rules are the API's own (domain/validation.py), called, not copied: a record is trusted no more
than a request.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from shardboard.domain.boards import GLOBAL_BOARD
from shardboard.domain.errors import BadInput
from shardboard.domain.periods import PeriodError, is_bucket, next_bucket, previous_bucket
from shardboard.domain.policy import Periods
from shardboard.domain.ports import PeriodKey
from shardboard.domain.validation import board_name, item_id

# The reasons a counter is skipped (the `reason` of a `stream record skipped` log line, a repair tool's line).
INVALID_ID = "invalid_id"
INVALID_BOARD = "invalid_board"
FOREIGN_BUCKET = "foreign_bucket"
OUT_OF_RANGE = "out_of_range"
# What a ``b:global`` attribute decodes as: the global board's counter is ``views``, so a ``b:global`` counter (never
# written by shardboard) would count that board twice. A name the board rule refuses, so nothing the API takes is it.
GLOBAL_TWIN = "#global"
# Distinct ids and board names whose verdict a warm container keeps: hot ids repeat batch after batch, and the rules
# walk every character of an id (a lookup costs a tenth of that).
_VERDICTS_KEPT = 16_384


class Refusal(NamedTuple):
    """Why a counter is not counted: one of the reasons above, and a message naming the value."""

    reason: str
    detail: str


@functools.lru_cache(maxsize=_VERDICTS_KEPT)
def id_refusal(value: str) -> Refusal | None:
    """None when ``value`` is an id a view may name (``validation.item_id``), else why not."""
    try:
        item_id(value)
    except BadInput as error:
        return Refusal(INVALID_ID, f"{value!r}: {error}")
    return None


@functools.lru_cache(maxsize=_VERDICTS_KEPT)
def board_refusal(value: str) -> Refusal | None:
    """None when ``value`` is a category board a view may name (``validation.board_name``), else why not."""
    if value == GLOBAL_TWIN:
        return Refusal(INVALID_BOARD, f"counter b:{GLOBAL_BOARD}: the {GLOBAL_BOARD} board's counter is views")
    try:
        board_name(value)
    except BadInput as error:
        return Refusal(INVALID_BOARD, f"counter b:{value}: {error}")
    return None


def bucket_refusal(periods: Periods, bucket: str) -> Refusal | None:
    """None when ``bucket`` is an anchor bucket of ``periods`` whose periods, the bucket before it and the one after
    it all exist (the first and last days a date holds, 0001-01-01 and 9999-12-31, have no neighbour on one side:
    counting them would raise in the middle of a batch), else why not."""
    anchor, half_life = periods.anchor, periods.half_life_hours
    if not is_bucket(anchor, bucket, half_life=half_life):
        return Refusal(FOREIGN_BUCKET, f"{bucket!r} is not a {anchor} bucket")
    try:
        previous_bucket(anchor, bucket, half_life=half_life)
        next_bucket(anchor, bucket, half_life=half_life)
        for kind in periods.kinds:
            periods.expires(PeriodKey(GLOBAL_BOARD, kind, periods.bucket(kind, bucket)))
            periods.increment(kind, bucket, 1)
    except (PeriodError, OverflowError, ValueError):
        return Refusal(OUT_OF_RANGE, f"{bucket!r} is the first or last {anchor} a date can hold: no period around it")
    return None


def board_of(name: str) -> str:
    """The board a category counter (``b:<name>``) counts on: its name as written, ``GLOBAL_TWIN`` for ``global``.
    The aggregator then checks it with :func:`board_refusal`."""
    return GLOBAL_TWIN if name == GLOBAL_BOARD else name
