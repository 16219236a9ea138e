"""Exception text never reaches the logs or the unauthenticated ``GET /v1/status``.

A stage that fails on an event may put the event's text into its exception (here the
question, as a careless custom stage or library would). The consumer thread fails on it,
logs, shows the error in ``/v1/status`` and retries: both must name the error's type and
stage only (issue 21 item 5), as the ``processing_failed`` dead letters already do.
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
        deadline = time.monotonic() + WAIT_S  # the thread records the failure after the stage
        status = client.get("/v1/status")
        while status.json()["last_error"] is None and time.monotonic() < deadline:
            status = client.get("/v1/status")
    body = status.json()
    assert status.status_code == 200
    assert body["last_error"] == "stage 'routing' raised ValueError"
    assert "consumer error; retrying" in body["not_ready_reasons"]
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "stage 'routing' raised ValueError" in logged  # the failure was logged ...
    for fragment in (SECRET, "4111", "Quintal-Voss"):  # ... without the event's text
        assert fragment not in status.text
        assert fragment not in logged
        assert fragment not in caplog.text
