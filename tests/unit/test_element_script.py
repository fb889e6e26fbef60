"""The embeddable element's module: small enough to embed anywhere, and shipped inside the package."""

from __future__ import annotations

import gzip
import tomllib
from importlib import resources
from pathlib import Path

from shardboard.handlers.read_api import element_script

ROOT = Path(__file__).resolve().parents[2]
# The budget for what a site's visitors download (gzip, as a CDN or a server compresses it).
MAX_GZIPPED_BYTES = 10 * 1024


def test_the_element_is_at_most_10_kb_gzipped():
    # Given the module the read function serves
    body, _ = element_script()

    # When it is compressed as a server compresses it
    gzipped = len(gzip.compress(body, compresslevel=9))

    # Then it is within the budget
    assert 0 < gzipped <= MAX_GZIPPED_BYTES, f"{gzipped} bytes gzipped"


def test_the_element_is_package_data_of_the_deployed_package():
    # The Lambda package (CodeUri src/) and a wheel both carry it: it sits in the package and pyproject lists it.
    packaged = resources.files("shardboard") / "web" / "shardboard.js"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert packaged.is_file()
    assert "web/*.js" in project["tool"]["setuptools"]["package-data"]["shardboard"]


def test_the_elements_version_is_its_content_hash():
    import hashlib

    body, version = element_script()
    assert version == hashlib.sha256(body).hexdigest()[:16]
    assert b'customElements.define("shardboard-board"' in body
