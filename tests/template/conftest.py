"""template.yaml as written, and as the SAM translator (aws-sam-translator) renders it into CloudFormation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from cfn_flip import load_yaml
from samtranslator.translator.transform import transform

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
FUNCTIONS = (
    "RecordViewsFunction",
    "AggregatorFunction",
    "SnapshotFunction",
    "ShardReviewFunction",
    "ReadApiFunction",
    "ItemsAdminFunction",
)
# Where the functions' metrics go, and so where the alarms and the dashboard look: one namespace per stack.
NAMESPACE = {"Fn::Sub": "Shardboard/${AWS::StackName}"}
# Functions CloudFormation runs during a deploy (custom resources): a failure fails the deploy; no alarm watches them.
DEPLOY_FUNCTIONS = ("StackConfigFunction",)


class NoManagedPolicyNames:
    """The translator's ManagedPolicyLoader, offline: the template names no managed policy by its short name
    (SAM still attaches AWS's execution-role policies by ARN, and the tests check which)."""

    def load(self) -> dict[str, str]:
        return {}


def render(template: dict[str, Any]) -> dict[str, Any]:
    """The CloudFormation that `sam deploy` would submit (as `sam validate` does, code locations become S3 URIs)."""
    body = copy.deepcopy(template)
    body["Globals"]["Function"]["CodeUri"] = "s3://shardboard-artifacts/code.zip"
    body["Resources"]["DependenciesLayer"]["Properties"]["ContentUri"] = "s3://shardboard-artifacts/layer.zip"
    return dict(transform(body, {}, NoManagedPolicyNames()))


@pytest.fixture(scope="session")
def sam_template() -> dict[str, Any]:
    return dict(load_yaml(TEMPLATE.read_text(encoding="utf-8")))


@pytest.fixture(scope="session")
def rendered(sam_template: dict[str, Any]) -> dict[str, Any]:
    return render(sam_template)


@pytest.fixture(scope="session")
def resources(rendered: dict[str, Any]) -> dict[str, Any]:
    return dict(rendered["Resources"])


def of_type(resources: dict[str, Any], kind: str) -> dict[str, Any]:
    return {name: r for name, r in resources.items() if r["Type"] == kind}


def parameter(template: dict[str, Any], ref: Any) -> dict[str, Any]:
    """The declaration of the parameter a property ``{"Ref": name}`` points at (fails if it is not a parameter)."""
    assert isinstance(ref, dict) and set(ref) == {"Ref"}, f"expected a parameter reference, got {ref!r}"
    return dict(template["Parameters"][ref["Ref"]])


def fixed(template: dict[str, Any], node: Any) -> Any:
    """What a property gets unless a deployment says otherwise: the Default of the parameter it ``!Ref``s, or the
    value the template fixes (``!FindInMap``; in a mapping keyed by a parameter, the row of its default)."""
    if isinstance(node, dict) and set(node) == {"Ref"}:
        return parameter(template, node)["Default"]
    assert isinstance(node, dict) and set(node) == {"Fn::FindInMap"}, f"expected a parameter or a fixed value: {node!r}"
    mapping, top, name = node["Fn::FindInMap"]
    row = fixed(template, top) if isinstance(top, dict) else top
    return template["Mappings"][mapping][row][name]
