"""DynamoDB's expression language, the subset the adapters send, evaluated on items in the wire format.

Update expressions (SET with ``if_not_exists``, ``list_append``, ``+``/``-``; ADD; REMOVE; DELETE), conditions
(comparisons, ``BETWEEN``, ``IN``, ``AND``/``OR``/``NOT``, parentheses, ``attribute_exists``,
``attribute_not_exists``, ``attribute_type``, ``begins_with``, ``contains``, ``size``), key conditions and
projections; paths ``a.b``, ``#name`` and ``a[0]``. A text is parsed once (``functools.lru_cache``): the adapters
send the same few texts with different values. What the parser does not know raises :class:`ExpressionError`, which
the engine answers with DynamoDB's ``ValidationException``.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

Value = Mapping[str, Any]
Item = dict[str, Any]
Names = Mapping[str, str]
Values = Mapping[str, Value]

# DynamoDB numbers: 38 significant digits.
_NUMBERS = Context(prec=38)
_TOKEN = re.compile(r"\s*(?:(?P<op><>|<=|>=|[=<>(),.\[\]+-])|(?P<index>\d+)|(?P<word>[#:]?[A-Za-z_][A-Za-z0-9_]*))")
_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "BETWEEN", "SET", "ADD", "REMOVE", "DELETE"})
_COMPARISONS = frozenset({"=", "<>", "<", "<=", ">", ">="})


class ExpressionError(ValueError):
    """An expression DynamoDB would refuse (or that this engine does not execute): a ValidationException."""


# -- the syntax tree
@dataclass(frozen=True)
class Path:
    elements: tuple[str | int, ...]  # names (maybe ``#placeholders``) and list indexes

    def resolve(self, names: Names) -> tuple[str | int, ...]:
        return tuple(_name(e, names) if isinstance(e, str) else e for e in self.elements)


@dataclass(frozen=True)
class Placeholder:
    name: str  # ``:value``


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Arithmetic:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class Compare:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class Between:
    subject: Any
    low: Any
    high: Any


@dataclass(frozen=True)
class In:
    subject: Any
    choices: tuple[Any, ...]


@dataclass(frozen=True)
class Logical:
    op: str  # AND, OR
    left: Any
    right: Any


@dataclass(frozen=True)
class Not:
    operand: Any


@dataclass(frozen=True)
class Action:
    verb: str  # SET, ADD, REMOVE, DELETE
    path: Path
    operand: Any = None


# -- parsing
class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        position = 0
        text = text.rstrip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None or match.end() == position:
                raise ExpressionError(f"Invalid expression: syntax error near {text[position : position + 20]!r}")
            kind = match.lastgroup or ""
            token = match.group(kind)
            if kind == "word" and token.upper() in _KEYWORDS:
                kind, token = "keyword", token.upper()
            self.tokens.append((kind, token))
            position = match.end()
        self.at = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self, token: str | None = None) -> str:
        kind, text = self.peek()
        if kind == "end" or (token is not None and text != token):
            raise ExpressionError(f"Invalid expression: expected {token or 'a token'}, found {text or 'the end'}")
        self.at += 1
        return text

    def accept(self, token: str) -> bool:
        if self.peek()[1] == token:
            self.at += 1
            return True
        return False

    def done(self) -> None:
        if self.peek()[0] != "end":
            raise ExpressionError(f"Invalid expression: unexpected {self.peek()[1]!r}")

    # conditions: OR < AND < NOT < comparison
    def condition(self) -> Any:
        left = self.conjunction()
        while self.accept("OR"):
            left = Logical("OR", left, self.conjunction())
        return left

    def conjunction(self) -> Any:
        left = self.negation()
        while self.accept("AND"):
            left = Logical("AND", left, self.negation())
        return left

    def negation(self) -> Any:
        if self.accept("NOT"):
            return Not(self.negation())
        return self.comparison()

    def comparison(self) -> Any:
        if self.peek()[1] == "(":
            # A parenthesised condition, unless it is an operand (nothing here groups operands).
            self.take("(")
            inner = self.condition()
            self.take(")")
            return inner
        left = self.operand()
        token = self.peek()[1]
        if token in _COMPARISONS:
            self.take()
            return Compare(token, left, self.operand())
        if self.accept("BETWEEN"):
            low = self.operand()
            self.take("AND")
            return Between(left, low, self.operand())
        if self.accept("IN"):
            self.take("(")
            choices = [self.operand()]
            while self.accept(","):
                choices.append(self.operand())
            self.take(")")
            return In(left, tuple(choices))
        if isinstance(left, Call) and left.function in _PREDICATES:
            return left
        raise ExpressionError("Invalid ConditionExpression: an operand is not a condition")

    def operand(self) -> Any:
        kind, token = self.peek()
        if kind == "word" and token.startswith(":"):
            self.take()
            return Placeholder(token)
        if kind == "word" and not token.startswith("#") and self.tokens[self.at + 1 :][:1] == [("op", "(")]:
            self.take()
            self.take("(")
            args = [self.operand()]
            while self.accept(","):
                args.append(self.operand())
            self.take(")")
            if token not in _FUNCTIONS:
                raise ExpressionError(f"Invalid function name; function: {token}")
            return Call(token, tuple(args))
        return self.path()

    def path(self) -> Path:
        kind, token = self.peek()
        if kind != "word" or token.startswith(":"):
            raise ExpressionError(f"Invalid expression: expected an attribute name, found {token or 'the end'}")
        self.take()
        elements: list[str | int] = [token]
        while True:
            if self.accept("."):
                kind, token = self.peek()
                if kind != "word" or token.startswith(":"):
                    raise ExpressionError("Invalid document path")
                elements.append(self.take())
            elif self.accept("["):
                kind, token = self.peek()
                if kind != "index":
                    raise ExpressionError("Invalid list index")
                elements.append(int(self.take()))
                self.take("]")
            else:
                return Path(tuple(elements))

    # updates
    def update(self) -> tuple[Action, ...]:
        actions: list[Action] = []
        seen: set[str] = set()
        while self.peek()[0] != "end":
            verb = self.take()
            if verb not in ("SET", "ADD", "REMOVE", "DELETE") or verb in seen:
                raise ExpressionError(f"Invalid UpdateExpression: unexpected {verb!r}")
            seen.add(verb)
            actions.append(self.action(verb))
            while self.accept(","):
                actions.append(self.action(verb))
        if not actions:
            raise ExpressionError("Invalid UpdateExpression: The expression can not be empty")
        return tuple(actions)

    def action(self, verb: str) -> Action:
        path = self.path()
        if verb == "REMOVE":
            return Action(verb, path)
        if verb != "SET":
            return Action(verb, path, self.operand())
        self.take("=")
        value = self.operand()
        if self.peek()[1] in ("+", "-"):
            op = self.take()
            value = Arithmetic(op, value, self.operand())
        return Action(verb, path, value)


@functools.lru_cache(maxsize=1024)
def parse_condition(text: str) -> Any:
    parser = _Parser(text)
    tree = parser.condition()
    parser.done()
    return tree


@functools.lru_cache(maxsize=1024)
def parse_update(text: str) -> tuple[Action, ...]:
    parser = _Parser(text)
    actions = parser.update()
    parser.done()
    return actions


@functools.lru_cache(maxsize=1024)
def parse_projection(text: str) -> tuple[Path, ...]:
    parser = _Parser(text)
    paths = [parser.path()]
    while parser.accept(","):
        paths.append(parser.path())
    parser.done()
    return tuple(paths)


# -- values
def _name(element: str, names: Names) -> str:
    if element.startswith("#"):
        try:
            return names[element]
        except KeyError:
            raise ExpressionError(
                f"Value provided in ExpressionAttributeNames unused or undefined: {element}"
            ) from None
    return element


def _value(placeholder: Placeholder, values: Values) -> Value:
    try:
        return values[placeholder.name]
    except KeyError:
        raise ExpressionError(
            f"An expression attribute value used in expression is not defined; attribute value: {placeholder.name}"
        ) from None


def number(text: str) -> Decimal:
    return Decimal(text)


def format_number(value: Decimal) -> str:
    """A number as DynamoDB returns it: no exponent, no trailing fractional zeros."""
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(_NUMBERS), "f")


def get_path(item: Mapping[str, Any] | None, path: tuple[str | int, ...]) -> Value | None:
    """The value at ``path`` (resolved names), or None when any step is missing."""
    current: Any = {"M": item} if item is not None else None
    for element in path:
        if current is None:
            return None
        if isinstance(element, int):
            members = current.get("L")
            current = members[element] if members is not None and element < len(members) else None
        else:
            members = current.get("M")
            current = members.get(element) if members is not None else None
    return current  # type: ignore[no-any-return]


def _plain(value: Value) -> tuple[str, Any]:
    (dtype, raw), *_ = value.items()
    if dtype == "N":
        return dtype, Decimal(raw)
    if dtype in ("SS", "BS"):
        return dtype, frozenset(raw)
    if dtype == "NS":
        return dtype, frozenset(Decimal(n) for n in raw)
    if dtype == "L":
        return dtype, tuple(_plain(v) for v in raw)
    if dtype == "M":
        return dtype, tuple(sorted((k, _plain(v)) for k, v in raw.items()))
    return dtype, raw


def equal(left: Value | None, right: Value | None) -> bool:
    if left is None or right is None:
        return False
    return _plain(left) == _plain(right)


def _ordered(left: Value | None, right: Value | None, op: str) -> bool:
    if left is None or right is None:
        return False
    (lkind, lraw), (rkind, rraw) = _plain(left), _plain(right)
    if lkind != rkind or lkind not in ("S", "N", "B"):
        return False
    if op == "<":
        return bool(lraw < rraw)
    if op == "<=":
        return bool(lraw <= rraw)
    if op == ">":
        return bool(lraw > rraw)
    return bool(lraw >= rraw)


_TYPES = frozenset({"S", "SS", "N", "NS", "B", "BS", "BOOL", "NULL", "L", "M"})


def _size(value: Value | None) -> Value | None:
    if value is None:
        return None
    (dtype, raw), *_ = value.items()
    if dtype == "S":
        return {"N": str(len(raw))}
    if dtype in ("B", "SS", "NS", "BS", "L", "M"):
        return {"N": str(len(raw))}
    raise ExpressionError(
        f"Invalid ConditionExpression: Incorrect operand type for operator or function; size: {dtype}"
    )


def _begins_with(subject: Value | None, prefix: Value | None) -> bool:
    if subject is None or prefix is None:
        return False
    (dtype, raw), *_ = subject.items()
    (pkind, praw), *_ = prefix.items()
    return dtype == pkind and dtype in ("S", "B") and raw.startswith(praw)


def _contains(subject: Value | None, operand: Value | None) -> bool:
    if subject is None or operand is None:
        return False
    (dtype, raw), *_ = subject.items()
    (okind, oraw), *_ = operand.items()
    if dtype == "S" and okind == "S":
        return bool(oraw in raw)
    if dtype in ("SS", "NS", "BS"):
        if okind != dtype[0]:
            return False
        return _plain(operand)[1] in _plain(subject)[1]
    if dtype == "L":
        return any(equal(member, operand) for member in raw)
    return False


_PREDICATES = frozenset({"attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains"})
_FUNCTIONS = _PREDICATES | {"size", "if_not_exists", "list_append"}


class Evaluator:
    """One request's names and values, applied to one item."""

    def __init__(self, names: Names | None, values: Values | None) -> None:
        self.names: Names = names or {}
        self.values: Values = values or {}

    def operand(self, node: Any, item: Mapping[str, Any] | None) -> Value | None:
        if isinstance(node, Placeholder):
            return _value(node, self.values)
        if isinstance(node, Path):
            return get_path(item, node.resolve(self.names))
        if isinstance(node, Call):
            if node.function == "size":
                return _size(self.operand(node.args[0], item))
            if node.function == "if_not_exists":
                present = self.operand(node.args[0], item)
                return present if present is not None else self.operand(node.args[1], item)
            if node.function == "list_append":
                return self._list_append(node, item)
            raise ExpressionError(f"Invalid expression: {node.function} is not an operand")
        if isinstance(node, Arithmetic):
            return self._arithmetic(node, item)
        raise ExpressionError("Invalid expression")

    def _required(self, node: Any, item: Mapping[str, Any] | None) -> Value:
        value = self.operand(node, item)
        if value is None:
            raise ExpressionError("The provided expression refers to an attribute that does not exist in the item")
        return value

    def _list_append(self, node: Call, item: Mapping[str, Any] | None) -> Value:
        left, right = (self._required(arg, item) for arg in node.args)
        if "L" not in left or "L" not in right:
            raise ExpressionError("Invalid UpdateExpression: Incorrect operand type for operator or function")
        return {"L": [*left["L"], *right["L"]]}

    def _arithmetic(self, node: Arithmetic, item: Mapping[str, Any] | None) -> Value:
        left, right = self._required(node.left, item), self._required(node.right, item)
        if "N" not in left or "N" not in right:
            raise ExpressionError("An operand in the update expression has an incorrect data type")
        a, b = Decimal(left["N"]), Decimal(right["N"])
        return {"N": format_number(_NUMBERS.add(a, b) if node.op == "+" else _NUMBERS.subtract(a, b))}

    def holds(self, node: Any, item: Mapping[str, Any] | None) -> bool:  # noqa: PLR0911 - one branch per form
        if isinstance(node, Logical):
            if node.op == "AND":
                return self.holds(node.left, item) and self.holds(node.right, item)
            return self.holds(node.left, item) or self.holds(node.right, item)
        if isinstance(node, Not):
            return not self.holds(node.operand, item)
        if isinstance(node, Compare):
            left, right = self.operand(node.left, item), self.operand(node.right, item)
            if node.op == "=":
                return equal(left, right)
            if node.op == "<>":
                return not equal(left, right)
            return _ordered(left, right, node.op)
        if isinstance(node, Between):
            subject = self.operand(node.subject, item)
            low, high = self.operand(node.low, item), self.operand(node.high, item)
            return _ordered(subject, low, ">=") and _ordered(subject, high, "<=")
        if isinstance(node, In):
            subject = self.operand(node.subject, item)
            return any(equal(subject, self.operand(choice, item)) for choice in node.choices)
        if isinstance(node, Call):
            return self._predicate(node, item)
        raise ExpressionError("Invalid ConditionExpression")

    def _predicate(self, node: Call, item: Mapping[str, Any] | None) -> bool:
        if node.function in ("attribute_exists", "attribute_not_exists"):
            if not isinstance(node.args[0], Path):
                raise ExpressionError(f"Invalid ConditionExpression: {node.function} takes a path")
            present = self.operand(node.args[0], item) is not None
            return present if node.function == "attribute_exists" else not present
        first, second = self.operand(node.args[0], item), self.operand(node.args[1], item)
        if node.function == "attribute_type":
            if second is None or second.get("S") not in _TYPES:
                raise ExpressionError("Invalid ConditionExpression: Invalid attribute type name")
            return first is not None and second["S"] in first
        if node.function == "begins_with":
            return _begins_with(first, second)
        return _contains(first, second)

    # -- updates
    def update(self, actions: tuple[Action, ...], item: Item, keys: tuple[str, ...] = ()) -> Item:
        """A new item: ``actions`` applied to a copy of ``item`` (every operand read from the item as it was);
        ``keys`` (the table's key attributes) may not be touched."""
        new = dict(item)
        touched: list[tuple[str | int, ...]] = []
        for action in actions:
            path = action.path.resolve(self.names)
            if path[0] in keys:
                raise ExpressionError(
                    f"One or more parameter values were invalid: Cannot update attribute {path[0]}. "
                    "This attribute is part of the key"
                )
            for other in touched:
                if other[: len(path)] == path[: len(other)]:
                    raise ExpressionError(
                        "Invalid UpdateExpression: Two document paths overlap with each other; "
                        "must remove or rewrite one of these paths"
                    )
            touched.append(path)
            _APPLY[action.verb](self, action, path, item, new)
        return new

    def _set(self, action: Action, path: tuple[str | int, ...], old: Item, new: Item) -> None:
        _put(new, path, self._required(action.operand, old))

    def _remove(self, action: Action, path: tuple[str | int, ...], old: Item, new: Item) -> None:
        _delete(new, path)

    def _add(self, action: Action, path: tuple[str | int, ...], old: Item, new: Item) -> None:
        delta = self._required(action.operand, old)
        present = get_path(old, path)
        if "N" in delta:
            if present is not None and "N" not in present:
                raise ExpressionError("An operand in the update expression has an incorrect data type")
            total = Decimal(present["N"]) + Decimal(delta["N"]) if present is not None else Decimal(delta["N"])
            _put(new, path, {"N": format_number(total)})
            return
        dtype = next(iter(delta))
        if dtype not in ("SS", "NS", "BS") or (present is not None and dtype not in present):
            raise ExpressionError("Invalid UpdateExpression: Incorrect operand type for operator or function")
        members = list(present[dtype]) if present is not None else []
        members.extend(m for m in delta[dtype] if m not in members)
        _put(new, path, {dtype: members})

    def _delete_from_set(self, action: Action, path: tuple[str | int, ...], old: Item, new: Item) -> None:
        delta = self._required(action.operand, old)
        dtype = next(iter(delta))
        present = get_path(old, path)
        if dtype not in ("SS", "NS", "BS") or (present is not None and dtype not in present):
            raise ExpressionError("Invalid UpdateExpression: Incorrect operand type for operator or function")
        if present is None:
            return
        gone = _plain(delta)[1]
        kept = [m for m in present[dtype] if _plain({dtype: [m]})[1].isdisjoint(gone)]
        if kept:
            _put(new, path, {dtype: kept})
        else:
            _delete(new, path)


