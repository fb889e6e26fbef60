"""One Logger, Metrics and Tracer for every function (service name and namespace come from the environment)."""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer

from shardboard.config import Settings
from shardboard.domain.dynamic_sharding import ShardPolicy, ShardRouter
from shardboard.store import BoardStore, ShardMetadataStore, ViewStore, dynamodb_client

logger = Logger(service="shardboard")
# No namespace here: Powertools reads POWERTOOLS_METRICS_NAMESPACE, the template's MetricsNamespace parameter.
metrics = Metrics(service="shardboard")
tracer = Tracer(service="shardboard")


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
