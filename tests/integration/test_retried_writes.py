"""Exactly once for the writer too (docs/honest-counts.md, "Retried writes") on moto with template.yaml's tables: a
write whose response is lost after DynamoDB applied it, retried by botocore, by the library's next flush or by an
HTTP client with the same Idempotency-Key, counts once. Faults enter through botocore's event hooks on the real
clients (shardboard_tools.testing.faults): a connection cut after the write was forwarded, a lost response, the
SDK's own resend."""

from __future__ import annotations

import json
import random
import threading
import uuid
from collections import Counter

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard import Leaderboard, Recorder
from shardboard.adapters.dynamodb import dynamodb_client
from shardboard.adapters.keys import IDEMPOTENCY_PREFIX
from shardboard.handlers import wiring
from shardboard_tools.testing.faults import ClientFaults, FaultRates
from tests.conftest import examples
from tests.integration.test_client_moto import board_totals, process, ranked, rows
from tests.integration.test_http_api import call, post

HOUR = 3600.0


def recorder(**options):
    return Recorder(boto3.Session(), flush_interval=HOUR, **options)


def cut_connections(client, table, rate=1.0, seed=1, **rates):
    """Writes on ``table`` land and lose their response (the connection cut after forwarding), botocore retries."""
    faults = FaultRates(cut_after_send=rate, **rates)
    return ClientFaults(client, faults, random.Random(seed), table=table, competitor=dynamodb_client()).install()


def keyed(body: dict, key: str | None):
    event = post(json.dumps(body))
    if key is not None:
        event["headers"]["Idempotency-Key"] = key
    return event


def raw_answer(pipeline, event) -> dict:
    """The record_views function's answer as API Gateway gets it: the body unparsed, to compare bytes."""
    from shardboard.handlers.record_views import handler

    return pipeline.runtime.invoke(handler, event)


def post_until_answered(pipeline, body: dict, key: str | None, tries: int = 20):
    """An HTTP client that retries a request it got no answer to (an error of the function: a lost response)."""
    for _ in range(tries):
        try:
            status, headers, answer = call(pipeline, "record_views", keyed(body, key))
        except Exception:  # noqa: S112 - the function failed: the client never heard, so it retries
            continue
        if status < 500:
            return status, headers, answer
    raise AssertionError(f"no answer after {tries} tries")


def key_markers(pipeline):
    items = pipeline.runtime.dynamodb.scan(TableName=pipeline.settings.views_table)["Items"]
    return [item for item in items if item["pk"]["S"].startswith(IDEMPOTENCY_PREFIX)]


# ----------------------------------------------------------------------------------------------- the library
def test_a_flush_through_a_connection_cut_after_forwarding_counts_799_views_once(pipeline):
    # The reproduction: every write lands, the connection is cut before its response, botocore sends it again
    with recorder() as r:
        faults = cut_connections(r.client, r.settings.views_table)
        for view in range(799):
            r.record(f"item-{view % 47}", boards=["cats"] if view % 3 else [])
        result = r.flush()
        faults.uninstall()
        rest = r.flush()  # whatever botocore gave up on (its retry quota) is retried by the recorder, unchanged
    assert faults.injected["cut_after_send"] >= 47
    assert result.views + rest.views == 799 and r.stats().pending_views == 0
    assert r.stats().replayed_writes >= 47  # every counter write was answered "already applied"
    assert sum(pipeline.truth().values()) == 799
    assert sum(board_totals(pipeline, "cats").values()) == 532


def test_plain_writes_through_the_same_cut_count_twice(pipeline):
    # What retry_safe=False keeps: an ADD carries no token (the 1,598 views for 799)
    with recorder(retry_safe=False) as r:
        faults = cut_connections(r.client, r.settings.views_table)
        for view in range(799):
            r.record(f"item-{view % 47}")
        r.flush()
        faults.uninstall()
        r.flush()
    assert sum(pipeline.truth().values()) == 2 * 799


