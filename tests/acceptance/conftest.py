"""Fixtures of the live-path acceptance tests: a real Tansu broker, produced streams with their
expected dead-letter reasons, and ``goldwatch serve`` subprocesses cleaned up after each test."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition

from benchmarks.streams import TEST_MAX_EVENT_BYTES, StreamItem
from tests.acceptance.service_process import ServiceProcess
from tests.kafka_broker import TansuBroker

#: Group timings small enough for fast tests (Tansu holds a join for ~session_timeout / 2).
FAST_KAFKA: dict[str, Any] = {
    "session_timeout_ms": 3000,
    "heartbeat_interval_ms": 300,
    "max_poll_interval_ms": 10000,
    "request_timeout_ms": 4000,
    "commit_interval_s": 0,
    "lag_interval_s": 0.5,
    "probe_interval_s": 0.5,
    "probe_timeout_ms": 500,
    "ready_stale_after_s": 2.0,
}
#: The pipeline of every live test: 64 KiB events, checkpoint each second.
PIPELINE: dict[str, Any] = {
    "max_batch_size": 500,
    "max_batch_wait_ms": 200,
    "commit_interval_s": 1.0,
    "dedup_window": 100_000,
    "max_event_bytes": TEST_MAX_EVENT_BYTES,
    "status_interval_s": 0.5,
}


@dataclass(frozen=True)
class Produced:
    """A produced stream: per message its partition, offset and expected reason."""

    topic: str
    items: list[StreamItem]
    where: list[tuple[int, int]]  # (partition, offset) of items[i]

    @property
    def expected_reason(self) -> dict[tuple[int, int], str]:
        return {w: r for w, (_, r) in zip(self.where, self.items, strict=True) if r is not None}

    @property
    def good(self) -> int:
        return sum(1 for _, r in self.items if r is None)

    @property
    def dead(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for _, reason in self.items:
            if reason is not None:
                out[reason] = out.get(reason, 0) + 1
        return out


def produce(
    broker: TansuBroker,
    topic: str,
    items: Sequence[StreamItem],
    start: int = 0,
    partitions: int = 4,
) -> list[tuple[int, int]]:
    """Produce ``items`` round-robin over ``partitions`` (one record per batch, see the broker
    harness), every message keyed ``k-<n>`` so tombstones are legal; return (partition, offset)."""
    producer = broker.producer()
    try:
        futures = [
            producer.send(
                topic,
                value=value,
                key=f"k-{start + i}".encode(),
                partition=(start + i) % partitions,
            )
            for i, (value, _) in enumerate(items)
        ]
        producer.flush(timeout=120)
        return [(md.partition, md.offset) for md in (f.get(timeout=30) for f in futures)]
    finally:
        producer.close()


def read_topic(broker: TansuBroker, topic: str, timeout_s: float = 20.0) -> list[Any]:
    """Every record of ``topic`` (all partitions) up to its end offsets.

    The end of a partition is the high watermark of the fetch responses once one came
    (``consumer.highwater``), not ListOffsets alone: Tansu answers ListOffsets(latest) with
    the base offset of the last record batch + 1 (``consumers/lag.py``), so a partition
    whose last batch holds several records was read short (the harvest sink's producer
    batches: the two-replica test read 1,000 of 1,005 published records)."""
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(parts)
        ends = consumer.end_offsets(parts)
        consumer.seek_to_beginning(*parts)
        records: list[Any] = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < max(ends[tp], consumer.highwater(tp) or 0)
                  for tp in parts):  # fmt: skip
            if time.monotonic() > deadline:
                raise AssertionError(f"could not read {topic} to its end in {timeout_s}s")
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def dlq_by_origin(
    broker: TansuBroker, dlq_topic: str
) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """Dead letters of ``dlq_topic`` grouped by their origin ``(partition, offset)``."""
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for record in read_topic(broker, dlq_topic):
        letter = json.loads(record.value)
        origin = letter["origin"]
        out.setdefault((origin["partition"], origin["offset"]), []).append(letter)
    return out


def b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


@pytest.fixture
def services() -> Iterator[list[ServiceProcess]]:
    """A list the test appends its serve processes to; all are killed at teardown."""
    started: list[ServiceProcess] = []
    yield started
    for service in started:
        service.kill()


@pytest.fixture
def start_service(services: list[ServiceProcess]) -> Callable[..., ServiceProcess]:
    """``start_service(workdir, config, env=None, wait=True)``, cleaned up at teardown."""

    def start(
        workdir: Path, config: dict[str, Any], env: dict[str, str] | None = None, wait: bool = True
    ) -> ServiceProcess:
        service = ServiceProcess.start(workdir, config, env=env, wait=wait)
        services.append(service)
        return service

    return start


def kafka_config(
    broker: TansuBroker,
    topic: str,
    group: str | None = None,
    *,
    state: Path,
    pipeline: dict[str, Any] | None = None,
    **kafka: Any,
) -> dict[str, Any]:
    """A serve config reading ``topic`` with a fresh (or given) group and the fast settings."""
    return {
        "source": {"kind": "kafka"},
        "kafka": {
            "bootstrap_servers": broker.bootstrap_servers,
            "topic": topic,
            "consumer_group": group or f"gw-acc-{uuid.uuid4().hex[:10]}",
            **FAST_KAFKA,
            **kafka,
        },
        "pipeline": {**PIPELINE, **(pipeline or {})},
        "state": {"path": str(state)},
    }


def file_config(
    path: Path, *, state: Path, pipeline: dict[str, Any] | None = None, **source: Any
) -> dict[str, Any]:
    """A serve config reading the JSONL file ``path``."""
    return {
        "source": {"kind": "file", "path": str(path), **source},
        "pipeline": {**PIPELINE, **(pipeline or {})},
        "state": {"path": str(state)},
    }
