"""Hostile input at the domain's rules: times near the ends of the calendar, JSON the parser cannot take, and item ids
that look like other ids. Each defect's corpus is here as examples, and the class of input it belongs to as a
hypothesis property."""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime, timedelta, timezone

import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shardboard.domain import validation
from shardboard.domain.periods import (
    ALL,
    EARLIEST,
    KINDS,
    OutOfRange,
    PeriodError,
    bucket_of,
    bucket_start,
    expires_at,
    is_bucket,
    parse_time,
    period_of,
    retained_buckets,
    start_of,
)
from shardboard.domain.validation import BadInput
from shardboard_tools.operations.importing import parse_lines
from tests.conftest import examples

LATEST = datetime.max.replace(tzinfo=UTC)
# Offsets datetime takes: strictly within a day either way, to the microsecond.
DAY = timedelta(days=1)
OFFSETS = st.timedeltas(min_value=-DAY + timedelta(microseconds=1), max_value=DAY - timedelta(microseconds=1)).map(
    timezone
)
# Times near the ends of the calendar (where an offset moves them out) and anywhere, naive or with any offset.
NEAR_THE_ENDS = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1, 1, 9)),
    st.datetimes(min_value=datetime(9999, 12, 20), max_value=datetime.max),
)
MOMENTS = st.builds(
    lambda naive, zone: naive.replace(tzinfo=zone),
    st.one_of(NEAR_THE_ENDS, st.datetimes()),
    st.one_of(
        st.none(),
        OFFSETS,
        st.sampled_from([timezone(DAY - timedelta(minutes=1)), timezone(-DAY + timedelta(minutes=1))]),
    ),
)
# What a client may send as a time: ISO-8601 text of any such moment, in any of its spellings, and any text.
TIME_TEXTS = st.one_of(
    st.builds(
        lambda moment, sep, spec: moment.isoformat(sep=sep, timespec=spec),
        MOMENTS,
        st.sampled_from(["T", " "]),
        st.sampled_from(["auto", "hours", "minutes", "seconds", "milliseconds", "microseconds"]),
    ),
    st.text(),
)

# The defect's corpus: each offset moves the time past year 1 or 9999 in UTC (was OverflowError, a 500).
OUT_OF_RANGE = [
    "0001-01-01T00:00:00+01:00",
    "0001-01-01T00:59:59.999999+01:00",
    "0001-01-01 00:00+23:59",
    "9999-12-31T23:30:00-01:00",
    "9999-12-31T23:59:59.999999-00:01",
    "9999-12-31T12:00-23:59:59",
]


def in_range(moment: datetime) -> bool:
    """Whether ``moment`` is in UTC within what a datetime holds (compared as offsets, not by converting)."""
    offset = moment.utcoffset() or timedelta(0)
    naive = moment.replace(tzinfo=None)
    return (offset <= timedelta(0) or naive - datetime.min >= offset) and (
        offset >= timedelta(0) or datetime.max - naive >= -offset
    )


@pytest.mark.parametrize("text", OUT_OF_RANGE)
def test_a_time_moved_past_the_calendar_by_its_offset_is_refused(text):
    with pytest.raises(OutOfRange, match=re.escape("outside 0001-01-01..9999-12-31 in UTC")):
        parse_time(text)
    with pytest.raises(BadInput, match="from 0001-01-01 to 9999-12-31 in UTC") as refused:
        validation.moment(text)
    assert "\n" not in str(refused.value)
    with pytest.raises(BadInput, match="from 0001-01-01 to 9999-12-31 in UTC"):
        validation.moment(datetime.fromisoformat(text))  # the library's datetime, as given


