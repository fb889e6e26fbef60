"""Metadata in the snapshot head (domain/publishing/head_meta.py): the first P entries carry their documents, a run asks
only for ids new among them (all P every META_REFRESH_SECONDS), and the head stays under its byte budget."""

from __future__ import annotations

from dataclasses import replace

from shardboard.adapters.board_table import snapshot_item
from shardboard.domain.items.records import MAX_META_BYTES, meta
from shardboard.domain.publishing.head import Head, Row
from shardboard.domain.publishing.head_meta import META_REFRESH_SECONDS
from shardboard.domain.publishing.head_size import HEAD_BUDGET_BYTES, fit, head_bytes
from shardboard.domain.publishing.snapshot import leaderboard_json
from shardboard.services.snapshots import inline_meta
from shardboard_tools.capacity.stores import in_process
from shardboard_tools.capacity.units import item_size, read_units

T0 = "2026-11-23T17:00:00.000Z"
SOON = "2026-11-23T17:01:00.000Z"
LATER = f"2026-11-23T17:{META_REFRESH_SECONDS // 60:02d}:00.000Z"


class CountingCatalog:
    """The items table (the adapter on the in-process engine), remembering which ids each BatchGet asked for."""

    def __init__(self) -> None:
        self.store = in_process().items
        self.asked: list[list[str]] = []

    def get_many(self, item_ids):
        self.asked.append(list(item_ids))
        return self.store.get_many(item_ids)


def head(ids: list[str], now: str) -> Head:
    items = tuple(Row(item, 100 - n) for n, item in enumerate(ids))
    return Head("global", {"kind": "all"}, "all", 1, now, items, len(ids), 0, {}, "d" * 64)


def test_the_first_p_entries_carry_their_documents_and_ids_never_put_are_null():
    # Given items a and c put, b never put
    catalog = CountingCatalog()
    catalog.store.put("a", meta({"title": "A"}), T0)
    catalog.store.put("c", meta({"title": "C", "thumbnail": "https://example.com/c.jpg"}), T0)
    snapshot = head(["a", "b", "c", "d"], T0)
    # When the head is given metadata with P = 3
    snapshot = inline_meta(snapshot, None, catalog, page_size=3)
    # Then a, b, c were asked in one BatchGet, d (past P) not; b is recorded as asked and never put
    assert catalog.asked == [["a", "b", "c"]]
    assert snapshot.meta == {
        "a": {"title": "A"},
        "b": None,
        "c": {"title": "C", "thumbnail": "https://example.com/c.jpg"},
    }
    assert snapshot.meta_at == T0
    # And the leaderboard puts "meta" on the entries that have some, only
    entries = leaderboard_json(snapshot)["items"]
    assert [e.get("meta") for e in entries] == [{"title": "A"}, None, snapshot.meta["c"], None]
    assert "meta" not in entries[1] and "meta" not in entries[3]


def test_a_later_run_asks_only_for_ids_new_among_the_first_p_until_a_refresh_is_due():
    catalog = CountingCatalog()
    for item in "abcde":
        catalog.store.put(item, meta({"title": item.upper()}), T0)
    first = head(["a", "b", "c"], T0)
    first = inline_meta(first, None, catalog, page_size=3)
    # Given a re-put of a, and a new ranking where d entered the first P and c left it
    catalog.store.put("a", meta({"title": "A2"}), SOON)
    second = head(["d", "a", "b", "c"], SOON)
    # When the next run writes its head within the refresh interval
    second = inline_meta(second, first, catalog, page_size=3)
    # Then only d is asked; a keeps its previous document (stale until the refresh) and meta_at stays
    assert catalog.asked[-1] == ["d"]
    assert second.meta == {"d": {"title": "D"}, "a": {"title": "A"}, "b": {"title": "B"}}
    assert second.meta_at == T0
    # And once META_REFRESH_SECONDS have passed, a written head re-reads all P: the re-put shows
    third = head(["d", "a", "b"], LATER)
    third = inline_meta(third, second, catalog, page_size=3)
    assert catalog.asked[-1] == ["d", "a", "b"]
    assert third.meta is not None
    assert third.meta["a"] == {"title": "A2"} and third.meta_at == LATER


def test_without_a_catalog_the_head_carries_no_metadata():
    snapshot = head(["a"], T0)
    snapshot = inline_meta(snapshot, None, None, page_size=3)
    assert snapshot.meta is None and "meta" not in leaderboard_json(snapshot)["items"][0]


