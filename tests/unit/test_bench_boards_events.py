"""The boards scenario's event figures: shardboard's designs run the snapshot job with an announcer over an in-memory
sink, as the deployed job runs with EventBridge, and count what it published; the baselines publish none."""

from __future__ import annotations

from collections import Counter

from shardboard.domain.publishing.events import CLOSED, ENTERED, EVENT_TYPES, LEFT
from shardboard_tools.bench.boards import make_boards_design, summarize
from shardboard_tools.bench.boards_designs import SHARDBOARD_WINDOWED, STRAIGHTFORWARD
from shardboard_tools.bench.boards_report import markdown
from shardboard_tools.bench.boards_shardboard import ShardboardBoardsDesign
from shardboard_tools.bench.boards_workload import BoardsWorkload, brute_force_tops

# 10 s of views at 400/s, midnight at 5 s; 1 s windows and refreshes: the day and the hour end halfway.
SMALL = BoardsWorkload.straddling_midnight(
    views=4_000,
    items=400,
    categories=3,
    views_per_s=400,
    global_top_n=50,
    category_top_n=10,
    refresh_seconds=1.0,
    aggregation_window_seconds=1.0,
)


def test_the_events_counted_are_those_the_sink_received_and_the_day_boundary_closes_periods() -> None:
    views = SMALL.view_arrays()
    design = make_boards_design(SHARDBOARD_WINDOWED, SMALL)
    assert isinstance(design, ShardboardBoardsDesign)
    run = design.run(views)
    figures = summarize(run, brute_force_tops(SMALL, views))
    events = figures["events"]
    received = Counter(event.type for event in design.events.events)
    assert events["published"] == len(design.events.events) == design.announcer.sent
    assert {kind: events[kind] for kind in EVENT_TYPES} == {kind: received[kind] for kind in EVENT_TYPES}
    assert events[ENTERED] > 0 and events[LEFT] > 0
    # the day and the hour ended at midnight: each board's head of both is closed once
    closed = Counter((e.board, e.period["kind"]) for e in design.events.events if e.type == CLOSED)
    assert closed[("global", "day")] == closed[("global", "hour")] == 1
    assert events["refresh_runs"] == len(design.events_per_run) >= 10
    assert events["per_refresh_max"] == max(design.events_per_run)
    assert events["per_refresh_mean"] * events["refresh_runs"] == events["published"]
    assert events["billed_events"] >= events["published"] and events["put_events_requests"] >= events["published"] / 10
    assert events["closing_read_units"] > 0  # the ledger and the ended heads, booked apart
    assert isinstance(figures["scan_fallbacks"], int) and figures["scan_fallbacks"] >= 0
    assert figures["exact"]


def test_the_report_shows_the_events_and_n_a_for_the_baselines() -> None:
    views = SMALL.view_arrays()
    truth = brute_force_tops(SMALL, views)
    designs = {
        name: summarize(make_boards_design(name, SMALL).run(views), truth) for name in (STRAIGHTFORWARD, "shardboard")
    }
    assert "events" not in designs[STRAIGHTFORWARD] and "scan_fallbacks" not in designs[STRAIGHTFORWARD]
    result = {"workload": SMALL.as_json(), "designs": designs}
    text = markdown(result, "shardboard bench --scenario boards", "")
    row = next(line for line in text.splitlines() if line.startswith("| events published"))
    assert row == f"| events published (PutEvents entries) | n/a | {designs['shardboard']['events']['published']:,} |"
    assert "| window scan fallbacks (sums proven by a table scan) | n/a | 0 |" in text
