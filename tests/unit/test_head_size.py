"""A head fits its item by construction (domain/publishing/head_size.py, docs/head-size.md): the formula bounds every
head of a shape, and a head past the budget degrades in the documented order (documents, spares, the ``left``
record, then the top N's lowest entries), never a write refused for its size."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.adapters.board_table import snapshot_from_item, snapshot_item
from shardboard.domain.publishing.head import Head, Row, head_from_stored, stored_attributes
from shardboard.domain.publishing.head_size import (
    HEAD_BUDGET_BYTES,
    ITEM_LIMIT_BYTES,
    Degraded,
    HeadShape,
    fit,
    head_bytes,
    head_size_bound,
    largest_top_n,
)
from shardboard.settings import DEFAULT_RANK_DEPTH
from shardboard_tools.capacity.units import item_size
from tests.conftest import examples

BIG = 2048


def document(n: int, size: int = BIG) -> dict:
    """A document of exactly ``size`` bytes as compact JSON."""
    base = len(json.dumps({"t": n, "x": ""}, separators=(",", ":")))
    return {"t": n, "x": "x" * (size - base)}


def worst_head(shape: HeadShape) -> Head:
    """A head of ``shape`` with every part at its largest: the biggest views, every previous and day-before rank,
    N ids gone, a document for each of the first P entries, recent views on a trending head."""
    views = 10**38 - 1 if shape.trending else 2**63 - 1
    entries = [Row(f"{n:06d}".ljust(shape.id_bytes, "i"), views - n) for n in range(shape.top_n + shape.spare)]
    items, spare = tuple(entries[: shape.top_n]), tuple(entries[shape.top_n :])
    rank = 10 ** max(0, len(str(len(entries))) - 1)
    return Head(
        board="global",
        period={"kind": "trending" if shape.trending else "day", "start": "2026-11-23T00:00:00Z", "end": "x" * 20},
        bucket="2026-11-23",
        version=10**9,
        generated_at="2026-11-23T06:01:00.000Z",
        items=items,
        items_read=10**9,
        threshold=views,
        shard_hits=dict.fromkeys(range(16), 10**6),
        digest="d" * 64,
        spare=spare,
        expires_at=1_900_000_000,
        meta={row.id: document(n, shape.document_bytes) for n, row in enumerate(items[: shape.page_size])}
        if shape.document_bytes
        else None,
        meta_at="2026-11-23T06:00:00.000Z" if shape.document_bytes else None,
        previous={row.id: rank for row in entries},
        gone={f"{n:06d}".ljust(shape.id_bytes, "g"): rank for n in range(shape.top_n)},
        events_version=10**9,
        day_before={row.id: rank for row in entries},
        recent={row.id: [2**63 - 1, 2**63 - 1] for row in items} if shape.trending else {},
    )


@settings(max_examples=examples(30))
@given(
    top_n=st.integers(1, 400),
    spare=st.integers(0, 64),
    page_size=st.integers(1, 200),
    id_bytes=st.integers(6, 512),
    document_bytes=st.sampled_from([0, 100, BIG]),
    trending=st.booleans(),
)
def test_the_formula_bounds_every_head_of_its_shape(  # noqa: PLR0917 - the shape's fields, drawn
    top_n, spare, page_size, id_bytes, document_bytes, trending
):
    shape = HeadShape(top_n, spare, page_size, id_bytes, document_bytes, trending)
    head = worst_head(shape)
    # DynamoDB's size of the stored item <= the measure the job fits by <= the formula
    assert item_size(snapshot_item(head)) <= head_bytes(head) <= head_size_bound(shape)


def test_the_largest_configurations_each_period_kind_holds_whole():
    # The figures of docs/head-size.md: R = 32, P = 100, 2 KB documents, ids of 512 bytes and of 32
    def largest(id_bytes: int, documents: int, trending: bool = False) -> int:
        return largest_top_n(HeadShape(0, 32, 100, id_bytes, documents, trending))

    assert (largest(512, BIG), largest(512, BIG, trending=True)) == (112, 105)
    assert (largest(512, 0), largest(512, 0, trending=True)) == (352, 333)
    assert (largest(92, BIG), largest(92, BIG, trending=True)) == (773, 607)
    assert (largest(32, BIG), largest(32, BIG, trending=True)) == (1714, 1088)
    assert (largest(32, 0), largest(32, 0, trending=True)) == (3662, 2328)
    # And the bound is what it says: the worst head of the largest N fits, one more entry may not
    shape = HeadShape(largest(512, BIG), 32, 100, 512, BIG)
    assert head_bytes(worst_head(shape)) <= HEAD_BUDGET_BYTES < ITEM_LIMIT_BYTES
    assert head_size_bound(HeadShape(shape.top_n + 1, 32, 100, 512, BIG)) > HEAD_BUDGET_BYTES


def test_a_head_that_fits_is_written_whole():
    head = worst_head(HeadShape(100, 32, 100, 32, 200))
    assert fit(head) == (head, Degraded())


def test_past_the_budget_documents_go_first_lowest_ranked_first():
    # Given N 130, R 32, P 100 with 512-byte ids and 2 KB documents: over the budget
    head = worst_head(HeadShape(130, 32, 100, 512, BIG))
    assert head_bytes(head) > HEAD_BUDGET_BYTES
    # When it is fitted
    fitted, left = fit(head)
    # Then only documents were left out, the lowest-ranked ones, and it fits
    assert head_bytes(fitted) <= HEAD_BUDGET_BYTES
    assert left == Degraded(documents=left.documents) and left.documents > 0
    assert fitted.meta is not None and list(fitted.meta) == [row.id for row in head.items[: 100 - left.documents]]
    assert (fitted.items, fitted.spare, fitted.gone) == (head.items, head.spare, head.gone)


def test_then_the_spares_then_the_left_record_lowest_first():
    # Given heads without documents of 512-byte ids, over the budget by less than their spares, then by more
    some_spares = worst_head(HeadShape(360, 64, 100, 512, 0))
    head = worst_head(HeadShape(400, 64, 100, 512, 0))
    # Then the lowest spares go first, only as many as needed
    fitted, left = fit(some_spares)
    assert head_bytes(fitted) <= HEAD_BUDGET_BYTES and left == Degraded(spares=left.spares) and 0 < left.spares < 64
    assert fitted.spare == some_spares.spare[: 64 - left.spares]
    # And past all of them, the lowest-ranked of the ids gone (their ``left`` events); the top N stays whole
    fitted, left = fit(head)
    assert head_bytes(fitted) <= HEAD_BUDGET_BYTES
    assert left.spares == 64 and fitted.spare == () and 0 < left.gone < 400
    assert fitted.items == head.items and left.entries == 0
    kept = sorted(head.gone.items(), key=lambda pair: (pair[1], pair[0]))[: 400 - left.gone]
    assert fitted.gone == dict(kept)


def test_a_top_5000_of_512_byte_ids_keeps_the_top_that_fits_never_failing():
    # Given TopN 5000 with 512-byte ids (2.6 MB of entries): no part but the entries themselves can make it fit
    head = worst_head(HeadShape(5000, 32, 100, 512, BIG))
    # When it is fitted
    fitted, left = fit(head)
    # Then everything else went first, and the head holds the exact top it can: a prefix of the top N
    assert head_bytes(fitted) <= HEAD_BUDGET_BYTES and item_size(snapshot_item(fitted)) <= ITEM_LIMIT_BYTES
    assert (left.documents, left.spares, left.gone) == (100, 32, 5000)
    assert fitted.items == head.items[: len(fitted.items)] and left.entries == 5000 - len(fitted.items)
    assert 600 < len(fitted.items) < 800
    # And its entries' ranks read back with them (the aligned lists shortened with the entries)
    back = snapshot_from_item(snapshot_item(fitted))
    assert back.previous == {row.id: head.previous[row.id] for row in fitted.items}


def test_a_head_stored_with_id_keyed_maps_reads_as_before():
    # Given a head as the release before stored it: previous, day_before and recent keyed by id
    head = worst_head(HeadShape(3, 1, 2, 8, 0, trending=True))
    stored = stored_attributes(head)
    old = {
        **stored,
        "previous": json.dumps({"000000ii": 2, "000001ii": 1}),
        "day_before": json.dumps({"000002ii": 3, "elsewhere": 1}),
        "recent": json.dumps({"000000ii": [1, 2]}),
    }
    # When it is read
    back = head_from_stored(old)
    # Then the maps read as they were; written again, they are lists aligned with the entries
    assert back.previous == {"000000ii": 2, "000001ii": 1}
    assert back.day_before == {"000002ii": 3, "elsewhere": 1}
    assert back.recent == {"000000ii": [1, 2]}
    again = stored_attributes(back)
    assert (again["previous"], again["day_before"], again["recent"]) == ("[2,1]", "[null,null,3]", "[[1,2]]")


def test_plan_head_prints_each_period_bound_of_the_stack_configuration():
    from click.testing import CliRunner

    from shardboard_tools.cli import main

    # Given a stack of TopN 5000 with day and trending
    result = CliRunner().invoke(
        main, ["-p", "TopN=5000", "-p", "Periods=day,trending", "plan", "--head", "--id-bytes", "512", "--json"]
    )
    assert result.exit_code == 0, result.output
    heads = {(row["board"], row["period"]): row for row in json.loads(result.output)["heads"]}
    # Then every period of both board kinds is listed with the formula's bound, whether it fits whole, and the
    # largest N that does: the global board's 5000 degrades, the categories' 100 fit
    assert {period for _, period in heads} == {"all", "hour", "day", "trending"}
    trending = heads["global", "trending"]
    shape = HeadShape(5000, 32, 100, 512, BIG, trending=True, rank_depth=DEFAULT_RANK_DEPTH)
    assert trending["bound_bytes"] == head_size_bound(shape) and trending["whole"] is False
    assert trending["largest_top_n"] == largest_top_n(shape) < heads["global", "day"]["largest_top_n"]
    assert heads["categories", "day"]["whole"] is True and heads["categories", "day"]["top_n"] == 100
