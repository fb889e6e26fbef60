"""Lambda's stream events, partial batch responses and on-failure messages: pure functions of records."""

from __future__ import annotations

import json
import time
import uuid
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

Record = dict[str, Any]


def lambda_event(records: list[Record]) -> dict[str, list[Record]]:
    return {"Records": records}


def sequence_number(record: Mapping[str, Any]) -> str:
    return str(record["dynamodb"]["SequenceNumber"])


def arrival(record: Mapping[str, Any]) -> float:
    """ApproximateCreationDateTime in epoch seconds (the record's arrival in the stream; 0 is a virtual clock's)."""
    created = record["dynamodb"].get("ApproximateCreationDateTime")
    return time.time() if created is None else float(created)


def failed_index(batch: Sequence[Record], response: Any) -> int | None:
    """Position of the lowest failed record in a ReportBatchItemFailures response; None when all succeeded.

    Lambda's rules: a null or empty response or list is a success; an empty, null or unknown itemIdentifier fails
    the whole batch.
    """
    if not isinstance(response, Mapping):
        return None
    failures = response.get("batchItemFailures")
    if not failures:
        return None
    positions = {sequence_number(r): i for i, r in enumerate(batch)}
    indexes = []
    for failure in failures:
        identifier = failure.get("itemIdentifier") if isinstance(failure, Mapping) else None
        if not identifier or identifier not in positions:
            return 0
        indexes.append(positions[identifier])
    return min(indexes)


def split_by_partition_key(records: Sequence[Record], lanes: int, partition_key: str) -> list[list[Record]]:
    """The non-empty lanes of ``records``: one partition key always in the same lane, in stream order."""
    parts: list[list[Record]] = [[] for _ in range(lanes)]
    for record in records:
        key = json.dumps(record["dynamodb"]["Keys"].get(partition_key), sort_keys=True)
        parts[zlib.crc32(key.encode()) % lanes].append(record)
    return [part for part in parts if part]


def dead_letter(
    stream_arn: str,
    shard_id: str,
    batch: Sequence[Record],
    *,
    condition: str,
    attempts: int,
    function_error: bool,
    function_name: str,
    now: float | None = None,
) -> dict[str, Any]:
    """The JSON Lambda sends to an SQS/SNS on-failure destination for a DynamoDB stream batch.

    ``responseContext.functionError`` is present when the function raised; a batch failed through
    batchItemFailures returned normally, so it has none.
    """
    response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if function_error:
        response["functionError"] = "Unhandled"
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": function_arn(function_name),
            "condition": condition,
            "approximateInvokeCount": attempts,
        },
        "responseContext": response,
        "version": "1.0",
        "timestamp": iso_millis(time.time() if now is None else now),
        "DDBStreamBatchInfo": {
            "shardId": shard_id,
            "startSequenceNumber": sequence_number(batch[0]),
            "endSequenceNumber": sequence_number(batch[-1]),
            "approximateArrivalOfFirstRecord": iso_millis(arrival(batch[0])),
            "approximateArrivalOfLastRecord": iso_millis(arrival(batch[-1])),
            "batchSize": len(batch),
            "streamArn": stream_arn,
        },
    }


def function_arn(function_name: str) -> str:
    return f"arn:aws:lambda:us-east-1:000000000000:function:{function_name}"


def iso_seconds(epoch: float) -> str:
    """A window bound as Lambda writes it, e.g. 2020-12-09T07:04:00Z."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_millis(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(epoch * 1000) % 1000:03d}Z"