@pytest.mark.parametrize(
    ("text", "kind", "bucket"),
    [
        ("0001-01-01T00:00:00-01:00", "day", "0001-01-01"),
        ("0001-01-01", "hour", "0001-01-01T00"),
        ("0001-01-07T23:59:59Z", "week", "0001-W01"),
        ("0001-01-01T00:00:00Z", "month", "0001-01"),
        ("9999-12-31T23:59:59.999999Z", "hour", "9999-12-31T23"),
        ("9999-12-31T22:30:00-01:00", "day", "9999-12-31"),
        ("9999-12-27", "week", "9999-W52"),
        ("9999-12-31T23:59:59+00:00", "month", "9999-12"),
    ],
)
def test_the_first_and_last_periods_have_buckets(text, kind, bucket):
    moment = validation.moment(text)
    assert moment is not None and bucket_of(kind, moment) == bucket and is_bucket(kind, bucket)
    assert bucket_start(kind, bucket) <= moment


@pytest.mark.parametrize("kind", KINDS)
def test_the_last_periods_of_9999_have_no_end_and_never_expire(kind):
    last = bucket_of(kind, LATEST)
    with pytest.raises(PeriodError, match="ends after 9999-12-31"):
        period_of(kind, LATEST)
    assert expires_at(kind, last, 1) is None
    assert retained_buckets(kind, LATEST, 2)[0] == last


@pytest.mark.parametrize("kind", KINDS)
def test_the_first_periods_have_none_before_them(kind):
    assert retained_buckets(kind, EARLIEST, 3) == [bucket_of(kind, EARLIEST)]
    assert isinstance(expires_at(kind, bucket_of(kind, EARLIEST), 3), int)
    assert period_of(kind, EARLIEST).start == EARLIEST


@settings(max_examples=examples(300), deadline=None)
@given(TIME_TEXTS)
@example("0001-01-01T00:00:00+01:00")
@example("9999-12-31T23:30:00-01:00")
def test_any_time_text_is_a_moment_or_bad_input(text):
    # Any text given as a time: a UTC moment in the calendar, or BadInput on one line; never another error
    try:
        moment = validation.moment(text)
    except BadInput as refused:
        assert "\n" not in str(refused)
        return
    if text.strip():
        assert moment is not None and moment.tzinfo == UTC
        assert EARLIEST <= moment <= LATEST


@settings(max_examples=examples(300), deadline=None)
@given(MOMENTS)
def test_a_moment_is_refused_exactly_when_its_offset_moves_it_out_of_the_calendar(moment):
    if in_range(moment):
        expected = moment.replace(tzinfo=UTC) - (moment.utcoffset() or timedelta(0))
        assert validation.moment(moment) == expected == validation.moment(moment.isoformat())
    else:
        with pytest.raises(BadInput):
            validation.moment(moment)
        with pytest.raises(BadInput):
            validation.moment(moment.isoformat())


@settings(max_examples=examples(300), deadline=None)
@given(MOMENTS.filter(in_range), MOMENTS.filter(in_range), st.integers(0, 40))
def test_every_period_arithmetic_answers_for_every_moment_in_the_calendar(first, second, retention):
    # Any two moments in the calendar, in UTC
    first, second = validation.moment(first), validation.moment(second)
    assert first is not None and second is not None
    for kind in KINDS:
        # Then each has a bucket that is a bucket, parses back to its period's start and sorts in time order
        bucket = bucket_of(kind, first)
        assert is_bucket(kind, bucket)
        assert bucket_start(kind, bucket) == start_of(kind, first) <= first
        if first <= second:
            assert bucket <= bucket_of(kind, second)
        # And its retained buckets, its expiry and its bounds answer (an end past 9999 is the one PeriodError)
        retained = retained_buckets(kind, first, retention)
        assert retained[0] == bucket and retained == sorted(retained, reverse=True) and len(retained) <= retention + 1
        expiry = expires_at(kind, bucket, retention)
        assert expiry is None or isinstance(expiry, int)
        try:
            period = period_of(kind, first)
        except PeriodError:
            assert bucket == bucket_of(kind, LATEST) and expiry is None
        else:
            assert period.start is not None and period.end is not None and period.start <= first < period.end
    assert bucket_of(ALL, first) == ALL


