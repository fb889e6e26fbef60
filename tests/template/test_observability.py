"""Observability of the rendered template: the alarms of docs/operations.md exist and notify the topic, the
dashboard is valid, and the functions' metrics land where the alarms look for them."""

from __future__ import annotations

import json
import os
import random
import re
from typing import Any
from unittest import mock

import pytest

from shardboard_tools.local.runtime import Runtime
from shardboard_tools.template import Template, TemplateError
from tests.conftest import load_event
from tests.template.conftest import DEPLOY_FUNCTIONS, FUNCTIONS, NAMESPACE, ROOT, fixed, of_type

TOPIC = {"Fn::If": ["CreateAlarmTopic", {"Ref": "AlarmTopic"}, {"Ref": "AlarmTarget"}]}
ON_CALL = "arn:aws:sns:us-east-1:123456789012:on-call"


@pytest.fixture(scope="module")
def alarms(resources: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: dict(r["Properties"]) for name, r in of_type(resources, "AWS::CloudWatch::Alarm").items()}


def dimensions(alarm: dict[str, Any]) -> dict[str, Any]:
    return {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])}


def find(alarms: dict[str, dict[str, Any]], namespace: Any, metric: str, **dims: Any) -> dict[str, Any]:
    found = [
        a
        for a in alarms.values()
        if a["Namespace"] == namespace and a["MetricName"] == metric and dimensions(a) == dims
    ]
    assert len(found) == 1, f"expected one alarm on {namespace} {metric} {dims}, found {len(found)}"
    return found[0]


def test_every_alarm_notifies_the_topic_on_alarm_and_on_recovery(alarms):
    assert len(alarms) >= 6
    for name, alarm in alarms.items():
        assert alarm["AlarmActions"] == [TOPIC], name
        assert alarm["OKActions"] == [TOPIC], name
        assert "docs/operations.md" in alarm["AlarmDescription"], name


@pytest.mark.parametrize(
    ("given", "topic_created", "subscribed", "notified"),
    [
        ({}, True, False, "AlarmTopic"),
        ({"AlarmTarget": "oncall@example.com"}, True, True, "AlarmTopic"),
        ({"AlarmTarget": ON_CALL}, False, False, ON_CALL),
        # the parameters AlarmTarget replaced, as scripts and samconfig files of earlier versions pass them
        ({"AlarmEmail": "oncall@example.com"}, True, True, "AlarmTopic"),
        ({"AlarmTopicArn": ON_CALL, "AlarmEmail": "oncall@example.com"}, False, False, ON_CALL),
    ],
)
def test_a_topic_is_created_unless_one_is_given_and_an_address_is_subscribed(
    resources, given, topic_created, subscribed, notified
):
    template = Template.load(ROOT / "template.yaml", given)
    assert resources["AlarmTopic"]["Condition"] == "CreateAlarmTopic"
    assert resources["AlarmEmailSubscription"]["Condition"] == "SubscribeAlarmEmail"
    decided = (template.condition("CreateAlarmTopic"), template.condition("SubscribeAlarmEmail"))
    assert decided == (topic_created, subscribed)
    action = template.select(resources["AggregatorErrorsAlarm"]["Properties"]["AlarmActions"][0])
    assert action == ({"Ref": "AlarmTopic"} if notified == "AlarmTopic" else notified)


@pytest.mark.parametrize("target", ["arn:aws:sns:us-east-1:12:short", "not an address", "arn:x@example.com"])
def test_an_alarm_target_that_is_neither_a_topic_nor_an_address_is_refused(target):
    with pytest.raises(TemplateError, match="AlarmTarget"):
        Template.load(ROOT / "template.yaml", {"AlarmTarget": target})


def test_stream_lag_alarm(sam_template, alarms):
    alarm = find(alarms, "AWS/Lambda", "IteratorAge", FunctionName={"Ref": "AggregatorFunction"})
    assert alarm["Statistic"] == "Maximum"
    assert fixed(sam_template, alarm["Threshold"]) > 0


