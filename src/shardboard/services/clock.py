"""The wall clock, the one every composition root hands in unless given another (a test's fixed one). Its own
module, without the stores' imports, so the CLI can name it before any command loads boto3."""

from __future__ import annotations

from datetime import UTC, datetime


def system_clock() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)
