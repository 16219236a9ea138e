"""Exception text never reaches the logs or the unauthenticated ``GET /v1/status``.

A stage that fails on an event may put the event's text into its exception (here the
question, as a careless custom stage or library would). serve skips the event as a
``processing_failed`` dead letter and goes on (issue 19), logging the failure: the log line
and ``/v1/status`` must name the error's type and stage only (issue 21 item 5). The consumer
thread's own failure text (``last_error``) goes through the same
:func:`service.errors.describe_error` (checked at the end).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.pipeline import Batch, StatelessStage
from service.runtime.process import Runtime
from service.settings import load_settings

#: An event's text that must appear nowhere in logs or status (a card number and a name).
SECRET = "Is card 4111 1111 1111 1111 of Ada Quintal-Voss blocked?"
#: Bound of the wait for the consumer thread's first failure (not a timing assertion).
WAIT_S = 60.0


class RoutingStage(StatelessStage):
    """Fails on every batch with the first event's question in the message."""

    name = "routing"

    def __init__(self) -> None:
        self.failed = threading.Event()

    def process(self, batch: Batch) -> None:
        self.failed.set()
        raise ValueError(f"cannot route {batch.events[0].question!r}")


def test_a_stage_error_holding_event_text_shows_type_and_stage_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_file = tmp_path / "queries.jsonl"
    event = {"event_id": "e-1", "timestamp": "2026-11-29T10:00:00Z", "question": SECRET}
    log_file.write_text(json.dumps(event) + "\n")
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"},
        source={"kind": "file", "path": log_file, "follow": False},
        analytics={"enabled": False},
    )
    stage = RoutingStage()
    runtime = Runtime(settings, stages=[stage])
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(settings, runtime)) as client:
        assert stage.failed.wait(WAIT_S)
        deadline = time.monotonic() + WAIT_S  # the letter is counted after the stage fails
        status = client.get("/v1/status")
        while not status.json()["totals"]["dead_lettered"] and time.monotonic() < deadline:
            status = client.get("/v1/status")
    body = status.json()
    assert status.status_code == 200
    assert body["totals"]["dead_lettered"] == {"processing_failed": 1}
    assert body["last_error"] is None
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "stage 'routing' raised ValueError" in logged  # the failure was logged ...
    for fragment in (SECRET, "4111", "Quintal-Voss"):  # ... without the event's text
        assert fragment not in status.text
        assert fragment not in logged
        assert fragment not in caplog.text


def test_the_consumer_threads_error_text_is_type_and_stage_only() -> None:
    """What ``Runtime._consume`` stores as ``last_error`` (and logs) for a stage error whose
    message holds the event's text."""
    from service.errors import describe_error
    from service.pipeline import StageError

    cause = ValueError(f"cannot route {SECRET!r}")
    try:
        try:
            raise cause
        except ValueError as exc:
            raise StageError("routing", exc) from exc  # as Pipeline.process raises it
    except StageError as error:
        assert SECRET in str(error)  # the message itself does hold the text ...
        assert describe_error(error) == "stage 'routing' raised ValueError"  # ... this not
