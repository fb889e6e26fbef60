"""The aggregator's and the snapshot job's decisions are pure: given what was read, they return what to write."""

from __future__ import annotations

from shardboard.domain.aggregating.aggregation import (
    Context,
    IndexJoin,
    ItemOutcome,
    Step,
    catch_up,
    plan_joins,
    plan_move,
    plan_roll,
    possible_rolls,
    step_for,
)
from shardboard.domain.aggregating.batch import ItemDelta, ShardMove, ShardStep, optimistic_moves
from shardboard.domain.periods import ALL
from shardboard.domain.ports import AggregateState, BoardState, PeriodKey
from shardboard.domain.publishing.gather import Entry, Gathered
from shardboard.domain.publishing.ranked_versions import RankRefresh
from shardboard.domain.publishing.snapshot import plan_head, plan_publish
from shardboard.settings import Settings

EVERYTHING = PeriodKey("global", ALL, ALL)
DAY1, DAY2 = "2026-11-23", "2026-11-24"  # a Monday and a Tuesday: same ISO week and month


def context(threshold: int = 0, **settings: object) -> Context:
    return Context(Settings(**settings).policy, {EVERYTHING: BoardState(threshold, None, None)})  # type: ignore[arg-type]


def delta(before: int, after: int, bucket: str = "all") -> ItemDelta:
    return ItemDelta("a", {0: ShardStep(before, after)}, "global", bucket)


def test_which_write_a_delta_needs_follows_the_aggregates_bucket():
    state = AggregateState({}, 0, bucket=DAY1)
    assert step_for(delta(0, 1, DAY1), None) is Step.MOVE
    assert step_for(delta(0, 1, DAY1), state) is Step.MOVE
    assert step_for(delta(0, 1, DAY2), state) is Step.ROLL
    assert step_for(delta(0, 1, "2026-11-22"), state) is Step.LATE


def test_a_move_keys_the_item_when_its_count_is_sure_to_reach_the_threshold():
    # Given the published all-time threshold 5 (all time only, no ranked versions)
    ctx = context(5, periods=(), rank_depth=0)
    # When a batch moves shard 0 from 0 to 6, or only to 3
    reaching = plan_move(delta(0, 6), ctx, optimistic_moves(delta(0, 6)))
    short = plan_move(delta(0, 3), ctx, optimistic_moves(delta(0, 3)))
    # Then the first write carries the index key in the same UpdateItem, the second none
    assert reaching.moves == [ShardMove(0, 0, 6)] and reaching.added == 6
    # (at one bucket above its sure count's, 6: bucket 0, so that it grows to 255 without a raise)
    assert set(reaching.joins) == {ALL} and reaching.buckets == {ALL: 1}
    assert short.joins == {} and short.added == 3


def test_only_a_delta_starting_every_shard_from_zero_may_find_its_aggregate_in_an_older_day():
    first, more = delta(0, 2, DAY2), delta(3, 5, DAY2)
    assert possible_rolls(context(periods=("day",)), [first, more]) == [first]
    assert possible_rolls(context(periods=()), [delta(0, 2)]) == []  # all time only: nothing ever rolls


def test_a_move_joins_with_the_counts_of_the_aggregate_seen_before_it():
    # Given the day's threshold 10 and an aggregate seen with 8 views of the day, keyed in all time already
    day = PeriodKey("global", "day", DAY1)
    ctx = Context(Settings(periods=("day",)).policy, {day: BoardState(10, None, None)})
    seen = AggregateState({1: 8}, 8, DAY1, {"day": 8}, frozenset({ALL}))
    # When a delta adds 3 views on another shard (its own sure count is 3)
    moves = optimistic_moves(delta(0, 3, DAY1))
    # Then the move joins the day's index in its own write, at the bucket of 8 + 3; all time keeps its key
    assert plan_move(delta(0, 3, DAY1), ctx, moves, seen).joins == {"day": ctx.index_key(day, "a")}
    assert plan_move(delta(0, 3, DAY1), ctx, moves, seen).buckets == {"day": 1}
    # Unseen, or seen in another day, the delta alone is not sure to reach 10
    assert plan_move(delta(0, 3, DAY1), ctx, moves).joins.keys() == {ALL}
    assert "day" not in plan_move(delta(0, 3, DAY1), ctx, moves, AggregateState({1: 8}, 8, DAY2, {"day": 8})).joins


