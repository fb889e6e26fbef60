"""The library (``from shardboard import Recorder, Leaderboard``) on moto, tables created from template.yaml.

Every recorder here flushes on demand (an interval of an hour, explicit ``flush()``/``close()``), so no test waits on
the clock; the size threshold is observed through the back-pressure it exerts, not by sleeping.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from collections import Counter
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import boto3
import pytest
from pytest_codeblocks import extract_from_file

from shardboard import BadInput, BufferFull, Leaderboard, NoSnapshot, NotRanked, Recorder, RecorderClosed
from shardboard.domain.clock import FixedClock
from shardboard.domain.periods import bucket_of
from shardboard.settings import ConfigError, Settings
from shardboard_tools.template import Template
from shardboard_tools.testing.faults import ClientFaults, FaultRates, throttled_response
from tests.conftest import ROOT
from tests.integration.test_http_api import call, get

HOUR = 3600.0  # a flush interval no test reaches: flushes happen when a test asks


def recorder(**options):
    return Recorder(boto3.Session(), flush_interval=options.pop("flush_interval", HOUR), **options)


def count_writes(client, table):
    """UpdateItem calls the client makes on ``table`` (a botocore event hook: nothing of ours is patched)."""
    calls = Counter()

    def on_call(params, model, **_):
        if params.get("TableName") == table:
            calls[model.name] += 1

    client.meta.events.register("provide-client-params.dynamodb.UpdateItem", on_call)
    return calls


def throttle_before_sending(client, table, rate, rng):
    """Answer a share of ``table``'s UpdateItem requests with DynamoDB's throttling error before they are sent, so
    botocore's retry mode retries them with backoff; returns the count of throttles answered.

    Not ClientFaults' ``throttle_retried``: botocore calls every ``before-send`` handler, and moto's in-process
    backend is one, so on moto that fault answers "throttled" for a write moto has applied (an ADD then counts
    twice). Pointing the request where moto does not answer keeps it unsent, as DynamoDB's throttle does.
    """
    throttled = Counter()

    def before_send(request, **_):
        if json.loads(request.body or b"{}").get("TableName") == table and rng.random() < rate:
            throttled["ThrottlingException"] += 1
            url, request.url = request.url, "https://throttled.invalid/"  # moto answers nothing there
            return throttled_response(url, "ThrottlingException")
        return None

    client.meta.events.register_first("before-send.dynamodb.UpdateItem", before_send)
    return throttled


def board_totals(pipeline, board):
    """Exact views per item on ``board`` (all time), summed from every base counter."""
    totals = Counter()
    for item, _, _, name, views in pipeline.views.scan_counters_all():
        if name == board:
            totals[item] += views
    return dict(totals)


def ranked(totals):
    """The exact leaderboard of ``totals``: views desc then id, competition ranks."""
    rows, previous = [], None
    for position, (item, views) in enumerate(sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])), start=1):
        rank = previous[0] if previous and previous[1] == views else position
        rows.append((rank, item, views))
        previous = (rank, views)
    return rows


def rows(standings):
    return [(entry.rank, entry.id, entry.views) for entry in standings.items]


def process(pipeline):
    """The real aggregator on every record of the base table's stream, then the real snapshot job."""
    pipeline.aggregate(pipeline.stream_records())
    pipeline.snapshot()


# ------------------------------------------------------------------------------------------------ table names
@pytest.mark.parametrize("stack", ["shardboard", "shop-prod-2"])
def test_a_stack_names_the_tables_as_the_template_does(stack):
    deployed = Template.load(ROOT / "template.yaml", stack=stack).settings()
    library = Settings.for_stack(stack)
    assert library.views_table == f"{stack}-views"
    # the tables `shardboard --stack` reads, and the template's default parameters
    assert library == deployed


@pytest.mark.parametrize("stack", ["", "2fast", "has space", "a" * 129, None])
def test_a_stack_that_cannot_be_a_stack_name_is_refused(stack):
    with pytest.raises(ConfigError, match="stack"):
        Settings.for_stack(stack)


# ------------------------------------------------------------------------------------------------- recording
def test_a_thousand_views_of_three_items_are_three_writes(pipeline):
    with recorder() as r:
        assert r.settings.views_table == pipeline.settings.views_table
        writes = count_writes(r.client, r.settings.views_table)
        for i in range(1000):
            r.record(f"item-{i % 3}")
        result = r.flush()
        assert (result.views, result.writes, result.failed_views) == (1000, 3, 0)
        assert writes["UpdateItem"] == 1 + 3  # the recorder's writer number (once per process), three counters
        stats = r.stats()
        assert (stats.recorded_views, stats.written_views, stats.writes, stats.pending_views) == (1000, 1000, 3, 0)
    assert pipeline.truth() == {"item-0": 334, "item-1": 333, "item-2": 333}
    assert writes["UpdateItem"] == 1 + 3  # close() had nothing left to write


