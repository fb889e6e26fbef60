"""A base install (no bench extra: no numpy, no matplotlib) runs every command but `bench`, which says what to add."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Runs the CLI in a fresh interpreter where numpy and matplotlib cannot be imported (None in sys.modules).
WITHOUT_BENCH_EXTRA = (
    "import sys; sys.modules['numpy'] = None; sys.modules['matplotlib'] = None; "
    "from shardboard_tools.cli import main; main()"
)


def shardboard_without_bench_extra(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_BENCH_EXTRA, *arguments],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_bench_without_the_extra_exits_2_with_the_pip_line():
    # Given an interpreter without numpy and matplotlib
    # When `shardboard bench` runs
    result = shardboard_without_bench_extra("bench", "--no-files")
    # Then it exits 2 with one line naming the extra, and no traceback
    assert result.returncode == 2
    assert result.stderr == ("shardboard: `shardboard bench` needs the bench extra: pip install 'shardboard[bench]'\n")


def test_plan_works_without_the_extra():
    # Given an interpreter without numpy and matplotlib
    # When `shardboard plan` runs (importing the whole command group, bench included)
    planned = shardboard_without_bench_extra("plan", "--views-per-sec", "1000", "--partitions", "4", "--json")
    # Then it succeeds: the exact overload probability needs no numpy
    assert planned.returncode == 0, planned.stderr
    document = json.loads(planned.stdout)
    assert document["partitions"] == 4
    assert document["overload_probability"] <= 0.05
