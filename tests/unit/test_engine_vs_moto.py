"""The in-process engine answers what moto answers: each request below runs on both, from the same items, and the
responses (or error codes, and the item a failed condition returns) must be equal."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from shardboard_tools.capacity.emulator import CapacityEmulator, Limits, VirtualClock
from shardboard_tools.capacity.engine import InProcessEngine

TABLE = {
    "TableName": "t",
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "AttributeDefinitions": [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "N"},
        {"AttributeName": "gk", "AttributeType": "S"},
        {"AttributeName": "gv", "AttributeType": "N"},
    ],
    "GlobalSecondaryIndexes": [
        {
            "IndexName": "by-g",
            "KeySchema": [{"AttributeName": "gk", "KeyType": "HASH"}, {"AttributeName": "gv", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["s"]},
        }
    ],
    "BillingMode": "PAY_PER_REQUEST",
}
KEY = {"pk": {"S": "a"}, "sk": {"N": "1"}}
ITEMS = [
    {
        **KEY,
        "n": {"N": "5"},
        "f": {"N": "2.5"},
        "s": {"S": "hello"},
        "l": {"L": [{"N": "1"}, {"N": "2"}]},
        "m": {"M": {"x": {"N": "1"}, "deep": {"M": {"y": {"S": "z"}}}}},
        "ss": {"SS": ["a", "b"]},
        "gk": {"S": "g1"},
        "gv": {"N": "10"},
    },
    *(
        {"pk": {"S": "a"}, "sk": {"N": str(k)}, "gk": {"S": "g1"}, "gv": {"N": str(10 * k % 7)}, "s": {"S": f"s{k}"}}
        for k in range(2, 9)
    ),
    {"pk": {"S": "b"}, "sk": {"N": "1"}, "s": {"S": "other"}},
]
VALUES = {
    ":one": {"N": "1"},
    ":two": {"N": "2"},
    ":five": {"N": "5"},
    ":zero": {"N": "0"},
    ":l": {"L": [{"S": "x"}]},
    ":set": {"SS": ["b", "c"]},
    ":gone": {"SS": ["a", "b"]},
    ":p": {"S": "hel"},
    ":e": {"S": "a"},
    ":N": {"S": "N"},
    ":S": {"S": "S"},
    ":v": {"S": "v"},
}

UPDATES = {
    "arithmetic": "SET n = n + :one, f = f - :one",
    "if_not_exists": "SET c = if_not_exists(c, :zero) + :one, n = if_not_exists(n, :zero)",
    "list_append": "SET l = list_append(l, :l)",
    "nested": "SET m.x = :two, m.deep.y = :v, m.k = :v",
    "list index": "SET l[0] = :v, l[5] = :one",
    "add": "ADD n :five, ss :set, fresh :one",
    "remove": "REMOVE s, l[0], m.deep",
    "delete": "DELETE ss :gone",
    "names": "SET #n = :v REMOVE #s",
    "every clause": "SET a = :v ADD n :one REMOVE s DELETE ss :gone",
    "missing parent": "SET m.absent.z = :v",
    "missing operand": "SET z = absent + :one",
    "overlap": "SET n = :one, n = :two",
    "wrong type": "ADD s :one",
    "key attribute": "SET sk = :one",
}
CONDITIONS = {
    "exists": "attribute_exists(pk)",
    "not exists": "attribute_not_exists(pk)",
    "greater": "n > :two",
    "less or equal": "n <= :two",
    "between": "n BETWEEN :one AND :five",
    "in": "n IN (:one, :two, :five)",
    "begins_with": "begins_with(s, :p)",
    "contains string": "contains(s, :p)",
    "contains set": "contains(ss, :e)",
    "size": "size(l) = :two",
    "type": "attribute_type(n, :N)",
    "wrong type": "attribute_type(n, :S)",
    "not": "NOT n = :five",
    "precedence": "n = :one OR n = :five AND attribute_exists(s)",
    "parentheses": "(n = :one OR n = :five) AND NOT (attribute_not_exists(s))",
    "missing not equal": "absent <> :v",
    "missing compared": "absent < :v",
    "nested path": "m.x = :one AND m.deep.y = :v",
    "list element": "l[1] = :two",
    "cross type": "n = :v",
}
QUERIES: dict[str, dict[str, Any]] = {
    "sort between": {"KeyConditionExpression": "pk = :a AND sk BETWEEN :two AND :five"},
    "sort less": {"KeyConditionExpression": "pk = :a AND sk < :five", "ScanIndexForward": False},
    "projection": {"KeyConditionExpression": "pk = :a", "ProjectionExpression": "s, m.x, l[1]"},
    "count": {"KeyConditionExpression": "pk = :a", "Select": "COUNT"},
    "filter": {"KeyConditionExpression": "pk = :a", "FilterExpression": "begins_with(s, :p)"},
    "index": {"IndexName": "by-g", "KeyConditionExpression": "gk = :g AND gv >= :two", "ScanIndexForward": False},
    "no hash": {"KeyConditionExpression": "sk = :one"},
}


@pytest.fixture(scope="module")
def moto_client() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(**TABLE)
        yield client


@pytest.fixture
def clients(moto_client: Any) -> tuple[Any, InProcessEngine]:
    """moto's table (one per module: creating it is the slow part) and a fresh engine's (its virtual clock never
    moves, so one engine per test keeps every partition under its per-second limit)."""
    return moto_client, InProcessEngine([TABLE], CapacityEmulator(VirtualClock()))


def reset(client: Any) -> None:
    for item in client.scan(TableName="t")["Items"]:
        client.delete_item(TableName="t", Key={"pk": item["pk"], "sk": item["sk"]})
    for item in ITEMS:
        client.put_item(TableName="t", Item=copy.deepcopy(item))


def outcome(client: Any, method: str, request: dict[str, Any]) -> Any:
    """The response without its metadata, or the error's code (plus the item a failed condition returned)."""
    reset(client)
    try:
        response = getattr(client, method)(**copy.deepcopy(request))
    except ClientError as error:
        return ("error", error.response["Error"]["Code"], error.response.get("Item"))
    response.pop("ResponseMetadata", None)
    response.pop("ConsumedCapacity", None)
    stored = client.get_item(TableName="t", Key=KEY, ConsistentRead=True).get("Item")
    return response, stored


