"""Shadow results survive a clean stop, over real HTTP (review of session 36: ``serve`` of a
600-event log with a candidate, stopped with SIGTERM once all were compared, came back with
56 of the 600 results; the 544 that completed after the consumer's last checkpoint were
restored as skipped ``interrupted``).

The candidate ``gated`` answers only once :data:`GATE` is open, so these tests decide when
its calls finish relative to the checkpoints, without timing: the results cannot come before
the checkpoint of their events. Production returned p1, p2, p3 (cited p1), the candidate p1,
p3, p9: overlap@3 = 2/3, Jaccard = 2/4, top-1 agrees, citation recall 1 (by hand)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port
from tests.service.api.test_shadow_api import _event, _wait, mirror

#: Open: the candidate answers. Closed at the start of each test, opened at its end.
GATE = threading.Event()
N = 6


def gated(question: str, k: int) -> list[tuple[str, float]]:
    """The ``mirror`` candidate, answering once :data:`GATE` is open (at most 60 s)."""
    GATE.wait(60.0)
    return mirror(question, k)


@pytest.fixture(autouse=True)
def gate() -> Iterator[threading.Event]:
    GATE.clear()
    yield GATE
    GATE.set()  # no call stays blocked past the test


def _settings(tmp_path: Path, **source: Any) -> Any:
    return load_settings(
        state={"path": tmp_path / "state.sqlite"},
        api={"port": _free_port(), "token": TOKEN},
        analytics={"enabled": False},
        source=source or {"kind": "none"},
        retrievers=[{"name": "gated", "kind": "entrypoint",
                     "entrypoint": f"{__name__}:gated"}],
        shadow={"candidates": [{"name": "gated", "k": 3, "timeout_s": 120}]},
    )  # fmt: skip


def _shadow(server: Server) -> dict[str, Any]:
    return httpx.get(server.base + "/v1/shadow").json()["candidates"]["gated"]


def _completed(server: Server, n: int) -> dict[str, Any] | None:
    report = _shadow(server)
    return report if report["completed"] == n else None


def _assert_all_compared(report: dict[str, Any]) -> None:
    """Every one of the N events compared, values by hand (module docstring)."""
    assert report["offered"] == report["queued"] == report["completed"] == N
    assert report["skipped"] == {} and report["errors"] == {} and report["in_flight"] == 0
    assert report["counts"]["overlap"] == report["counts"]["citation_recall"] == N
    assert report["agreement"]["overlap"] == pytest.approx(2 / 3)
    assert report["agreement"]["jaccard"] == pytest.approx(1 / 2)
    assert report["agreement"]["top1"] == 1.0 and report["agreement"]["citation_recall"] == 1.0
    assert report["by_language"]["not_detected"]["n"] == N  # analytics off: no language


def test_results_completed_after_the_input_ended_are_restored(tmp_path: Path) -> None:
    """The review's case: a log read to its end, its events checkpointed before any result
    came (the gate), the results completed after, a clean stop, a restart."""
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(_event(i)) + "\n" for i in range(N)))
    settings = _settings(tmp_path, kind="file", path=str(log))
    with Server(settings) as server:
        # the loop's checkpoints are done (every event read and committed): the gate holds
        # every call, so none of the results is in them
        _wait(lambda: (s := httpx.get(server.base + "/v1/status").json()["source"])
              ["at_eof"] and s["line"] == N and s["commits"] >= 1)  # fmt: skip
        GATE.set()
        _wait(lambda: httpx.get(server.base + "/v1/status").json()["input_finished"])
        _assert_all_compared(_wait(lambda: _completed(server, N)))
    with Server(settings) as server:
        _assert_all_compared(_shadow(server))


def test_results_folded_in_after_the_last_checkpoint_are_restored(tmp_path: Path) -> None:
    """Events over HTTP (checkpointed before the request is answered, the calls held), the
    results seen in GET /v1/shadow, a clean stop, a restart."""
    settings = _settings(tmp_path)
    with Server(settings) as server:
        assert server.post([_event(i) for i in range(N)]).json()["accepted"] == N
        GATE.set()
        _assert_all_compared(_wait(lambda: _completed(server, N)))
    with Server(settings) as server:
        _assert_all_compared(_shadow(server))


def test_the_stop_waits_for_calls_still_running(tmp_path: Path) -> None:
    """The stop begins with every call held; the gate opens once it has: the stop waits for
    them and checkpoints their results."""
    settings = _settings(tmp_path)
    server = Server(settings).__enter__()
    try:
        assert server.post([_event(i) for i in range(N)]).json()["accepted"] == N
        assert _shadow(server)["completed"] == 0
        stopping = threading.Thread(target=server.__exit__)
        stopping.start()
        _wait(server.runtime.stop_event.is_set)
        GATE.set()
        stopping.join()
    finally:
        GATE.set()
        server.__exit__()
    with Server(settings) as server:
        _assert_all_compared(_shadow(server))


class _OpenOnGiveUp(logging.Handler):
    """Opens the gate when the stop says it gave calls up (after its checkpoint), so the
    blocked threads end at once instead of holding the stop's join."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "shadow calls had not finished" in message:
            self.messages.append(message)
            GATE.set()


def test_calls_the_stop_gives_up_are_counted_as_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls still held when the stop's wait ends: counted as skipped ``interrupted`` in its
    checkpoint (the counts add up), said in the log and in GET /v1/shadow after the
    restart."""
    monkeypatch.setattr("service.runtime.process.SHADOW_STOP_WAIT_S", 0.1)
    handler = _OpenOnGiveUp()
    logger = logging.getLogger("service.runtime.process")
    logger.addHandler(handler)
    settings = _settings(tmp_path)
    try:
        with Server(settings) as server:
            assert server.post([_event(i) for i in range(N)]).json()["accepted"] == N
    finally:
        logger.removeHandler(handler)
    assert handler.messages and handler.messages[0].startswith(f"{N} shadow calls")
    with Server(settings) as server:
        report = _shadow(server)
    assert report["offered"] == N and report["queued"] == report["completed"] == 0
    assert report["skipped"] == {"interrupted": N} and report["in_flight"] == 0
    assert report["counts"]["overlap"] == 0 and report["by_language"] == {}
