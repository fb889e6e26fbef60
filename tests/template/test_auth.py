"""Authentication (issue 14, item 4), asserted on the rendered template for every WriteAuth x PublicViews choice:
reads are public, POST /views is SigV4 (iam), a JWT with the write scope (jwt) or open (PublicViews) and then
throttled on its own, the JWT authorizer takes its issuer and audience from the parameters, and the writers' policy
may invoke POST /views and nothing else. The template is rendered once by the SAM translator, then each choice's
conditions are decided by the project's template loader as CloudFormation would decide them."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

import pytest
from cfnlint.api import lint

from shardboard_tools.template import Template
from tests.template.conftest import ROOT, TEMPLATE
from tests.template.test_lint import SERVERLESS_RULES

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Example"
CHOICES = [
    pytest.param({"WriteAuth": "iam", "PublicViews": "false"}, id="iam"),
    pytest.param({"WriteAuth": "jwt", "PublicViews": "false"}, id="jwt"),
    pytest.param({"WriteAuth": "iam", "PublicViews": "true"}, id="iam-public"),
    pytest.param({"WriteAuth": "jwt", "PublicViews": "true"}, id="jwt-public"),
]
JWT = {"Jwt": f"{ISSUER} app-client-1,app-client-2"}


def deployed(rendered: dict[str, Any], **overrides: str) -> dict[str, Any]:
    """The rendered template as CloudFormation deploys it with ``overrides``: conditions decided, resources and
    outputs whose condition is false left out."""
    choice = Template.load(TEMPLATE, overrides={**(JWT if overrides.get("WriteAuth") == "jwt" else {}), **overrides})
    template = Template(rendered, choice.parameters)

    def kept(section: dict[str, Any]) -> dict[str, Any]:
        return {
            name: template.select(node)
            for name, node in section.items()
            if "Condition" not in node or template.condition(node["Condition"])
        }

    return {"Resources": kept(rendered["Resources"]), "Outputs": kept(rendered["Outputs"])}


def routes(stack: dict[str, Any]) -> dict[str, Any]:
    """{"POST /views": security, ...} of the API's OpenAPI body (the routes API Gateway imports)."""
    body = stack["Resources"]["HttpApi"]["Properties"]["Body"]
    return {
        f"{method.upper()} {path}": operation.get("security", "unset")
        for path, operations in body["paths"].items()
        for method, operation in operations.items()
    }


def schemes(stack: dict[str, Any]) -> dict[str, Any]:
    return dict(stack["Resources"]["HttpApi"]["Properties"]["Body"]["components"]["securitySchemes"])


