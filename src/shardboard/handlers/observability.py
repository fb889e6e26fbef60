"""One Logger, Metrics and Tracer for every function (service name and namespace come from the environment)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler.exceptions import BadRequestError
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from shardboard.adapters.board_table import BoardStore
from shardboard.adapters.dynamodb import dynamodb_client
from shardboard.adapters.shards_table import ShardMetadataStore
from shardboard.adapters.views_table import ViewStore
from shardboard.domain.dynamic_sharding import ShardPolicy, ShardRouter
from shardboard.domain.validation import BadInput
from shardboard.settings import Settings

logger = Logger(service="shardboard")
# No namespace here: Powertools reads POWERTOOLS_METRICS_NAMESPACE, the template's MetricsNamespace parameter.
metrics = Metrics(service="shardboard")
tracer = Tracer(service="shardboard")

_Handler = TypeVar("_Handler", bound=Callable[..., Any])


def log_metrics(handler: _Handler) -> _Handler:
    """Powertools' ``metrics.log_metrics``, plus: with POWERTOOLS_METRICS_DISABLED (local runs, tests) the metric
    set is cleared after each invocation too. Powertools keeps it then, and prints it as EMF anyway once a metric has
    100 values, so a long local run (demo, chaos) printed a stray EMF line on the terminal."""
    published = metrics.log_metrics(handler)

    @functools.wraps(handler)
    def invoke(event: Any, context: Any) -> Any:
        try:
            return published(event, context)
        finally:
            if is_metrics_disabled():
                metrics.clear_metrics()

    return invoke  # type: ignore[return-value]


def rejected(error: BadInput) -> BadRequestError:
    """HTTP 400 with the one-line reason, counted: a client sending bad input shows up in ``RequestsRejected``."""
    metrics.add_metric(name="RequestsRejected", unit=MetricUnit.Count, value=1)
    return BadRequestError(str(error))


@cache
def settings() -> Settings:
    """Read once per container, at the first invocation (never at import time)."""
    return Settings.from_env()


@cache
def client() -> Any:
    return dynamodb_client()


def view_store() -> ViewStore:
    return ViewStore(client(), settings().views_table)


def board_store() -> BoardStore:
    return BoardStore(client(), settings().board_table)


def shard_metadata_store() -> ShardMetadataStore:
    return ShardMetadataStore(client(), settings().shards_table)


def shard_router() -> ShardRouter | None:
    """The container's metadata cache (it lives as long as the container); None when dynamic sharding is off."""
    return _router(client(), settings())


@lru_cache(maxsize=1)
def _router(dynamodb: Any, config: Settings) -> ShardRouter | None:
    # Keyed on the client and settings, so a reset of either (local runs, tests) starts a fresh cache.
    policy = ShardPolicy.of(config)
    if not policy.enabled:
        return None
    return ShardRouter(ShardMetadataStore(dynamodb, config.shards_table), policy)
