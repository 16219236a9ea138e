"""Custom pipeline stages for the live acceptance tests, loaded by ``goldwatch serve`` through
``pipeline.extra_stages: ["tests.acceptance.slow_stage:SlowStage"]`` (built with no arguments,
so they read their settings from the environment the test gives the subprocess).
"""

from __future__ import annotations

import os
import time
from typing import Any

from service.pipeline import Batch
from tests.acceptance.event_log_stage import EventLog


class SlowStage:
    """Sleeps ``GOLDWATCH_TEST_SLOW_MS`` milliseconds on the first non-empty batch of the
    process only (a handler stuck longer than ``max_poll_interval_ms``), then does nothing."""

    name = "test-slow"

    def __init__(self) -> None:
        self.delay_s = int(os.environ.get("GOLDWATCH_TEST_SLOW_MS", "0")) / 1000
        self.slept = False

    def process(self, batch: Batch) -> None:
        if batch.events and not self.slept:
            self.slept = True
            time.sleep(self.delay_s)

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""


class ThrottleStage:
    """Sleeps ``GOLDWATCH_TEST_THROTTLE_MS`` milliseconds on every batch, so a test can act
    (kill, pause the broker) while a stream is still being consumed."""

    name = "test-throttle"

    def __init__(self) -> None:
        self.delay_s = int(os.environ.get("GOLDWATCH_TEST_THROTTLE_MS", "0")) / 1000

    def process(self, batch: Batch) -> None:
        time.sleep(self.delay_s)

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""


class RecordStage(EventLog):
    """:class:`~tests.acceptance.event_log_stage.EventLog` writing to the file named by
    ``GOLDWATCH_TEST_RECORD``: every event that reaches it (after dedup), one JSON line each,
    so a test can compare the events built with the expected ones and see any event processed
    twice."""

    name = "test-record"
    env = "GOLDWATCH_TEST_RECORD"


class SlowLoadStage:
    """Sleeps ``GOLDWATCH_TEST_LOAD_SLOW_MS`` milliseconds when built (a pipeline slow to
    load, as the analytics' models are on a loaded machine), then does nothing."""

    name = "test-slow-load"

    def __init__(self) -> None:
        time.sleep(int(os.environ.get("GOLDWATCH_TEST_LOAD_SLOW_MS", "0")) / 1000)

    def process(self, batch: Batch) -> None:
        """Nothing."""

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""