def test_a_refused_move_catches_up_from_what_it_found():
    # Given a batch that saw shard 0 go from 2 to 5
    seen = delta(2, 5)
    # When the aggregate had applied 4 (part of the batch was applied before) or 1 (records never arrived)
    replay, replay_moves = catch_up(seen, {0: 4})
    gap, gap_moves = catch_up(seen, {0: 1})
    _, done_moves = catch_up(seen, {0: 5})
    # Then each moves from what is applied to the newest value, and says why
    assert replay == ItemOutcome(replay_absorbed=True) and replay_moves == [ShardMove(0, 4, 5)]
    assert gap == ItemOutcome(gap_healed=True) and gap_moves == [ShardMove(0, 1, 5)]
    assert done_moves == []


def test_joins_name_only_the_indexes_an_aggregate_lacks():
    # Given the threshold 3 and no ranked versions
    ctx = context(3, periods=(), rank_depth=0)
    key = ctx.index_key(EVERYTHING, "a")
    # Then an item at 4 (bucket 0) is keyed one bucket above; one keyed at or above its bucket, or below T, needs
    # nothing
    assert plan_joins(ctx, "global", "a", AggregateState({0: 4}, 4, bucket=ALL)) == [
        IndexJoin("global", "a", ALL, key, 1)
    ]
    for stored in (0, 1):
        keyed = AggregateState({0: 4}, 4, bucket=ALL, keyed=frozenset({ALL}), buckets={ALL: stored})
        assert plan_joins(ctx, "global", "a", keyed) == []
    assert plan_joins(ctx, "global", "a", AggregateState({0: 2}, 2, bucket=ALL)) == []
    # And one whose views outgrew its bucket (16 = 16**1: bucket 1 above a stored 0) has it raised to one above
    grown = AggregateState({0: 16}, 16, bucket=ALL, keyed=frozenset({ALL}), buckets={ALL: 0})
    assert plan_joins(ctx, "global", "a", grown) == [IndexJoin("global", "a", ALL, key, 2)]
    # With ranked versions all time keys down to T_D (0 until a deep gather): an item below T is keyed too
    deep = context(3, periods=())
    (join,) = plan_joins(deep, "global", "a", AggregateState({0: 2}, 2, bucket=ALL))
    assert join.bucket == 1 and join.key == deep.index_key(EVERYTHING, "a")


def test_a_roll_archives_the_periods_that_end_and_keeps_those_that_go_on():
    # Given an aggregate of day 1 (3 views today, 3 this week) and views of day 2, in the same week
    ctx = context(0, periods=("day", "week"))
    keyed = frozenset({"day", "week", ALL})
    old = AggregateState({0: 3}, 3, bucket=DAY1, counts={"day": 3, "week": 3}, keyed=keyed, buckets={ALL: 0})
    roll = plan_roll(delta(0, 2, DAY2), ctx, old)
    # Then only the day ends: one past entry carrying its applied values; the week counts on
    assert [entry.period for entry in roll.archives] == [PeriodKey("global", "day", DAY1)]
    assert roll.archives[0].applied == {0: 3} and roll.archives[0].count == 3
    assert roll.new.counts == {"day": 2, "week": 5} and roll.new.views == 5 and roll.added == 2
    assert roll.new.applied == {0: 2} and roll.new.bucket == DAY2
    # And all time, which does not roll, keeps its key and bucket
    assert ALL in roll.new.keyed and roll.new.buckets[ALL] == 0


def test_a_head_is_written_only_when_its_content_changed():
    policy = Settings(top_n=2, snapshot_spare=1, rank_depth=0).policy
    gathered = Gathered([Entry("a", 9), Entry("b", 5), Entry("c", 1)], items_read=3, rounds=1, shard_hits={0: 3})
    nothing = RankRefresh(None, 0, None, [])
    first = plan_head(policy, EVERYTHING, None, gathered, nothing, "2026-11-23T00:00:00Z")
    assert first is not None
    assert first.items == (("a", 9), ("b", 5)) and first.spare == (("c", 1),)
    assert first.version == 1 and first.threshold == 5
    assert plan_head(policy, EVERYTHING, first, gathered, nothing, "2026-11-23T00:01:00Z") is None
    # The sparse index's T is the (N+R)-th best: every spare stays exact
    assert plan_publish(policy, EVERYTHING, gathered, nothing).threshold == 1
    unsparse = Settings(top_n=2, snapshot_spare=1, rank_depth=0, sparse_index=False).policy
    assert plan_publish(unsparse, EVERYTHING, gathered, nothing).threshold == 0
