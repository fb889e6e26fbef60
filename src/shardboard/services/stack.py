"""The stack's own settings, as its clients see them: what the deploy (or `shardboard init`) published, read in one
GetItem, over the defaults a client starts from. The library and every CLI command against a stack call these."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from shardboard.adapters.stack_config import Lookup, Published, publish, read_published
from shardboard.domain.clock import Clock
from shardboard.services.clock import system_clock
from shardboard.settings import Settings

__all__ = ["Lookup", "Published", "publish_settings", "published_settings"]


def published_settings(client: Any, defaults: Settings, keep: Collection[str] = ()) -> tuple[Settings, Lookup]:
    """``defaults`` under what the stack named by its board table published; ``keep``: variables the caller set
    itself, which the published ones do not replace. With nothing published, ``defaults`` and the lookup's reason."""
    lookup = read_published(client, defaults.board_table)
    if lookup.published is None:
        return defaults, lookup
    return defaults.with_published(lookup.published.variables, keep=keep), lookup


def publish_settings(client: Any, settings: Settings, by: str, clock: Clock = system_clock) -> Published:
    """Publish ``settings`` as the stack's own (one PutItem: a deploy or a re-run of init wins whole), stamped with
    ``clock``'s time."""
    return publish(client, settings.board_table, settings.published_variables(), by, when=clock())