def test_views_coalesce_per_item_and_set_of_boards(pipeline):
    with recorder() as r:
        writes = count_writes(r.client, r.settings.views_table)
        for _ in range(10):
            r.record("a", boards=["cats", "bw"])
            r.record("a", boards=("bw", "cats", "global"))  # the same boards: the same counter write
            r.record("a", count=2)
            r.record("b", boards={"dogs"})
        r.flush()
    assert writes["UpdateItem"] == 1 + 3  # the writer number, then one write per (item, set of boards)
    assert pipeline.truth() == {"a": 40, "b": 10}
    assert board_totals(pipeline, "cats") == board_totals(pipeline, "bw") == {"a": 20}
    assert board_totals(pipeline, "dogs") == {"b": 10}


def test_recorded_views_reach_the_leaderboard_exactly(make_pipeline):
    # One clock for the recorder, the functions and the reads, fixed: "today" is the same day for each of them (a
    # day behind the wall clock's, so a part that read the wall clock instead would answer for another day)
    clock = FixedClock(datetime.now(UTC) - timedelta(days=1))
    pipeline = make_pipeline(TopN="4", CategoryTopN="3", clock=clock)
    rng = random.Random(14)
    expected: Counter[str] = Counter()
    cats: Counter[str] = Counter()
    with recorder(clock=clock) as r:
        for round_ in range(3):  # three flushes: the aggregator sees several steps of each counter
            for _ in range(400):
                item = f"img-{min(int(rng.paretovariate(1.2)), 9)}"
                count = rng.choice((1, 1, 1, 2, 5))
                boards = ["cats"] if item in ("img-2", "img-3", "img-5", "img-7") else []
                r.record(item, count=count, boards=boards)
                expected[item] += count
                if boards:
                    cats[item] += count
            assert r.flush().failed_views == 0, round_
    assert pipeline.truth() == dict(expected)
    process(pipeline)

    board = Leaderboard(boto3.Session(), clock=clock)
    top = board.top()
    assert rows(top) == ranked(expected)[:4]
    assert (top.board, top.period.kind, top.period.start) == ("global", "all", None)
    assert top.generated_at.tzinfo is not None
    assert rows(board.top(limit=2)) == ranked(expected)[:2]
    assert rows(board.top("cats")) == ranked(cats)[:3]
    today = board.top(period="day")  # the day the clock is in
    assert rows(today) == ranked(expected)[:4]  # every view is today's
    assert today.period.kind == "day"
    assert today.period.start <= clock() < today.period.end
    # What GET /leaderboard answers, from the same snapshot item
    status, _, body = call(pipeline, "read_api", get("/leaderboard"))
    assert status == 200
    assert [(e["rank"], e["id"], e["views"]) for e in body["items"]] == rows(top)
    assert body["generated_at"] == top.generated_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    # rank: exact within the ranked depth D (here every item), as GET /rank answers it; None without views
    for rank, item, _ in ranked(expected):
        assert board.rank(item) == rank
    for rank, item, _ in ranked(cats):
        assert board.rank(item, board="cats") == rank
    assert board.rank("never-viewed") is None
    ids = [row[1] for row in ranked(expected)]
    status, _, answer = call(pipeline, "read_api", get("/rank", "&".join(f"id={quote(i, safe='')}" for i in ids)))
    assert status == 200
    assert [a.as_json() for a in board.ranks(ids)] == answer["ranks"]

    # around: the k entries above and below, shifted at the bottom, as GET /around answers
    last = ranked(expected)[-1]
    near = board.around(last[1], k=1)
    assert [(e.rank, e.id, e.views) for e in near.entries] == ranked(expected)[-3:]
    assert (near.above, near.below) == (2, 0)
    status, _, answer = call(pipeline, "read_api", get("/around", f"id={quote(last[1], safe='')}&k=1"))
    assert status == 200
    assert [e.as_json() for e in near.entries] == answer["items"]
    with pytest.raises(NotRanked):
        board.around("never-viewed")


def test_flush_on_close_and_on_leaving_the_with_block(pipeline):
    with recorder() as r:
        r.record("a", count=5)
    assert r.closed
    assert pipeline.truth() == {"a": 5}
    other = recorder()
    other.record("b")
    other.close()
    other.close()  # idempotent
    assert pipeline.truth() == {"a": 5, "b": 1}
    with pytest.raises(RecorderClosed):
        other.record("b")
    assert pipeline.truth() == {"a": 5, "b": 1}


