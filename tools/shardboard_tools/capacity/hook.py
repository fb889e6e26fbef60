"""Throttle a real boto3 DynamoDB client (DynamoDB Local, moto) with a CapacityEmulator.

DynamoDB Local never throttles. :func:`attach` registers a handler on the client's ``before-send`` event (for
DynamoDB requests only): each request is priced (see ``capacity.schema``) and, when the emulator refuses it,
answered with the HTTP 400 DynamoDB would send (``ProvisionedThroughputExceededException`` or
``ThrottlingException``, with ``ThrottlingReasons``). ``before-send`` rather than ``before-call``: it runs inside
botocore's retry loop, so the refusal goes through botocore's own retry handler (standard mode retries throttles
with back-off) and only then surfaces as the ``ClientError`` the project's code handles (partial batch failures,
the shard router).

Pricing a write needs the item as it stands: the hook reads it first with a private, unthrottled client (a
consistent GetItem that is not charged) and applies the request's SET/ADD/REMOVE clauses to predict the new image.
Forms it cannot evaluate (arithmetic in SET, list_append) keep the old image, which prices the base write and any
index entry that does not move. A write that will fail its condition is priced as if it succeeded (index writes
included), a slight over-charge. A Query or Scan is refused only when its partition is already at its limit; what
it read is booked after the response (its size is unknown before).

:func:`install_from_env` is the local runtime's opt-in: with ``SHARDBOARD_EMULATE_CAPACITY=1`` every DynamoDB client
the process creates afterwards (the CLI's and the in-process handlers') is throttled on a real clock.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from io import BytesIO
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ClientError

from shardboard_tools.capacity.emulator import CapacityEmulator, Charge, Limits, RealClock, error_document
from shardboard_tools.capacity.schema import TableSchema
from shardboard_tools.capacity.units import Item, item_size, query_units, read_units

EMULATE_ENV = "SHARDBOARD_EMULATE_CAPACITY"
DYNAMODB_TARGET = "DynamoDB_20120810."
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
_CLAUSE = re.compile(r"\b(SET|ADD|REMOVE|DELETE)\b", re.IGNORECASE)
# Actions are comma-separated, but so are a function's arguments: split on commas outside parentheses.
_ACTIONS = re.compile(r",(?![^()]*\))")
_IF_NOT_EXISTS = re.compile(r"^if_not_exists\(\s*([^,\s]+)\s*,\s*(:\w+)\s*\)$")
_HASH_CONDITION = re.compile(r"([#\w.]+)\s*=\s*(:\w+)")
_READ_CONTEXT = "shardboard_tools.capacity.read"
_INSTALLED: dict[int, ThrottlingHook] = {}


class _Body(BytesIO):
    """What botocore reads an HTTP response body through."""

    def stream(self, **_: Any) -> Any:
        yield self.getvalue()


class ThrottlingHook:
    """Prices and admits each request of the clients it is attached to; see the module docstring."""

    def __init__(self, emulator: CapacityEmulator, schemas: Mapping[str, TableSchema], peek: Any) -> None:
        self.emulator = emulator
        self.schemas = dict(schemas)
        self.peek = peek

    def attach(self, events: Any) -> None:
        """Register on a client's (``client.meta.events``) or a session's event emitter, ahead of moto's stub."""
        # On the bare event: handlers of less specific events run first, and moto's stub is on "before-send".
        events.register_first("before-send", self.before_send)
        for operation in ("Query", "Scan"):
            events.register(f"before-call.dynamodb.{operation}", self.remember_read)
            events.register(f"after-call.dynamodb.{operation}", self.after_read)

    def detach(self, events: Any) -> None:
        events.unregister("before-send", self.before_send)
        for operation in ("Query", "Scan"):
            events.unregister(f"before-call.dynamodb.{operation}", self.remember_read)
            events.unregister(f"after-call.dynamodb.{operation}", self.after_read)

    def before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else str(target)
        if not target.startswith(DYNAMODB_TARGET):
            return None  # another service's request (the hook may sit on a whole session)
        operation = target.split(".")[-1]
        body = json.loads(request.body or b"{}")
        schema = self.schemas.get(body.get("TableName", ""))
        if schema is None:
            return None
        try:
            self.emulator.admit(operation, self.charges(operation, body, schema))
        except ClientError as refused:
            return _refusal(request.url, refused)
        return None

    def remember_read(self, params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        """Note which partition a Query or Scan reads, for ``after_read`` (the context travels with the call)."""
        body = json.loads(params.get("body") or b"{}")
        schema = self.schemas.get(body.get("TableName", ""))
        if schema is not None:
            context[_READ_CONTEXT] = self._read_admission(
                params.get("headers", {}).get("X-Amz-Target", ""), body, schema
            )

    def after_read(self, parsed: Mapping[str, Any], context: Mapping[str, Any], **_: Any) -> None:
        """Book what a Query or Scan returned, less the minimum admitted before it was sent."""
        admitted = context.get(_READ_CONTEXT)
        items = parsed.get("Items", [])
        if isinstance(admitted, Charge) and items:
            units = max(0.0, query_units(item_size(i) for i in items) - admitted.units)
            self.emulator.record([Charge(admitted.table, admitted.resource, admitted.partition, "read", units)])

    def charges(self, operation: str, body: Mapping[str, Any], schema: TableSchema) -> list[Charge]:
        """What ``operation`` will consume, by partition key value."""
        if operation in WRITES:
            key = body.get("Key") or {name: body["Item"][name] for name in schema.keys}
            old = self._current(schema.name, key)
            return schema.write_charges(key, old, _predicted(operation, body, old))
        if operation == "GetItem":
            item = self._current(schema.name, body["Key"])
            units = read_units(item_size(item), bool(body.get("ConsistentRead")))
            return [Charge(schema.name, schema.name, schema.partition_of(body["Key"]), "read", units)]
        if operation in ("Query", "Scan"):
            return [self._read_admission(operation, body, schema)]
        return []  # other operations (batch and transactional calls) pass unpriced

    def _read_admission(self, operation: str, body: Mapping[str, Any], schema: TableSchema) -> Charge:
        """A Query's minimum (0.5 units on its partition) or a Scan page's (table-wide); the rest is booked after."""
        resource, partition = schema.name, None
        if operation.endswith("Query"):
            index = schema.index(body["IndexName"]) if body.get("IndexName") else None
            hash_key = index.hash_key if index else schema.hash_key
            names = body.get("ExpressionAttributeNames", {})
            for path, placeholder in _HASH_CONDITION.findall(body.get("KeyConditionExpression", "")):
                if names.get(path, path) == hash_key:
                    partition = str(next(iter(body["ExpressionAttributeValues"][placeholder].values())))
            resource = schema.resource(index) if index else schema.name
        return Charge(schema.name, resource, partition, "read", 0.5)

    def _current(self, table: str, key: Mapping[str, Any]) -> Item | None:
        response = self.peek.get_item(TableName=table, Key=dict(key), ConsistentRead=True)
        item: Item | None = response.get("Item")
        return item


def _refusal(url: str, refused: ClientError) -> AWSResponse:
    error = refused.response["Error"]
    reasons: list[dict[str, str]] = refused.response.get("ThrottlingReasons") or [{}]  # type: ignore[assignment]
    reason = reasons[0]
    document = error_document(
        str(error["Code"]), str(error["Message"]), str(reason.get("reason", "")), str(reason.get("resource", ""))
    )
    headers = HTTPHeaders()
    headers["Content-Type"] = "application/x-amz-json-1.0"
    headers["x-amzn-RequestId"] = "capacity-emulator"
    return AWSResponse(url, 400, headers, _Body(json.dumps(document).encode()))


def _predicted(operation: str, body: Mapping[str, Any], old: Item | None) -> Item | None:
    """The item after the request, as far as the expression forms our store uses allow (see module docstring)."""
    if operation == "DeleteItem":
        return None
    if operation == "PutItem":
        return dict(body["Item"])
    new: dict[str, Any] = {**(old or {}), **body["Key"]}
    names = body.get("ExpressionAttributeNames", {})
    values = body.get("ExpressionAttributeValues", {})
    parts = _CLAUSE.split(body.get("UpdateExpression", ""))
    for verb, clause in zip(parts[1::2], parts[2::2], strict=True):
        for action in (a.strip() for a in _ACTIONS.split(clause) if a.strip()):
            _apply(verb.upper(), action, names, values, new)
    return new


def _apply(verb: str, action: str, names: Mapping[str, str], values: Mapping[str, Any], item: dict[str, Any]) -> None:
    if verb == "REMOVE":
        item.pop(names.get(action, action), None)
        return
    if verb == "ADD":
        path, placeholder = action.split()
        name, delta = names.get(path, path), values[placeholder]
        if "N" in delta:
            item[name] = {"N": str(_number(item.get(name)) + _number(delta))}
        return
    if verb == "SET" and "=" in action:
        path, expression = (side.strip() for side in action.split("=", 1))
        name = names.get(path, path)
        default = _IF_NOT_EXISTS.match(expression)
        if default:
            item.setdefault(name, values[default.group(2)])
        elif expression in values:
            item[name] = values[expression]


def _number(value: Mapping[str, Any] | None) -> int:
    return int(value["N"]) if value else 0


def attach(client: Any, schemas: Mapping[str, TableSchema], emulator: CapacityEmulator | None = None) -> ThrottlingHook:
    """Throttle ``client`` (priced with ``schemas``); returns the hook, whose ``emulator`` holds the usage."""
    peek = _peek_client(client)
    hook = ThrottlingHook(emulator or CapacityEmulator(RealClock()), schemas, peek)
    hook.attach(client.meta.events)
    return hook


def install_from_env(
    create_table_requests: Mapping[str, Mapping[str, Any]], limits: Limits | None = None
) -> ThrottlingHook | None:
    """With SHARDBOARD_EMULATE_CAPACITY=1, throttle every DynamoDB client the default boto3 session creates next."""
    if os.environ.get(EMULATE_ENV, "").lower() not in ("1", "true", "yes"):
        return None
    schemas = {r["TableName"]: TableSchema.from_create_table(r) for r in create_table_requests.values()}
    session = boto3._get_default_session()  # the session boto3.client() uses
    installed = _INSTALLED.get(id(session))
    if installed is not None:  # once per session: one emulator sees every client's requests
        installed.schemas.update(schemas)
        return installed
    peek = boto3.Session().client("dynamodb", region_name=session.region_name or "us-east-1")
    hook = _INSTALLED[id(session)] = ThrottlingHook(CapacityEmulator(RealClock(), limits), schemas, peek)
    hook.attach(session.events)
    return hook


def uninstall() -> None:
    """Remove the session-wide hook (tests)."""
    session = boto3._get_default_session()
    hook = _INSTALLED.pop(id(session), None)
    if hook is not None:
        hook.detach(session.events)


def _peek_client(client: Any) -> Any:
    """An unthrottled client to the same endpoint (a fresh session: the hooked one's handlers are not copied)."""
    return boto3.Session().client(
        "dynamodb", region_name=client.meta.region_name, endpoint_url=client.meta.endpoint_url
    )
