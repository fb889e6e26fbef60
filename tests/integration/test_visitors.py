"""Views from browsers and crawlers (issue 38, items 4 and 5), on moto with the real handler and services: a known
crawler's view counts on the reserved boards only (bots, bots:<board>), judged by a beacon's own User-Agent, by the
body's user_agent and by the library's Recorder; an ordinary browser's counts as before; a beacon without a viewer
gets an anonymous viewer id from a daily key, so a reload is a duplicate, and the id rotates with the UTC day (a
fixed clock, never the wall clock); a page from an origin the stack does not take writes nothing."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from shardboard.adapters.shards_table import DailyKeyStore
from shardboard.domain.clock import FixedClock
from shardboard.domain.validation import BadInput
from shardboard.domain.writing.visitors import AnonymousViewers, anonymous_viewer, is_crawler
from shardboard.services import recording
from tests.conftest import load_event
from tests.integration.test_http_api import call

GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)
SAFARI_PHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 "
    "Mobile/15E148 Safari/604.1"
)
NOON = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def counted(pipeline) -> dict[str, Counter[str]]:
    """Views per board and item, as the base counters hold them (a board with no views is absent)."""
    boards: dict[str, Counter[str]] = {}
    for name, _, _, board, views in pipeline.views.scan_counters_all():
        if views:
            boards.setdefault(board, Counter())[name] += views
    return boards


def beacon(body: dict, user_agent: str, source_ip: str = "203.0.113.7", origin: str | None = None) -> dict:
    """What navigator.sendBeacon(url, JSON.stringify(view)) sends: a text/plain body, the browser's own headers."""
    event = load_event("record_views_post.json")
    event["headers"] = {**event["headers"], "content-type": "text/plain;charset=UTF-8", "user-agent": user_agent}
    if origin is not None:
        event["headers"]["origin"] = origin
    event["requestContext"]["http"]["sourceIp"] = source_ip
    event["body"] = json.dumps(body)
    return event


def posted(body: dict, user_agent: str = "backend/1.0") -> dict:
    """A program's JSON POST /views (its own User-Agent is never judged)."""
    event = load_event("record_views_post.json")
    event["headers"] = {**event["headers"], "user-agent": user_agent}
    event["body"] = json.dumps(body)
    return event


@pytest.fixture
def fixed_day():
    """The API function's anonymous ids under a clock the test moves (the wall clock never decides)."""
    from shardboard.handlers import wiring

    now = [NOON]
    stores = wiring.container()
    stores.__dict__["anonymous"] = AnonymousViewers(
        DailyKeyStore(stores.dynamodb, stores.settings.shards_table), clock=lambda: now[0]
    )
    return now


def test_the_kept_list_knows_crawlers_and_not_browsers():
    assert is_crawler(GOOGLEBOT) and is_crawler(
        "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
    )
    assert not is_crawler(CHROME) and not is_crawler(SAFARI_PHONE) and not is_crawler("")
    # A headless browser is a bot, whoever drives it (a test's included)
    assert is_crawler(CHROME.replace("Chrome/", "HeadlessChrome/"))


def test_a_crawlers_beacon_counts_on_bots_only_by_its_user_agent_header(pipeline, fixed_day):
    status, _, body = call(pipeline, "record_views", beacon({"id": "a", "boards": ["cats"]}, GOOGLEBOT))
    assert status == 202 and body["boards"] == ["bots", "bots:cats"]
    assert counted(pipeline) == {"bots": Counter(a=1), "bots:cats": Counter(a=1)}


def test_a_browsers_beacon_counts_as_a_view_on_every_board_named(pipeline, fixed_day):
    status, _, body = call(pipeline, "record_views", beacon({"id": "a", "boards": ["cats"]}, CHROME))
    assert status == 202 and body["boards"] == ["global", "cats"]
    assert counted(pipeline) == {"global": Counter(a=1), "cats": Counter(a=1)}


def test_a_json_body_is_judged_by_its_user_agent_field_not_the_senders_header(pipeline):
    # Given a backend recording for a crawler, and another for a person, both sending from a crawler-like client
    call(pipeline, "record_views", posted({"id": "a", "user_agent": GOOGLEBOT}))
    call(pipeline, "record_views", posted({"id": "b", "user_agent": CHROME}, user_agent=GOOGLEBOT))
    # And a JSON body without user_agent, counted as before whatever its sender's header says
    call(pipeline, "record_views", posted({"id": "c", "count": 2}, user_agent=GOOGLEBOT))
    assert counted(pipeline) == {"bots": Counter(a=1), "global": Counter(b=1, c=2)}


def test_the_recorder_takes_a_user_agent(pipeline):
    from shardboard.client import Recorder

    with Recorder(settings=pipeline.settings, flush_interval=None) as recorder:
        recorder.record("a", boards=["dogs"], user_agent=GOOGLEBOT)
        recorder.record("b", boards=["dogs"], user_agent=SAFARI_PHONE)
        recorder.record("c")
    assert counted(pipeline) == {
        "bots": Counter(a=1),
        "bots:dogs": Counter(a=1),
        "global": Counter(b=1, c=1),
        "dogs": Counter(b=1),
    }


