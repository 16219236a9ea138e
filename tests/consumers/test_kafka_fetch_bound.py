"""The Kafka source bounds what one fetch response holds (issue 9's soak RSS creep): with
kafka-python's defaults a consumer behind its topic took ~1 MiB per partition per response,
so its memory followed its backlog."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from consumers import kafka_source
from consumers.kafka_source import FETCH_MAX_BYTES, KafkaSource, KafkaSourceConfig
from tests.kafka_broker import TansuBroker

pytestmark = pytest.mark.kafka

PARTITIONS = 4
EVENTS = 6_000
EVENT_BYTES = 1_500  # 2.25 MB queued per partition: over the default 1 MiB per partition


def _backlog_fetch_size_max(source: KafkaSource) -> float:
    """Drain the backlog and return kafka-python's ``fetch-size-max`` (bytes of the largest
    fetch response, all partitions together)."""
    got, deadline = 0, time.monotonic() + 60
    while got < EVENTS and time.monotonic() < deadline:
        got += len(source.poll(max_records=500, timeout_ms=200))
    assert got == EVENTS
    metrics = source._consumer.metrics()["consumer-fetch-manager-metrics"]
    return float(metrics["fetch-size-max"])


def test_a_fetch_response_stays_near_fetch_max_bytes_however_deep_the_backlog(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: Callable[..., KafkaSourceConfig],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = make_topic(PARTITIONS)
    pad = "x" * (EVENT_BYTES - 40)
    kafka_broker.produce(topic, [f'{{"event_id": "e-{i}", "p": "{pad}"}}'.encode()
                                 for i in range(EVENTS)])  # fmt: skip
    source = KafkaSource(source_config(consumer_group="bounded"))
    try:
        bounded = _backlog_fetch_size_max(source)
    finally:
        source.close()
    # kafka-python's own defaults, for contrast: the same backlog, ~1 MiB per partition
    monkeypatch.setattr(kafka_source, "FETCH_MAX_BYTES", 50 * 1024 * 1024)
    monkeypatch.setattr(kafka_source, "MAX_PARTITION_FETCH_BYTES", 1024 * 1024)
    source = KafkaSource(source_config(consumer_group="defaults"))
    try:
        defaults = _backlog_fetch_size_max(source)
    finally:
        source.close()
    assert bounded <= 1.1 * FETCH_MAX_BYTES  # KIP-74: a response may end on a whole batch
    assert defaults > 2 * FETCH_MAX_BYTES
