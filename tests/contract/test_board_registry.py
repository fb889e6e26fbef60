"""The board registry's contract (domain/boards.py BoardRegistry), on every implementation: the in-process registry
(what a Recorder on in-memory stores uses) and the DynamoDB adapter (adapters/board_registry.py) on moto and on
DynamoDB Local. A registration is all or none, never takes the count past its limit, even from many writers at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from shardboard.adapters.board_registry import BoardRegistryStore
from shardboard.adapters.keys import PK, threshold_pk
from shardboard.domain.boards import MAX_REGISTERED_AT_ONCE, InProcessBoards

IMPLEMENTATIONS = ["in-process", "moto", pytest.param("dynamodb-local", marks=pytest.mark.e2e)]


@pytest.fixture(params=IMPLEMENTATIONS)
def registry(request):
    """An empty registry; the board ``legacy`` holds views from before it (its all-time period item exists)."""
    if request.param == "in-process":
        return InProcessBoards(existing=frozenset({"legacy"}))
    if request.param == "moto":
        runtime = request.getfixturevalue("make_pipeline")().runtime
    else:
        runtime = request.getfixturevalue("make_local")()
    settings = runtime.settings
    runtime.dynamodb.put_item(TableName=settings.board_table, Item={PK: {"S": threshold_pk("legacy")}})
    return BoardRegistryStore(runtime.dynamodb, settings.shards_table, settings.board_table, clock=runtime.clock)


def test_a_registration_is_all_or_none_under_its_limit(registry):
    assert registry.register(["a", "b"], 3)
    assert registry.registered(["a", "b", "c"]) == {"a", "b"} and registry.count() == 2
    # Two more would pass the limit: neither is registered
    assert not registry.register(["c", "d"], 3)
    assert registry.registered(["c", "d"]) == set() and registry.count() == 2
    # Boards registered already take no room: "a" again and "c" fit
    assert registry.register(["a", "c"], 3)
    assert registry.count() == 3
    assert not registry.register(["d"], 3)
    # Without a limit (boards that held views before the policy) it always registers
    assert registry.register(["legacy"], None)
    assert registry.count() == 4 and registry.registered(["legacy"]) == {"legacy"}


def test_boards_that_hold_views_are_found_by_name(registry):
    assert registry.existed(["legacy", "new", "a"]) == {"legacy"}
    assert registry.existed([]) == set()


def test_a_limit_of_zero_registers_nothing_and_a_full_chunk_fits(registry):
    assert not registry.register(["a"], 0)
    names = [f"b{n}" for n in range(MAX_REGISTERED_AT_ONCE)]
    assert registry.register(names, MAX_REGISTERED_AT_ONCE)
    assert registry.registered(names) == set(names) and registry.count() == MAX_REGISTERED_AT_ONCE


def test_writers_at_once_never_register_past_the_limit(registry):
    # Given 8 writers each registering 5 boards of their own, one at a time, under a limit of 12
    def writer(w):
        return [registry.register([f"w{w}-{n}"], 12) for n in range(5)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = [ok for result in pool.map(writer, range(8)) for ok in result]
    # Then exactly 12 registrations succeeded, and the registry holds exactly those
    assert outcomes.count(True) == 12
    assert registry.count() == 12
    assert len(registry.registered([f"w{w}-{n}" for w in range(8) for n in range(5)])) == 12


def test_the_scan_lists_every_registered_board_with_its_origin(registry):
    assert registry.scan() == {}
    assert registry.register(["a", "b"], 3)
    assert registry.register(["legacy"], None)
    # A refused registration adds nothing
    assert not registry.register(["c", "d"], 3)
    assert registry.scan() == {"a": "view", "b": "view", "legacy": "existing"}
