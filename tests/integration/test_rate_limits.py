"""Rate limits of public views (issue 14 item 5, docs/honest-counts.md "Rate limits") through the real POST /views
handler on moto, with template.yaml's tables and API Gateway's own event (events/record_views_post.json): past a
client's allowance a view is answered 429 rate_limited with Retry-After and writes nothing; a new minute admits
again; IPs (IPv6: /64 networks) and viewers are limited apart; without PublicViews nothing is limited.

The hypothesis property at the end runs threads of requests from one IP against moto: exactly ``limit`` views are
admitted per window, and the counts equal the admitted views."""

from __future__ import annotations

import ipaddress
import json
import random
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.adapters.keys import RATE_PREFIX
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard.domain.writing.dedupe import Seen
from shardboard.domain.writing.rate_limit import RateLimited, RateLimits, allowances, within
from shardboard.domain.writing.recording import record_seen_view, record_views
from shardboard_tools.lambda_model.event_filter import matches_any
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.operations.verification import verify
from tests.conftest import examples
from tests.integration.test_honest_counts import run_at_once
from tests.integration.test_http_api import call, post

MINUTE_START = 1_794_999_960  # a multiple of 60
PUBLIC = {"PublicViews": "true", "ViewsPerIpPerMinute": "3", "ViewsPerViewerPerMinute": "2"}


