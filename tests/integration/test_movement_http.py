"""Movement through the real functions on moto: GET /leaderboard's entries carry ``previous_rank`` (their rank in the
snapshot before), a hide leaves the others' as they were; a page of the ranked version shows none. Their
``day_before_rank`` (their rank in the first head of the same hour a day before) in top, pages and around-me. A
property runs random views, refreshes, hides and unhides against a model of the head built from the definitions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from moto import mock_aws

from shardboard.domain.periods import ALL
from shardboard.domain.ports import PeriodKey
from shardboard.handlers import wiring
from shardboard.services.snapshots import take_snapshot
from tests.conftest import build_pipeline, examples
from tests.integration.test_http_api import call, get
from tests.integration.test_takedowns_http import drain, record, takedown


def entries(pipeline, query: str = "") -> list[tuple[str, int, int | None]]:
    status, _, body = call(pipeline, "read_api", get("/leaderboard", query))
    assert status == 200, body
    return [(entry["id"], entry["rank"], entry["previous_rank"]) for entry in body["items"]]


def test_entries_show_where_they_stood_in_the_snapshot_before(make_pipeline):
    # Given a first snapshot: every entry is new
    pipeline = make_pipeline(TopN="3", SnapshotSpare="2")
    record(pipeline, {"a": 5, "b": 4, "c": 3, "d": 2, "e": 1})
    drain(pipeline)
    pipeline.snapshot()
    assert entries(pipeline) == [("a", 1, None), ("b", 2, None), ("c", 3, None)]
    # When d climbs to the top, f arrives, and the job publishes the changed board
    record(pipeline, {"d": 10, "f": 4}, seed=8)
    drain(pipeline)
    pipeline.snapshot()
    # Then each entry shows its rank before: d was 4th (a spare), b stays tied with f (new)
    assert entries(pipeline) == [("d", 1, 4), ("a", 2, 1), ("b", 3, 2), ("f", 3, None)][:3]
    # And a refresh that changes nothing keeps the movement it showed (the head is not written again)
    pipeline.snapshot()
    assert entries(pipeline)[0] == ("d", 1, 4)
    # When a is hidden, the head is patched: the others keep their previous ranks, c comes back from the spares
    status, _, _ = call(pipeline, "items_admin", takedown("hide", "id=a"))
    assert status == 200
    assert entries(pipeline) == [("d", 1, 4), ("b", 2, 2), ("f", 2, None)]
    # And a page from the ranked version (gathered at its own times, before these moves) shows none
    assert entries(pipeline, "offset=1&limit=2") == [("c", 2, None), ("d", 3, None)]


def day_before(pipeline, path: str, query: str) -> list[tuple[str, int, int | None]]:
    status, _, body = call(pipeline, "read_api", get(path, query))
    assert status == 200, body
    return [(entry["id"], entry["rank"], entry["day_before_rank"]) for entry in body["items"]]


def test_entries_show_where_they_stood_a_day_before_in_top_pages_and_around_me(make_pipeline):
    # Given a board whose head is the whole ranking (D = N: pages and around-me come from the head), snapshotted by
    # the job at a simulated time: the first head of that hour is its checkpoint
    pipeline = make_pipeline(TopN="3", SnapshotSpare="1", RankDepth="3")
    everything = PeriodKey(pipeline.settings.board, ALL, ALL)
    record(pipeline, {"a": 5, "b": 4, "c": 3, "d": 2})
    drain(pipeline)
    take_snapshot(pipeline.board, pipeline.settings, "2026-11-20T10:15:00.000Z", everything)
    assert day_before(pipeline, "/leaderboard", "") == [("a", 1, None), ("b", 2, None), ("c", 3, None)]
    # When c climbs to the top and the job publishes the board a day and twenty minutes later
    record(pipeline, {"c": 10}, seed=8)
    drain(pipeline)
    take_snapshot(pipeline.board, pipeline.settings, "2026-11-21T10:35:00.000Z", everything)
    # Then every entry shows its rank in the first head of 10:00-11:00 the day before: top, a page, around-me
    assert day_before(pipeline, "/leaderboard", "") == [("c", 1, 3), ("a", 2, 1), ("b", 3, 2)]
    assert day_before(pipeline, "/leaderboard", "offset=1&limit=2") == [("a", 2, 1), ("b", 3, 2)]
    assert day_before(pipeline, "/around", "id=a&k=1") == [("c", 1, 3), ("a", 2, 1), ("b", 3, 2)]
    # When b is hidden, the patched head refills d from its spares with its rank then (a spare's, 4th)
    status, _, _ = call(pipeline, "items_admin", takedown("hide", "id=b"))
    assert status == 200
    assert day_before(pipeline, "/leaderboard", "") == [("c", 1, 3), ("a", 2, 1), ("d", 3, 4)]
    # And a head of the next hour reads that hour's checkpoint a day before: none was written then
    record(pipeline, {"e": 20}, seed=9)
    drain(pipeline)
    take_snapshot(pipeline.board, pipeline.settings, "2026-11-21T11:05:00.000Z", everything)
    assert day_before(pipeline, "/leaderboard", "") == [("e", 1, None), ("c", 2, None), ("a", 3, None)]


# -- movement across takedowns, against a model of what each head must hold

TOP_N, SPARE = 3, 2
ITEMS = "abcdef"
steps = st.lists(
    st.one_of(
        st.dictionaries(st.sampled_from(ITEMS), st.integers(1, 4), min_size=1, max_size=3).map(lambda v: ("views", v)),
        st.just(("snapshot", None)),
        st.sampled_from(ITEMS).map(lambda item: ("hide", item)),
        st.sampled_from(ITEMS).map(lambda item: ("unhide", item)),
    ),
    min_size=1,
    max_size=10,
)


def competition(entries: list[tuple[str, int]]) -> dict[str, int]:
    return {item: 1 + sum(1 for _, other in entries if other > views) for item, views in entries}


class MovementModel:
    """What the board's head holds (items then spares, as (id, views)) and each entry's previous rank, from the
    definitions: a written head ranks its entries against the head it replaced; a hide drops the item and refills
    the top N from the spares, the others keeping their previous ranks (a head too short after it is gathered
    again); an unhide gathers the head again."""

    def __init__(self) -> None:
        self.views: dict[str, int] = {}
        self.hidden: set[str] = set()
        self.head: list[tuple[str, int]] | None = None
        self.previous: dict[str, int] = {}

    def gather(self) -> None:
        visible = [(item, views) for item, views in self.views.items() if item not in self.hidden]
        new = sorted(visible, key=lambda entry: (-entry[1], entry[0]))[: TOP_N + SPARE]
        if self.head is not None and new == self.head:
            return  # the same content: the head is not written again
        before = competition(self.head or [])
        self.previous = {item: before[item] for item, _ in new if item in before}
        self.head = new

    def hide(self, item: str) -> None:
        if not self.views.get(item):
            return
        self.hidden.add(item)
        if self.head is None or item not in dict(self.head):
            return
        self.head = [entry for entry in self.head if entry[0] != item]
        if len(self.head) < TOP_N:
            self.gather()

    def unhide(self, item: str) -> None:
        if self.views.get(item):
            self.hidden.discard(item)
            if self.head is not None:
                self.gather()  # an unhide gathers the heads again at once

    def shown(self) -> list[tuple[str, int, int, int | None]] | None:
        if self.head is None:
            return None
        top = self.head[:TOP_N]
        ranks = competition(top)
        return [(item, ranks[item], views, self.previous.get(item)) for item, views in top]


@settings(max_examples=examples(10), deadline=None)
@given(script=steps)
def test_previous_ranks_follow_snapshots_and_takedowns_as_their_definition_says(script):
    with mock_aws():
        try:
            check_movement(build_pipeline(TopN=str(TOP_N), SnapshotSpare=str(SPARE), RankDepth="0"), script)
        finally:
            wiring.use(None)


def check_movement(pipeline, script) -> None:
    # Given a board (top 3, 2 spares, no ranked versions) and a model of its head from the definitions
    model = MovementModel()
    for seed, (step, argument) in enumerate([("views", {"a": 1}), ("snapshot", None), *script]):
        # When views arrive, the job runs, items are hidden and unhidden in any order
        if step == "views":
            record(pipeline, argument, seed=seed)
            drain(pipeline)
            for item, count in argument.items():
                model.views[item] = model.views.get(item, 0) + count
        elif step == "snapshot":
            pipeline.snapshot()
            model.gather()
        else:
            status, _, _ = call(pipeline, "items_admin", takedown(step, f"id={argument}"))
            assert status == (200 if model.views.get(argument) else 404)  # an id never viewed: nothing to take down
            model.hide(argument) if step == "hide" else model.unhide(argument)
        # Then every read of the board, all time and today, shows what the model says: ranks, views, previous ranks
        for query in ("", "period=day"):
            status, _, body = call(pipeline, "read_api", get("/leaderboard", query))
            entries = body["items"] if status == 200 else None
            read = None if entries is None else [(e["id"], e["rank"], e["views"], e["previous_rank"]) for e in entries]
            assert read == model.shown(), (step, argument, query)