def test_crawler_views_reach_the_bots_board_and_never_the_global_one(pipeline, fixed_day):
    # Given crawler and browser beacons, aggregated and snapshotted
    for agent, item in ((GOOGLEBOT, "crawled"), (GOOGLEBOT, "crawled"), (CHROME, "read")):
        call(pipeline, "record_views", beacon({"id": item, "viewer": f"{agent[:20]}{item}"}, agent))
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()
    status, _, top = call(pipeline, "read_api", _get("board=global"))
    assert status == 200 and [(e["id"], e["views"]) for e in top["items"]] == [("read", 1)]
    status, _, bots = call(pipeline, "read_api", _get("board=bots"))
    assert status == 200 and [(e["id"], e["views"]) for e in bots["items"]] == [("crawled", 1)]


def _get(query: str) -> dict:
    from tests.integration.test_http_api import get

    return get("/leaderboard", query)


def test_bots_is_a_board_no_writer_may_name(pipeline):
    for board in ("bots", "bots:cats"):
        status, _, body = call(pipeline, "record_views", posted({"id": "a", "boards": [board]}))
        assert status == 400 and "reserved" in body["message"]
    assert counted(pipeline) == {}


def test_a_reload_is_a_duplicate_for_the_same_anonymous_visitor(pipeline, fixed_day):
    # Given one visitor loading the page twice, and another visitor behind the same address with another browser
    first = call(pipeline, "record_views", beacon({"id": "a"}, CHROME))
    reload = call(pipeline, "record_views", beacon({"id": "a"}, CHROME))
    other = call(pipeline, "record_views", beacon({"id": "a"}, SAFARI_PHONE))
    # Then the reload is a duplicate and the other visitor counts
    assert (first[0], first[2]["duplicate"]) == (202, False)
    assert (reload[0], reload[2]["duplicate"], reload[2]["recorded"]) == (200, True, 0)
    assert (other[0], other[2]["duplicate"]) == (202, False)
    assert counted(pipeline) == {"global": Counter(a=2)}


def test_the_anonymous_id_rotates_with_the_utc_day(pipeline, fixed_day):
    # Given a visitor counted today
    assert call(pipeline, "record_views", beacon({"id": "a"}, CHROME))[0] == 202
    # When the same visitor comes back the next UTC day
    fixed_day[0] = NOON + timedelta(days=1)
    again = call(pipeline, "record_views", beacon({"id": "a"}, CHROME))
    # Then it counts again (a new day's key, a new dedupe window)
    assert (again[0], again[2]["duplicate"]) == (202, False)
    assert counted(pipeline) == {"global": Counter(a=2)}


def test_the_daily_key_is_shared_stored_apart_from_the_views_and_expires(pipeline):
    stores = pipeline.runtime.stores()
    keys = DailyKeyStore(stores.dynamodb, stores.settings.shards_table)
    one = AnonymousViewers(keys, clock=lambda: NOON)
    other = AnonymousViewers(keys, clock=lambda: NOON + timedelta(hours=11))
    tomorrow = AnonymousViewers(keys, clock=lambda: NOON + timedelta(days=1))
    # Two containers the same day hash a visitor alike; the next day, differently
    assert one.viewer("203.0.113.7", CHROME) == other.viewer("203.0.113.7", CHROME)
    assert one.viewer("203.0.113.7", CHROME) != tomorrow.viewer("203.0.113.7", CHROME)
    # The id is the HMAC of the day's stored key: nothing of the address or user agent is readable in it
    stored = stores.dynamodb.get_item(TableName=stores.settings.shards_table, Key={"pk": {"S": "daily-key#2026-11-23"}})
    key = bytes(stored["Item"]["key"]["B"])
    assert one.viewer("203.0.113.7", CHROME) == anonymous_viewer(key, "203.0.113.7", CHROME)
    assert "203.0.113.7" not in one.viewer("203.0.113.7", CHROME)
    # Deleted by TTL a day after its day ends
    assert int(stored["Item"]["expires_at"]["N"]) == int(datetime(2026, 11, 25, tzinfo=UTC).timestamp())
    # And never in the views table
    assert not [row for row in pipeline.views.scan_counters_all() if "daily-key" in str(row)]


def test_a_site_that_opts_out_gets_no_anonymous_ids(make_pipeline):
    pipeline = make_pipeline(AnonymousViewers="false")
    assert call(pipeline, "record_views", beacon({"id": "a"}, CHROME))[2] == {
        "id": "a",
        "recorded": 1,
        "boards": ["global"],
    }
    assert call(pipeline, "record_views", beacon({"id": "a"}, CHROME))[0] == 202
    assert counted(pipeline) == {"global": Counter(a=2)}


def test_a_page_of_another_origin_is_refused_and_writes_nothing(make_pipeline):
    pipeline = make_pipeline(PublicViews="https://example.com https://www.example.com")
    status, _, body = call(pipeline, "record_views", beacon({"id": "a"}, CHROME, origin="https://evil.example"))
    assert (status, body["code"]) == (403, "origin_not_allowed")
    assert counted(pipeline) == {}
    assert call(pipeline, "record_views", beacon({"id": "a"}, CHROME, origin="https://www.example.com"))[0] == 202
    # A server's request carries no Origin: taken as before
    assert call(pipeline, "record_views", posted({"id": "b"}))[0] == 202


