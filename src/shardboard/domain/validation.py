"""Input rules shared by the HTTP API and the CLI: bad input is refused before anything is written."""

from __future__ import annotations

import functools
import json
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from shardboard.domain.boards import BOARD_NAME, GLOBAL_BOARD, MAX_BOARDS_PER_VIEW, is_reserved
from shardboard.domain.errors import BadInput as BadInput  # noqa: PLC0414 - re-exported as validation.BadInput
from shardboard.domain.periods import ALL, PeriodError, parse_time, utc
from shardboard.domain.windows import Window

# One request may record at most this many views (all of them in one base-table write: ADD views :count).
MAX_VIEWS_PER_REQUEST = 1000
MAX_ID_BYTES = 512
MAX_VIEWER_CHARS = 128
# Nesting levels a JSON body or import line may have: a view is 2, metadata a few. Far below the depth at which
# Python's parser, pydantic or json.dumps run out of stack (a RecursionError, a 500).
MAX_JSON_DEPTH = 32
# The most digits a JSON integer may have: Python's own limit for int() (sys.int_info.default_max_str_digits).
MAX_JSON_DIGITS = 4300


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters a renderer shows as nothing unless
# it supports them, format characters or not (variation selectors, Hangul fillers), and the reserved code points
# that may be assigned as such. unicodedata does not expose the property (tests check the table against it).
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# A symbol (So) drawn as an empty cell: the blank that passes for a space where spaces are refused.
BRAILLE_BLANK = "\u2800"
# Categories refused in new ids besides controls: format characters (invisible: zero-width space, bidi overrides),
# line and paragraph separators, spaces other than U+0020 (they look like it, or like nothing) and private use (drawn
# as whatever a font puts there). Unassigned code points and noncharacters (Cn) are refused beside them.
_LOOK_ALIKE_CATEGORIES = {
    "Cf": "an invisible format character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Zs": "a space other than U+0020",
    "Co": "a private-use character",
}


def item_id(value: Any) -> str:
    """Return ``value`` in NFC if it is a valid new item id: a non-empty string of at most 512 UTF-8 bytes (in NFC),
    with nothing that renders as something else or as nothing (docs/bad-input.md, "Look-alike ids"): no control,
    format, private-use, unassigned or noncharacter code point, no space but U+0020 and that one neither first, last nor
    twice in a row, no combining mark first. So no two ids look the same for want of an invisible character, and an
    id in NFD (``cafe\u0301.jpg``) is the same item as in NFC (``caf\u00e9.jpg``).

    Any other character is allowed (``a#1``, ``x/y.jpg``, ``ünï``, ``a b``, ``🙂``): ids are stored as their own
    attribute and never parsed back out of a key. Views, puts and imports take this rule; reads and takedowns take
    :func:`lookup_item_id`, so an id stored before this rule can still be read, hidden and deleted.
    """
    checked = unicodedata.normalize("NFC", lookup_item_id(value))
    size = len(checked.encode("utf-8"))
    if size > MAX_ID_BYTES:
        raise BadInput(f"id is {size} bytes in NFC; the maximum is {MAX_ID_BYTES} bytes of UTF-8")
    if checked.strip(" ") == "":
        raise BadInput("id must not be only spaces")
    if checked.startswith(" ") or checked.endswith(" "):
        raise BadInput(f"id {_shown(checked)} {'starts' if checked.startswith(' ') else 'ends'} with a space")
    if "  " in checked:
        raise BadInput(f"id has two spaces in a row at position {checked.index('  ')}: it would look like another id")
    if unicodedata.category(checked[0]).startswith("M"):
        raise BadInput(f"id starts with a combining mark ({_named(checked[0])}): it has nothing to combine with")
    if checked.isascii() and checked.isprintable():
        return checked  # printable ASCII holds no look-alike character: the common id skips the walk below
    for position, char in enumerate(checked):
        what = _look_alike(char)
        if what:
            raise BadInput(f"id contains {what} ({_named(char)}) at position {position}: it would look like another id")
    return checked


def _named(char: str) -> str:
    """``U+0301 COMBINING ACUTE ACCENT`` (the code point alone when it has no name)."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name}" if name else f"U+{ord(char):04X}"


def lookup_item_id(value: Any) -> str:
    """Return ``value`` if it may name a stored item (a read, a hide, an unhide, a delete): :func:`item_id`'s rule
    without the refusal of look-alike characters, which ids written before that rule may hold."""
    if not isinstance(value, str):
        raise BadInput(f"id must be a string, got {type(value).__name__}")
    if value == "":
        raise BadInput("id must not be empty")
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > MAX_ID_BYTES:
        raise BadInput(f"id is {size} bytes; the maximum is {MAX_ID_BYTES} bytes of UTF-8")
    for position, char in enumerate("" if value.isascii() and value.isprintable() else value):
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise BadInput(f"id contains a control character (U+{ord(char):04X}) at position {position}")
    return value


@functools.lru_cache(maxsize=4096)
def _look_alike(char: str) -> str | None:
    """What ``char`` is when a new id may not hold it (None: it may)."""
    if char == " ":
        return None
    category = unicodedata.category(char)
    what = _LOOK_ALIKE_CATEGORIES.get(category)
    if what:
        return what
    code = ord(char)
    if any(low <= code <= high for low, high in DEFAULT_IGNORABLE):
        return "an invisible character"
    if category == "Cn":
        # Unassigned in this Python's Unicode (a later version may draw it as anything); noncharacters never are.
        noncharacter = 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE
        return "a noncharacter" if noncharacter else "an unassigned code point"
    if char == BRAILLE_BLANK:
        return "a blank character"
    return None


def view_count(value: Any) -> int:
    """Return ``value`` if it is a whole number of views from 1 to MAX_VIEWS_PER_REQUEST."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"count must be a whole number, got {value!r}")
    if value < 1:
        raise BadInput(f"count must be at least 1, got {value}")
    if value > MAX_VIEWS_PER_REQUEST:
        raise BadInput(f"count must be at most {MAX_VIEWS_PER_REQUEST}, got {value}")
    return value


