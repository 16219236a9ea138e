"""One maximum-size ``POST /v1/events`` request no longer holds the pipeline lock for its whole
run (issue 19: 1,000 long questions held it for 8 s, so the consumer and every report endpoint
waited or answered 503). It runs in chunks of ``api.ingest_chunk_events`` that release the lock
between them; the answer and the totals are those of one batch, each dead letter keeps its
index in the request, and the checkpoint comes once, before the answer.

Checked by counting, not timing: a recording lock counts the separate holds and the events
processed in each (how long a chunk takes is measured in ``benchmarks``, not here).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consumers.engine import TOTALS_KEY
from service.runtime.process import Runtime
from service.settings import load_settings
from service.state import StateStore

MAX_EVENTS = 1_000  # api.max_events_per_request's default
CHUNK = 50  # api.ingest_chunk_events's default
BAD = (0, 77, 999)  # indices of events whose timestamp is no time (dead letters)


class RecordingLock:
    """An ``RLock`` that numbers each outermost hold and counts the events processed in it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self.holds: list[int] = []  # events processed per outermost hold, in order

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self._depth += 1
            if self._depth == 1:
                self.holds.append(0)
        return got

    def release(self) -> None:
        self._depth -= 1
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@pytest.fixture()
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    settings = load_settings(
        source={"kind": "none"},
        state={"path": tmp_path / "state.sqlite"},
        analytics={"enabled": False},
    )
    running = Runtime(settings)
    try:
        yield running
    finally:
        running.stop()


def _values() -> list[bytes]:
    events: list[dict[str, Any]] = []
    for i in range(MAX_EVENTS):
        stamp = "no time at all" if i in BAD else "2026-11-29T10:00:00Z"
        events.append({"event_id": f"e-{i}", "timestamp": stamp,
                       "question": f"when does the hostel office open, case {i}"})  # fmt: skip
    return [json.dumps(event).encode() for event in events]


def test_a_maximum_size_ingest_releases_the_lock_between_chunks(runtime: Runtime) -> None:
    lock = RecordingLock()
    runtime.engine.lock = lock  # type: ignore[assignment]
    process = runtime.engine.process

    def counted(messages: Any, source: str, admit_dead: Any = None) -> Any:
        lock.holds[-1] += len(messages)
        return process(messages, source, admit_dead)

    runtime.engine.process = counted  # type: ignore[method-assign]
    outcome = runtime.ingest(_values())
    assert max(lock.holds) == CHUNK and sum(lock.holds) == MAX_EVENTS
    assert len([n for n in lock.holds if n]) == MAX_EVENTS // CHUNK  # 20 separate holds
    # one answer for the whole request, as before the split
    assert outcome.counts.consumed == MAX_EVENTS
    assert outcome.counts.processed == MAX_EVENTS - len(BAD)
    assert [(letter.message.origin.line or 0) - 1 for letter in outcome.dead] == list(BAD)
    totals = runtime.engine.totals_view()
    assert totals["processed"] == MAX_EVENTS - len(BAD) and totals["consumed"] == MAX_EVENTS
    # checkpointed before the answer: a fresh read of the state file has every count
    with StateStore.open(runtime.settings.state.path) as reader:
        stored = reader.get(TOTALS_KEY)
    assert stored["processed"] == MAX_EVENTS - len(BAD) and stored["consumed"] == MAX_EVENTS
    lines = runtime.http_dead_letters.path.read_bytes().splitlines()
    assert [json.loads(line)["origin"]["line"] for line in lines] == [i + 1 for i in BAD]
