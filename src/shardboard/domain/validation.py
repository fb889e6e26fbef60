"""Input rules shared by the HTTP API and the CLI: bad input is refused before anything is written."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any, NamedTuple

from shardboard.domain.boards import BOARD_NAME, GLOBAL_BOARD, MAX_BOARDS_PER_VIEW
from shardboard.domain.errors import BadInput as BadInput  # noqa: PLC0414 - re-exported as validation.BadInput
from shardboard.domain.periods import ALL, PeriodError, parse_time
from shardboard.settings import MAX_VIEWS_PER_REQUEST

MAX_ID_BYTES = 512
MAX_VIEWER_CHARS = 128


def item_id(value: Any) -> str:
    """Return ``value`` if it is a valid item id: a non-empty string of at most 512 UTF-8 bytes, no control chars.

    Any other character is allowed (``a#1``, ``x/y.jpg``, ``ünï``, ``a b``): ids are stored as their own attribute
    and never parsed back out of a key.
    """
    if not isinstance(value, str):
        raise BadInput(f"id must be a string, got {type(value).__name__}")
    if value == "":
        raise BadInput("id must not be empty")
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > MAX_ID_BYTES:
        raise BadInput(f"id is {size} bytes; the maximum is {MAX_ID_BYTES} bytes of UTF-8")
    for position, char in enumerate(value):
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise BadInput(f"id contains a control character (U+{ord(char):04X}) at position {position}")
    return value


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


def period_kind(value: str | None, configured: tuple[str, ...]) -> str:
    """The ``period`` query parameter: ``all`` (the default) or a configured kind."""
    if value in (None, "", ALL):
        return ALL
    if value not in configured:
        choices = ", ".join((ALL, *configured))
        raise BadInput(f"period must be one of {choices}, got {_shown(value)}")
    return value


def moment(value: str | None) -> datetime | None:
    """The ``at`` query parameter: an ISO-8601 date or date-time (UTC unless it says otherwise); None: now."""
    if value is None or value == "":
        return None
    try:
        return parse_time(value)
    except PeriodError:
        raise BadInput(f"at must be an ISO-8601 date or date-time like 2026-11-23, got {_shown(value)}") from None


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
