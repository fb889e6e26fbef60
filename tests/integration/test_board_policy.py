"""The Boards policy on moto (tables from template.yaml), through every way a view comes in: POST /views (the real
handler), the library's Recorder, the CLI's record and import. A board the policy refuses is a clean refusal that
writes nothing; the boards it allows count exactly; a stack's boards from before the policy keep working."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import boto3
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws

from shardboard import BadInput, Recorder
from shardboard.adapters.keys import BOARD_COUNTER_PREFIX, ITEM_ID, PK, VIEWS, threshold_pk
from shardboard.domain.boards import DEFAULT_MAX_BOARDS, ITEM_SIZE_LIMIT, BoardNotAllowed, BoardPolicy
from shardboard.domain.writing.recording import Where, record_views
from shardboard.handlers import wiring
from shardboard_tools.capacity.units import item_size
from shardboard_tools.cli import main
from tests.conftest import examples, load_event


def post(pipeline, body):
    """POST /views through the real handler: (status, answer)."""
    from shardboard.handlers import record_views as handler

    event = load_event("record_views_post.json")
    event["body"] = json.dumps(body)
    response = pipeline.runtime.invoke(handler.handler, event)
    return response["statusCode"], json.loads(response["body"])


def scan(pipeline, table):
    client = pipeline.runtime.dynamodb
    items, kwargs = [], {"TableName": table, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def written(pipeline):
    """Everything a view could write: the base table, the board registry (shards table) and the board table."""
    s = pipeline.settings
    return {table: scan(pipeline, table) for table in (s.views_table, s.shards_table, s.board_table)}


def counter_totals(pipeline):
    """Per board (``global`` for ``views``), the views the base table's counters hold."""
    totals = Counter()
    for item in scan(pipeline, pipeline.settings.views_table):
        if ITEM_ID not in item:
            continue
        for name, value in item.items():
            if name == VIEWS:
                totals["global"] += int(value["N"])
            elif name.startswith(BOARD_COUNTER_PREFIX):
                totals[name.removeprefix(BOARD_COUNTER_PREFIX)] += int(value["N"])
    return totals


def registry(pipeline):
    return wiring.container().boards.registry.scan()


# ---------------------------------------------------------------------------------------------- the defect corpus
def test_more_new_boards_than_the_cap_on_one_item_are_refused_past_the_cap_and_the_counter_stays_bounded(make_pipeline):
    # Given a stack capped at 96 boards and one write shard, so every view of an item lands on ONE base counter item
    # (the defect: each new board grew it until it passed 400 KB and every later view got 500). The default cap works
    # alike, 1,000 boards; its bound is checked below, its run was the slow part (moto copies the item per write)
    cap = 96
    pipeline = make_pipeline(WriteShards="1", MaxWriteShards="1", Boards=f"max={cap}")
    names = [f"corpus-{n:04d}-" + "x" * 52 for n in range(cap + 40)]  # 64-character names
    # The first `cap` registered 24 at a time, as if by earlier writers
    registry_store = wiring.container().boards.registry
    for start in range(0, cap, 24):
        assert registry_store.register(names[start : start + 24], cap)
    # When a writer names 136 distinct boards on one item, 8 per request
    answers = [post(pipeline, {"id": "corpus", "boards": names[n : n + 8]}) for n in range(0, len(names), 8)]
    statuses = Counter(status for status, _ in answers)
    # Then the first 96 boards count (12 requests) and every later request is refused cleanly: no 5xx
    assert statuses == {202: 12, 422: 5}
    assert [status for status, _ in answers[:12]] == [202] * 12
    refusal = answers[-1][1]
    assert set(refusal) == {"message", "code"} and refusal["code"] == "board_not_allowed"
    assert f"past this stack's maximum of {cap} (Boards max={cap})" in refusal["message"]
    # And the counter item holds exactly the boards taken, within the stated bound, as the default cap's bound is
    # far below the item size limit
    (counter,) = [item for item in scan(pipeline, pipeline.settings.views_table) if ITEM_ID in item]
    boards = [name for name in counter if name.startswith(BOARD_COUNTER_PREFIX)]
    assert len(boards) == cap and counter[VIEWS] == {"N": "12"}
    assert item_size(counter) <= BoardPolicy(cap).largest_counter_bytes
    assert BoardPolicy().max_boards == DEFAULT_MAX_BOARDS and BoardPolicy().largest_counter_bytes < ITEM_SIZE_LIMIT / 4
    # And the registry counts the cap, and the boards taken keep working, as does a view naming no board
    assert len(registry(pipeline)) == cap
    assert post(pipeline, {"id": "corpus", "boards": names[:1]})[0] == 202
    assert post(pipeline, {"id": "corpus"})[0] == 202
    assert counter_totals(pipeline)["global"] == 14


