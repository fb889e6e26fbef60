"""What the aggregator counts (domain/aggregating/countable.py): the API's id and board rules, buckets in range."""

from __future__ import annotations

import pytest

from shardboard.domain.aggregating.countable import (
    FOREIGN_BUCKET,
    GLOBAL_TWIN,
    INVALID_BOARD,
    INVALID_ID,
    OUT_OF_RANGE,
    board_of,
    board_refusal,
    bucket_refusal,
    id_refusal,
)
from shardboard.domain.policy import Periods


@pytest.mark.parametrize(
    ("kinds", "bucket", "reason"),
    [
        (("day", "week", "month"), "2026-11-23", None),
        (("day", "week", "month"), "0001-01-02", None),
        (("day", "week", "month"), "0001-01-01", OUT_OF_RANGE),
        (("day", "week", "month"), "9999-12-31", OUT_OF_RANGE),
        (("day", "week", "month"), "2026-W48", FOREIGN_BUCKET),
        (("day",), "2026-11-23T05", FOREIGN_BUCKET),
        (("hour", "day", "trending"), "2026-11-23T05", None),
        (("hour", "day", "trending"), "0001-01-01T00", OUT_OF_RANGE),
        (("hour", "day", "trending"), "9999-12-31T23", OUT_OF_RANGE),
        (("week",), "0001-W01", OUT_OF_RANGE),
        (("month",), "9999-12", OUT_OF_RANGE),
        (("month",), "9999-11", None),
    ],
)
def test_a_bucket_is_counted_only_when_every_period_around_it_exists(kinds, bucket, reason):
    assert reason_of(bucket_refusal(Periods(kinds=kinds), bucket)) == reason


def reason_of(refusal):
    return refusal.reason if refusal else None


def test_ids_and_board_names_take_the_apis_rules():
    assert reason_of(id_refusal("images/001.jpg")) is None
    assert reason_of(id_refusal("")) == reason_of(id_refusal("\u200b")) == INVALID_ID
    assert reason_of(board_refusal("user:123")) is None
    for name in ("a#b", "Cats", "", "x" * 65, board_of("global")):
        assert reason_of(board_refusal(name)) == INVALID_BOARD
    # b:global decodes as a name the board rule refuses: the global board's counter is views
    assert board_of("global") == GLOBAL_TWIN and board_of("cats") == "cats"
