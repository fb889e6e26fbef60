"""The honest-counts scenario on a tiny run: its outcomes are the rules', its figures add up, its counts are exact."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shardboard.domain.writing.rate_limit import RateLimits
from shardboard_tools.bench.honest_counts import (
    COUNTED,
    DUPLICATE,
    OUTCOMES,
    PLAIN,
    PUBLIC,
    REFUSED_IP,
    REFUSED_VIEWER,
    VIEWER,
    HonestWorkload,
    expected,
    run_honest_counts,
    views_offered,
)
from shardboard_tools.bench.honest_counts_report import END, SECTION, START, section
from shardboard_tools.bench.honest_counts_retries import KEYED, RECORDER, RECORDER_SAFE, RETRY_RUNS
from shardboard_tools.bench.honest_counts_retries import PLAIN as RETRIED_PLAIN
from shardboard_tools.bench.workload import Workload

# 3,000 views over 150 s (three rate-limit minutes), limits small enough for the scrapers to go over them
TINY = HonestWorkload(
    base=Workload(items=50, views=3_000, views_per_s=20.0),
    viewers=400,
    limits=RateLimits(per_ip=20, per_viewer=6),
    lost_response_share=0.05,
)


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return run_honest_counts(TINY)


def test_reloads_repeat_a_viewer_of_the_item_and_scrapers_share_addresses() -> None:
    offered = views_offered(TINY)
    assert offered == views_offered(TINY)  # seeded
    assert [view.item for view in offered] == [f"images/{rank + 1}.jpg" for rank in TINY.base.view_sequence()]
    pairs = [(view.viewer, view.item) for view in offered]
    assert len(pairs) - len(set(pairs)) > 0.2 * len(pairs)  # the reloads, and a few chance repeats
    rotating = [view for view in offered if view.viewer.startswith("rotating-")]
    assert rotating and {view.ip for view in rotating} == {"203.0.113.1"}
    assert len({view.ip for view in offered if view.viewer.startswith("viewer-")}) <= TINY.viewers // 2


def test_counted_views_are_the_distinct_viewer_item_window_and_the_base_table_holds_them(result) -> None:
    offered = views_offered(TINY)
    runs = result["runs"]
    assert runs[PLAIN]["counts"][COUNTED] == 3_000
    distinct = {(view.viewer, view.item, int(view.at // TINY.dedupe_window_seconds)) for view in offered}
    assert runs[VIEWER]["counts"][COUNTED] == len(distinct)
    assert runs[VIEWER]["counts"][DUPLICATE] == 3_000 - len(distinct)
    for name, run in runs.items():
        assert (run["exact_base"], run["outcomes_as_modelled"], run["throttled_requests"]) == (True, True, 0), name


def test_the_limits_refuse_the_scrapers_per_ip_and_per_viewer(result) -> None:
    public = result["runs"][PUBLIC]
    assert public["counts"][REFUSED_IP] > 0 and public["counts"][REFUSED_VIEWER] > 0
    assert public["counts"][COUNTED] < result["runs"][VIEWER]["counts"][COUNTED]
    offered = views_offered(TINY)
    modelled = expected(TINY, offered, limited=True)  # the run's outcomes (test above)
    refused = [view for view, outcome in zip(offered, modelled, strict=True) if "refused" in outcome]
    assert public["refused_ordinary_viewers"] == sum(view.viewer.startswith("viewer-") for view in refused)
    assert result["rate_windows"] == 3


def test_the_figures_add_up_at_the_documented_prices(result) -> None:
    prices = {
        PLAIN: {COUNTED: 1.0},
        VIEWER: {COUNTED: 4.0, DUPLICATE: 2.0},
        PUBLIC: {COUNTED: 6.0, DUPLICATE: 4.0, REFUSED_IP: 1.0, REFUSED_VIEWER: 3.0},
    }
    for name, run in result["runs"].items():
        assert run["units_per_outcome"] == prices[name], name
        assert sum(run["counts"].values()) == run["views"] == 3_000
        assert sum(run["shares"].values()) == pytest.approx(1.0)
        units = sum(prices[name][outcome] * run["counts"][outcome] for outcome in prices[name])
        assert run["base_write_units"] == units
        assert run["base_write_units_per_view"] == units / 3_000
        assert run["base_write_units_per_counted_view"] == units / run["counts"][COUNTED]
        assert set(run["counts"]) == set(OUTCOMES)


def test_lost_responses_count_twice_without_retry_safety_and_once_with_it(result) -> None:
    runs = result["retries"]["runs"]
    assert tuple(runs) == RETRY_RUNS and result["retries"]["lost_response_share"] == 0.05
    for name, run in runs.items():
        assert run["views"] == 3_000 and run["lost_responses"] > 0, name
        assert run["counted_views"] == 3_000 + run["over_counted_views"], name
    # Without retry safety each lost response's views count again; with it, none
    plain, keyed = runs[RETRIED_PLAIN], runs[KEYED]
    assert plain["over_counted_views"] == plain["lost_responses"] == plain["client_retries"] and not plain["exact_base"]
    assert runs[RECORDER]["over_counted_views"] > 0 and not runs[RECORDER]["exact_base"]
    assert keyed["exact_base"] and keyed["over_counted_views"] == 0 and keyed["client_retries"] > 0
    # a keyed request that lost a response is answered from its key's marker by the retry that is heard
    assert 0 < keyed["replayed_writes"] <= keyed["client_retries"] and plain["replayed_writes"] == 0
    safe = runs[RECORDER_SAFE]
    assert safe["exact_base"] and safe["replayed_writes"] > 0 and safe["lost_views"] == 0
    # The prices: one unit per plain request, four per keyed one (two per replay), one per Recorder write either way
    assert (plain["units_per_request"], keyed["units_per_request"]) == (1.0, 4.0)
    assert plain["base_write_units"] == 3_000 + plain["client_retries"]
    assert keyed["base_write_units"] == 4 * 3_000 + 2 * keyed["client_retries"]
    # Recorder: every attempt is one unit, applied, refused as a retry or lost; the retry-safe one claims its writer
    assert runs[RECORDER]["base_write_units"] == runs[RECORDER]["writes"] + runs[RECORDER]["lost_responses"]
    assert safe["base_write_units"] == safe["writes"] + safe["lost_responses"] + 1


def test_the_section_replaces_its_own_part_and_make_bench_keeps_it(result, tmp_path) -> None:
    from shardboard_tools.bench import library_report
    from shardboard_tools.bench.sections import write_keeping_sections

    part = section(result, "shardboard bench --scenario honest-counts")
    assert part.startswith(START) and part.rstrip().endswith(END)
    assert "## Honest counts: cost per view with and without viewer" in part
    assert "### Retried writes: cost per view with and without retry safety" in part
    assert "| counted views exact (base table = views offered) | NO | yes | NO | yes |" in part
    keyed = result["retries"]["runs"][KEYED]["replayed_writes"]
    assert f"| retries recognised as applied | 0 | {keyed:,} | 0 |" in part
    assert "`shardboard bench --scenario honest-counts`" in part
    duplicates = result["runs"][VIEWER]["shares"][DUPLICATE]
    assert f"| share {DUPLICATE} | - | {duplicates:.1%} |" in part
    again = SECTION.replace_in(
        SECTION.replace_in("# Benchmark\n", part) + "after\n", part.replace("Honest", "Honest (2)")
    )
    assert again.count(START) == 1 and "(2)" in again and again.endswith("after\n")
    # `make bench` rewrites docs/benchmarks.md and carries over both scenarios' sections
    library = f"{library_report.START}\n## Client library\n{library_report.END}\n"
    path = tmp_path / "benchmarks.md"
    path.write_text(SECTION.replace_in(library_report.SECTION.replace_in("# Benchmark: old\n", library), part), "utf-8")
    write_keeping_sections(path, "# Benchmark: new\n")
    document = path.read_text(encoding="utf-8")
    assert document.startswith("# Benchmark: new\n") and "old" not in document
    assert SECTION.found_in(document) == part and library_report.SECTION.found_in(document) == library


def test_the_command_prints_the_scenario_as_json(tmp_path) -> None:
    from click.testing import CliRunner

    from shardboard_tools.cli.bench import bench

    arguments = ["--scenario", "honest-counts", "--views", "2000", "--items", "40", "--views-per-sec", "400"]
    outcome = CliRunner().invoke(bench, [*arguments, "--json", "--out", str(tmp_path)])
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout[outcome.stdout.index("{") :])
    assert document["scenario"] == "honest-counts"
    assert document["workload"]["base"]["views"] == 2000 and document["workload"]["base"]["items"] == 40
    assert set(document["runs"]) == {PLAIN, VIEWER, PUBLIC}
    assert all(run["exact_base"] and run["outcomes_as_modelled"] for run in document["runs"].values())
    assert set(document["retries"]["runs"]) == set(RETRY_RUNS)
    assert document["retries"]["runs"][KEYED]["exact_base"] and document["retries"]["runs"][RECORDER_SAFE]["exact_base"]
    written = (tmp_path / "benchmarks.md").read_text(encoding="utf-8")
    assert "`shardboard bench --views 2000 --views-per-sec 400 --items 40 --scenario honest-counts`" in written