def test_two_recorders_under_lost_responses_at_random_count_every_view_once(pipeline):
    # Given two writers on the same items (three write shards: they share counter items), and every kind of lost
    # response at random on each: cut after forwarding, lost on the way back (the flush keeps the write), resent
    config = pipeline.settings.__class__.for_stack("shardboard", write_shards=3)
    rng, expected, cats = random.Random(9), Counter(), Counter()
    recorders = [recorder(settings=config), recorder(settings=config)]
    faults = [
        ClientFaults(
            r.client,
            FaultRates(cut_after_send=0.3, lost_response=0.3, resent=0.2, throttle_surfaced=0.1),
            random.Random(seed),
            table=config.views_table,
            competitor=dynamodb_client(),
        ).install()
        for seed, r in enumerate(recorders)
    ]
    try:
        for _ in range(6):
            for _ in range(120):
                r = rng.choice(recorders)
                item, count = f"t-{rng.randrange(6)}", rng.choice((1, 2, 5))
                named = ["cats"] if item < "t-3" else []
                r.record(item, count=count, boards=named)
                expected[item] += count
                cats[item] += count if named else 0
            for r in recorders:
                r.flush()
    finally:
        for fault in faults:
            fault.uninstall()
    for r in recorders:
        r.flush()
        r.close()
    # Then every fault happened, the lost ones were recognised as applied, and every count is exact
    injected = sum((fault.injected for fault in faults), Counter())
    assert {"cut_after_send", "lost_response", "resent"} <= set(injected)
    assert sum(r.stats().replayed_writes for r in recorders) > 0
    assert sum(r.stats().lost_views for r in recorders) == 0
    assert pipeline.truth() == dict(expected)
    assert board_totals(pipeline, "cats") == {item: n for item, n in cats.items() if n}
    process(pipeline)  # the real aggregator (the writers' registry is skipped) and the snapshot job
    assert rows(Leaderboard(boto3.Session()).top()) == ranked(expected)


# ------------------------------------------------------------------------------------------ POST /views
def test_a_post_retried_with_its_key_after_lost_responses_counts_once_and_is_answered_the_same(pipeline):
    faults = cut_connections(wiring.client(), pipeline.settings.views_table, rate=0.5, lost_response=0.5)
    answers = []
    try:
        for n in range(12):
            body = {"id": f"k-{n % 3}", "count": n + 1, "boards": ["cats"]}
            key = str(uuid.uuid4())
            answers.append(post_until_answered(pipeline, body, key))
            answers.append(post_until_answered(pipeline, body, key))  # a late retry: its answer came, or not
    finally:
        faults.uninstall()
    assert faults.injected["cut_after_send"] > 0 and faults.injected["lost_response"] > 0
    for first, again in zip(answers[::2], answers[1::2], strict=True):
        assert (first[0], first[2]) == (again[0], again[2]) and first[0] == 202
        assert again[1].get("idempotent-replayed") == "true"
    expected = Counter()
    for n in range(12):
        expected[f"k-{n % 3}"] += n + 1
    assert pipeline.truth() == dict(expected)
    assert board_totals(pipeline, "cats") == dict(expected)


def test_without_a_key_a_post_retried_after_a_cut_counts_again(pipeline):
    faults = cut_connections(wiring.client(), pipeline.settings.views_table)
    try:
        status, _, _ = post_until_answered(pipeline, {"id": "a", "count": 3}, None)
    finally:
        faults.uninstall()
    assert status == 202 and pipeline.truth() == {"a": 6}  # what the Idempotency-Key is for