def test_reaching_max_pending_flushes_at_once(pipeline):
    r = recorder(max_pending=3)
    try:
        r.record("a")
        r.record("b")
        r.record("a")  # a key already buffered always fits
        assert r.stats().flushes == 0
        r.record("c")  # the third distinct key: the background thread flushes now, not in an hour
        r.record("d")  # a fourth key waits for that flush to make room
        assert pipeline.truth() == {"a": 2, "b": 1, "c": 1}
        assert (r.stats().flushes, r.stats().pending_views) == (1, 1)
    finally:
        r.close()
    assert pipeline.truth() == {"a": 2, "b": 1, "c": 1, "d": 1}


def test_a_flush_that_fails_keeps_its_views_and_a_full_buffer_refuses_new_keys(pipeline):
    r = recorder(max_pending=2)
    r.record("z")
    r.flush()  # the recorder's writer number is claimed by its first flush: here, before the faults
    faults = ClientFaults(
        r.client,
        FaultRates(throttle_surfaced=1.0),  # every write throttled after botocore's retries
        random.Random(3),
        operations=frozenset({"UpdateItem"}),
        table=r.settings.views_table,
    ).install()
    try:
        r.record("a")
        r.record("b", boards=["cats"])  # full: the thread flushes, every write fails
        with pytest.raises(BufferFull):
            r.record("c")  # no room after that flush: refused, not buffered
        stats = r.stats()  # (a record() that waited for room wakes the thread: it may have flushed once more)
        assert (stats.written_views, stats.pending_views) == (1, 2)
        assert stats.failed_writes >= 2
        assert faults.injected["throttle"] >= 2 * 6  # each write tried MAX_WRITE_ATTEMPTS times (with back-off)
        r.record("a", count=2)  # a key already held still fits (and the buffer, still full, wakes the thread)
        assert r.stats().recorded_views == 5
        assert pipeline.truth() == {"z": 1}
        faults.uninstall()
        r.flush()  # after the thread's flush, if one is running: every view is written once
        stats = r.stats()
        assert (stats.written_views, stats.pending_views) == (5, 0)
    finally:
        faults.uninstall()
        r.close()
    assert pipeline.truth() == {"z": 1, "a": 3, "b": 1}
    assert board_totals(pipeline, "cats") == {"b": 1}


def test_throttled_writes_are_retried_and_nothing_is_lost_or_doubled(pipeline):
    rng = random.Random(8)
    expected: Counter[str] = Counter()
    with recorder() as r:
        # throttles botocore retries with backoff, and throttles left after its retries (the domain's Throttled:
        # back-off, shard growth on a partition throttle, then the next flush)
        retried = throttle_before_sending(r.client, r.settings.views_table, 0.2, random.Random(4))
        faults = ClientFaults(
            r.client,
            FaultRates(throttle_surfaced=0.5),
            random.Random(5),
            operations=frozenset({"UpdateItem"}),
            table=r.settings.views_table,
        ).install()
        for _ in range(300):
            item = f"t-{rng.randrange(8)}"
            r.record(item, boards=["cats"] if item < "t-4" else [])
            expected[item] += 1
        flushes = [r.flush() for _ in range(8)]  # each keeps what it could not write for the next
        faults.uninstall()
        flushes.append(r.flush())
        assert r.stats().pending_views == 0
    assert sum(retried.values()) > 0
    assert faults.injected["throttle"] > 0
    assert sum(f.views for f in flushes) == 300
    assert pipeline.truth() == dict(expected)
    process(pipeline)
    assert rows(Leaderboard(boto3.Session()).top()) == ranked(expected)


@pytest.mark.parametrize(
    ("args", "options", "reason"),
    [
        (("",), {}, "must not be empty"),
        ((7,), {}, "must be a string"),
        (("a\x00b",), {}, "control character"),
        (("x" * 513,), {}, "513 bytes"),
        (("a", 0), {}, "at least 1"),
        (("a", 1001), {}, "at most 1000"),
        (("a", True), {}, "whole number"),
        (("a", 1.5), {}, "whole number"),
        (("a",), {"boards": "cats"}, "list of board names"),
        (("a",), {"boards": ["Cats"]}, "board name"),
        (("a",), {"boards": ["a#b"]}, "board name"),
        (("a",), {"boards": [f"b{i}" for i in range(9)]}, "at most 8"),
    ],
)
def test_bad_input_raises_and_buffers_nothing(pipeline, args, options, reason):
    with recorder() as r:
        r.record("ok")
        with pytest.raises(BadInput, match=reason) as raised:
            r.record(*args, **options)
        assert isinstance(raised.value, ValueError)
        assert (r.stats().recorded_views, r.stats().pending_views) == (1, 1)
    assert pipeline.truth() == {"ok": 1}


