"""The ItemCatalog port (issue 13): create once, replace later, read back any id."""

from __future__ import annotations

import pytest

from shardboard.adapters.items_table import marker_key, old_set_key
from shardboard.domain.items.lookalike import skeleton_marker
from shardboard.domain.items.records import (
    SKELETONS,
    DeletedItem,
    ItemRecord,
    created_key,
    created_shard,
    meta,
    set_shard,
)
from shardboard_tools.capacity.units import item_size

ODD_IDS = ["images/001.jpg", "a#1", "a b", "ünï/çødé", "猫 #2/x", "a?b", "x/rank", "%41", "a" * 512]


def test_a_new_item_is_created_with_its_first_revision(ports):
    assert ports.items.get("a") is None
    created = ports.items.put("a", meta({"title": "A"}), "2026-11-23T17:00:00.000Z")
    assert created == ItemRecord("a", '{"title":"A"}', "2026-11-23T17:00:00.000Z", "2026-11-23T17:00:00.000Z", 1)
    assert ports.items.get("a", consistent=True) == created


def test_a_later_put_replaces_the_document_and_keeps_the_creation_time(ports):
    ports.items.put("a", meta({"title": "A", "url": "https://example.com"}), "2026-11-23T17:00:00.000Z")
    replaced = ports.items.put("a", meta({"title": "B"}), "2026-11-23T17:05:00.000Z")
    assert replaced == ItemRecord("a", '{"title":"B"}', "2026-11-23T17:00:00.000Z", "2026-11-23T17:05:00.000Z", 2)
    assert ports.items.get("a", consistent=True) == replaced
    assert ports.items.get("b") is None  # puts touch their own id only


@pytest.mark.parametrize("item", ODD_IDS)
def test_any_valid_id_is_its_own_item(ports, item):
    ports.items.put(item, meta({"id": item}), "2026-11-23T17:00:00.000Z")
    found = ports.items.get(item, consistent=True)
    assert found is not None and found.item_id == item and found.document() == {"id": item}
    assert ports.items.get(item + "/", consistent=True) is None


def test_newest_reads_one_created_shard_newest_first_inside_inclusive_bounds(ports):
    # Given items created at three times, equal times included, spread over the created-shards
    times = ["2026-11-23T17:00:00.000Z", "2026-11-23T17:00:01.000Z", "2026-11-23T17:00:02.000Z"]
    for n, item in enumerate(ODD_IDS):
        ports.items.put(item, meta({}), times[n % 3])
    ports.items.put(ODD_IDS[0], meta({"title": "again"}), times[2])  # a re-put keeps its created key
    shards = {created_shard(item): [] for item in ODD_IDS}
    for n, item in enumerate(ODD_IDS):
        shards[created_shard(item)].append(created_key(times[n % 3], item))
    for shard, keys in shards.items():
        # When a shard is read whole, then from its second key down with a limit of one
        whole = ports.items.newest(shard, "0", "~", 100)
        expected = sorted(keys, reverse=True)
        # Then its keys come newest first, with the records as stored; "more" when older ones remain (DynamoDB also
        # says so whenever Limit was reached, moto and memory only when one does)
        assert [created_key(r.created_at, r.item_id) for r in whole.records] == expected and not whole.more
        assert all(r == ports.items.get(r.item_id, consistent=True) for r in whole.records)
        if len(expected) > 1:
            cut = ports.items.newest(shard, expected[-1], expected[1], 1)
            assert [created_key(r.created_at, r.item_id) for r in cut.records] == [expected[1]]
            assert cut.more or len(expected) == 2
    # And bounds made of bare times select by created_at (a time is never a key)
    inside = [r.item_id for shard in shards for r in ports.items.newest(shard, times[1], times[2], 100).records]
    assert sorted(inside) == sorted(item for n, item in enumerate(ODD_IDS) if n % 3 == 1)