# -- JSON the parser cannot take ------------------------------------------------------------------------------------


def nested(depth: int, inner: str = "") -> str:
    return "[" * depth + inner + "]" * depth


JSON_CORPUS = [
    ('{"id": "a", "count": ' + "9" * 5000 + "}", "holds a number of 5000 digits; the most is 4300"),
    ('{"id": "a", "count": -' + "1" * 4301 + "}", "holds a number of 4301 digits"),
    (nested(50_000), "nested deeper than 32 levels"),
    ('{"id": "a", "boards": ' + nested(50_000) + "}", "nested deeper than 32 levels"),
    ('{"a": ' + nested(900) + "}", "nested deeper than 32 levels"),  # parses; pydantic and json.dumps may not
    (nested(33), "nested deeper than 32 levels"),
    ('{"count": NaN}', "NaN is not a JSON value"),
    ("[Infinity]", "Infinity is not a JSON value"),
]


@pytest.mark.parametrize(("text", "reason"), JSON_CORPUS)
def test_json_the_parser_cannot_take_is_bad_input(text, reason):
    with pytest.raises(BadInput, match=re.escape(reason)) as refused:
        validation.json_value(text, "body")
    assert str(refused.value).startswith("body ") and "\n" not in str(refused.value)


def test_json_within_the_limits_parses_as_json_does():
    for text in ('{"n": ' + "9" * 4300 + "}", nested(32), '{"id": "a", "count": 1e999}', '"x"', "null"):
        assert validation.json_value(text, "body") == json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        validation.json_value("{oops", "body")


JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()
)
JSON_VALUES = st.recursive(
    JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
)


def depth_of(value):
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


@settings(max_examples=examples(200), deadline=None)
@given(JSON_VALUES, st.integers(0, 3000), st.integers(1, 6000))
def test_any_json_parses_or_is_refused_on_one_line(value, wrap, digits):
    # Any JSON value, wrapped in arrays up to 3,000 deep, next to an integer of up to 6,000 digits
    text = nested(wrap, f"[{json.dumps(value)}, {'7' * digits}]")
    try:
        parsed = validation.json_value(text, "line")
    except BadInput as refused:
        # Then it is refused only for its depth or its digits, in one line naming it
        message = str(refused)
        assert message.startswith("line ") and "\n" not in message
        assert wrap + 1 + depth_of(value) > validation.MAX_JSON_DEPTH or digits > validation.MAX_JSON_DIGITS
        return
    assert parsed == json.loads(text)
    assert depth_of(parsed) <= validation.MAX_JSON_DEPTH and digits <= validation.MAX_JSON_DIGITS


def test_an_import_names_each_line_the_parser_cannot_take():
    # Given a file whose lines hold a deep nesting, a long number and an array of views between good lines
    now = datetime(2026, 11, 23, tzinfo=UTC)
    good = b'{"id": "a", "time": "2026-11-01"}'
    lines = [
        good,
        b'{"id": "b", "time": "2026-11-01", "boards": ' + nested(50_000).encode() + b"}",
        b'{"id": "c", "time": "2026-11-01", "count": ' + b"9" * 5000 + b"}",
        b'[{"id": "d", "time": "2026-11-01"}]',
        b'{"id": "e", "time": "9999-12-31T23:30:00-01:00"}',
        b'{"id": "\\u200bf", "time": "2026-11-01"}',
        good,
    ]
    # When it is read
    parsed = parse_lines(lines, "day", now)
    # Then every bad line is named with its reason and only the good lines count
    assert [str(bad) for bad in parsed.bad] == [
        "line 2: the line is nested deeper than 32 levels",
        "line 3: the line holds a number of 5000 digits; the most is 4300",
        "line 4: expected a JSON object, got list",
        "line 5: time '9999-12-31T23:30:00-01:00' is not from 1970 to now in UTC",
        "line 6: id contains an invisible format character (U+200B ZERO WIDTH SPACE) at position 0: it would look"
        " like another id",
    ]
    assert parsed.views == 2 and list(parsed.counters) == [("a", "2026-11-01")]