def used(text: str) -> dict[str, Any]:
    return {name: value for name, value in VALUES.items() if name in text.replace(")", " ").replace(",", " ").split()}


def same(moto: Any, engine: Any, method: str, request: dict[str, Any]) -> None:
    assert outcome(engine, method, request) == outcome(moto, method, request)


# UPDATED_NEW/UPDATED_OLD of a removed path: moto returns an emptied map where DynamoDB returns nothing; of a list
# element, moto returns the whole list.
RETURNED = [
    (name, returned)
    for name in UPDATES
    for returned in ("ALL_NEW", "ALL_OLD", "UPDATED_NEW", "UPDATED_OLD")
    if returned.startswith("ALL") or not ({"REMOVE", "DELETE"} & set(UPDATES[name].split()) or "[" in UPDATES[name])
]


@pytest.mark.parametrize(("name", "returned"), RETURNED)
def test_updates(clients: tuple[Any, InProcessEngine], name: str, returned: str) -> None:
    text = UPDATES[name]
    request: dict[str, Any] = {"TableName": "t", "Key": KEY, "UpdateExpression": text, "ReturnValues": returned}
    if used(text):
        request["ExpressionAttributeValues"] = used(text)
    if "#" in text:
        request["ExpressionAttributeNames"] = {"#n": "n", "#s": "s"}
    same(*clients, "update_item", request)