def test_get_many_reads_the_records_that_were_put_and_leaves_the_others_out(ports):
    # Given 150 items put (more than one BatchGetItem of 100 keys), odd ids among them
    ids = [*ODD_IDS, *(f"img/{n:03d}" for n in range(150 - len(ODD_IDS)))]
    for item in ids:
        ports.items.put(item, meta({"id": item}), "2026-11-23T17:00:00.000Z")
    # When they are asked for with ids never put and a repeat
    found = ports.items.get_many([*ids, "never", ids[0], "never/2"])
    # Then every record put is there, as get reads it, and nothing else
    assert set(found) == set(ids)
    assert all(found[item] == ports.items.get(item, consistent=True) for item in ids)
    assert ports.items.get_many([]) == {}


def test_statuses_name_every_hidden_and_deleted_id_put_or_not_and_leave_the_others_out(ports):
    # Given 150 ids (more than one BatchGetItem of 100 keys): put and visible, hidden and deleted with and without a
    # put, one hidden then unhidden
    visible = [*ODD_IDS, *(f"img/{n:03d}" for n in range(140 - len(ODD_IDS)))]
    for item in visible:
        ports.items.put(item, meta({"id": item}), "2026-11-23T17:00:00.000Z")
    for item in ("put-hidden", "put-deleted", "unhidden"):
        ports.items.put(item, meta({}), "2026-11-23T17:00:00.000Z")
    for item in ("put-hidden", "viewed-hidden", "unhidden"):
        assert ports.items.set_hidden(item, True, "cli:ed", "", "2026-11-23T17:01:00.000Z")
    for item in ("put-deleted", "viewed-deleted"):
        assert ports.items.set_deleted(item, "cli:ed", "", "2026-11-23T17:01:00.000Z")
    assert ports.items.set_hidden("unhidden", False, "cli:al", "", "2026-11-23T17:02:00.000Z")
    asked = [*visible, "put-hidden", "viewed-hidden", "put-deleted", "viewed-deleted", "unhidden", "never"]
    # When their statuses are asked for (a repeat among them)
    found = ports.items.statuses([*asked, "viewed-hidden"])
    # Then exactly the taken-down ones are named, with their status; the metadata records are untouched
    assert found == {
        "put-hidden": "hidden",
        "viewed-hidden": "hidden",
        "put-deleted": "deleted",
        "viewed-deleted": "deleted",
    }
    assert ports.items.get("viewed-hidden", consistent=True) is None
    assert ports.items.statuses([]) == {}


@pytest.mark.parametrize("item", ODD_IDS)
def test_a_hide_is_set_once_and_an_unhide_reverses_it(ports, item):
    # Given a put item
    ports.items.put(item, meta({"title": "A"}), "2026-11-23T17:00:00.000Z")
    # When it is hidden, then hidden again
    assert ports.items.set_hidden(item, True, "arn:aws:iam::1:user/ed", "spam", "2026-11-23T17:01:00.000Z")
    assert not ports.items.set_hidden(item, True, "arn:aws:iam::1:user/ed", "again", "2026-11-23T17:02:00.000Z")
    # Then it is hidden and its record says so, metadata kept
    assert ports.items.hidden() == frozenset({item})
    record = ports.items.get(item, consistent=True)
    assert record is not None and record.status == "hidden" and record.document() == {"title": "A"}
    # When it is unhidden (once: a second unhide is refused), it is visible again
    assert ports.items.set_hidden(item, False, "arn:aws:iam::1:user/al", "", "2026-11-23T17:03:00.000Z")
    assert not ports.items.set_hidden(item, False, "arn:aws:iam::1:user/al", "", "2026-11-23T17:04:00.000Z")
    assert ports.items.hidden() == frozenset()
    record = ports.items.get(item, consistent=True)
    assert record is not None and record.status is None and record.rev == 1