# -- Look-alike ids -------------------------------------------------------------------------------------------------

LOOK_ALIKES = [
    ("a\u200bb", "an invisible format character (U+200B ZERO WIDTH SPACE) at position 1"),
    ("\u202egpj.exe", "an invisible format character (U+202E RIGHT-TO-LEFT OVERRIDE) at position 0"),
    ("a\u200d", "(U+200D ZERO WIDTH JOINER) at position 1"),
    ("a\u2066b\u2069", "(U+2066 LEFT-TO-RIGHT ISOLATE) at position 1"),
    ("\ufeffa", "(U+FEFF ZERO WIDTH NO-BREAK SPACE) at position 0"),
    ("ab\u00ad", "(U+00AD SOFT HYPHEN) at position 2"),
    ("a\U000e0041", "(U+E0041 TAG LATIN CAPITAL LETTER A) at position 1"),
    ("a\u2028b", "a line separator (U+2028 LINE SEPARATOR) at position 1"),
    ("a\u2029b", "a paragraph separator (U+2029 PARAGRAPH SEPARATOR) at position 1"),
    ("a\u00a0b", "a space other than U+0020 (U+00A0 NO-BREAK SPACE) at position 1"),
    ("a\u3000b", "a space other than U+0020 (U+3000 IDEOGRAPHIC SPACE)"),
    ("a\u200ab", "(U+200A HAIR SPACE)"),
    ("\u3164", "an invisible character (U+3164 HANGUL FILLER) at position 0"),
    ("\u2764\ufe0f", "an invisible character (U+FE0F VARIATION SELECTOR-16) at position 1"),
    ("a\u034fb", "(U+034F COMBINING GRAPHEME JOINER)"),
    ("a\U000e01ef", "(U+E01EF VARIATION SELECTOR-256)"),
    ("a\U000e0fff", "an invisible character (U+E0FFF) at position 1"),  # reserved as ignorable, unnamed
    ("a\u2800b", "a blank character (U+2800 BRAILLE PATTERN BLANK) at position 1"),
    ("\ue000", "a private-use character (U+E000) at position 0"),
    ("a\U000f0000", "a private-use character (U+F0000) at position 1"),
    ("a\u0378", "an unassigned code point (U+0378) at position 1"),
    ("\uffff", "a noncharacter (U+FFFF) at position 0"),
    ("a\ufffe", "a noncharacter (U+FFFE) at position 1"),
    ("a\ufdd0", "a noncharacter (U+FDD0) at position 1"),
    ("a\U0010ffff", "a noncharacter (U+10FFFF) at position 1"),
]


@pytest.mark.parametrize(("look_alike", "reason"), LOOK_ALIKES)
def test_a_new_id_that_looks_like_another_is_refused_naming_the_character(look_alike, reason):
    with pytest.raises(BadInput, match=re.escape(reason)):
        validation.item_id(look_alike)
    with pytest.raises(BadInput, match="it would look like another id"):
        validation.view_request({"id": look_alike})
    # A read or a takedown may still name it: an id stored before the rule stays reachable
    assert validation.lookup_item_id(look_alike) == look_alike


# What renders as something else or as nothing, by its shape rather than one character: refused with the reason.
BLANK_OR_SHIFTED = [
    ("banned.jpg ", "id 'banned.jpg ' ends with a space"),
    (" banned.jpg", "id ' banned.jpg' starts with a space"),
    ("a  b", "id has two spaces in a row at position 1"),
    (" ", "id must not be only spaces"),
    ("   ", "id must not be only spaces"),
    ("\u0301", "id starts with a combining mark (U+0301 COMBINING ACUTE ACCENT)"),
    ("\u0301a", "id starts with a combining mark (U+0301 COMBINING ACUTE ACCENT)"),
    ("\u20dd", "id starts with a combining mark (U+20DD COMBINING ENCLOSING CIRCLE)"),
]