def test_viewed_views_are_not_coalesced_and_count_once_per_viewer(pipeline):
    # Given views with viewers, buffered together with plain views of the same item
    with recorder() as r:
        for viewer in ("u1", "u1", "u2", "u1"):
            r.record("a", viewer=viewer)
        r.record("a", count=5)
        r.record("a", count=5)
        result = r.flush()
        # Then each viewed view was its own transaction, the plain ones one coalesced write; u1 counted once
        assert (result.views, result.duplicate_views, result.writes) == (2 + 10, 2, 3)
        r.record("a", viewer="u2")  # a later flush: still a duplicate
        r.flush()
        assert r.stats().duplicate_views == 3
    assert pipeline.truth() == {"a": 12}


def test_a_viewed_view_whose_response_was_lost_counts_once_when_the_next_flush_retries_it(pipeline):
    with recorder() as r:
        faults = ClientFaults(r.client, FaultRates(lost_response=1.0), random.Random(1)).install()
        r.record("a", viewer="u1")
        lost = r.flush()
        faults.uninstall()
        assert (lost.failed_views, faults.injected["lost_response"]) == (1, 1)
        retried = r.flush()  # the same view, its same token: its own marker says it counted
        assert (retried.views, retried.duplicate_views) == (1, 0)
    assert pipeline.truth() == {"a": 1}


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"viewer": ""}, "1-128"),
        ({"viewer": "a\tb"}, "non-printable"),
        ({"viewer": "u", "count": 2}, "count must be 1"),
    ],
)
def test_a_bad_viewer_raises_and_buffers_nothing(pipeline, options, reason):
    with recorder() as r:
        with pytest.raises(BadInput, match=reason):
            r.record("a", **options)
        assert r.stats().pending_views == 0
    assert pipeline.truth() == {}


def test_views_count_at_the_time_the_clock_gives(pipeline):
    # Given a recorder whose clock says two different days (a simulation's virtual time, say)
    now = [datetime(2026, 3, 1, 23, 59, 59, tzinfo=UTC)]
    with recorder(clock=lambda: now[0], flush_interval=None) as r:
        # When the same item is viewed once on each, with no timed flush
        r.record("a")
        now[0] = datetime(2026, 3, 2, 0, 0, 1, tzinfo=UTC)
        r.record("a")
        assert r.stats().flushes == 0
    # Then each view counts in its own day's bucket (two keys, two writes), not in today's
    buckets = sorted(bucket for _, bucket, _, _, _ in pipeline.views.scan_counters_all())
    assert buckets == [bucket_of(r.settings.anchor, datetime(2026, 3, day, 12, tzinfo=UTC)) for day in (1, 2)]
    assert r.stats().writes == 2


def test_recorder_arguments_are_checked():
    with pytest.raises(ValueError, match="flush_interval"):
        Recorder(flush_interval=0)
    with pytest.raises(ValueError, match="max_pending"):
        Recorder(max_pending=0)


# --------------------------------------------------------------------------------------------------- reading
def test_reading_a_period_without_a_snapshot_is_no_snapshot(pipeline):
    board = Leaderboard(boto3.Session())
    with pytest.raises(NoSnapshot, match="has no views yet") as raised:
        board.top()
    assert isinstance(raised.value, LookupError)
    with recorder() as r:
        r.record("a")
    process(pipeline)
    assert rows(board.top()) == [(1, "a", 1)]
    with pytest.raises(NoSnapshot, match="day 2001-01-01"):
        board.top(period="day", at="2001-01-01")
    with pytest.raises(NoSnapshot):
        board.rank("a", board="nobody")


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({"board": "Cats"}, "board name"),
        ({"period": "year"}, "period must be one of"),
        ({"period": "hour"}, "period must be one of"),  # not among the stack's Periods
        ({"at": "yesterday"}, "ISO-8601"),
        ({"at": 17}, "datetime or an ISO-8601 string"),
        ({"limit": 0}, "limit"),
        ({"limit": "3"}, "limit"),
    ],
)
def test_bad_read_arguments_raise_bad_input(pipeline, arguments, reason):
    with pytest.raises(BadInput, match=reason):
        Leaderboard(boto3.Session()).top(**arguments)


