"""One DynamoDB Local for the whole test session; each test gets its own tables (a stack name of its own)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shardboard_tools.local.engine import Engine, start_engine
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.template import create_tables

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    """DynamoDB Local (moto's server if Java or the package is missing), stopped when the session ends."""
    saved = {name: os.environ.pop(name, None) for name in ("AWS_ENDPOINT_URL_DYNAMODB",)}
    started = start_engine(announce=print)
    try:
        yield started
    finally:
        started.stop()
        os.environ.update({k: v for k, v in saved.items() if v is not None})


@pytest.fixture
def local_env(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Point boto3 at the engine for this test only (moto-based tests in the same session must not see it).

    The functions' settings a test exports (Runtime.export_to_handlers) are removed on both sides of it.
    """
    from shardboard.handlers import wiring

    def forget_handler_settings() -> None:
        wiring.use(None)

    forget_handler_settings()
    for name, value in engine.env().items():
        monkeypatch.setenv(name, value)
    yield engine.env()
    forget_handler_settings()


@pytest.fixture
def make_local(local_env: dict[str, str]) -> Any:
    """Build a Runtime on the engine with fresh tables: ``make_local(TopN="5", StreamBatchSize="50")``."""

    def build(**parameters: str) -> Runtime:
        stack = f"e2e-{uuid.uuid4().hex[:8]}"
        runtime = Runtime.from_template(ROOT / "template.yaml", parameters, stack, write_concurrency=8)
        create_tables(runtime.dynamodb, runtime.template)
        runtime.export_to_handlers()
        return runtime

    return build


@pytest.fixture
def local(make_local: Any) -> Runtime:
    return make_local()  # type: ignore[no-any-return]
