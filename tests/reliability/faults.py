"""Fault injection inside a ``goldwatch serve`` subprocess, loaded as a pipeline stage.

``pipeline.extra_stages: ["tests.reliability.faults:KillAt"]`` builds :class:`KillAt` with no
arguments; it reads ``GOLDWATCH_TEST_FAULT`` (``<point>:<n>``) and the process SIGKILLs itself
the ``n``-th time it reaches ``point``:

* ``batch`` — in the middle of the pipeline of a non-empty batch (stages before it have run,
  nothing of the batch is checkpointed or committed);
* ``checkpoint`` — inside the SQLite transaction of a state checkpoint, after the rows are
  written and before ``COMMIT`` (the transaction must roll back);
* ``commit`` — after a checkpoint is durable and before the Kafka offsets are committed (the
  broker redelivers what the state already holds; the applied offsets must absorb it).

``GOLDWATCH_TEST_THROTTLE_MS`` additionally sleeps that long per batch, so a test can act while
a stream is still being consumed.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from service.pipeline import Batch

FAULT_ENV = "GOLDWATCH_TEST_FAULT"
THROTTLE_ENV = "GOLDWATCH_TEST_THROTTLE_MS"
SPEC = "tests.reliability.faults:KillAt"


def _die() -> None:
    """SIGKILL this process: no handler, no flush, no checkpoint."""
    os.kill(os.getpid(), signal.SIGKILL)


class _KillBeforeCommit:
    """A sqlite3 connection proxy whose ``COMMIT`` kills the process instead."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.strip().upper() == "COMMIT":
            _die()
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class KillAt:
    """A pass-through stage that arms the fault named by ``GOLDWATCH_TEST_FAULT``."""

    name = "test-kill-at"

    def __init__(self) -> None:
        spec = os.environ.get(FAULT_ENV, "")
        point, _, count = spec.partition(":")
        self.point = point
        self.target = int(count or "1")
        self.seen = 0
        self.delay_s = int(os.environ.get(THROTTLE_ENV, "0")) / 1000
        if point == "checkpoint":
            self._arm_checkpoint()
        elif point == "commit":
            self._arm_commit()
        elif point not in ("", "batch"):
            raise ValueError(f"{FAULT_ENV}={spec!r}: unknown fault point")

    def _arm_checkpoint(self) -> None:
        from service.state import StateStore

        original = StateStore.checkpoint

        def checkpoint(store: StateStore, updates: Any, *args: Any, **kwargs: Any) -> int:
            self.seen += 1
            if self.seen == self.target:
                store._conn = _KillBeforeCommit(store._conn)  # type: ignore[assignment]
            return original(store, updates, *args, **kwargs)

        StateStore.checkpoint = checkpoint  # type: ignore[method-assign]

    def _arm_commit(self) -> None:
        from consumers.kafka_source import KafkaSource

        original = KafkaSource._commit_stored

        def commit_stored(source: KafkaSource) -> None:
            if source._checkpoint.to_commit(source._listener.assigned()):
                self.seen += 1
                if self.seen == self.target:
                    _die()
            original(source)

        KafkaSource._commit_stored = commit_stored  # type: ignore[method-assign]

    def process(self, batch: Batch) -> None:
        """Sleep the throttle; at the ``n``-th non-empty batch (``batch`` faults), die."""
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.point == "batch" and batch.events:
            self.seen += 1
            if self.seen == self.target:
                _die()

    def state_snapshot(self) -> Any:
        """Stateless."""
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""


#: A question containing this makes :class:`RaiseOn` raise (a stage error on that batch).
RAISE_MARKER = "zq-stage-raises"
RAISE_SPEC = "tests.reliability.faults:RaiseOn"


class RaiseOn:
    """A stage that raises ``RuntimeError`` on a batch holding an event whose question
    contains :data:`RAISE_MARKER` (a goldwatch stage error: the batch's events become
    ``processing_failed`` dead letters), and otherwise passes the batch on."""

    name = "test-raise-on"

    def process(self, batch: Batch) -> None:
        """Raise on a marked event."""
        if any(RAISE_MARKER in (event.question or "") for event in batch.events):
            raise RuntimeError("test stage error")

    def state_snapshot(self) -> Any:
        """Stateless."""
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""
