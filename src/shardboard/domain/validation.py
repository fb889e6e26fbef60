"""Input rules shared by the HTTP API and the CLI: bad input is refused before anything is written."""

from __future__ import annotations

import unicodedata
from typing import Any

from shardboard.settings import MAX_VIEWS_PER_REQUEST

MAX_ID_BYTES = 512


class BadInput(ValueError):
    """Input that is refused with a one-line reason (HTTP 400, CLI exit 2)."""


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


def view_request(body: Any) -> tuple[str, int]:
    """Validate a ``POST /views`` body: ``{"id": str, "count": int = 1}``; unknown fields are refused."""
    if not isinstance(body, dict):
        raise BadInput('body must be a JSON object like {"id": "images/001.jpg", "count": 1}')
    unknown = sorted(set(body) - {"id", "count"})
    if unknown:
        raise BadInput(f"unknown field(s): {', '.join(unknown)}")
    if "id" not in body:
        raise BadInput("missing field: id")
    return item_id(body["id"]), view_count(body.get("count", 1))


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
