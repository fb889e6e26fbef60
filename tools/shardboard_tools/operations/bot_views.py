"""Crawlers' views per board and period (`shardboard boards`): what the reserved boards hold, by the board the crawler
named (``bots`` for the global board, ``bots:<board>`` for a category board), from one scan of the board table."""

from __future__ import annotations

from collections import defaultdict

from shardboard.domain.boards import BOTS_BOARD, BOTS_PREFIX, is_reserved
from shardboard.domain.periods import kind_of
from shardboard.services.counts import stored_counts
from shardboard.services.stores import Container


def bot_views(stores: Container) -> dict[str, dict[str, int]]:
    """Board -> "kind/bucket" (or "all") -> crawler views, for every board a crawler's view named."""
    found: dict[str, dict[str, int]] = defaultdict(dict)
    for period, counts in stored_counts(stores.board, stores.settings.policy.periods).counts.items():
        if not is_reserved(period.board):
            continue
        named = stores.settings.board if period.board == BOTS_BOARD else period.board[len(BOTS_PREFIX) :]
        key = kind_of(period.kind).pick(all_time=period.kind, period=f"{period.kind}/{period.bucket}")
        found[named][key] = found[named].get(key, 0) + sum(counts.values())
    return dict(found)
