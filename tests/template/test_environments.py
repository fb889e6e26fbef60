"""Environments and interface: samconfig.toml's dev and prod settings are valid for the template, the stack
outputs what a client needs, every parameter is documented, and the HTTP API is throttled and logged."""

from __future__ import annotations

import re
import shlex
import tomllib
from typing import Any

import pytest

from shardboard_tools.template import Template
from tests.template.conftest import ROOT, fixed


@pytest.fixture(scope="module")
def samconfig() -> dict[str, Any]:
    return tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))


def overrides(samconfig: dict[str, Any], env: str) -> dict[str, str]:
    line = samconfig[env]["deploy"]["parameters"]["parameter_overrides"]
    return dict(pair.split("=", 1) for pair in shlex.split(line))


@pytest.mark.parametrize("env", ["default", "prod"])
def test_each_environment_deploys_with_review_and_lints_on_validate(samconfig, env):
    deploy = samconfig[env]["deploy"]["parameters"]
    assert deploy["capabilities"] == "CAPABILITY_IAM"
    assert deploy["confirm_changeset"] is True and deploy["resolve_s3"] is True
    assert samconfig[env]["global"]["parameters"]["region"]
    assert samconfig[env]["validate"]["parameters"]["lint"] is True


@pytest.mark.parametrize("env", ["default", "prod"])
def test_each_environments_parameters_are_accepted_by_the_template(samconfig, env, sam_template):
    # CloudFormation refuses a name the template does not declare (a value it fixes is not a parameter) ...
    assert set(overrides(samconfig, env)) <= set(sam_template["Parameters"])
    # ... and Template.load refuses values CloudFormation would refuse
    Template.load(overrides=overrides(samconfig, env))


def test_every_parameter_samconfig_names_is_the_templates(sam_template):
    # Comments included: a newcomer copies `Name=<value>` from a comment onto the overrides line, and CloudFormation
    # refuses a name the template does not declare.
    named = set(re.findall(r"\b([A-Z][A-Za-z0-9]*)=", (ROOT / "samconfig.toml").read_text(encoding="utf-8")))
    assert {"Stage", "AlarmTarget"} <= named
    assert named <= set(sam_template["Parameters"])


def test_dev_and_prod_are_separate_stacks_with_separate_metrics(samconfig):
    dev, prod = overrides(samconfig, "default"), overrides(samconfig, "prod")
    stacks = {samconfig[env]["global"]["parameters"]["stack_name"] for env in ("default", "prod")}
    assert len(stacks) == 2  # and so two metrics namespaces, Shardboard/<stack name>
    assert (dev["Stage"], prod["Stage"]) == ("dev", "prod")
    assert Template.load(overrides=prod).parameters["DeletionProtection"] == "true"


def test_outputs_give_the_api_url_table_names_and_stream(rendered):
    outputs = rendered["Outputs"]
    assert {"ApiUrl", "ViewsTableName", "BoardTableName", "ViewsStreamArn", "AlarmTopicArn", "DashboardUrl"} <= set(
        outputs
    )
    assert outputs["ViewsStreamArn"]["Value"] == {"Fn::GetAtt": ["ViewsTable", "StreamArn"]}


def test_every_parameter_is_documented_in_the_deploy_guide(sam_template):
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().strip("`") for line in guide.splitlines() if line.startswith("| `")}
    assert set(sam_template["Parameters"]) <= rows


def test_the_http_api_is_throttled_and_access_logged(resources, sam_template):
    (stage,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
    for limit in ("ThrottlingBurstLimit", "ThrottlingRateLimit"):
        assert fixed(sam_template, stage["DefaultRouteSettings"][limit]) > 0
    assert stage["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": ["HttpApiAccessLogs", "Arn"]}
    assert '"status":"$context.status"' in stage["AccessLogSettings"]["Format"]
