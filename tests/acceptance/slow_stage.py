"""Custom pipeline stages for the live acceptance tests, loaded by ``goldwatch serve`` through
``pipeline.extra_stages: ["tests.acceptance.slow_stage:SlowStage"]`` (built with no arguments,
so they read their settings from the environment the test gives the subprocess).
"""

from __future__ import annotations

import os
import time
from typing import Any

from service.pipeline import Batch


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


class RecordStage:
    """Appends every event that reaches it (after dedup) as one JSON line to the file named
    by ``GOLDWATCH_TEST_RECORD``, so a test can compare the events built with the expected
    ones and see any event processed twice (a line written survives a kill -9 of the process:
    it is in the page cache)."""

    name = "test-record"

    def __init__(self) -> None:
        self.path = os.environ["GOLDWATCH_TEST_RECORD"]

    def process(self, batch: Batch) -> None:
        if batch.events:
            lines = "".join(event.model_dump_json() + "\n" for event in batch.events)
            with open(self.path, "a", encoding="utf-8", errors="surrogatepass") as out:
                out.write(lines)

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""
