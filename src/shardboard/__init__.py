"""shardboard: exact top-N leaderboards on DynamoDB.

The library (``from shardboard import Recorder, Leaderboard``) lives in :mod:`shardboard.client`; it is imported on
first use, so the Lambda functions, which import this package too, load none of it (nor the package metadata that
``__version__`` reads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardboard.client import (
        Around,
        BadInput,
        BufferFull,
        Entry,
        FlushResult,
        Leaderboard,
        MissingCredentials,
        NewestItems,
        NoItem,
        NoSnapshot,
        NotRanked,
        Page,
        RankAnswer,
        Recorder,
        RecorderClosed,
        RecorderStats,
        Standings,
        UnknownItem,
    )

    __version__: str

__all__ = [
    "Around",
    "BadInput",
    "BufferFull",
    "Entry",
    "FlushResult",
    "Leaderboard",
    "MissingCredentials",
    "NewestItems",
    "NoItem",
    "NoSnapshot",
    "NotRanked",
    "Page",
    "RankAnswer",
    "Recorder",
    "RecorderClosed",
    "RecorderStats",
    "Standings",
    "UnknownItem",
]


def __getattr__(name: str) -> Any:
    """The library's names, imported from shardboard.client at first use (PEP 562), and the installed version."""
    if name == "__version__":
        from shardboard.version import installed_version

        return installed_version()
    if name in __all__:
        from shardboard import client

        return getattr(client, name)
    raise AttributeError(f"module 'shardboard' has no attribute {name!r}")
