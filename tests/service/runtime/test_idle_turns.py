"""With events only over HTTP (``source.kind: none``) there is no poll loop whose empty polls
give the stages their idle turn; the runtime's own thread gives it (a review: harvesting's
last suggestions then waited for the next request or the shutdown)."""

from __future__ import annotations

import threading
from pathlib import Path

from fastapi.testclient import TestClient

from service.api.app import create_app
from service.pipeline import Batch, StatelessStage
from service.runtime.process import Runtime
from service.settings import load_settings

#: Bound of the wait for the first idle turns (IDLE_TURN_S is 1 s; not a timing assertion).
WAIT_S = 60.0


class IdleCounter(StatelessStage):
    """Counts its idle turns; the third sets ``turned``."""

    name = "idle_counter"

    def __init__(self) -> None:
        self.turns = 0
        self.turned = threading.Event()

    def process(self, batch: Batch) -> None:
        pass

    def idle(self) -> None:
        self.turns += 1
        if self.turns >= 3:
            self.turned.set()


def test_http_only_serve_gives_the_stages_idle_turns_until_stopped(tmp_path: Path) -> None:
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"}, source={"kind": "none"},
        analytics={"enabled": False},
    )  # fmt: skip
    stage = IdleCounter()
    runtime = Runtime(settings, stages=[stage])
    with TestClient(create_app(settings, runtime)):
        assert stage.turned.wait(WAIT_S)
    stopped = stage.turns
    assert runtime._idle_thread is not None and not runtime._idle_thread.is_alive()
    assert stage.turns == stopped  # none after the stop
