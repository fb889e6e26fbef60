"""What the security scan (checkov, in `make lint`) asks of the template: the checks that protect a user are met,
every other is skipped on its resource with the reason beside it."""

from __future__ import annotations

import re

from tests.template.conftest import fixed, of_type

# A write takes ~50 ms (a transaction with a viewer): the requests/s one unit of reserved concurrency carries.
WRITES_PER_SECOND_PER_UNIT = 20


def test_the_public_write_function_has_a_concurrency_cap_above_the_default_rate(sam_template, resources):
    cap = fixed(sam_template, resources["RecordViewsFunction"]["Properties"]["ReservedConcurrentExecutions"])
    rate = fixed(sam_template, {"Ref": "ApiThrottlingRateLimit"})
    assert cap > 0 and cap * WRITES_PER_SECOND_PER_UNIT >= 2 * rate
    # Throttled writes (the cap reached) page someone
    alarm = resources["RecordViewsThrottlesAlarm"]["Properties"]
    assert alarm["MetricName"] == "Throttles" and alarm["Dimensions"][0]["Value"] == {"Ref": "RecordViewsFunction"}


def test_failure_queues_are_encrypted_and_the_alarm_topic_stays_publishable(resources):
    for name, queue in of_type(resources, "AWS::SQS::Queue").items():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True, name
    # CloudWatch cannot publish to a topic under the AWS-managed SNS key: alarms would never arrive.
    assert "KmsMasterKeyId" not in resources["AlarmTopic"]["Properties"]


def test_every_skipped_check_says_why_and_none_skips_the_write_cap(sam_template):
    skipped: dict[str, set[str]] = {}
    for name, resource in sam_template["Resources"].items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            assert re.fullmatch(r"CKV_AWS_\d+", skip["id"]), (name, skip)
            assert len(skip["comment"].split()) >= 4, (name, skip)  # a reason, not a shrug
            skipped.setdefault(name, set()).add(skip["id"])
    assert "CKV_AWS_115" not in skipped["RecordViewsFunction"]
    assert "CKV_AWS_115" in skipped["ReadApiFunction"]
