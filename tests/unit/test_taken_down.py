"""Takedown markers on the in-memory items table: any sequence of hides, unhides and deletes (and of takedowns an
earlier release wrote into its String Sets, then migrated) is reflected exactly in what every reader sees, listed
whole or asked per id; and 100,000 bans cost each reader in proportion to the ids it asks about."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.adapters.items_table import old_set_ids, partition_pk
from shardboard.adapters.keys import SET_SK, TAKEDOWN_PARTITIONS
from shardboard.domain.items.records import DELETED, HIDDEN, DenyCheck
from shardboard.domain.items.taken_down import LISTING_LIMIT, TakenDown, deleted_among, dropped_among
from shardboard.domain.ports import TakedownListing
from shardboard_tools.capacity import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.memory import MemoryItemStore
from shardboard_tools.capacity.units import item_size
from tests.conftest import examples

NOW = "2026-11-23T17:00:00.000Z"
# Short, odd and 512-byte ids: the long ones are what filled the String Sets of earlier releases.
IDS = ["a", "b", "a#1", "x/y.jpg", "猫 #2", *(f"{n:03d}{'x' * 509}" for n in range(4))]


@contextmanager
def past_the_listing_limit(on: bool = True) -> Iterator[None]:
    """``on``: every limited listing of the in-memory items table finds more than it may read (as on a site with
    more takedowns than LISTING_LIMIT), so every reader asks about the ids at hand, one marker each."""
    if not on:
        yield
        return
    listed = MemoryItemStore.list_taken_down

    def partial(self: MemoryItemStore, status: str, limit: int | None = None, consistent: bool = False):
        found = listed(self, status, limit, consistent)  # read (and priced) as it is
        if limit is None:
            return found
        # What a listing past its limit still names: the ids of an earlier release's sets (read first)
        old_sets = (self.data.items.get(f"{partition_pk(status, p)}\0{SET_SK}") for p in range(TAKEDOWN_PARTITIONS))
        old_ids = frozenset(i for item in old_sets for i in old_set_ids(item or {}))
        return TakedownListing(old_ids, complete=False, size=None)  # (how big is unknown: never listed whole)

    with patch.object(MemoryItemStore, "list_taken_down", partial):
        yield


def catalog() -> MemoryItemStore:
    return MemoryItemStore(CapacityEmulator(VirtualClock()))


def read_units(store: MemoryItemStore) -> float:
    return store.data.emulator.usage.units("read")


operations = st.lists(
    st.tuples(st.sampled_from(["hide", "unhide", "delete", "old release", "migrate"]), st.sampled_from(IDS)),
    max_size=40,
)


@settings(max_examples=examples(150), deadline=None)
@given(steps=operations, per_id=st.booleans(), consistent=st.booleans())
def test_any_sequence_of_takedowns_is_reflected_exactly_in_membership(steps, per_id, consistent):
    # Given an items table and the truth: each id's status
    store, truth = catalog(), {}
    for action, item in steps:
        # When ids are hidden, unhidden and deleted (refused as the record's status says), some of the takedowns
        # turned into what an earlier release wrote, and the old sets migrated now and then
        status = truth.get(item)
        if action == "hide":
            assert store.set_hidden(item, True, "t", "", NOW) == (status is None)
            truth.setdefault(item, HIDDEN)
        elif action == "unhide":
            assert store.set_hidden(item, False, "t", "", NOW) == (status == HIDDEN)
            if status == HIDDEN:
                del truth[item]
        elif action == "delete":
            assert store.set_deleted(item, "t", "", NOW) == (status != DELETED)
            truth[item] = DELETED
        elif action == "old release" and status is not None:
            store.as_old_release(status, item)
        elif action == "migrate":
            store.migrate_takedown_sets()
        # Then every reader sees exactly the truth: the tools' whole reads, a view listed or asked per id, the
        # aggregator's question about a batch
        hidden = {i for i, s in truth.items() if s == HIDDEN}
        deleted = {i for i, s in truth.items() if s == DELETED}
        assert (store.hidden(), store.denied(consistent)) == (hidden, deleted)
        with past_the_listing_limit(per_id):
            view = TakenDown.read(store, consistent=consistent)
            assert view.among(IDS) == hidden | deleted
            assert [item in view for item in IDS] == [item in truth for item in IDS]
            assert bool(view) == (bool(truth) or per_id)
            assert deleted_among(store, IDS, consistent) == deleted
            assert TakenDown.read(store, (HIDDEN,)).excluding(item).among(IDS) == hidden - {item}
            assert TakenDown.read(store, (DELETED,)).including(item).among(IDS) == deleted | {item}
    # And once the old sets are migrated, the markers alone hold every id
    store.migrate_takedown_sets()
    for status in (HIDDEN, DELETED):
        assert store.taken_down_among(IDS, status) == {i for i, s in truth.items() if s == status}


def long_id(name: str) -> str:
    return name.ljust(512, "x")


def hidden_catalog(count: int) -> MemoryItemStore:
    """``count`` hidden ids of 512 bytes (``h0``... padded): a whole listing of them reads ~``count`` x 540 bytes."""
    store = catalog()
    for n in range(count):
        if n % 200 == 0:
            store.data.emulator.clock.advance(1)
        store.set_hidden(long_id(f"h{n}"), True, "t", "", NOW)
    return store


def counting(store: MemoryItemStore) -> tuple[list[list[str]], list[int | None]]:
    """Record each marker lookup's ids and each listing's limit (the view's reads) on ``store``."""
    lookups: list[list[str]] = []
    listings: list[int | None] = []
    lookup, listing = store.taken_down_among, store.list_taken_down

    def looked_up(item_ids, status, consistent=False):
        lookups.append(sorted(item_ids))
        return lookup(item_ids, status, consistent)

    def listed(status, limit=None, consistent=False):
        listings.append(limit)
        return listing(status, limit, consistent)

    store.taken_down_among, store.list_taken_down = looked_up, listed  # type: ignore[method-assign]
    return lookups, listings


def test_a_view_past_the_listing_limit_asks_each_id_once():
    # Given 400 hidden ids of 512 bytes, and a view whose listing reads 8 of them (one per partition)
    store = hidden_catalog(400)
    lookups, listings = counting(store)
    view = TakenDown.read(store, (HIDDEN,), limit=TAKEDOWN_PARTITIONS)
    # When a gather asks about its few candidates twice, some hidden, some not
    asked = [long_id("h1"), long_id("h2"), long_id("v1"), long_id("v2")]
    first, again = view.among(asked), view.among([*asked, long_id("v3")])
    # Then both answers are exact, and each id the listing did not name was looked up once, nothing listed whole
    assert first == again == {long_id("h1"), long_id("h2")}
    looked = [item for batch in lookups for item in batch]
    assert sorted(looked) == sorted(set(looked)) and {long_id(f"v{n}") for n in (1, 2, 3)} <= set(looked)
    assert listings == [TAKEDOWN_PARTITIONS]
    assert dropped_among(frozenset({"v1"}), ["v1", "v2"]) == {"v1"}  # a plain set (the tools) works the same


def test_a_view_lists_every_id_once_its_lookups_would_read_more():
    # Given the same 400 hidden ids (a whole listing: ~216 KB, 53 steps of 4 KB) and a view past its listing limit
    store = hidden_catalog(400)
    view = TakenDown.read(store, (HIDDEN,), limit=TAKEDOWN_PARTITIONS)
    lookups, listings = counting(store)
    before = read_units(store)
    # When it is asked about 30 ids, then about 300 more, then again about some of them
    assert view.among([long_id(f"h{n}") for n in range(30)]) == {long_id(f"h{n}") for n in range(30)}
    asked = [long_id(f"h{n}") for n in range(100, 250)] + [long_id(f"v{n}") for n in range(150)]
    assert view.among(asked) == {long_id(f"h{n}") for n in range(100, 250)}
    assert view.among(asked[140:160]) == {long_id(f"h{n}") for n in range(240, 250)}
    # Then the first ids were looked up (those the first listing did not name), the next ones answered by one whole
    # listing instead (cheaper than 300 lookups), and nothing was read after it
    assert len(lookups) == 1 and 22 <= len(lookups[0]) <= 30 and listings == [None]
    assert read_units(store) - before <= 30 * 0.5 + 400 * 540 / 4096 / 2 + TAKEDOWN_PARTITIONS


def test_the_deny_check_past_the_listing_limit_reads_one_marker_per_id_per_ttl():
    # Given a deleted id on a site past the listing limit, and a clock we move
    store, now = catalog(), [0.0]
    store.set_deleted("gone", "t", "", NOW)
    with past_the_listing_limit():
        check = DenyCheck(lambda: TakenDown.read(store, (DELETED,)), ttl=10.0, clock=lambda: now[0])
        before = read_units(store)
        # When ids are viewed again and again within the ttl
        answers = [check(item) for item in ["gone", "ok", "gone", "ok", "ok"]]
        # Then the deleted one is refused, and each id cost one marker read (0.5 units) besides the listing's
        # eight pages (0.5 each: one marker at most)
        assert answers == [False, True, False, True, True]
        assert read_units(store) - before == 2 * 0.5 + TAKEDOWN_PARTITIONS * 0.5
        # And after the ttl a new view asks again
        now[0] = 10.0
        assert not check("gone")
        assert read_units(store) - before == 3 * 0.5 + 2 * TAKEDOWN_PARTITIONS * 0.5


@pytest.mark.slow
def test_100_000_bans_of_512_byte_ids_cost_each_reader_what_it_asks_about():
    # Given 60,000 hidden and 40,000 deleted ids of 512 bytes (the String Sets of earlier releases held ~6,000),
    # written at most 500 a second (a partition takes 1,000 write units a second)
    store = catalog()
    ids = [f"{n:06d}{'x' * 506}" for n in range(100_000)]
    for n, item in enumerate(ids):
        if n % 500 == 0:
            store.data.emulator.clock.advance(1)
        if n % 5 < 3:
            assert store.set_hidden(item, True, "t", "", NOW)
        else:
            assert store.set_deleted(item, "t", "", NOW)
    # Then no item of the table is near DynamoDB's 400 KB: each id has its own marker of ~530 bytes
    largest = max(item_size(item) for item in store.data.items.values())
    assert largest < 4096
    # When the aggregator asks about a batch of 1,000 ids (some deleted), before its writes and after them
    batch = [*ids[:500], *(f"viewed-{n}" for n in range(500))]
    store.data.emulator.clock.advance(1)
    before = read_units(store)
    assert deleted_among(store, batch, consistent=False) == {i for n, i in enumerate(ids[:500]) if n % 5 >= 3}
    eventual = read_units(store) - before
    store.data.emulator.clock.advance(1)
    assert deleted_among(store, batch, consistent=True) == {i for n, i in enumerate(ids[:500]) if n % 5 >= 3}
    consistent = read_units(store) - before - eventual
    # Then each read costs a listing of at most LISTING_LIMIT markers plus one marker read per id asked: about a
    # thousandth of the 20 MB that reading every deleted id would take (40,000 x 525 bytes = 2,600 units)
    listing = LISTING_LIMIT * 530 / 4096 / 2 + TAKEDOWN_PARTITIONS
    assert eventual <= listing + len(batch) * 0.5 < 800
    assert consistent <= 2 * (listing + len(batch) * 0.5)
    # And a snapshot run's view, asked about 2,000 candidates of its gathers, reads each once whatever it is asked
    store.data.emulator.clock.advance(1)
    before = read_units(store)
    view = TakenDown.read(store)
    candidates = ids[1000:3000]
    assert view.among(candidates) == set(candidates)
    assert view.among(candidates[:100]) == set(candidates[:100])
    assert read_units(store) - before <= 2 * listing + 2 * len(candidates) * 0.5
