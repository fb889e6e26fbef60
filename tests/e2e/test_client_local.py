"""The library (``from shardboard import Recorder``) on DynamoDB Local: flushes on exit, on size and on interval,
retries under injected throttling, viewers, a process killed with SIGKILL between (and during) flushes, and four
real processes recording at once.

Every count is checked twice: on the base table (the source of truth), and on the aggregates after the stream is
drained by ``shardboard process --drain``, as an operator would run it.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

import boto3
import pytest
from click.testing import CliRunner

from shardboard import Recorder
from shardboard.adapters.dynamodb import dynamodb_client as client
from shardboard_tools.cli import main
from shardboard_tools.testing.faults import ClientFaults, FaultRates
from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

# Generous bounds on waiting for a background thread or a child process (never a measured time).
PATIENCE_SECONDS = 60.0


def stack_of(rt):
    return rt.settings.views_table.removesuffix("-views")


def recorder(rt, **options):
    """A recorder on the test's tables (the engine's endpoint is in the environment); flushes on demand unless
    ``flush_interval`` is given."""
    return Recorder(boto3.Session(), settings=rt.settings, **{"flush_interval": None, **options})


def board_totals(rt, board):
    totals = Counter()
    for item, _, _, name, views in rt.views.scan_counters_all():
        if name == board:
            totals[item] += views
    return dict(totals)


class Drained:
    """After ``shardboard process --drain`` on the test's stack: how many stream records (base writes) it
    delivered, and every aggregate of a board (views)."""

    def __init__(self, rt):
        done = CliRunner().invoke(main, ["--stack", stack_of(rt), "process", "--drain"], catch_exceptions=False)
        assert done.exit_code == 0, done.output
        self.records = int(re.search(r"processed (\d+) records", done.output).group(1))
        self._board = rt.board

    def __call__(self, board="global"):
        return {item: views for item, (views, _) in self._board.scan_aggregates(board).items()}


def until(condition, what):
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.02)


# ------------------------------------------------------------------------------------------------ flushes
def test_close_and_the_with_block_flush_what_is_buffered(local):
    # Given views buffered in two recorders that never flush on their own
    with recorder(local) as first:
        first.record("a", count=5, boards=["cats"])
        first.record("a", count=2, boards=["cats"])
        assert local.views.scan_totals() == {}
    second = recorder(local)
    second.record("b")
    # When one leaves its with block and the other is closed
    second.close()
    # Then each wrote its buffer in one write per key, and the aggregates agree once the stream is drained
    assert (first.stats().writes, second.stats().writes) == (1, 1)
    assert local.views.scan_totals() == {"a": 7, "b": 1}
    aggregates = Drained(local)
    assert aggregates.records == 2  # one base write (one stream record) per key
    assert aggregates() == {"a": 7, "b": 1}
    assert aggregates("cats") == {"a": 7}


def test_a_full_buffer_is_flushed_at_once(local):
    # Given a recorder holding at most 3 keys, no timed flush
    r = recorder(local, max_pending=3)
    try:
        r.record("a")
        r.record("b")
        r.record("a", count=4)  # a key already held: no new key
        assert r.stats().flushes == 0
        # When the third key fills it, and a fourth waits for room
        r.record("c")
        r.record("d")  # returns once the background flush made room
        # Then the first three keys were written by that flush before the fourth was buffered (a second flush,
        # woken while the first ran, may have written it since)
        totals = local.views.scan_totals()
        assert {item: n for item, n in totals.items() if item != "d"} == {"a": 5, "b": 1, "c": 1}
        assert r.stats().flushes >= 1 and r.stats().recorded_views == 8
    finally:
        r.close()
    assert local.views.scan_totals() == {"a": 5, "b": 1, "c": 1, "d": 1}


def test_the_background_thread_flushes_every_interval(local):
    # Given a recorder flushing every 50 ms
    with recorder(local, flush_interval=0.05) as r:
        # When views are recorded and nobody calls flush()
        for _ in range(10):
            r.record("a")
        until(lambda: r.stats().pending_views == 0, "the timed flush")
        # Then they were written by the background thread
        assert r.stats().flushes >= 1 and r.stats().written_views == 10
        assert local.views.scan_totals() == {"a": 10}
        r.record("b", count=3)
        until(lambda: r.stats().pending_views == 0, "the next timed flush")
        assert local.views.scan_totals() == {"a": 10, "b": 3}


# ---------------------------------------------------------------------------------------------- throttling
def test_throttled_writes_are_retried_and_nothing_is_lost_or_doubled(local):
    # Given throttles botocore retries (answered before the request is sent, as DynamoDB's are), and throttles
    # left after its retries (the flush keeps those views for the next one)
    rng = random.Random(21)
    expected, cats = Counter(), Counter()
    views = local.settings.views_table
    with recorder(local) as r:
        # When a first flush finds every write throttled after all its retries
        r.record("t-0", count=3, boards=["cats"])
        expected["t-0"] += 3
        cats["t-0"] += 3
        down = ClientFaults(r.client, FaultRates(throttle_surfaced=1.0), random.Random(5), table=views).install()
        refused = r.flush()
        down.uninstall()
        assert (refused.views, refused.failed_views) == (0, 3)
        # ... and more views are recorded and flushed, several rounds, under both kinds of throttle
        faults = ClientFaults(
            r.client,
            FaultRates(throttle_retried=0.3, throttle_surfaced=0.3),
            random.Random(6),
            operations=frozenset({"UpdateItem"}),
            table=views,
        ).install()
        flushes = [refused]
        for _ in range(5):
            for _ in range(200):
                item, count = f"t-{rng.randrange(10)}", rng.choice((1, 2, 7))
                boards = ["cats"] if item < "t-4" else []
                r.record(item, count=count, boards=boards)
                expected[item] += count
                cats[item] += count if boards else 0
            flushes.append(r.flush())
        faults.uninstall()
        flushes.append(r.flush())
        assert r.stats().pending_views == 0
    # Then both kinds of fault happened, every view was written once, and the aggregates agree
    assert faults.injected["throttle_retried"] > 0 and faults.injected["throttle"] > 0
    assert r.stats().written_views == sum(f.views for f in flushes) == sum(expected.values())
    assert local.views.scan_totals() == dict(expected)
    assert board_totals(local, "cats") == {item: n for item, n in cats.items() if n}
    aggregates = Drained(local)
    assert aggregates() == dict(expected)
    assert aggregates("cats") == {item: n for item, n in cats.items() if n}


# ------------------------------------------------------------------------------------------- lost responses
def test_a_write_whose_response_was_lost_counts_once_whoever_retries_it(local):
    """Retry-safe writes (the default; docs/honest-counts.md, "Retried writes"): a write that landed but whose caller
    never heard it, sent again by botocore (a connection cut after forwarding, the SDK's resend) or by the next flush
    (a lost response), is refused by its counter's condition and reported written, once. A viewed view carries its
    token and is not counted twice either. ``retry_safe=False`` keeps plain ADDs, which such a retry counts twice."""
    views = local.settings.views_table
    with recorder(local) as r:
        r.record("warm")
        r.flush()  # the recorder's writer number, claimed by its first flush
        # Given writes that land but whose response is lost: the flush keeps them, the next one retries them
        lost = ClientFaults(r.client, FaultRates(lost_response=1.0), random.Random(1), table=views).install()
        r.record("a", count=3)
        r.record("b", viewer="u1")
        kept = r.flush()
        lost.uninstall()
        assert (kept.failed_views, kept.failed_writes) == (4, 2)
        retried = r.flush()
        # And writes botocore itself sends again after they landed: its at-least-once resend, a cut connection
        agains = []
        for rates, item in ((FaultRates(resent=1.0), "c"), (FaultRates(cut_after_send=1.0), "e")):
            faults = ClientFaults(r.client, rates, random.Random(2), table=views, competitor=client()).install()
            r.record(item, count=5)
            r.record(f"{item}-viewed", viewer="u1")
            agains.append(r.flush())
            faults.uninstall()
            assert sum(faults.injected.values()) == 2
    with recorder(local, retry_safe=False) as plain:
        cut = ClientFaults(
            plain.client, FaultRates(cut_after_send=1.0), random.Random(3), table=views, competitor=client()
        ).install()
        plain.record("p", count=7)
        plain.flush()
        cut.uninstall()
    # Then every retried write counted once, and only the plain one twice
    assert (retried.views, retried.replayed_writes) == (4, 1) and lost.injected["lost_response"] == 2
    assert [(f.views, f.replayed_writes, f.duplicate_views) for f in agains] == [(6, 1, 0), (6, 1, 0)]
    expected = {"warm": 1, "a": 3, "b": 1, "c": 5, "c-viewed": 1, "e": 5, "e-viewed": 1, "p": 14}
    assert local.views.scan_totals() == expected
    assert Drained(local)() == expected


# ------------------------------------------------------------------------------------------------- viewers
def test_a_viewer_counts_once_per_item_through_the_library(local):
    # Given views with viewers, some repeated, buffered with plain views of the same item, in two recorders
    with recorder(local) as one, recorder(local) as other:
        for viewer in ("u1", "u1", "u2"):
            one.record("a", viewer=viewer)
        other.record("a", viewer="u1")  # another process, the same viewer
        one.record("a", count=4)
        # When both flush
        first, second = one.flush(), other.flush()
        one.record("a", viewer="u2")  # a later flush: still the same window
        late = one.flush()
    # Then u1 and u2 counted once each, the plain views once, and the refusals wrote nothing
    assert first.duplicate_views + second.duplicate_views == 2 and late.duplicate_views == 1
    assert local.views.scan_totals() == {"a": 2 + 4}
    assert Drained(local)() == {"a": 6}


# ----------------------------------------------------------------------------------------------- kill -9
# A process that records views through a Recorder and reports, after each flush that wrote everything, the views
# written so far (an fsynced line), then buffers more views, says so, and waits to be killed. With
# "during", it instead reports the views of one more flush of some 2,000 keys and starts it.
CHILD = textwrap.dedent(
    """
    import json, os, random, sys, threading, time
    from collections import Counter
    from shardboard import Recorder

    stack, report, rounds, seed, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    rng = random.Random(seed)
    recorder = Recorder(stack=stack, flush_interval=None, workers=4)
    written = Counter()

    def say(line):
        with open(report, "a") as out:
            out.write(json.dumps(line) + "\\n")
            out.flush()
            os.fsync(out.fileno())

    def views(n, items):
        batch = Counter()
        for _ in range(n):
            item, count = f"k-{rng.randrange(items):04d}", rng.choice((1, 1, 2, 5))
            recorder.record(item, count=count, boards=["cats"] if item < "k-0004" else [])
            batch[item] += count
        return batch

    for round_ in range(rounds):
        batch = views(300, 12)
        result = recorder.flush()
        assert result.failed_views == 0 and result.views == sum(batch.values())
        written.update(batch)
        say({"flushed": round_, "written": written})
    if mode == "between":
        buffered = views(150, 12)
        say({"buffered": buffered, "pending": recorder.stats().pending_views})
    else:  # "during": a flush of some 2,000 keys, killed part way
        buffered = views(3000, 3000)
        say({"flushing": buffered})
        threading.Thread(target=recorder.flush, daemon=True).start()
    print("ready", flush=True)
    time.sleep(600)
    """
)


def killed_child(rt, tmp_path, mode, rounds=3, seed=1, *, before_kill=None):
    """Run CHILD on ``rt``'s tables, SIGKILL it once it is ready (after ``before_kill``), return its report lines."""
    script, report = tmp_path / "app.py", tmp_path / "report.jsonl"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tools"), str(ROOT)])}
    arguments = [sys.executable, str(script), stack_of(rt), str(report), str(rounds), str(seed), mode]
    child = subprocess.Popen(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        ready = child.stdout.readline()
        assert ready.strip() == "ready", child.stderr.read() if child.stderr else ""
        if before_kill:
            before_kill()
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=PATIENCE_SECONDS) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return [json.loads(line) for line in report.read_text().splitlines()]


def settled(rt):
    """The base table's totals once the requests a killed process had already sent have landed (the engine may still
    be applying them when the kill returns): two scans in a row agree."""
    last: list[dict[str, int] | None] = [None]

    def same_twice() -> bool:
        now = rt.views.scan_totals()
        stable, last[0] = now == last[0], now
        return stable

    until(same_twice, "the killed process's last writes to land")
    return Counter(last[0])


def cats_of(counts):
    return {item: n for item, n in counts.items() if item < "k-0004" and n}


def test_a_kill_between_flushes_loses_only_the_buffer_and_doubles_nothing(local, tmp_path):
    # Given a process that flushed three times, then buffered more views
    # When it is killed with SIGKILL (no atexit, no close)
    report = killed_child(local, tmp_path, "between")
    *flushes, last = report
    written = Counter(flushes[-1]["written"])
    buffered = Counter(last["buffered"])
    # Then every view of every completed flush is on the base table, exactly once, and nothing of the buffer
    assert [line["flushed"] for line in flushes] == [0, 1, 2]
    assert local.views.scan_totals() == dict(written)
    assert board_totals(local, "cats") == cats_of(written)
    # And what was lost is exactly what was buffered since the last flush
    assert sum(buffered.values()) == last["pending"] > 0
    # And after the stream is drained, every aggregate equals what the completed flushes wrote
    aggregates = Drained(local)
    assert aggregates() == dict(written)
    assert aggregates("cats") == cats_of(written)


def test_a_kill_during_a_flush_counts_each_key_whole_or_not_at_all(local, tmp_path):
    # Given a process that flushed three times, then started a flush of some 2,000 keys (4 writers)
    # When it is killed with SIGKILL while those writes are going out (once some have landed)
    def some_landed():
        until(lambda: len(local.views.scan_totals()) > 12, "the interrupted flush's first writes")

    report = killed_child(local, tmp_path, "during", before_kill=some_landed)
    *flushes, last = report
    written = Counter(flushes[-1]["written"])
    flushing = Counter(last["flushing"])
    # Then each key of the interrupted flush is counted with all of its views or none (one write per key), on
    # top of the completed flushes, exactly; nothing is doubled
    totals = settled(local)
    landed = {item for item in flushing if totals[item] - written[item] == flushing[item]}
    assert totals == written + Counter({item: flushing[item] for item in landed})
    assert 0 < len(landed) < len(flushing)  # the kill did land part way
    # And the aggregates agree once the stream is drained
    aggregates = Drained(local)
    assert aggregates() == dict(totals)
    assert aggregates("cats") == cats_of(totals)


# ------------------------------------------------------------------------------------- four real processes
WRITER = textwrap.dedent(
    """
    import json, random, sys
    from collections import Counter
    from shardboard import Recorder

    stack, seed, views = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    recorder = Recorder(stack=stack, flush_interval=0.1)  # flushed by its thread, and at exit by atexit
    names = [f"z-{k:03d}" for k in range(1, 201)]
    recorded = Counter(rng.choices(names, weights=[1 / k for k in range(1, 201)], k=views))
    for item, count in recorded.items():
        for _ in range(count):
            recorder.record(item, boards=["cats"] if item < "z-010" else [])
    stats = recorder.stats()
    print(json.dumps({"recorded": recorded, "writes_before_exit": stats.writes}))
    """
)


def test_four_processes_recording_at_once_count_every_view_once(local, tmp_path):
    # Given four application processes recording skewed views into the same tables at once, each exiting normally
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tools"), str(ROOT)])}
    children = [
        subprocess.Popen(
            [sys.executable, str(script), stack_of(local), str(seed), "3000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for seed in range(4)
    ]
    reports = []
    for child in children:
        out, err = child.communicate(timeout=PATIENCE_SECONDS * 4)
        assert child.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    # Then the base table holds every view of every process exactly once
    expected = sum((Counter(report["recorded"]) for report in reports), Counter())
    assert sum(expected.values()) == 12_000
    assert local.views.scan_totals() == dict(expected)
    cats = {item: n for item, n in expected.items() if item < "z-010"}
    assert board_totals(local, "cats") == cats
    # And the aggregates agree once the stream is drained, after far fewer base writes than views (coalesced)
    aggregates = Drained(local)
    assert aggregates() == dict(expected)
    assert aggregates("cats") == cats
    assert 0 < aggregates.records < sum(expected.values()) / 2
