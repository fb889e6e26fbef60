"""shardboard: exact top-N leaderboards on DynamoDB.

The library (``from shardboard import Recorder, Leaderboard``) lives in :mod:`shardboard.client`; it is imported on
first use, so the Lambda functions, which import this package too, load none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardboard.client import (
        BadInput,
        BufferFull,
        FlushResult,
        Leaderboard,
        NoSnapshot,
        Recorder,
        RecorderClosed,
        RecorderStats,
        Standings,
    )

__all__ = [
    "BadInput",
    "BufferFull",
    "FlushResult",
    "Leaderboard",
    "NoSnapshot",
    "Recorder",
    "RecorderClosed",
    "RecorderStats",
    "Standings",
]


def __getattr__(name: str) -> Any:
    """The library's names, imported from shardboard.client at first use (PEP 562)."""
    if name in __all__:
        from shardboard import client

        return getattr(client, name)
    raise AttributeError(f"module 'shardboard' has no attribute {name!r}")
