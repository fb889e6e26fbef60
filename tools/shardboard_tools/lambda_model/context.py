"""A LambdaContext for invoking handlers in-process, as the Lambda runtime would."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field


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
