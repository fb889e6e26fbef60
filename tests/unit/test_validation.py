"""Input rules: what the HTTP API and the CLI refuse, with a one-line reason."""

from __future__ import annotations

import re

import pytest

from shardboard.domain.validation import (
    MAX_VIEWS_PER_REQUEST,
    BadInput,
    item_id,
    limit,
    moment,
    period_kind,
    view_count,
    view_request,
    viewer,
)


@pytest.mark.parametrize("good", ["a#1", "x/y.jpg", "ünï", "a b", "images/001.jpg", "x" * 512, "é" * 256, "🙂"])
def test_valid_ids_are_accepted_as_they_are(good):
    assert item_id(good) == good


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("", "must not be empty"),
        ("x" * 513, "513 bytes"),
        ("é" * 257, "514 bytes"),
        ("a\nb", "control character (U+000A)"),
        ("tab\there", "U+0009"),
        ("nul\x00", "U+0000"),
        ("del\x7f", "U+007F"),
        (42, "must be a string"),
        (None, "must be a string"),
        (["a"], "must be a string"),
    ],
)
def test_invalid_ids_are_refused_with_a_reason(bad, reason):
    with pytest.raises(BadInput, match=re.escape(reason)):
        item_id(bad)


@pytest.mark.parametrize("good", [1, 2, MAX_VIEWS_PER_REQUEST])
def test_valid_counts(good):
    assert view_count(good) == good


@pytest.mark.parametrize("bad", [0, -1, MAX_VIEWS_PER_REQUEST + 1, 1.5, "3", True, None, 2.0])
def test_invalid_counts(bad):
    with pytest.raises(BadInput, match="count"):
        view_count(bad)


def test_view_request_defaults_count_to_one():
    assert view_request({"id": "a"}) == ("a", 1, (), None)


def test_view_request_takes_a_viewer_of_one_view():
    assert view_request({"id": "a", "viewer": "user 42 ü"}) == ("a", 1, (), "user 42 ü")
    assert viewer("x" * 128) == "x" * 128
    for bad, reason in [("", "1-128"), ("x" * 129, "1-128"), ("a\u2028b", "non-printable"), (b"u", "string")]:
        with pytest.raises(BadInput, match=reason):
            viewer(bad)
    with pytest.raises(BadInput, match="count must be 1 with a viewer"):
        view_request({"id": "a", "viewer": "u", "count": 3})


def test_view_request_names_boards():
    body = {"id": "a", "count": 2, "boards": ["cats", "user:123", "cats", "global"]}
    assert view_request(body) == ("a", 2, ("cats", "user:123"), None)  # duplicates and the implied global board drop


@pytest.mark.parametrize(
    ("boards", "reason"),
    [
        ("cats", "must be a list"),
        ([""], "must be 1-64 characters"),
        (["Cats"], "must be 1-64 characters"),
        (["a#b"], "must be 1-64 characters"),
        (["x" * 65], "must be 1-64 characters"),
        ([1], "must be a string"),
        ([f"b{i}" for i in range(9)], "at most 8 boards"),
    ],
)
def test_bad_boards_are_refused_with_a_reason(boards, reason):
    with pytest.raises(BadInput, match=reason):
        view_request({"id": "a", "boards": boards})


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "all"), ("", "all"), ("all", "all"), ("week", "week")],
)
def test_period_kind(value, expected):
    assert period_kind(value, ("day", "week", "month")) == expected


@pytest.mark.parametrize("value", ["hour", "weekly", "ALL", "day "])
def test_unknown_period_kinds_are_refused(value):
    with pytest.raises(BadInput, match="period must be one of all, day, week, month"):
        period_kind(value, ("day", "week", "month"))


@pytest.mark.parametrize("value", ["2026-13-01", "yesterday", "2026-11-23T25:00", "1700000000"])
def test_bad_times_are_refused(value):
    with pytest.raises(BadInput, match="ISO-8601"):
        moment(value)


@pytest.mark.parametrize(
    ("body", "reason"),
    [([], "JSON object"), ("a", "JSON object"), ({}, "missing field: id"), ({"id": "a", "extra": 1}, "unknown field")],
)
def test_view_request_shape(body, reason):
    with pytest.raises(BadInput, match=reason):
        view_request(body)


@pytest.mark.parametrize(("raw", "expected"), [(None, 100), ("", 100), ("1", 1), ("100", 100)])
def test_limit(raw, expected):
    assert limit(raw, 100) == expected


@pytest.mark.parametrize("raw", ["0", "101", "-1", "ten", "1.5"])
def test_bad_limit(raw):
    with pytest.raises(BadInput, match="limit"):
        limit(raw, 100)
