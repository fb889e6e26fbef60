"""The stack describes itself: the StackConfig custom resource publishes, at every deploy, exactly the settings the
functions run with (the Globals' variables a client must agree on), after the table and the log group exist."""

from __future__ import annotations

from typing import Any

from shardboard.settings import PUBLISHED_VARIABLES
from tests.template.conftest import of_type

# The Globals' variables a client never needs from the stack: the tables (named after the stack) and Powertools'.
NOT_PUBLISHED = {"VIEWS_TABLE", "BOARD_TABLE", "SHARDS_TABLE", "ITEMS_TABLE"}


def test_the_stack_publishes_every_setting_its_functions_get_under_the_same_expression(sam_template):
    environment = sam_template["Globals"]["Function"]["Environment"]["Variables"]
    published = sam_template["Resources"]["StackConfig"]["Properties"]["Settings"]
    shared = {name for name in environment if name not in NOT_PUBLISHED and not name.startswith("POWERTOOLS_")}
    # A variable added to the Globals must be published too (and known to Settings), or clients would disagree
    assert set(published) == shared == set(PUBLISHED_VARIABLES)
    for name, value in published.items():
        assert value == environment[name], name


def test_the_custom_resource_runs_after_its_table_and_log_group_exist(resources: dict[str, Any]):
    (config,) = [r for r in resources.values() if r["Type"] == "Custom::StackConfig"]
    properties = config["Properties"]
    assert properties["ServiceToken"] == {"Fn::GetAtt": ["StackConfigFunction", "Arn"]}
    assert properties["Table"] == {"Ref": "BoardTable"}  # a dependency: the table exists before the first write
    # Lambda would create the log group itself at the first invocation, and the stack's own would then fail to
    depends = config["DependsOn"]
    assert "StackConfigLogs" in ([depends] if isinstance(depends, str) else depends)
    assert 1 <= properties["ServiceTimeout"] <= 300  # a lost answer fails the deploy in minutes, not in an hour


def test_only_the_deploy_invokes_it(resources: dict[str, Any]):
    functions = of_type(resources, "AWS::Lambda::Function")
    handler = functions["StackConfigFunction"]["Properties"]["Handler"]
    assert handler == "shardboard.handlers.stack_config.handler"
    # no event source: no schedule, stream or route reaches it
    triggers = [r for r in resources.values() if r["Type"] in {"AWS::Lambda::EventSourceMapping", "AWS::Events::Rule"}]
    assert all("StackConfigFunction" not in str(r["Properties"]) for r in triggers)
    permissions = of_type(resources, "AWS::Lambda::Permission").values()
    assert all("StackConfigFunction" not in str(r["Properties"]) for r in permissions)
