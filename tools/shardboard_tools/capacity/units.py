"""Capacity units the way DynamoDB computes them, on items in the wire format (``{"S": ...}``, ``{"N": ...}``).

Sizes follow the DynamoDB developer guide ("Item sizes and formats"): an attribute costs its name's UTF-8 bytes
plus its value; strings and binaries their byte length; numbers 1 byte per two significant digits plus 1; booleans
and nulls 1; lists and maps 3 bytes plus 1 byte per element plus the elements. A write costs 1 unit per started KB
of the larger of the item before and after it; a read 1 unit per started 4 KB (strongly consistent) or half that
(eventually consistent); a query sums the sizes of the items it returns before rounding up.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
# A list or map costs 3 bytes of overhead plus 1 byte per element.
_CONTAINER_BYTES = 3
_ELEMENT_BYTES = 1

Item = Mapping[str, Mapping[str, Any]]


def number_size(text: str) -> int:
    """Bytes of a DynamoDB number: leading/trailing zeros trimmed, 1 byte per two significant digits, plus 1."""
    digits = text.lstrip("+-").replace(".", "").lstrip("0")
    if "e" in digits.lower():  # scientific notation: the mantissa carries the significant digits
        digits = digits.lower().split("e", 1)[0]
    digits = digits.rstrip("0") or "0"
    return math.ceil(len(digits) / 2) + 1


def _utf8_size(raw: Any) -> int:
    return len(str(raw).encode("utf-8", errors="surrogatepass"))


def _list_size(raw: Any) -> int:
    return _CONTAINER_BYTES + sum(_ELEMENT_BYTES + value_size(member) for member in raw)


def _map_size(raw: Any) -> int:
    return _CONTAINER_BYTES + sum(
        _ELEMENT_BYTES + len(name.encode("utf-8")) + value_size(member) for name, member in raw.items()
    )


_SIZES: dict[str, Callable[[Any], int]] = {
    "S": _utf8_size,
    "N": lambda raw: number_size(str(raw)),
    "B": len,
    "BOOL": lambda _: 1,
    "NULL": lambda _: 1,
    "SS": lambda raw: sum(_utf8_size(member) for member in raw),
    "NS": lambda raw: sum(number_size(str(member)) for member in raw),
    "BS": lambda raw: sum(len(member) for member in raw),
    "L": _list_size,
    "M": _map_size,
}


def value_size(value: Mapping[str, Any]) -> int:
    """Bytes of one typed attribute value."""
    (kind, raw), *_ = value.items()
    try:
        size = _SIZES[kind]
    except KeyError:
        raise ValueError(f"unknown DynamoDB type {kind!r}") from None
    return size(raw)


def item_size(item: Item | None) -> int:
    """Bytes of an item: every attribute's name plus its value (0 for no item)."""
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def write_units(*sizes: int) -> int:
    """Write units of one item write: 1 per started KB of the largest image, at least 1 (also for a refused write)."""
    return max(1, math.ceil(max(sizes, default=0) / WRITE_UNIT_BYTES))


def read_units(size: int, consistent: bool) -> float:
    """Read units of reading ``size`` bytes: 1 per started 4 KB, half when eventually consistent; at least 1 step."""
    steps = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(steps) if consistent else steps / 2


def query_units(sizes: Iterable[int], consistent: bool = False) -> float:
    """A Query's read units: the returned items' sizes are summed before rounding up to 4 KB."""
    return read_units(sum(sizes), consistent)
