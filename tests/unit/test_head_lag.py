"""Why a head differs from its exact top N, as `shardboard verify` tells it (operations/verification.py head_lag):
capped to fit its item, behind the stream (not the head's fault), refreshing, stale, or unwritable."""

from __future__ import annotations

from shardboard.domain.ports import BoardState
from shardboard.domain.publishing.gather import Entry
from shardboard.domain.publishing.head import Head, rows
from shardboard.settings import Settings
from shardboard_tools.operations.verification import CAPPED, REFRESHING, STALE, HeadLag, head_lag

SETTINGS = Settings(top_n=3)  # refreshed every 60 s: a head may be behind for 60 + 60 s
GENERATED = 1_795_000_000  # 2026-11-18T11:06:40Z
BEST = [Entry(id="a", views=9), Entry(id="b", views=7), Entry(id="c", views=5)]


def head(pairs: list[list[object]]) -> Head:
    return Head("global", {"kind": "all"}, "all", 3, "2026-11-18T11:06:40.000Z", rows(pairs), 3, 5, {}, "d")


def lag(shown: Head, stored: dict[str, int], state: BoardState | None, now: float) -> HeadLag | None:
    return head_lag(shown, BEST, stored, state, SETTINGS, now, frozenset())


def test_a_head_that_is_the_exact_top_cut_short_is_capped():
    assert lag(head([["a", 9], ["b", 7]]), {}, None, GENERATED + 10_000) == HeadLag("", CAPPED, head([]).generated_at)


def test_a_head_that_shows_the_stored_counts_waits_for_the_stream_not_for_a_refresh():
    # The base table says a has 9, the aggregate still 8: the head (a 8) is the top of what the table holds
    stale_counts = {"a": 8, "b": 7, "c": 5}
    assert lag(head([["a", 8], ["b", 7], ["c", 5]]), stale_counts, None, GENERATED + 10_000) is None


def test_behind_its_counts_it_is_refreshing_for_the_interval_plus_the_window_then_stale():
    shown, stored = head([["a", 8], ["b", 7], ["c", 5]]), {"a": 9, "b": 7, "c": 5}
    waiting = BoardState(0, None, None, dirty_since=GENERATED + 100)
    assert lag(shown, stored, waiting, GENERATED + 220) == HeadLag("", REFRESHING, "2026-11-18T11:08:20Z")
    assert lag(shown, stored, waiting, GENERATED + 221) == HeadLag("", STALE, "2026-11-18T11:08:20Z")
    # Without a wait on record (its counts not marked changed), it fell behind at its own generation at the latest
    assert lag(shown, stored, None, GENERATED + 121).state == STALE


def test_a_head_whose_refreshes_fail_is_stale_at_once_since_the_first_failure():
    shown, stored = head([["a", 8], ["b", 7], ["c", 5]]), {"a": 9, "b": 7, "c": 5}
    failing = BoardState(0, None, None, dirty_since=GENERATED + 100, failures=1, failing_since=GENERATED + 110)
    assert lag(shown, stored, failing, GENERATED + 111) == HeadLag("", STALE, "2026-11-18T11:08:30Z", 1)
