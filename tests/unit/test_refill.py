"""More takedowns above a period's sparse-index threshold than it has spares (issue 13, "boards full"): the snapshot
job proves each head exact or says it is not, all time falls back on the deep tier, and the refill (the job's own
repair, and `shardboard refill`) repairs the rest.
The real pipeline on the in-memory stores; the truth is the views recorded."""

from __future__ import annotations

import dataclasses
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.domain.items.taken_down import TakenDown
from shardboard.domain.periods import ALL, DAY
from shardboard.domain.publishing.gather import Entry
from shardboard.domain.publishing.snapshot import proven_exact
from shardboard.services.refill import repair_unproven
from shardboard.services.snapshots import take_snapshot
from shardboard.services.takedowns import delete, hide, unhide
from shardboard_tools.operations.refill import refill, short_periods
from shardboard_tools.operations.verification import stored_counts, verify
from tests.conftest import examples
from tests.unit.test_takedowns import World

TOP_N, SPARE = 2, 1


def test_proven_exact_needs_the_depth_th_entry_at_or_above_t():
    entries = [Entry(id=f"i{n}", views=v) for n, v in enumerate([9, 8, 8, 5])]
    assert proven_exact(entries, 3, 0)  # T = 0: everything is keyed
    assert proven_exact(entries, 3, 8)  # ties at T are keyed too
    assert not proven_exact(entries, 4, 8)  # the 4th best (5) may have an unkeyed rival in [5, 8)
    assert not proven_exact(entries[:2], 3, 1)  # short of the depth while T > 0


def views(world: World, counts: dict[str, int]) -> None:
    for item, count in counts.items():
        for _ in range(count):
            world.design.view(item)
        world.counts[item] += count
    world.design.settle(final=True)


def hide_all(world: World, items: list[str]) -> None:
    for item in items:
        hide(world.catalog, world.design.board, world.config, item, by="test", reason="ban", at=world.moment)
        world.hidden.add(item)


def head_of(world: World, kind: str) -> dict:
    (head,) = [h for period, h in world.heads().items() if period.kind == kind]
    return head


def banned_world(depth: int) -> World:
    """Six items counted, T raised to the (N+R)-th best (8; the batches' own thresholds keyed only the best three),
    two newcomers below it (never keyed),
    then three of the top banned: more hides above T than the one spare."""
    world = World(TOP_N, SPARE, board_shards=2, batch_size=5, depth=depth)
    views(world, {"x1": 10, "x2": 9, "x3": 8, "x4": 7, "x5": 6, "x6": 5})
    world.refresh()
    views(world, {"y1": 7, "y2": 6})
    hide_all(world, ["x1", "x2", "x3"])
    return world


def test_without_a_deeper_index_the_job_says_the_head_is_not_proven_and_refill_repairs_it():
    # Given more hides above T than spares, and no ranked versions
    world = banned_world(depth=0)
    day = next(p for p in world.periods() if p.kind == DAY)
    dropped = world.catalog.hidden()
    # When the job gathers the day again
    result = take_snapshot(world.design.board, world.config, None, day, dropped)
    # Then it says the head is not proven: the never-keyed y1 (7) belongs in it
    assert not result.proven
    assert list(result.snapshot.items) != world.best_visible(TOP_N)
    # When refill runs
    found = stored_counts(world.design.board, world.config.policy.periods)
    short = short_periods(world.design.board, world.config, found, dropped)
    assert short == dict.fromkeys(world.periods(), 6)  # the 3rd best visible: x5 and y2 with 6
    repaired = refill(world.design.board, world.config, dropped, world.catalog.denied())
    # Then every period's T went down to what holds its best visible, the newcomers were keyed, and every head is
    # the exact top N+R of the visible counts, proven so
    assert {(r.period, r.threshold_was, r.threshold) for r in repaired} == {(p, 8, 6) for p in world.periods()}
    # (x4 and x5 too: the batches' own thresholds kept them out of the index once three items were sure of 8)
    assert all(r.keyed == 4 for r in repaired)
    for period, head in world.heads().items():
        assert list(head.items + head.spare) == world.best_visible(TOP_N + SPARE)
        assert take_snapshot(world.design.board, world.config, None, period, dropped).proven
    report = verify(world.design.views, world.design.board, world.config, dropped)
    assert report.exact and not report.snapshots_inexact
    # And a second refill finds nothing to do
    assert refill(world.design.board, world.config, dropped, frozenset()) == []


