"""The rank a day before (domain/publishing/day_before.py): each head entry's rank in the first head of its board and
period kind gathered in the hour 24 hours before it, read from a ranks checkpoint. The rule's pieces, the stored head,
and a property: the real pipeline on the in-memory stores over more than a day of simulated time, with refreshes,
hides and unhides in between, against a brute-force log of every head gathered."""

from __future__ import annotations

import contextlib
import dataclasses
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardboard.adapters.board_table import snapshot_from_item, snapshot_item
from shardboard.domain.items.taken_down import TakenDown
from shardboard.domain.periods import ALL, DAY, HOUR, bucket_of, from_epoch, iso, parse_time
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.day_before import carried, checkpoint_of, day_back, hour_of, with_day_before
from shardboard.domain.publishing.head import Head
from shardboard.domain.publishing.snapshot import leaderboard_json
from shardboard.domain.reading.pages import around_head, page_of_head
from shardboard.services.snapshots import refresh_changed
from shardboard.services.takedowns import NothingToTakeDown, hide, unhide
from shardboard_tools.bench.designs import ShardboardDesign
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity import CapacityEmulator, VirtualClock
from tests.conftest import examples
from tests.heads import head_of_pairs

DAY_PERIOD = PeriodKey("global", DAY, "2026-11-25")


def test_a_head_reads_the_checkpoint_of_the_same_hour_yesterday_of_its_kinds_period_then():
    # A day board generated at 00:30 reads yesterday's day as it stood at 00:xx yesterday
    back = day_back(PeriodKey("global", DAY, "2026-11-26"), "2026-11-26T00:30:00.000Z")
    assert back == type(back)(PeriodKey("global", DAY, "2026-11-25"), "2026-11-25T00")
    # An hour board: the same clock hour yesterday; a week board on a Monday: last week's; all time: itself
    assert day_back(PeriodKey("b", HOUR, "2026-11-26T13"), "2026-11-26T13:59:00Z").period.bucket == "2026-11-25T13"
    assert day_back(PeriodKey("b", "week", "2026-W48"), "2026-11-23T09:00:00Z").period.bucket == "2026-W47"
    assert day_back(PeriodKey("b", ALL, ALL), "2026-11-26T13:00:00Z") == type(back)(
        PeriodKey("b", ALL, ALL), "2026-11-25T13"
    )


def test_the_first_head_of_an_hour_writes_the_checkpoint_and_carries_what_it_read():
    first = head_of_pairs([["a", 5], ["b", 3]], spare=[["c", 3]], now="2026-11-26T10:05:00.000Z")
    # The first head of the hour: a checkpoint of its entries and spares (competition ranks), expiring in two days;
    # it reads the checkpoint of a day before
    checkpoint = checkpoint_of(None, first)
    assert checkpoint is not None
    assert (checkpoint.hour, dict(checkpoint.ranks)) == ("2026-11-26T10", {"a": 1, "b": 2, "c": 2})
    assert checkpoint.expires_at == int((parse_time(first.generated_at) + timedelta(days=2)).timestamp())
    assert carried(None, first) is None
    written = with_day_before(first, {"b": 1, "x": 2})
    # A later head of the same hour writes none and takes the ranks along without a read
    later = head_of_pairs([["b", 9]], now="2026-11-26T10:59:59.999Z")
    assert checkpoint_of(written, later) is None
    # (only the head's own entries' ranks are kept: a checkpoint's other ids would grow the head)
    assert written.day_before == {"b": 1}
    assert carried(written, later) == {"b": 1}
    # A later head holding an id the head before did not hold reads the checkpoint again (its rank is not kept)
    assert carried(written, head_of_pairs([["x", 9], ["b", 8]], now="2026-11-26T10:30:00.000Z")) is None
    # The next hour's head writes one again and reads the next checkpoint
    next_hour = head_of_pairs([["b", 9]], now="2026-11-26T11:00:00.000Z")
    assert checkpoint_of(written, next_hour) is not None
    assert carried(written, next_hour) is None
    assert hour_of(next_hour.generated_at) == "2026-11-26T11"
    # A head stored before day-before ranks existed (none carried) has them read, even within its hour
    assert carried(first, later) is None
    # A checkpoint read that found none is carried as such: no read again within the hour
    assert carried(with_day_before(first, {}), later) == {}


def test_entries_carry_day_before_rank_in_top_head_pages_and_around_me():
    head = dataclasses.replace(head_of_pairs([["e", 9], ["c", 6], ["a", 1]]), day_before={"c": 1, "z": 2})
    assert [(e["id"], e["day_before_rank"]) for e in leaderboard_json(head)["items"]] == [
        ("e", None),
        ("c", 1),
        ("a", None),
    ]
    assert [e.day_before_rank for e in page_of_head(head, 1, 2).entries] == [1, None]
    around = around_head(None, PeriodKey("global", ALL, ALL), head, "c", k=1)  # type: ignore[arg-type]
    assert [e.as_json()["day_before_rank"] for e in around.entries] == [None, 1, None]
    # A head that carries none answers null
    assert {e["day_before_rank"] for e in leaderboard_json(head_of_pairs([["e", 9]]))["items"]} == {None}


