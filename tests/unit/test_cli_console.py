"""The CLI's console reads COLUMNS when a command prints, not when the module was imported: a process that started
with COLUMNS (pytest-xdist's workers have COLUMNS=80) and no longer has it prints unwrapped lines outside a terminal."""

from __future__ import annotations

import io

from shardboard_tools.cli.common import Screen


def test_columns_at_import_is_not_kept_once_the_environment_drops_it(monkeypatch):
    # Given a console built while COLUMNS said 80
    monkeypatch.setenv("COLUMNS", "80")
    screen = Screen()
    screen.file = io.StringIO()
    line = "x" * 200
    # When COLUMNS is gone by the time it prints outside a terminal
    monkeypatch.delenv("COLUMNS")
    screen.print(line)
    # Then the line is whole; while COLUMNS asks for a width, it wraps there
    assert screen.file.getvalue().splitlines() == [line]
    monkeypatch.setenv("COLUMNS", "80")
    screen.file = io.StringIO()
    screen.print(line)
    assert [len(part) for part in screen.file.getvalue().splitlines()] == [80, 80, 40]
