"""The ShardMetadataStore port: seed 004's optimistic lock on ``last_updated`` and the server-side cooldown."""

from __future__ import annotations

from shardboard.domain.ports import ShardMetadata

COOLDOWN = 60.0


def change(ports, expected, count, now):
    return ports.shards.change_count("a", expected, count, now, cooldown_seconds=COOLDOWN, default=2)


def test_the_first_change_creates_the_item_once(ports):
    # Given an item on the default shard count: no metadata
    assert ports.shards.get("a") is None
    # When two writers both try the first change at the same time
    grown = change(ports, None, 4, 1_000)
    lost = change(ports, None, 4, 1_000)
    # Then exactly one wins; its item records the default since epoch 0 and the change
    assert grown == ShardMetadata("a", 4, 1_000, 4, frozenset({"0:2", "1000:4"}))
    assert lost is None
    assert ports.shards.get("a", consistent=True) == grown


def test_a_change_needs_the_last_value_read_and_the_cooldown_passed(ports):
    grown = change(ports, None, 4, 1_000)
    # Before the cooldown has passed (1,000 > 1,059 - 60), even with the current value, it is refused
    assert change(ports, grown, 8, 1_059) is None
    # Once it has, the change is made
    bigger = change(ports, grown, 8, 1_060)
    assert bigger == ShardMetadata("a", 8, 1_060, 8, frozenset({"0:2", "1000:4", "1060:8"}))
    # A writer still holding the older value loses, however late it comes
    assert change(ports, grown, 16, 5_000) is None
    # A shrink keeps the most shards ever (readers read them all)
    smaller = change(ports, bigger, 4, 1_200)
    assert smaller == ShardMetadata("a", 4, 1_200, 8, frozenset({"0:2", "1000:4", "1060:8", "1200:4"}))


def test_a_review_note_keeps_the_count_and_the_lock(ports):
    grown = change(ports, None, 4, 1_000)
    # When the review notes what it measured, then clears the quiet period
    ports.shards.note_review(grown, 1234, 1_100, 1_050)
    noted = ports.shards.get("a", consistent=True)
    assert (noted.reviewed_views, noted.reviewed_at, noted.quiet_since) == (1234, 1_100, 1_050)
    ports.shards.note_review(noted, 1300, 1_160, None)
    cleared = ports.shards.get("a", consistent=True)
    assert (cleared.reviewed_views, cleared.reviewed_at, cleared.quiet_since) == (1300, 1_160, None)
    # Then the count and the lock are untouched: the writer's last value still wins the next change
    assert (cleared.number_of_shards, cleared.last_updated, cleared.max_shards) == (4, 1_000, 4)
    assert change(ports, grown, 8, 1_100) is not None
    assert [m.item_id for m in ports.shards.scan()] == ["a"]
