"""Typed settings, read once from the environment (Lambda sets them from template.yaml).

Domain code never reads ``os.environ``: it receives a :class:`Settings`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from shardboard.schedule import ScheduleError, interval_seconds

# The write-shard formula (docs/background.md): W >= writes/s x ceil(item KB) / 1000. A viral item at 10,000 views/s
# on <= 1 KB base items needs 10 shards; x2 headroom absorbs the random imbalance between shards, so no shard nears
# 1,000 WCU/s.
DEFAULT_WRITE_SHARDS = 20
# Dynamic sharding (docs/dynamic-sharding.md): a viral item may double its write shards up to this many. 128 shards
# carry ~100,000 views/s of 1 KB items; past that, each aggregate's applied_<k> attributes (one per shard) make
# every aggregate write cost more than one write unit.
DEFAULT_MAX_WRITE_SHARDS = 128
# Between two changes of one item's shard count: long enough for writers to see the last change (their refresh
# interval is 1 s) and for the partition's per-second windows to show its effect.
DEFAULT_SHARD_COOLDOWN_SECONDS = 5
# 10 board shards keep every leaderboard-GSI partition key below 1/10 of the board's index writes.
DEFAULT_BOARD_SHARDS = 10
DEFAULT_TOP_N = 100
DEFAULT_BOARD = "global"
DEFAULT_SCHEDULE = "rate(1 minute)"
# One request may record at most this many views (all of them in one base-table write: ADD views :count).
MAX_VIEWS_PER_REQUEST = 1000


class ConfigError(ValueError):
    """A setting is missing or malformed."""


def schedule_seconds(expression: str) -> int:
    """Smallest interval between two firings of an EventBridge ``rate(...)`` or ``cron(...)`` schedule."""
    try:
        return interval_seconds(expression)
    except ScheduleError as error:
        raise ConfigError(f"schedule {expression!r} is not a valid EventBridge schedule: {error}") from None


@dataclass(frozen=True)
class Settings:
    views_table: str = "shardboard-views"
    board_table: str = "shardboard-board"
    shards_table: str = "shardboard-shards"
    board: str = DEFAULT_BOARD
    write_shards: int = DEFAULT_WRITE_SHARDS
    max_write_shards: int = DEFAULT_MAX_WRITE_SHARDS
    shard_cooldown_seconds: int = DEFAULT_SHARD_COOLDOWN_SECONDS
    board_shards: int = DEFAULT_BOARD_SHARDS
    top_n: int = DEFAULT_TOP_N
    schedule: str = DEFAULT_SCHEDULE
    sparse_index: bool = True
    # Parallel aggregate writes per batch: a 1,000-record batch touches hundreds of items.
    write_concurrency: int = 16

    def __post_init__(self) -> None:
        for name in ("write_shards", "board_shards", "top_n", "write_concurrency"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_write_shards < self.write_shards or self.shard_cooldown_seconds < 0:
            raise ConfigError("max_write_shards must be >= write_shards and shard_cooldown_seconds >= 0")
        if not self.board or "#" in self.board:
            raise ConfigError(f"board name must be non-empty and contain no '#': {self.board!r}")
        schedule_seconds(self.schedule)  # fail at cold start, not at the first read of the refresh interval

    @property
    def refresh_seconds(self) -> int:
        return schedule_seconds(self.schedule)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, defaults: Settings | None = None) -> Settings:
        """Settings from the environment; anything unset keeps ``defaults`` (e.g. the template's values)."""
        env = os.environ if env is None else env
        defaults = defaults or cls()

        def integer(name: str, default: int) -> int:
            raw = env.get(name)
            if raw is None or raw == "":
                return default
            try:
                return int(raw)
            except ValueError:
                raise ConfigError(f"{name} must be an integer, got {raw!r}") from None

        return cls(
            views_table=env.get("VIEWS_TABLE", defaults.views_table),
            board_table=env.get("BOARD_TABLE", defaults.board_table),
            shards_table=env.get("SHARDS_TABLE", defaults.shards_table),
            board=env.get("BOARD_NAME", defaults.board),
            write_shards=integer("WRITE_SHARDS", defaults.write_shards),
            max_write_shards=integer("MAX_WRITE_SHARDS", defaults.max_write_shards),
            shard_cooldown_seconds=integer("SHARD_COOLDOWN_SECONDS", defaults.shard_cooldown_seconds),
            board_shards=integer("BOARD_SHARDS", defaults.board_shards),
            top_n=integer("TOP_N", defaults.top_n),
            schedule=env.get("SNAPSHOT_SCHEDULE", defaults.schedule),
            sparse_index=env.get("SPARSE_INDEX", str(defaults.sparse_index)).lower() in ("1", "true", "yes"),
            write_concurrency=integer("WRITE_CONCURRENCY", defaults.write_concurrency),
        )
