"""The state directory turns read-only under a running service (what ``errors=remount-ro``
does to a failing disk), then writable again.

The state lives on its own tmpfs, remounted ``ro`` mid-stream (open file descriptors then fail
with EROFS, unlike a ``chmod``, which root and open descriptors ignore). Needs mount rights
(root with CAP_SYS_ADMIN, as in CI); skipped elsewhere.

Expected: a clear error naming the state file in ``/v1/status``, not-ready, ``/metrics`` and
the API keep answering, no Kafka offset is committed while nothing can be checkpointed, and
after the disk comes back every message is accounted for exactly once with no counter having
gone backwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from benchmarks.streams import expected_counts, file_stream, write_jsonl
from consumers.engine import Engine
from consumers.file_source import FileSource
from consumers.loop import make_decoder, run
from service.pipeline import PipelineConfig
from service.runtime.live import default_pipeline
from service.state import StateError, StateStore
from service.telemetry import build_metrics
from tests.acceptance.service_process import ServiceProcess, accounted, metric_sum, parse_metrics
from tests.kafka_broker import TansuBroker
from tests.reliability.conftest import (
    Monitor,
    assert_invariant,
    assert_metrics_balance,
    fill,
    kafka_serve_config,
    metric_totals,
    mount,
    new_topic,
    produce_stream,
    tmpfs_at,
    wait_committed,
)
from tests.reliability.faults import SPEC, THROTTLE_ENV

pytestmark = [pytest.mark.kafka]

# The tmpfs helpers moved to tests/reliability/conftest.py; the old names stay importable.
_fill, _mount = fill, mount


@pytest.fixture(scope="module")
def disk_full_run(
    tmp_path_factory: pytest.TempPathFactory, kafka_broker: TansuBroker
) -> Iterator[dict[str, Any]]:
    """One serve process whose state disk fills mid-stream and is freed 3 s later; what it
    reported during and after (shared by the tests below)."""
    tmp_path = tmp_path_factory.mktemp("disk-full")
    broker = kafka_broker
    with ExitStack() as cleanup:  # at exit: stop the monitor, kill the service, unmount
        state_fs = cleanup.enter_context(tmpfs_at(tmp_path / "statefs", "64m"))
        monitor = Monitor()
        topic = new_topic(broker, "rel-diskfull")
        produced = produce_stream(broker, topic, 2_000, seed=51)
        config = kafka_serve_config(
            broker,
            topic,
            state_fs / "state.sqlite",
            pipeline={"extra_stages": [SPEC], "max_batch_size": 100, "commit_interval_s": 0.3},
        )
        group = config["kafka"]["consumer_group"]
        service = ServiceProcess.start(tmp_path, config, env={THROTTLE_ENV: "50"})
        cleanup.callback(service.kill)
        cleanup.callback(monitor.stop)
        monitor.watch(service)
        service.wait_until(lambda s: s["totals"]["consumed"] >= 400, what="mid-stream")
        filler = fill(state_fs)
        try:
            during = service.wait_until(
                lambda s: s["last_error"] is not None, timeout_s=20, what="a state error"
            )
            readyz_during = service.readyz()
            committed_then = broker.committed(topic, group)
            time.sleep(3)  # the consumer retries meanwhile; nothing may be committed
            alive = service.alive
            answers = [service.get(p).status_code for p in ("/metrics", "/healthz")]
            committed_later = broker.committed(topic, group)
            ends = broker.end_offsets(topic)
        finally:
            filler.unlink()
        service.wait_until(lambda s: accounted(s["totals"]) >= 2_000, what="all accounted")
        wait_committed(broker, topic, group)
        monitor.sample(service)
        ready_again = False
        deadline = time.monotonic() + 10  # ready within seconds of the next checkpoint
        while not ready_again and time.monotonic() < deadline:
            ready_again = service.readyz() == 200
            time.sleep(0.3)
        yield {
            "produced": produced, "during": during, "readyz_during": readyz_during,
            "committed_then": committed_then, "committed_later": committed_later, "ends": ends,
            "alive": alive, "answers": answers, "totals": service.totals(),
            "samples": service.samples(), "monitor": monitor, "ready_again": ready_again,
            "log": service.log_tail(),
        }  # fmt: skip


def test_disk_full_clear_error_keeps_serving_stops_committing(
    disk_full_run: dict[str, Any],
) -> None:
    run = disk_full_run
    error = run["during"]["last_error"]
    assert "state.sqlite" in error and "disk is full" in error, error
    assert run["readyz_during"] == 503
    assert run["alive"] and run["answers"] == [200, 200]
    assert run["committed_later"] == run["committed_then"] != run["ends"]


def test_disk_full_then_freed_counts_exactly_and_never_backwards(
    disk_full_run: dict[str, Any],
) -> None:
    run = disk_full_run
    assert_invariant(run["totals"], 2_000)
    assert run["totals"]["processed"] == run["produced"].good
    run["monitor"].assert_monotonic()
    assert_metrics_balance(run["samples"], "kafka")
    processed = metric_sum(run["samples"], "goldwatch_events_processed_total", source="kafka")
    assert processed == run["produced"].good, "replayed events counted twice in /metrics"


def test_disk_full_then_freed_ready_again(disk_full_run: dict[str, Any]) -> None:
    assert disk_full_run["ready_again"], disk_full_run["log"]


class _FlakyStore(StateStore):
    """A state store whose checkpoints number ``fail_at`` fail as on a full disk."""

    fail_at: frozenset[int] = frozenset()
    calls = 0

    def checkpoint(self, updates: Any, *args: Any, **kwargs: Any) -> int:
        self.calls += 1
        if self.calls in self.fail_at:
            raise StateError(f"cannot write state file {self.label}: the disk is full")
        return super().checkpoint(updates, *args, **kwargs)


def test_file_source_checkpoint_failures_resume_without_double_counting(tmp_path: Path) -> None:
    """In process, as the service's consumer thread does: the loop dies on two failed
    checkpoints and is run again on the same engine; the file is read to its end with every
    line counted once, in the persisted totals and in the Prometheus counters alike."""
    path = tmp_path / "events.jsonl"
    lines = write_jsonl(path, file_stream(600, poison_share=0.02, seed=52))
    good, dead = expected_counts(lines)
    store = _FlakyStore.open(tmp_path / "state.sqlite")
    store.fail_at = frozenset({3, 5})
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    config = PipelineConfig(max_batch_size=50, commit_interval_s=0.0, max_event_bytes=65_536)
    engine = Engine(default_pipeline(config), store, metrics, make_decoder(max_event_bytes=65_536))
    engine.restore()
    failures = 0
    for _ in range(5):
        source = FileSource(str(path), dlq_path=tmp_path / "dlq.jsonl")
        try:
            run(source, engine.pipeline, store, metrics, threading.Event(), config=config,
                until_eof=True, engine=engine)  # fmt: skip
            break
        except StateError:
            failures += 1
    assert failures == 2
    totals = engine.totals_view()
    assert_invariant(totals, len(lines))
    assert totals["processed"] == good and totals["dead_lettered"] == dead, totals
    samples = parse_metrics(generate_latest(registry).decode())
    assert metric_totals(samples, source.name)["processed"] == good
    assert StateStore.open(tmp_path / "state.sqlite").get("totals") == totals
