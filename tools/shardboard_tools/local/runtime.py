"""Wire the deployed functions to any DynamoDB endpoint: settings, clients, stores and in-process handler calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.dynamodb import dynamodb_client, streams_client
from shardboard.adapters.items_table import ItemStore
from shardboard.adapters.shards_table import ShardMetadataStore
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.clock import Clock
from shardboard.domain.ports import EventSink
from shardboard.domain.writing.dynamic_sharding import ShardRouter
from shardboard.handlers import observability, wiring
from shardboard.services.clock import system_clock
from shardboard.services.stores import Container
from shardboard.settings import DEFAULT_STACK, Settings
from shardboard_tools.capacity.hook import install_from_env
from shardboard_tools.lambda_model.context import LocalContext, invoke
from shardboard_tools.template import Template


def set_functions_log_level(level: str) -> None:
    """The level of the in-process functions' logger (a terminal wants a verdict, CloudWatch every line)."""
    observability.logger.setLevel(level)


@dataclass
class Runtime:
    """Everything a local command needs, built once from template.yaml plus the environment."""

    template: Template
    settings: Settings
    clock: Clock = system_clock  # the one "now" of the commands and of the functions they call

    @classmethod
    def from_template(
        cls,
        path: Path | None = None,
        parameters: Mapping[str, str] | None = None,
        stack: str = DEFAULT_STACK,
        clock: Clock = system_clock,
        **changes: Any,
    ) -> Runtime:
        template = Template.load(path, parameters, stack)
        settings = Settings.from_env(defaults=template.settings(**changes))
        # Opt-in (SHARDBOARD_EMULATE_CAPACITY=1): DynamoDB Local then throttles like DynamoDB (capacity/hook.py).
        install_from_env(template.create_table_requests())
        return cls(template, settings, clock)

    @cached_property
    def dynamodb(self) -> Any:
        return dynamodb_client()

    @cached_property
    def streams(self) -> Any:
        return streams_client()

    def stores(self) -> Container:
        """The stores over this runtime's client, built as the functions build theirs (from the current settings)."""
        return Container(self.settings, self.dynamodb, clock=self.clock)

    @property
    def views(self) -> ViewStore:
        return self.stores().views

    @property
    def board(self) -> BoardStore:
        return self.stores().board

    @property
    def shard_metadata(self) -> ShardMetadataStore:
        return self.stores().shard_metadata

    @property
    def items(self) -> ItemStore:
        return self.stores().items

    @cached_property
    def router(self) -> ShardRouter | None:
        """This process's shard-count cache (dynamic sharding), or None when MaxWriteShards == WriteShards."""
        return self.stores().router

    def export_to_handlers(self, events: EventSink | None = None) -> None:
        """Hand the in-process functions this runtime's settings, as a Lambda container would build them, and
        ``events``, where the snapshot job announces board events (a file for ``serve`` and ``demo``).

        The functions get a client of their own, as in their own container: faults a test injects into the
        functions' client (testing/faults.py) must not reach the command's own reads and writes, nor the reverse.
        """
        wiring.use(Container(self.settings, dynamodb_client(), events, self.clock))
        # Lambda gets the metrics namespace from the template (Shardboard/<stack>); so do local handlers.
        namespace = self.template.function_environment().get("POWERTOOLS_METRICS_NAMESPACE")
        if observability.metrics.namespace is None and namespace:
            observability.metrics.namespace = namespace

    def aggregator(self) -> Any:
        """The deployed aggregator function, handed this runtime's settings: what the stream runner invokes."""
        from shardboard.handlers import aggregate  # loads the functions' wiring: only for the commands that run it

        self.export_to_handlers()
        return aggregate.handler

    def invoke(self, handler: Any, event: dict[str, Any]) -> Any:
        return invoke(handler, event, LocalContext())