@pytest.mark.parametrize(
    ("call_", "reason"),
    [
        (lambda b: b.ranks("abc"), "not one string"),
        (lambda b: b.ranks([]), "between 1 and 100 ids"),
        (lambda b: b.ranks(["a"] * 101), "at most 100 ids"),
        (lambda b: b.ranks(["bad\x00id"]), "id"),
        (lambda b: b.rank("a", period="year"), "period must be one of"),
        (lambda b: b.around("a", k=0), "k must be"),
        (lambda b: b.around("a", k=51), "k must be"),
        (lambda b: b.around("a", k=True), "k must be"),
        (lambda b: b.around("", k=3), "id"),
    ],
)
def test_bad_rank_and_around_arguments_raise_bad_input(pipeline, call_, reason):
    with pytest.raises(BadInput, match=reason):
        call_(Leaderboard(boto3.Session()))


def test_the_readme_example_runs_as_written(pipeline, capsys):
    with recorder() as r:
        r.record("images/006.jpg", count=9)
        r.record("images/004.jpg", count=5, boards=["cats"])
        r.record("images/001.jpg", count=2)
    process(pipeline)
    capsys.readouterr()  # the functions' metrics
    blocks = extract_from_file(ROOT / "README.md")
    example = next(b.code for b in blocks if b.syntax == "python" and "from shardboard import" in b.code)
    exec(compile(example, "README.md", "exec"), {})  # noqa: S102 - the README's own example, on moto
    # its views are flushed when its with block ends; the board it reads is the snapshot taken before them
    printed = capsys.readouterr().out.splitlines()
    top = ["1 images/006.jpg 9", "2 images/004.jpg 5", "3 images/001.jpg 2"]
    assert printed == [*top, "1", *top]  # around images/004.jpg, k=2: the whole board of three
    assert pipeline.truth() == {"images/006.jpg": 9, "images/004.jpg": 8, "images/001.jpg": 3}


# ---------------------------------------------------------------------------------------------- process exit
def test_the_buffer_is_flushed_at_interpreter_exit(tmp_path):
    """A process that records and exits without close(): atexit flushes (in the exiting thread, as no new thread
    may start then). A report registered before the recorder runs after its flush (atexit runs last-in first-out)."""
    script = tmp_path / "app.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import atexit, json
            from collections import Counter
            from datetime import UTC, datetime
            from pathlib import Path
            from moto import mock_aws

            mock_aws().start()
            from shardboard_tools.local.runtime import Runtime
            from shardboard_tools.template import create_tables
            from shardboard.adapters.stack_config import publish

            runtime = Runtime.from_template(Path({str(ROOT / "template.yaml")!r}))
            create_tables(runtime.dynamodb, runtime.template)
            settings = runtime.settings.published_variables()  # as a deploy publishes them
            when = datetime(2026, 11, 23, tzinfo=UTC)
            publish(runtime.dynamodb, runtime.settings.board_table, settings, by="test", when=when)
            table = runtime.settings.views_table

            def report():  # a plain scan: no thread pool at exit
                totals = Counter()
                for page in runtime.dynamodb.get_paginator("scan").paginate(TableName=table):
                    for item in page["Items"]:
                        if "item_id" in item:  # a counter, not the writers' registry
                            totals[item["item_id"]["S"]] += int(item["views"]["N"])
                print(json.dumps(totals, sort_keys=True))

            atexit.register(report)
            from shardboard import Recorder

            recorder = Recorder(flush_interval=3600)
            for _ in range(50):
                recorder.record("a")
                recorder.record("b", count=2, boards=["cats"])
            print("exiting with", recorder.stats().pending_views, "views buffered")
            """
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tools"), str(ROOT)]),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    command = [sys.executable, str(script)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "exiting with 150 views buffered"
    assert json.loads(lines[-1]) == {"a": 50, "b": 100}
    assert "lost" not in done.stderr


# --------------------------------------------------------------------------------------------------- RequireItems
def test_a_recorder_of_a_stack_requiring_items_refuses_ids_never_created(make_pipeline):
    from shardboard import UnknownItem

    # Given a stack deployed with RequireItems, one item created
    pipeline = make_pipeline(RequireItems="true")
    pipeline.runtime.items.put("known", "{}", "2026-11-23T17:00:00.000Z")
    with Recorder(settings=pipeline.settings, flush_interval=None) as r:
        # When views of a created and of a never created id are recorded
        r.record("known", 2)
        with pytest.raises(UnknownItem, match="'ghost' was never created"):
            r.record("ghost")
        r.flush()
    # Then only the created item's views were buffered and written
    assert pipeline.truth() == {"known": 2}