def test_all_time_with_ranked_versions_makes_up_from_the_deep_tier_at_once():
    # Given the same bans with ranked versions to depth 12 (all time has the deep tier)
    world = banned_world(depth=12)
    everything = next(p for p in world.periods() if p.kind == ALL)
    # Then the hides themselves left the all-time head full and exact (the one that ran out of spares gathered
    # again, falling back on the deep tier), and the next refresh fills its spares too
    assert list(head_of(world, ALL).items) == world.best_visible(TOP_N)
    world.refresh()
    head = head_of(world, ALL)
    assert list(head.items + head.spare) == world.best_visible(TOP_N + SPARE)
    assert take_snapshot(world.design.board, world.config, None, everything, world.catalog.hidden()).proven
    # And neither verify nor refill calls for a repair: the deep tier (T_D 0 here) keys every item below T
    report = verify(world.design.views, world.design.board, world.config, world.catalog.hidden())
    assert report.refill_needed == [] and not report.snapshots_inexact
    assert refill(world.design.board, world.config, world.catalog.hidden(), frozenset()) == []


def test_an_unhide_after_a_refill_finds_the_item_in_the_index():
    # Given a refill after the bans
    world = banned_world(depth=0)
    refill(world.design.board, world.config, world.catalog.hidden(), frozenset())
    # When a banned item comes back and views go on
    unhide(world.catalog, world.design.board, world.config, "x2", by="test", reason="appeal", at=world.moment)
    world.hidden.discard("x2")
    views(world, {"y2": 3, "x2": 1})
    world.refresh()
    # Then every head is the exact top N of the visible counts
    for head in world.heads().values():
        assert list(head.items) == world.best_visible(TOP_N)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rounds=st.lists(
        st.tuples(
            st.dictionaries(st.sampled_from([f"i{n}" for n in range(12)]), st.integers(1, 9), max_size=6),
            st.lists(st.integers(0, 11), max_size=4),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    ),
    depth=st.sampled_from([0, 12]),
    spare=st.integers(0, 2),
)
def test_after_refill_every_head_is_the_exact_top_of_the_visible_counts(rounds, depth, spare):
    # Given rounds of views, refreshes, hides and deletes of any items, with or without ranked versions
    world = World(TOP_N, spare, board_shards=2, batch_size=4, depth=depth)
    world.design.settings = dataclasses.replace(world.config, snapshot_spare=spare)
    deleted: set[str] = set()
    for counts, takedowns, remove in rounds:
        views(world, {item: count for item, count in counts.items() if item not in deleted})
        world.refresh()
        for number in takedowns:
            item = f"i{number}"
            if item in deleted or item not in world.counts:
                continue
            if remove:
                delete(world.catalog, world.design.board, world.config, item, by="t", reason="", at=world.moment)
                deleted.add(item)
                world.hidden.discard(item)
                world.counts.pop(item)
            else:
                hide_all(world, [item])
    # When refill runs and the job refreshes
    refill(world.design.board, world.config, world.catalog.hidden(), world.catalog.denied())
    world.refresh()
    # Then every head is the exact top N of the visible counts, and the job proves it (unless every item was
    # deleted: an empty period lists no counts for refill to see, and its empty head is exact all the same)
    for period, head in world.heads().items():
        assert list(head.items) == world.best_visible(TOP_N)
        dropped = world.catalog.hidden() | world.catalog.denied()
        proven = take_snapshot(world.design.board, world.config, None, period, dropped).proven
        assert proven or not world.counts


def test_the_jobs_repair_fixes_the_heads_it_could_not_prove():
    # Given the ban wave and a refresh that cannot prove the day's head
    world = banned_world(depth=0)
    day = next(p for p in world.periods() if p.kind == DAY)
    dropped = TakenDown.read(world.catalog)
    assert not take_snapshot(world.design.board, world.config, None, day, dropped).proven
    # When the job's repair runs for it, with time to spare
    repair = repair_unproven(
        world.design.board, world.config, [day], dropped=dropped, catalog=world.catalog, deadline=time.monotonic() + 60
    )
    # Then nothing is left unproven, and every period of the board (all time too) holds its exact visible top
    assert repair.unrepaired == [] and repair.why_not == ""
    assert {r.period for r in repair.repaired} == set(world.periods()) and all(r.proven for r in repair.repaired)
    for head in world.heads().values():
        assert list(head.items + head.spare) == world.best_visible(TOP_N + SPARE)


def test_a_repair_out_of_time_leaves_the_head_unproven_for_the_alarm_and_changes_nothing():
    # Given the ban wave, and a job with no time left for two scans of the board table
    world = banned_world(depth=0)
    day = next(p for p in world.periods() if p.kind == DAY)
    before = world.design.board.thresholds([day], consistent=True)[day].threshold
    # When the repair runs past its deadline
    repair = repair_unproven(
        world.design.board,
        world.config,
        [day],
        dropped=TakenDown.read(world.catalog),
        catalog=world.catalog,
        deadline=time.monotonic() - 1,
    )
    # Then the day stays unproven (what UnprovenSnapshots counts), with the reason, and T is untouched
    assert repair.unrepaired == [day] and "time" in repair.why_not and repair.repaired == []
    assert world.design.board.thresholds([day], consistent=True)[day].threshold == before
    # And `shardboard refill`, without a deadline, repairs it
    assert {r.period for r in refill(world.design.board, world.config, world.catalog.hidden(), frozenset())} == set(
        world.periods()
    )