class Stopped:
    """The functions' one clock, stopped at ``now`` (epoch seconds) until a test moves it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return datetime.fromtimestamp(self.now, UTC)


@pytest.fixture
def clock():
    """The time the handler sees: ``clock.now``, given to the pipeline."""
    return Stopped(MINUTE_START + 10.0)


def post_from(source_ip: str, body: dict) -> dict:
    """POST /views as API Gateway delivers it from ``source_ip`` (requestContext.http.sourceIp)."""
    event = post(json.dumps(body))
    event["requestContext"]["http"]["sourceIp"] = source_ip
    return event


def table(pipeline) -> list[dict]:
    return sorted(pipeline.runtime.dynamodb.scan(TableName=pipeline.settings.views_table)["Items"], key=str)


def test_the_view_past_the_ip_limit_is_refused_with_429_and_writes_nothing(make_pipeline, clock, capsys):
    pipeline = make_pipeline(clock=clock, **PUBLIC)
    statuses = [call(pipeline, "record_views", post_from("203.0.113.7", {"id": "a"}))[0] for _ in range(3)]
    assert statuses == [202, 202, 202]
    before = table(pipeline)
    status, headers, body = call(pipeline, "record_views", post_from("203.0.113.7", {"id": "b", "boards": ["cats"]}))
    assert status == 429, body
    assert body == {
        "message": "rate limited: more than 3 views per ip per minute; no views were recorded",
        "code": "rate_limited",
    }
    assert headers["retry-after"] == "50"  # the rest of the minute
    assert table(pipeline) == before  # nothing written: no counter, no allowance
    assert pipeline.truth() == {"a": 3}
    assert '"RateLimitedViews"' in capsys.readouterr().out  # the metric, in the EMF line


def test_a_new_minute_admits_again(make_pipeline, clock):
    pipeline = make_pipeline(clock=clock, **PUBLIC)
    for expected in (202, 202, 202, 429):
        assert call(pipeline, "record_views", post_from("203.0.113.7", {"id": "a"}))[0] == expected
    clock.now = MINUTE_START + 60
    for expected in (202, 202, 202, 429):
        assert call(pipeline, "record_views", post_from("203.0.113.7", {"id": "a"}))[0] == expected
    assert pipeline.truth() == {"a": 6}


def test_two_ips_are_limited_apart_and_an_ipv6_client_is_its_64(make_pipeline, clock):
    pipeline = make_pipeline(clock=clock, **PUBLIC)
    sources = ["203.0.113.7", "198.51.100.1", "2001:db8:0:1::a", "2001:db8:0:1::b", "2001:db8:0:2::a"]
    statuses = {ip: [] for ip in sources}
    for _ in range(3):
        for ip in sources:
            statuses[ip].append(call(pipeline, "record_views", post_from(ip, {"id": "a"}))[0])
    assert statuses["203.0.113.7"] == statuses["198.51.100.1"] == statuses["2001:db8:0:2::a"] == [202] * 3
    # Two addresses of one /64 share its allowance: 3 views between them
    assert sorted(statuses["2001:db8:0:1::a"] + statuses["2001:db8:0:1::b"]) == [202] * 3 + [429] * 3
    assert pipeline.truth() == {"a": 12}


def test_a_forwarded_for_header_is_not_the_client(make_pipeline, clock):
    pipeline = make_pipeline(clock=clock, **PUBLIC)
    for number in range(4):
        event = post_from("203.0.113.7", {"id": "a"})
        event["headers"]["x-forwarded-for"] = f"10.0.0.{number}"
        assert call(pipeline, "record_views", event)[0] == (202 if number < 3 else 429)


def test_the_viewer_limit_holds_across_ips_and_items_and_a_request_counts_its_views(make_pipeline, clock):
    pipeline = make_pipeline(clock=clock, **PUBLIC)
    views = [("203.0.113.1", "a"), ("203.0.113.2", "b"), ("203.0.113.3", "c")]
    statuses = [call(pipeline, "record_views", post_from(ip, {"id": i, "viewer": "u1"}))[0] for ip, i in views]
    assert statuses == [202, 202, 429]
    status, _, body = call(pipeline, "record_views", post_from("203.0.113.3", {"id": "c", "viewer": "u2"}))
    assert status == 202, body  # the IP's allowance given back when u1 was refused
    # A request of 3 views takes 3 of the IP's allowance: too many once one is taken
    assert call(pipeline, "record_views", post_from("198.51.100.9", {"id": "d", "count": 3}))[0] == 202
    assert call(pipeline, "record_views", post_from("198.51.100.8", {"id": "d"}))[0] == 202
    assert call(pipeline, "record_views", post_from("198.51.100.8", {"id": "d", "count": 3}))[0] == 429
    assert pipeline.truth() == {"a": 1, "b": 1, "c": 1, "d": 4}


def test_allowances_never_reach_the_board_and_verify_stays_exact(make_pipeline, clock):
    pipeline = make_pipeline(clock=clock, **PUBLIC)
    for ip in ("203.0.113.7", "198.51.100.1"):
        for number in range(4):
            call(pipeline, "record_views", post_from(ip, {"id": f"i{number % 2}", "viewer": f"{ip}-{number}"}))
    records = pipeline.stream_records()
    assert any(r["dynamodb"]["Keys"]["pk"]["S"].startswith(RATE_PREFIX) for r in records)
    # The event source mapping's FilterCriteria drops every allowance record before the function ...
    patterns = EventSourceMapping.from_template(pipeline.runtime.template).filter_patterns
    passed = [r for r in records if matches_any(patterns, r)]
    assert passed and not any(r["dynamodb"]["Keys"]["pk"]["S"].startswith(RATE_PREFIX) for r in passed)
    # ... and the function skips them when they reach it anyway (every record, unfiltered), failing nothing
    assert pipeline.aggregate(records) == {"batchItemFailures": []}
    pipeline.snapshot()
    report = verify(pipeline.views, pipeline.runtime.board, pipeline.settings, clock=clock)
    assert report.exact, report
    assert pipeline.truth() == {"i0": 4, "i1": 2}  # per IP the first 3 are admitted: i0, i1, i0


def test_without_public_views_nothing_is_limited(make_pipeline, clock):
    pipeline = make_pipeline(clock=clock, ViewsPerIpPerMinute="3", ViewsPerViewerPerMinute="2")  # WriteAuth=iam
    assert pipeline.settings.rate_limits == RateLimits()
    statuses = [call(pipeline, "record_views", post_from("203.0.113.7", {"id": "a"}))[0] for _ in range(10)]
    assert statuses == [202] * 10
    assert pipeline.truth() == {"a": 10}
    assert not any(i["pk"]["S"].startswith(RATE_PREFIX) for i in table(pipeline))


def test_a_throttled_view_gives_its_allowance_back(make_pipeline, clock, monkeypatch):
    pipeline = make_pipeline(
        clock=clock, **PUBLIC, MaxWriteShards="20"
    )  # no dynamic sharding: one attempt, no back-off

    def throttled(*args, **kwargs):
        raise Throttled(ThrottleScope.TABLE)

    with monkeypatch.context() as patch:
        patch.setattr(ViewStore, "add_view", throttled)
        for _ in range(4):
            assert call(pipeline, "record_views", post_from("203.0.113.7", {"id": "a"}))[0] == 503
    statuses = [call(pipeline, "record_views", post_from("203.0.113.7", {"id": "a"}))[0] for _ in range(4)]
    assert statuses == [202, 202, 202, 429]
    assert pipeline.truth() == {"a": 3}


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    limit=st.integers(1, 4),
    extra=st.integers(0, 4),
    windows=st.integers(1, 2),
    viewers=st.booleans(),
)
def test_concurrent_requests_of_one_ip_admit_exactly_the_limit_and_count_exactly(
    pipeline, limit, extra, windows, viewers
):
    # Each example has its own client and item, so examples share the moto tables without seeing each other.
    ip, item, rng = str(ipaddress.IPv4Address(uuid.uuid4().int % 2**32)), uuid.uuid4().hex, random.Random(1)
    limits, shards = RateLimits(per_ip=limit), pipeline.settings.write_shards

    def request(at: float, number: int):
        viewer = f"v{at}-{number}" if viewers else None  # distinct viewers: none of these views is a duplicate

        def post_one() -> int:
            try:
                with within(pipeline.views, allowances(limits, ip, viewer, 1, at=at)):
                    if viewer is not None:
                        seen = Seen.of(viewer, 86_400, at=at)
                        return record_seen_view(pipeline.views, item, shards, seen, rng, where=pipeline.where()).views
                    return record_views(pipeline.views, item, 1, shards, rng, where=pipeline.where()).views
            except RateLimited:
                return 0

        return post_one

    admitted = 0
    for window in range(windows):
        at = MINUTE_START + 60 * window + 30
        results = run_at_once([request(at, number) for number in range(limit + extra)])
        assert sum(results) == limit  # exactly the limit, in each window
        admitted += sum(results)
    assert pipeline.truth().get(item, 0) == admitted == limit * windows


def test_a_request_no_window_could_admit_is_a_400_that_writes_nothing(make_pipeline, clock):
    # Given public views limited to 3 per IP per minute
    pipeline = make_pipeline(clock=clock, **PUBLIC)
    # When one request asks to count 4 views
    status, headers, body = call(pipeline, "record_views", post_from("203.0.113.40", {"id": "a", "count": 4}))
    # Then it is bad input (retrying later could never help): no Retry-After, nothing written, no allowance taken
    assert (status, body["code"]) == (400, "bad_request") and "more than the 3 views per ip" in body["message"]
    assert "retry-after" not in headers
    assert pipeline.runtime.dynamodb.scan(TableName=pipeline.settings.views_table)["Items"] == []
    assert call(pipeline, "record_views", post_from("203.0.113.40", {"id": "a", "count": 3}))[0] == 202