def board_name(value: Any) -> str:
    """Return ``value`` if it is a board name: 1-64 characters from ``[a-z0-9_.:-]`` (``cats``, ``user:123``)."""
    if not isinstance(value, str):
        raise BadInput(f"a board name must be a string, got {type(value).__name__}")
    if not BOARD_NAME.fullmatch(value):
        raise BadInput(f"board name {_shown(value)} must be 1-64 characters from a-z, 0-9, '_', '.', ':' and '-'")
    return value


def boards(value: Any) -> tuple[str, ...]:
    """The category boards a view names: at most 8 distinct names; the global board is implied (and dropped)."""
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise BadInput(f"boards must be a list of board names, got {type(value).__name__}")
    names = list(dict.fromkeys(board_name(name) for name in value))
    names = [name for name in names if name != GLOBAL_BOARD]
    for name in names:
        if is_reserved(name):
            raise BadInput(f"board {name!r} is reserved: crawlers' views count there (docs/honest-counts.md)")
    if len(names) > MAX_BOARDS_PER_VIEW:
        raise BadInput(f"a view may name at most {MAX_BOARDS_PER_VIEW} boards, got {len(names)}")
    return tuple(names)


def viewer(value: Any) -> str | None:
    """Return ``value`` if it is a viewer (None: no viewer): 1-128 printable characters (``str.isprintable``:
    letters, digits, punctuation, symbols and the ASCII space; no control, format or other separator characters).
    Opaque to shardboard: a user id or a hashed IP address, never parsed."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"viewer must be a string, got {type(value).__name__}")
    if not 1 <= len(value) <= MAX_VIEWER_CHARS:
        raise BadInput(f"viewer must be 1-{MAX_VIEWER_CHARS} characters, got {len(value)}")
    for position, char in enumerate(value):
        if not char.isprintable():
            raise BadInput(f"viewer contains a non-printable character (U+{ord(char):04X}) at position {position}")
    return value


# A User-Agent header is rarely over 500 characters; 1,024 leaves room and bounds what a crawler match reads.
MAX_USER_AGENT_CHARS = 1_024


def user_agent(value: Any) -> str | None:
    """Return ``value`` if it is a user agent to judge (None: none given): a string of at most 1,024 characters."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"user_agent must be a string, got {type(value).__name__}")
    if len(value) > MAX_USER_AGENT_CHARS:
        raise BadInput(f"user_agent must be at most {MAX_USER_AGENT_CHARS} characters, got {len(value)}")
    return value


def viewed_count(count: int, who: str | None) -> int:
    """A view with a viewer is one view: it counts once per viewer, item and dedupe window."""
    if who is not None and count != 1:
        raise BadInput(f"count must be 1 with a viewer (a viewer's view counts once), got {count}")
    return count


class ViewRequest(NamedTuple):
    item_id: str
    views: int  # how many views (not "count": a tuple has a count method)
    boards: tuple[str, ...]
    viewer: str | None = None


def view_request(body: Any) -> ViewRequest:
    """Validate a ``POST /views`` body: ``{"id": str, "count": int = 1, "boards": [str] = [], "viewer": str}``;
    unknown fields are refused; with a viewer the count must be 1."""
    if not isinstance(body, dict):
        raise BadInput('body must be a JSON object like {"id": "images/001.jpg", "count": 1}')
    unknown = sorted(set(body) - {"id", "count", "boards", "viewer"})
    if unknown:
        raise BadInput(f"unknown field(s): {', '.join(unknown)}")
    if "id" not in body:
        raise BadInput("missing field: id")
    name, count, names = item_id(body["id"]), view_count(body.get("count", 1)), boards(body.get("boards"))
    if "viewer" in body and body["viewer"] is None:
        raise BadInput("viewer must be a string, got NoneType")
    who = viewer(body.get("viewer"))
    return ViewRequest(name, viewed_count(count, who), names, who)