def test_the_stored_head_keeps_its_day_before_ranks_and_a_head_without_them_is_stored_as_before():
    head = head_of_pairs([["e", 9], ["c", 6]])
    assert "day_before" not in snapshot_item(head)
    assert snapshot_from_item(snapshot_item(head)).day_before is None
    carrying = dataclasses.replace(head, day_before={"c": 2})
    assert snapshot_from_item(snapshot_item(carrying)) == carrying
    # A checkpoint read that found none is kept too (two bytes): no entry has a rank then, and no read again
    empty = dataclasses.replace(head, day_before={})
    assert snapshot_item(empty)["day_before"] == {"S": "[]"}
    assert snapshot_from_item(snapshot_item(empty)) == empty


# -- the property


class Day:
    """The pipeline on the in-memory stores with hour and day periods, a simulated clock, the items table, and a log
    of every head gathered (by the job or a takedown's gather), in order."""

    def __init__(self, top_n: int, spare: int) -> None:
        workload = Workload(top_n=top_n, gsi_shards=2, write_shards=2, batch_size=3, periods=(HOUR, DAY))
        self.design = ShardboardDesign(workload, CapacityEmulator(VirtualClock()))
        self.design.settings = dataclasses.replace(self.design.settings, snapshot_spare=spare)
        self.catalog = self.design.items  # the adapter on the design's engine
        self.gathered: list[Head] = []
        board = self.design.board
        put = board.put_snapshot

        def logged(head: Head, previous_version: int | None) -> bool:
            before = board.get_snapshot(PeriodKey(head.board, head.period.get("kind", ALL), head.bucket), True)
            written = put(head, previous_version)
            if written and (before is None or before.generated_at != head.generated_at):  # a patch keeps the time
                self.gathered.append(head)
            return written

        board.put_snapshot = logged  # type: ignore[method-assign]

    @property
    def now(self) -> str:
        return iso(from_epoch(self.design._epoch()))

    def refresh(self) -> None:
        everything = PeriodKey(self.design.settings.board, ALL, ALL)
        dropped = TakenDown.read(self.catalog)
        run = refresh_changed(self.design.board, self.design.settings, self.now, always=[everything], hidden=dropped)
        assert not run.failures

    def truth(self, period: PeriodKey, generated_at: str) -> dict[str, int]:
        """Brute force: the competition ranks of the first head gathered for the kind's period a day before, in that
        hour (none: no rank)."""
        then = parse_time(generated_at) - timedelta(hours=24)
        wanted = (period.board, period.kind, bucket_of(period.kind, then), bucket_of(HOUR, then))
        for head in self.gathered:
            kind = head.period.get("kind", ALL)
            if (head.board, kind, head.bucket, bucket_of(HOUR, parse_time(head.generated_at))) == wanted:
                held = [*head.items, *head.spare]
                return {item: 1 + sum(1 for _, other in held if other > views) for item, views in held}
        return {}

    def heads(self) -> list[tuple[PeriodKey, Head]]:
        """Every head there is (each period gathered so far, current or past)."""
        periods = {PeriodKey(h.board, h.period.get("kind", ALL), h.bucket) for h in self.gathered}
        found = [(period, self.design.board.get_snapshot(period, consistent=True)) for period in sorted(periods)]
        return [(period, head) for period, head in found if head is not None]


steps = st.lists(
    st.one_of(
        st.tuples(st.just("view"), st.integers(0, 11)),
        st.tuples(st.just("wait"), st.integers(1, 8 * 60)),  # minutes
        st.tuples(st.just("snapshot"), st.just(0)),
        st.tuples(st.just("hide"), st.integers(0, 11)),
        st.tuples(st.just("unhide"), st.integers(0, 11)),
    ),
    min_size=10,
    max_size=60,
)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=steps, top_n=st.integers(1, 3), spare=st.integers(0, 2))
def test_every_entry_shows_its_rank_in_the_first_head_of_the_same_hour_a_day_before(steps, top_n, spare):
    # Given the pipeline, and views, refreshes, waits and takedowns over more than a day (the last steps wait a day
    # and refresh, so some heads always look back on earlier ones)
    day = Day(top_n, spare)
    # A takedown that gathers a head again stamps it with its own time (the simulated one it is given)
    for action, value in [*steps, ("wait", 24 * 60), ("view", 1), ("snapshot", 0), ("wait", 30)]:
        act(day, action, value)
        # Then every head's entries carry their rank in the brute-force checkpoint (the spares' too, through the
        # head's ranks: a hide refills from them)
        for period, head in day.heads():
            truth = day.truth(period, head.generated_at)
            shown = leaderboard_json(head)["items"]
            assert [entry["day_before_rank"] for entry in shown] == [truth.get(entry["id"]) for entry in shown]
            assert {e.id: head.day_before.get(e.id) for e in head.spare} == {e.id: truth.get(e.id) for e in head.spare}


def act(day: Day, action: str, value: Any) -> None:
    design = day.design
    item = f"i{value % 4 if value % 3 else value}"  # a few hot items and a tail
    if action == "view":
        design.view(item)
        design.settle(final=True)
    elif action == "wait":
        design.emulator.clock.advance(value * 60)
    elif action == "snapshot":
        day.refresh()
    else:
        takedown = hide if action == "hide" else unhide
        with contextlib.suppress(NothingToTakeDown):  # an id never viewed: nothing to take down
            takedown(
                day.catalog, design.board, design.settings, item, by="t", reason="", at=from_epoch(design._epoch())
            )
