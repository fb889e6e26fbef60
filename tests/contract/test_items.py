"""The ItemCatalog port (issue 13): create once, replace later, read back any id."""

from __future__ import annotations

import pytest

from shardboard.domain.items import ItemRecord, meta

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


@pytest.mark.parametrize("item", ODD_IDS)
def test_a_hide_is_set_once_and_an_unhide_reverses_it(ports, item):
    # Given a put item
    ports.items.put(item, meta({"title": "A"}), "2026-11-23T17:00:00.000Z")
    # When it is hidden, then hidden again
    assert ports.items.set_hidden(item, True, "arn:aws:iam::1:user/ed", "spam", "2026-11-23T17:01:00.000Z")
    assert not ports.items.set_hidden(item, True, "arn:aws:iam::1:user/ed", "again", "2026-11-23T17:02:00.000Z")
    # Then it is in the hidden sets and its record says so, metadata kept
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
    assert ports.items.hidden() == frozenset({"viewed-only"})
    # and a put keeps the status
    ports.items.put("viewed-only", meta({}), "2026-11-23T17:01:00.000Z")
    record = ports.items.get("viewed-only", consistent=True)
    assert record is not None and record.status == "hidden"
