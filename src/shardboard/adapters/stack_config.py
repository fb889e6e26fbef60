"""The settings a stack publishes for its clients: one item in its board table, read with one GetItem.

The deploy writes it (template.yaml's StackConfig custom resource) and so does `shardboard init` on DynamoDB Local or
moto, with the same code: the variables are the functions' own environment (``Settings.from_env`` names), so a
Recorder, a Leaderboard or a CLI command given only the stack keys and reads items as the stack's functions do.
Why an item and not an SSM parameter: docs/deploy.md "A stack that describes itself".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shardboard.adapters.dynamodb import error_code, n_attr, s_attr
from shardboard.adapters.keys import (
    PK,
    PUBLISHED_AT,
    PUBLISHED_BY,
    PUBLISHED_FORMAT,
    PUBLISHED_SETTINGS,
    STACK_CONFIG_PK,
)

# The item's layout; a reader ignores variables it does not know, so a newer stack stays readable by older clients.
FORMAT = 1


@dataclass(frozen=True)
class Published:
    """What a stack published: its functions' environment variables (strings, as Lambda gives them)."""

    variables: dict[str, str]
    published_at: str = ""
    published_by: str = ""


@dataclass(frozen=True)
class Lookup:
    """One read of a stack's published settings: what it found, or one line saying why there is nothing."""

    published: Published | None
    why_not: str = ""
    table_missing: bool = False


def read_published(client: Any, board_table: str) -> Lookup:
    """The settings published in ``board_table`` (one strongly consistent GetItem: a client made right after a deploy
    or `shardboard init` sees them). A missing table or a caller without ``dynamodb:GetItem`` on it is an answer,
    not an error; anything else (throttled past retries, unreachable) raises as botocore raised it."""
    try:
        response = client.get_item(TableName=board_table, Key={PK: s_attr(STACK_CONFIG_PK)}, ConsistentRead=True)
    except ClientError as error:
        code = error_code(error)
        if code == "ResourceNotFoundException":
            return Lookup(None, f"there is no table {board_table} (is the stack deployed?)", table_missing=True)
        if code in {"AccessDeniedException", "UnrecognizedClientException"}:
            return Lookup(None, f"cannot read the stack's settings: {code} (grant dynamodb:GetItem on {board_table})")
        raise
    item = response.get("Item")
    if item is None:
        return Lookup(None, f"{board_table} holds no published settings (a stack deployed by an older version)")
    variables = {name: str(value.get("S", "")) for name, value in item.get(PUBLISHED_SETTINGS, {}).get("M", {}).items()}
    at, by = (item.get(name, {}).get("S", "") for name in (PUBLISHED_AT, PUBLISHED_BY))
    return Lookup(Published(variables, at, by))


def publish(client: Any, board_table: str, variables: Mapping[str, str], by: str, *, when: datetime) -> Published:
    """Replace the published settings with ``variables`` (one PutItem: a deploy or a re-run of init wins whole),
    stamped ``when`` (the caller's clock)."""
    at = when.isoformat(timespec="seconds").replace("+00:00", "Z")
    client.put_item(
        TableName=board_table,
        Item={
            PK: s_attr(STACK_CONFIG_PK),
            PUBLISHED_FORMAT: n_attr(FORMAT),
            PUBLISHED_SETTINGS: {"M": {name: s_attr(str(value)) for name, value in sorted(variables.items())}},
            PUBLISHED_AT: s_attr(at),
            PUBLISHED_BY: s_attr(by),
        },
    )
    return Published(dict(variables), at, by)
