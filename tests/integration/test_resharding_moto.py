"""Board reshard S -> S2 on moto: every snapshot stays exact before, during and after the move."""

from __future__ import annotations

import json
import random

import pytest

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.keys import DEEP_KEY
from shardboard.domain.periods import ALL
from shardboard.domain.ports import PeriodKey
from shardboard.domain.publishing.gather import Entry, top
from shardboard.domain.writing.recording import record_views
from shardboard.services.snapshots import take_snapshot
from shardboard_tools.operations import resharding
from shardboard_tools.operations.verification import verify

ITEMS = [f"item-{k:02d}" for k in range(24)]


def load(pipeline, rng, views=60):
    """Zipf-ish views over ITEMS, then the whole stream through the real aggregator (replays are absorbed)."""
    weights = [1 / (rank + 1) for rank in range(len(ITEMS))]
    for item in rng.choices(ITEMS, weights=weights, k=views):
        record_views(pipeline.views, item, 1, pipeline.settings.write_shards, rng, where=pipeline.where())
    assert pipeline.aggregate(pipeline.stream_records()) == {"batchItemFailures": []}


def assert_snapshot_exact(pipeline, board=None):
    result = take_snapshot(board or pipeline.board, pipeline.settings)
    best = top((Entry(id=i, views=v) for i, v in pipeline.truth().items()), pipeline.settings.top_n)
    assert list(result.snapshot.items) == [(e.id, e.views) for e in best]
    return result


def old_layout(pipeline, shards):
    return pipeline.board.scan_layout(pipeline.settings.board, shards)


