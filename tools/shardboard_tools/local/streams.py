"""Read a table's stream through the DynamoDB Streams API and shape records exactly as Lambda delivers them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

Record = dict[str, Any]


def latest_stream_arn(dynamodb: Any, table: str) -> str:
    arn = dynamodb.describe_table(TableName=table)["Table"].get("LatestStreamArn")
    if not arn:
        raise RuntimeError(f"table {table} has no stream; create it from template.yaml (shardboard init)")
    return str(arn)


def lambda_record(record: Record, stream_arn: str) -> Record:
    """GetRecords output -> a Lambda event record: epoch-seconds timestamp and the eventSourceARN added."""
    shaped = {k: v for k, v in record.items() if k != "userIdentity" or v}
    dynamodb = dict(shaped["dynamodb"])
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        dynamodb["ApproximateCreationDateTime"] = int(created.timestamp())
    shaped["dynamodb"] = dynamodb
    shaped["eventSourceARN"] = stream_arn
    return shaped


def lambda_event(records: list[Record]) -> dict[str, list[Record]]:
    return {"Records": records}


def shards_parents_first(streams: Any, stream_arn: str) -> list[Record]:
    """Every shard of the stream, each after its parent (Lambda processes parents before children)."""
    shards: list[Record] = []
    kwargs: dict[str, Any] = {"StreamArn": stream_arn}
    while True:
        description = streams.describe_stream(**kwargs)["StreamDescription"]
        shards.extend(description.get("Shards", []))
        last = description.get("LastEvaluatedShardId")
        if not last:
            break
        kwargs["ExclusiveStartShardId"] = last
    known = {s["ShardId"] for s in shards}
    ordered: list[Record] = []
    placed: set[str] = set()
    pending = list(shards)
    while pending:
        ready = [s for s in pending if s.get("ParentShardId") not in known or s["ParentShardId"] in placed]
        if not ready:  # a cycle cannot happen in DynamoDB; keep whatever order remains rather than loop forever
            ready = pending
        for shard in ready:
            ordered.append(shard)
            placed.add(shard["ShardId"])
        pending = [s for s in pending if s["ShardId"] not in placed]
    return ordered


def read_shard(
    streams: Any, stream_arn: str, shard_id: str, after_sequence: str | None = None, limit: int = 1000
) -> Iterator[list[Record]]:
    """Pages of raw records of one shard from TRIM_HORIZON (or after a sequence number) up to its current end."""
    kwargs: dict[str, Any] = {"StreamArn": stream_arn, "ShardId": shard_id}
    if after_sequence:
        kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=after_sequence)
    else:
        kwargs["ShardIteratorType"] = "TRIM_HORIZON"
    iterator = streams.get_shard_iterator(**kwargs).get("ShardIterator")
    while iterator:
        response = streams.get_records(ShardIterator=iterator, Limit=limit)
        records = response.get("Records", [])
        if records:
            yield records
        iterator = response.get("NextShardIterator")
        if not records:
            return  # caught up with an open shard (or a closed shard is exhausted)
