"""Rate limits of public views in the template (docs/honest-counts.md "Rate limits"): the fixed limits and their
bounds, the functions' environment (the limits only with PublicViews), the RateLimitedViews alarm and dashboard, and
the record function's policy (the allowance is an UpdateItem on the views table: nothing added)."""

from __future__ import annotations

import json
import re

import pytest

from shardboard.domain.writing.rate_limit import RateLimits
from shardboard_tools.template import Template, TemplateError
from tests.template.conftest import NAMESPACE, TEMPLATE, fixed, of_type
from tests.template.test_auth import CHOICES, deployed

LIMITS = ("ViewsPerIpPerMinute", "ViewsPerViewerPerMinute")


def test_the_limits_are_fixed_and_a_local_run_may_set_them(sam_template):
    views = sam_template["Mappings"]["Tuning"]["Views"]
    assert (views["ViewsPerIpPerMinute"], views["ViewsPerViewerPerMinute"]) == (120, 30)
    for name in LIMITS:
        assert Template.load(TEMPLATE, overrides={name: "0"}).parameters[name] == "0"  # 0 = off
        with pytest.raises(TemplateError, match=name):
            Template.load(TEMPLATE, overrides={name: "-1"})
        with pytest.raises(TemplateError, match=name):
            Template.load(TEMPLATE, overrides={name: "many"})
    assert sam_template["Mappings"]["Tuning"]["Alarms"]["RateLimitedViewsAlarmThreshold"] >= 1


@pytest.mark.parametrize("choice", CHOICES)
def test_the_functions_get_the_limits_only_with_public_views(rendered, choice):
    stack = deployed(rendered, **choice, ViewsPerIpPerMinute="50", ViewsPerViewerPerMinute="7")
    variables = stack["Resources"]["RecordViewsFunction"]["Properties"]["Environment"]["Variables"]
    public = choice["PublicViews"] == "true"
    expected = ("50", "7") if public else ("0", "0")
    assert (variables["VIEWS_PER_IP_PER_MINUTE"], variables["VIEWS_PER_VIEWER_PER_MINUTE"]) == expected
    # ... and the settings the local runtime builds from the same template agree
    template = Template.load(
        TEMPLATE, overrides={**choice, "ViewsPerIpPerMinute": "50", "ViewsPerViewerPerMinute": "7"}
    )
    limits = template.settings("RecordViewsFunction").rate_limits
    assert limits == (RateLimits(50, 7) if public else RateLimits())


def test_the_rate_limited_views_alarm_follows_the_duplicate_views_alarm(resources, sam_template):
    alarms = {name: r["Properties"] for name, r in of_type(resources, "AWS::CloudWatch::Alarm").items()}
    alarm, model = alarms["RateLimitedViewsAlarm"], alarms["DuplicateViewsAlarm"]
    assert (alarm["MetricName"], alarm["Namespace"]) == ("RateLimitedViews", NAMESPACE)
    assert fixed(sam_template, alarm["Threshold"]) == 1000
    same = ("Dimensions", "Statistic", "Period", "EvaluationPeriods", "ComparisonOperator", "TreatMissingData")
    assert {k: alarm[k] for k in (*same, "AlarmActions", "OKActions")} == {
        k: model[k] for k in (*same, "AlarmActions", "OKActions")
    }
    assert "docs/operations.md" in alarm["AlarmDescription"]


def test_the_dashboard_shows_the_alarm_and_the_metric(sam_template):
    body, _ = sam_template["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    assert "${RateLimitedViewsAlarm.Arn}" in body
    assert re.search(r'"RateLimitedViews", "service", "shardboard"', body)
    json.loads(re.sub(r"\$\{[^}]+\}", "0", body))  # still valid JSON with the substitutions made


def test_the_record_function_needs_no_new_permission(resources):
    # The allowance is a conditional UpdateItem on the views table, which the counter write already needs.
    role = resources["RecordViewsFunctionRole"]["Properties"]
    statements = [s for policy in role["Policies"] for s in policy["PolicyDocument"]["Statement"]]
    views = [s for s in statements if s["Resource"] == {"Fn::GetAtt": ["ViewsTable", "Arn"]}]
    assert [sorted(s["Action"]) for s in views] == [["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]]
