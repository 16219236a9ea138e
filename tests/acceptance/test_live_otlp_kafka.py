"""The Collector's Kafka path, end to end: traces emitted by the OpenTelemetry SDK in the
OpenInference, GenAI (both shapes) and OpenLLMetry shapes, serialised as the Collector's
``kafka`` exporter writes them (``ExportTraceServiceRequest`` protobuf per message, the spans
of one trace over two messages on two partitions, the root last), produced to Tansu and read
by ``goldwatch serve`` (``traces.kafka_encoding: otlp_proto``). Every trace must become exactly
one event or one dead letter, also across a kill -9 mid-assembly."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.acceptance.conftest import kafka_config
from tests.acceptance.service_process import ServiceProcess, accounted
from tests.acceptance.test_live_kafka import THROTTLE, _wait_committed
from tests.kafka_broker import TansuBroker
from tests.service.api.test_traces_api import (
    _at,
    _genai,
    _genai_old,
    _openinference,
    _openllmetry,
    _provider,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

GOOD, NAMELESS, POISON = 240, 12, 6  # traces with a question, traces without, bad messages
PARTITIONS = 4


def _stream(by_trace: bool) -> list[tuple[int, bytes]]:
    """(partition, value) messages: per group of 8 traces, every trace's non-root spans in
    one message on partition i % 4, then the roots, on partition (i + 1) % 4, or with
    ``by_trace`` on the children's partition (the Collector's ``partition_traces_by_id``)."""
    memory = InMemorySpanExporter()
    provider, tracer = _provider(memory)
    shapes = (_openinference, _genai, _genai_old, _openllmetry)
    traces: list[list[Any]] = []
    for i in range(GOOD + NAMELESS):
        if i < GOOD:
            shapes[i % 4](tracer)
        else:  # a trace with no question in any convention
            with tracer.start_as_current_span("db", start_time=_at(0), end_on_exit=False) as s:
                s.set_attribute("db.system", "postgresql")
                s.end(end_time=_at(1))
        traces.append(list(memory.get_finished_spans()))
        memory.clear()
    provider.shutdown()
    messages: list[tuple[int, bytes]] = []
    for start in range(0, len(traces), 8):
        group = list(enumerate(traces[start : start + 8], start))
        for i, spans in group:
            children = [s for s in spans if s.parent is not None]
            if children:
                messages.append((i % PARTITIONS, encode_spans(children).SerializeToString()))
        for i, spans in group:
            roots = [s for s in spans if s.parent is None]
            partition = (i + (0 if by_trace else 1)) % PARTITIONS
            messages.append((partition, encode_spans(roots).SerializeToString()))
        if start // 8 < POISON:
            good = messages[-1][1]
            messages.append((start % PARTITIONS, good[: len(good) // 2]))  # truncated
    return messages


def _produce(broker: TansuBroker, topic: str, by_trace: bool) -> None:
    broker.create_topic(topic, PARTITIONS)
    producer = broker.producer()
    try:
        for partition, value in _stream(by_trace):
            producer.send(topic, value=value, partition=partition)
        producer.flush(timeout=120)
    finally:
        producer.close()


def _config(broker: TansuBroker, topic: str, state: Path) -> dict[str, Any]:
    config = kafka_config(
        broker, topic, state=state, pipeline={"extra_stages": [THROTTLE], "max_batch_size": 8}
    )
    config["analytics"] = {"enabled": False}
    config["traces"] = {
        "kafka_encoding": "otlp_proto",
        "assembly": {"settle_s": 0.5, "timeout_s": 20.0},
    }
    return config


def _assert_exact(totals: dict[str, Any]) -> None:
    assert totals["processed"] == GOOD, totals
    assert {k: v for k, v in totals["dead_lettered"].items() if v} == {
        "missing_field": NAMELESS,
        "not_protobuf": POISON,
    }, totals
    assert totals["duplicates"] == 0, totals
    assert totals["consumed"] == GOOD + NAMELESS + POISON, totals


def test_collector_topic_every_trace_once(
    broker: TansuBroker, start_service: Any, tmp_path: Path
) -> None:
    """Spans of one trace over two partitions, read at full speed: the settle time covers
    the skew between partitions (a throttled consumer would need a longer one)."""
    topic = f"otlp_spans-{uuid.uuid4().hex[:8]}"
    _produce(broker, topic, by_trace=False)
    config = _config(broker, topic, tmp_path / "state.sqlite")
    env = {"GOLDWATCH_TEST_THROTTLE_MS": "0"}
    service: ServiceProcess = start_service(tmp_path, config, env=env)
    expected = GOOD + NAMELESS + POISON
    status = service.wait_until(lambda s: accounted(s["totals"]) >= expected, what="all traces")
    _wait_committed(broker, topic, config["kafka"]["consumer_group"])
    _assert_exact(service.status()["totals"])
    assert status["source"]["traces"]["open"] == 0
    samples = service.samples()
    assert samples[("goldwatch_traces_assembled_total", frozenset({("why", "settled")}))] == (
        GOOD + NAMELESS
    )


def test_kill_9_mid_assembly_then_restart_counts_every_trace_once(
    broker: TansuBroker, start_service: Any, tmp_path: Path
) -> None:
    """Partitioned by trace id (as deploy/ configures the Collector), consumed slowly and
    killed with traces open: the restart re-reads from below the oldest open trace."""
    topic = f"otlp_spans-{uuid.uuid4().hex[:8]}"
    _produce(broker, topic, by_trace=True)
    config = _config(broker, topic, tmp_path / "state.sqlite")
    env = {"GOLDWATCH_TEST_THROTTLE_MS": "250"}  # ~80 polls of 8 messages: ~20 s
    first: ServiceProcess = start_service(tmp_path, config, env=env)
    at_kill = first.wait_until(lambda s: s["totals"]["consumed"] >= 30, what="an eighth")
    first.kill()
    assert at_kill["totals"]["consumed"] < GOOD, "everything was consumed before the kill"

    second: ServiceProcess = start_service(tmp_path, config, env=env)
    expected = GOOD + NAMELESS + POISON
    second.wait_until(lambda s: accounted(s["totals"]) >= expected, what="all traces")
    _wait_committed(broker, topic, config["kafka"]["consumer_group"])
    totals = second.status()["totals"]
    _assert_exact(totals)
    print(f"\nkilled at consumed={at_kill['totals']['consumed']}; final totals {totals}")