def stage(stack: dict[str, Any]) -> dict[str, Any]:
    (properties,) = [r["Properties"] for r in stack["Resources"].values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
    return dict(properties)


@pytest.mark.parametrize("choice", CHOICES)
def test_each_route_carries_the_chosen_authorization(rendered, choice):
    stack = deployed(rendered, **choice)
    expected_write = (
        []
        if choice["PublicViews"] == "true"
        else [{"AWS_IAM": []}]
        if choice["WriteAuth"] == "iam"
        else [{"ViewsJwt": ["views:write"]}]
    )
    # Reads are explicitly unauthenticated (an empty security list) whatever is chosen; the write is as chosen.
    # The item admin routes take WriteAuth's mechanism with the admin scope, and PublicViews never opens them.
    expected_admin = [{"AWS_IAM": []}] if choice["WriteAuth"] == "iam" else [{"ViewsJwt": ["items:admin"]}]
    assert routes(stack) == {
        "POST /views": expected_write,
        "GET /leaderboard": [],
        "GET /items/{id+}": [],
        "GET /items": [],
        "GET /item": [],
        "GET /rank": [],
        "GET /around": [],
        "GET /boards": [],
        "GET /shardboard.js": [],
        "PUT /item": expected_admin,
        "POST /item/hide": expected_admin,
        "POST /item/unhide": expected_admin,
        "DELETE /item": expected_admin,
    }
    for name in (r for requirement in [*expected_write, *expected_admin] for r in requirement):
        assert name in schemes(stack)


def test_iam_is_sigv4_and_the_default(rendered, sam_template):
    assert sam_template["Parameters"]["WriteAuth"]["Default"] == "iam"
    assert sam_template["Parameters"]["PublicViews"]["Default"] == "false"
    stack = deployed(rendered)
    assert routes(stack)["POST /views"] == [{"AWS_IAM": []}]
    sigv4 = {"type": "apiKey", "name": "Authorization", "in": "header", "x-amazon-apigateway-authtype": "awsSigv4"}
    assert schemes(stack) == {"AWS_IAM": sigv4}


@pytest.mark.parametrize("public", ["false", "true"])
def test_the_jwt_authorizer_exists_only_with_jwt_and_takes_issuer_and_audience_from_the_parameters(rendered, public):
    assert "ViewsJwt" not in schemes(deployed(rendered, WriteAuth="iam", PublicViews=public))
    scopes = "shardboard/views.write shardboard/items.admin"
    stack = deployed(rendered, WriteAuth="jwt", PublicViews=public, Jwt=f"{JWT['Jwt']} {scopes}")
    # Kept with PublicViews too: the item admin routes need it with the admin scope.
    assert schemes(stack)["ViewsJwt"] == {
        "type": "oauth2",
        "x-amazon-apigateway-authorizer": {
            "type": "jwt",
            "identitySource": "$request.header.Authorization",
            "jwtConfiguration": {"issuer": ISSUER, "audience": ["app-client-1", "app-client-2"]},
        },
    }
    if public == "false":
        assert routes(stack)["POST /views"] == [{"ViewsJwt": ["shardboard/views.write"]}]
    assert routes(stack)["PUT /item"] == [{"ViewsJwt": ["shardboard/items.admin"]}]


def test_jwt_takes_the_parameters_it_replaced():
    # Given the four parameters of earlier versions, as scripts and tests still pass them to the local runtime
    old = {"JwtIssuer": ISSUER, "JwtAudience": "app-client-1,app-client-2", "JwtWriteScope": "shardboard/views.write"}
    loaded = Template.load(TEMPLATE, overrides={"WriteAuth": "jwt", **old})
    assert loaded.parameters["Jwt"] == f"{ISSUER} app-client-1,app-client-2 shardboard/views.write items:admin"
    # Then every parameter is what Jwt given as such makes it: the same stack
    new = {"Jwt": f"{JWT['Jwt']} shardboard/views.write items:admin"}
    assert loaded.parameters == Template.load(TEMPLATE, overrides={"WriteAuth": "jwt", **new}).parameters
    # ... also when a template is built by hand from parameters that name them (`serve --auth`, tests)
    by_hand = Template(loaded.body, {**Template.load(TEMPLATE).parameters, "WriteAuth": "jwt", **old})
    assert by_hand.parameters == loaded.parameters


@pytest.mark.parametrize(
    "jwt",
    [
        "http://insecure.example.com app-client-1",  # an issuer is an https URL
        ISSUER,  # at least one audience
        f"{ISSUER} app-client-1 only-one-scope",  # both scopes or neither
        f'{ISSUER} app-client-1 "quoted" items:admin',  # a scope is one token without quotes
    ],
)
def test_a_malformed_jwt_is_refused_saying_what_it_must_be(jwt):
    with pytest.raises(ValueError, match="parameter Jwt must be"):
        Template.load(TEMPLATE, overrides={"WriteAuth": "jwt", "Jwt": jwt})


@pytest.mark.parametrize(
    ("overrides", "failing"),
    [({"WriteAuth": "jwt"}, ["Jwt"]), ({"WriteAuth": "jwt", **JWT}, []), ({"WriteAuth": "iam"}, [])],
)
def test_jwt_refuses_to_deploy_without_issuer_and_audience(sam_template, overrides, failing):
    # The template's Rules, decided as CloudFormation decides them before it creates anything.
    template = Template.load(TEMPLATE, overrides=overrides)
    failed = []
    for rule in sam_template["Rules"].values():
        if template.resolve(rule["RuleCondition"]):
            failed += [a["AssertDescription"] for a in rule["Assertions"] if not template.resolve(a["Assert"])]
    assert [text.split(" needs ")[1].split(" ")[0] for text in failed] == failing


@pytest.mark.parametrize("choice", CHOICES)
def test_open_views_are_throttled_on_their_own_route_and_the_stage_keeps_its_cap(rendered, choice):
    settings = stage(deployed(rendered, **choice, PublicViewsRateLimit="25", PublicViewsBurstLimit="10"))
    assert settings["DefaultRouteSettings"] == {"ThrottlingBurstLimit": "500", "ThrottlingRateLimit": "1000"}
    if choice["PublicViews"] == "true":
        assert settings["RouteSettings"] == {"POST /views": {"ThrottlingBurstLimit": "10", "ThrottlingRateLimit": "25"}}
    else:
        assert "RouteSettings" not in settings


def test_the_writer_policy_may_invoke_post_views_only(rendered):
    stack = deployed(rendered)
    policy = stack["Resources"]["ViewsWriterPolicy"]
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
    arn = statement["Resource"]["Fn::Sub"]
    # this API (not `*`), the stage SAM creates, the POST method and the /views path, nothing wider
    assert arn == "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/$default/POST/views"
    assert stage(stack)["StageName"] == "$default" and not re.search(r"\*", arn)
    assert set(policy["Properties"]) == {"Description", "PolicyDocument"}  # attached by no one in this stack
    assert stack["Outputs"]["ViewsWriterPolicyArn"]["Value"] == {"Ref": "ViewsWriterPolicy"}


def test_the_writer_policy_exists_only_for_iam(rendered):
    stack = deployed(rendered, WriteAuth="jwt")
    assert "ViewsWriterPolicy" not in stack["Resources"] and "ViewsWriterPolicyArn" not in stack["Outputs"]
    assert "ItemsAdminPolicy" not in stack["Resources"] and "ItemsAdminPolicyArn" not in stack["Outputs"]


def test_the_items_admin_policy_may_invoke_the_item_admin_routes_only(rendered):
    stack = deployed(rendered)
    policy = stack["Resources"]["ItemsAdminPolicy"]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
    stage = "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/$default"
    assert [resource["Fn::Sub"] for resource in statement["Resource"]] == [
        f"{stage}/PUT/item",
        f"{stage}/POST/item/hide",
        f"{stage}/POST/item/unhide",
        f"{stage}/DELETE/item",
    ]
    assert set(policy["Properties"]) == {"Description", "PolicyDocument"}
    assert stack["Outputs"]["ItemsAdminPolicyArn"]["Value"] == {"Ref": "ItemsAdminPolicy"}


@pytest.mark.parametrize("choice", CHOICES[1:])
def test_cfn_lint_is_clean_for_every_other_choice(choice):
    """cfn-lint takes no parameter values: lint a copy whose defaults are the choice (the default is test_lint's)."""
    text = TEMPLATE.read_text(encoding="utf-8")
    for name, value in {**choice, "Jwt": f"{ISSUER} app-client-1"}.items():
        text, count = re.subn(rf"(\n  {name}:\n    Type: \w+\n    Default: )[^\n]*", rf'\g<1>"{value}"', text, count=1)
        assert count == 1, name
    assert [str(match) for match in lint(text, config=SERVERLESS_RULES)] == []


@pytest.mark.skipif(not (shutil.which("sam") or (ROOT / ".venv-sam/bin/sam").exists()), reason="no SAM CLI")
def test_sam_validate_lint_accepts_the_default():
    sam = str(ROOT / ".venv-sam/bin/sam") if (ROOT / ".venv-sam/bin/sam").exists() else str(shutil.which("sam"))
    result = subprocess.run(
        [sam, "validate", "--lint", "--template", str(TEMPLATE), "--region", "us-east-1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
