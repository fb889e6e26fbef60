"""Typed settings, read once from the environment (Lambda sets them from template.yaml).

Domain code never reads ``os.environ`` nor these settings: they build the small policy values it takes
(:attr:`Settings.policy`, :attr:`Settings.shard_policy`); this module may import the domain, never the reverse.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from shardboard.domain.boards import GLOBAL_BOARD, BoardPolicy, BoardPolicyError
from shardboard.domain.periods import DEFAULT_PERIODS, HOUR, PeriodError, kind_of, known_kind
from shardboard.domain.policy import Indexing, Keep, Keeping, Leaderboards, Periods
from shardboard.domain.trending import (
    DEFAULT_HALF_LIFE_HOURS,
    TRENDING,
    TRENDING_RETENTION_EPOCHS,
    HalfLifeError,
    check_half_life,
)
from shardboard.domain.windows import parse_names, split_names
from shardboard.domain.writing.dedupe import DEFAULT_DEDUPE_WINDOW_SECONDS, MIN_DEDUPE_WINDOW_SECONDS
from shardboard.domain.writing.dynamic_sharding import ShardPolicy
from shardboard.domain.writing.rate_limit import RateLimits
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
DEFAULT_CATEGORY_TOP_N = 100
# P: the entries whose metadata the snapshot head inlines (issue 13): a frontend's first page renders from one GetItem.
# 100 x 2 KB documents keep the head near 200 KB, under the 350 KB budget (domain/publishing/head_meta.py) and 400 KB
# items.
DEFAULT_PAGE_SIZE = 100
# Ranked versions (docs/proposals/items-and-ranks.md section 3): the depth D to which a period's exact ranking is
# kept for rank lookups, and how often it is rewritten. D <= N keeps today's behaviour (the head is the ranking).
DEFAULT_RANK_DEPTH = 10_000
DEFAULT_CATEGORY_RANK_DEPTH = 1_000
DEFAULT_RANK_REFRESH_SECONDS = 60
# How long a superseded ranked version stays readable before the snapshot job deletes it.
DEFAULT_CURSOR_TTL_SECONDS = 900
DEFAULT_BOARD = GLOBAL_BOARD
DEFAULT_SCHEDULE = "rate(1 minute)"
DEFAULT_POLICY = BoardPolicy()
# The stack the tables are named after unless told otherwise (`shardboard --stack`, the library's ``stack``).
DEFAULT_STACK = "shardboard"
# A CloudFormation stack name: a letter, then letters, digits and hyphens, at most 128 characters.
STACK_NAME = re.compile(r"[A-Za-z][-A-Za-z0-9]{0,127}")


# What a stack publishes for its clients (adapters/stack_config.py), by the environment variable the template gives
# its functions: everything a writer or reader must agree on with them. The table names are left out (a client
# derives them from the stack name), and so is WRITE_CONCURRENCY (each process's own tuning, not a contract).
PUBLISHED_VARIABLES: dict[str, str] = {
    "WRITE_SHARDS": "write_shards",
    "MAX_WRITE_SHARDS": "max_write_shards",
    "SHARD_COOLDOWN_SECONDS": "shard_cooldown_seconds",
    "BOARD_SHARDS": "board_shards",
    "TOP_N": "top_n",
    "CATEGORY_TOP_N": "category_top_n",
    "BOARDS": "board_policy",
    "RANK_DEPTH": "rank_depth",
    "CATEGORY_RANK_DEPTH": "category_rank_depth",
    "RANK_REFRESH_SECONDS": "rank_refresh_seconds",
    "CURSOR_TTL_SECONDS": "cursor_ttl_seconds",
    "PERIODS": "periods",
    "RETENTION_HOURS": "retention_hours",
    "RETENTION_DAYS": "retention_days",
    "RETENTION_WEEKS": "retention_weeks",
    "RETENTION_MONTHS": "retention_months",
    "TRENDING_HALF_LIFE_HOURS": "trending_half_life_hours",
    "SNAPSHOT_SCHEDULE": "schedule",
    "SPARSE_INDEX": "sparse_index",
    "DEDUPE_WINDOW": "dedupe_window_seconds",
    "VIEWS_PER_IP_PER_MINUTE": "views_per_ip_per_minute",
    "VIEWS_PER_VIEWER_PER_MINUTE": "views_per_viewer_per_minute",
    "REQUIRE_ITEMS": "require_items",
    "PAGE_SIZE": "page_size",
    "SNAPSHOT_SPARE": "snapshot_spare",
    "ALLOWED_ORIGINS": "allowed_origins",
    "ANONYMOUS_VIEWERS": "anonymous_viewers",
}
# Any origin may send views from a browser (PublicViews=true, `shardboard serve`): what ALLOWED_ORIGINS holds then.
ANY_ORIGIN = "*"


def table_name(stack: str, table: str) -> str:
    """The name of one of a stack's tables (``table``: views, board, shards or items): template.yaml names each
    ``!Sub "${AWS::StackName}-<table>"``; tests/integration/test_client_moto.py checks the two agree."""
    return f"{stack}-{table}"


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
    views_table: str = table_name(DEFAULT_STACK, "views")
    board_table: str = table_name(DEFAULT_STACK, "board")
    shards_table: str = table_name(DEFAULT_STACK, "shards")
    items_table: str = table_name(DEFAULT_STACK, "items")
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
    # Calendar periods kept besides all time, finest first (docs/boards-and-periods.md), then rolling windows
    # (docs/rolling-windows.md), as the Periods parameter names them; and N of category boards.
    periods: tuple[str, ...] = DEFAULT_PERIODS
    category_top_n: int = DEFAULT_CATEGORY_TOP_N
    # How long past periods stay readable (then their snapshots and entries expire by TTL), in units of their kind.
    retention_hours: int = 48
    retention_days: int = 35
    retention_weeks: int = 16
    retention_months: int = 24
    # The trending kind's half-life in hours (docs/trending.md): its epoch's length and its weights.
    trending_half_life_hours: int = DEFAULT_HALF_LIFE_HOURS
    # A view that names a viewer counts once per viewer, item and fixed window of this many seconds (DedupeWindow).
    dedupe_window_seconds: int = DEFAULT_DEDUPE_WINDOW_SECONDS
    # Views per source IP and per viewer per minute that POST /views admits; 0 = off. The template passes
    # ViewsPerIpPerMinute and ViewsPerViewerPerMinute only with PublicViews=true (0 otherwise: a server-side writer
    # sends many users' views from one IP), so the functions enforce whatever they are given.
    views_per_ip_per_minute: int = 0
    views_per_viewer_per_minute: int = 0
    # RequireItems: a view of an id never created with PUT /item is refused (404, nothing written).
    require_items: bool = False
    # PageSize (P): the head's first P entries carry their metadata (domain/publishing/head_meta.py).
    page_size: int = DEFAULT_PAGE_SIZE
    rank_depth: int = DEFAULT_RANK_DEPTH
    category_rank_depth: int = DEFAULT_CATEGORY_RANK_DEPTH
    rank_refresh_seconds: int = DEFAULT_RANK_REFRESH_SECONDS
    cursor_ttl_seconds: int = DEFAULT_CURSOR_TTL_SECONDS
    # SnapshotSpare (R): entries a snapshot keeps past N, so a hide refills every head at once (issue 13 takedowns).
    snapshot_spare: int = 32
    # Boards: which category boards writers may create (domain/boards.py): at most max, matching the pattern if any.
    board_policy: BoardPolicy = DEFAULT_POLICY
    # EventBusName: the EventBridge bus the snapshot job publishes board events to (docs/events.md); "" = none.
    event_bus: str = ""
    # The pages whose browsers may send views (the Origin header of POST /views): PublicViews's origins, or "*".
    allowed_origins: tuple[str, ...] = (ANY_ORIGIN,)
    # A browser's view (a text/plain body) without a viewer gets a daily anonymous id (docs/honest-counts.md); a
    # site opts out with AnonymousViewers "false" (template Mappings, Tuning/Views).
    anonymous_viewers: bool = True
    # The token the CDN sends with a visitor's address (template: EDGE_TOKEN, the record function only); "" = no CDN.
    edge_token: str = ""

    def __post_init__(self) -> None:
        for name in ("write_shards", "board_shards", "top_n", "write_concurrency", "category_top_n", "page_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_write_shards < self.write_shards or self.shard_cooldown_seconds < 0:
            raise ConfigError("max_write_shards must be >= write_shards and shard_cooldown_seconds >= 0")
        if not self.board or "#" in self.board:
            raise ConfigError(f"board name must be non-empty and contain no '#': {self.board!r}")
        if self.dedupe_window_seconds < MIN_DEDUPE_WINDOW_SECONDS:
            raise ConfigError(
                f"dedupe_window_seconds must be >= {MIN_DEDUPE_WINDOW_SECONDS}, got {self.dedupe_window_seconds}"
            )
        for name in (
            "views_per_ip_per_minute",
            "views_per_viewer_per_minute",
            "rank_depth",
            "category_rank_depth",
            "snapshot_spare",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0 (0 = off), got {getattr(self, name)}")
        for name in ("rank_refresh_seconds", "cursor_ttl_seconds"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        schedule_seconds(self.schedule)  # fail at cold start, not at the first read of the refresh interval
        try:
            check_half_life(self.trending_half_life_hours)
        except HalfLifeError as error:
            raise ConfigError(f"trending_half_life_hours: {error}") from None
        if HOUR not in self.periods and any(kind_of(kind).decays for kind in self.periods if known_kind(kind)):
            object.__setattr__(self, "periods", parse_names(",".join(self.periods)))

    @property
    def refresh_seconds(self) -> int:
        return schedule_seconds(self.schedule)

    @property
    def rate_limits(self) -> RateLimits:
        return RateLimits(self.views_per_ip_per_minute, self.views_per_viewer_per_minute)

    @cached_property
    def policy(self) -> Leaderboards:
        """The policy values the aggregator and the snapshot job decide by (the domain never reads the settings)."""
        retention = (
            ("hour", self.retention_hours),
            ("day", self.retention_days),
            ("week", self.retention_weeks),
            ("month", self.retention_months),
            (TRENDING, TRENDING_RETENTION_EPOCHS),
        )
        kinds, windows = split_names(self.periods)
        return Leaderboards(
            board=self.board,
            periods=Periods(kinds, retention, windows, self.trending_half_life_hours),
            index=Indexing(self.sparse_index, self.board_shards),
            keeping=Keeping(
                self._keep(self.top_n, self.rank_depth),
                self._keep(self.category_top_n, self.category_rank_depth),
                page_size=self.page_size,
                rank_refresh_seconds=self.rank_refresh_seconds,
                cursor_ttl_seconds=self.cursor_ttl_seconds,
            ),
        )

    @cached_property
    def shard_policy(self) -> ShardPolicy:
        """How writes are sharded: the write shards of an item that never grew, the most it may grow to, and the
        cooldown between two changes of its count."""
        return ShardPolicy(self.write_shards, self.max_write_shards, self.shard_cooldown_seconds)

    def _keep(self, top_n: int, configured_depth: int) -> Keep:
        """D is never fewer than the N + R a head gathers (the T a deep gather publishes must keep the spares exact
        too); D = N when RankDepth <= N turns ranked versions off."""
        depth = top_n if configured_depth <= top_n else max(configured_depth, top_n + self.snapshot_spare)
        return Keep(top_n, self.snapshot_spare, depth)

    @property
    def anchor(self) -> str:
        """The period kind base counters are keyed by (the finest configured one; all time when none is)."""
        return self.policy.periods.anchor

    def top_n_of(self, board: str) -> int:
        return self.policy.keep(board).top_n

    def rank_depth_of(self, board: str) -> int:
        """D of a board: its ranked versions hold the exact top D (see ``_keep``)."""
        return self.policy.keep(board).depth

    def ranked_versions(self, board: str) -> bool:
        """Whether a board keeps ranked versions: only when D > N (with D = N the head is the ranking)."""
        return self.policy.keep(board).ranked_versions

    def retention(self, kind: str) -> int:
        return self.policy.periods.kept(kind)

    @classmethod
    def for_stack(cls, stack: str = DEFAULT_STACK, **changes: Any) -> Settings:
        """The template's default settings with the tables of ``stack`` (as ``shardboard --stack`` names them);
        ``changes`` set the parameters a deployment changed (``write_shards=40``, ``periods=("hour", "day")``)."""
        if not isinstance(stack, str) or not STACK_NAME.fullmatch(stack):
            raise ConfigError(f"stack must be a CloudFormation stack name (a letter, then [-A-Za-z0-9]), got {stack!r}")
        tables = {f"{table}_table": table_name(stack, table) for table in ("views", "board", "shards", "items")}
        return cls(**{**tables, **changes})

    def published_variables(self) -> dict[str, str]:
        """What a stack with these settings publishes: :data:`PUBLISHED_VARIABLES`, written as the template writes
        them, so :meth:`with_published` (``from_env``) reads back exactly these settings."""

        def text(value: object) -> str:
            if isinstance(value, bool):
                return str(value).lower()
            if isinstance(value, tuple):
                return ",".join(value)
            return str(value)

        return {name: text(getattr(self, field)) for name, field in PUBLISHED_VARIABLES.items()}

    def with_published(self, variables: Mapping[str, str], keep: Collection[str] = ()) -> Settings:
        """These settings with what a stack published (its functions' variables) in place of the template's
        defaults; variables named in ``keep`` (a caller's explicit ``-p``) and the table names stay as they are.
        A variable this version does not know (from a newer stack) is ignored; a malformed one raises ConfigError."""
        chosen = {name: value for name, value in variables.items() if name in PUBLISHED_VARIABLES and name not in keep}
        return Settings.from_env(chosen, defaults=self)

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
            items_table=env.get("ITEMS_TABLE", defaults.items_table),
            board=env.get("BOARD_NAME", defaults.board),
            write_shards=integer("WRITE_SHARDS", defaults.write_shards),
            max_write_shards=integer("MAX_WRITE_SHARDS", defaults.max_write_shards),
            shard_cooldown_seconds=integer("SHARD_COOLDOWN_SECONDS", defaults.shard_cooldown_seconds),
            board_shards=integer("BOARD_SHARDS", defaults.board_shards),
            top_n=integer("TOP_N", defaults.top_n),
            schedule=env.get("SNAPSHOT_SCHEDULE", defaults.schedule),
            sparse_index=env.get("SPARSE_INDEX", str(defaults.sparse_index)).lower() in ("1", "true", "yes"),
            write_concurrency=integer("WRITE_CONCURRENCY", defaults.write_concurrency),
            periods=periods(env.get("PERIODS"), defaults.periods),
            category_top_n=integer("CATEGORY_TOP_N", defaults.category_top_n),
            retention_hours=integer("RETENTION_HOURS", defaults.retention_hours),
            retention_days=integer("RETENTION_DAYS", defaults.retention_days),
            retention_weeks=integer("RETENTION_WEEKS", defaults.retention_weeks),
            retention_months=integer("RETENTION_MONTHS", defaults.retention_months),
            trending_half_life_hours=integer("TRENDING_HALF_LIFE_HOURS", defaults.trending_half_life_hours),
            dedupe_window_seconds=integer("DEDUPE_WINDOW", defaults.dedupe_window_seconds),
            views_per_ip_per_minute=integer("VIEWS_PER_IP_PER_MINUTE", defaults.views_per_ip_per_minute),
            views_per_viewer_per_minute=integer("VIEWS_PER_VIEWER_PER_MINUTE", defaults.views_per_viewer_per_minute),
            require_items=env.get("REQUIRE_ITEMS", str(defaults.require_items)).lower() in ("1", "true", "yes"),
            page_size=integer("PAGE_SIZE", defaults.page_size),
            rank_depth=integer("RANK_DEPTH", defaults.rank_depth),
            category_rank_depth=integer("CATEGORY_RANK_DEPTH", defaults.category_rank_depth),
            rank_refresh_seconds=integer("RANK_REFRESH_SECONDS", defaults.rank_refresh_seconds),
            cursor_ttl_seconds=integer("CURSOR_TTL_SECONDS", defaults.cursor_ttl_seconds),
            snapshot_spare=integer("SNAPSHOT_SPARE", defaults.snapshot_spare),
            board_policy=board_policy(env.get("BOARDS"), defaults.board_policy),
            event_bus=env.get("EVENT_BUS_NAME", defaults.event_bus),
            allowed_origins=origins(env.get("ALLOWED_ORIGINS"), defaults.allowed_origins),
            anonymous_viewers=env.get("ANONYMOUS_VIEWERS", str(defaults.anonymous_viewers)).lower()
            in ("1", "true", "yes"),
            edge_token=env.get("EDGE_TOKEN", defaults.edge_token),
        )

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a request from ``origin`` (its Origin header; None: not a browser's) may record views."""
        return origin is None or ANY_ORIGIN in self.allowed_origins or origin in self.allowed_origins


def origins(raw: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """ALLOWED_ORIGINS: "*" or origins (``https://example.com``) separated by spaces or commas."""
    if raw is None or not raw.strip():
        return default
    found = tuple(part for part in raw.replace(",", " ").split() if part)
    for origin in found:
        if origin != ANY_ORIGIN and not re.fullmatch(r"https?://[^/\s]+", origin):
            raise ConfigError(f"ALLOWED_ORIGINS: {origin!r} is not an origin (scheme://host[:port]) nor *")
    return found


def periods(raw: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if raw is None:
        return default
    try:
        return parse_names(raw)
    except PeriodError as error:
        raise ConfigError(f"PERIODS: {error}") from None


def board_policy(raw: str | None, default: BoardPolicy) -> BoardPolicy:
    if raw is None:
        return default
    try:
        return BoardPolicy.parse(raw)
    except BoardPolicyError as error:
        raise ConfigError(f"BOARDS: {error}") from None
