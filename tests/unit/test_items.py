"""The item rules (issue 13): metadata documents, their 2 KB edge in UTF-8, the by-created keys, and RequireItems'
cache of positive answers."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardboard.domain.items.records import (
    MAX_META_BYTES,
    DenyCheck,
    ItemAdmission,
    admit_all,
    created_key,
    created_shard,
    iso_ms,
    meta,
    meta_text,
)
from shardboard.domain.validation import BadInput

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def padded(size: int, char: str = "é") -> dict[str, str]:
    """A document whose compact JSON is exactly ``size`` UTF-8 bytes, padded with a 2-byte character."""
    empty = len(json.dumps({"n": ""}, separators=(",", ":")).encode())
    room = size - empty
    return {"n": char * (room // 2) + "x" * (room % 2)}


def test_meta_is_the_compact_json_that_is_stored():
    assert meta({"title": "A cat", "b": [1, 2.5, None]}) == '{"title":"A cat","b":[1,2.5,null]}'
    assert meta({"t": "ünï 猫"}) == '{"t":"ünï 猫"}'  # stored as UTF-8, not \\u escapes (the budget counts bytes)
    assert meta({}) == "{}"


def test_the_2_kb_edge_counts_utf8_bytes_after_reserialisation():
    assert len(meta(padded(MAX_META_BYTES)).encode()) == MAX_META_BYTES
    with pytest.raises(BadInput, match=f"2049 bytes as compact JSON; the maximum is {MAX_META_BYTES}"):
        meta(padded(MAX_META_BYTES + 1))
    # Whitespace in what the client sent does not count: it is not stored.
    loose = json.dumps(padded(MAX_META_BYTES), indent=8, ensure_ascii=True)
    assert len(loose.encode()) > MAX_META_BYTES
    assert len(meta_text(loose).encode()) == MAX_META_BYTES


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ([1], "must be a JSON object, got array"),
        ("a", "got string"),
        (None, "got null"),
        (3, "got number"),
        (True, "got boolean"),
        ({"title": "x" * 201}, "meta.title"),
        ({"title": None}, "meta.title"),
        ({"url": "ftp://example.com"}, "meta.url"),
        ({"url": "https://"}, "meta.url"),
        ({"url": "//example.com/x"}, "meta.url"),
        ({"thumbnail": ["https://example.com"]}, "meta.thumbnail"),
        ({"thumbnail": "http://[::1"}, "meta.thumbnail"),
        ({"x": float("nan")}, "not storable JSON"),
        ({"x": "\ud800"}, "not storable JSON"),
    ],
)
def test_bad_documents_are_refused_with_one_line(value, reason):
    with pytest.raises(BadInput, match=reason.replace("[", r"\[")) as refused:
        meta(value)
    assert "\n" not in str(refused.value)


def test_optional_fields_at_their_limits_are_accepted():
    document = {"title": "t" * 200, "url": "http://example.com", "thumbnail": "https://example.com/t.jpg?x=1#y"}
    assert json.loads(meta(document)) == document


@pytest.mark.parametrize("text", ["", "not json", "{", '{"a": NaN}', '{"a": Infinity}', "[" * 100_000])
def test_text_that_is_not_json_is_refused(text):
    with pytest.raises(BadInput, match="meta"):
        meta_text(text)


@given(JSON)
def test_any_json_value_is_stored_as_its_compact_form_or_refused_with_bad_input(value):
    try:
        stored = meta(value)
    except BadInput:
        return
    assert isinstance(value, dict)
    assert json.loads(stored) == value
    assert len(stored.encode()) <= MAX_META_BYTES


def test_created_keys_sort_by_time_then_id_and_shards_are_stable_and_spread():
    at = datetime(2026, 11, 23, 17, 5, 9, 123456, tzinfo=UTC)
    assert iso_ms(at) == "2026-11-23T17:05:09.123Z"
    assert created_key(iso_ms(at), "a/b#1") == "2026-11-23T17:05:09.123Z#a/b#1"
    assert created_shard("images/001.jpg") == created_shard("images/001.jpg")
    shards = {created_shard(f"item-{n}", 8) for n in range(200)}
    assert shards == {f"c#{k}" for k in range(8)}


def test_admission_caches_positive_answers_for_its_ttl_and_asks_again_for_missing_ids():
    # Given a catalogue holding "a" and a clock we move
    asked: list[str] = []
    now = [0.0]
    catalogue = {"a"}

    def exists(item_id: str) -> bool:
        asked.append(item_id)
        return item_id in catalogue

    admit = ItemAdmission(exists, ttl=10, size=2, clock=lambda: now[0])
    # When ids are checked repeatedly
    assert [admit("a"), admit("a"), admit("b"), admit("b")] == [True, True, False, False]
    # Then a known id is asked once per ttl, a missing one every time (it may be created at any moment)
    assert asked == ["a", "b", "b"]
    catalogue.add("b")
    assert admit("b") is True
    now[0] = 10.5
    assert admit("a") is True and asked[-1] == "a"
    # And the cache holds at most ``size`` ids, dropping the least recently used
    catalogue.add("c")
    admit("c")
    asked.clear()
    assert admit("a") is True and admit("b") is True and asked == ["b"]


def test_the_deny_check_reads_the_deny_sets_once_per_ttl():
    # Given deny sets read through a counter, and a clock we move
    reads, now, denied = [], [0.0], {"a"}

    def read() -> frozenset[str]:
        reads.append(now[0])
        return frozenset(denied)

    check = DenyCheck(read, ttl=10.0, clock=lambda: now[0])
    # Then a denied id is refused and the others admitted, with one read for the lot
    assert [check("a"), check("b"), check("c")] == [False, True, True]
    assert reads == [0.0]
    # And a delete made meanwhile is seen once the ttl has passed, not before
    denied.add("b")
    now[0] = 9.9
    assert check("b")
    now[0] = 10.0
    assert not check("b")
    assert reads == [0.0, 10.0]


def test_admit_all_admits_only_what_every_check_admits():
    admit = admit_all(lambda i: i != "deleted", lambda i: i != "unknown")
    assert [admit("deleted"), admit("unknown"), admit("ok")] == [False, False, True]
