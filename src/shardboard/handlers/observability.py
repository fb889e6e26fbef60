"""One Logger, Metrics and Tracer for every function (service name and namespace come from the environment)."""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer

from shardboard.config import Settings
from shardboard.store import BoardStore, ViewStore, dynamodb_client

logger = Logger(service="shardboard")
metrics = Metrics(namespace="Shardboard", service="shardboard")
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
