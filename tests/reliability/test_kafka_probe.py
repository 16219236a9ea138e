"""The Kafka rows of the adversarial probe of issue 19, kept as tests against a real Tansu
broker and ``goldwatch serve`` subprocesses (or the consumer loop on a real broker):

* a broker that is down when ``serve`` starts, with the *default* configuration (analytics
  and harvesting on, so the compacted suggestions topic is wanted too);
* record batches compressed with every codec Kafka producers use, and a batch that still
  cannot be decoded (its codec library missing);
* a topic deleted and re-created under a running and a restarted consumer;
* a consumer position past the end of its partition.

Each case waits for a positive marker (a count reached, a status seen), never "sleep, then
assert nothing happened".
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import kafka.codec
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata
from prometheus_client import CollectorRegistry

from benchmarks.streams import mixed_stream
from consumers.align import event_times_from
from consumers.kafka_source import KafkaSource
from consumers.loop import make_decoder, run
from service.pipeline import PipelineConfig
from service.runtime.live import default_pipeline
from service.settings.kafka import KafkaSourceConfig
from service.state import StateStore
from service.telemetry import build_metrics
from tests.acceptance.conftest import FAST_KAFKA, dlq_by_origin
from tests.acceptance.service_process import accounted, metric_sum
from tests.kafka_broker import TansuBroker, free_port
from tests.kafka_fixtures import StartBroker
from tests.reliability.conftest import (
    Monitor,
    StartService,
    assert_invariant,
    assert_metrics_balance,
    kafka_serve_config,
    new_topic,
    produce_stream,
    wait_committed,
    wait_for,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_broker_down_at_start_with_default_config(
    start_service: StartService, start_broker: StartBroker, monitor: Monitor, tmp_path: Path
) -> None:
    """Defaults (analytics and harvesting on, so the harvest sink wants its compacted topic):
    with no broker listening, ``serve`` stays up, ``/readyz`` says 503 with the reason and
    ``/metrics`` is served; once the broker appears the service becomes ready and consumes
    every message exactly (today: exit 1 with a traceback, the API never up)."""
    port = free_port()
    topic = "rel-late-default"
    config = kafka_serve_config(
        f"127.0.0.1:{port}", topic, tmp_path / "state.sqlite", analytics=True
    )
    config.pop("analytics")  # the default: analytics on
    service = start_service(tmp_path, config)
    pid = service.process.pid
    # positive markers: the reason is reported and metrics are served
    wait_for(lambda: bool(service.status()["not_ready_reasons"]), 30, "a not-ready reason")
    assert service.readyz() == 503
    body = service.get("/readyz").text
    assert "source" in body, body
    assert service.get("/metrics").status_code == 200

    late = start_broker(port)
    try:
        try:
            late.create_topic(topic, 4)
        except TopicAlreadyExistsError:  # the service's metadata request auto-created it
            pass
        produced = produce_stream(late, topic, 600, seed=191,
                                  partitions=len(late.end_offsets(topic)))  # fmt: skip
        wait_for(lambda: service.readyz() == 200, 90, "ready once the broker is up")
        service.wait_until(lambda s: accounted(s["totals"]) >= 600, timeout_s=90,
                           what="all accounted")  # fmt: skip
        wait_committed(late, topic, config["kafka"]["consumer_group"])
        totals = service.totals()
        assert_invariant(totals, 600)
        assert totals["processed"] == produced.good
        assert_metrics_balance(service.samples(), "kafka")
        assert service.alive and service.process.pid == pid
    finally:
        service.kill()
    monitor.assert_monotonic()


#: Every compression codec a Kafka producer can use (KIP-110 added zstd).
CODECS = ("gzip", "snappy", "lz4", "zstd")


def produce_compressed(
    broker: TansuBroker, topic: str, values: list[bytes], codec: str | None, partition: int = 0
) -> list[int]:
    """Produce ``values`` to ``topic[partition]`` as one record batch compressed with
    ``codec`` (a long linger and a big batch hold them until the flush), keyed ``k-<n>`` so
    tombstones are legal; return the offsets."""
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type=codec,
                             linger_ms=60_000, batch_size=4 * 1024 * 1024)  # fmt: skip
    try:
        futures = [producer.send(topic, value=v, key=b"k-%d" % i, partition=partition)
                   for i, v in enumerate(values)]  # fmt: skip
        producer.flush(timeout=60)
        return [f.get(timeout=30).offset for f in futures]
    finally:
        producer.close()


def test_every_compression_codec_is_consumed(
    broker: TansuBroker, start_service: StartService, monitor: Monitor, tmp_path: Path
) -> None:
    """One partition per codec, each holding record batches compressed with it (1 % poison
    pills among them): every message is processed or dead-lettered for its own reason, none
    as undecodable, and the group commits to the end (today: a zstd or snappy batch made the
    consumer crash-loop, nothing dead-lettered, the lag frozen)."""
    topic = new_topic(broker, "rel-codecs", partitions=len(CODECS))
    items = mixed_stream(800, poison_share=0.01, seed=192)
    expected_dead: dict[str, int] = {}
    for part, codec in enumerate(CODECS):
        share = items[part * 200 : (part + 1) * 200]
        for _, reason in share:
            if reason is not None:
                expected_dead[reason] = expected_dead.get(reason, 0) + 1
        values = [value for value, _ in share]
        produce_compressed(broker, topic, values[:100], codec, part)  # two batches each
        produce_compressed(broker, topic, values[100:], codec, part)
    config = kafka_serve_config(broker, topic, tmp_path / "state.sqlite")
    service = start_service(tmp_path, config)
    service.wait_until(lambda s: accounted(s["totals"]) >= 800, timeout_s=90, what="all accounted")
    # Tansu's ListOffsets(latest) answers the last batch's base offset + 1, so the expected
    # committed offsets are written out: 200 records per partition
    group = config["kafka"]["consumer_group"]
    wait_for(lambda: broker.committed(topic, group) == dict.fromkeys(range(4), 200), 30,
             "committed to the end")  # fmt: skip
    totals = service.totals()
    assert_invariant(totals, 800)
    assert totals["processed"] == sum(1 for _, r in items if r is None)
    assert totals["dead_lettered"] == expected_dead, totals
    assert service.status()["source"]["undecodable_batches"] == 0
    assert_metrics_balance(service.samples(), "kafka")
    monitor.assert_monotonic()


def _event(i: int) -> bytes:
    return json.dumps({"event_id": f"cz-{i}", "timestamp": "2026-11-29T10:00:00Z",
                       "question": f"hostel fee question number {i}"}).encode()  # fmt: skip


@pytest.mark.parametrize("aligned", [False, True], ids=["as-fetched", "aligned"])
def test_undecodable_batch_is_dead_lettered_and_skipped(
    broker: TansuBroker, monkeypatch: pytest.MonkeyPatch, aligned: bool
) -> None:
    """A consumer whose zstd library is missing (the condition the probe hit, made here by
    hiding ``zstandard`` from kafka-python's codec module) meets 5 plain records, one zstd
    batch of 30 and 5 more plain ones: the 30 become dead letters ``undecodable_batch`` with
    partition 0 and offsets 5..34, the 10 others are processed, the group commits to the end
    and the consumer never stops (today: ``UnsupportedCodecError`` on every poll). The same
    with the partitions aligned in event time (s36: the aligned poll's path)."""
    topic = new_topic(broker, "rel-undecodable", partitions=1)
    assert produce_compressed(broker, topic, [_event(i) for i in range(5)], None) == [*range(5)]
    zstd_offsets = produce_compressed(broker, topic, [_event(i) for i in range(5, 35)], "zstd")
    assert zstd_offsets == list(range(5, 35))
    produce_compressed(broker, topic, [_event(i) for i in range(35, 40)], None)
    monkeypatch.setattr(kafka.codec, "zstd", None)  # this consumer has no zstd library

    group = f"gw-rel-{uuid.uuid4().hex[:10]}"
    times = event_times_from(make_decoder(records=False)) if aligned else None
    source = KafkaSource(KafkaSourceConfig(bootstrap_servers=broker.bootstrap_servers,
                                           topic=topic, consumer_group=group, **FAST_KAFKA),
                         event_times=times, max_skew_s=150.0 if aligned else 0.0)  # fmt: skip
    registry = CollectorRegistry()
    metrics = build_metrics(registry, topics=[topic])
    stop, reports, errors = threading.Event(), [], []

    def work() -> None:
        try:
            reports.append(run(source, default_pipeline(PipelineConfig()), StateStore.in_memory(),
                               metrics, stop, config=PipelineConfig(max_batch_wait_ms=200,
                               commit_interval_s=0, status_interval_s=0)))  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    try:
        consumed = "goldwatch_events_consumed_total"
        wait_for(lambda: errors or registry.get_sample_value(consumed, {"source": "kafka"}) == 40,
                 60, "40 consumed")  # fmt: skip
    finally:
        stop.set()
        worker.join(timeout=30)
    assert not errors, errors
    (report,) = reports
    assert report.processed == 10 and report.dead_lettered == {"undecodable_batch": 30}, report
    assert report.balanced
    assert broker.committed(topic, group) == {0: 40}
    dead = "goldwatch_events_dead_lettered_total"
    assert registry.get_sample_value(dead, {"source": "kafka", "reason": "undecodable_batch"}) == 30
    letters = dlq_by_origin(broker, f"{topic}.dlq")
    assert sorted(letters) == [(0, offset) for offset in range(5, 35)]
    (one,) = letters[(0, 5)]
    assert one["reason"] == "undecodable_batch" and one["value_b64"] is None
    assert "5..34" in one["detail"] and "zstd" in one["detail"], one


def _recreate(broker: TansuBroker, topic: str, partitions: int) -> None:
    broker.delete_topic(topic)
    broker.create_topic(topic, partitions)


def test_topic_deleted_and_recreated_under_a_running_consumer_loses_nothing(
    broker: TansuBroker, start_service: StartService, monitor: Monitor, tmp_path: Path
) -> None:
    """1,000 events consumed and committed from a 1-partition topic; the topic is deleted and
    created again with 4 partitions (new topic id, offsets from 0) and 1,000 new events
    produced over the 4: all of them are processed, none taken for a redelivery, the group
    commits every new partition to its end, the lag rows cover the 4 partitions and the
    re-creation is counted (today: 951 of 1,000 dropped as ``redelivered``, the remembered
    offsets being keyed by topic name only; then only partition 0 was read, 264 of the 1,000,
    until a restart, with ``/readyz`` 200 and lag for partition 0 only)."""
    topic = new_topic(broker, "rel-recreate", partitions=1)
    first = produce_stream(broker, topic, 1_000, seed=193, partitions=1)
    config = kafka_serve_config(broker, topic, tmp_path / "state.sqlite")
    service = start_service(tmp_path, config)
    service.wait_until(lambda s: accounted(s["totals"]) >= 1_000, timeout_s=90, what="first")
    _recreate(broker, topic, 4)
    second = produce_stream(broker, topic, 1_000, seed=194, start=1_000, partitions=4)
    ends = broker.end_offsets(topic)
    assert sorted(ends) == [0, 1, 2, 3] and sum(ends.values()) == 1_000, ends
    service.wait_until(lambda s: accounted(s["totals"]) >= 2_000 or s["totals"]["consumed"]
                       >= 2_000, timeout_s=90, what="second stream consumed")  # fmt: skip
    # positive end marker per partition: the group committed each new partition to its end
    wait_committed(broker, topic, config["kafka"]["consumer_group"])
    totals = service.totals()
    assert totals["redelivered"] == 0, totals
    assert totals["processed"] == first.good + second.good, totals
    assert_invariant(totals, 2_000)
    status = service.status()
    assert status["source"]["assigned_partitions"] == [0, 1, 2, 3], status["source"]
    wait_for(lambda: sorted(r["partition"] for r in service.status()["source"]["lag"])
             == [0, 1, 2, 3], 30, "lag rows for the 4 partitions")  # fmt: skip
    wait_for(lambda: all(r["lag"] == 0 for r in service.status()["source"]["lag"]), 30,
             "lag 0 on every partition")  # fmt: skip
    samples = service.samples()
    assert metric_sum(samples, "goldwatch_kafka_topic_recreations_total") == 1
    assert_metrics_balance(samples, "kafka")
    monitor.assert_monotonic()


def test_topic_recreated_while_the_service_is_down_loses_nothing(
    broker: TansuBroker, start_service: StartService, tmp_path: Path
) -> None:
    """The same with the service stopped during the re-creation: the restarted service finds a
    new topic id for the topic its state remembers offsets of, forgets them and processes all
    1,000 new events."""
    topic = new_topic(broker, "rel-recreate-down", partitions=2)
    first = produce_stream(broker, topic, 1_000, seed=195, partitions=2)
    config = kafka_serve_config(broker, topic, tmp_path / "state.sqlite")
    service = start_service(tmp_path, config)
    service.wait_until(lambda s: accounted(s["totals"]) >= 1_000, timeout_s=90, what="first")
    assert service.terminate() == 0
    _recreate(broker, topic, 2)
    second = produce_stream(broker, topic, 1_000, seed=196, start=1_000, partitions=2)
    again = start_service(tmp_path, config)
    again.wait_until(lambda s: s["totals"]["consumed"] >= 2_000, timeout_s=90, what="second")
    totals = again.totals()
    assert totals["redelivered"] == 0, totals
    assert totals["processed"] == first.good + second.good, totals
    assert_invariant(totals, 2_000)


def test_consumer_offset_past_the_log_end_is_reported_not_ready(
    broker: TansuBroker, start_service: StartService, tmp_path: Path
) -> None:
    """The group's committed offset is 1,000 on a partition holding 10 records (committed by
    hand here; a truncated or re-created topic under surviving group offsets does the same):
    the status row says ``past_end`` 990, the gauge says 990 and ``/readyz`` is 503 naming
    the partition (today: lag 0 and ready)."""
    topic = new_topic(broker, "rel-past-end", partitions=1)
    produce_compressed(broker, topic, [_event(i) for i in range(10)], None)
    group = f"gw-rel-{uuid.uuid4().hex[:10]}"
    committer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=group,
                              enable_auto_commit=False)  # fmt: skip
    try:
        committer.assign([TopicPartition(topic, 0)])
        committer.commit({TopicPartition(topic, 0): OffsetAndMetadata(1_000, "", -1)})
    finally:
        committer.close()
    assert broker.committed(topic, group) == {0: 1_000}
    config = kafka_serve_config(broker, topic, tmp_path / "state.sqlite", group=group)
    service = start_service(tmp_path, config)

    def row() -> dict[str, Any]:
        rows = (service.status().get("source") or {}).get("lag") or [{}]
        return dict(rows[0])

    wait_for(lambda: row().get("past_end") is not None, 60, "a past_end figure")
    assert row()["past_end"] == 990, row()
    status = service.status()
    assert not status["ready"], status
    assert any("past the end" in r and f"{topic}[0] by 990" in r
               for r in status["not_ready_reasons"]), status["not_ready_reasons"]  # fmt: skip
    assert service.readyz() == 503
    wait_for(lambda: metric_sum(service.samples(), "goldwatch_consumer_offset_past_end") == 990,
             30, "the gauge at 990")  # fmt: skip
