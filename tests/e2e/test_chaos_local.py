"""On DynamoDB Local (whose conditional writes are atomic, unlike moto's): the shortened chaos runs (the slow tier,
which `make chaos` runs), concurrency, and a rebuild while traffic flows."""

from __future__ import annotations

import random
import threading
from dataclasses import replace

import pytest

from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.stream_runner import StreamRunner
from shardboard_tools.operations.recovery import RebuildProgress, rebuild
from shardboard_tools.operations.verification import verify
from shardboard_tools.testing.chaos import CHAOS_PARAMETERS, Chaos, ChaosPlan, shortened
from shardboard_tools.testing.faults import Container

pytestmark = pytest.mark.e2e


@pytest.mark.slow  # a chaos run of minutes: `make chaos`
def test_shortened_chaos_run_ends_exact_and_absorbs_the_replays_of_killed_batches(make_local, tmp_path):
    # Given the chaos board on DynamoDB Local and seed 7's fault schedule (its first round kills between writes)
    rt = make_local(**CHAOS_PARAMETERS)
    # When the shortened run's traffic flows under every fault, then the stream drains and dead letters are redriven
    report = Chaos(rt, shortened(ChaosPlan(seed=7)), tmp_path / "state", say=print).run()
    # Then every aggregate equals its base shards, nothing is negative or missing, and the snapshot is exact
    assert report.verified is not None and report.verified.differences == []
    assert report.verified.index_misses == [] and report.verified.snapshot_exact is True
    assert report.negative == [] and report.exact
    # And the batches killed between two writes were retried, their written items absorbed as replays
    assert report.faults["kill_between"] > 0 and report.totals.replays_absorbed > 0


@pytest.mark.slow  # a chaos run of minutes: `make chaos`
def test_shortened_chaos_run_under_tumbling_windows_ends_exact(make_local, tmp_path):
    # Given the chaos board with the aggregator on 2 s tumbling windows (one write per item per window)
    rt = make_local(**CHAOS_PARAMETERS)
    plan = replace(shortened(ChaosPlan(seed=3)), aggregation_window=2)
    # When every fault hits windowed invocations (retried with their state, failed windows dead-lettered whole)
    report = Chaos(rt, plan, tmp_path / "state", say=print).run()
    # Then the counts, the index and the snapshot are exact all the same
    assert report.verified is not None and report.verified.differences == []
    assert report.verified.index_misses == [] and report.verified.snapshot_exact is True
    assert report.negative == [] and report.exact
    assert report.totals.invocations > 0 and report.runner.retries > 0


@pytest.mark.slow  # a chaos run of minutes: `make chaos`
def test_chaos_with_takedowns_every_round_ends_exact_with_hidden_items_on_no_board(make_local, tmp_path):
    # Given the chaos board, and an operator hiding items of the top (unhiding some) and deleting one in every round
    rt = make_local(**CHAOS_PARAMETERS)
    plan = replace(shortened(ChaosPlan(seed=11)), takedown_chance=1.0, delete_chance=1.0)
    # When the hides race the faulty aggregator, the snapshot job and the writers
    report = Chaos(rt, plan, tmp_path / "state", say=print).run()
    # Then counts are exact (hidden items keep counting), and every snapshot of every board and period is the exact
    # top N of the visible items: no hidden item on any, none short
    assert report.takedowns["hide"] >= plan.rounds and report.takedowns["delete"] > 0
    assert report.verified is not None and report.verified.differences == []
    assert report.verified.hidden == len(rt.items.hidden()) > 0
    assert report.verified.snapshots_inexact == [] and report.exact
    assert report.verified.deleted == len(rt.items.denied()) > 0  # a deleted item counts nowhere: verify checks it
    hidden = rt.items.hidden() | rt.items.denied()
    for status in rt.board.periods():
        head = rt.board.get_snapshot(status.period, consistent=True)
        assert head is None or not {item for item, _ in head.items} & hidden, status.period


def record(rt, count, items, seed):
    rng = random.Random(seed)
    names = [f"item-{k:02d}" for k in range(items)]
    for name in rng.choices(names, weights=[1 / (k + 1) for k in range(items)], k=count):
        rt.views.add_view(name, rng.randrange(rt.settings.write_shards))


def drain(rt, handler=None):
    mapping = replace(EventSourceMapping.from_template(rt.template), batching_window_seconds=0)
    handler = handler or Container.main().handler
    return StreamRunner(rt.dynamodb, rt.streams, rt.settings.views_table, handler, mapping=mapping).drain()


def test_rebuild_while_views_and_the_stream_keep_flowing(make_local):
    # Given lost aggregates, while writers keep adding views and the runner keeps applying the stream
    rt = make_local(TopN="5", BoardShards="3", WriteShards="4")
    record(rt, 400, 30, seed=1)
    drain(rt)
    for item in rt.board.scan_aggregates():
        rt.board.delete_aggregate(item)
    stop = threading.Event()

    def traffic():
        seed = 100
        while not stop.is_set():
            seed += 1
            record(rt, 20, 10, seed)
            drain(rt)

    flowing = threading.Thread(target=traffic)
    flowing.start()
    # When a 4-segment rebuild runs in the middle of it
    try:
        rebuild(rt.views, rt.board, rt.settings, RebuildProgress.fresh(4))
    finally:
        stop.set()
        flowing.join()
    drain(rt)
    # Then, once the stream is drained, nothing is lost or double counted
    assert verify(rt.views, rt.board, rt.settings).exact


def test_two_runners_and_parallel_containers_on_one_stream(make_local):
    # Given one viral item over 8 write shards and a long tail
    rt = make_local(WriteShards="8", StreamBatchSize="20")
    record(rt, 300, 5, seed=3)
    # When two runners with their own checkpoints drain the same stream at the same time
    runners = [threading.Thread(target=drain, args=(rt, Container.fresh().handler)) for _ in range(2)]
    for thread in runners:
        thread.start()
    for thread in runners:
        thread.join()
    # Then every view is counted once
    assert verify(rt.views, rt.board, rt.settings).exact
