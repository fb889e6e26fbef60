"""A pip-installed `shardboard` works outside the repository: template.yaml ships inside the tools package."""

from __future__ import annotations

import tomllib
from pathlib import Path

from shardboard_tools.template import PACKAGED_TEMPLATE, Template, default_template_path

ROOT = Path(__file__).resolve().parents[2]


def test_the_packaged_template_is_the_root_template():
    # The package's template.yaml is a symlink to the root file (one source of truth); a checkout without
    # symlinks would leave a one-line text file there, which this catches.
    assert PACKAGED_TEMPLATE == ROOT / "tools" / "shardboard_tools" / "template.yaml"
    assert PACKAGED_TEMPLATE.read_bytes() == (ROOT / "template.yaml").read_bytes()


def test_the_wheel_lists_the_template_as_package_data():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "template.yaml" in project["tool"]["setuptools"]["package-data"]["shardboard_tools"]


def test_outside_the_repository_the_packaged_template_is_used(tmp_path, monkeypatch):
    # Given a working directory with no template.yaml and no SHARDBOARD_TEMPLATE
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHARDBOARD_TEMPLATE", raising=False)
    # When the template is loaded without a path
    template = Template.load()
    # Then it is the packaged one, with the application's tables
    assert default_template_path() == PACKAGED_TEMPLATE
    assert set(template.table_resources()) >= {"ViewsTable", "BoardTable"}


def test_a_template_in_the_working_directory_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHARDBOARD_TEMPLATE", raising=False)
    (tmp_path / "template.yaml").write_text("Resources: {}\n", encoding="utf-8")
    assert default_template_path() == tmp_path / "template.yaml"
