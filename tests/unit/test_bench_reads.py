"""`shardboard bench --scenario reads` on a small workload: the figures it reports are the run's own."""

from __future__ import annotations

import pytest

from shardboard_tools.bench.reads import ReadsWorkload, run_reads
from shardboard_tools.bench.reads_report import section
from shardboard_tools.bench.workload import Workload


@pytest.fixture(scope="module")
def result():
    # 15 s of views in 1 s windows: thresholds are published while most items are still arriving (in one 3 s
    # window every item would join the head at T = 0 and the deep tier would never be needed)
    base = Workload(
        items=3_000, views=15_000, top_n=20, refresh_seconds=1.0, views_per_s=1_000, aggregation_window_seconds=1.0
    )
    return run_reads(ReadsWorkload(base=base, depth=200, refresh_seconds=(2,)))


def test_both_depths_are_exact_and_the_extra_is_their_difference(result):
    today, ranked = result["runs"].values()
    assert today["exact_top_n"] and ranked["exact_top_n"] and ranked["exact_ranked_version"] is True
    assert not today["ranked_versions"] and today["rank_version_write_units_per_view"] == 0
    assert ranked["rank_versions_written"] >= 2 and ranked["rank_version_write_units_per_view"] > 0
    extra = ranked["write_units_per_view"] - today["write_units_per_view"]
    assert result["extra_write_units_per_view"] == pytest.approx(extra)
    # All time keys down to T_D (the D-th best), below T (the (N+R)-th best): the items between them pay index
    # writes too, only at their joins and bucket changes
    assert 0 < ranked["deep_threshold"] <= ranked["threshold"]
    assert ranked["index_write_units_per_view"] > today["index_write_units_per_view"] > 0
    assert ranked["gather_read_units"] > 0 and today["gather_read_units"] is None


def test_lookups_cost_one_getitem_in_the_top_n_two_requests_within_d_and_four_past_it(result):
    ranks = [row for row in result["lookups"] if "read" not in row]
    by_position = {row["position"]: row for row in ranks}
    assert by_position[20]["requests"] == 1 and "snapshot" in by_position[20]["where"]
    assert by_position[100]["requests"] == 2 and "ranked" in by_position[100]["where"]
    # Past D: the head, a rank shard, the id's takedown status (its record) and its views
    assert all(row["requests"] == 4 for row in ranks if "beyond" in row["where"])
    assert all(row["requests"] <= 4 for row in ranks)
    for row in ranks:
        if "ranked" in row["where"] or "snapshot" in row["where"]:
            assert f"rank {row['true_rank']:,}," in row["answer"]  # exact within D


def test_around_and_pages_are_priced_exact_and_within_the_issues_targets(result):
    around = [row for row in result["lookups"] if row.get("read") == "around"]
    pages = [row for row in result["lookups"] if row.get("read") == "page"]
    # D = 200: around k = 5 at positions 20 (inside the head, N = 20, so the version) and 100; pages at offset 100
    assert [row["position"] for row in around] == [20, 100] and len(pages) == 2
    assert all(row["answer"].startswith("11 entries (5 above, 5 below)") for row in around)
    # The emulator counts each key of a BatchGetItem as a request: around's two pages count 2
    assert all(row["requests"] <= 4 for row in around) and all(row["requests"] <= 2 for row in pages)
    assert all("exact: True" in row["answer"] for row in pages)
    targets = {target["name"]: target for target in result["targets"]}
    assert all(targets[f"{row['where']} requests"]["met"] for row in around + pages)


def test_the_section_carries_the_figures_between_its_markers(result):
    text = section(result, "shardboard bench --scenario reads")
    assert text.startswith("<!-- reads:start -->") and text.rstrip().endswith("<!-- reads:end -->")
    assert f"{result['extra_write_units_per_view']:+.3f}" in text
