"""Shared fixtures: tables built from template.yaml on moto, and real stream records delivered to real handlers."""

from __future__ import annotations

import copy
import functools
import json
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
EVENTS = ROOT / "events"

# Set before boto3 or Powertools are imported anywhere: dummy credentials, no instance metadata, and moto's
# in-process Streams API (botocore >= 1.44.4 otherwise routes it to account-id endpoints moto does not serve).
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "ShardboardTest",
        "POWERTOOLS_SERVICE_NAME": "shardboard",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
)
for _name in (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
    "AWS_PROFILE",
):
    os.environ.pop(_name, None)

from shardboard.domain.clock import Clock
from shardboard.domain.writing.recording import Where, record_views
from shardboard.services.clock import system_clock
from shardboard.settings import DEFAULT_STACK
from shardboard_tools.local.engine import Engine, start_engine
from shardboard_tools.local.runtime import Runtime
from shardboard_tools.local.stream_runner import StreamRunner
from shardboard_tools.local.streams import (
    lambda_event,
    lambda_record,
    latest_stream_arn,
    read_shard,
    shards_parents_first,
)
from shardboard_tools.template import create_tables

# Property tests: `make test` runs the "ci" profile, each property at the size it needs; `make chaos` (and a nightly
# run) the "thorough" one, ten times as many examples. SHARDBOARD_HYPOTHESIS_PROFILE (or --hypothesis-profile) picks.
settings.register_profile("ci", max_examples=100, deadline=None, print_blob=True)
settings.register_profile("thorough", max_examples=1000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("SHARDBOARD_HYPOTHESIS_PROFILE", "ci"))


# What an in-process `shardboard` command changes for a terminal and a test process would keep: the functions'
# log level (their warnings are what some tests read) and disabled metrics (what others read).
QUIETED = ("POWERTOOLS_LOG_LEVEL", "POWERTOOLS_METRICS_DISABLED")


