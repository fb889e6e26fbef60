"""What README.md, docs/deploy.md and the stack's output descriptions say about authorization and outputs is read
from template.yaml: the routes ItemsAdminPolicy allows, the routes Jwt's admin scope guards, the outputs a deploy prints
(they had drifted: the docs said PUT /item only, and "hide and delete come later")."""

from __future__ import annotations

import re
from typing import Any

from tests.template.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")


def policy_routes(sam_template: dict[str, Any], policy: str) -> list[str]:
    """``["PUT /item", ...]``: what a managed policy of the template allows execute-api:Invoke on."""
    (statement,) = sam_template["Resources"][policy]["Properties"]["PolicyDocument"]["Statement"]
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    routes = []
    for resource in resources:
        method, path = re.fullmatch(r".*/\$default/([A-Z]+)(/.*)", resource["Fn::Sub"]).groups()
        routes.append(f"{method} {path}")
    return routes


def picks_admin_scope(node: Any) -> bool:
    """Whether ``node`` holds Jwt's fourth field ("<issuer> <audiences> <write scope> <admin scope>")."""
    if isinstance(node, list):
        return any(picks_admin_scope(part) for part in node)
    if not isinstance(node, dict):
        return False
    select = node.get("Fn::Select")
    if select is not None and select[0] == 3 and "${Jwt}" in repr(select[1]):
        return True
    return any(picks_admin_scope(value) for value in node.values())


def admin_scope_routes(sam_template: dict[str, Any]) -> list[str]:
    """The routes the HttpApi body guards with Jwt's admin scope (WriteAuth=jwt)."""
    paths = sam_template["Resources"]["HttpApi"]["Properties"]["DefinitionBody"]["paths"]
    return [
        f"{method.upper()} {path}"
        for path, operations in paths.items()
        for method, operation in operations.items()
        if picks_admin_scope(operation.get("security"))
    ]


def sentence(text: str, start: str) -> str:
    """The text from ``start`` to the end of its sentence (a period followed by a space or a line end)."""
    found = text.index(start)
    return " ".join(re.split(r"\.\s", text[found:], maxsplit=1)[0].split())


def missing(routes: list[str], text: str) -> list[str]:
    """The routes ``text`` does not name."""
    return [route for route in routes if f"`{route}`" not in text and route not in text]


def test_the_admin_policy_and_the_admin_scope_guard_the_same_routes(sam_template):
    assert sorted(policy_routes(sam_template, "ItemsAdminPolicy")) == sorted(admin_scope_routes(sam_template))
    assert "DELETE /item" in policy_routes(sam_template, "ItemsAdminPolicy")


def test_the_admin_policy_output_names_every_route_it_allows(sam_template):
    description = " ".join(sam_template["Outputs"]["ItemsAdminPolicyArn"]["Description"].split())
    assert missing(policy_routes(sam_template, "ItemsAdminPolicy"), description) == []
    writer = sam_template["Outputs"]["ViewsWriterPolicyArn"]["Description"]
    assert missing(policy_routes(sam_template, "ViewsWriterPolicy"), writer) == []


def test_the_readme_names_every_route_the_admin_policy_allows(sam_template):
    about_policy = sentence(README, "Item administrators get the output `ItemsAdminPolicyArn`")
    assert missing(policy_routes(sam_template, "ItemsAdminPolicy"), about_policy) == []
    about_scope = sentence(README, "The admin scope is the one the item admin routes")
    assert missing(admin_scope_routes(sam_template), about_scope) == []


def test_deploy_md_names_every_route_of_the_admin_scope(sam_template):
    (row,) = [line for line in DEPLOY.splitlines() if line.startswith("| `Jwt` |")]
    assert missing(admin_scope_routes(sam_template), row) == []
    assert "later" not in row


def test_deploy_md_lists_every_output_of_the_stack(sam_template):
    printed = sentence(DEPLOY, "After the deploy the stack prints its outputs")
    assert [name for name in sam_template["Outputs"] if f"`{name}`" not in printed] == []
