"""The installed package's version (``shardboard.__version__``, the OpenAPI document's): imports nothing of it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def installed_version() -> str:
    try:
        return version("shardboard")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