@pytest.fixture(autouse=True)
def functions_loud_as_deployed() -> Iterator[None]:
    """Every test starts with the functions' logger and metrics as deployed, whatever a CLI test before it set."""
    functions_logger = logging.getLogger("shardboard")
    level, saved = functions_logger.level, {name: os.environ.get(name) for name in QUIETED}
    yield
    functions_logger.setLevel(level)
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def examples(ci: int) -> int:
    """A property's example count: ``ci`` under the ci profile, scaled with the loaded profile's ``max_examples``
    (ten times under thorough). Read when the test module is collected, after the profile is loaded."""
    return max(1, ci * settings.default.max_examples // 100)


def load_event(name: str) -> dict[str, Any]:
    """An events/ sample, the same file `sam local invoke -e` uses."""
    return json.loads((EVENTS / name).read_text(encoding="utf-8"))


class Pipeline:
    """A Runtime on moto plus helpers to read the real stream and call the real handlers."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.settings = runtime.settings
        self.views = runtime.views
        self.board = runtime.board

    def record_one_by_one(self, item_id: str, views: int, rng: random.Random) -> None:
        """``views`` requests of one view each: one counter write and one stream record per view."""
        for _ in range(views):
            record_views(self.views, item_id, 1, self.settings.write_shards, rng, where=self.where())

    def where(self) -> Where:
        """Where a view recorded now counts (the global board only): now is the functions' clock."""
        return Where.of(self.settings.anchor, at=self.runtime.clock())

    def bucket(self) -> str:
        """The anchor bucket of a view recorded now (the aggregator refuses none other with periods configured)."""
        return self.where().bucket

    def stream_runner(self, function: Any, state_dir: Path, **options: Any) -> Any:
        """A StreamRunner on this pipeline's base table (``options``: mapping, clock, lane_handler...)."""

        rt = self.runtime
        return StreamRunner(
            rt.dynamodb, rt.streams, self.settings.views_table, function, state_dir=state_dir, **options
        )

    def stream_records(self) -> list[dict[str, Any]]:
        """Every record of the base table's stream, shaped as Lambda delivers it, in stream order per shard."""
        arn = latest_stream_arn(self.runtime.dynamodb, self.settings.views_table)
        records = []
        for shard in shards_parents_first(self.runtime.streams, arn):
            for page in read_shard(self.runtime.streams, arn, shard["ShardId"]):
                records.extend(lambda_record(r, arn) for r in page)
        return records

    def aggregate(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Invoke the aggregator function with ``records`` as one Lambda event."""
        from shardboard.handlers import aggregate

        return dict(self.runtime.invoke(aggregate.handler, lambda_event(records)))

    def snapshot(self) -> dict[str, Any]:
        from shardboard.handlers import snapshot

        summary = dict(self.runtime.invoke(snapshot.handler, load_event("snapshot_scheduled.json")))
        # The global board's all-time refresh, as the single-board tests read it (the run refreshes every period).
        everything = next(r for r in summary["refreshed"] if (r["board"], r["kind"]) == ("global", "all"))
        return {**summary, **everything}

    def truth(self) -> dict[str, int]:
        return self.views.scan_totals()


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """Each test starts from the same environment.

    An in-process ``shardboard`` run sets Powertools variables and the functions' log level for its process (quiet
    logs, no EMF on a terminal), as it should; without this, a later test would inherit them and see nothing.
    """
    from shardboard.handlers.observability import logger

    saved, level = dict(os.environ), logger.log_level
    yield
    os.environ.clear()
    os.environ.update(saved)
    logger.setLevel(level)


_ITEM_WRITE_LOCK = threading.RLock()


def _atomic(write: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(write)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with _ITEM_WRITE_LOCK:
            return write(*args, **kwargs)

    return locked


@pytest.fixture(scope="session", autouse=True)
def _moto_writes_are_atomic() -> Iterator[None]:
    """DynamoDB applies each write to an item atomically (condition, then update); moto's in-process backend reads,
    checks and writes in Python with no lock, so two threads updating one item can lose an update that DynamoDB never
    loses. Tests that run invocations concurrently (ParallelizationFactor, two runners) need DynamoDB's semantics.
    Reads take the lock too: a Query iterates the table's dict, and a write from another thread (the snapshot job
    refreshes periods in parallel) made it raise "dictionary changed size during iteration", which DynamoDB never does.
    """
    from moto.dynamodb.models import DynamoDBBackend

    with pytest.MonkeyPatch.context() as patch:
        for name in (
            *("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"),
            *("get_item", "batch_get_item", "transact_get_items", "query", "scan"),
        ):
            patch.setattr(DynamoDBBackend, name, _atomic(getattr(DynamoDBBackend, name)))
        yield


@pytest.fixture(scope="session", autouse=True)
def _service_models_loaded_once() -> Iterator[None]:
    """moto's ``mock_aws`` resets boto3's default session, and every new session reads botocore's JSON service models
    and endpoint rules again (~80 ms a client, several clients a test): one loader for the whole session, as a Lambda
    container that keeps its clients has. The loader only reads; its caches are what it would build anyway."""
    import botocore.loaders
    import botocore.session

    loader = functools.lru_cache(maxsize=None)(botocore.loaders.create_loader)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader", loader)
        yield


@functools.lru_cache(maxsize=8)
def _parsed_template(text: str) -> Any:
    from cfn_flip import load_yaml

    return load_yaml(text)


@pytest.fixture(scope="session", autouse=True)
def _template_parsed_once() -> Iterator[None]:
    """Nearly every test builds a Runtime from template.yaml, and parsing it (pure-Python YAML) cost ~0.3 s each time,
    more than creating its tables on moto: parse each text once per session, and give every caller its own copy."""
    import shardboard_tools.template as template_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(template_module, "load_yaml", lambda text: copy.deepcopy(_parsed_template(text)))
        yield


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The local runner's checkpoints and dead letters go to the test's own directory, never to ./.shardboard."""
    monkeypatch.setenv("SHARDBOARD_STATE_DIR", str(tmp_path / "state"))


def build_pipeline(stack: str = DEFAULT_STACK, clock: Clock = system_clock, **parameters: str) -> Pipeline:
    """Tables from template.yaml on the current endpoint (moto inside ``mock_aws``), handed to the functions;
    ``clock``: their one "now" (a test that reads the current hour or day fixes it)."""
    runtime = Runtime.from_template(ROOT / "template.yaml", parameters, stack, clock, write_concurrency=4)
    create_tables(runtime.dynamodb, runtime.template)
    runtime.export_to_handlers()
    return Pipeline(runtime)


@pytest.fixture
def make_pipeline() -> Iterator[Any]:
    """Build a pipeline on moto from template.yaml with parameter overrides, e.g. ``make_pipeline(TopN="3")``."""
    from moto import mock_aws

    from shardboard.handlers import wiring

    with mock_aws():
        yield build_pipeline
    wiring.use(None)  # the next test's functions build their own collaborators


@pytest.fixture
def pipeline(make_pipeline: Any) -> Pipeline:
    return make_pipeline()  # type: ignore[no-any-return]


@pytest.fixture
def stream_clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A SimulatedClock that also stamps moto's stream records (ApproximateCreationDateTime): give it to a
    StreamRunner and move it instead of sleeping. It starts 0.25 s into a 15-minute window."""
    from datetime import UTC, datetime

    import moto.dynamodb.models.table as moto_table

    from shardboard_tools.lambda_model.clock import SimulatedClock

    clock = SimulatedClock((int(time.time()) // 900) * 900 + 0.25)
    monkeypatch.setattr(moto_table, "utcnow", lambda: datetime.fromtimestamp(clock.now(), UTC).replace(tzinfo=None))
    return clock


# -- DynamoDB Local: one engine per test session (per xdist worker), shared by tests/e2e and tests/contract;
# each test gets its own tables (a stack name of its own).
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
