"""The library scenario on a tiny run: its floor, its writes and its exactness are the Recorder's, exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shardboard_tools.bench.library import (
    API,
    LibraryWorkload,
    assign,
    first_flush,
    floor_writes,
    flush_window,
    run_library,
)
from shardboard_tools.bench.library_report import END, SECTION, START, section
from shardboard_tools.bench.workload import Workload

TINY = LibraryWorkload(
    base=Workload(items=50, views=3_000, views_per_s=500.0, top_n=10, refresh_seconds=2.0),
    viral_views_per_s=2_000.0,
    viral_seconds=3.0,
)


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return run_library(TINY)


def test_the_processes_flush_in_turn() -> None:
    # Process p of 4 first flushes at (p + 1)/4 of the interval, then every interval
    assert [first_flush(p, 4, 1.0) for p in range(4)] == [0.25, 0.5, 0.75, 1.0]
    # A view joins the buffer of the flushes at or before its time
    assert [flush_window(t, 0, 4, 1.0) for t in (0.0, 0.24, 0.25, 1.24, 1.25, 9.3)] == [0, 0, 1, 1, 2, 10]
    assert [flush_window(t, 3, 4, 5.0) for t in (4.9, 5.0, 10.0)] == [0, 1, 2]


def test_the_floor_is_one_write_per_distinct_key_per_flush_per_process() -> None:
    # Given items [a, a, b, a] at 1 view/s (at 0, 1, 2 and 3 s), b on process 1, the a's on process 0
    items, owners = [0, 0, 1, 0], [0, 0, 1, 0]
    assert floor_writes(items, owners, 1.0, 4, 100.0) == 2  # before any flush (process 0's first is at 25 s)
    assert floor_writes(items, owners, 1.0, 4, 10.0) == 3  # process 0's flush at 2.5 s splits a's views
    assert floor_writes(items, owners, 1.0, 4, 1.0) == 4  # flushes at 0.25, 1.25, 2.25 s: each a on its own
    assert floor_writes(items, [0, 1, 2, 3], 1.0, 4, 10.0) == 4  # four processes: one write each


def test_views_are_spread_over_every_process() -> None:
    owners = assign(4_000, 4, 14)
    assert owners == assign(4_000, 4, 14)  # seeded
    assert all(900 < owners.count(p) < 1_100 for p in range(4))


def test_the_library_writes_exactly_the_floor_and_the_api_one_write_per_view(result: dict[str, Any]) -> None:
    runs = result["runs"]
    assert list(runs) == [API, "library-1s", "library-5s"]
    assert runs[API]["base_writes"] == runs[API]["stream_records"] == 3_000
    for name in ("library-1s", "library-5s"):
        run = runs[name]
        # one counter write per buffered key per flush, nothing more (no size flush, no failure); and each of the 4
        # recorders claims its writer number once (retry-safe writes), a record the template's filter drops
        assert run["base_writes"] == run["floor_writes"] == run["stream_records"] - 4
        assert run["writes_over_floor"] == 0
        assert run["base_writes_per_view"] == run["floor_writes"] / 3_000
    assert runs["library-5s"]["base_writes"] < runs["library-1s"]["base_writes"] < 3_000


def test_write_units_add_up_per_resource_and_each_base_write_is_one_unit(result: dict[str, Any]) -> None:
    for name, run in result["runs"].items():
        by_resource = run["write_units_per_view_by_resource"]
        assert sum(by_resource.values()) == pytest.approx(run["write_units_per_view"])
        claims = 0 if name == API else 4  # each recorder's writer number, one unit once
        # small items: 1 unit per counter write, retry-safe ones included
        assert by_resource["memory-views"] == pytest.approx(run["base_writes_per_view"] + claims / run["views"])


def test_every_run_is_exact_after_the_drain(result: dict[str, Any]) -> None:
    for name, run in result["runs"].items():
        assert (run["exact_base"], run["exact_aggregates"], run["exact_top_n"]) == (True, True, True), name
        assert run["throttled_requests"] == run["refused_views"] == 0
    for name, viral in result["viral"].items():
        assert viral["exact"], name


def test_the_viral_item_costs_one_write_per_flush_per_process(result: dict[str, Any]) -> None:
    viral = result["viral"]
    assert viral[API]["base_writes"] == viral[API]["floor_writes"] == 6_000
    for name, interval in (("library-1s", 1.0), ("library-5s", 5.0)):
        run = viral[name]
        assert run["base_writes"] == run["floor_writes"]
        # 3 s of views, the item in every buffer: one write per process at each tick before the last view's
        # instant (3 s), and one more for the rest when the run ends
        ticks = [first_flush(p, 4, interval) + k * interval for p in range(4) for k in range(4)]
        assert run["base_writes"] == sum(1 for tick in ticks if tick < 3.0) + 4
        assert run["base_writes_per_s_per_process"] == run["base_writes"] / 3.0 / 4


def test_the_targets_are_checked_on_the_figures(result: dict[str, Any]) -> None:
    targets = {target["name"]: target for target in result["targets"]}
    assert targets["library-5s: base writes within 5% of the floor"]["met"]
    assert targets["library-5s: <= 1.0 write unit per view in total"]["found"] == (
        f"{result['runs']['library-5s']['write_units_per_view']:.3f}"
    )


def test_the_section_replaces_its_own_part_of_the_document(result: dict[str, Any]) -> None:
    part = section(result, "shardboard bench --scenario library")
    assert part.startswith(START) and part.rstrip().endswith(END)
    assert "## Client library" in part and "`shardboard bench --scenario library`" in part
    document = SECTION.replace_in("# Benchmark\n\nthe designs\n", part)
    assert document.startswith("# Benchmark\n\nthe designs\n\n" + START)
    # Rewritten: replaced in place, not appended twice; carried over when the rest is regenerated
    again = SECTION.replace_in(document + "after\n", part.replace("Client library", "Client library (2)"))
    assert again.count(START) == 1 and "(2)" in again and again.endswith("after\n")
    assert SECTION.found_in(again) is not None and "(2)" in (SECTION.found_in(again) or "")
    assert SECTION.found_in("# Benchmark\n") is None


def test_make_bench_keeps_the_library_section_when_it_rewrites_the_document(result: dict[str, Any], tmp_path) -> None:
    from shardboard_tools.bench.sections import write_keeping_sections

    # Given docs/benchmarks.md with the library section written by --scenario library
    path = tmp_path / "benchmarks.md"
    part = section(result, "shardboard bench --scenario library")
    path.write_text(SECTION.replace_in("# Benchmark: old figures\n", part), encoding="utf-8")
    # When `make bench` writes its new document
    write_keeping_sections(path, "# Benchmark: new figures\n")
    # Then the new figures replace the old ones and the library section is still there, once
    document = path.read_text(encoding="utf-8")
    assert document.startswith("# Benchmark: new figures\n") and "old figures" not in document
    assert SECTION.found_in(document) == part
    # And a first run (no library section yet) writes the document as it is
    fresh = tmp_path / "fresh.md"
    write_keeping_sections(fresh, "# Benchmark\n")
    assert fresh.read_text(encoding="utf-8") == "# Benchmark\n"


def test_the_command_prints_the_scenario_as_json(tmp_path) -> None:
    from click.testing import CliRunner

    from shardboard_tools.cli.bench import bench

    arguments = ["--scenario", "library", "--views", "2000", "--items", "40", "--views-per-sec", "400"]
    arguments += ["--probe-seconds", "0.5", "--json", "--no-files", "--out", str(tmp_path)]
    outcome = CliRunner().invoke(bench, arguments)
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout[outcome.stdout.index("{") :])
    assert document["scenario"] == "library"
    assert document["workload"]["base"]["views"] == 2000 and document["workload"]["viral_seconds"] == 0.5
    assert set(document["runs"]) == set(document["viral"]) == {API, "library-1s", "library-5s"}
    assert all(target["met"] for target in document["targets"] if "floor" in target["name"])
    assert not (tmp_path / "benchmarks.md").exists()
