"""`shardboard bench`: its report and command on a tiny workload (unit tier), its figures on a small one (slow tier).

The tiny runs lower the viral-rate search's ceiling and the CPU sample so that they take seconds; their figures mean
nothing, only the report's shape is checked. The slow tier (``-m slow``) checks the figures themselves.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from shardboard_tools.bench import run as bench_run
from shardboard_tools.bench.designs import SEED_SHARDED, SEED_UNSHARDED, SHARDBOARD
from shardboard_tools.bench.report import markdown, targets
from shardboard_tools.bench.run import drive, run_benchmark
from shardboard_tools.bench.workload import Workload
from shardboard_tools.cli.bench import bench

# Windows of 5 s (15,000 records each): the 20 s run still folds several batches per window, in four windows.
SMALL = Workload(
    items=5_000,
    views=60_000,
    views_per_s=3_000,
    top_n=300,
    gsi_shards=10,
    probe_seconds=1.0,
    aggregation_window_seconds=5.0,
)
TINY = Workload(items=300, views=3_000, views_per_s=1_000, top_n=20, probe_seconds=0.2, aggregation_window_seconds=1.0)


@pytest.fixture(scope="module")
def quick_search() -> Iterator[None]:
    """A rate search up to 20,000 views/s (still past the 10,000 target) and a CPU sample of 2,000 views, once."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bench_run, "RATE_CEILING", 20_000.0)
        patch.setattr(bench_run, "CPU_REPEATS", 1)
        patch.setattr(bench_run, "CPU_SAMPLE_VIEWS", 2_000)
        yield


@pytest.fixture(scope="module")
def tiny_result(quick_search: None) -> dict[str, Any]:
    return run_benchmark(TINY)


@pytest.fixture(scope="module")
def result():
    return run_benchmark(SMALL)


@pytest.mark.slow
def test_shardboard_meets_its_targets_where_the_seeds_throttle(result):
    ours, unsharded, sharded = (result["designs"][name] for name in (SHARDBOARD, SEED_UNSHARDED, SEED_SHARDED))
    # Exact, never throttled, one viral item far beyond one partition's 1,000 writes/s
    assert ours["exact_top_n"]
    assert ours["throttled_requests"] == 0
    assert ours["hot_item_views_per_s_sustained"] >= 10_000
    assert ours["max_partition_write_units_per_s"] < 1000
    # An exact refresh reads the keys of the index's top buckets and the exact counts of the candidates
    # (docs/coarse-index.md): several times N + S items (KEYS_ONLY keys of ~100 bytes and 0.5-unit counts; items are
    # keyed one bucket above their count's, so the bucket of the N-th best holds the keyed items below it too), still
    # fewer than the sharded seed's S x N; reads included, shardboard costs less than either seed
    assert sharded["refresh_items_read"] > ours["refresh_items_read"]
    assert ours["cost_per_million_views"] < min(seed["cost_per_million_views"] for seed in (unsharded, sharded))
    # One snapshot item per frontend request: no dearer than the unsharded seed's one Query of N items (the head also
    # carries movement and spares, ~16 KB at N = 100), far cheaper than the sharded seed's S Queries
    assert ours["frontend_read_units"] <= unsharded["frontend_read_units"] < sharded["frontend_read_units"]
    # The seeds pay ~3 write units per view (1 + two index writes); shardboard less
    for seed in (unsharded, sharded):
        assert 2.4 <= seed["write_units_per_view"] <= 3.0
        assert ours["write_units_per_view"] < seed["write_units_per_view"]
    # The unsharded seed's single GSI key throttles: ~500 views/s of one item, views lost, top N wrong
    assert 400 <= unsharded["hot_item_views_per_s_sustained"] <= 600
    assert unsharded["throttled_requests"] > 0
    assert unsharded["max_partition_write_units_per_s"] == 1000
    assert not unsharded["exact_top_n"]
    # The aggregator's CPU figure is reported (machine-dependent, so not asserted)
    assert ours["aggregator_cpu_us_per_record"] is not None


@pytest.mark.slow
def test_tumbling_windows_cut_write_units_and_stay_exact():
    """The same views, per batch and in 5 s windows: fewer aggregate and index writes, the same exact board."""
    item_ids, sequence = SMALL.item_ids(), SMALL.view_sequence().tolist()
    runs = {
        seconds: drive(SHARDBOARD, replace(SMALL, aggregation_window_seconds=seconds), item_ids, sequence, 3_000)
        for seconds in (0.0, 5.0)
    }
    board = {seconds: run.design.emulator.usage.units("write") - len(sequence) for seconds, run in runs.items()}
    assert board[5.0] < 0.7 * board[0.0]  # the base table's one write per view is the same in both
    truth = Counter(item_ids[index] for index in sequence)
    best = sorted(truth.items(), key=lambda pair: (-pair[1], pair[0]))[: SMALL.top_n]
    for run in runs.values():
        assert run.design.top() == best
        assert run.design.emulator.usage.throttled_requests == 0
    assert runs[5.0].design.windows == 4


def test_report_lists_targets_and_the_command(tiny_result):
    checked = {t.name: t.met for t in targets(tiny_result)}
    assert list(checked) == [
        "write units per view",
        "viral item, zero throttles",
        "items read per exact refresh",
        "aggregator CPU per record",
        "top N exact",
    ]
    assert checked["viral item, zero throttles"]
    assert checked["top N exact"]
    document = markdown(tiny_result, "make bench", "benchmarks.png", "notes")
    assert "make bench" in document
    assert "| write units per view |" in document


def test_bench_command_prints_json_with_the_documented_keys(quick_search, tmp_path):
    arguments = ["--views", "3000", "--items", "500", "--top", "20", "--probe-seconds", "0.2"]
    arguments += ["--design", "seed-sharded", "--json"]
    outcome = CliRunner().invoke(bench, [*arguments, "--out", str(tmp_path)])
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout[outcome.stdout.index("{") :])
    assert {"top_n", "gsi_shards", "workload", "designs"} <= document.keys()
    assert set(document["designs"][SEED_SHARDED]) >= {
        "write_units_per_view",
        "max_partition_write_units_per_s",
        "throttled_requests",
        "hot_item_views_per_s_sustained",
        "refresh_items_read",
        "read_units_per_view",
        "cost_per_million_views",
        "frontend_read_units",
        "aggregator_cpu_us_per_record",
    }
    assert (tmp_path / "benchmarks.md").exists()
    assert (tmp_path / "benchmarks.png").stat().st_size > 10_000


def test_bench_json_leaves_the_docs_untouched(quick_search, tmp_path):
    # Given a checkout's docs (a copy: tests never write into the source tree), the working directory its root
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path):
        docs = Path("docs")
        docs.mkdir()
        (docs / "benchmarks.md").write_text("# Benchmark: the tracked one\n", encoding="utf-8")
        # When a script asks for the figures as JSON, without --out
        arguments = ["--views", "3000", "--items", "500", "--top", "20", "--probe-seconds", "0.2"]
        outcome = runner.invoke(bench, [*arguments, "--design", "seed-sharded", "--json"])
        # Then it prints them and writes nothing: only `make bench` (no --json) regenerates the docs
        assert outcome.exit_code == 0, outcome.output
        assert "designs" in json.loads(outcome.stdout[outcome.stdout.index("{") :])
        assert sorted(p.name for p in docs.iterdir()) == ["benchmarks.md"]
        assert (docs / "benchmarks.md").read_text(encoding="utf-8") == "# Benchmark: the tracked one\n"
    # And the Makefile's target still regenerates them
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text(encoding="utf-8")
    assert "\t$(BIN)/shardboard bench\n" in makefile
