"""The stack's stores, built once from its settings and one DynamoDB client: the bundle of ports the use cases run
over. The Lambda functions keep one per container (``shardboard.handlers.wiring``); the library and the CLI build
their own."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from shardboard.adapters.board_registry import BoardRegistryStore
from shardboard.adapters.board_table import BoardStore

# The library's client, built from a boto3 session, and what it raises without credentials.
from shardboard.adapters.dynamodb import MissingCredentials, dynamodb_client, session_client
from shardboard.adapters.event_bus import EventBusSink, events_client
from shardboard.adapters.items_table import ItemStore
from shardboard.adapters.shards_table import DailyKeyStore, ShardMetadataStore
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.boards import BoardGate
from shardboard.domain.clock import Clock, EpochSeconds
from shardboard.domain.items.lookalike import LookAlikeCheck
from shardboard.domain.items.records import DELETED, SKELETONS, DenyCheck, ItemAdmission, admit_all
from shardboard.domain.items.taken_down import TakenDown
from shardboard.domain.ports import EventSink
from shardboard.domain.writing.dynamic_sharding import ShardRouter
from shardboard.domain.writing.visitors import AnonymousViewers
from shardboard.services.clock import system_clock
from shardboard.services.events import Announcer
from shardboard.settings import Settings

__all__ = ["Container", "MissingCredentials", "session_client"]


class Container:
    """One container's collaborators: the stores share one client; the shard router's cache lives as long as it.
    ``clock`` is the one "now" of its use cases (recording, reading, the snapshot job)."""

    def __init__(
        self, settings: Settings, dynamodb: Any, events: EventSink | None = None, clock: Clock = system_clock
    ) -> None:
        self.settings = settings
        self.dynamodb = dynamodb
        self._events = events
        self.clock = clock

    @classmethod
    def from_env(cls) -> Container:
        """What a Lambda container builds: settings from its environment, the default client."""
        return cls(Settings.from_env(), dynamodb_client())

    @cached_property
    def views(self) -> ViewStore:
        return ViewStore(self.dynamodb, self.settings.views_table, anchor=self.settings.anchor, clock=self.clock)

    @cached_property
    def board(self) -> BoardStore:
        return BoardStore(self.dynamodb, self.settings.board_table)

    @cached_property
    def shard_metadata(self) -> ShardMetadataStore:
        return ShardMetadataStore(self.dynamodb, self.settings.shards_table)

    @cached_property
    def items(self) -> ItemStore:
        return ItemStore(self.dynamodb, self.settings.items_table)

    @cached_property
    def events(self) -> EventSink | None:
        """Where the snapshot job announces board events: the sink given (local runtime, tests), else the bus the
        settings name (EventBusName), else none."""
        if self._events is not None or not self.settings.event_bus:
            return self._events
        return EventBusSink(events_client(), self.settings.event_bus)

    @cached_property
    def announcer(self) -> Announcer | None:
        """The snapshot job's announcements and what this container has published (lives as long as it)."""
        events = self.events
        return None if events is None else Announcer(events, self.settings.policy, self.settings.refresh_seconds)

    @cached_property
    def admission(self) -> Callable[[str], bool]:
        """Which viewed ids are counted (its caches live as long as the container): not deleted (a view of the
        deleted ids, read every ADMIT_TTL_SECONDS), no look-alike of a deleted id (LookAlike, a BadInput: a view of
        their skeletons' markers, read as often) and, with RequireItems, created."""
        not_deleted = DenyCheck(lambda: TakenDown.read(self.items, (DELETED,)))
        not_alike = LookAlikeCheck(lambda: TakenDown.read(self.items, (SKELETONS,)))
        if not self.settings.require_items:
            return admit_all(not_deleted, not_alike)
        return admit_all(not_deleted, not_alike, ItemAdmission(lambda item_id: self.items.get(item_id) is not None))

    @cached_property
    def boards(self) -> BoardGate:
        """The Boards policy with its registry (the shards table); the boards it saw registered live as long as it."""
        registry = BoardRegistryStore(
            self.dynamodb, self.settings.shards_table, self.settings.board_table, clock=self.clock
        )
        return BoardGate(self.settings.board_policy, registry)

    @cached_property
    def router(self) -> ShardRouter | None:
        """The writers' shard-count cache (dynamic sharding), or None when it is off."""
        policy = self.settings.shard_policy
        return ShardRouter(self.shard_metadata, policy, EpochSeconds(self.clock)) if policy.enabled else None

    @cached_property
    def anonymous(self) -> AnonymousViewers | None:
        """Anonymous browsers' viewer ids under the day's key (the shards table), or None when the site opts out."""
        if not self.settings.anonymous_viewers:
            return None
        return AnonymousViewers(DailyKeyStore(self.dynamodb, self.settings.shards_table), self.clock)
