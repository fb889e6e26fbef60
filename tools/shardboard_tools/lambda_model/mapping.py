"""The event source mapping's settings for a DynamoDB stream, with Lambda's defaults and limits."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shardboard_tools.template import Template, TemplateError

# Lambda's synchronous invocation payload limit: a batch is cut before it would exceed it.
MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
# TumblingWindowInSeconds: 0 (off) to 15 minutes.
MAX_TUMBLING_WINDOW_SECONDS = 900
# MaximumBatchingWindowInSeconds: 0 to 5 minutes.
MAX_BATCHING_WINDOW_SECONDS = 300
# ParallelizationFactor: 1 to 10 concurrent batches per shard.
MAX_PARALLELIZATION_FACTOR = 10
# DynamoDB Streams keeps a record 24 hours: with MaximumRecordAgeInSeconds -1 that is how long a batch is retried.
STREAM_RETENTION_SECONDS = 24 * 3600


@dataclass(frozen=True)
class EventSourceMapping:
    """The stream event source settings; the defaults are Lambda's own (CreateEventSourceMapping)."""

    batch_size: int = 100
    batching_window_seconds: float = 0.0
    report_batch_item_failures: bool = False
    bisect_on_function_error: bool = False
    max_retry_attempts: int = -1  # -1: until the record expires
    max_record_age_seconds: int = -1  # -1: until the record expires (24 h on DynamoDB Streams)
    filter_patterns: tuple[dict[str, Any], ...] = ()
    starting_position: str = "TRIM_HORIZON"
    on_failure_destination: bool = False
    function_name: str = "AggregatorFunction"
    function_timeout_seconds: float = 3.0
    tumbling_window_seconds: float = 0  # 0: no window
    parallelization_factor: int = 1  # concurrent batches per shard, records of one partition key in order

    def __post_init__(self) -> None:
        if not 0 <= self.tumbling_window_seconds <= MAX_TUMBLING_WINDOW_SECONDS:
            raise ValueError(f"TumblingWindowInSeconds must be 0..{MAX_TUMBLING_WINDOW_SECONDS}")
        if not 1 <= self.parallelization_factor <= MAX_PARALLELIZATION_FACTOR:
            raise ValueError(f"ParallelizationFactor must be 1..{MAX_PARALLELIZATION_FACTOR}")

    @property
    def record_age_limit_seconds(self) -> float:
        """MaximumRecordAgeInSeconds, or the stream's retention when it is -1 (older records are gone)."""
        return self.max_record_age_seconds if self.max_record_age_seconds >= 0 else STREAM_RETENTION_SECONDS

    @classmethod
    def from_template(cls, template: Template, function: str = "AggregatorFunction") -> EventSourceMapping:
        """The DynamoDB event of ``function`` in template.yaml, parameters resolved."""
        resources = template.body.get("Resources", {})
        if function not in resources:
            raise TemplateError(f"template has no resource {function}")
        properties = resources[function].get("Properties", {})
        events = [e for e in properties.get("Events", {}).values() if e.get("Type") == "DynamoDB"]
        if not events:
            raise TemplateError(f"{function} has no DynamoDB event")
        source = events[0].get("Properties", {})

        def setting(name: str, default: Any) -> Any:
            return template.resolve(source[name]) if name in source else default

        globals_timeout = template.body.get("Globals", {}).get("Function", {}).get("Timeout", 3)
        patterns = [f.get("Pattern") for f in setting("FilterCriteria", {}).get("Filters", [])]
        return cls(
            batch_size=int(setting("BatchSize", cls.batch_size)),
            batching_window_seconds=float(setting("MaximumBatchingWindowInSeconds", 0)),
            report_batch_item_failures="ReportBatchItemFailures" in setting("FunctionResponseTypes", []),
            bisect_on_function_error=_boolean(setting("BisectBatchOnFunctionError", False)),
            max_retry_attempts=int(setting("MaximumRetryAttempts", -1)),
            max_record_age_seconds=int(setting("MaximumRecordAgeInSeconds", -1)),
            filter_patterns=tuple(json.loads(p) if isinstance(p, str) else p for p in patterns if p),
            starting_position=str(setting("StartingPosition", "TRIM_HORIZON")),
            # The destination's ARN is a !GetAtt of a deployed queue; locally only its presence matters.
            on_failure_destination="OnFailure" in source.get("DestinationConfig", {}),
            function_name=function,
            function_timeout_seconds=float(template.resolve(properties.get("Timeout", globals_timeout))),
            tumbling_window_seconds=int(setting("TumblingWindowInSeconds", 0)),
            parallelization_factor=int(setting("ParallelizationFactor", 1)),
        )


def _boolean(value: Any) -> bool:
    return value is True or str(value).lower() == "true"