def big_document(n: int) -> dict:
    """A document of exactly MAX_META_BYTES as compact JSON."""
    document = {"title": f"item {n}", "note": ""}
    document["note"] = "x" * (MAX_META_BYTES - len(meta(document).encode()))
    assert len(meta(document).encode()) == MAX_META_BYTES
    return document


def stored_head(top_n: int, documents: int) -> Head:
    catalog = CountingCatalog()
    ids = [f"images/{n:05d}.jpg" for n in range(top_n)]
    for n, item in enumerate(ids[:documents]):
        catalog.store.put(item, meta(big_document(n)), T0)
    snapshot = replace(
        head(ids, T0),
        items=tuple(Row(item, 1_000_000 - n) for n, item in enumerate(ids)),
        items_read=top_n,
        threshold=1,
        shard_hits={0: top_n},
    )
    return inline_meta(snapshot, None, catalog, page_size=100)


def test_a_head_with_100_documents_of_2_kb_stays_under_the_budget_and_its_read_costs():
    # Given the first 100 of a top 100 carrying 2 KB documents each
    snapshot = stored_head(100, 100)
    # When it is stored as the board table stores it
    size = item_size(snapshot_item(snapshot))
    # Then all 100 are inline, the item is ~206 KB (under the head's budget) and a GET costs 26 read units
    # (eventually consistent: 0.5 per 4 KB)
    assert snapshot.meta is not None and len(snapshot.meta) == 100
    assert 200_000 < size < HEAD_BUDGET_BYTES
    assert read_units(size, consistent=False) == 26


def test_past_the_budget_the_lowest_ranked_entries_lose_their_inline_documents():
    # Given a head of 100 entries with 2 KB documents and a budget of 100 KB
    snapshot = stored_head(100, 100)
    assert snapshot.meta is not None
    # When the budget is applied
    fitted, left = fit(snapshot, budget=100_000)
    # Then the best-ranked entries keep theirs, in order, and the head as stored fits
    assert fitted.meta is not None
    kept = [item for item, document in fitted.meta.items() if document is not None]
    assert kept == list(snapshot.meta)[: len(kept)] and 40 < len(kept) < 50
    assert left.documents == 100 - len(kept) and not (left.spares or left.gone or left.entries)
    assert head_bytes(fitted) <= 100_000 and item_size(snapshot_item(fitted)) <= head_bytes(fitted)
    assert fit(snapshot) == (snapshot, type(left)())  # the real budget keeps all 100


def test_a_re_put_document_reaches_every_head_that_carries_it_at_once():
    from shardboard.services.republishing import put_item
    from shardboard.services.snapshots import refresh_changed
    from tests.unit.test_takedowns import World

    # Given a board whose heads (all time and the day) carry the documents of a (put) and b (never put)
    world = World(top_n=2, spare=1, board_shards=2, batch_size=3)
    board, config = world.design.board, world.config
    put_item(world.catalog, board, config, "a", meta({"title": "Old"}), at=world.moment)
    for item, count in (("a", 3), ("b", 2), ("c", 1)):
        for _ in range(count):
            world.design.view(item)
    world.design.settle(final=True)
    refresh_changed(board, config, always=world.periods(), catalog=world.catalog)
    assert all(head.meta and head.meta["a"] == {"title": "Old"} for head in world.heads().values())
    assert len(world.heads()) == len(world.periods())
    # When a's document is replaced and b gets its first one
    _, patched_a = put_item(world.catalog, board, config, "a", meta({"title": "New"}), at=world.moment)
    _, patched_b = put_item(world.catalog, board, config, "b", meta({"title": "B"}), at=world.moment)
    # Then both heads show them at once, with no run of the snapshot job in between
    assert sorted(patched_a) == sorted(patched_b) == sorted(world.periods())
    for head in world.heads().values():
        shown = {entry["id"]: entry.get("meta") for entry in leaderboard_json(head)["items"]}
        assert shown == {"a": {"title": "New"}, "b": {"title": "B"}}
    # And a put of an item in no head, or of the same document again, patches nothing
    assert put_item(world.catalog, board, config, "z", meta({"title": "Z"}), at=world.moment)[1] == []
    assert put_item(world.catalog, board, config, "a", meta({"title": "New"}), at=world.moment)[1] == []
