"""A hide takes the item out of GET /rank, GET /around and GET /leaderboard?offset= at once (the ranked version's
events), and an unhide gives it back its exact rank: the real read API and items admin handlers on moto."""

from __future__ import annotations

from urllib.parse import quote

from tests.integration.test_http_api import call, get
from tests.integration.test_pages_http import around_event, leaderboard_event
from tests.integration.test_rank_http import ids, rank_event, ranked  # noqa: F401 - the fixture
from tests.integration.test_takedowns_http import takedown

# The fixture's board in order, D = 5: 001 (9), a?b and 004 tie (7), x,y (5), d (3); N = 2, no spares
DEEP = "images/004.jpg"  # position 3: in the ranked version, in no head's top N


def ranks(pipeline, *items: str) -> dict[str, dict]:
    status, _, body = call(pipeline, "read_api", rank_event(ids(*items)))
    assert status == 200, body
    return {answer["id"]: answer for answer in body["ranks"]}


def page(pipeline, query: str) -> list[tuple[str, int]]:
    status, _, body = call(pipeline, "read_api", leaderboard_event(query))
    assert status == 200, body
    return [(entry["id"], entry["rank"]) for entry in body["items"]]


def test_a_hidden_item_leaves_rank_around_and_pages_at_once_and_unhide_restores_its_exact_rank(ranked):  # noqa: F811
    before = ranks(ranked, DEEP, "x,y", "d")
    assert [before[item]["rank"] for item in (DEEP, "x,y", "d")] == [2, 4, 5]
    # When the item is hidden (no snapshot run follows)
    status, _, _ = call(ranked, "items_admin", takedown("hide", f"id={quote(DEEP, safe='')}"))
    assert status == 200
    # Then GET /rank says it is hidden, and the items below it move up
    after = ranks(ranked, DEEP, "x,y", "d")
    assert (after[DEEP]["rank"], after[DEEP]["source"]) == (None, "hidden")
    assert [after[item]["rank"] for item in ("x,y", "d")] == [3, 4]
    # And GET /around of it is a 404 naming why; its neighbours close the gap
    status, _, body = call(ranked, "read_api", around_event(f"id={quote(DEEP, safe='')}&k=1"))
    assert status == 404 and body["code"] == "not_found" and "hidden" in body["message"]
    status, _, body = call(ranked, "read_api", around_event("id=x%2Cy&k=1"))
    assert status == 200 and [entry["id"] for entry in body["items"]] == ["a?b", "x,y", "d"]
    # And pages by offset (and a walk started now) never show it
    assert page(ranked, "offset=0&limit=5") == [("images/001.jpg", 1), ("a?b", 2), ("x,y", 3), ("d", 4)]
    status, _, body = call(ranked, "read_api", get("/leaderboard"))
    walked = page(ranked, f"cursor={body['walk']}&limit=5")
    assert DEEP not in [item for item, _ in walked]
    # When it is unhidden, it is back at its exact rank, everywhere
    status, _, _ = call(ranked, "items_admin", takedown("unhide", f"id={quote(DEEP, safe='')}"))
    assert status == 200
    again = ranks(ranked, DEEP, "x,y", "d")
    assert [(again[item]["rank"], again[item]["views"]) for item in (DEEP, "x,y", "d")] == [(2, 7), (4, 5), (5, 3)]
    assert page(ranked, "offset=2&limit=3") == [(DEEP, 2), ("x,y", 4), ("d", 5)]


def test_hiding_an_item_of_the_head_patches_the_head_and_its_ranked_version_together(ranked):  # noqa: F811
    # When the second item of the head (N = 2, no spares) is hidden
    status, _, _ = call(ranked, "items_admin", takedown("hide", "id=a%3Fb"))
    assert status == 200
    # Then the head is refilled without it, and the ranked reads skip it too
    status, _, body = call(ranked, "read_api", get("/leaderboard"))
    assert status == 200 and [entry["id"] for entry in body["items"]] == ["images/001.jpg", DEEP]
    assert ranks(ranked, "a?b")["a?b"]["rank"] is None
    assert page(ranked, "offset=0&limit=4") == [("images/001.jpg", 1), (DEEP, 2), ("x,y", 3), ("d", 4)]


def test_a_deleted_item_leaves_rank_around_and_pages_at_once_for_good(ranked):  # noqa: F811
    # When an item ranked only in the ranked version is deleted (no snapshot run follows)
    status, _, body = call(ranked, "items_admin", takedown("delete", f"id={quote(DEEP, safe='')}"))
    assert status == 200 and body["status"] == "deleted"
    # Then GET /rank says it is deleted, the items below it move up, around-me and pages skip it
    after = ranks(ranked, DEEP, "x,y", "d")
    assert (after[DEEP]["rank"], after[DEEP]["source"]) == (None, "deleted")
    assert [after[item]["rank"] for item in ("x,y", "d")] == [3, 4]
    status, _, body = call(ranked, "read_api", around_event(f"id={quote(DEEP, safe='')}&k=1"))
    assert status == 404 and "deleted" in body["message"]
    assert page(ranked, "offset=0&limit=5") == [("images/001.jpg", 1), ("a?b", 2), ("x,y", 3), ("d", 4)]
    # And an unhide never brings a deleted item back
    status, _, _ = call(ranked, "items_admin", takedown("unhide", f"id={quote(DEEP, safe='')}"))
    assert status == 404
    assert ranks(ranked, DEEP)[DEEP]["rank"] is None