# ------------------------------------------------------------------------------------------ any sequence of views
NAMES = ["a", "b", "c", "tag:x", "tag:y", "old"]
POLICIES = [BoardPolicy(0), BoardPolicy(2), BoardPolicy(3, "a|b|tag:*|old"), BoardPolicy(DEFAULT_MAX_BOARDS, "tag:*")]


class Model:
    """The policy, plainly: a view is accepted iff its boards match the pattern and its new boards fit under the cap
    (all or none) or, past the cap, are all boards that held views before the policy ("old")."""

    def __init__(self, policy):
        self.policy, self.registered, self.totals = policy, set(), Counter()

    def view(self, names, count):
        if not all(self.policy.allows(name) for name in names):
            return False
        new = set(names) - self.registered
        if len(self.registered) + len(new) > self.policy.max_boards and not new <= {"old"}:
            return False
        self.registered |= new
        for board in ("global", *names):
            self.totals[board] += count
        return True


@pytest.fixture
def stack(make_pipeline):
    return make_pipeline(WriteShards="2", MaxWriteShards="2")


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(POLICIES),
    st.lists(
        st.tuples(st.lists(st.sampled_from(NAMES), max_size=3, unique=True), st.integers(1, 5)), min_size=1, max_size=8
    ),
)
def test_any_sequence_of_views_counts_iff_the_policy_allows_and_a_refusal_writes_nothing(stack, policy, views):
    # Given empty tables but for a board that held views before the policy, and a fresh container with the policy
    client, s = stack.runtime.dynamodb, stack.settings
    for table in (s.views_table, s.shards_table):
        for item in scan(stack, table):
            client.delete_item(TableName=table, Key={PK: item[PK]})
    client.put_item(TableName=s.board_table, Item={PK: {"S": threshold_pk("old")}})
    wiring.use(wiring.Container(replace(s, board_policy=policy), client))
    model = Model(policy)
    for names, count in views:
        before = written(stack)
        # When a view names these boards
        status, answer = post(stack, {"id": "item", "count": count, "boards": names})
        # Then it counts iff the policy allows it; a refusal is a 422 that wrote nothing
        assert (status == 202) == model.view(names, count), (policy, names, status, answer)
        if status != 202:
            assert (status, answer["code"]) == (422, "board_not_allowed")
            assert written(stack) == before
    # And every board's total is exact: the accepted views, all of them, and nothing else
    assert counter_totals(stack) == +model.totals
    assert set(registry(stack)) == model.registered


# --------------------------------------------------------------------------------------- stacks older than the policy
def test_boards_with_views_from_before_the_policy_keep_working_past_the_cap(make_pipeline):
    # Given a stack whose writers created three boards before it had a policy (written as the old code did: no gate)
    pipeline = make_pipeline(Boards="max=1")
    where = Where.of(pipeline.settings.anchor, ["old-a", "old-b", "old-c"], at=pipeline.runtime.clock())
    record_views(pipeline.views, "x", 2, pipeline.settings.write_shards, where=where)
    pipeline.aggregate(pipeline.stream_records())
    # When views name them, now with the policy max=1
    answers = [post(pipeline, {"id": "x", "boards": [name]}) for name in ("old-a", "old-b", "old-c")]
    # Then every one still counts: the first takes the one place, the others are learned outside the cap
    assert [status for status, _ in answers] == [202, 202, 202]
    assert registry(pipeline) == {"old-a": "view", "old-b": "existing", "old-c": "existing"}
    # And a new board is refused, while all three old ones go on
    assert post(pipeline, {"id": "x", "boards": ["new"]})[0] == 422
    assert post(pipeline, {"id": "x", "boards": ["old-a", "old-b", "old-c"]})[0] == 202
    assert counter_totals(pipeline) == {"global": 6, "old-a": 4, "old-b": 4, "old-c": 4}