def test_an_item_never_put_can_be_hidden_and_stays_uncreated(ports):
    assert ports.items.set_hidden("viewed-only", True, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    assert ports.items.get("viewed-only", consistent=True) is None  # a status is not a creation (RequireItems)
    assert ports.items.get_many(["viewed-only"]) == {}  # nor for the head's metadata
    assert ports.items.hidden() == frozenset({"viewed-only"})
    # and a put keeps the status
    ports.items.put("viewed-only", meta({}), "2026-11-23T17:01:00.000Z")
    record = ports.items.get("viewed-only", consistent=True)
    assert record is not None and record.status == "hidden"


@pytest.mark.parametrize("item", ODD_IDS)
def test_a_delete_tombstones_the_item_once_and_denies_it(ports, item):
    # Given a put item and another one that stays
    ports.items.put(item, meta({"title": "A"}), "2026-11-23T17:00:00.000Z")
    ports.items.put("kept", meta({}), "2026-11-23T17:00:00.000Z")
    # When it is deleted, then deleted again (a resumed delete)
    assert ports.items.set_deleted(item, "arn:aws:iam::1:user/ed", "gdpr", "2026-11-23T17:01:00.000Z")
    assert not ports.items.set_deleted(item, "arn:aws:iam::1:user/ed", "again", "2026-11-23T17:02:00.000Z")
    # Then it alone is denied, not hidden, and its record is a tombstone that says who and why (the first time)
    assert ports.items.denied() == frozenset({item})
    assert ports.items.hidden() == frozenset()
    record = ports.items.get(item, consistent=True)
    assert record is not None and record.status == "deleted" and record.document() == {"title": "A"}
    assert ports.items.get("kept", consistent=True).status is None


def test_a_hidden_item_deleted_is_no_longer_hidden_but_denied(ports):
    ports.items.set_hidden("a", True, "cli:ed", "spam", "2026-11-23T17:00:00.000Z")
    ports.items.set_hidden("b", True, "cli:ed", "spam", "2026-11-23T17:00:00.000Z")
    assert ports.items.set_deleted("a", "cli:ed", "", "2026-11-23T17:01:00.000Z")
    assert ports.items.hidden() == frozenset({"b"})
    assert ports.items.denied() == frozenset({"a"})


def test_a_tombstone_refuses_hide_and_unhide(ports):
    # Given a hidden item that is then deleted
    ports.items.set_hidden("gone", True, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    ports.items.set_deleted("gone", "cli:ed", "", "2026-11-23T17:01:00.000Z")
    # Then neither an unhide nor a hide changes it: it stays deleted and denied
    assert not ports.items.set_hidden("gone", False, "cli:al", "", "2026-11-23T17:02:00.000Z")
    assert not ports.items.set_hidden("gone", True, "cli:al", "", "2026-11-23T17:03:00.000Z")
    assert ports.items.denied() == frozenset({"gone"})
    assert ports.items.hidden() == frozenset()


def test_an_id_never_put_can_be_deleted_and_stays_uncreated(ports):
    assert ports.items.set_deleted("viewed-only", "cli:ed", "", "2026-11-23T17:00:00.000Z")
    assert ports.items.get("viewed-only", consistent=True) is None  # a tombstone is not a creation
    assert ports.items.denied() == frozenset({"viewed-only"})


def listed(items) -> list[str]:
    """Every id the by-created index lists (every shard, all time), newest first per shard."""
    shards = {created_shard(f"i{n}") for n in range(50)} | {created_shard(i) for i in ("a", "b", "c", "d", "late")}
    return sorted(r.item_id for shard in shards for r in items.newest(shard, "0", "~", 100).records)


def test_hidden_and_deleted_items_leave_the_newest_items_and_an_unhide_puts_them_back(ports):
    # Given four items created at known times
    times = {"a": "2026-11-23T17:00:00.000Z", "b": "2026-11-23T17:00:01.000Z", "c": "2026-11-23T17:00:02.000Z"}
    for item, at in {**times, "d": "2026-11-23T17:00:03.000Z"}.items():
        ports.items.put(item, meta({"title": item}), at)
    assert listed(ports.items) == ["a", "b", "c", "d"]
    # When one is hidden, one deleted, and one hidden then deleted
    ports.items.set_hidden("a", True, "cli:ed", "", "2026-11-23T18:00:00.000Z")
    ports.items.set_deleted("b", "cli:ed", "", "2026-11-23T18:00:01.000Z")
    ports.items.set_hidden("c", True, "cli:ed", "", "2026-11-23T18:00:02.000Z")
    ports.items.set_deleted("c", "cli:ed", "", "2026-11-23T18:00:03.000Z")
    # Then only the visible one is listed; a put of new metadata to a hidden item keeps it out, and a deleted item's
    # put is refused in its conditional write (its metadata is the audit's), nothing written
    assert listed(ports.items) == ["d"]
    ports.items.put("a", meta({"title": "A2"}), "2026-11-23T18:30:00.000Z")
    with pytest.raises(DeletedItem, match="'b' is deleted"):
        ports.items.put("b", meta({"title": "B2"}), "2026-11-23T18:30:01.000Z")
    assert listed(ports.items) == ["d"]
    assert ports.items.get("a", consistent=True).document() == {"title": "A2"}
    deleted = ports.items.get("b", consistent=True)
    assert (deleted.document(), deleted.status, deleted.taken_down_at) == (
        {"title": "b"},
        "deleted",
        "2026-11-23T18:00:01.000Z",
    )
    # When the hidden one is unhidden, it is back where its creation time puts it
    assert ports.items.set_hidden("a", False, "cli:al", "", "2026-11-23T19:00:00.000Z")
    assert listed(ports.items) == ["a", "d"]
    (back,) = [r for r in ports.items.newest(created_shard("a"), "0", "~", 100).records if r.item_id == "a"]
    assert (back.created_at, back.status) == (times["a"], None)


def test_an_item_hidden_before_its_first_put_is_listed_once_unhidden(ports):
    # Given an id hidden while it only had views, then put
    ports.items.set_hidden("late", True, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    ports.items.put("late", meta({}), "2026-11-23T17:10:00.000Z")
    assert listed(ports.items) == []
    # When it is unhidden, it is listed with the creation time of that put
    assert ports.items.set_hidden("late", False, "cli:al", "", "2026-11-23T17:20:00.000Z")
    (record,) = ports.items.newest(created_shard("late"), "0", "~", 100).records
    assert (record.item_id, record.created_at) == ("late", "2026-11-23T17:10:00.000Z")


# ----------------------------------------------------------------------------------------------- takedown markers
def stored_items(ports) -> list[dict]:
    """Every item of the items table as stored (wire format)."""
    if ports.name == "memory":
        return list(ports.items.data.items.values())
    pages = ports.items.client.get_paginator("scan").paginate(TableName=ports.items.table)
    return [item for page in pages for item in page["Items"]]


def as_old_release(ports, status: str, item: str) -> None:
    """Turn a takedown into what an earlier release wrote for it: the id in its status's String Set, no marker."""
    if ports.name == "memory":
        ports.items.as_old_release(status, item)
        return
    client, table = ports.items.client, ports.items.table
    client.delete_item(TableName=table, Key=marker_key(status, item))
    client.update_item(
        TableName=table,
        Key=old_set_key(status, item),
        UpdateExpression="ADD #ids :ids",
        ExpressionAttributeNames={"#ids": "ids"},
        ExpressionAttributeValues={":ids": {"SS": [item]}},
    )


def test_takedowns_are_listed_whole_or_up_to_a_limit_and_asked_per_id(ports):
    # Given 20 hidden ids (more than one in some partition: there are 8) and 5 deleted ones, odd ids among them
    hidden = {*ODD_IDS, *(f"h{n}" for n in range(20 - len(ODD_IDS)))}
    deleted = {f"d{n}" for n in range(5)}
    for item in hidden | deleted:
        assert ports.items.set_hidden(item, True, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    for item in deleted:
        assert ports.items.set_deleted(item, "cli:ed", "", "2026-11-23T17:01:00.000Z")
    # Then a listing without a limit names each status's ids whole, as does one whose limit they fit in
    for consistent in (False, True):
        whole = ports.items.list_taken_down("hidden", None, consistent)
        assert (whole.ids, whole.complete) == (hidden, True)
        fits = ports.items.list_taken_down("deleted", 1000, consistent)
        assert (fits.ids, fits.complete) == (deleted, True)
    # (what a whole listing reads: each marker's key, 24 bytes besides its id)
    assert whole.size == sum(len(item.encode()) + 24 for item in hidden)
    # And a listing of at most 8 names some of them, says it is not all, and estimates the whole from its share
    cut = ports.items.list_taken_down("hidden", 8)
    assert cut.ids < hidden and not cut.complete and cut.size > 0
    # And the markers answer for any ids asked, each status apart, repeats and unknown ids included
    asked = [*sorted(hidden)[:5], *sorted(deleted)[:2], "never", "d0"]
    assert ports.items.taken_down_among(asked, "hidden") == set(sorted(hidden)[:5])
    assert ports.items.taken_down_among(asked, "deleted", consistent=True) == {"d0", "d1"}
    assert ports.items.taken_down_among([], "deleted") == frozenset()
    # (150 ids: more than one BatchGetItem)
    many = [f"h{n}" for n in range(150)]
    assert ports.items.taken_down_among(many, "hidden") == hidden & set(many)


def test_ids_an_earlier_release_put_in_its_sets_are_honoured_then_migrated(ports):
    # Given ids an earlier release hid or deleted: in its String Sets, without markers
    for item in ("a", "b", "c", "d", "e" * 512):
        ports.items.set_hidden(item, True, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    for item in ("c", "d"):
        ports.items.set_deleted(item, "cli:ed", "", "2026-11-23T17:01:00.000Z")
    for item, status in {"a": "hidden", "b": "hidden", "e" * 512: "hidden", "c": "deleted", "d": "deleted"}.items():
        as_old_release(ports, status, item)
    assert ports.items.taken_down_among(["a", "b", "c"], "hidden") == frozenset()  # markers only
    # Then every listing names them, even one past its limit
    assert ports.items.hidden() == {"a", "b", "e" * 512} and ports.items.denied(consistent=True) == {"c", "d"}
    assert ports.items.list_taken_down("hidden", 1).ids >= {"a", "b", "e" * 512}
    # When one is unhidden, one deleted, and one of them hidden anew (a marker)
    assert ports.items.set_hidden("a", False, "cli:al", "", "2026-11-23T17:02:00.000Z")
    assert ports.items.set_deleted("b", "cli:al", "", "2026-11-23T17:03:00.000Z")
    assert ports.items.set_hidden("a", True, "cli:al", "", "2026-11-23T17:04:00.000Z")
    # Then the old sets lost them as the markers say
    assert ports.items.hidden() == {"a", "e" * 512} and ports.items.denied() == {"b", "c", "d"}
    # When the old sets are migrated (twice: the second finds nothing)
    assert ports.items.migrate_takedown_sets() == 3
    assert ports.items.migrate_takedown_sets() == 0
    # Then the markers alone hold every id, and no old set is left
    assert ports.items.taken_down_among(["a", "b", "c", "d", "e" * 512], "hidden") == {"a", "e" * 512}
    assert ports.items.taken_down_among(["a", "b", "c", "d", "e" * 512], "deleted") == {"b", "c", "d"}
    assert ports.items.hidden() == {"a", "e" * 512} and ports.items.denied() == {"b", "c", "d"}
    assert not [item for item in stored_items(ports) if item["sk"]["S"] == "set" and "ids" in item]


def pace(ports, n: int) -> None:
    """The in-memory table's clock moves a second every 200 takedowns (the others run at their own speed)."""
    if ports.name == "memory" and n % 200 == 0:
        ports.items.data.emulator.clock.advance(1)


def one_partition(count: int) -> list[str]:
    """``count`` ids of 512 bytes that share a takedown partition (and so, in earlier releases, one String Set)."""
    return [item for item in (f"{n:05d}{'x' * 507}" for n in range(20 * count)) if set_shard(item, 8) == 0][:count]


def test_each_takedown_of_a_shared_partition_is_its_own_small_item(ports):
    # Given 60 ids of 512 bytes that share a partition (moto copies the table per transaction: kept small)
    ids = one_partition(60)
    # When each is hidden and a third of them deleted
    for item in ids:
        assert ports.items.set_hidden(item, True, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    for item in ids[:20]:
        assert ports.items.set_deleted(item, "cli:ed", "", "2026-11-23T17:01:00.000Z")
    # Then each takedown is one marker item of its own, ~530 bytes, whatever the partition holds
    markers = [item for item in stored_items(ports) if item["pk"]["S"] in ("hidden#0", "deny#0")]
    keys = [marker_key("deleted", item) for item in ids[:20]] + [marker_key("hidden", item) for item in ids[20:]]
    assert sorted((m["pk"]["S"], m["sk"]["S"]) for m in markers) == sorted((k["pk"]["S"], k["sk"]["S"]) for k in keys)
    assert all(item_size(item) < 600 for item in markers)
    assert ports.items.hidden() == frozenset(ids[20:]) and ports.items.denied() == frozenset(ids[:20])


# On DynamoDB Local (whose 400 KB limit is the point) a paced minute of writes: the slow tier; memory models the limit.
SLOW_LOCAL = pytest.param("dynamodb-local", marks=[pytest.mark.e2e, pytest.mark.slow])


@pytest.mark.parametrize("ports", ["memory", SLOW_LOCAL], indirect=True)
def test_800_hides_then_deletes_of_512_byte_ids_of_one_partition_fill_no_item(ports):
    # Given 820 ids of 512 bytes that share a partition (its String Set held ~780 of them, then every takedown
    # there was a 500: DynamoDB refuses an item past 400 KB; moto does not, and copies the table per transaction)
    ids = one_partition(820)
    # When each is hidden, then each deleted (at most 200 a second: a partition takes 1,000 write units a second)
    for n, item in enumerate(ids):
        pace(ports, n)
        assert ports.items.set_hidden(item, True, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    for n, item in enumerate(ids):
        pace(ports, n)
        assert ports.items.set_deleted(item, "cli:ed", "", "2026-11-23T17:01:00.000Z")
    # Then every takedown was written, each id in one small marker: no item comes near DynamoDB's 400 KB
    assert ports.items.hidden() == frozenset() and ports.items.denied() == frozenset(ids)
    assert ports.items.taken_down_among(ids, "deleted") == frozenset(ids)
    assert max(item_size(item) for item in stored_items(ports)) < 2048


def test_a_delete_marks_its_ids_skeleton_and_nothing_else_reads_as_deleted(ports):
    # Given an item deleted and one hidden
    ports.items.set_deleted("banned.jpg", "cli:ed", "", "2026-11-23T17:00:00.000Z")
    ports.items.set_hidden("hidden.jpg", True, "cli:ed", "", "2026-11-23T17:00:00.000Z")
    # Then the deleted id's skeleton has its marker, listed and found by lookup, beside the deny marker
    marker = skeleton_marker("banned.jpg")
    assert marker == skeleton_marker("b\u0430nned.jpg") == skeleton_marker("\uff42anned.jpg")
    assert ports.items.list_taken_down(SKELETONS).ids == frozenset({marker})
    look_alike = skeleton_marker("banned\uff0ejpg")
    assert ports.items.taken_down_among([look_alike, skeleton_marker("hidden.jpg")], SKELETONS) == {marker}
    # And the markers are no deleted ids: the deny listing holds the id alone
    assert ports.items.denied() == frozenset({"banned.jpg"})
    # And a repeated delete writes no second marker
    ports.items.set_deleted("banned.jpg", "cli:ed", "", "2026-11-23T17:01:00.000Z")
    assert ports.items.list_taken_down(SKELETONS).ids == frozenset({marker})


def before_skeletons(ports, item: str) -> None:
    """Turn a delete into what a release before the skeleton markers wrote for it: no skeleton marker."""
    if ports.name == "memory":
        ports.items.as_release_before_skeletons(item)
        return
    ports.items.client.delete_item(TableName=ports.items.table, Key=marker_key(SKELETONS, skeleton_marker(item)))


def test_mark_skeletons_puts_the_missing_markers_of_ids_deleted_before_them(ports):
    # Given a deleted id whose skeleton marker an earlier release never wrote, and one deleted since
    ports.items.set_deleted("old.jpg", "cli:ed", "", "2026-11-23T17:00:00.000Z")
    before_skeletons(ports, "old.jpg")
    ports.items.set_deleted("new.jpg", "cli:ed", "", "2026-11-23T17:00:00.000Z")
    assert ports.items.list_taken_down(SKELETONS).ids == {skeleton_marker("new.jpg")}
    # When the markers of every deleted id are put
    assert ports.items.mark_skeletons(sorted(ports.items.denied())) == 1
    # Then both are marked, and a second run puts none
    assert ports.items.list_taken_down(SKELETONS).ids == {skeleton_marker("old.jpg"), skeleton_marker("new.jpg")}
    assert ports.items.mark_skeletons(["old.jpg", "new.jpg"]) == 0