def test_a_user_agent_must_be_a_short_string():
    writes = recording.Admission()
    for bad in (7, "x" * 1025):
        with pytest.raises(BadInput, match="user_agent"):
            recording.accept(writes, "day", ["a"], user_agent=bad, at=datetime(2026, 11, 23, tzinfo=UTC))


def test_the_local_gateway_answers_cors_as_the_template_says(make_pipeline):
    from shardboard_tools.local.gateway import Gateway, Request

    # Given `shardboard serve`'s gateway on a stack that names no origins: any page may call it
    pipeline = make_pipeline()
    gateway = Gateway.from_template(pipeline.runtime.template)
    preflight = gateway.handle(
        Request.of("OPTIONS", "/views", {"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"})
    )
    assert preflight.status == 204 and preflight.headers["Access-Control-Allow-Origin"] == "*"
    read = gateway.handle(Request.of("GET", "/leaderboard", {"Origin": "null"}))
    assert (
        read.headers["Access-Control-Allow-Origin"] == "*" and "etag" in read.headers["Access-Control-Expose-Headers"]
    )
    # And told otherwise (PublicViews names the site): only that page's origin is answered
    named = make_pipeline(PublicViews="https://example.com")
    strict = Gateway.from_template(named.runtime.template)
    assert (
        strict.handle(Request.of("GET", "/leaderboard", {"Origin": "https://example.com"})).headers[
            "Access-Control-Allow-Origin"
        ]
        == "https://example.com"
    )
    assert (
        "Access-Control-Allow-Origin"
        not in strict.handle(Request.of("GET", "/leaderboard", {"Origin": "https://evil.example"})).headers
    )


def test_shardboard_record_takes_a_user_agent_and_boards_shows_bot_views(monkeypatch):
    from click.testing import CliRunner
    from moto import mock_aws

    from shardboard_tools.cli import main
    from shardboard_tools.template import Template

    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    for name in Template.load().function_environment():
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    with mock_aws():
        clock = FixedClock(datetime.now(UTC))  # one clock for the commands: the day cannot turn between them

        def cli(*args):
            result = runner.invoke(main, ["-p", "Periods=day", *args], obj=clock, catch_exceptions=False)
            assert result.exit_code == 0, result.output
            return result.output

        cli("init")
        # Given a crawler's views of two items, one named for cats, and a person's view
        assert "on bots, bots:cats" in cli("record", "a", "-n", "2", "--board", "cats", "--user-agent", GOOGLEBOT)
        cli("record", "b", "--user-agent", GOOGLEBOT)
        assert "on global, cats" in cli("record", "c", "--board", "cats", "--user-agent", CHROME)
        cli("process", "--drain")
        cli("snapshot")
        # Then `boards` lists the public boards with the crawlers' views that named each, per period
        listed = {row["board"]: row["bot_views"] for row in json.loads(cli("boards", "--json"))["boards"]}
        today = f"day/{clock().date().isoformat()}"
        assert listed == {"global": {"all": 3, today: 3}, "cats": {"all": 2, today: 2}}
        assert "bot views" in cli("boards")
        # And a writer may not name the reserved board
        refused = runner.invoke(main, ["record", "d", "--board", "bots"])
        assert refused.exit_code == 2 and "reserved" in refused.output


def test_behind_the_cdn_each_visitor_is_told_apart_by_the_address_the_edge_vouches_for(pipeline, fixed_day):
    # Given the record function behind the stack's CDN (its edge token), two visitors with the same browser reaching
    # it through one edge (the same peer address), and a client forging the edge's header without the token
    from dataclasses import replace

    from shardboard.handlers import wiring

    stores = wiring.container()
    stores.settings = replace(stores.settings, edge_token="stack-guid")

    def through_edge(visitor: str, token: str = "stack-guid") -> dict:  # noqa: S107
        event = beacon({"id": "a"}, CHROME, source_ip="130.176.0.1")
        event["headers"] |= {"cloudfront-viewer-address": f"{visitor}:46532", "x-shardboard-edge": token}
        return event

    one = call(pipeline, "record_views", through_edge("198.51.100.10"))
    other = call(pipeline, "record_views", through_edge("2001:db8::7"))
    reload = call(pipeline, "record_views", through_edge("198.51.100.10"))
    forged = call(pipeline, "record_views", through_edge("192.0.2.99", token="guess"))
    # Then each visitor counts once, a reload is a duplicate, and the forged header is ignored (the peer is judged)
    assert [r[2]["duplicate"] for r in (one, other, reload)] == [False, False, True]
    assert forged[2]["duplicate"] is False
    assert call(pipeline, "record_views", beacon({"id": "a"}, CHROME, source_ip="130.176.0.1"))[2]["duplicate"] is True
    assert counted(pipeline) == {"global": Counter(a=3)}