@pytest.mark.parametrize("queue", ["StreamFailureQueue", "SnapshotFailureQueue"])
def test_dead_letter_queue_depth_alarms(alarms, queue):
    depth = "ApproximateNumberOfMessagesVisible"
    alarm = find(alarms, "AWS/SQS", depth, QueueName={"Fn::GetAtt": [queue, "QueueName"]})
    assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"


def test_skipped_stream_records_alarm_fires_on_the_first_one(alarms):
    # The FilterCriteria keep every record that is not a counter from the aggregator: a skipped one is a fault.
    alarm = find(alarms, NAMESPACE, "RecordsSkipped", service="shardboard")
    assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == ("Sum", 300, 1)
    assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"


def test_an_unproven_snapshot_alarms_on_the_first_one(alarms):
    # What the job's own repair cannot fix needs `shardboard refill`: its first unrepaired head is the signal.
    alarm = find(alarms, NAMESPACE, "UnprovenSnapshots", service="shardboard")
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == ("Sum", 0, "GreaterThanThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"


def test_a_period_that_failed_its_last_refreshes_alarms_at_once(alarms):
    # The job counts, per period, its refreshes failed in a row; StuckSnapshots is how many periods reached 3: one
    # is a frozen board (the other periods keep SnapshotRefreshes up, so the staleness alarm stays quiet).
    alarm = find(alarms, NAMESPACE, "StuckSnapshots", service="shardboard")
    assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == ("Maximum", 60, 1)
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"


def test_the_snapshot_job_emits_stuck_snapshots_for_a_period_that_failed_three_runs(pipeline, capsys, monkeypatch):
    from shardboard.handlers import observability, snapshot
    from shardboard.services import snapshots

    # Given a head write that fails for the day period only
    observability.metrics.clear_metrics()
    take = snapshots.take_snapshot

    def failing_day(board, settings, now=None, period=None, *args, **kwargs):
        if period is not None and period.kind == "day":
            raise RuntimeError("the head of this day cannot be written")
        return take(board, settings, now, period, *args, **kwargs)

    monkeypatch.setattr(snapshots, "take_snapshot", failing_day)
    emitted = []
    # When views come in and the real snapshot handler runs, three times
    for _ in range(3):
        pipeline.record_one_by_one("a", 1, random.Random(7))
        pipeline.aggregate(pipeline.stream_records())
        capsys.readouterr()
        pipeline.runtime.invoke(snapshot.handler, load_event("snapshot_scheduled.json"))
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
        emitted.append(next(line["StuckSnapshots"] for line in lines if "StuckSnapshots" in line))
    # Then the third run counts the day as stuck, in the alarm's namespace and dimension
    assert emitted == [[0.0], [0.0], [1.0]]


def test_the_aggregator_emits_the_metric_the_skipped_records_alarm_watches(pipeline, capsys):
    from shardboard.handlers import observability

    # Given a counter record and a record that is not a counter (a REMOVE) in one batch
    observability.metrics.clear_metrics()
    pipeline.views.add_view("a", 0)
    counter = pipeline.stream_records()[-1]
    removal = {**counter, "eventName": "REMOVE"}
    capsys.readouterr()
    # When the real aggregator handler runs
    assert pipeline.aggregate([counter, removal]) == {"batchItemFailures": []}
    # Then its EMF line counts the skipped record in the alarm's namespace and dimension
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    emf = next(line for line in lines if "RecordsSkipped" in line)
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == os.environ["POWERTOOLS_METRICS_NAMESPACE"]
    assert emf["service"] == "shardboard" and directive["Dimensions"] == [["service"]]
    assert emf["RecordsSkipped"] == [1.0] and emf["ViewsAggregated"] == [1.0]


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("metric", ["Errors", "Throttles"])
def test_every_function_has_error_and_throttle_alarms(resources, alarms, function, metric):
    assert resources[function]["Type"] == "AWS::Lambda::Function"
    alarm = find(alarms, "AWS/Lambda", metric, FunctionName={"Ref": function})
    assert alarm["Statistic"] == "Sum"


def test_index_write_throttling_alarm(alarms):
    board, index = {"Ref": "BoardTable"}, "by-deep"
    find(alarms, "AWS/DynamoDB", "WriteThrottleEvents", TableName=board, GlobalSecondaryIndexName=index)
    find(alarms, "AWS/DynamoDB", "WriteThrottleEvents", TableName={"Ref": "ViewsTable"})


def test_snapshot_staleness_alarm_fires_when_refreshes_stop(alarms, sam_template):
    alarm = find(alarms, NAMESPACE, "SnapshotRefreshes", service="shardboard")
    # A job that stopped emits nothing: missing data must count as stale.
    assert alarm["TreatMissingData"] == "breaching"
    assert alarm["ComparisonOperator"] == "LessThanThreshold" and alarm["Threshold"] == 1
    staleness = {"Fn::FindInMap": ["Stages", {"Ref": "Stage"}, "SnapshotStalenessMinutes"]}
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] == staleness
    assert fixed(sam_template, staleness) == 10  # prod, the default stage


