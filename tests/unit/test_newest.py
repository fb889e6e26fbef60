"""Newest items (domain/items/newest.py) against a brute-force sort: the K-shard merge is exact, pages walk the window
with no duplicate and no gap while items are created, and every cursor is checked before it is used."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.domain.errors import BadInput
from shardboard.domain.items.newest import (
    ShardPage,
    Window,
    key_of,
    merge_newest,
    newest_items,
    read_cursor,
    window,
    write_cursor,
)
from shardboard.domain.items.records import ItemRecord, created_key, meta
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryItemStore
from tests.conftest import examples

# Few distinct times, so many items share a created_at and only the id orders them.
TIMES = [f"2026-11-23T17:00:0{s}.000Z" for s in range(4)]
IDS = st.text(alphabet="ab/# é猫", min_size=1, max_size=4)


def record(item_id: str, at: str) -> ItemRecord:
    return ItemRecord(item_id, "{}", at, at, 1)


def truth(records: list[ItemRecord], wanted: Window) -> list[str]:
    return [key_of(r) for r in sorted(records, key=key_of, reverse=True) if wanted.holds(key_of(r))]


@given(
    shards=st.lists(
        st.lists(st.tuples(IDS, st.sampled_from(TIMES)), max_size=12, unique_by=lambda c: c[0]), max_size=5
    ),
    limit=st.integers(1, 15),
)
def test_the_merge_is_the_newest_of_the_union(shards, limit):
    # Given each shard's records newest first (ids unique across shards, as an id hashes to one shard)
    seen: set[str] = set()
    pages = []
    for creations in shards:
        fresh = [record(i, at) for i, at in creations if i not in seen]
        seen.update(r.item_id for r in fresh)
        pages.append(ShardPage(sorted(fresh, key=key_of, reverse=True), more=False))
    # When they are merged
    items, more = merge_newest(pages, limit)
    # Then they are the first `limit` of the brute-force sort, and "more" says whether anything is left
    everything = truth([r for page in pages for r in page.records], Window())
    assert [key_of(r) for r in items] == everything[:limit]
    assert more == (len(everything) > limit)


def memory_catalog(shards: int) -> MemoryItemStore:
    return MemoryItemStore(CapacityEmulator(VirtualClock()), created_shards=shards)


def walk(catalog: MemoryItemStore, shards: int, wanted: Window, limit: int, between_pages=lambda: None) -> list[str]:
    keys: list[str] = []
    cursor = None
    for _ in range(1000):
        page = newest_items(catalog.newest, shards, wanted, limit, cursor)
        assert len(page.items) <= limit
        keys += [key_of(r) for r in page.items]
        if page.cursor is None:
            return keys
        cursor = page.cursor
        between_pages()
    raise AssertionError("the walk did not end")


@settings(max_examples=examples(60), deadline=None)
@given(
    creations=st.lists(st.tuples(IDS, st.sampled_from(TIMES)), max_size=40, unique_by=lambda c: c[0]),
    later=st.lists(st.tuples(IDS, st.sampled_from(TIMES)), max_size=10),
    shards=st.integers(1, 5),
    limit=st.integers(1, 7),
    bounds=st.tuples(st.sampled_from([None, *TIMES]), st.sampled_from([None, *TIMES])),
)
def test_a_page_walk_has_no_duplicate_and_no_gap_while_items_are_created(creations, later, shards, limit, bounds):
    # Given items created over K shards (equal times included) and a window
    after, before = bounds
    if after is not None and before is not None and after >= before:
        before = None
    wanted = window(after, before)
    catalog = memory_catalog(shards)
    for item_id, at in creations:
        catalog.put(item_id, meta({}), at)
    expected = truth([catalog.get(i) for i, _ in creations], wanted)  # type: ignore[misc]
    pending = list(later)

    def create_one() -> None:
        # New ids get a later created_at than any key of the walk (time moves on); re-puts keep theirs.
        if pending:
            item_id, _ = pending.pop()
            catalog.put(item_id + "+new", meta({}), "2026-11-23T18:00:00.000Z")

    # When the window is walked page by page while items are created between pages
    walked = walk(catalog, shards, wanted, limit, create_one)
    # Then the walk is the brute-force order of what existed when it started: each key once, none missing
    assert walked == expected


def test_the_walk_reads_k_shards_a_page_and_ends_without_an_empty_page():
    # Given 10 items on 4 shards
    catalog = memory_catalog(4)
    for n in range(10):
        catalog.put(f"i{n}", meta({}), TIMES[n % 4])
    # When they are read 5 at a time
    first = newest_items(catalog.newest, 4, Window(), 5)
    second = newest_items(catalog.newest, 4, Window(), 5, first.cursor)
    # Then two pages hold all ten, newest first, and the second says the walk is over
    assert first.cursor is not None and second.cursor is None
    assert [key_of(r) for r in first.items + second.items] == truth([catalog.get(f"i{n}") for n in range(10)], Window())  # type: ignore[misc]


@pytest.mark.parametrize(
    ("after", "before", "reason"),
    [
        ("yesterday", None, "created_after must be an ISO-8601"),
        (None, "2026-13-01", "created_before must be an ISO-8601"),
        ("0001-01-01T00:00:00+01:00", None, "from 0001-01-01 to 9999-12-31 in UTC"),
        ("2026-11-23", "2026-11-23", "must be earlier than"),
        ("2026-11-24", "2026-11-23", "must be earlier than"),
    ],
)
def test_bad_times_are_refused(after, before, reason):
    with pytest.raises(BadInput, match=reason):
        window(after, before)


def test_every_year_a_time_holds_is_a_bound_written_with_four_digits():
    # (years before 1000 were refused as malformed: strftime printed year 999 as "999", which sorts after "2026")
    assert window("0001-01-01", "0999-06-01") == Window("0001-01-01T00:00:00.000Z", "0999-06-01T00:00:00.000Z")
    assert window(None, "9999-12-31T23:59:59.999Z") == Window(None, "9999-12-31T23:59:59.999Z")


def test_times_are_read_as_utc_milliseconds_and_empty_is_absent():
    assert window("2026-11-23T18:00:00+01:00", "") == Window("2026-11-23T17:00:00.000Z", None)
    assert window("", None) == Window()


def encoded(fields: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


WANTED = Window("2026-11-23T00:00:00.000Z", None)
GOOD_KEY = created_key("2026-11-23T17:00:00.000Z", "a/b#1")


def test_a_cursor_round_trips_its_key():
    assert read_cursor(write_cursor(WANTED, GOOD_KEY), WANTED) == GOOD_KEY


@pytest.mark.parametrize(
    "cursor",
    [
        "x",
        "!!!!",
        encoded([1, 2]),
        encoded({"a": WANTED.after, "b": None}),
        encoded({"a": WANTED.after, "b": None, "k": GOOD_KEY, "extra": 1}),
        encoded({"a": WANTED.after, "b": None, "k": 7}),
        encoded({"a": WANTED.after, "b": None, "k": "2026-11-23T17:00:00.000Z"}),  # no id
        encoded({"a": WANTED.after, "b": None, "k": "2026-11-23T17:00:00Z#a"}),  # not ISO ms
        encoded({"a": WANTED.after, "b": None, "k": "2026-11-22T17:00:00.000Z#a"}),  # before the window
        encoded({"a": WANTED.after, "b": None, "k": "2026-11-23T17:00:00.000Z#\ud800"}),  # not UTF-8
        encoded({"a": WANTED.after, "b": None, "k": "2026-11-23T17:00:00.000Z#a\nb"}),  # a control character
        encoded({"a": None, "b": None, "k": GOOD_KEY}),  # another window's
        write_cursor(WANTED, GOOD_KEY) + "A",
        write_cursor(WANTED, GOOD_KEY)[:-3],
    ],
)
def test_a_bad_or_tampered_cursor_is_refused(cursor):
    with pytest.raises(BadInput, match="cursor"):
        read_cursor(cursor, WANTED)


@given(st.text(max_size=80))
def test_any_text_as_a_cursor_is_refused_or_resumes_inside_the_window(cursor):
    try:
        key = read_cursor(cursor, WANTED)
    except BadInput:
        return
    assert WANTED.holds(key)
