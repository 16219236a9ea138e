"""A pipeline stage for the live acceptance tests that shows what events ``goldwatch serve``
built: loaded through ``pipeline.extra_stages: ["tests.acceptance.event_log_stage:EventLog"]``
(built with no arguments), it appends every event that reaches it, as canonical JSON, one a
line, to the file named by ``GOLDWATCH_TEST_EVENT_LOG``. Extra stages run after the built-in
analytics, so the events are as the pipeline holds them (PII scrubbed when analytics run).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from service.events import QueryLogEvent
from service.pipeline import Batch

ENV = "GOLDWATCH_TEST_EVENT_LOG"


class EventLog:
    """Appends each event of each batch to the file named by the environment variable
    :attr:`env` (``$GOLDWATCH_TEST_EVENT_LOG``; flushed per batch; a line written survives a
    kill -9 of the process: it is in the page cache)."""

    name = "test-event-log"
    #: The environment variable naming the file.
    env = ENV

    def __init__(self) -> None:
        self.path = Path(os.environ[self.env])

    def process(self, batch: Batch) -> None:
        if batch.events:
            lines = "".join(event.model_dump_json() + "\n" for event in batch.events)
            with self.path.open("a", encoding="utf-8", errors="surrogatepass") as out:
                out.write(lines)

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""


def read_events(path: Path) -> list[QueryLogEvent]:
    """The events :class:`EventLog` wrote to ``path`` so far (``[]`` before the first);
    a last line still being written is left for the next read."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.endswith("\n"):
            events.append(QueryLogEvent.model_validate(json.loads(line)))
    return events
