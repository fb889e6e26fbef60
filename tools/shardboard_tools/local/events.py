"""Board events on this machine: ``serve`` and ``demo`` append them to a JSON-lines file (one event's detail a line,
as EventBridge would deliver it in ``detail``), the tests keep them in memory. Both are the ``EventSink`` port."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shardboard.domain.ports import EventSink
from shardboard.domain.publishing.events import BoardEvent

EVENTS_FILE = "events.jsonl"


class FileEvents:
    """Appends each event's detail to ``path`` as one JSON line, flushed per batch (``tail -f`` shows them live)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.count = 0

    def publish(self, events: Sequence[BoardEvent]) -> None:
        lines = "".join(json.dumps(event.detail(), ensure_ascii=False) + "\n" for event in events)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(lines)
            self.count += len(events)

    def read(self) -> list[dict[str, Any]]:
        """Every event in the file, oldest first."""
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line]


class MemoryEvents:
    """Keeps what was published, in order; ``fail_next`` makes the next publish raise (a bus that refuses)."""

    def __init__(self) -> None:
        self.events: list[BoardEvent] = []
        self.fail_next = 0
        self._lock = threading.Lock()

    def publish(self, events: Sequence[BoardEvent]) -> None:
        with self._lock:
            if self.fail_next:
                self.fail_next -= 1
                raise ConnectionError("the event bus refused the batch")
            self.events.extend(events)

    def details(self) -> list[dict[str, Any]]:
        with self._lock:
            return [event.detail() for event in self.events]


# The type checker holds both to the port.
SINKS: tuple[type[EventSink], ...] = (FileEvents, MemoryEvents)
