"""Retried writes (docs/honest-counts.md, "Retried writes"): the Idempotency-Key rule, a request's fingerprint, the
retry-safe writer's shard, and the library's Recorder under lost responses at random on the in-memory base table:
every view counts exactly once, whoever retries (the recorder's next flush, after any interleaving of writers)."""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.client import Recorder, Stores
from shardboard.domain.ports import Throttled, ThrottleScope
from shardboard.domain.validation import BadInput
from shardboard.domain.writing.idempotency import (
    IDEMPOTENCY_KEY_SECONDS,
    MAX_IDEMPOTENCY_KEY_CHARS,
    IdempotencyKeyReused,
    KeyedRequest,
    fingerprint,
    idempotency_key,
)
from shardboard.domain.writing.recording import record_keyed_view, writer_shard
from shardboard.settings import Settings
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.lost_responses import LostResponses, ResponseLost
from shardboard_tools.capacity.memory import MemoryViewStore
from tests.conftest import examples

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)


# ------------------------------------------------------------------------------------------------- the key
@pytest.mark.parametrize("good", ["a", "k" * 255, "3f2a1c9e-8d4b-4b7a-9c1e-2f6d8a0b5e71", "a b", "!~{}#,/", " x "])
def test_keys_of_printable_ascii_are_accepted_as_they_are(good):
    assert idempotency_key(good) == good


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("", "1-255 characters, got 0"),
        ("k" * 256, "1-255 characters, got 256"),
        ("é", "U+00E9 at position 0"),
        ("a\tb", "U+0009 at position 1"),
        ("a\x7f", "U+007F"),
        ("a\u200bb", "U+200B"),
        ("line\nbreak", "U+000A"),
        (42, "must be a string"),
        (["k"], "must be a string"),
    ],
)
def test_other_keys_are_refused_with_a_reason(bad, reason):
    with pytest.raises(BadInput, match=re.escape(reason)):
        idempotency_key(bad)


def test_no_key_is_none():
    assert idempotency_key(None) is None


@given(st.text(max_size=300))
def test_a_key_is_accepted_exactly_when_it_is_1_to_255_printable_ascii_characters(text):
    rule = 1 <= len(text) <= MAX_IDEMPOTENCY_KEY_CHARS and all(" " <= char <= "~" for char in text)
    try:
        accepted = idempotency_key(text) == text
    except BadInput:
        accepted = False
    assert accepted == rule


def test_a_fingerprint_is_what_the_request_asks_whatever_the_order_of_its_boards():
    base = fingerprint("a", 1, ("cats", "dogs"), None)
    assert fingerprint("a", 1, ("dogs", "cats", "cats"), None) == base
    others = [
        fingerprint("b", 1, ("cats", "dogs"), None),
        fingerprint("a", 2, ("cats", "dogs"), None),
        fingerprint("a", 1, ("cats",), None),
        fingerprint("a", 1, ("cats", "dogs"), "u1"),
        fingerprint('a", 1', 1, (), None),  # no id can spell another request's canonical form
    ]
    assert len({base, *others}) == 6


def test_a_key_is_kept_for_a_day_from_its_first_use():
    keyed = KeyedRequest.of("k", "f", at=1_795_000_000.7)
    assert (keyed.now, keyed.expires_at) == (1_795_000_000, 1_795_000_000 + IDEMPOTENCY_KEY_SECONDS)


def test_a_writer_keeps_one_shard_per_item_and_writers_spread_over_the_shards():
    assert {writer_shard(7, "images/1.jpg", 20) for _ in range(5)} == {writer_shard(7, "images/1.jpg", 20)}
    used = Counter(writer_shard(writer, "images/1.jpg", 20) for writer in range(1, 4001))
    assert set(used) == set(range(20))
    assert max(used.values()) < 2 * 4000 / 20  # about writers / shards per counter item


# ------------------------------------------------------------------------------------------ the Recorder
def memory_views() -> MemoryViewStore:
    return MemoryViewStore(CapacityEmulator(VirtualClock()))


def make_recorder(views, write_shards: int = 2, **options) -> Recorder:
    config = Settings.for_stack("unit", write_shards=write_shards)
    return Recorder(stores=Stores(views), settings=config, flush_interval=None, clock=lambda: NOW, **options)


