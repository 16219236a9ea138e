"""Fixtures and checks of the reliability suite (the Tansu broker is the session's,
``tests/kafka_fixtures.py``): ``goldwatch serve``
subprocesses (``tests/acceptance/service_process.py``), a monitor that samples every running
service's counters and flags any that went backwards, and the accounting invariant.

The invariant, checked after every fault::

    processed + Σ dead_lettered + (duplicates − redelivered) == produced
    consumed == processed + Σ dead_lettered + duplicates + Σ dropped

(``duplicates`` counts both events seen twice under one ``event_id`` and Kafka redeliveries of
offsets the state already holds, ``redelivered``; the streams here repeat no ``event_id`` unless
a test says so.)
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.streams import mixed_stream
from tests.acceptance.conftest import FAST_KAFKA, PIPELINE, Produced, produce
from tests.acceptance.service_process import ServiceProcess, metric_by, metric_sum, parse_metrics
from tests.kafka_broker import TansuBroker

#: Counters (full sample names) that must never decrease within one process life.
COUNTERS = (
    "goldwatch_events_consumed_total",
    "goldwatch_events_processed_total",
    "goldwatch_events_dead_lettered_total",
    "goldwatch_events_duplicate_total",
    "goldwatch_commits_total",
)
#: Persisted totals that must never decrease within one process life.
TOTALS = ("consumed", "processed", "duplicates", "redelivered")


@dataclass
class Monitor:
    """Samples ``/v1/status`` totals and ``/metrics`` counters of watched services every
    ``interval_s`` on a background thread and records every decrease within one process
    (keyed by pid). Counters restart at zero with a new process, as Prometheus expects."""

    interval_s: float = 0.25
    services: list[ServiceProcess] = field(default_factory=list)
    last: dict[tuple[int, str], float] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    samples_taken: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def watch(self, service: ServiceProcess) -> ServiceProcess:
        """Add ``service`` to the watched ones; return it."""
        self.services.append(service)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="monitor", daemon=True)
            self._thread.start()
        return service

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            for service in list(self.services):
                if service.alive:
                    self.sample(service)

    def sample(self, service: ServiceProcess) -> None:
        """Take one sample of ``service`` (ignored when it does not answer)."""
        pid = service.process.pid
        values: dict[str, float] = {}
        try:
            status = httpx.get(service.base_url + "/v1/status", timeout=2).json()
            text = httpx.get(service.base_url + "/metrics", timeout=2).text
        except (httpx.HTTPError, ValueError):
            return
        totals = status.get("totals") or {}
        for name in TOTALS:
            values[f"totals.{name}"] = float(totals.get(name, 0))
        values["totals.dead_lettered"] = float(sum((totals.get("dead_lettered") or {}).values()))
        samples = parse_metrics(text)
        for name in COUNTERS:
            for (sample, labels), value in samples.items():
                if sample == name:
                    values[f"{name}{sorted(labels)}"] = value
        for key, value in values.items():
            before = self.last.get((pid, key))
            if before is not None and value < before:
                self.violations.append(f"pid {pid}: {key} went from {before} to {value}")
            self.last[(pid, key)] = value
        self.samples_taken += 1

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def assert_monotonic(self) -> None:
        """Fail if any counter or total went backwards within one process."""
        assert not self.violations, "counters went backwards:\n" + "\n".join(self.violations)


def assert_invariant(totals: Mapping[str, Any], produced: int, repeated_ids: int = 0) -> None:
    """``processed + dead + deduplicated == produced`` and ``consumed`` balances.

    :param repeated_ids: events the stream itself repeats under an ``event_id`` already sent.
    """
    dead = sum(int(n) for n in totals["dead_lettered"].values())
    dropped = sum(int(n) for n in totals["dropped"].values())
    dup, redelivered = int(totals["duplicates"]), int(totals["redelivered"])
    assert totals["consumed"] == totals["processed"] + dead + dup + dropped, totals
    assert totals["processed"] + dead + (dup - redelivered) == produced + repeated_ids, totals
    assert dup - redelivered == repeated_ids, totals


def metric_totals(samples: Any, source: str) -> dict[str, float]:
    """The event counters of one ``/metrics`` scrape for ``source``."""
    return {
        "consumed": metric_sum(samples, "goldwatch_events_consumed_total", source=source),
        "processed": metric_sum(samples, "goldwatch_events_processed_total", source=source),
        "duplicates": metric_sum(samples, "goldwatch_events_duplicate_total", source=source),
        "dead": sum(
            metric_by(samples, "goldwatch_events_dead_lettered_total", "reason", source=source)
            .values()
        ),
    }  # fmt: skip


def assert_metrics_balance(samples: Any, source: str) -> dict[str, float]:
    """Within one process: consumed counter == processed + dead + duplicates counters."""
    m = metric_totals(samples, source)
    assert m["consumed"] == m["processed"] + m["dead"] + m["duplicates"], m
    return m


def wait_for(
    predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.2
) -> None:
    """Poll ``predicate`` until true; fail after ``timeout_s`` naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in {timeout_s}s"
        time.sleep(interval_s)


