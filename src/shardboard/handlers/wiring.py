"""The composition root: a function's settings, DynamoDB client and stores, built once per container.

Nothing is built at import. A Lambda container builds its collaborators at the first invocation from the
environment the template gives it; the local runtime and the tests hand the functions theirs with :func:`use`, so
no caller has to write the environment or reach into a cache.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.items_table import ItemStore
from shardboard.domain.clock import Clock
from shardboard.domain.items.taken_down import deleted_among
from shardboard.services.stores import Container
from shardboard.settings import Settings

_current: Container | None = None
_lock = threading.Lock()


def container() -> Container:
    """The functions' collaborators, built at the first call (never at import time)."""
    global _current  # noqa: PLW0603 - the one per-container singleton, behind use()
    if _current is None:
        with _lock:
            if _current is None:
                _current = Container.from_env()
    return _current


def use(replacement: Container | None) -> None:
    """Give the functions these collaborators (local runtime, tests); None: rebuild from the environment."""
    global _current  # noqa: PLW0603
    with _lock:
        _current = replacement


def settings() -> Settings:
    return container().settings


def clock() -> Clock:
    return container().clock


def epoch_seconds() -> float:
    """The container's clock as epoch seconds (what the aggregator stamps its period marks with)."""
    return container().clock().timestamp()


def client() -> Any:
    return container().dynamodb


def board_store() -> BoardStore:
    return container().board


def item_store() -> ItemStore:
    return container().items


def denied_ids(item_ids: Collection[str], consistent: bool = False) -> frozenset[str]:
    """Those of ``item_ids`` that are deleted, read afresh: the aggregator asks before and after each batch's writes."""
    return deleted_among(container().items, item_ids, consistent)