@pytest.mark.parametrize("name", CONDITIONS)
def test_conditions(clients: tuple[Any, InProcessEngine], name: str) -> None:
    text = CONDITIONS[name]
    request: dict[str, Any] = {
        "TableName": "t",
        "Key": KEY,
        "UpdateExpression": "SET touched = :one",
        "ConditionExpression": text,
        "ExpressionAttributeValues": {":one": VALUES[":one"], **used(text)},
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    same(*clients, "update_item", request)


@pytest.mark.parametrize("name", ["exists", "not exists", "greater"])
def test_conditions_of_absent_items(clients: tuple[Any, InProcessEngine], name: str) -> None:
    text = CONDITIONS[name]
    request = {
        "TableName": "t",
        "Item": {"pk": {"S": "new"}, "sk": {"N": "1"}},
        "ConditionExpression": text,
        **({"ExpressionAttributeValues": used(text)} if used(text) else {}),
    }
    same(*clients, "put_item", request)


@pytest.mark.parametrize("name", QUERIES)
def test_queries(clients: tuple[Any, InProcessEngine], name: str) -> None:
    values = {":a": {"S": "a"}, ":g": {"S": "g1"}, ":two": VALUES[":two"], ":five": VALUES[":five"]}
    values |= {":one": VALUES[":one"], ":p": {"S": "s"}}
    text = " ".join(str(v) for v in QUERIES[name].values())
    request = {
        "TableName": "t",
        **QUERIES[name],
        "ExpressionAttributeValues": {k: v for k, v in values.items() if k in text},
    }
    same(*clients, "query", request)


@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("index", [None, "by-g"])
def test_pages_resume_where_they_stopped(
    clients: tuple[Any, InProcessEngine], forward: bool, index: str | None
) -> None:
    def pages(client: Any) -> list[Any]:
        reset(client)
        request: dict[str, Any] = {
            "TableName": "t",
            "KeyConditionExpression": "gk = :g" if index else "pk = :a",
            "ExpressionAttributeValues": {":g": {"S": "g1"}} if index else {":a": {"S": "a"}},
            "ScanIndexForward": forward,
            "Limit": 3,
            **({"IndexName": index} if index else {}),
        }
        found = []
        while True:
            response = client.query(**request)
            found.append(response["Items"])
            if "LastEvaluatedKey" not in response:
                return found
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    moto, engine = clients
    assert pages(engine) == pages(moto)


def test_transactions_cancel_with_reasons(clients: tuple[Any, InProcessEngine]) -> None:
    request = {
        "TransactItems": [
            {"Put": {"TableName": "t", "Item": {"pk": {"S": "c"}, "sk": {"N": "1"}}}},
            {
                "Update": {
                    "TableName": "t",
                    "Key": KEY,
                    "UpdateExpression": "ADD n :one",
                    "ConditionExpression": "n > :five",
                    "ExpressionAttributeValues": {":one": VALUES[":one"], ":five": VALUES[":five"]},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ]
    }

    def cancelled(client: Any) -> Any:
        reset(client)
        with pytest.raises(ClientError) as error:
            client.transact_write_items(**copy.deepcopy(request))
        reasons = [(r["Code"], r.get("Item")) for r in error.value.response["CancellationReasons"]]
        absent = client.get_item(TableName="t", Key={"pk": {"S": "c"}, "sk": {"N": "1"}}).get("Item")
        return error.value.response["Error"]["Code"], reasons, absent

    moto, engine = clients
    assert cancelled(engine) == cancelled(moto)


def test_batches(clients: tuple[Any, InProcessEngine]) -> None:
    def batch(client: Any) -> Any:
        reset(client)
        client.batch_write_item(
            RequestItems={
                "t": [
                    {"PutRequest": {"Item": {"pk": {"S": "d"}, "sk": {"N": "1"}, "s": {"S": "x"}}}},
                    {"DeleteRequest": {"Key": {"pk": {"S": "b"}, "sk": {"N": "1"}}}},
                ]
            }
        )
        keys = [{"pk": {"S": p}, "sk": {"N": "1"}} for p in ("a", "b", "d")]
        found = client.batch_get_item(RequestItems={"t": {"Keys": keys, "ProjectionExpression": "pk, s"}})
        return sorted(found["Responses"]["t"], key=lambda item: item["pk"]["S"])

    moto, engine = clients
    assert batch(engine) == batch(moto)


# What moto cannot be compared on: it crashes on an undefined value, never throttles, prices nothing.
def test_an_undefined_value_is_a_validation_error() -> None:
    engine = InProcessEngine([TABLE], CapacityEmulator(VirtualClock()))
    with pytest.raises(ClientError) as error:
        engine.update_item(TableName="t", Key=KEY, UpdateExpression="SET n = :nine")
    assert error.value.response["Error"]["Code"] == "ValidationException"
    assert engine.get_item(TableName="t", Key=KEY) == {}


def test_writes_are_priced_and_throttled_per_partition() -> None:
    emulator = CapacityEmulator(VirtualClock(), Limits(partition_write_units=2))
    engine = InProcessEngine([TABLE], emulator)
    engine.put_item(TableName="t", Item={**KEY, "gk": {"S": "g1"}, "gv": {"N": "1"}})  # the table and its index
    engine.put_item(TableName="t", Item={**KEY, "gk": {"S": "g1"}, "gv": {"N": "1"}, "x": {"S": "y"}})  # no index
    with pytest.raises(ClientError) as error:
        engine.update_item(TableName="t", Key=KEY, UpdateExpression="SET x = :v", ExpressionAttributeValues=VALUES)
    assert error.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert emulator.usage.units("write", "t") == 2
    assert emulator.usage.units("write", "t/by-g") == 1
    assert engine.get_item(TableName="t", Key=KEY)["Item"]["x"] == {"S": "y"}


def test_a_refused_condition_is_charged() -> None:
    emulator = CapacityEmulator(VirtualClock())
    engine = InProcessEngine([TABLE], emulator)
    with pytest.raises(ClientError):
        engine.put_item(TableName="t", Item=KEY, ConditionExpression="attribute_exists(pk)")
    assert emulator.usage.units("write") == 1