_APPLY: dict[str, Callable[[Evaluator, Action, tuple[str | int, ...], Item, Item], None]] = {
    "SET": Evaluator._set,
    "REMOVE": Evaluator._remove,
    "ADD": Evaluator._add,
    "DELETE": Evaluator._delete_from_set,
}


def _container(item: Item, path: tuple[str | int, ...]) -> Any:
    """The (copied) parent of ``path``'s last element inside ``item``, for a write; refuses a missing parent."""
    if len(path) == 1:
        return item
    parent: Any = item
    for element, following in itertools.pairwise(path):
        if isinstance(parent, dict):
            child = parent.get(element)
        else:
            child = parent[element] if isinstance(element, int) and element < len(parent) else None
        wanted = "L" if isinstance(following, int) else "M"
        if child is None or wanted not in child:
            raise ExpressionError("The document path provided in the update expression is invalid for update")
        copied = list(child["L"]) if wanted == "L" else dict(child["M"])
        parent[element] = {wanted: copied}
        parent = copied
    return parent


def _put(item: Item, path: tuple[str | int, ...], value: Value) -> None:
    parent = _container(item, path)
    last = path[-1]
    if isinstance(last, int):
        if last < len(parent):
            parent[last] = value
        else:
            parent.append(value)  # past the end: appended, as DynamoDB does
    else:
        parent[last] = value