def test_a_key_reused_with_another_body_is_422_and_writes_nothing(pipeline):
    first = {"id": "a", "count": 2, "boards": ["dogs", "cats"]}
    first_answer = raw_answer(pipeline, keyed(first, "k-1"))
    assert first_answer["statusCode"] == 202
    for body in ({**first, "count": 3}, {**first, "id": "b"}, {**first, "boards": ["cats"]}, {"id": "a", "count": 2}):
        status, _, answer = call(pipeline, "record_views", keyed(body, "k-1"))
        assert (status, answer["code"]) == (422, "idempotency_key_reused") and "k-1" in answer["message"]
    # the same request with its boards in another order (the global board named or not, a board twice) is the same
    # request, answered as the first was, byte for byte
    for boards in (["cats", "global", "dogs"], ["cats", "dogs", "cats"], ["dogs", "cats"]):
        replay = raw_answer(pipeline, keyed({**first, "boards": boards}, "k-1"))
        assert (replay["statusCode"], replay["headers"].get("Idempotent-Replayed")) == (202, "true")
        assert replay["body"] == first_answer["body"]
    assert json.loads(first_answer["body"]) == {"id": "a", "recorded": 2, "boards": ["global", "cats", "dogs"]}
    assert pipeline.truth() == {"a": 2} and len(key_markers(pipeline)) == 1


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("", "1-255 characters, got 0"),
        ("k" * 256, "1-255 characters, got 256"),
        ("clé", "printable ASCII; U+00E9 at position 2"),
        ("a\tb", "U+0009"),
        ("zero\u200bwidth", "U+200B"),
    ],
)
def test_a_bad_key_is_refused_with_400_and_writes_nothing(pipeline, key, reason):
    status, _, answer = call(pipeline, "record_views", keyed({"id": "a"}, key))
    assert (status, answer["code"]) == (400, "bad_request") and reason in answer["message"], answer
    assert pipeline.truth() == {} and key_markers(pipeline) == []


def test_a_viewer_with_a_key_counts_once_per_viewer_and_the_key_keeps_the_duplicate_answer(pipeline):
    counted = call(pipeline, "record_views", keyed({"id": "a", "viewer": "u1"}, "k-1"))
    duplicate = call(pipeline, "record_views", keyed({"id": "a", "viewer": "u1"}, "k-2"))
    retried = call(pipeline, "record_views", keyed({"id": "a", "viewer": "u1"}, "k-2"))
    assert [(status, answer["duplicate"]) for status, _, answer in (counted, duplicate, retried)] == [
        (202, False),
        (200, True),
        (200, True),
    ]
    assert retried[1].get("idempotent-replayed") == "true" and "idempotent-replayed" not in duplicate[1]
    assert pipeline.truth() == {"a": 1}


def run_at_once(requests) -> list:
    barrier, results, lock = threading.Barrier(len(requests)), [], threading.Lock()

    def run(request) -> None:
        barrier.wait()
        outcome = request()
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=run, args=(request,)) for request in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@settings(max_examples=examples(5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    requests=st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(["a", "b"]), st.integers(1, 3)), min_size=1, max_size=8
    ),
    late=st.lists(st.integers(0, 3), max_size=4),
    seed=st.integers(0, 2**16),
)
def test_any_interleaving_of_keyed_requests_counts_each_key_once(pipeline, requests, late, seed):
    # Requests (key, item, count) posted at once from threads, the same key maybe several times with the same or
    # another body, each retried until answered while responses are lost at random; then some keys again, late.
    example = uuid.uuid4().hex[:8]
    faults = cut_connections(wiring.client(), pipeline.settings.views_table, 0.3, seed, lost_response=0.2)
    try:

        def request(key, item, count):
            body = {"id": f"{example}-{item}", "count": count}
            return key, body, post_until_answered(pipeline, body, f"{example}-{key}")

        answered = run_at_once([lambda r=r: request(*r) for r in requests])
        bodies = {key: body for key, body, _ in answered}
        answered += [request(key, bodies[key]["id"][-1], bodies[key]["count"]) for key in late if key in bodies]
    finally:
        faults.uninstall()
    # Then per key one body counted (its 202s, one of them maybe never heard: its retries are replays), at most one
    # request counted it now, and every request with another body under that key got a 422
    winners, counted_now = {}, Counter()
    for key, body, (status, headers, _) in answered:
        if status == 202:
            assert winners.setdefault(key, body) == body, f"key {key} answered 202 for two bodies"
            counted_now[key] += "idempotent-replayed" not in headers
    assert set(winners) == {key for key, _, _ in answered} and max(counted_now.values()) <= 1
    for key, body, (status, _, answer) in answered:
        if body == winners[key]:
            assert (status, answer) == (202, {"id": body["id"], "recorded": body["count"], "boards": ["global"]})
        else:
            assert (status, answer["code"]) == (422, "idempotency_key_reused")
    expected = Counter()
    for body in winners.values():
        expected[body["id"]] += body["count"]
    totals = {item: views for item, views in pipeline.truth().items() if item.startswith(example)}
    assert totals == dict(expected)
