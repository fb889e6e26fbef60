"""One Logger, Metrics and Tracer for every function (service name and namespace come from the environment)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_truthy_env_var_choice

_Handler = TypeVar("_Handler", bound=Callable[..., Any])


class Untraced:
    """The tracer where Powertools' own would trace nothing: its decorators leave the functions as they are.

    Powertools' Tracer imports the X-Ray SDK even when disabled (about 0.4 s for every local command and test).
    """

    def capture_lambda_handler(self, lambda_handler: Callable[..., Any]) -> Callable[..., Any]:
        return lambda_handler

    def capture_method(self, method: _Handler) -> _Handler:
        return method


def tracing_enabled() -> bool:
    """Powertools' rule: in Lambda (not under SAM local or Chalice) unless POWERTOOLS_TRACE_DISABLED is truthy."""
    if resolve_truthy_env_var_choice(env=os.getenv(constants.TRACER_DISABLED_ENV, "false")):
        return False
    in_emulator = os.getenv(constants.SAM_LOCAL_ENV) or os.getenv(constants.CHALICE_LOCAL_ENV)
    return bool(os.getenv(constants.LAMBDA_TASK_ROOT_ENV)) and not in_emulator


logger = Logger(service="shardboard")
# No namespace here: Powertools reads POWERTOOLS_METRICS_NAMESPACE, Shardboard/<stack name> in the template.
metrics = Metrics(service="shardboard")
tracer: Tracer | Untraced = Tracer(service="shardboard") if tracing_enabled() else Untraced()


def log_metrics(handler: _Handler) -> _Handler:
    """Powertools' ``metrics.log_metrics``, except with POWERTOOLS_METRICS_DISABLED (local runs, tests): nothing is
    published then, so nothing is flushed (no "no application metrics" warning on a terminal) and the metric set is
    cleared after each invocation (Powertools would print it as EMF anyway once a metric had 100 values)."""
    published = metrics.log_metrics(handler)

    @functools.wraps(handler)
    def invoke(event: Any, context: Any) -> Any:
        if not is_metrics_disabled():
            return published(event, context)
        try:
            return handler(event, context)
        finally:
            metrics.clear_metrics()

    return invoke  # type: ignore[return-value]