@pytest.mark.parametrize(("blank", "reason"), BLANK_OR_SHIFTED)
def test_a_new_id_that_renders_as_nothing_or_shifted_is_refused(blank, reason):
    with pytest.raises(BadInput, match=re.escape(reason)):
        validation.item_id(blank)
    with pytest.raises(BadInput, match=re.escape(reason)):
        validation.view_request({"id": blank})
    # A stored id of that shape stays reachable by reads and takedowns
    assert validation.lookup_item_id(blank) == blank


@pytest.mark.parametrize("good", ["a b", "🙂", "ünï", "日本語 テキスト", "x/y.jpg", "Ǆ", "a\u0301b"])
def test_visible_ids_are_still_ids(good):
    normal = unicodedata.normalize("NFC", good)
    assert validation.item_id(good) == normal and validation.lookup_item_id(good) == good


@pytest.mark.parametrize(("decomposed", "composed"), [("cafe\u0301.jpg", "caf\u00e9.jpg"), ("A\u030a", "\u00c5")])
def test_an_id_in_nfd_is_the_same_id_as_in_nfc(decomposed, composed):
    assert validation.item_id(decomposed) == composed == validation.item_id(composed)
    assert validation.view_request({"id": decomposed}).item_id == composed
    # A read names an id exactly as stored: the NFD form stays reachable if an earlier release stored it so
    assert validation.lookup_item_id(decomposed) == decomposed


def test_the_ignorable_table_is_unicodes_default_ignorable_property():
    ignorable = regex.compile(r"\p{Default_Ignorable_Code_Point}")
    table = {code for low, high in validation.DEFAULT_IGNORABLE for code in range(low, high + 1)}
    assert table == {code for code in range(0x110000) if ignorable.match(chr(code))}


def look_alike(char: str) -> bool:
    """The rule as docs/bad-input.md states it: a format character, a separator, a space but U+0020, a default
    ignorable character (Unicode's property, read by the regex module), the braille blank, a private-use, unassigned
    or noncharacter code point."""
    if char == " ":
        return False
    ignorable = regex.match(r"\p{Default_Ignorable_Code_Point}", char) is not None
    kinds = ("Cf", "Zl", "Zp", "Zs", "Co", "Cn")
    return unicodedata.category(char) in kinds or ignorable or char == "\u2800"


def blank_or_shifted(text: str) -> bool:
    """The shape rules: only spaces, a space first or last, two in a row, a combining mark first."""
    return (
        text.strip(" ") == ""
        or text[0] == " "
        or text[-1] == " "
        or "  " in text
        or unicodedata.category(text[0]).startswith("M")
    )


@settings(max_examples=examples(300), deadline=None)
@given(
    st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=20),
    st.characters(categories=("Cf", "Zl", "Zp", "Zs", "Mn", "Lo", "So")),
    st.integers(0, 20),
)
def test_an_id_is_refused_exactly_when_it_holds_an_invisible_character(text, extra, at):
    # Any id of visible and invisible characters
    candidate = text[:at] + extra + text[at:]
    normal = unicodedata.normalize("NFC", candidate)
    hidden = [(position, char) for position, char in enumerate(normal) if look_alike(char)]
    assert validation.lookup_item_id(candidate) == candidate
    if len(normal.encode()) > validation.MAX_ID_BYTES:
        return
    if blank_or_shifted(normal):
        with pytest.raises(BadInput, match=r"space|combining mark"):
            validation.item_id(candidate)
        return
    if not hidden:
        assert validation.item_id(candidate) == normal
        return
    # Then it is refused, naming the first such character by code point and position
    position, char = hidden[0]
    with pytest.raises(BadInput, match=rf"\(U\+{ord(char):04X}\b.* at position {position}: it would look like"):
        validation.item_id(candidate)
