"""The DynamoDB client, its retry settings, error classification and attribute-value helpers."""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, cast
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, NoCredentialsError

from shardboard.domain.ports import Throttled, ThrottleScope

CONDITION_FAILED = "ConditionalCheckFailedException"
THROTTLING_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
# DynamoDB names why it throttled in ``ThrottlingReasons`` (<Table|Index><Read|Write><LimitType>); only a key-range
# (partition) limit is helped by more write shards. The others are table-level: provisioned capacity, the account's
# per-table quota, an on-demand table's maximum throughput.
KEY_RANGE_LIMIT = "KeyRangeThroughputExceeded"

Item = dict[str, Any]
# The key a local engine is signed with when nothing else is configured; any key signs there, but DynamoDB Local keeps
# one database per key id and region, so it is the one every `shardboard` command uses (tools/.../local/engine.py).
LOCAL_ACCESS_KEY = "local"


class MissingCredentials(NoCredentialsError):
    """No AWS credentials for an endpoint that needs them (AWS itself): one line naming what to set."""

    fmt = (
        "Unable to locate AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; "
        "for a local engine, export the AWS_ENDPOINT_URL_DYNAMODB line that `shardboard local` prints"
    )


def client_config(max_connections: int = 64) -> Config:
    """Standard retry mode retries throttling and 5xx with backoff; the pool covers our worker threads."""
    return Config(
        retries={"mode": "standard", "total_max_attempts": 8},
        max_pool_connections=max_connections,
        connect_timeout=5,
        read_timeout=10,
    )


def dynamodb_client(config: Config | None = None) -> Any:
    """A DynamoDB client; ``AWS_ENDPOINT_URL_DYNAMODB`` points it at DynamoDB Local or moto."""
    return boto3.client("dynamodb", region_name=region(), config=config or client_config())


def streams_client(config: Config | None = None) -> Any:
    return boto3.client("dynamodbstreams", region_name=region(), config=config or client_config())


def signed_client(session: Any, service: str, region_name: str, config: Config) -> Any:
    """``session.client(service)`` signed with the session's credentials or, when it has none and the client's
    endpoint is on this machine (DynamoDB Local, moto), with the local engine's key; without credentials against
    AWS, :class:`MissingCredentials` now rather than a traceback from the first request."""
    if session.get_credentials() is not None:
        return session.client(service, region_name=region_name, config=config)
    local_key = {"aws_access_key_id": LOCAL_ACCESS_KEY, "aws_secret_access_key": LOCAL_ACCESS_KEY}
    client = session.client(service, region_name=region_name, config=config, **local_key)
    if not is_local(client.meta.endpoint_url):  # botocore resolved it: environment, config file or AWS's own
        raise MissingCredentials
    return client


def is_local(endpoint_url: str) -> bool:
    """Whether ``endpoint_url`` is on this machine: localhost or a loopback address."""
    host = urlsplit(endpoint_url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def throttle_scope(error: ClientError) -> ThrottleScope | None:
    """Partition or table throttling, or None when ``error`` is not a throttle at all.

    ``ThrottlingReasons`` decides when DynamoDB sends it. Without it (older endpoints, the local emulator),
    ``ThrottlingException``/``RequestLimitExceeded`` are table or account limits, and a
    ``ProvisionedThroughputExceededException`` on an on-demand table can only come from a partition; on a provisioned
    table, the CloudWatch test (consumed below provisioned capacity) tells them apart (docs/dynamic-sharding.md).
    """
    code = error_code(error)
    if code not in THROTTLING_CODES:
        return None
    # The service model names the member ThrottlingReasons, except on ThrottlingException (throttlingReasons).
    listed = error.response.get("ThrottlingReasons") or error.response.get("throttlingReasons") or []
    reasons = [str(r.get("reason", "")) for r in cast(list[Any], listed)]
    if reasons:
        return ThrottleScope.PARTITION if any(KEY_RANGE_LIMIT in r for r in reasons) else ThrottleScope.TABLE
    return ThrottleScope.PARTITION if code == "ProvisionedThroughputExceededException" else ThrottleScope.TABLE


@contextmanager
def throttling_as_domain() -> Iterator[None]:
    """A throttled request raises the domain's ``Throttled`` (nothing was written); any other error passes."""
    try:
        yield
    except ClientError as error:
        scope = throttle_scope(error)
        if scope is None:
            raise
        raise Throttled(scope) from error


def s_attr(value: str) -> dict[str, str]:
    return {"S": value}


def n_attr(value: int) -> dict[str, str]:
    return {"N": str(value)}


def int_of(attribute: Mapping[str, str] | None) -> int:
    return int(attribute["N"]) if attribute else 0


class ScanDeadline(TimeoutError):
    """A scan given a deadline (a function's remaining time) had not finished by then."""


def parallel_scan(  # noqa: PLR0917 - callers name the scan by position, the deadline is optional
    client: Any,
    table: str,
    segments: int,
    projection: str | None,
    names: Mapping[str, str] | None,
    deadline: float | None = None,
) -> Iterator[list[Item]]:
    """Yield pages of a segmented scan, the segments read in parallel threads (whole items without a projection).
    With ``deadline`` (a ``time.monotonic()`` value) a segment still reading at that time raises ScanDeadline."""

    def scan_segment(segment: int) -> list[Item]:
        items: list[Item] = []
        kwargs: dict[str, Any] = {
            "TableName": table,
            "Segment": segment,
            "TotalSegments": segments,
            "ConsistentRead": True,
        }
        if projection:
            kwargs["ProjectionExpression"] = projection
            kwargs["ExpressionAttributeNames"] = dict(names or {})
        while True:
            # A duration (the caller's remaining time), not a time of day: monotonic, not the clock
            if deadline is not None and time.monotonic() > deadline:
                raise ScanDeadline(f"scan of {table} not finished by its deadline")
            response = client.scan(**kwargs)
            items.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return items
            kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    with ThreadPoolExecutor(max_workers=segments) as pool:
        yield from pool.map(scan_segment, range(segments))


def session_client(session: Any = None, pool: int = 10) -> Any:
    """A DynamoDB client from a boto3 ``session`` (boto3's default session when None), for the library: standard
    retry mode, ``pool`` connections; ``AWS_ENDPOINT_URL_DYNAMODB`` points it at DynamoDB Local, which needs no
    credentials configured (the local engine's key signs); AWS without any raises ``MissingCredentials``."""
    if session is None:
        session = boto3.DEFAULT_SESSION or boto3.Session()
    return signed_client(session, "dynamodb", session.region_name or region(), client_config(pool))
