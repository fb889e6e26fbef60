"""The honest-counts scenario's table and its section of docs/benchmarks.md ("Honest counts: cost per view with
and without viewer"), between its own markers so that ``make bench`` carries it over (as the library's)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import Any

from rich.console import Group
from rich.table import Table

from shardboard_tools.bench.honest_counts import COUNTED, DUPLICATE, OUTCOMES, PLAIN, PUBLIC, VIEWER
from shardboard_tools.bench.honest_counts_retries import KEYED, RECORDER, RECORDER_SAFE
from shardboard_tools.bench.honest_counts_retries import PLAIN as RETRIED_PLAIN
from shardboard_tools.bench.sections import Section

SECTION = Section("honest-counts")
START, END = SECTION.start, SECTION.end
TITLES = {PLAIN: "no viewer, limits off", VIEWER: "viewer", PUBLIC: "viewer, public (limits on)"}


def _share(outcome: str) -> Callable[[dict[str, Any]], str]:
    return lambda run: f"{run['shares'][outcome]:.1%}" if run["counts"][outcome] else "-"


def _units(outcome: str) -> Callable[[dict[str, Any]], str]:
    return lambda run: f"{run['units_per_outcome'][outcome]:g}" if outcome in run["units_per_outcome"] else "-"


def _exact(run: dict[str, Any]) -> str:
    return "yes" if run["exact_base"] and run["outcomes_as_modelled"] else "NO"


Row = tuple[str, Callable[[dict[str, Any]], str]]
ROWS: tuple[Row, ...] = (
    ("base-table write units per view offered", lambda run: f"{run['base_write_units_per_view']:.3f}"),
    ("base-table write units per counted view", lambda run: f"{run['base_write_units_per_counted_view']:.3f}"),
    *((f"share {outcome}", _share(outcome)) for outcome in OUTCOMES),
    *((f"write units per view {outcome}", _units(outcome)) for outcome in OUTCOMES),
    ("counted views exact (base table = the rules' model)", _exact),
    ("throttled requests", lambda run: f"{run['throttled_requests']:,}"),
)


RETRY_TITLES = {
    RETRIED_PLAIN: "POST /views",
    KEYED: "POST /views, Idempotency-Key",
    RECORDER: "Recorder, retry_safe=False",
    RECORDER_SAFE: "Recorder (retry-safe)",
}


def _optional(key: str, form: str) -> Callable[[dict[str, Any]], str]:
    return lambda run: "-" if run.get(key) is None else format(run[key], form)


RETRY_ROWS: tuple[Row, ...] = (
    ("base-table write units per view", lambda run: f"{run['base_write_units_per_view']:.3f}"),
    ("write units per request (first attempt)", _optional("units_per_request", "g")),
    ("write units per counter write (retries included)", _optional("base_write_units_per_write", ".3f")),
    ("lost responses (landed, then lost)", lambda run: f"{run['lost_responses']:,}"),
    ("retries recognised as applied", _optional("replayed_writes", ",")),
    ("views counted twice", lambda run: f"{run['over_counted_views']:,}"),
    ("counted views exact (base table = views offered)", lambda run: "yes" if run["exact_base"] else "NO"),
)


def table(result: dict[str, Any]) -> Group:
    base = result["workload"]["base"]
    shown = Table(title=f"honest-counts: {base['views']:,} Zipf views at {base['views_per_s']:,.0f}/s")
    shown.add_column("figure")
    for name in result["runs"]:
        shown.add_column(TITLES[name], justify="right")
    for label, show in ROWS:
        shown.add_row(label, *(show(run) for run in result["runs"].values()))
    retries = result["retries"]
    retried = Table(title=f"retried writes: {retries['lost_response_share']:.0%} of responses lost after the write")
    retried.add_column("figure")
    for name in retries["runs"]:
        retried.add_column(RETRY_TITLES[name], justify="right")
    for label, show in RETRY_ROWS:
        retried.add_row(label, *(show(run) for run in retries["runs"].values()))
    return Group(shown, retried)


def section(result: dict[str, Any], command: str) -> str:
    """The "Honest counts" section, between its markers."""
    runs, workload = result["runs"], result["workload"]
    base, limits = workload["base"], workload["limits"]
    plain, viewer, public = runs[PLAIN], runs[VIEWER], runs[PUBLIC]
    lines = [
        START,
        "## Honest counts: cost per view with and without viewer",
        "",
        *_wrapped(
            f"Made by `{command}` (virtual time on the capacity emulator; docs/honest-counts.md). The benchmark's "
            f"items ({base['views']:,} views, {base['distribution']}, {base['views_per_s']:,.0f} views/s, so "
            f"{result['rate_windows']} rate-limit minutes), each view with a viewer from a pool of "
            f"{workload['viewers']:,} ({workload['viewers_per_ip']} per IP address); "
            f"{workload['reload_share']:.0%} of views reload an item their viewer viewed already, and "
            f"{workload['scraper_share']:.0%} come from {workload['scrapers']} scrapers (half under their own "
            "names, half rotating viewer names from one address). The same views go to three fresh base tables "
            "through the real domain code: `record_views` (no viewer, limits off: the API path without a viewer), "
            f"`record_seen_view` (DedupeWindow {workload['dedupe_window_seconds']:,} s), and the same inside "
            f"`rate_limit.within` at the template's default limits ({limits['per_ip']} views per IP and "
            f"{limits['per_viewer']} per viewer per minute)."
        ),
        "",
        "| figure | " + " | ".join(TITLES[name] for name in runs) + " |",
        "|---|" + "---:|" * len(runs),
    ]
    lines += [f"| {label} | " + " | ".join(show(run) for run in runs.values()) + " |" for label, show in ROWS]
    lines += [
        "",
        *_wrapped(
            f"With a viewer, {viewer['shares'][DUPLICATE]:.1%} of the views offered were duplicates (measured); "
            f"they cost {viewer['units_per_outcome'][DUPLICATE]:g} units instead of "
            f"{viewer['units_per_outcome'][COUNTED]:g}, so the base table costs "
            f"{viewer['base_write_units_per_view'] / plain['base_write_units_per_view']:.2f}x the plain views' per "
            f"view offered. In public mode the limits refused {_refused(public):.1%} of the views "
            f"({public['refused_ordinary_viewers']:,} of them an ordinary viewer's, the rest the scrapers'), "
            "each for 1 write unit (per IP) or 3 (per viewer: the IP's allowance taken and given back), and every "
            "admitted view pays one unit per allowance; per view offered the base table costs "
            f'{public["base_write_units_per_view"]:.2f} units. "Exact" means the counters in the base table '
            "equal, item by item, the views a model of the rules written in the benchmark (not the domain's code) "
            "counts: every view (no viewer), the distinct (viewer, item, window) (viewer), those of the views a "
            "fixed-window counter per client admits (public); and every view's outcome is the model's."
        ),
        "",
        *_wrapped(
            "Only the base table is priced. The aggregator's cost per counted view does not depend on viewers: "
            "markers and allowance counters are filtered out before it, so it reads one stream record per counted "
            "view whichever run wrote it (the designs scenario above prices it); fewer counted views (duplicates, "
            "refusals) mean proportionally fewer records. As for docs/honest-counts.md's figures, these are the "
            "emulator's pricing of DynamoDB's rules (items under 1 KB, transactions twice per item, failed "
            "conditions charged), not a measurement on AWS."
        ),
        "",
        *_retries(result),
        END,
        "",
    ]
    return "\n".join(lines)


def _retries(result: dict[str, Any]) -> list[str]:
    """The retried writes' part of the section (docs/honest-counts.md, "Retried writes")."""
    retries = result["retries"]
    runs = retries["runs"]
    plain, keyed, recorder, safe = runs[RETRIED_PLAIN], runs[KEYED], runs[RECORDER], runs[RECORDER_SAFE]
    lines = [
        "### Retried writes: cost per view with and without retry safety",
        "",
        *_wrapped(
            f"The same {plain['views']:,} views without viewers, through four writers whose writes lose their "
            f"response after they landed, {retries['lost_response_share']:.0%} of them at random (a timeout after "
            "DynamoDB applied the write, as its caller sees it), each retried by whoever sent it: an HTTP client "
            "posting again until it hears an answer (`record_views`, and `record_keyed_view` with a fresh "
            "Idempotency-Key per view, the same key on every retry), and the library's `Recorder` flushed every "
            f"{retries['flush_interval']:g} s of virtual time (plain ADDs with `retry_safe=False`, and the default "
            "retry-safe writes), whose next flush retries what it did not hear back about. Write units include "
            "every attempt, lost ones and retries."
        ),
        "",
        "| figure | " + " | ".join(RETRY_TITLES[name] for name in runs) + " |",
        "|---|" + "---:|" * len(runs),
    ]
    lines += [f"| {label} | " + " | ".join(show(run) for run in runs.values()) + " |" for label, show in RETRY_ROWS]
    lines += [
        "",
        *_wrapped(
            "Without retry safety the views of every lost response count twice: "
            f"{plain['over_counted_views']:,} views too many for POST /views, "
            f"{recorder['over_counted_views']:,} for the Recorder (a coalesced write carries several views). An "
            "Idempotency-Key makes each request one transaction of the key's marker and the counter, "
            f"{keyed['units_per_request']:g} write units instead of {plain['units_per_request']:g} "
            f"({keyed['base_write_units_per_view']:.3f} per view with its retries, 2 units each), exact: "
            f"{keyed['replayed_writes']:,} requests were answered from their key's marker. The Recorder's "
            f"retry-safe writes cost what its plain ones do, {safe['base_write_units_per_write']:.3f} units per "
            f"counter write against {recorder['base_write_units_per_write']:.3f} (one conditional UpdateItem; a "
            "refused retry is charged one unit, and each recorder claims its writer number once), "
            f"{safe['base_write_units_per_view']:.3f} per view, exact: {safe['replayed_writes']:,} retries were "
            "refused by their counter's condition and reported written."
        ),
    ]
    return lines


def _refused(run: dict[str, Any]) -> float:
    return float(sum(share for outcome, share in run["shares"].items() if outcome.startswith("refused")))


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, width=120, break_on_hyphens=False)
