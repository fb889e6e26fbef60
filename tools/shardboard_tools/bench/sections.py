"""Marked sections of docs/benchmarks.md: each scenario that is not the main run rewrites only its own section.

A section is the text between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``. The main run rewrites the whole file
and carries every marked section of the old file over, so a scenario's figures survive until it runs again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_ANY = re.compile(r"<!-- ([a-z0-9-]+):start -->.*?<!-- \1:end -->\n?", re.DOTALL)


@dataclass(frozen=True)
class Section:
    name: str

    @property
    def start(self) -> str:
        return f"<!-- {self.name}:start -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}:end -->"

    def _pattern(self) -> re.Pattern[str]:
        return re.compile(re.escape(self.start) + ".*?" + re.escape(self.end) + "\n?", re.DOTALL)

    def replace_in(self, document: str, part: str) -> str:
        """``document`` with this section replaced by ``part`` (appended when it has none)."""
        if self._pattern().search(document):
            return self._pattern().sub(lambda _: part, document, count=1)
        return document.rstrip("\n") + "\n\n" + part

    def found_in(self, document: str) -> str | None:
        """This section of ``document``, markers included, or None."""
        found = self._pattern().search(document)
        return found.group(0) if found else None

    def write(self, path: Path, part: str) -> None:
        """Replace this section of the file at ``path`` (created with a title when missing)."""
        document = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
        path.write_text(self.replace_in(document, part), encoding="utf-8")


def write_keeping_sections(path: Path, document: str) -> None:
    """Write ``document`` to ``path``, carrying over every marked section the old file had and ``document`` lacks."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    for found in _ANY.finditer(old):
        section = Section(found.group(1))
        if section.found_in(document) is None:
            document = section.replace_in(document, found.group(0))
    path.write_text(document, encoding="utf-8")