def test_reshard_under_load_keeps_every_snapshot_exact(make_pipeline):
    # Given a board on 3 GSI shards with a published sparse-index threshold
    pipeline = make_pipeline(TopN="5", BoardShards="3")
    settings, board, rng = pipeline.settings, pipeline.board, random.Random(11)
    load(pipeline, rng)
    assert_snapshot_exact(pipeline)
    assert old_layout(pipeline, 3)

    # When the layout switches to 5: new joins take layout-5 keys while old aggregates stay on layout 3
    report = resharding.begin(board, settings, 5)
    assert (report.previous, report.target) == (3, 5)
    load(pipeline, rng)
    result = assert_snapshot_exact(pipeline)
    assert result.gathered.rounds >= 2  # both layouts were read

    # ... half of the old layout is moved, more views arrive
    rows = old_layout(pipeline, 3)
    for pk, attribute, key, item_id in rows[: len(rows) // 2]:
        assert board.rekey(pk, attribute, key, resharding.relayout(key, item_id, 5))
    load(pipeline, rng)
    assert_snapshot_exact(pipeline)

    # ... and the rest is moved and the move finished
    resharding.rekey_pass(board, settings, report)
    assert old_layout(pipeline, 3) == []
    assert_snapshot_exact(pipeline)
    resharding.finish(board, settings, report)
    load(pipeline, rng)

    # Then snapshots read layout 5 only, stay exact, and every count matches the base table
    state = board.get_board_state(settings.board, consistent=True)
    assert (state.shards, state.previous_shards) == (5, None)
    assert_snapshot_exact(pipeline)
    assert old_layout(pipeline, 3) == []
    assert verify(pipeline.views, board, settings).exact


class MovesDuringSnapshot(BoardStore):
    """A board whose aggregates all move to the new layout right after the snapshot reads the old layout."""

    def __init__(self, inner: BoardStore, settings, report) -> None:
        super().__init__(inner.client, inner.table)
        self.settings, self.report, self.moved = settings, report, False

    def query_shard(self, kind, board_shard, limit, start):
        if not self.moved and board_shard.startswith(f"{self.settings.board}#{self.report.target}#"):
            self.moved = True
            resharding.rekey_pass(self, self.settings, self.report)
        return super().query_shard(kind, board_shard, limit, start)


def test_items_moving_between_the_two_layout_reads_are_counted_once(make_pipeline):
    # Given a move from 2 to 4 board shards that has not re-keyed anything yet
    pipeline = make_pipeline(TopN="4", BoardShards="2", SparseIndex="false")
    load(pipeline, random.Random(3), views=80)
    report = resharding.begin(pipeline.board, pipeline.settings, 4)
    racing = MovesDuringSnapshot(pipeline.board, pipeline.settings, report)
    # When every aggregate moves between the snapshot's read of layout 2 and its read of layout 4
    result = assert_snapshot_exact(pipeline, racing)
    # Then the snapshot is exact (each mover seen in both layouts, counted once)
    assert racing.moved and report.moved > 0
    assert len({item for item, _ in result.snapshot.items}) == pipeline.settings.top_n


def test_reshard_resumes_and_refuses_a_second_move(make_pipeline):
    pipeline = make_pipeline(TopN="3", BoardShards="2", SparseIndex="false")
    settings, board = pipeline.settings, pipeline.board
    load(pipeline, random.Random(5), views=30)
    resharding.begin(board, settings, 3)
    # A different target while 2 -> 3 is in progress is refused
    with pytest.raises(resharding.ReshardConflict):
        resharding.begin(board, settings, 6)
    # Running the same reshard again resumes and finishes it
    waited = []
    report = resharding.reshard(board, settings, 3, grace_seconds=7, sleep=waited.append)
    assert report.resumed and report.finished and report.moved > 0 and waited == [7]
    assert resharding.reshard(board, settings, 3, grace_seconds=7, sleep=waited.append).finished
    assert waited == [7]  # already at 3: nothing to wait for
    assert_snapshot_exact(pipeline)
    assert verify(pipeline.views, board, settings).exact


def test_reshard_and_shards_commands(monkeypatch):
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

        def cli(*args):
            result = runner.invoke(main, ["-p", "BoardShards=2", *args], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            return result.output

        cli("init")
        for item in ("a", "b", "c", "d"):
            cli("record", item, "-n", str(ord(item)), "--board", "cats")
        cli("process", "--drain")
        cli("snapshot")
        # When the board moves from 2 to 3 GSI shards
        output = cli("reshard", "--gsi-shards", "3", "--grace-seconds", "0", "--json")
        # Then every index key moved (4 items x the all-time, day, week and month indexes), the snapshot is unchanged
        # and exact, and no item needed more write shards
        report = json.loads(output.splitlines()[-1])
        assert (report["previous"], report["target"], report["finished"]) == (2, 3, True)
        assert report["moved"] == 4 * 4
        assert "(0 written" in cli("snapshot")  # every period's snapshot unchanged
        assert json.loads(cli("verify", "--json"))["exact"] is True
        assert json.loads(cli("shards", "--json")) == []
        # And a category board moves on its own: only its layout changes, its leaderboard stays the same and exact
        before = json.loads(cli("top", "--board", "cats", "--json"))["items"]
        output = cli("reshard", "--board", "cats", "--gsi-shards", "5", "--grace-seconds", "0", "--json")
        moved = json.loads(output.splitlines()[-1])
        assert (moved["previous"], moved["target"], moved["moved"]) == (2, 5, 4 * 4)
        layouts = {b["board"]: b["gsi_shards"] for b in json.loads(cli("boards", "--json"))["boards"]}
        assert layouts == {"global": 3, "cats": 5}
        cli("record", "e", "-n", "200", "--board", "cats")
        cli("process", "--drain")
        cli("snapshot")
        after = json.loads(cli("top", "--board", "cats", "--json"))["items"]
        moved_down = [{**one, "rank": one["rank"] + 1, "previous_rank": one["rank"]} for one in before]
        assert after[0]["id"] == "e" and after[0]["previous_rank"] is None and after[1:] == moved_down
        assert json.loads(cli("verify", "--json"))["exact"] is True
        refused = runner.invoke(main, ["reshard", "--board", "Cats!", "--gsi-shards", "2"])
        assert refused.exit_code == 2 and len(refused.output.strip().splitlines()) == 1


def exact_version(pipeline, now):
    """A ranked version written at ``now`` (one is due): its entries are the top D of the base table's truth."""
    settings = pipeline.settings
    block = take_snapshot(pipeline.board, settings, now).snapshot.rank
    assert block is not None and block.generated_at == now
    period = PeriodKey(settings.board, ALL, ALL)
    pages = pipeline.board.get_rank_pages(period, block.rv, range(len(block.pages)))
    stored = [entry for page in sorted(pages) for entry in pages[page]]
    best = top((Entry(id=i, views=v) for i, v in pipeline.truth().items()), settings.rank_depth_of(settings.board))
    assert stored == [(e.id, e.views) for e in best]


def test_deep_keys_move_with_the_layout_and_ranked_versions_stay_exact(make_pipeline):
    # Given the all-time deep tier (D = 12 > N = 2) on 3 GSI shards, with T and T_D published
    pipeline = make_pipeline(TopN="2", BoardShards="3", RankDepth="12", SnapshotSpare="0")
    settings, board, rng = pipeline.settings, pipeline.board, random.Random(7)
    load(pipeline, rng, views=40)
    exact_version(pipeline, "2026-11-24T06:00:00.000Z")
    load(pipeline, rng, views=150)
    assert DEEP_KEY in {attribute for _, attribute, _, _ in old_layout(pipeline, 3)}
    # When the layout switches to 5 while views arrive, and the old layout's keys (deep keys too) are moved
    report = resharding.begin(board, settings, 5)
    load(pipeline, rng, views=60)
    exact_version(pipeline, "2026-11-24T06:01:10.000Z")  # both layouts' deep shards are read
    resharding.rekey_pass(board, settings, report)
    assert old_layout(pipeline, 3) == []
    resharding.finish(board, settings, report)
    load(pipeline, rng, views=60)
    # Then every ranked version is exact, and the counts match the base table
    exact_version(pipeline, "2026-11-24T06:02:20.000Z")
    assert verify(pipeline.views, board, settings).exact


def test_the_grace_wait_ends_once_nothing_can_be_in_flight():
    slept: list[float] = []
    answers = iter([False, False, True])
    # Settled after two polls: two steps of the poll, not the whole grace
    assert resharding.wait_for_batches(121, lambda: next(answers), slept.append, 1.0) == 2
    assert slept == [1.0, 1.0]
    # Never settled (a deployed stack's Lambda may run a batch): the whole grace, in steps
    slept.clear()
    assert resharding.wait_for_batches(2.5, lambda: False, slept.append, 1.0) == 2.5
    assert slept == [1.0, 1.0, 0.5]


def test_reshard_waits_only_while_the_local_runner_has_records_to_handle(monkeypatch):
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

        def cli(*args):
            result = runner.invoke(main, ["-p", "BoardShards=2", *args], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            return result.output

        # Given a 12-item board whose stream the local runner has handled
        cli("init")
        for k in range(12):
            cli("record", f"item-{k}", "-n", str(k + 1))
        cli("process", "--drain")
        # When it is resharded with the default grace (the aggregator's timeout and batching window, 121 s)
        report = json.loads(cli("reshard", "--gsi-shards", "3", "--json").splitlines()[-1])
        # Then no batch can be in flight, so it does not wait
        assert report["finished"] and report["moved"] > 0 and report["waited"] == 0
        # But with records the runner has not handled yet (a batch may be running), it waits the whole grace
        cli("record", "item-0", "-n", "5")
        report = json.loads(cli("reshard", "--gsi-shards", "4", "--grace-seconds", "1", "--json").splitlines()[-1])
        assert report["finished"] and report["waited"] == 1
        cli("process", "--drain")
        assert json.loads(cli("verify", "--json"))["exact"] is True
