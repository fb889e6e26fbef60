"""Lambda event filtering (FilterCriteria) for stream records, as the event source mapping applies it.

A pattern is a JSON object mirroring the record: a nested object descends into the record, a list holds the
accepted values (any one matches). Besides literal values the list may hold the comparison objects Lambda
supports: ``prefix``, ``suffix``, ``equals-ignore-case``, ``anything-but``, ``numeric`` and ``exists``.
A record matches a mapping's criteria when it matches any one of its filters.

The rules are EventBridge's, as Lambda documents them: ``numeric`` compares JSON numbers only, so a DynamoDB number
(``{"N": "5"}``, a string) never matches one; ``exists`` looks at leaves only, so ``{"NewImage": [{"exists": true}]}``
never matches (NewImage is an object) and ``{"item_id": {"S": [{"exists": true}]}}`` is the way to test a field.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

_MISSING = object()
_NUMERIC: dict[str, Callable[[float, float], bool]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def matches_any(patterns: Iterable[Mapping[str, Any]], record: Mapping[str, Any]) -> bool:
    return any(matches(pattern, record) for pattern in patterns)


def matches(pattern: Mapping[str, Any], record: Any) -> bool:
    """Does ``record`` satisfy every field of ``pattern``?"""
    for key, expected in pattern.items():
        value = record.get(key, _MISSING) if isinstance(record, Mapping) else _MISSING
        if isinstance(expected, Mapping):
            if value is _MISSING or not matches(expected, value):
                return False
        elif not any(_accepts(rule, value) for rule in _as_list(expected)):
            return False
    return True


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _accepts(rule: Any, value: Any) -> bool:
    if isinstance(rule, Mapping):
        if "exists" in rule:
            return _is_leaf(value) == bool(rule["exists"])
        if value is _MISSING:
            return False
        # A list value (a DynamoDB L/SS attribute) matches when one of its elements does.
        return any(_compare(rule, v) for v in _as_list(value))
    if value is _MISSING:
        return False
    return any(v == rule for v in _as_list(value))


def _is_leaf(value: Any) -> bool:
    """A value at the end of a path: present and not an object (an intermediate node has no value of its own)."""
    return value is not _MISSING and not isinstance(value, Mapping)


def _compare(rule: Mapping[str, Any], value: Any) -> bool:
    ((kind, operand),) = rule.items()
    if kind == "prefix":
        return isinstance(value, str) and value.startswith(operand)
    if kind == "suffix":
        return isinstance(value, str) and value.endswith(operand)
    if kind == "equals-ignore-case":
        return isinstance(value, str) and value.lower() == str(operand).lower()
    if kind == "anything-but":
        if isinstance(operand, Mapping):
            return not _compare(operand, value)
        return value not in _as_list(operand)
    if kind == "numeric":
        return _numeric(operand, value)
    raise ValueError(f"unsupported filter rule {kind!r}")


def _numeric(conditions: list[Any], value: Any) -> bool:
    """``[">", 0, "<=", 5]`` on a JSON number; a string (a DynamoDB ``N`` value included) is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    pairs = zip(conditions[::2], conditions[1::2], strict=True)
    return all(_NUMERIC[op](float(value), float(bound)) for op, bound in pairs)
