"""Snapshot heads for tests that build one by hand (domain/publishing/head.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shardboard.domain.publishing.head import Head, RankBlock, Row, rows


def head_of_pairs(
    items: Sequence[Sequence[Any]],
    *,
    now: str = "2026-11-23T17:00:00.000Z",
    spare: Sequence[Sequence[Any]] = (),
    threshold: int = 0,
    rank: RankBlock | None = None,
    board: str = "global",
    version: int = 1,
) -> Head:
    """An all-time head of ``[id, views]`` pairs (board order); the fields a reader does not use get plain values."""
    return Head(
        board=board,
        period={"kind": "all"},
        bucket="all",
        version=version,
        generated_at=now,
        items=rows(items),
        items_read=len(items),
        threshold=threshold,
        shard_hits={},
        digest="d" * 64,
        spare=rows(spare),
        rank=rank,
    )


def pairs(entries: Sequence[Row]) -> list[list[Any]]:
    """Rows as the ``[id, views]`` lists they are stored as."""
    return [list(entry) for entry in entries]
