"""Least privilege, checked on the rendered template: each function may make exactly the calls its code makes
(store.py), on exactly its tables, index and queue; nothing anywhere is granted on `*`."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.template.conftest import DEPLOY_FUNCTIONS, FUNCTIONS, of_type

# What store.py calls for each function, as (action, resource) with resources named by logical id.
EXPECTED_GRANTS = {
    "RecordViewsFunction": {
        ("dynamodb:UpdateItem", "ViewsTable"),  # ViewStore.add_view, and add_seen_view's transaction (counter)
        ("dynamodb:PutItem", "ViewsTable"),  # add_seen_view's transaction: the viewer's dedupe marker
        ("dynamodb:GetItem", "ViewsTable"),  # add_seen_view: the marker, when a refusal does not return it
        ("dynamodb:GetItem", "ShardsTable"),  # ShardMetadataStore: the item's current shard count
        ("dynamodb:UpdateItem", "ShardsTable"),  # ShardMetadataStore: re-shard a hot item; BoardRegistryStore.register
        ("dynamodb:BatchGetItem", "ShardsTable"),  # BoardRegistryStore.registered: which boards are registered
        ("dynamodb:BatchGetItem", "BoardTable"),  # BoardRegistryStore.existed: boards the cap refuses that have views
        ("dynamodb:GetItem", "ItemsTable"),  # ItemStore.get: RequireItems' check of a viewed id
        ("dynamodb:BatchGetItem", "ItemsTable"),  # ItemStore.taken_down_among: deny, skeleton markers per id, 10 s
        ("dynamodb:Query", "ItemsTable"),  # ItemStore.list_taken_down: the deny and skeleton markers, every 10 s
    },
    "AggregatorFunction": {
        ("dynamodb:UpdateItem", "BoardTable"),  # move / roll / join_index / mark_changed, and move_late's transaction
        ("dynamodb:GetItem", "BoardTable"),  # state / entry_state
        ("dynamodb:PutItem", "BoardTable"),  # archive: a past period's entry
        ("dynamodb:BatchGetItem", "BoardTable"),  # thresholds of a batch's periods; erase: which entries exist
        ("dynamodb:BatchWriteItem", "BoardTable"),  # erase: an item deleted while the batch wrote it
        ("dynamodb:DeleteItem", "BoardTable"),  # erase: its aggregate
        ("dynamodb:BatchGetItem", "ItemsTable"),  # ItemStore.taken_down_among: a batch's ids, before and after
        ("dynamodb:Query", "ItemsTable"),  # ItemStore.list_taken_down: the deny markers, before and after the writes
        ("sqs:SendMessage", "StreamFailureQueue"),  # the event source mapping's on-failure destination
    },
    "SnapshotFunction": {
        ("dynamodb:GetItem", "BoardTable"),  # get_snapshot / get_board_state
        ("dynamodb:PutItem", "BoardTable"),  # put_snapshot
        ("dynamodb:UpdateItem", "BoardTable"),  # raise_threshold / mark_refreshed
        ("dynamodb:BatchGetItem", "ItemsTable"),  # ItemStore.get_many: the head's metadata (head_meta.py)
        ("dynamodb:BatchWriteItem", "BoardTable"),  # put_rank_parts / delete_rank_parts (ranked versions)
        ("dynamodb:Query", "BoardTable/index/by-views"),  # query_views_index: all time's index of releases before
        ("dynamodb:Query", "BoardTable/index/by-hour"),  # query_shard (scatter-gather): each period kind
        ("dynamodb:Query", "BoardTable/index/by-day"),
        ("dynamodb:Query", "BoardTable/index/by-week"),
        ("dynamodb:Query", "BoardTable/index/by-month"),
        ("dynamodb:Query", "BoardTable/index/by-change"),  # changed_periods: what to refresh
        ("dynamodb:Query", "BoardTable/index/by-deep"),  # ... and all time
        ("dynamodb:BatchGetItem", "BoardTable"),  # read_counts: the candidates' exact counts
        ("dynamodb:Scan", "BoardTable"),  # scan_counts: the repair of an unproven head (services/refill.py)
        ("dynamodb:BatchGetItem", "ItemsTable"),  # ItemStore.taken_down_among: the markers of the gathers' ids
        ("dynamodb:Query", "ItemsTable"),  # ItemStore.list_taken_down: the hidden and deny markers, once per run
        ("sqs:SendMessage", "SnapshotFailureQueue"),  # the async invocation's on-failure destination
        ("events:PutEvents", "EventBus or event-bus/${EventBusName}"),  # board events: the stack's bus or the one given
    },
    "ShardReviewFunction": {
        ("dynamodb:GetItem", "BoardTable"),  # aggregate_views: the item's views, to measure its rate
        ("dynamodb:Scan", "ShardsTable"),  # ShardMetadataStore.scan: every grown item
        ("dynamodb:UpdateItem", "ShardsTable"),  # change_count (shrink) and note_review
    },
    "ReadApiFunction": {
        ("dynamodb:GetItem", "BoardTable"),  # get_snapshot / aggregate_views
        ("dynamodb:GetItem", "ItemsTable"),  # ItemStore.get: GET /item and GET /items/{id}
        ("dynamodb:Query", "ItemsTable/index/by-created"),  # ItemStore.newest: GET /items, one Query a shard
        ("dynamodb:Query", "BoardTable/index/by-change"),  # BoardStore.periods: GET /boards, the boards with views
        ("dynamodb:BatchGetItem", "BoardTable"),  # get_rank_shards: GET /rank
        ("dynamodb:BatchGetItem", "ItemsTable"),  # ItemStore.statuses: GET /rank and GET /around past the ranking
    },
    "ItemsAdminFunction": {
        ("dynamodb:UpdateItem", "ItemsTable"),  # put; set_hidden's / set_deleted's transactions: status, old sets
        ("dynamodb:PutItem", "ItemsTable"),  # set_hidden's / set_deleted's transactions: audit row, marker
        ("dynamodb:GetItem", "ItemsTable"),  # ItemStore.get: a hide of an unknown id is a 404
        ("dynamodb:BatchGetItem", "ItemsTable"),  # ItemStore.taken_down_among: a takedown's gathers drop both
        ("dynamodb:Query", "ItemsTable"),  # ItemStore.list_taken_down: the hidden and deny markers
        ("dynamodb:DeleteItem", "ItemsTable"),  # set_hidden's / set_deleted's transactions: a marker removed
        ("dynamodb:GetItem", "BoardTable"),  # state / get_snapshot / get_board_state
        ("dynamodb:PutItem", "BoardTable"),  # put_snapshot: a head patched or gathered again
        ("dynamodb:UpdateItem", "BoardTable"),  # mark_changed / raise_threshold
        ("dynamodb:BatchGetItem", "BoardTable"),  # erase: which of a deleted item's entries exist (keys only)
        ("dynamodb:BatchWriteItem", "BoardTable"),  # erase: those entries deleted
        ("dynamodb:DeleteItem", "BoardTable"),  # erase: then the aggregate
        ("dynamodb:Query", "BoardTable/index/by-views"),  # a head gathered again (take_snapshot): all time's old
        ("dynamodb:Query", "BoardTable/index/by-hour"),  # index, and each period kind's
        ("dynamodb:Query", "BoardTable/index/by-day"),
        ("dynamodb:Query", "BoardTable/index/by-week"),
        ("dynamodb:Query", "BoardTable/index/by-month"),
        ("dynamodb:Query", "BoardTable/index/by-change"),  # periods: the boards the item may be on
        ("dynamodb:Query", "BoardTable/index/by-deep"),  # ... and all time's
        ("dynamodb:BatchGetItem", "BoardTable"),  # read_counts: the candidates' exact counts
    },
    "StackConfigFunction": {
        ("dynamodb:PutItem", "BoardTable"),  # stack_config.publish: the stack's settings item, at each deploy
    },
}
BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"  # its own log streams
XRAY = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"  # X-Ray has no resource-level permissions
STREAM_READ = "arn:aws:iam::aws:policy/service-role/AWSLambdaDynamoDBExecutionRole"  # SAM adds it for the stream


def statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    found = document["Statement"]
    return list(found) if isinstance(found, list) else [found]


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def resource_name(resource: Any) -> str:
    """``!GetAtt X.Arn`` -> X; ``!Sub "${X.Arn}/index/i"`` -> X/index/i; plain strings as they are."""
    if isinstance(resource, dict) and "Fn::GetAtt" in resource:
        name, attribute = resource["Fn::GetAtt"]
        return str(name) if attribute == "Arn" else f"{name}.{attribute}"
    if isinstance(resource, dict) and "Fn::Sub" in resource:
        named = re.sub(r"\$\{([^}.]+)\.Arn\}", r"\1", str(resource["Fn::Sub"]))
        # An ARN built from a parameter: what it names (``event-bus/${EventBusName}``).
        return named.rsplit(":", 1)[-1] if named.startswith("arn:${AWS::Partition}:") else named
    if isinstance(resource, dict) and "Ref" in resource:
        return str(resource["Ref"])
    if isinstance(resource, dict) and "Fn::If" in resource:  # one resource or the other, by a condition
        return " or ".join(resource_name(branch) for branch in resource["Fn::If"][1:])
    return str(resource)


def role_grants(role: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (action, resource_name(resource))
        for policy in role["Properties"].get("Policies", [])
        for statement in statements(policy["PolicyDocument"])
        for action in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    }


def every_policy_document(resources: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    documents = []
    for name, resource in resources.items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::IAM::Role":
            documents += [(name, p["PolicyDocument"]) for p in properties.get("Policies", [])]
        elif "PolicyDocument" in properties:  # queue, topic, managed and inline policies
            documents.append((name, properties["PolicyDocument"]))
    return documents


def test_no_policy_grants_a_wildcard_action_or_resource(resources):
    documents = every_policy_document(resources)
    assert len(documents) >= len(FUNCTIONS)
    for owner, document in documents:
        for statement in statements(document):
            assert statement["Effect"] == "Allow", owner
            for action in as_list(statement["Action"]):
                assert "*" not in action, f"{owner} grants {action}"
            for resource in as_list(statement["Resource"]):
                assert "*" not in resource_name(resource), f"{owner} grants on {resource_name(resource)}"


@pytest.mark.parametrize("function", FUNCTIONS + DEPLOY_FUNCTIONS)
def test_each_function_may_make_exactly_the_calls_its_code_makes(resources, function):
    role = resources[f"{function}Role"]
    assert resources[function]["Properties"]["Role"] == {"Fn::GetAtt": [f"{function}Role", "Arn"]}
    assert role_grants(role) == EXPECTED_GRANTS[function]


@pytest.mark.parametrize("function", FUNCTIONS + DEPLOY_FUNCTIONS)
def test_managed_policies_are_only_the_lambda_execution_ones(resources, function):
    managed = set(resources[f"{function}Role"]["Properties"]["ManagedPolicyArns"])
    expected = {BASIC, XRAY} | ({STREAM_READ} if function == "AggregatorFunction" else set())
    assert managed == expected


def test_only_eventbridge_may_dead_letter_into_the_snapshot_queue_and_only_from_its_rule(resources):
    (policy,) = of_type(resources, "AWS::SQS::QueuePolicy").values()
    (statement,) = statements(policy["Properties"]["PolicyDocument"])
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage"
    assert statement["Condition"]["ArnEquals"]["aws:SourceArn"] == {"Fn::GetAtt": ["SnapshotFunctionRefresh", "Arn"]}
    assert "SnapshotFunctionRefresh" in resources  # the rule SAM generates for the schedule
