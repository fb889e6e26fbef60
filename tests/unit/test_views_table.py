"""The base-table adapter's reads: BatchGetItem's UnprocessedKeys are retried after a jittered, capped back-off;
and its rate-limit allowances: the exact request, and DynamoDB's answers mapped to domain outcomes."""

from __future__ import annotations

import random

import boto3
import pytest
from botocore.stub import Stubber

from shardboard.adapters.views_table import MAX_BATCH_GET_ROUNDS, UnprocessedKeysRemain, ViewStore
from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard.domain.writing.rate_limit import RateLimits, allowances

TABLE = "views"


def key(shard: int) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"view#{shard}#all#a"}}


def counter(views: int) -> dict[str, dict[str, str]]:
    return {"views": {"N": str(views)}}


def request(*shards: int) -> dict[str, object]:
    return {
        TABLE: {
            "Keys": [key(k) for k in shards],
            "ConsistentRead": True,
            "ProjectionExpression": "#v",
            "ExpressionAttributeNames": {"#v": "views"},
        }
    }


def test_unprocessed_keys_are_retried_after_a_growing_jittered_back_off():
    # Given a table that leaves keys unprocessed twice: shards 1-2 after the first request, shard 2 after the second
    client = boto3.client("dynamodb", region_name="us-east-1")
    sleeps: list[float] = []
    views = ViewStore(client, TABLE, sleep=sleeps.append, rng=random.Random(7))
    with Stubber(client) as stub:
        stub.add_response(
            "batch_get_item",
            {"Responses": {TABLE: [counter(5)]}, "UnprocessedKeys": request(1, 2)},
            {"RequestItems": request(0, 1, 2)},
        )
        stub.add_response(
            "batch_get_item",
            {"Responses": {TABLE: [counter(7)]}, "UnprocessedKeys": request(2)},
            {"RequestItems": request(1, 2)},
        )
        stub.add_response("batch_get_item", {"Responses": {TABLE: [counter(11)]}}, {"RequestItems": request(2)})
        # When the item's total is read
        total = views.item_total("a", 3, "all")
        stub.assert_no_pending_responses()
    # Then every counter was read once, exactly, after two sleeps of full jitter under 50 ms, then 100 ms
    assert total == 5 + 7 + 11
    assert sleeps == [0.01619163824165812, 0.015084917392450194]
    expected = random.Random(7)
    assert sleeps == [expected.uniform(0, 0.05), expected.uniform(0, 0.1)]


def test_keys_left_unprocessed_after_every_round_fail_the_read():
    # Given a table that never processes shard 0
    client = boto3.client("dynamodb", region_name="us-east-1")
    sleeps: list[float] = []
    views = ViewStore(client, TABLE, sleep=sleeps.append, rng=random.Random(1))
    with Stubber(client) as stub:
        for _ in range(MAX_BATCH_GET_ROUNDS):
            stub.add_response(
                "batch_get_item",
                {"Responses": {TABLE: []}, "UnprocessedKeys": request(0)},
                {"RequestItems": request(0)},
            )
        # When its total is read, the read fails rather than return a smaller total
        with pytest.raises(UnprocessedKeysRemain):
            views.item_total("a", 1, "all")
    # Then it waited between every round, never more than the 1 s cap
    assert len(sleeps) == MAX_BATCH_GET_ROUNDS - 1
    assert max(sleeps) <= 1.0


def allowance_update(views: int, room: int) -> dict[str, object]:
    return {
        "TableName": TABLE,
        "Key": {"pk": {"S": "rate#29916666#ip#203.0.113.7"}},
        "UpdateExpression": "ADD #used :views SET #expires = :expires",
        "ConditionExpression": "attribute_not_exists(#used) OR #used <= :room",
        "ExpressionAttributeNames": {"#used": "used", "#expires": "expires_at"},
        "ExpressionAttributeValues": {
            ":views": {"N": str(views)},
            ":room": {"N": str(room)},
            ":expires": {"N": "1795000320"},
        },
    }


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (None, True),
        ("ConditionalCheckFailedException", False),
        ("ProvisionedThroughputExceededException", ThrottleScope.PARTITION),
    ],
)
def test_an_allowance_is_one_conditional_add_and_its_refusal_is_an_outcome(code, outcome):
    # Given a request of 3 views against a limit of 10 at 30 s into a minute
    (allowance,) = allowances(RateLimits(per_ip=10), "203.0.113.7", None, 3, at=1_794_999_990)
    client = boto3.client("dynamodb", region_name="us-east-1")
    views = ViewStore(client, TABLE)
    with Stubber(client) as stub:
        if code is None:
            stub.add_response("update_item", {}, allowance_update(3, 7))
        else:
            stub.add_client_error("update_item", code, http_status_code=400, expected_params=allowance_update(3, 7))
        # When it is taken, Then DynamoDB's answer is the domain's
        if isinstance(outcome, ThrottleScope):
            with pytest.raises(Throttled) as throttled:
                views.take_allowance(allowance)
            assert throttled.value.scope == outcome
        else:
            assert views.take_allowance(allowance) is outcome
        stub.assert_no_pending_responses()


def test_a_returned_allowance_is_an_unconditional_subtraction():
    (allowance,) = allowances(RateLimits(per_ip=10), "203.0.113.7", None, 3, at=1_794_999_990)
    client = boto3.client("dynamodb", region_name="us-east-1")
    expected = {
        "TableName": TABLE,
        "Key": {"pk": {"S": "rate#29916666#ip#203.0.113.7"}},
        "UpdateExpression": "ADD #used :views",
        "ExpressionAttributeNames": {"#used": "used"},
        "ExpressionAttributeValues": {":views": {"N": "-3"}},
    }
    with Stubber(client) as stub:
        stub.add_response("update_item", {}, expected)
        ViewStore(client, TABLE).return_allowance(allowance)
        stub.assert_no_pending_responses()
