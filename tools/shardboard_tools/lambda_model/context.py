"""A LambdaContext for invoking handlers in-process, as the Lambda runtime would."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

Answer = TypeVar("Answer")


@dataclass
class LocalContext:
    function_name: str = "shardboard-local"
    memory_limit_in_mb: int = 512
    timeout_seconds: float = 120.0
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/shardboard-local"
    log_stream_name: str = "local"
    # The clock the remaining time is read on (the runner's, so a simulated clock runs the function's time too).
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    _started: float | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self._started is None:
            self._started = self.clock()

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        started = self.clock() if self._started is None else self._started
        return max(0, int((self.timeout_seconds - (self.clock() - started)) * 1000))


@contextmanager
def logging_as(context: Any) -> Iterator[None]:
    """For the block, this thread's log lines name ``context``'s function (name, ARN, memory, request id).

    Powertools' ``inject_lambda_context`` writes them into the logger's keys, which every thread of the process
    shares: a Lambda execution environment answers one event at a time, a local server runs several functions at
    once (a request, the snapshot job, a stream batch), and one's lines carried another's name. Powertools' thread
    keys, set here per invocation, take precedence over the shared ones in every line.
    """
    from shardboard.handlers.observability import logger

    previous = dict(logger.thread_safe_get_current_keys())
    logger.thread_safe_append_keys(
        function_name=context.function_name,
        function_memory_size=context.memory_limit_in_mb,
        function_arn=context.invoked_function_arn,
        function_request_id=context.aws_request_id,
    )
    try:
        yield
    finally:
        logger.thread_safe_clear_keys()
        logger.thread_safe_append_keys(**previous)


def invoke(handler: Callable[[Any, Any], Answer], event: Any, context: Any) -> Answer:
    """``handler(event, context)``, its log lines naming its own function (:func:`logging_as`)."""
    with logging_as(context):
        return handler(event, context)
