"""``shardboard bench --scenario honest-counts``: the base table's write units per view with and without ``viewer``.

Issue 14 item 5. The benchmark's Zipf items (``bench.workload.Workload``), one viewer per view, offered three times
to fresh in-memory base tables priced by the capacity emulator, through the real domain functions:

* ``plain``: no viewer, limits off (``record_views``, the ``POST /views`` path today);
* ``viewer``: every view names its viewer (``record_seen_view``, one ``DedupeWindow``); a share of views are
  reloads, a viewer viewing again an item it viewed already, so they are duplicates;
* ``public``: the same in public mode: each view first takes its IP's and its viewer's allowance (``allowances``,
  ``within``) at the template's default limits; a few scraping clients go over them.

Then the same views without viewers through four writers whose writes lose their response at random after they
landed, retried by whoever sent them (``honest_counts_retries``): ``POST /views`` without and with an
Idempotency-Key, the library's Recorder with plain and with retry-safe writes.

Only the base table is priced: the aggregator reads one stream record per counted view whichever run wrote it
(markers and allowance counters are filtered out before it), so its cost per counted view is the designs
scenario's. Exactness is checked against a model of the rules written here, not the domain's code: the counted
views are the distinct (viewer, item, window) of the views offered (``viewer``), or of those a fixed-window
counter per client admits (``public``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

from shardboard.domain.writing.dedupe import DEFAULT_DEDUPE_WINDOW_SECONDS, Seen
from shardboard.domain.writing.rate_limit import RateLimited, RateLimits, allowances, within
from shardboard.domain.writing.recording import record_seen_view, record_views
from shardboard_tools.bench.honest_counts_retries import RETRY_RUNS, run_retries
from shardboard_tools.bench.workload import Workload
from shardboard_tools.capacity.emulator import CapacityEmulator, VirtualClock
from shardboard_tools.capacity.stores import in_process

PLAIN, VIEWER, PUBLIC = "plain", "viewer", "public"
# Every run's name, as the progress bars show them (the retried writes' runs are prefixed: their plain is another).
RUNS = (PLAIN, VIEWER, PUBLIC, *(f"retries {name}" for name in RETRY_RUNS))
COUNTED, DUPLICATE, REFUSED_IP, REFUSED_VIEWER = "counted", "duplicate", "refused by IP", "refused by viewer"
OUTCOMES = (COUNTED, DUPLICATE, REFUSED_IP, REFUSED_VIEWER)
ORDINARY = "viewer-"  # the viewers that are not scrapers


@dataclass(frozen=True)
class HonestWorkload:
    # 100,000 views at 1,000/s: 100 s of virtual time, so the per-minute limits see two windows.
    base: Workload = field(default_factory=lambda: Workload(views=100_000, views_per_s=1_000.0))
    viewers: int = 10_000  # about 10 views each: well under the per-viewer limit
    viewers_per_ip: int = 2  # a household or an office behind one address
    reload_share: float = 0.25  # views that repeat an earlier (viewer, item): a reload, a back button
    # Views from scrapers over their limits: half under their own names and addresses, half rotating viewer names
    # from one address.
    scraper_share: float = 0.05
    scrapers: int = 10
    dedupe_window_seconds: int = DEFAULT_DEDUPE_WINDOW_SECONDS
    # template.yaml's defaults, ViewsPerIpPerMinute and ViewsPerViewerPerMinute
    limits: RateLimits = field(default_factory=lambda: RateLimits(per_ip=120, per_viewer=30))
    seed: int = 145
    # Retried writes: the share of writes whose response is lost after they landed, and the library's flush interval
    lost_response_share: float = 0.01
    flush_interval: float = 1.0

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "base": self.base.as_json(), "limits": asdict(self.limits)}


@dataclass(frozen=True)
class View:
    at: float  # epoch seconds
    item: str
    viewer: str
    ip: str


def views_offered(workload: HonestWorkload) -> list[View]:
    """The Zipf items in order, each with a viewer and an IP: a reload repeats a viewer that viewed the item
    already, a scraper's view comes from one of a few clients, any other view from a viewer drawn at random (its
    address shared with ``viewers_per_ip - 1`` others)."""
    base, rng = workload.base, random.Random(workload.seed)
    item_ids = base.item_ids()
    seen_by: dict[int, list[int]] = {}
    offered = []
    for position, rank in enumerate(base.view_sequence().tolist()):
        draw = rng.random()
        if draw < workload.scraper_share:
            scraper = rng.randrange(workload.scrapers)
            if scraper % 2:  # under its own name, from its own address: the per-viewer limit stops it
                viewer, ip = f"scraper-{scraper}", f"198.51.100.{scraper}"
            else:  # a new viewer name each time, from one address: only the per-IP limit stops it
                viewer, ip = f"rotating-{position}", "203.0.113.1"
        else:
            earlier = seen_by.get(rank)
            if earlier and draw < workload.scraper_share + workload.reload_share:
                number = rng.choice(earlier)
            else:
                number = rng.randrange(workload.viewers)
                seen_by.setdefault(rank, []).append(number)
            viewer = f"{ORDINARY}{number}"
            ip = f"10.{number // workload.viewers_per_ip // 256 % 256}.{number // workload.viewers_per_ip % 256}.1"
        offered.append(View(base.start_epoch + position / base.views_per_s, item_ids[rank], viewer, ip))
    return offered


def expected(workload: HonestWorkload, offered: list[View], limited: bool) -> list[str]:
    """Each view's outcome by the documented rules (docs/honest-counts.md), independently of the domain's code:
    the IP's allowance first, then the viewer's (an IP allowance taken is given back when the viewer's refuses),
    then the first view of a (viewer, item, dedupe window) counts."""
    used: dict[tuple[str, str, int], int] = {}
    counted: set[tuple[str, str, int]] = set()
    outcomes = []
    for view in offered:
        minute = int(view.at // workload.limits.window_seconds)
        if limited and used.get(("ip", view.ip, minute), 0) >= workload.limits.per_ip:
            outcomes.append(REFUSED_IP)
            continue
        if limited and used.get(("viewer", view.viewer, minute), 0) >= workload.limits.per_viewer:
            outcomes.append(REFUSED_VIEWER)
            continue
        for client in (("ip", view.ip, minute), ("viewer", view.viewer, minute)):
            used[client] = used.get(client, 0) + 1
        key = (view.viewer, view.item, int(view.at // workload.dedupe_window_seconds))
        outcomes.append(DUPLICATE if key in counted else COUNTED)
        counted.add(key)
    return outcomes


class Run:
    """One run's fresh base table, its virtual clock, and what each view's request cost."""

    def __init__(self, workload: HonestWorkload, name: str) -> None:
        self.workload, self.name = workload, name
        self.clock = VirtualClock()
        # All time only (no periods): every counter under one anchor bucket, as the figures were first measured.
        self.stores = in_process(CapacityEmulator(self.clock), periods=())
        self.views = self.stores.views
        self.rng = random.Random(workload.seed)
        self.outcomes: list[str] = []
        self.units = dict.fromkeys(OUTCOMES, 0.0)

    def offer(self, view: View) -> None:
        self.clock.set(view.at - self.workload.base.start_epoch)
        before = self.stores.emulator.usage.units("write")
        outcome = self.record(view)
        self.outcomes.append(outcome)
        self.units[outcome] += self.stores.emulator.usage.units("write") - before
        self.stores.stream.clear()  # nothing reads it here: 300,000 records would only hold memory

    def record(self, view: View) -> str:
        shards = self.workload.base.write_shards
        if self.name == PLAIN:
            record_views(self.views, view.item, 1, shards, self.rng)
            return COUNTED
        try:
            with self.limited(view):
                seen = Seen.of(view.viewer, self.workload.dedupe_window_seconds, at=view.at)
                recorded = record_seen_view(self.views, view.item, shards, seen, self.rng)
        except RateLimited as refused:
            return REFUSED_IP if refused.allowance.kind == "ip" else REFUSED_VIEWER
        return DUPLICATE if recorded.duplicate else COUNTED

    def limited(self, view: View) -> Any:
        if self.name != PUBLIC:
            return nullcontext()
        return within(self.views, allowances(self.workload.limits, view.ip, view.viewer, 1, at=view.at))

    def result(self, offered: list[View], truth: list[str]) -> dict[str, Any]:
        total = len(offered)
        counts = {outcome: self.outcomes.count(outcome) for outcome in OUTCOMES}
        counted_truth: dict[str, int] = {}
        for view, outcome in zip(offered, truth, strict=True):
            if outcome == COUNTED:
                counted_truth[view.item] = counted_truth.get(view.item, 0) + 1
        units = sum(self.units.values())
        return {
            "views": total,
            "counts": counts,
            "shares": {outcome: count / total for outcome, count in counts.items()},
            "base_write_units": units,
            "base_write_units_per_view": units / total,
            "base_write_units_per_counted_view": units / counts[COUNTED] if counts[COUNTED] else None,
            "units_per_outcome": {
                outcome: self.units[outcome] / counts[outcome] for outcome in OUTCOMES if counts[outcome]
            },
            "throttled_requests": self.stores.emulator.usage.throttled_requests,
            "refused_ordinary_viewers": sum(
                1
                for view, outcome in zip(offered, self.outcomes, strict=True)
                if outcome in (REFUSED_IP, REFUSED_VIEWER) and view.viewer.startswith(ORDINARY)
            ),
            "outcomes_as_modelled": self.outcomes == truth,
            "exact_base": self.views.scan_totals() == counted_truth,
        }


def run_honest_counts(
    workload: HonestWorkload = HonestWorkload(), on_progress: Callable[[str, int], None] | None = None
) -> dict[str, Any]:
    """The scenario as the JSON document ``shardboard bench --scenario honest-counts --json`` prints."""
    offered = views_offered(workload)
    runs = {}
    for name in (PLAIN, VIEWER, PUBLIC):
        run = Run(workload, name)
        for position, view in enumerate(offered):
            run.offer(view)
            if on_progress and position % 10_000 == 0:
                on_progress(name, position)
        truth = [COUNTED] * len(offered) if name == PLAIN else expected(workload, offered, limited=name == PUBLIC)
        runs[name] = run.result(offered, truth)
    retries = run_retries(
        [(view.at, view.item) for view in offered],
        loss=workload.lost_response_share,
        flush_interval=workload.flush_interval,
        write_shards=workload.base.write_shards,
        seed=workload.seed,
        start_epoch=workload.base.start_epoch,
        on_progress=None if on_progress is None else lambda name, done: on_progress(f"retries {name}", done),
    )
    return {
        "scenario": "honest-counts",
        "workload": workload.as_json(),
        "runs": runs,
        "rate_windows": len({int(view.at // workload.limits.window_seconds) for view in offered}),
        "retries": retries,
    }
