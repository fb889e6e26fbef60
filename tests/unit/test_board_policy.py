"""The Boards policy: its grammar (the template's and the code's agree), what it bounds (a base counter's size), and
the gate every view's boards pass through, checked against a model of the policy on any sequence of views."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardboard.adapters.keys import BUCKET as BUCKET_ATTR
from shardboard.adapters.keys import IMPORT_ID, ITEM_ID, PK, SHARD, VIEWS, board_counter, view_pk
from shardboard.domain.boards import (
    BOARD_NAME,
    DEFAULT_BOARD_POLICY,
    DEFAULT_MAX_BOARDS,
    ITEM_SIZE_LIMIT,
    MAX_BOARDS_CEILING,
    BoardGate,
    BoardNotAllowed,
    BoardPolicy,
    BoardPolicyError,
    InProcessBoards,
    largest_counter_bytes,
)
from shardboard.domain.validation import BadInput
from shardboard.settings import ConfigError, Settings
from shardboard_tools.bench.boards_workload import BoardsWorkload
from shardboard_tools.bench.many_boards import ManyBoardsWorkload
from shardboard_tools.capacity.units import item_size, write_units
from shardboard_tools.local.loadgen import DEFAULT_CATEGORIES
from shardboard_tools.template import Template, TemplateError
from tests.conftest import examples


# -- the grammar
@pytest.mark.parametrize(
    ("text", "policy"),
    [
        ("max=1000", BoardPolicy(1000)),
        ("max=0", BoardPolicy(0)),
        ("max=2000", BoardPolicy(2000)),
        ("max=100 pattern=cats|tag:*", BoardPolicy(100, "cats|tag:*")),
    ],
)
def test_a_policy_reads_back_as_written(text, policy):
    assert BoardPolicy.parse(text) == policy
    assert str(policy) == text


@pytest.mark.parametrize(
    "bad",
    ["", "max=2001", "max=-1", "max=ten", "pattern=cats", "max=10 pattern=", "max=10 pattern=(cats)", "max=1  x"],
)
def test_a_malformed_policy_is_refused_at_cold_start(bad):
    with pytest.raises(BoardPolicyError):
        BoardPolicy.parse(bad)
    with pytest.raises(ConfigError, match="BOARDS"):
        Settings.from_env({"BOARDS": bad})


def test_the_template_passes_its_default_policy_to_every_function():
    template = Template.load()
    assert template.parameters["Boards"] == DEFAULT_BOARD_POLICY == f"max={DEFAULT_MAX_BOARDS}"
    for function in ("RecordViewsFunction", "AggregatorFunction", "SnapshotFunction"):
        assert template.settings(function).board_policy == BoardPolicy()
    assert Template.load(overrides={"Boards": "max=5 pattern=a*"}).settings().board_policy == BoardPolicy(5, "a*")


BOARDS_PARAMETER = Template.load().body["Parameters"]["Boards"]


@settings(max_examples=examples(500), deadline=None)
@given(
    st.one_of(
        st.text(alphabet="max=0123456789 pattern|*abc:.-_(Z", max_size=30),
        st.builds(
            lambda n, p: f"max={n}" + (f" pattern={p}" if p else ""), st.integers(0, 3000), st.text("ab*|:", max_size=6)
        ),
    )
)
def test_the_template_accepts_exactly_the_policies_the_functions_read(text):
    # A deploy can never hand the functions a Boards value they cannot read (they would all fail at cold start):
    # CloudFormation (and `shardboard -p`) check the parameter's AllowedPattern
    accepted = re.fullmatch(BOARDS_PARAMETER["AllowedPattern"], text) is not None
    try:
        BoardPolicy.parse(text)
        readable = True
    except BoardPolicyError:
        readable = False
    assert accepted == readable


def test_the_cli_refuses_a_policy_the_template_refuses():
    with pytest.raises(TemplateError, match="parameter Boards must match"):
        Template.load(overrides={"Boards": "max=2001"})


@pytest.mark.parametrize(
    ("pattern", "allowed", "refused"),
    [
        ("cats", ["cats"], ["cat", "catsx", "xcats"]),
        ("cats|dogs", ["cats", "dogs"], ["cats|dogs", "birds"]),
        ("tag:*", ["tag:", "tag:x", "tag:a.b-c_1"], ["tag", "xtag:a"]),
        ("a.b", ["a.b"], ["axb"]),  # '.' is a character of a name, not "any character"
        ("*", ["x", "user:123"], []),
    ],
)
def test_a_pattern_is_globs_separated_by_bars(pattern, allowed, refused):
    policy = BoardPolicy(10, pattern)
    assert all(policy.allows(name) for name in allowed)
    assert not any(policy.allows(name) for name in refused)
    for name in refused:
        with pytest.raises(BadInput, match=re.escape(f"board {name!r} is not allowed: this stack's boards must match")):
            policy.named(name)


# -- what the cap bounds
def test_the_largest_base_counter_is_what_the_constants_say():
    # Given the largest counter item one can write: a 512-byte id on an import shard, an hourly bucket, an import's
    # identity, 38-digit counts, and max boards of 64-character names
    boards = 50
    item = {
        PK: {"S": view_pk("é" * 256, 1_999_999, "2026-11-23T14")},
        ITEM_ID: {"S": "é" * 256},
        SHARD: {"N": "1999999"},
        BUCKET_ATTR: {"S": "2026-11-23T14"},
        VIEWS: {"N": "9" * 38},
        IMPORT_ID: {"S": "f" * 64},
        **{board_counter(f"{n:02d}" + "b" * 62): {"N": "9" * 38} for n in range(boards)},
    }
    # Then DynamoDB's size of it is the bound the policy states
    assert item_size(item) == largest_counter_bytes(boards)
    # And the largest cap a policy may set keeps a counter under half of DynamoDB's 400 KB
    assert largest_counter_bytes(MAX_BOARDS_CEILING) < ITEM_SIZE_LIMIT / 2
    assert BoardPolicy().largest_counter_bytes == 87_187  # the default: at most 86 write units per write
    assert write_units(BoardPolicy().largest_counter_bytes) == 86


def test_the_demo_and_the_benchmarks_stay_within_the_default_policy():
    policy = BoardPolicy()
    workloads = [
        DEFAULT_CATEGORIES,
        BoardsWorkload().boards()[1:],
        tuple(ManyBoardsWorkload().board_name(b) for b in range(ManyBoardsWorkload().boards)),
    ]
    for boards in workloads:
        assert len(boards) <= policy.max_boards
        assert all(BOARD_NAME.fullmatch(name) and policy.allows(name) for name in boards)


# -- the gate, against a model of the policy
NAMES = ["a", "b", "c", "d", "e", "f", "old1", "old2"]
OLD = frozenset({"old1", "old2"})  # boards with views from before the policy


class Model:
    """What the policy says, written plainly: a view is accepted iff every board matches the pattern and the new
    ones fit under the cap (all or none) or, past the cap, all held views before the policy."""

    def __init__(self, policy: BoardPolicy) -> None:
        self.policy = policy
        self.registered: set[str] = set()

    def view(self, names: list[str]) -> bool:
        if not all(self.policy.allows(name) for name in names):
            return False
        new = set(names) - self.registered
        if len(self.registered) + len(new) > self.policy.max_boards and not new <= OLD:
            return False
        self.registered |= new
        return True


policies = st.builds(BoardPolicy, st.integers(0, 5), st.sampled_from([None, "*", "a|b|c|old*", "old*|d*"]))
views = st.lists(st.lists(st.sampled_from(NAMES), max_size=4, unique=True), max_size=25)


@settings(max_examples=examples(300), deadline=None)
@given(policies, views)
def test_any_sequence_of_views_is_admitted_iff_the_policy_allows_it(policy, requests):
    # Given a gate on an empty registry of a stack whose two old boards hold views from before the policy
    registry = InProcessBoards(existing=OLD)
    gate, model = BoardGate(policy, registry), Model(policy)
    for names in requests:
        before = set(registry.names)
        # When a view names these boards
        try:
            gate.admit(names)
            accepted = True
        except BoardNotAllowed as refused:
            accepted = False
            assert "is not allowed" in str(refused)
        # Then the gate decides as the policy says, and a refusal registers nothing
        assert accepted == model.view(names), (policy, names, before)
        assert registry.names == model.registered
        if not accepted:
            assert registry.names == before
    # And the cap holds: past it, only boards that held views before
    assert len(registry.names - OLD) <= policy.max_boards


class CountingRegistry(InProcessBoards):
    """The in-process registry, counting the calls a gate makes of it."""

    calls: int = 0

    def registered(self, names):
        self.calls += 1
        return super().registered(names)

    def register(self, names, limit):
        self.calls += 1
        return super().register(names, limit)

    def existed(self, names):
        self.calls += 1
        return super().existed(names)

    def count(self):
        self.calls += 1
        return super().count()


def test_a_writer_asks_the_registry_once_per_new_board_and_not_again_while_it_is_full():
    now = [0.0]
    registry = CountingRegistry()
    gate = BoardGate(BoardPolicy(2), registry, clock=lambda: now[0], refused_ttl=60)
    # A new board: one read and one registration; again: nothing asked
    gate.admit(["a"])
    asked = registry.calls
    assert asked == 2
    for _ in range(100):
        gate.admit(["a"])
    assert registry.calls == asked
    gate.admit(["b"])
    # Full: the first refusal costs a refused registration, a count and a look for views; the same name again
    # costs nothing
    with pytest.raises(BoardNotAllowed, match="past this stack's maximum of 2"):
        gate.admit(["c"])
    asked = registry.calls
    with pytest.raises(BoardNotAllowed):
        gate.admit(["c"])
    assert registry.calls == asked
    # Another new name while full: a read of the registry and of its views, no registration attempt
    with pytest.raises(BoardNotAllowed):
        gate.admit(["d"])
    assert registry.calls == asked + 2
    # Once the full mark expires the registry is asked again (a deploy that raised the cap starts new containers)
    now[0] = 61
    registry.calls = 0
    with pytest.raises(BoardNotAllowed):
        gate.admit(["c"])
    assert registry.calls == 4  # registered?, register (refused), count, existed?


def test_a_view_too_many_new_boards_for_the_room_left_does_not_mark_the_registry_full():
    gate = BoardGate(BoardPolicy(3), InProcessBoards())
    gate.admit(["a", "b"])
    with pytest.raises(BoardNotAllowed):
        gate.admit(["c", "d"])
    assert gate.admit(["c"]) == ("c",)


def test_refusals_say_what_admit_would_refuse_and_write_nothing():
    registry = InProcessBoards(existing=frozenset({"old"}))
    gate = BoardGate(BoardPolicy(2, "a*|old"), registry)
    gate.admit(["a1"])
    # One place left: the first new board takes it, in order; an old board is kept past the cap
    reasons = gate.refusals(["a1", "a2", "a3", "b", "old"])
    assert set(reasons) == {"a3", "b"}
    assert "must match a*|old" in reasons["b"] and "maximum of 2" in reasons["a3"]
    assert set(gate.refusals(["old", "a3", "a2"])) == {"a3", "a2"}  # the old board came first and took it
    assert registry.names == {"a1"}
    # What refusals allows, admit takes, one at a time in the same order
    for name in ("a2", "old"):
        gate.admit([name])
    assert registry.names == {"a1", "a2", "old"}
    assert set(gate.refusals(["a3", "old"])) == {"a3"}


@settings(max_examples=examples(200), deadline=None)
@given(policies, st.lists(st.sampled_from(NAMES), max_size=4, unique=True), st.lists(st.sampled_from(NAMES)))
def test_refusals_foretell_admitting_one_board_at_a_time(policy, first, names):
    # Given a registry holding some boards already
    registry = InProcessBoards(existing=OLD, names=set(first[: policy.max_boards]))
    foretold = BoardGate(policy, registry).refusals(names)
    assert registry.names == set(first[: policy.max_boards])  # writing nothing
    # When the boards are admitted one at a time, in order, by another writer
    gate, refused = BoardGate(policy, registry), set()
    for name in names:
        try:
            gate.admit([name])
        except BoardNotAllowed:
            refused.add(name)
    # Then exactly the boards foretold were refused
    assert set(foretold) == refused
