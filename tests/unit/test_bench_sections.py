"""docs/benchmarks.md's marked sections: each scenario rewrites its own; the main run carries all of them over."""

from __future__ import annotations

from pathlib import Path

from shardboard_tools.bench.sections import Section, write_keeping_sections

READS, OTHER = Section("reads"), Section("other-one")


def test_a_section_is_replaced_in_place_and_appended_when_missing() -> None:
    part = f"{READS.start}\n## Reads\n{READS.end}\n"
    document = READS.replace_in("# Benchmarks\n\nintro\n", part)
    assert document == "# Benchmarks\n\nintro\n\n" + part
    again = READS.replace_in(document + "after\n", part.replace("Reads", "Reads (2)"))
    assert again.count(READS.start) == 1 and "(2)" in again and again.endswith("after\n")
    assert READS.found_in(again) == part.replace("Reads", "Reads (2)")
    assert OTHER.found_in(again) is None


def test_the_main_run_keeps_every_marked_section_it_does_not_write_itself(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.md"
    reads = f"{READS.start}\nold reads\n{READS.end}\n"
    other = f"{OTHER.start}\nother figures\n{OTHER.end}\n"
    path.write_text(OTHER.replace_in(READS.replace_in("# Benchmarks: old\n", reads), other), encoding="utf-8")
    # A document that brings its own reads section keeps it; the other one is carried over
    new_reads = f"{READS.start}\nnew reads\n{READS.end}\n"
    write_keeping_sections(path, "# Benchmarks: new\n\n" + new_reads)
    document = path.read_text(encoding="utf-8")
    assert document.startswith("# Benchmarks: new\n") and "old" not in document
    assert READS.found_in(document) == new_reads and OTHER.found_in(document) == other


def test_writing_a_section_creates_the_file_with_a_title(tmp_path: Path) -> None:
    path = tmp_path / "benchmarks.md"
    READS.write(path, f"{READS.start}\nx\n{READS.end}\n")
    assert path.read_text(encoding="utf-8").startswith("# Benchmarks\n\n" + READS.start)
    write_keeping_sections(tmp_path / "fresh.md", "# Benchmarks\n")
    assert (tmp_path / "fresh.md").read_text(encoding="utf-8") == "# Benchmarks\n"
