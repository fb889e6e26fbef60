"""One Logger, Metrics and Tracer for every function (service name and namespace come from the environment)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

logger = Logger(service="shardboard")
# No namespace here: Powertools reads POWERTOOLS_METRICS_NAMESPACE, the template's MetricsNamespace parameter.
metrics = Metrics(service="shardboard")
tracer = Tracer(service="shardboard")

_Handler = TypeVar("_Handler", bound=Callable[..., Any])


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