def test_the_snapshot_job_emits_the_metric_the_staleness_alarm_watches(pipeline, capsys):
    # Given a deployed-like pipeline and a fresh container (no metrics left by an earlier in-process run)
    from shardboard.handlers import observability

    observability.metrics.clear_metrics()
    pipeline.views.add_view("a", 0)
    capsys.readouterr()
    # When the real snapshot handler runs
    pipeline.snapshot()
    # Then its EMF line carries SnapshotRefreshes in the configured namespace with the alarm's dimension
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    emf = next(line for line in lines if "SnapshotRefreshes" in line)
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == os.environ["POWERTOOLS_METRICS_NAMESPACE"]
    assert emf["service"] == "shardboard" and directive["Dimensions"] == [["service"]]
    assert emf["SnapshotRefreshes"] == [1.0]


def test_functions_get_the_namespace_parameter_tracing_and_logs_with_retention(resources):
    log_groups = of_type(resources, "AWS::Logs::LogGroup").values()
    for function in FUNCTIONS + DEPLOY_FUNCTIONS:
        properties = resources[function]["Properties"]
        assert properties["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"] == NAMESPACE
        assert properties["TracingConfig"] == {"Mode": "Active"}
        names = [g["Properties"].get("LogGroupName") for g in log_groups]
        assert {"Fn::Sub": f"/aws/lambda/${{{function}}}"} in names
    retention = {"Fn::FindInMap": ["Stages", {"Ref": "Stage"}, "LogRetentionDays"]}
    assert all(g["Properties"]["RetentionInDays"] == retention for g in log_groups)


def test_the_handlers_take_the_namespace_from_the_environment():
    from shardboard.handlers import observability

    assert observability.metrics.namespace == os.environ["POWERTOOLS_METRICS_NAMESPACE"]


def test_local_runs_export_the_templates_namespace(monkeypatch):
    from shardboard.handlers import observability

    with mock.patch.dict(os.environ):
        # Given handlers imported without a namespace in the environment (a terminal, not Lambda)
        del os.environ["POWERTOOLS_METRICS_NAMESPACE"]
        monkeypatch.setattr(observability.metrics, "namespace", None)
        # When the local runtime of stack local-1 hands its settings to the handlers
        Runtime.from_template(ROOT / "template.yaml", stack="local-1").export_to_handlers()
        # Then they use the stack's namespace, as a deployed function would, and the environment is untouched
        assert observability.metrics.namespace == "Shardboard/local-1"
        assert "POWERTOOLS_METRICS_NAMESPACE" not in os.environ


def test_the_dashboard_is_valid_json_over_existing_resources(resources, sam_template):
    (dashboard,) = of_type(resources, "AWS::CloudWatch::Dashboard").values()
    body, variables = dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
    names = set(re.findall(r"\$\{([^}]+)\}", body))
    known = set(resources) | set(sam_template["Parameters"]) | set(variables) | {"AWS::Region"}
    assert {name.split(".")[0] for name in names} <= known
    widgets = json.loads(re.sub(r"\$\{[^}]+\}", "0", body))["widgets"]
    (alarm_widget,) = [w for w in widgets if w["type"] == "alarm"]
    alarmed = {n.split(".")[0] for n in re.findall(r"\$\{([^}]+\.Arn)\}", body)}
    assert alarmed == set(of_type(resources, "AWS::CloudWatch::Alarm"))
    assert len(alarm_widget["properties"]["alarms"]) == len(alarmed)
