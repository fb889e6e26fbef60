"""Data protection of the rendered template: every table has point-in-time recovery, encryption at rest, deletion
protection and retention on stack deletion; on-demand by default, provisioned on request (tables and index)."""

from __future__ import annotations

from typing import Any

import pytest

from shardboard_tools.template import Template
from tests.template.conftest import fixed, of_type


@pytest.fixture(scope="module")
def tables(resources: dict[str, Any]) -> dict[str, Any]:
    found = of_type(resources, "AWS::DynamoDB::Table")
    assert {"ViewsTable", "BoardTable"} <= set(found)
    return found


def test_every_table_has_point_in_time_recovery_and_encryption(tables):
    for name, table in tables.items():
        properties = table["Properties"]
        assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}, name
        assert properties["SSESpecification"]["SSEEnabled"] is True, name


def test_every_table_survives_stack_deletion_and_has_deletion_protection(sam_template, tables):
    for name, table in tables.items():
        assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain", name
        protection = table["Properties"]["DeletionProtectionEnabled"]
        assert protection == {"Fn::FindInMap": ["Stages", {"Ref": "Stage"}, "DeletionProtection"]}, name
        assert fixed(sam_template, protection) == "true", name  # prod, the default stage


def test_the_base_table_streams_both_images(tables):
    assert tables["ViewsTable"]["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}


def test_on_demand_by_default():
    requests = Template.load().create_table_requests()
    for name, request in requests.items():
        assert request["BillingMode"] == "PAY_PER_REQUEST", name
        assert "ProvisionedThroughput" not in request, name
        assert all("ProvisionedThroughput" not in index for index in request.get("GlobalSecondaryIndexes", []))


def test_provisioned_on_request_for_tables_and_index():
    # Given the provisioned option with the index sized apart from its table
    template = Template.load(overrides={"BillingMode": "PROVISIONED", "BoardIndexWriteCapacity": "300"})
    requests = template.create_table_requests()
    # Then every table and the by-views index get capacity, as integers CreateTable accepts
    for name, request in requests.items():
        assert request["BillingMode"] == "PROVISIONED", name
        assert set(request["ProvisionedThroughput"]) == {"ReadCapacityUnits", "WriteCapacityUnits"}, name
    indexes = requests["BoardTable"]["GlobalSecondaryIndexes"]
    assert {index["IndexName"] for index in indexes} == {
        "by-views",
        "by-hour",
        "by-day",
        "by-week",
        "by-month",
        "by-trending",
        "by-deep",
        "by-change",
    }
    assert all(index["ProvisionedThroughput"]["WriteCapacityUnits"] == 300 for index in indexes)
    assert requests["BoardTable"]["ProvisionedThroughput"]["WriteCapacityUnits"] == int(
        template.parameters["BoardWriteCapacity"]
    )
