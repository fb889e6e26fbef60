"""The whole pipeline on DynamoDB Local: load, the event-source-mapping runner, snapshots, verify, the demo."""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from shardboard.domain.periods import ALL
from shardboard.domain.ports import PeriodKey
from shardboard.handlers import aggregate, snapshot
from shardboard_tools.cli import main
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.loadgen import LoadSpec, generate
from shardboard_tools.local.scheduler import Scheduler
from shardboard_tools.local.stream_runner import StreamRunner
from shardboard_tools.operations.verification import verify
from tests.e2e.helpers import brute_force_top
from tests.heads import pairs

pytestmark = pytest.mark.e2e
VIEWS = 1000


def test_pipeline_under_load_is_exact(make_local, tmp_path):
    # Given a board of 10 and a runner following the stream while a skewed load with a viral item is written
    rt = make_local(TopN="10", StreamBatchSize="200")
    runner = StreamRunner(
        rt.dynamodb,
        rt.streams,
        rt.settings.views_table,
        aggregate.handler,
        mapping=EventSourceMapping.from_template(rt.template),
        state_dir=tmp_path,
    )
    scheduler = Scheduler(snapshot.handler, interval=0.5).start()
    follower = threading.Thread(target=runner.run_forever, daemon=True)
    follower.start()
    # 1,000 views from 8 threads keep the runner and the snapshot job racing the writers; a long run is `make chaos`'s
    spec = LoadSpec(items=300, viral_share=0.2, concurrency=8, total_views=VIEWS, seed=3)

    # When the load runs to the end and the stream is drained
    load = generate(rt.views, spec, rt.settings.write_shards, show_progress=False)
    runner.stop()
    follower.join()
    runner.drain()
    scheduler.stop()
    scheduler.run_now()

    # Then every view was counted once, and the snapshot is the exact top N
    assert load.views == VIEWS and load.errors == 0
    assert load.write_units == pytest.approx(VIEWS)  # ReturnConsumedCapacity: one unit per small counter write
    report = verify(rt.views, rt.board, rt.settings)
    assert report.exact, report.differences[:5]
    assert report.views == VIEWS
    everything = PeriodKey(rt.settings.board, ALL, ALL)
    assert pairs(rt.board.get_snapshot(everything, consistent=True).items) == brute_force_top(rt)
    assert scheduler.runs >= 2
    assert runner.stats.dead_letter_batches == 0


def test_demo_reports_exact_on_the_session_engine(local_env, tmp_path, monkeypatch):
    # Given the engine already running (AWS_ENDPOINT_URL_DYNAMODB set: the demo starts nothing itself)
    monkeypatch.setenv("SHARDBOARD_STATE_DIR", str(tmp_path))

    # When the demo runs a short fixed workload
    result = CliRunner().invoke(
        main,
        [*("--stack", "e2e-demo", "demo", "--views", "800", "--rate", "0", "--refresh", "0.5"), "--no-live", "--json"],
        catch_exceptions=False,
    )

    # Then its report says what was written and that verify found every count exact
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{") :])
    assert report["views"] == 800
    assert report["verify_exact"] is True and report["snapshot_exact"] is True
    assert report["write_units_per_view"] == pytest.approx(1.0)
    # Each view counts on the global board and its item's category board: at most one write per board and view.
    assert 0 < report["aggregate_writes"] <= 2 * 800
    assert report["boards"] >= 2 and report["snapshots_inexact"] == 0
    assert report["refreshes"] >= 1 and report["items_read_per_refresh"] > 0
    assert report["freshness_p50_seconds"] is not None
