"""`make build` and `make browser` on machines unlike ours: found tools are used, missing ones get one line.

Each case runs the real Makefile recipe with PATH reduced to a directory of stand-in commands, so no package is
installed and nothing is built.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make") or "make"


def stand_ins(directory: Path, scripts: dict[str, str] | None = None) -> Path:
    """A PATH directory with `id` and `head` (the Makefile uses them) and a script per entry (name -> bash body)."""
    directory.mkdir()
    for tool in ("id", "head"):
        (directory / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    for name, body in (scripts or {}).items():
        script = directory / name
        script.write_text(f"#!/bin/bash\n{body}\n", encoding="utf-8")
        script.chmod(0o755)
    return directory


def make(target: str, path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MAKE, "-s", "--no-print-directory", "-C", str(ROOT), target, *arguments],
        env={"PATH": str(path), "HOME": str(path.parent)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_build_without_python312_says_what_to_install(tmp_path):
    result = make("build", stand_ins(tmp_path / "bin"), "-o", "sam", "SAM=true")
    assert result.returncode == 2
    assert result.stdout == (
        "make build: sam build needs python3.12 (the Lambda runtime) on PATH: install it"
        " (apt-get install python3.12, pyenv install 3.12, or python.org)\n"
    )


def test_build_uses_python312_from_path(tmp_path):
    path = stand_ins(tmp_path / "bin", {"python3.12": "exit 0"})
    result = make("build", path, "-o", "sam", "SAM=echo sam")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"echo sam build --template template.yaml  # with {path}/python3.12",
        "sam build --template template.yaml",
    ]


def test_the_sam_cli_runs_without_telemetry(tmp_path):
    sam = 'echo "sam $* (telemetry ${SAM_CLI_TELEMETRY:-on})"'
    path = stand_ins(tmp_path / "bin", {"python3.12": "exit 0", "sam": sam})
    result = make("build", path, "-o", "sam", f"SAM={path}/sam")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "sam build --template template.yaml (telemetry 0)"


def venv_with_playwright(tmp_path: Path, exit_code: int) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / ".installed").touch()
    playwright = venv / "bin" / "playwright"
    playwright.write_text(f'#!/bin/bash\necho "playwright $*"\nexit {exit_code}\n', encoding="utf-8")
    playwright.chmod(0o755)
    return venv


def test_browser_installs_nothing_when_chromium_is_on_path(tmp_path):
    path = stand_ins(tmp_path / "bin", {"chromium": "exit 0", "apt-get": 'echo "apt-get $*"'})
    venv = venv_with_playwright(tmp_path, 0)
    result = make("browser", path, f"VENV={venv}", "-o", f"{venv}/.installed")
    assert (result.returncode, result.stdout) == (0, "")


def test_browser_says_it_uses_apt_then_falls_back_to_playwright(tmp_path):
    path = stand_ins(tmp_path / "bin", {"apt-get": 'echo "apt-get $*"; exit 100'})
    venv = venv_with_playwright(tmp_path, 0)
    result = make("browser", path, f"VENV={venv}", "-o", f"{venv}/.installed", "SUDO=")  # as root
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "make browser: installing Debian's chromium with apt-get (about 115 packages on a bare machine)",
        "apt-get update -qq",
        "make browser: apt-get failed; trying Playwright's Chromium download",
        "playwright install chromium",
    ]


def test_browser_without_apt_or_download_fails_with_one_line(tmp_path):
    venv = venv_with_playwright(tmp_path, 1)
    result = make("browser", stand_ins(tmp_path / "bin"), f"VENV={venv}", "-o", f"{venv}/.installed")
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        "playwright install chromium",
        f"make browser: no Chromium for the page test: install Debian's chromium or run '{venv}/bin/playwright install"
        " chromium'",
    ]