def board_totals(views: MemoryViewStore, board: str) -> dict[str, int]:
    totals: Counter[str] = Counter()
    for item, _, _, name, count in views.scan_counters_all():
        if name == board:
            totals[item] += count
    return dict(totals)


def drain(recorders, lossy) -> None:
    """No more faults: flush every recorder until nothing waits (each flush retries what is unresolved first)."""
    lossy.rate = 0.0
    for recorder in recorders:
        for _ in range(3):
            recorder.flush()
        assert recorder.stats().pending_views == 0


def test_a_write_whose_response_was_lost_counts_once_when_the_next_flush_retries_it():
    views = memory_views()
    lossy = LostResponses(views, 0.0, random.Random(1))
    r = make_recorder(lossy)
    r.record("warm")
    r.flush()  # the writer number is claimed (without a fault)
    lossy.rate = 1.0  # from now on every write lands and its response is lost
    r.record("a", count=3, boards=["cats"])
    lost = r.flush()
    assert (lost.views, lost.failed_views, r.stats().unresolved_views) == (0, 3, 3)
    r.record("a", count=2, boards=["cats"])  # the same key meanwhile: a later write, after the retry
    lossy.rate = 0.0
    retried = r.flush()
    # the retry is refused by the counter's condition (it landed), reported written, not failed; then the new views
    assert (retried.views, retried.writes, retried.replayed_writes, retried.failed_views) == (5, 2, 1, 0)
    r.close()
    assert views.scan_totals() == {"warm": 1, "a": 5}
    assert board_totals(views, "cats") == {"a": 5}
    stats = r.stats()
    assert (stats.recorded_views, stats.written_views, stats.replayed_writes, stats.lost_views) == (6, 6, 1, 0)


def test_plain_writes_count_a_lost_response_twice_when_retried():
    # The limit retry_safe=False keeps (and the reason the default is retry-safe)
    views = memory_views()
    lossy = LostResponses(views, 1.0, random.Random(1))
    r = make_recorder(lossy, retry_safe=False)
    r.record("a", count=3)
    assert r.flush().failed_views == 3
    lossy.rate = 0.0
    r.close()
    assert views.scan_totals() == {"a": 6}


def test_a_throttle_after_a_landed_attempt_is_retried_unchanged_and_counts_once():
    # botocore's first attempt landed (its response lost), its retry was throttled: the caller sees Throttled
    views = memory_views()
    lossy = LostResponses(views, 0.0, random.Random(1), error=lambda: Throttled(ThrottleScope.PARTITION))
    r = make_recorder(lossy)
    r.record("warm")
    r.flush()
    lossy.rate = 1.0
    r.record("a", count=4)
    assert r.flush().failed_views == 4
    lossy.rate = 0.0
    assert r.flush().replayed_writes == 1
    r.close()
    assert views.scan_totals() == {"warm": 1, "a": 4}


def test_a_writer_number_that_cannot_be_claimed_keeps_the_views_unsent():
    views = memory_views()
    lossy = LostResponses(views, 1.0, random.Random(1))
    r = make_recorder(lossy)
    r.record("a", count=2)
    failed = r.flush()  # the claim landed, its answer was lost: the number is skipped, nothing else was sent
    assert (failed.failed_views, r.stats().unresolved_views, lossy.injected["claim_writer"]) == (2, 0, 1)
    lossy.rate = 0.0
    r.close()
    assert views.scan_totals() == {"a": 2}


class Overlaps:
    """The in-memory base table, noting how many retry-safe writes of one writer are in flight on one counter item at
    once (each write lingers a moment, so two sent together would be seen together)."""

    def __init__(self, views: MemoryViewStore) -> None:
        self.views, self.most = views, 0
        self._lock, self._in_flight = threading.Lock(), Counter()

    def __getattr__(self, name: str):
        return getattr(self.views, name)

    def add_view_once(self, item_id, shard, count, once, **where):
        counter = (item_id, shard, where.get("bucket"), once.writer)
        with self._lock:
            self._in_flight[counter] += 1
            self.most = max(self.most, self._in_flight[counter])
        time.sleep(0.01)
        try:
            return self.views.add_view_once(item_id, shard, count, once, **where)
        finally:
            with self._lock:
                self._in_flight[counter] -= 1


