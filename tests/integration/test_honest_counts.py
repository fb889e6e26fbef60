"""Honest counts (issue 14 item 5, docs/honest-counts.md) on moto with template.yaml's tables: a view that names a
viewer counts once per (viewer, item, DedupeWindow), under duplicates at the same instant, retries and replays."""

from __future__ import annotations

import json
import random
import threading
import uuid

import pytest
from botocore.exceptions import ReadTimeoutError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.adapters.keys import SEEN_PREFIX
from shardboard.domain.writing.dedupe import MARKER_GRACE_SECONDS, Seen
from shardboard.domain.writing.recording import record_seen_view, record_views
from shardboard_tools.lambda_model.event_filter import matches_any
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.operations.verification import verify
from shardboard_tools.testing.faults import ClientFaults, FaultRates
from tests.conftest import examples
from tests.integration.test_http_api import call, post

DAY = 86_400
T = 1_795_000_000.0  # the views' time, fixed: a dedupe window never turns during a test


def seen_view(pipeline, item, seen, rng=None):
    shards = pipeline.settings.write_shards
    return record_seen_view(pipeline.views, item, shards, seen, rng or random.Random(1), where=pipeline.where())


def markers(pipeline):
    items = pipeline.runtime.dynamodb.scan(TableName=pipeline.settings.views_table)["Items"]
    return [item for item in items if item["pk"]["S"].startswith(SEEN_PREFIX)]


def test_the_same_viewer_and_item_twice_is_one_view(pipeline):
    first = seen_view(pipeline, "a", Seen.of("u1", DAY, at=T))
    second = seen_view(pipeline, "a", Seen.of("u1", DAY, at=T))
    assert (first.views, first.duplicate) == (1, False)
    assert (second.views, second.duplicate) == (0, True)
    assert pipeline.truth() == {"a": 1}
    # One marker, expiring (TTL) at the end of its window plus the grace
    (marker,) = markers(pipeline)
    seen = Seen.of("u1", DAY, at=T)
    assert int(marker["expires_at"]["N"]) == (seen.window + 1) * DAY + MARKER_GRACE_SECONDS


def test_different_viewers_and_different_items_count_apart(pipeline):
    for viewer, item in [("u1", "a"), ("u2", "a"), ("u1", "b"), ("u1#x", "y"), ("u1", "x#y")]:
        assert seen_view(pipeline, item, Seen.of(viewer, DAY, at=T)).views == 1
    # "u1#x" + "y" and "u1" + "x#y" spell different markers (the viewer is length-prefixed)
    assert pipeline.truth() == {"a": 2, "b": 1, "y": 1, "x#y": 1}


def test_a_new_window_counts_again(pipeline):
    start = (int(Seen.of("u", DAY, at=T).window) + 1) * DAY
    assert seen_view(pipeline, "a", Seen.of("u", DAY, at=start - 1)).views == 1
    assert seen_view(pipeline, "a", Seen.of("u", DAY, at=start - 1)).duplicate
    assert seen_view(pipeline, "a", Seen.of("u", DAY, at=start)).views == 1  # across the boundary: twice
    assert seen_view(pipeline, "a", Seen.of("u", DAY, at=start + DAY - 1)).duplicate
    assert pipeline.truth() == {"a": 2}


def test_the_same_view_posted_at_once_from_many_threads_counts_exactly_once(pipeline):
    barrier, results = threading.Barrier(8), []

    def post_one(seed):
        seen = Seen.of("u1", DAY, at=T)  # each request its own token, as the API makes one per request
        barrier.wait()
        results.append(seen_view(pipeline, "hot", seen, random.Random(seed)))

    threads = [threading.Thread(target=post_one, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.views for r in results) == [0] * 7 + [1]
    assert pipeline.truth() == {"hot": 1}


def test_a_retry_after_a_lost_response_counts_once_and_says_counted(pipeline):
    client = pipeline.views.client
    faults = ClientFaults(client, FaultRates(lost_response=1.0), random.Random(1), table=None).install()
    seen = Seen.of("u1", DAY, at=T)
    with pytest.raises(ReadTimeoutError):
        seen_view(pipeline, "a", seen)  # the transaction landed, its response was lost
    faults.uninstall()
    assert faults.injected["lost_response"] == 1
    # The caller retries the same view (same token): its own marker says it counted
    retried = seen_view(pipeline, "a", seen, random.Random(2))
    assert (retried.views, retried.duplicate) == (1, False)
    # A new request of the same viewer is a duplicate
    assert seen_view(pipeline, "a", Seen.of("u1", DAY, at=T)).duplicate
    assert pipeline.truth() == {"a": 1}


def test_the_sdk_resending_a_landed_transaction_counts_once(pipeline):
    faults = ClientFaults(pipeline.views.client, FaultRates(resent=1.0), random.Random(1)).install()
    try:
        recorded = seen_view(pipeline, "a", Seen.of("u1", DAY, at=T))
    finally:
        faults.uninstall()
    assert faults.injected["resent"] == 1
    assert (recorded.views, recorded.duplicate) == (1, False)
    assert pipeline.truth() == {"a": 1}


def test_through_the_aggregator_the_board_is_the_truth_and_verify_is_exact_with_markers(pipeline):
    rng, truth = random.Random(7), {}
    for _ in range(60):
        item, viewer = f"i{rng.randrange(5)}", f"v{rng.randrange(6)}"
        if seen_view(pipeline, item, Seen.of(viewer, DAY, at=T), rng).views:
            truth[item] = truth.get(item, 0) + 1
    for item in ("i0", "i9"):  # views without a viewer on the same counters
        record_views(pipeline.views, item, 3, pipeline.settings.write_shards, rng, where=pipeline.where())
        truth[item] = truth.get(item, 0) + 3
    assert markers(pipeline) and pipeline.truth() == truth
    records = pipeline.stream_records()
    # The event source mapping's FilterCriteria drops every marker record before the function
    patterns = EventSourceMapping.from_template(pipeline.runtime.template).filter_patterns
    passed = [r for r in records if matches_any(patterns, r)]
    assert len(passed) > 0
    assert not any(r["dynamodb"]["Keys"]["pk"]["S"].startswith(SEEN_PREFIX) for r in passed)
    # ... and the function itself skips them when they do reach it (all records, unfiltered), failing nothing
    assert pipeline.aggregate(records) == {"batchItemFailures": []}
    pipeline.snapshot()
    report = verify(pipeline.views, pipeline.runtime.board, pipeline.settings)
    assert report.exact, report
    assert report.views == sum(truth.values())
    assert pipeline.truth() == truth


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"id": "a", "viewer": ""}, "1-128 characters"),
        ({"id": "a", "viewer": "x" * 129}, "1-128 characters"),
        ({"id": "a", "viewer": "a\nb"}, "non-printable"),
        ({"id": "a", "viewer": "a\u200bb"}, "non-printable"),
        ({"id": "a", "viewer": 42}, "must be a string"),
        ({"id": "a", "viewer": None}, "must be a string"),
        ({"id": "a", "viewer": "u1", "count": 2}, "count must be 1 with a viewer"),
    ],
)
def test_a_bad_viewer_is_refused_with_400_and_writes_nothing(pipeline, body, reason):
    status, _, payload = call(pipeline, "record_views", post(json.dumps(body)))
    assert status == 400 and reason in payload["message"], payload
    assert pipeline.truth() == {} and markers(pipeline) == []


