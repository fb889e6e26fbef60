"""Board events in the template: a bus of the stack's own unless EventBusName names one, the snapshot function told
its name and allowed PutEvents on it alone, a sample rule, an output (docs/events.md)."""

from __future__ import annotations

import re

from shardboard.settings import Settings
from shardboard_tools.template import Template
from tests.template.conftest import TEMPLATE, of_type


def test_the_bus_is_the_stacks_own_unless_one_is_given(sam_template, resources):
    parameter = sam_template["Parameters"]["EventBusName"]
    assert parameter["Default"] == ""
    assert sam_template["Conditions"]["OwnEventBus"] == {"Fn::Equals": [{"Ref": "EventBusName"}, ""]}
    (bus,) = of_type(resources, "AWS::Events::EventBus").values()
    assert bus["Condition"] == "OwnEventBus"
    assert bus["Properties"]["Name"] == {"Fn::Sub": "${AWS::StackName}-board-events"}
    pattern = re.compile(parameter["AllowedPattern"])
    assert pattern.fullmatch("") and pattern.fullmatch("orders-bus.v2") and not pattern.fullmatch("a*")


def test_the_snapshot_function_is_told_the_bus_it_may_put_events_on(sam_template):
    environment = sam_template["Resources"]["SnapshotFunction"]["Properties"]["Environment"]["Variables"]
    assert environment["EVENT_BUS_NAME"] == {
        "Fn::If": ["OwnEventBus", {"Fn::Sub": "${AWS::StackName}-board-events"}, {"Ref": "EventBusName"}]
    }
    # As the local runtime reads it: the stack's own bus by name, or the one given
    own = Template.load(TEMPLATE, {}, "demo").function_environment("SnapshotFunction")
    given = Template.load(TEMPLATE, {"EventBusName": "orders"}, "demo").function_environment("SnapshotFunction")
    assert Settings.from_env(own).event_bus == "demo-board-events"
    assert Settings.from_env(given).event_bus == "orders"


def test_a_sample_rule_matches_an_item_entering_the_global_top_ten_on_that_bus(resources, rendered):
    rules = of_type(resources, "AWS::Events::Rule").values()
    (rule,) = [r for r in rules if "EventPattern" in r["Properties"]]  # the others are schedules
    assert rule["Properties"]["EventBusName"] == {
        "Fn::If": ["OwnEventBus", {"Ref": "EventBus"}, {"Ref": "EventBusName"}]
    }
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["shardboard"] and pattern["detail-type"] == ["Item entered top N"]
    assert pattern["detail"]["rank"] == [{"numeric": ["<=", 10]}]
    assert "Targets" not in rule["Properties"]  # a sample: add a target to use it
    assert rendered["Outputs"]["BoardEventBus"]["Value"] == rule["Properties"]["EventBusName"]
