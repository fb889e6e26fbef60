"""One clock (docs/architecture.md): the domain reads no clock of its own, and the rest of the deployed core reads the
wall clock only through ``services/clock.py``, the clock a composition root hands in unless given another. The
source is scanned, so a new ``datetime.now()`` fails here, not in a test that runs across midnight."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "shardboard"

# Reads of the wall clock, by the module attribute they go through (a call or a reference such as a default).
WALL = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "localtime"),
    ("time", "gmtime"),
    ("time", "ctime"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
}
# Timers for durations and timeouts: no "now", so allowed where listed with their reason.
TIMERS = {("time", "monotonic"), ("time", "monotonic_ns"), ("time", "perf_counter"), ("time", "perf_counter_ns")}

THE_WALL_CLOCK = "services/clock.py"
TIMERS_ALLOWED = {
    "domain/boards.py": "the registry's TTL for a refused board (an age, never a time)",
    "domain/items/lookalike.py": "the look-alike check's cache TTL (an age)",
    "domain/items/records.py": "the deny and item caches' TTLs (an age)",
    "adapters/dynamodb.py": "a parallel scan's deadline (a Lambda's remaining time)",
    "handlers/read_api.py": "the board list's cache age in a warm container",
    "handlers/snapshot.py": "the job's deadline from the Lambda context's remaining time",
}


def clock_reads(path: Path) -> list[tuple[int, str]]:
    """Each read of a clock in ``path``: its line and what it reads (``time.time``, ``datetime.now``...)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            name = (node.value.id, node.attr)
            if name in WALL | TIMERS:
                found.append((node.lineno, ".".join(name)))
        elif isinstance(node, ast.ImportFrom) and node.module in {"time", "datetime"}:
            # ``from time import time`` would hide a read from the attribute check above
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names if (node.module, a.name) in WALL]
    return found


def reads_under(folder: Path) -> dict[str, list[tuple[int, str]]]:
    reads = {}
    for path in sorted(folder.rglob("*.py")):
        found = clock_reads(path)
        if found:
            reads[path.relative_to(SRC).as_posix()] = found
    return reads


def is_timer(read: str) -> bool:
    return tuple(read.split(".")) in TIMERS


def test_the_domain_reads_no_wall_clock():
    wall = {path: [r for r in found if not is_timer(r[1])] for path, found in reads_under(SRC / "domain").items()}
    assert {path: found for path, found in wall.items() if found} == {}


def test_the_core_reads_the_wall_clock_only_through_the_one_clock():
    reads = reads_under(SRC)
    wall = {path: [r for r in found if not is_timer(r[1])] for path, found in reads.items() if path != THE_WALL_CLOCK}
    assert {path: found for path, found in wall.items() if found} == {}
    # The one clock is there, and is the wall clock
    assert [read for _, read in reads[THE_WALL_CLOCK]] == ["datetime.now"]


def test_timers_measure_durations_only_where_listed():
    timers = {path: [r for r in found if is_timer(r[1])] for path, found in reads_under(SRC).items()}
    assert sorted(path for path, found in timers.items() if found) == sorted(TIMERS_ALLOWED)


def test_the_scan_sees_every_spelling_of_a_read(tmp_path):
    # A scan that misses a spelling would pass for ever: each one is found
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import time\nfrom datetime import UTC, date, datetime\nfrom time import time as now\n"
        "a = time.time()\nb = datetime.now(UTC)\nc = date.today()\nd = time.monotonic\ne = datetime.utcnow()\n",
        encoding="utf-8",
    )
    assert sorted(clock_reads(sample)) == [
        (3, "time.time"),
        (4, "time.time"),
        (5, "datetime.now"),
        (6, "date.today"),
        (7, "time.monotonic"),
        (8, "datetime.utcnow"),
    ]
