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

from pathlib import Path

import pytest
from kafka.errors import TopicAlreadyExistsError

from tests.acceptance.service_process import accounted
from tests.kafka_broker import TansuBroker, free_port
from tests.reliability.conftest import (
    Monitor,
    StartService,
    assert_invariant,
    assert_metrics_balance,
    kafka_serve_config,
    produce_stream,
    wait_committed,
    wait_for,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_broker_down_at_start_with_default_config(
    start_service: StartService, monitor: Monitor, tmp_path: Path
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

    late = TansuBroker.start(port=port)
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
        late.stop()
    monitor.assert_monotonic()