def test_http_a_viewer_counts_once_then_200_duplicate(pipeline, capsys):
    body = json.dumps({"id": "images/001.jpg", "viewer": "user-42", "boards": ["cats"]})
    status, _, first = call(pipeline, "record_views", post(body))
    assert (status, first) == (
        202,
        {"id": "images/001.jpg", "recorded": 1, "boards": ["global", "cats"], "duplicate": False},
    )
    status, _, again = call(pipeline, "record_views", post(body))
    assert (status, again) == (
        200,
        {"id": "images/001.jpg", "recorded": 0, "boards": ["global", "cats"], "duplicate": True},
    )
    assert '"DuplicateViews"' in capsys.readouterr().out  # the metric, in the EMF line
    other = json.dumps({"id": "images/001.jpg", "viewer": "user-43"})
    assert call(pipeline, "record_views", post(other))[0] == 202
    assert pipeline.truth() == {"images/001.jpg": 2}


def test_http_without_a_viewer_is_unchanged(pipeline):
    status, _, body = call(pipeline, "record_views", post(json.dumps({"id": "a", "count": 2})))
    assert (status, body) == (202, {"id": "a", "recorded": 2, "boards": ["global"]})


def run_at_once(requests) -> list:
    """Run every callable in its own thread, released together; their results in completion order."""
    barrier, results = threading.Barrier(len(requests)), []

    def run(request) -> None:
        barrier.wait()
        results.append(request())

    threads = [threading.Thread(target=run, args=(request,)) for request in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    views=st.lists(st.tuples(st.sampled_from(["u1", "u2", "u3"]), st.sampled_from(["a", "b"])), min_size=1, max_size=8),
    replays=st.integers(0, 3),
)
def test_dedupe_is_exact_under_concurrent_duplicates_and_replays(pipeline, views, replays):
    # Each (viewer, item) pair may be posted several times at once (new requests: tokens of their own), and the
    # first request of each pair is replayed (its own token: a retry after a lost response) alongside them.
    example, rng = uuid.uuid4().hex[:8], random.Random(2)
    shards = pipeline.settings.write_shards
    seen = {pair: Seen.of(pair[0], 86_400, at=T) for pair in views}

    def post_one(pair, token_of):
        def run():
            viewer, item = pair
            attempt = Seen(viewer, token_of.window, token_of.expires_at, token_of.token)
            return (
                pair,
                attempt.token,
                record_seen_view(pipeline.views, f"{example}-{item}", shards, attempt, rng, where=pipeline.where()),
            )

        return run

    requests = [post_one(pair, Seen.of(pair[0], 86_400, at=T)) for pair in views]
    requests += [post_one(pair, seen[pair]) for pair in list(seen)[: replays + 1] for _ in range(2)]
    results = run_at_once(requests)
    counted: dict[tuple[str, str], set[str]] = {}
    for pair, token, recorded in results:
        if recorded.views:
            counted.setdefault(pair, set()).add(token)
    # Each pair counted exactly once (all counted answers are one token's: the first and its replays), ...
    assert set(counted) == set(seen)
    assert all(len(tokens) == 1 for tokens in counted.values())
    # ... and the counts are the distinct pairs
    totals = pipeline.truth()
    for item in ("a", "b"):
        assert totals.get(f"{example}-{item}", 0) == len({pair for pair in seen if pair[1] == item})