def _delete(item: Item, path: tuple[str | int, ...]) -> None:
    try:
        parent = _container(item, path)
    except ExpressionError:
        return  # nothing there to remove
    last = path[-1]
    if isinstance(last, int):
        if last < len(parent):
            del parent[last]
    else:
        parent.pop(last, None)


def project(item: Mapping[str, Any], paths: tuple[Path, ...], names: Names) -> Item:
    """The attributes a ProjectionExpression names (nested paths keep their enclosing maps and lists)."""
    projected: Item = {}
    for path in paths:
        resolved = path.resolve(names)
        value = get_path(item, resolved)
        if value is None:
            continue
        if len(resolved) == 1:
            projected[str(resolved[0])] = value
            continue
        _merge(projected, resolved, value)
    return projected


def _merge(target: Item, path: tuple[str | int, ...], value: Value) -> None:
    current: Any = target
    for element, following in itertools.pairwise(path):
        wanted = "L" if isinstance(following, int) else "M"
        key = element if isinstance(current, dict) else len(current)
        holder = current.get(key) if isinstance(current, dict) else None
        if holder is None:
            holder = {wanted: [] if wanted == "L" else {}}
            if isinstance(current, dict):
                current[key] = holder
            else:
                current.append(holder)
        current = holder[wanted]
    if isinstance(current, dict):
        current[path[-1]] = value
    else:
        current.append(value)
