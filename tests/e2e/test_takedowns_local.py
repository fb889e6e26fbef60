"""Hide, unhide and delete on DynamoDB Local through the admin function: every head (all time, day, week, month)
patched at once, and the time from the request to the last head patched (for a delete, to the last count erased),
printed (docs: the issue asks for <= 1 s; this test measures and reports it, it does not assert a time)."""

from __future__ import annotations

import copy
import json
import random
import time
from urllib.parse import quote

import pytest

from shardboard.domain.periods import ALL
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.head import RankEvent
from shardboard.domain.publishing.snapshot import period_at
from shardboard.domain.reading.ranks import lookup_ranks
from shardboard.domain.writing.recording import Where, record_views
from shardboard.handlers import aggregate, items_admin, snapshot
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.scheduler import scheduled_event
from shardboard_tools.local.stream_runner import StreamRunner
from tests.conftest import load_event
from tests.heads import pairs
from tests.integration.test_items_http import with_query

pytestmark = pytest.mark.e2e


def test_hide_patches_every_head_at_once_and_unhide_restores_it(make_local, tmp_path):
    # Given a board of 100 (32 spares) over 400 items with skewed views, drained and snapshotted
    rt = make_local(TopN="100", SnapshotSpare="32")
    rng = random.Random(4)
    counts = {f"img/{n:03d}": 1 + 900 // (n + 1) for n in range(400)}
    where = Where.of(rt.settings.anchor, at=rt.clock())
    for item, views in counts.items():
        record_views(rt.views, item, views, rt.settings.write_shards, rng, where=where)
    runner = StreamRunner(
        rt.dynamodb,
        rt.streams,
        rt.settings.views_table,
        aggregate.handler,
        mapping=EventSourceMapping.from_template(rt.template),
        state_dir=tmp_path,
    )
    runner.drain()
    rt.invoke(snapshot.handler, scheduled_event())
    board = rt.settings.board
    periods = [PeriodKey(board, ALL, ALL), *(period_at(board, kind, rt.clock()) for kind in rt.settings.periods)]
    leader = "img/000"
    assert all(rt.board.get_snapshot(p).items[0].id == leader for p in periods)

    # When the leader is hidden through the admin function
    event = with_query(copy.deepcopy(load_event("items_admin_hide.json")), f"id={quote(leader, safe='')}&reason=e2e")
    started = time.perf_counter()
    response = rt.invoke(items_admin.handler, event)
    hide_seconds = time.perf_counter() - started

    # Then, when it answers, every head has been patched: the leader gone, a full N, the next best in order
    assert response["statusCode"] == 200, response["body"]
    visible = sorted(((i, v) for i, v in counts.items() if i != leader), key=lambda p: (-p[1], p[0]))
    for period in periods:
        head = rt.board.get_snapshot(period, consistent=True)
        assert list(head.items) == visible[:100]
        # and its ranked version (D = RankDepth) recorded the hide in the same put: GET /rank says so, ranks rise
        assert head.rank.events == (RankEvent("hide", leader, 1),)
        deep, views = visible[150]
        answers = lookup_ranks(rt.board, rt.settings.policy, period, head, [leader, deep], catalog=rt.items)
        expected = 1 + sum(1 for _, other in visible if other > views)  # competition rank among the visible
        assert [(a.rank, a.source) for a in answers] == [(None, "hidden"), (expected, "ranked")]
    print(f"\nhide -> {len(periods)} heads patched in {hide_seconds * 1000:.0f} ms (DynamoDB Local, N=100, R=32)")

    # And unhide gathers them again with its exact count
    event = with_query(copy.deepcopy(load_event("items_admin_unhide.json")), f"id={quote(leader, safe='')}")
    started = time.perf_counter()
    response = rt.invoke(items_admin.handler, event)
    unhide_seconds = time.perf_counter() - started
    assert response["statusCode"] == 200, response["body"]
    for period in periods:
        assert rt.board.get_snapshot(period, consistent=True).items[0] == (leader, counts[leader])
    print(f"unhide -> {len(periods)} heads gathered again in {unhide_seconds * 1000:.0f} ms")

    # When the next best is deleted through the admin function
    second = visible[0][0]
    event = with_query(copy.deepcopy(load_event("items_admin_delete.json")), f"id={quote(second, safe='')}&reason=e2e")
    started = time.perf_counter()
    response = rt.invoke(items_admin.handler, event)
    delete_seconds = time.perf_counter() - started
    # Then every head was patched, its aggregate is gone, and later counters of it are never counted
    assert response["statusCode"] == 200, response["body"]
    assert json.loads(response["body"])["erased"] == 1
    rest = [[i, v] for i, v in counts.items() if i != second]
    rest.sort(key=lambda pair: (-pair[1], pair[0]))
    for period in periods:
        assert pairs(rt.board.get_snapshot(period, consistent=True).items) == rest[:100]
    assert rt.board.aggregate_views(second) is None
    print(f"delete -> {len(periods)} heads patched and its counts erased in {delete_seconds * 1000:.0f} ms")
    record_views(rt.views, second, 5, rt.settings.write_shards, rng, where=where)
    runner.drain()
    assert rt.board.aggregate_views(second) is None