def wait_committed(broker: TansuBroker, topic: str, group: str, timeout_s: float = 30) -> None:
    """Wait until ``group``'s committed offsets equal the topic's end offsets."""
    ends = broker.end_offsets(topic)
    deadline = time.monotonic() + timeout_s
    while (committed := broker.committed(topic, group)) != ends:
        assert time.monotonic() < deadline, f"committed {committed} != end offsets {ends}"
        time.sleep(0.3)


def kafka_serve_config(
    broker: TansuBroker | str,
    topic: str,
    state: Path,
    group: str | None = None,
    pipeline: Mapping[str, Any] | None = None,
    analytics: bool = False,
    **kafka: Any,
) -> dict[str, Any]:
    """A serve config reading ``topic`` with the fast group timings of the acceptance tests.

    Analytics are off unless asked for: the faults are about accounting, and off keeps each
    test's start-up and processing short on two cores.
    """
    servers = broker if isinstance(broker, str) else broker.bootstrap_servers
    return {
        "source": {"kind": "kafka"},
        "kafka": {
            "bootstrap_servers": servers,
            "topic": topic,
            "consumer_group": group or f"gw-rel-{uuid.uuid4().hex[:10]}",
            **FAST_KAFKA,
            **kafka,
        },
        "pipeline": {**PIPELINE, **(pipeline or {})},
        "state": {"path": str(state)},
        "analytics": {"enabled": analytics},
    }


def new_topic(broker: TansuBroker, prefix: str, partitions: int = 4) -> str:
    """Create a fresh topic and return its name."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions)
    return topic


def produce_stream(
    broker: TansuBroker, topic: str, n: int, seed: int, start: int = 0, partitions: int = 4
) -> Produced:
    """Produce ``n`` messages (1 % poison pills) and return what was produced."""
    items = mixed_stream(n, poison_share=0.01, seed=seed)
    return Produced(topic, items, produce(broker, topic, items, start, partitions))


def mount(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``mount *args`` (needs CAP_SYS_ADMIN); the caller reads ``returncode`` and ``stderr``."""
    return subprocess.run(["mount", *args], capture_output=True, check=False, timeout=10)


def fill(where: Path) -> Path:
    """Fill the file system of ``where`` to the last byte; return the filler file (unlink it
    to free the space)."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1_048_576, 4096, 1):
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


@contextmanager
def tmpfs_at(where: Path, size: str, name: str = "goldwatch-test") -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (``mount -o size=``: ``64k``, ``16m``) at ``where`` (created)
    for the ``with`` block, then unmount it (lazily: a killed service may hold files).

    Skips the test with mount's reason where mounting is refused (no CAP_SYS_ADMIN; CI runs
    as root, so there it runs).
    """
    where.mkdir(parents=True, exist_ok=True)
    done = mount("-t", "tmpfs", "-o", f"size={size}", name, str(where))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, timeout=10)


MountTmpfs = Callable[..., Path]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[MountTmpfs]:
    """``tmpfs(size, name="goldwatch-test", folder="fs") -> Path``: a small file system of
    its own under ``tmp_path / folder`` (:func:`tmpfs_at`), unmounted at teardown."""
    with ExitStack() as mounted:

        def make(size: str, name: str = "goldwatch-test", folder: str = "fs") -> Path:
            return mounted.enter_context(tmpfs_at(tmp_path / folder, size, name))

        yield make


@pytest.fixture
def monitor() -> Iterator[Monitor]:
    """A :class:`Monitor`; it is stopped at teardown (tests call ``assert_monotonic``)."""
    running = Monitor()
    yield running
    running.stop()


@pytest.fixture
def services() -> Iterator[list[ServiceProcess]]:
    """Serve processes of the test; all are killed at teardown."""
    started: list[ServiceProcess] = []
    yield started
    for service in started:
        service.kill()


StartService = Callable[..., ServiceProcess]


@pytest.fixture
def start_service(services: list[ServiceProcess], monitor: Monitor) -> StartService:
    """``start_service(workdir, config, env=None, wait=True)``: started, watched by the
    monitor, killed at teardown."""

    def start(
        workdir: Path,
        config: dict[str, Any],
        env: dict[str, str] | None = None,
        wait: bool = True,
    ) -> ServiceProcess:
        service = ServiceProcess.start(workdir, config, env=env, wait=wait)
        services.append(service)
        return monitor.watch(service)

    return start