def json_value(text: str, what: str) -> Any:
    """``text`` parsed as JSON (json.JSONDecodeError when it is not JSON, for the caller to word), refusing with
    BadInput, naming ``what``, the JSON the rules cannot take: NaN and Infinity (not JSON), an integer of more than
    4,300 digits and nesting deeper than 32 levels (either would raise in Python and answer 500)."""
    try:
        value = json.loads(
            text,
            parse_int=functools.partial(_json_int, what),
            parse_constant=functools.partial(_json_constant, what),
        )
    except RecursionError:
        raise BadInput(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels") from None
    if _json_depth(value) > MAX_JSON_DEPTH:
        raise BadInput(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def json_kind(value: Any) -> str:
    """The JSON name of a parsed value's type, for a message (``got array``)."""
    if isinstance(value, bool):
        return "boolean"
    names = {dict: "object", list: "array", str: "string", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _json_int(what: str, digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > MAX_JSON_DIGITS:
        raise BadInput(f"{what} holds a number of {count} digits; the most is {MAX_JSON_DIGITS}")
    return int(digits)


def _json_constant(what: str, name: str) -> Any:
    raise BadInput(f"{what} is not valid JSON: {name} is not a JSON value")


def _json_depth(value: Any) -> int:
    """How deeply ``value`` nests (a scalar 0, ``{}`` 1), counted without recursion; stops past the maximum."""
    deepest, pending = 0, [(value, 1)]
    while pending and deepest <= MAX_JSON_DEPTH:
        node, depth = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in children)
    return deepest


def period_kind(value: str | None, configured: tuple[str, ...]) -> str:
    """The ``period`` query parameter: ``all`` (the default) or a configured kind."""
    if value in (None, "", ALL):
        return ALL
    if value not in configured:
        choices = ", ".join((ALL, *configured))
        raise BadInput(f"period must be one of {choices}, got {_shown(value)}")
    return value


def window_name(value: str, configured: Sequence[Window]) -> Window:
    """The ``window`` query parameter: one of the stack's rolling windows (its Periods name them: ``24h``, ``7d``)."""
    chosen = next((window for window in configured if window.name == value), None)
    if chosen is None:
        names = ", ".join(window.name for window in configured)
        choices = f"one of {names}" if names else "none here (add one like 24h to the stack's Periods)"
        raise BadInput(f"window must be {choices}, got {_shown(value)}")
    return chosen


def moment(value: str | datetime | None) -> datetime | None:
    """The ``at`` of a read: an ISO-8601 date or date-time (UTC unless it says otherwise), or a datetime (the
    library's; naive means UTC); None: now. In UTC it must fall in the years 1-9999, what a datetime holds: an offset
    can move ``0001-01-01T00:00:00+01:00`` before the first instant."""
    if value is None or value == "":
        return None
    try:
        return utc(value) if isinstance(value, datetime) else parse_time(value)
    except PeriodError:
        shown = value.isoformat() if isinstance(value, datetime) else value
        raise BadInput(
            f"at must be an ISO-8601 date or date-time from 0001-01-01 to 9999-12-31 in UTC, like 2026-11-23,"
            f" got {_shown(shown)}"
        ) from None


def limit_of(value: str, maximum: int, name: str) -> int:
    """A whole number 1..maximum named ``name`` (required: empty is refused)."""
    if value == "":
        raise BadInput(f"{name} must be a whole number from 1 to {maximum}, got ''")
    return _whole(value, 1, maximum, name)


def offset_of(value: str, depth: int) -> int:
    """``offset``: 0..depth-1 (default 0)."""
    return 0 if value == "" else _whole(value, 0, depth - 1, "offset")


def _whole(value: str, low: int, high: int, name: str) -> int:
    # ASCII digits only, as ``limit`` says; longer than the bound's digits is out of range.
    if not (value.isascii() and value.isdigit()):
        raise BadInput(f"{name} must be a whole number from {low} to {high}, got {_shown(value)}")
    digits = value.lstrip("0") or "0"
    if len(digits) > len(str(high)) or not low <= int(digits) <= high:
        raise BadInput(f"{name} must be from {low} to {high}, got {_shown(digits, quoted=False)}")
    return int(digits)


def limit(value: str | None, maximum: int) -> int:
    """Parse the ``limit`` query parameter: 1..maximum, defaulting to maximum."""
    if value is None or value == "":
        return maximum
    # ASCII digits only: str.isdigit() also takes "²" (which int() refuses) and "٣" (which int() reads as 3).
    if not (value.isascii() and value.isdigit()):
        raise BadInput(f"limit must be a whole number from 1 to {maximum}, got {_shown(value)}")
    digits = value.lstrip("0") or "0"
    # Longer than the maximum's digits is out of range; int() itself refuses strings of over 4,300 digits.
    if len(digits) > len(str(maximum)) or not 1 <= int(digits) <= maximum:
        raise BadInput(f"limit must be from 1 to {maximum}, got {_shown(digits, quoted=False)}")
    return int(digits)


def _shown(value: str, *, quoted: bool = True, width: int = 40) -> str:
    """``value`` for a one-line message: repr'd (escapes newlines) unless ``quoted`` is off, and cut to ``width``."""
    text = repr(value) if quoted else value
    return text if len(text) <= width else text[: width - 3] + "..."
