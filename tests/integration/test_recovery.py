"""Rebuild and redrive on moto: wiped aggregates restored exactly, resumable, safe while traffic flows and twice."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import date, timedelta

import pytest
from click.testing import CliRunner

from shardboard.adapters.keys import view_pk
from shardboard.adapters.shards_table import ShardMetadataStore
from shardboard.domain.writing.recording import record_views
from shardboard.services.takedowns import delete
from shardboard_tools.cli import main
from shardboard_tools.lambda_model.mapping import EventSourceMapping
from shardboard_tools.local.stream_runner import StreamRunner
from shardboard_tools.operations.recovery import RebuildProgress, rebuild
from shardboard_tools.operations.verification import verify
from shardboard_tools.testing.faults import Container


class Interrupted(Exception):
    """The rebuild process stopped (Ctrl-C, a deploy, a lost laptop lid)."""


def record_workload(pipeline, items=30, views=400, seed=11):
    rng = random.Random(seed)
    names = [f"item-{k:02d}" for k in range(items)]
    for name in rng.choices(names, weights=[1 / (k + 1) for k in range(items)], k=views):
        record_views(pipeline.views, name, 1, pipeline.settings.write_shards, rng, where=pipeline.where())


def drain(pipeline):
    mapping = replace(EventSourceMapping.from_template(pipeline.runtime.template), batching_window_seconds=0)
    rt = pipeline.runtime
    handler = Container.main().handler
    StreamRunner(rt.dynamodb, rt.streams, pipeline.settings.views_table, handler, mapping=mapping).drain()


def wipe(pipeline):
    for item in pipeline.board.scan_aggregates():
        pipeline.board.delete_aggregate(item)


def report(pipeline):
    return verify(pipeline.views, pipeline.board, pipeline.settings)


@pytest.fixture
def board(make_pipeline):
    # D = N and two spares: the published T is the 7th best (snapshot.index_threshold), so 30 items leave a long tail
    pipeline = make_pipeline(TopN="5", BoardShards="3", WriteShards="4", RankDepth="5", SnapshotSpare="2")
    record_workload(pipeline)
    drain(pipeline)
    pipeline.snapshot()
    return pipeline


def test_rebuild_after_the_aggregates_are_wiped_restores_the_exact_state(board):
    # Given a board whose aggregates were all lost (the threshold and snapshot items survive)
    before = board.board.scan_aggregates()
    wipe(board)
    lost = report(board).differences
    assert {d.item_id for d in lost} == set(before) and {d.found for d in lost} == {None}
    assert len(lost) == len(before) * (1 + len(board.settings.periods))  # all time, today, this week, this month
    # When it is rebuilt from the base table (one segment: moto serializes nothing, so no concurrent repairs here)
    progress = rebuild(board.views, board.board, board.settings, RebuildProgress.fresh(1))
    # Then every aggregate is back, in the index exactly when it reaches the published threshold; snapshot exact
    assert progress.finished and progress.views_added == sum(board.truth().values())
    assert report(board).exact
    threshold = board.board.get_threshold("global")
    assert threshold > 0
    assert board.board.scan_aggregates() == {item: (views, views >= threshold) for item, (views, _) in before.items()}
    board.snapshot()
    assert report(board).snapshot_exact is True
    # And a second run changes nothing
    again = rebuild(board.views, board.board, board.settings, RebuildProgress.fresh(2))
    assert again.views_added == 0 and again.index_joins == 0


def test_an_interrupted_rebuild_is_finished_by_running_it_again(board):
    # Given a rebuild of wiped aggregates that is stopped after its second repair
    truth = board.truth()
    wipe(board)

    def stop_after_two(progress):
        if progress.items_repaired == 2:
            raise Interrupted

    first = RebuildProgress.fresh(1)
    with pytest.raises(Interrupted):
        rebuild(board.views, board.board, board.settings, first, on_page=stop_after_two)
    # Then it stopped there (a repair already running when it stopped finishes): the rest is still missing
    assert 2 <= first.items_repaired < len(truth) and not first.finished
    assert len({d.item_id for d in report(board).differences}) == len(truth) - first.items_repaired
    # When it is run again from the start (a rebuild is idempotent)
    again = rebuild(board.views, board.board, board.settings, RebuildProgress.fresh(1))
    # Then it adds exactly the views the first run did not, and the state is exact
    assert again.finished and first.views_added + again.views_added == sum(truth.values())
    assert report(board).exact


def test_an_aggregate_ahead_of_its_counters_is_reported_not_lowered(board):
    # Given an aggregate that claims more than its counters hold (a base table restored from an older backup)
    item = next(iter(board.truth()))
    state = board.board.state("global", item)
    shard, applied = next(iter(state.applied.items()))
    from shardboard.domain.aggregating.batch import ShardMove

    periods = board.settings.periods
    ahead = ShardMove(shard, applied, applied + 5)
    assert board.board.move("global", item, state.bucket, [ahead], kinds=periods, joins={}).applied
    # When rebuilt
    progress = rebuild(board.views, board.board, board.settings, RebuildProgress.fresh(2))
    # Then it is named (rebuild never lowers a count while traffic may flow)
    assert progress.ahead == [f"global {item}"]
    differences = report(board).differences
    assert {d.item_id for d in differences} == {item} and len(differences) == 1 + len(periods)


@pytest.fixture
def cli(board, monkeypatch):
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    runner = CliRunner()
    params = ["-p", "TopN=5", "-p", "BoardShards=3", "-p", "WriteShards=4"]
    return lambda *args: runner.invoke(main, [*params, *args], catch_exceptions=False)


def test_verify_json_lists_every_difference_and_the_rebuild_command_fixes_them(board, cli):
    # Given 30 lost aggregates
    truth = board.truth()
    wipe(board)
    # When verify --json runs, every one is listed with what was expected and found
    result = cli("verify", "--json")
    listed = [d for d in json.loads(result.stdout)["differences"] if d["period"] == "all"]
    assert result.exit_code == 1
    assert sorted((d["item_id"], d["expected"], d["found"]) for d in listed) == sorted(
        (item, views, None) for item, views in truth.items()
    )
    # And `shardboard rebuild` restores them; verify agrees
    rebuilt = cli("rebuild", "--segments", "1")  # moto does not serialize concurrent conditional writes
    assert rebuilt.exit_code == 0 and f"{sum(truth.values())} views restored" in " ".join(rebuilt.output.split())
    assert cli("verify").exit_code == 0


def test_redrive_without_failed_batches_says_so(board, cli):
    result = cli("redrive")
    assert result.exit_code == 0 and "nothing to redrive" in result.output


def test_redrive_repairs_a_record_lost_on_a_write_shard_above_write_shards(make_pipeline, tmp_path):
    from shardboard.domain.writing.dynamic_sharding import readable_shards
    from shardboard_tools.local.stream_runner import read_dead_letters
    from shardboard_tools.operations.recovery import redrive
    from shardboard_tools.testing.faults import FaultyFunction, FunctionFaults

    # Given an item grown by dynamic sharding past WriteShards=2: 3 views on shard 0, then 2 on shard 6 and 2 on 7
    pipeline = make_pipeline(WriteShards="2", MaxWriteShards="8")
    store = ShardMetadataStore(pipeline.runtime.dynamodb, pipeline.settings.shards_table)
    assert store.change_count("viral", None, 8, 1_000, cooldown_seconds=5, default=2) is not None
    for shard in (0, 0, 0, 6, 7, 6, 7):
        pipeline.views.add_view("viral", shard, 1, pipeline.bucket())
    # And an aggregator that can never process the records of shards 6 and 7 (no applied_6 or applied_7 anywhere)
    function = FaultyFunction(Container.main(), FunctionFaults(), random.Random(1))
    lost = {view_pk("viral", 6, pipeline.bucket()), view_pk("viral", 7, pipeline.bucket())}
    function.poisoned.update(
        r["dynamodb"]["SequenceNumber"] for r in pipeline.stream_records() if r["dynamodb"]["Keys"]["pk"]["S"] in lost
    )

    mapping = replace(
        EventSourceMapping.from_template(pipeline.runtime.template),
        batching_window_seconds=0,
        batch_size=1,
        max_retry_attempts=0,
    )
    rt = pipeline.runtime
    runner = StreamRunner(
        rt.dynamodb, rt.streams, pipeline.settings.views_table, function, mapping=mapping, state_dir=tmp_path / "state"
    )
    runner.drain()
    letters = read_dead_letters(tmp_path / "state")
    assert len(letters) == 4 and pipeline.board.aggregate_views("viral") == 3
    # When the failure destination's batches are redriven
    results = redrive(pipeline.views, pipeline.board, rt.streams, pipeline.settings, letters)
    # Then the 4 views of shards 6 and 7 (in different batches) are restored exactly; a second redrive adds nothing
    assert [r.views_added for r in results] == [4, 0, 0, 0]
    assert pipeline.board.aggregate_views("viral") == 7
    assert pipeline.views.item_total("viral", readable_shards(store.get("viral", consistent=True), 2)) == 7
    again = redrive(pipeline.views, pipeline.board, rt.streams, pipeline.settings, letters)
    assert sum(r.views_added for r in again) == 0 and pipeline.board.aggregate_views("viral") == 7


def test_a_lost_aggregate_the_stream_recreated_gets_its_surviving_history_back(make_pipeline):
    # Given an item viewed on three days: the two past ones are archived in entries, today's in the aggregate
    pipeline = make_pipeline(WriteShards="2")
    today = pipeline.bucket()
    days = [(date.fromisoformat(today) - timedelta(days=back)).isoformat() for back in (2, 1, 0)]
    for views, day in zip((10, 20, 30), days, strict=True):
        pipeline.views.add_view("x", 0, views, day)
        drain(pipeline)
    # When the aggregate is lost, the stream recreates it from today's next view (it knows nothing older) and a late
    # view of yesterday moves yesterday's entry and the recreated aggregate together
    wipe(pipeline)
    delivered = len(pipeline.stream_records())
    pipeline.views.add_view("x", 1, 5, today)
    pipeline.views.add_view("x", 1, 2, days[1])
    assert pipeline.aggregate(pipeline.stream_records()[delivered:]) == {"batchItemFailures": []}
    assert pipeline.board.aggregate_views("x") == 5 + 2
    # Then rebuild catches today's other counter up and adds back exactly the views of the surviving entries
    progress = rebuild(pipeline.views, pipeline.board, pipeline.settings, RebuildProgress.fresh(1))
    assert progress.aggregates_rebuilt == 1 and progress.views_added == 30 + (10 + 20)
    assert pipeline.board.aggregate_views("x") == 67 == pipeline.truth()["x"]
    assert report(pipeline).exact  # every period: all time, each day, this week and this month
    # And a second run finds nothing to add
    again = rebuild(pipeline.views, pipeline.board, pipeline.settings, RebuildProgress.fresh(1))
    assert again.views_added == 0 and again.aggregates_rebuilt == 0


def test_rebuild_leaves_deleted_items_out_and_erases_one_deleted_while_it_repaired(board):
    # Given a board whose aggregates were lost, one item deleted before the rebuild and one deleted while it runs
    # (after the rebuild read the deny sets: the delete erases, then the rebuild repairs the item back)
    items = board.runtime.items
    first, second, *_ = sorted(board.board.scan_aggregates())
    delete(items, board.board, board.settings, first, by="t", reason="gdpr", at=board.runtime.clock())
    for item in board.board.scan_aggregates():
        if item != second:  # (a delete needs the item's views: the second keeps its aggregate)
            board.board.delete_aggregate(item)
    tombstoned: list[str] = []

    def denied_during(consistent: bool) -> frozenset[str]:
        if not consistent and not tombstoned:  # the rebuild's first read: the second delete lands right after it
            tombstoned.append(second)
            found = items.denied(consistent)
            delete(items, board.board, board.settings, second, by="t", reason="gdpr", at=board.runtime.clock())
            return found
        return items.denied(consistent)

    # When it is rebuilt from the base table
    rebuild(board.views, board.board, board.settings, RebuildProgress.fresh(1), denied=denied_during)
    # Then neither deleted item has an aggregate (the second was repaired, then erased), and every other count is
    # exact: verify leaves deleted ids out of the truth
    left = board.board.scan_aggregates()
    assert first not in left and second not in left
    assert verify(board.views, board.board, board.settings, items.hidden(), items.denied()).exact