# ------------------------------------------------------------------------------------------------------ the library
def test_the_recorder_raises_bad_input_for_a_board_the_policy_refuses_and_buffers_nothing(pipeline):
    policy = BoardPolicy(1)
    with Recorder(
        boto3.Session(), flush_interval=3600.0, settings=replace(pipeline.settings, board_policy=policy)
    ) as r:
        r.record("a", boards=["cats"])
        with pytest.raises(BoardNotAllowed, match="'dogs' is not allowed") as refused:
            r.record("a", boards=["cats", "dogs"])
        assert isinstance(refused.value, BadInput)
        assert r.stats().recorded_views == 1
        assert r.flush().views == 1
    assert counter_totals(pipeline) == {"global": 1, "cats": 1}
    assert registry(pipeline) == {"cats": "view"}


# ---------------------------------------------------------------------------------------------------------- the CLI
@pytest.fixture
def cli(monkeypatch, tmp_path):
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "ERROR")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    runner = CliRunner()
    with mock_aws():
        yield lambda *args: runner.invoke(main, list(args), catch_exceptions=False)
    wiring.use(None)


def lines_file(tmp_path, boards_per_line):
    path = tmp_path / "views.jsonl"
    lines = [
        {"id": f"i{n}", "time": "2025-01-15T10:00:00Z", "count": 2, "boards": b} for n, b in enumerate(boards_per_line)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return str(path)


def registered(cli, *parameters):
    return json.loads(cli(*parameters, "boards", "--json").output)["registry"]


def test_cli_record_exits_2_for_a_refused_board_and_writes_nothing(cli):
    assert cli("init").exit_code == 0
    assert cli("-p", "Boards=max=1", "record", "a", "--board", "cats").exit_code == 0
    before = json.loads(cli("verify", "--json").output)
    result = cli("-p", "Boards=max=1", "record", "a", "b", "--board", "dogs")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "shardboard: board 'dogs' is not allowed: it would be a new board past this stack's maximum of 1 (Boards max=1)"
    ]
    assert json.loads(cli("verify", "--json").output) == before
    assert registered(cli, "-p", "Boards=max=1") == {"registered": 1, "max": 1, "policy": "max=1"}


def test_an_import_naming_a_refused_board_imports_nothing_or_with_skip_bad_skips_its_lines(cli, tmp_path):
    assert cli("init").exit_code == 0
    path = lines_file(tmp_path, [["a"], ["b"], [], ["a", "c"], ["tag:x"]])
    # Refused by the cap: the first line naming a board past it is named, nothing is written or registered
    result = cli("-p", "Boards=max=2", "import", path)
    assert result.exit_code == 2
    assert "line 4: board 'c' is not allowed: it would be a new board past" in " ".join(result.output.split())
    assert registered(cli)["registered"] == 0
    assert json.loads(cli("verify", "--json").output)["views"] == 0
    # Refused by the pattern too, with --skip-bad: the lines naming a refused board are skipped, the rest imported
    result = cli("-p", "Boards=max=3 pattern=a|b|c", "import", "--skip-bad", path)
    assert result.exit_code == 1
    assert "line 5: board 'tag:x' is not allowed: this stack's boards must match a|b|c" in result.output
    assert "imported 4 line(s): 8 views" in result.output
    assert registered(cli, "-p", "Boards=max=3 pattern=a|b|c")["registered"] == 3
