"""A custom pipeline stage for ``test_serve_stop.py``: its checkpoint fails once a marker
file exists, so the service's last checkpoint (the one on SIGTERM) fails."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from service.pipeline import Batch

#: Environment variable naming the marker file (the stage is built with no arguments).
MARKER_ENV = "GOLDWATCH_TEST_FAIL_CHECKPOINT_MARKER"


class FailCheckpointAfterMarker:
    """A pass-through stage whose ``state_snapshot`` raises ``OSError`` once the file named by
    :data:`MARKER_ENV` exists (before that it is stateless)."""

    name = "test-fail-checkpoint"

    def __init__(self) -> None:
        self.marker = Path(os.environ[MARKER_ENV])

    def process(self, batch: Batch) -> None:
        """Pass the batch through."""

    def state_snapshot(self) -> Any:
        """``None``; raises ``OSError`` once the marker exists."""
        if self.marker.exists():
            raise OSError("planted checkpoint failure")
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""


#: Environment variable naming the file :class:`HoldStartUp` touches when its build begins.
BUILDING_ENV = "GOLDWATCH_TEST_BUILDING_MARKER"


class HoldStartUp:
    """A pass-through stage whose construction touches the file named by
    :data:`BUILDING_ENV` and then waits up to 120 s: ``serve`` is held inside its start-up
    (the runtime is being built, the state file is open) for as long as a test needs."""

    name = "test-hold-start-up"

    def __init__(self) -> None:
        import time

        Path(os.environ[BUILDING_ENV]).touch()
        time.sleep(120)

    def process(self, batch: Batch) -> None:
        """Pass the batch through."""

    def state_snapshot(self) -> Any:
        """Stateless."""
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""