def test_a_recorder_never_has_two_writes_in_flight_on_one_counter_item():
    # Each set of boards is its own key, but one item's keys share the recorder's shard (its counter item): were
    # two of them in flight at once, the later sequence could land first and the condition would refuse the other.
    views = Overlaps(memory_views())
    r = make_recorder(views, write_shards=1, workers=8)
    for _ in range(3):
        for named in ((), ("cats",), ("dogs",), ("cats", "dogs")):
            r.record("a", boards=named)
            r.record("b", boards=named)
        r.flush()
    r.close()
    assert views.most == 1
    assert views.scan_totals() == {"a": 12, "b": 12}


@settings(max_examples=examples(60), deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(
                st.just("record"),
                st.integers(0, 2),  # which recorder
                st.sampled_from(["a", "b", "c", "d"]),
                st.integers(1, 5),
                st.sampled_from([(), ("cats",), ("cats", "dogs")]),
            ),
            st.tuples(st.just("flush"), st.integers(0, 2)),
        ),
        max_size=40,
    ),
    loss=st.sampled_from([0.0, 0.2, 0.5, 0.9]),
    seed=st.integers(0, 2**16),
)
def test_any_interleaving_of_writers_and_lost_responses_counts_every_view_once(steps, loss, seed):
    # Three recorders (writers) on one base table of two write shards, so they share counter items; every write
    # (the writer claims too) may land and lose its response, in any order with the other writers' writes.
    views = memory_views()
    lossy = LostResponses(views, loss, random.Random(seed))
    recorders = [make_recorder(lossy, workers=2) for _ in range(3)]
    expected: Counter[str] = Counter()
    boards: dict[str, Counter[str]] = {"cats": Counter(), "dogs": Counter()}
    for step in steps:
        if step[0] == "record":
            _, which, item, count, named = step
            recorders[which].record(item, count=count, boards=named)
            expected[item] += count
            for board in named:
                boards[board][item] += count
        else:
            recorders[step[1]].flush()
    drain(recorders, lossy)
    for recorder in recorders:
        recorder.close()
        stats = recorder.stats()
        assert stats.written_views == stats.recorded_views and stats.lost_views == 0
    assert views.scan_totals() == dict(expected)
    for board, totals in boards.items():
        assert board_totals(views, board) == dict(totals)
    if loss and sum(lossy.injected.values()) and expected:
        assert sum(recorder.stats().written_views for recorder in recorders) == sum(expected.values())


def test_lost_responses_are_injected_after_the_write_landed():
    views = memory_views()
    lossy = LostResponses(views, 1.0, random.Random(1))
    with pytest.raises(ResponseLost):
        lossy.add_view("a", 0, 2, "all")
    assert views.scan_totals() == {"a": 2} and lossy.injected == Counter({"add_view": 1})


# ------------------------------------------------------------------------------------------ keyed requests
@settings(max_examples=examples(100), deadline=None)
@given(
    requests=st.lists(
        st.tuples(st.integers(0, 4), st.sampled_from(["a", "b", "c"]), st.integers(1, 3)), min_size=1, max_size=12
    ),
    loss=st.sampled_from([0.0, 0.3, 0.7]),
    seed=st.integers(0, 2**16),
)
def test_any_interleaving_of_keyed_requests_counts_each_key_once_in_memory(requests, loss, seed):
    # Requests (key, item, count) run at once on four threads, the same key maybe with another body; each is retried
    # with its key until answered while responses are lost at random after the write landed.
    views = memory_views()
    lossy = LostResponses(views, loss, random.Random(seed))

    def post(request):
        key, item, count = request
        keyed = KeyedRequest.of(f"k{key}", fingerprint(item, count, (), None), at=1_795_000_000)
        for _ in range(200):
            try:
                return request, record_keyed_view(lossy, item, count, 2, keyed, rng=random.Random(seed))
            except ResponseLost:
                continue
            except IdempotencyKeyReused:
                return request, None
        raise AssertionError("never answered")

    with ThreadPoolExecutor(4) as pool:
        answered = list(pool.map(post, requests))
    winners = {}
    for (key, item, count), recorded in answered:
        if recorded is not None:
            assert winners.setdefault(key, (item, count)) == (item, count)  # one body per key counts
            assert recorded.views == count and not recorded.duplicate
    for (key, item, count), recorded in answered:
        assert (recorded is None) == ((item, count) != winners[key])  # every other body: refused (422)
    expected: Counter[str] = Counter()
    for item, count in winners.values():
        expected[item] += count
    assert views.scan_totals() == dict(expected)
