"""The refresh interval of EventBridge schedules (rate, and cron with ``? L W #``); malformed ones are refused."""

from __future__ import annotations

import pytest

from shardboard.settings import ConfigError, Settings, schedule_seconds

MINUTE, HOUR, DAY = 60, 3600, 86400


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [
        ("rate(1 minute)", MINUTE),
        ("rate(5 minutes)", 5 * MINUTE),
        ("rate(1 hour)", HOUR),
        ("rate(2 hours)", 2 * HOUR),
        ("rate(1 day)", DAY),
        (" rate(10 minutes) ", 10 * MINUTE),
        ("cron(0/5 * * * ? *)", 5 * MINUTE),
        ("cron(*/10 * * * ? *)", 10 * MINUTE),
        ("cron(1/10 * * * ? *)", 10 * MINUTE),  # 1, 11, ..., 51, then 1 of the next hour: 10
        ("cron(* * * * ? *)", MINUTE),
        ("cron(0 * * * ? *)", HOUR),
        ("cron(0 12 * * ? *)", DAY),
        ("cron(15 10 ? * MON-FRI *)", DAY),  # Monday to Tuesday; the weekend gap (3 days) is longer
        ("cron(0/5 8-17 ? * MON-FRI *)", 5 * MINUTE),
        ("cron(0 9,17 * * ? *)", 8 * HOUR),  # 09:00 -> 17:00, then 16 hours to the next 09:00
        ("cron(0,45 * * * ? *)", 15 * MINUTE),  # 00:45 -> 01:00
        ("cron(0 22-2 * * ? *)", HOUR),  # a range that wraps midnight: 22, 23, 0, 1, 2
        ("cron(0 8 1 * ? *)", 28 * DAY),  # the first of the month: February is the shortest month
        ("cron(0 8 L * ? *)", 28 * DAY),  # the last day: Jan 31 -> Feb 28
        ("cron(0 8 ? * 6L *)", 28 * DAY),  # the last Friday of the month
        ("cron(0 8 ? * 3#2 *)", 28 * DAY),  # the second Tuesday
        ("cron(0 8 15W * ? *)", 28 * DAY),  # the weekday nearest the 15th: never closer than February makes it
        ("cron(0 0 29 2 ? *)", 1461 * DAY),  # leap days only: four years apart
        ("cron(0 12 ? JAN-MAR SAT,SUN 2030)", DAY),
        ("cron(0 12 1 jan ? *)", 365 * DAY),  # names are case-insensitive
    ],
)
def test_schedule_seconds_is_the_smallest_interval_between_firings(expression, seconds):
    assert schedule_seconds(expression) == seconds


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("", "expected rate(N unit) or cron("),
        ("every minute", "expected rate(N unit) or cron("),
        ("rate(0 minutes)", "positive value"),
        ("rate(1 minutes)", "singular unit for 1"),
        ("rate(5 minute)", "singular unit for 1"),
        ("rate(5 seconds)", "expected rate(N unit)"),
        ("rate(-5 minutes)", "expected rate(N unit)"),
        ("rate(٣ minutes)", "expected rate(N unit)"),
        ("cron(0 12 * * ?)", "6 fields"),
        ("cron(0 12 * * * *)", "? in exactly one"),
        ("cron(0 12 ? * ? *)", "? in exactly one"),
        ("cron(60 * * * ? *)", "minutes must be from 0 to 59, got '60'"),
        ("cron(0 24 * * ? *)", "hours must be from 0 to 23"),
        ("cron(0 0 32 * ? *)", "day-of-month must be from 1 to 31"),
        ("cron(0 0 * 13 ? *)", "month must be from 1 to 12"),
        ("cron(0 0 ? * 8 *)", "day-of-week must be from 1 to 7"),
        ("cron(0 0 ? * FUN *)", "day-of-week must be from 1 to 7, got 'FUN'"),
        ("cron(0 0 * * ? 1969)", "year must be from 1970 to 2199"),
        ("cron(0/0 * * * ? *)", "minutes step"),
        ("cron(? * * * ? *)", "minutes must be"),
        ("cron(٣ * * * ? *)", "minutes must be"),
        ("cron(0 0 30 2 ? *)", "never fires"),
        ("cron(0 12 1 1 ? 2030)", "fires only once"),
    ],
)
def test_a_malformed_schedule_is_a_config_error_on_one_line(expression, reason):
    with pytest.raises(ConfigError) as raised:
        schedule_seconds(expression)
    assert reason in str(raised.value) and "\n" not in str(raised.value)


def test_settings_refuse_a_malformed_schedule_at_construction():
    # Given a deployed function's environment with a typo in the schedule
    # When its settings are read (cold start) / Then it fails there, naming the schedule, instead of answering 60
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"SNAPSHOT_SCHEDULE": "cron(0 12 * *)"})
    assert str(raised.value) == (
        "schedule 'cron(0 12 * *)' is not a valid EventBridge schedule: "
        "cron needs 6 fields (minutes hours day-of-month month day-of-week year), got 4"
    )
    assert Settings(schedule="cron(0 12 * * ? *)").refresh_seconds == DAY
