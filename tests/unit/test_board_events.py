"""Board events (domain/publishing/events.py): the events of a head are exactly the changes of the top N since the
head before, each once, with ids that a recomputation (a retry, another process, the stored head read back) gives
again; a takedown's patched head keeps the ids of what it did not change and announces what it did."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from shardboard.adapters.board_table import snapshot_from_item, snapshot_item
from shardboard.adapters.event_bus import BATCH_ENTRIES, EventBusSink, batches, entry
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.events import CLOSED, ENTERED, LEFT, closed_event, head_events
from shardboard.domain.publishing.gather import Entry, Gathered
from shardboard.domain.publishing.head import Head
from shardboard.domain.publishing.ranked_versions import unchanged
from shardboard.domain.publishing.snapshot import plan_head
from shardboard.services.takedowns import without
from shardboard.settings import Settings

EVERYTHING = PeriodKey("global", "all", "all")


def gathered(board: dict[str, int], depth: int) -> Gathered:
    """The exact top ``depth`` of a whole board, as a gather returns it."""
    top = sorted(Entry(id=item, views=views) for item, views in board.items())[:depth]
    return Gathered(top, items_read=len(top), rounds=1, shard_hits={})


def heads_of(boards: list[dict[str, int]], top_n: int, spare: int) -> list[Head]:
    """The heads the snapshot job writes for consecutive states of a board (one whose top N+R is unchanged: none)."""
    policy = Settings(top_n=top_n, snapshot_spare=spare, rank_depth=0).policy
    heads: list[Head] = []
    for board in boards:
        previous = heads[-1] if heads else None
        head = plan_head(
            policy, EVERYTHING, previous, gathered(board, top_n + spare), unchanged(None), "2026-11-26T12:00:00Z"
        )
        if head is not None:
            heads.append(head)
    return heads


def top_set(head: Head | None, top_n: int) -> set[str]:
    """Brute force: the ids 1 + (entries with more views) <= N places in the top N (ties share a rank)."""
    if head is None:
        return set()
    entries = [*head.items, *head.spare]
    return {row.id for row in entries if 1 + sum(other.views > row.views for other in entries) <= top_n}


boards = st.lists(
    st.dictionaries(st.sampled_from("abcdefghij"), st.integers(1, 12), min_size=0, max_size=10), min_size=1, max_size=6
)


@given(states=boards, top_n=st.integers(1, 5), spare=st.integers(0, 3))
def test_the_events_are_exactly_the_changes_of_the_top_n_each_once_with_stable_ids(states, top_n, spare):
    heads = heads_of(states, top_n, spare)
    seen: set[str] = set()
    for before, head in zip([None, *heads], heads, strict=False):
        events = head_events(head, top_n)
        # Then they are exactly who entered and who left the top N between the two heads
        entered = {e.item for e in events if e.type == ENTERED}
        left = {e.item for e in events if e.type == LEFT}
        assert entered == top_set(head, top_n) - top_set(before, top_n)
        assert left == top_set(before, top_n) - top_set(head, top_n)
        # Each once, never an id an earlier head announced
        ids = [e.id for e in events]
        assert len(ids) == len(set(ids)) and not seen & set(ids)
        seen |= set(ids)
        # And recomputing them (a retry, the stored head read back by another process) gives the same ids
        stored = snapshot_from_item(snapshot_item(head))
        assert [e.detail() for e in head_events(stored, top_n)] == [e.detail() for e in events]


def test_an_event_carries_its_rank_views_and_rank_before():
    heads = heads_of([{"a": 5, "b": 4, "c": 3}, {"c": 9, "a": 5, "b": 4}], top_n=2, spare=1)
    # The first head: everyone in the top N entered
    assert [(e.type, e.item, e.rank, e.previous_rank) for e in head_events(heads[0], 2)] == [
        (ENTERED, "a", 1, None),
        (ENTERED, "b", 2, None),
    ]
    # The second: b left (still a spare, ranked 3rd), c entered from the spares
    detail = [e.detail() for e in head_events(heads[1], 2)]
    assert [(d["type"], d["item"], d["rank"], d["views"], d["previous_rank"]) for d in detail] == [
        (LEFT, "b", 3, 4, 2),
        (ENTERED, "c", 1, 9, 3),
    ]
    assert detail[0]["board"] == "global" and detail[0]["period"] == {"kind": "all"} and detail[0]["top_n"] == 2


def test_an_item_that_falls_past_the_spares_still_leaves():
    heads = heads_of([{"a": 5, "b": 4, "c": 3}, {"c": 9, "d": 8, "e": 7, "a": 5, "b": 1}], top_n=2, spare=1)
    # a and b are in neither the items nor the spares of the second head: the head keeps their ranks in ``gone``
    assert heads[1].gone == {"a": 1, "b": 2}
    assert {(e.type, e.item, e.rank, e.previous_rank) for e in head_events(heads[1], 2)} == {
        (LEFT, "a", None, 1),
        (LEFT, "b", None, 2),
        (ENTERED, "c", 1, 3),
        (ENTERED, "d", 2, None),
    }


def test_a_takedown_patch_keeps_the_ids_of_its_gather_and_adds_its_own_changes():
    heads = heads_of([{"a": 5, "b": 4, "c": 3, "d": 2}, {"e": 9, "a": 5, "b": 4, "c": 3}], top_n=2, spare=2)
    head = heads[1]
    gathered_ids = {(e.type, e.item): e.id for e in head_events(head, 2)}
    assert set(gathered_ids) == {(LEFT, "b"), (ENTERED, "e")}
    # When a spare is hidden, the patched head announces the same events under the same ids
    spare_hidden = without(head, "c", 2)
    assert spare_hidden is not None
    assert {(e.type, e.item): e.id for e in head_events(spare_hidden, 2)} == gathered_ids
    # When e, which entered in this very head, is hidden: e leaves and b (which had left) is back, as the patch's own
    e_hidden = without(spare_hidden, "e", 2)
    assert e_hidden is not None
    events = head_events(e_hidden, 2)
    assert [(e.type, e.item, e.previous_rank) for e in events] == [
        (LEFT, "b", 2),
        (ENTERED, "e", None),
        (LEFT, "e", 1),
        (ENTERED, "b", 3),
    ]
    assert [e.id for e in events[:2]] == [gathered_ids[(LEFT, "b")], gathered_ids[(ENTERED, "e")]]
    assert len({e.id for e in events}) == 4
    assert e_hidden.events_version == head.version < e_hidden.version


@given(
    states=st.lists(
        st.one_of(
            st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 9), max_size=8),  # a gather
            st.sampled_from("abcdefgh"),  # a takedown of that id
        ),
        min_size=1,
        max_size=10,
    ),
    top_n=st.integers(1, 4),
    spare=st.integers(0, 3),
)
def test_a_consumer_applying_every_heads_events_once_by_id_holds_the_top_n(states, top_n, spare):
    policy = Settings(top_n=top_n, snapshot_spare=spare, rank_depth=0).policy
    head: Head | None = None
    held: set[str] = set()
    seen: set[str] = set()
    for state in states:
        if isinstance(state, str):
            patched = without(head, state, top_n) if head else None
            head = patched or head
        else:
            gathered_head = plan_head(policy, EVERYTHING, head, gathered(state, top_n + spare), unchanged(None), "t")
            head = gathered_head or head
        if head is None:
            continue
        for event in head_events(snapshot_from_item(snapshot_item(head)), top_n):
            if event.id not in seen:
                seen.add(event.id)
                (held.add if event.type == ENTERED else held.discard)(event.item)
        assert held == top_set(head, top_n)


def test_a_closed_event_has_the_final_top_n_where_to_read_it_and_one_id_per_period():
    policy = Settings(top_n=2, snapshot_spare=1, rank_depth=0).policy
    day = PeriodKey("cats", "day", "2026-11-25")
    first = plan_head(policy, day, None, gathered({"a": 3, "b": 2, "c": 1}, 3), unchanged(None), "2026-11-25T23:59Z")
    assert first is not None
    closed = closed_event(first, 2)
    detail = closed.detail()
    assert detail["type"] == CLOSED and [e["id"] for e in detail["items"]] == ["a", "b"]
    assert detail["route"] == "/leaderboard?board=cats&period=day&at=2026-11-25T00%3A00%3A00Z"
    later = plan_head(policy, day, first, gathered({"a": 4, "b": 2}, 3), unchanged(None), "2026-11-26T00:01Z")
    assert later is not None and closed_event(later, 2).id == closed.id


def test_the_bus_gets_batches_of_ten_and_sends_again_only_the_entries_it_refused():
    heads = heads_of([{str(i): 100 - i for i in range(25)}], top_n=25, spare=0)
    events = head_events(heads[0], 25)
    assert [len(batch) for batch in batches([entry(e, "bus") for e in events])] == [10, 10, 5]
    sent: list[list[str]] = []

    class FlakyBus:
        def put_events(self, Entries):  # boto3 names it so
            sent.append([json.loads(put["Detail"])["item"] for put in Entries])
            failed = len(sent) == 1  # the first request: its 2nd entry refused
            results = [
                {"ErrorCode": "ThrottlingException"} if failed and i == 1 else {"EventId": "x"}
                for i in range(len(Entries))
            ]
            return {"FailedEntryCount": int(failed), "Entries": results}

    EventBusSink(FlakyBus(), "bus", sleep=lambda _: None).publish(events)
    assert sent[1] == [events[1].item] and len(sent) == 4
    assert sorted(item for batch in sent for item in batch) == sorted([e.item for e in events] + [events[1].item])
    assert BATCH_ENTRIES == 10
