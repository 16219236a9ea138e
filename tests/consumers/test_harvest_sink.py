"""The Kafka candidate sink against a real Tansu broker: a compacted topic keyed by the
normalised question and the replica's writer id; a replay never adds a second key for one
suggestion, and merging the replicas' records counts every ask (trial 46 F1); no planted
personal data reaches the topic."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient

from consumers.errors import SourceUnavailable
from consumers.harvest_sink import KafkaCandidateSink, cleanup_policy, ensure_compacted_topic
from consumers.kafka_source import KafkaSourceConfig
from service.harvest.config import HarvestConfig
from service.harvest.merge import merge_records
from service.harvest.stage import HarvestStage
from service.pii import PiiScrubStage
from tests.acceptance.conftest import read_topic
from tests.kafka_broker import TansuBroker, free_port
from tests.kafka_fixtures import StartBroker
from tests.service.harvest.helpers import batch, event

pytestmark = pytest.mark.kafka

PLANTED = ["rahul.verma@example.com", "+91 98765 43210", "2341 2341 2346", "ABCPE1234F"]
QUESTIONS = [
    f"mail {PLANTED[0]} the hostel fee receipt",
    "Hostel fee receipt kab milega?",
    f"call {PLANTED[1]} about the bus pass",
    f"my aadhaar {PLANTED[2]} and pan {PLANTED[3]} for scholarship",
    "hostel fee receipt kab milega",
]


def read_all(broker: TansuBroker, topic: str) -> list[tuple[bytes, bytes]]:
    """``(key, value)`` of every record of ``topic`` up to its end offsets."""
    return [(m.key, m.value) for m in read_topic(broker, topic)]


def run_replica(sink: KafkaCandidateSink, indexes: list[int]) -> None:
    stage = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[sink])
    events = [event(f"e{i}", QUESTIONS[i], minute=i) for i in indexes]
    scrubbed = batch(events, [{"refused": True} for _ in indexes])
    PiiScrubStage().process(scrubbed)
    stage.process(scrubbed)


def test_topic_is_created_compacted_and_kept(
    kafka_broker: TansuBroker, source_config: Callable[..., KafkaSourceConfig], topic_name: str
) -> None:
    config = source_config()
    sink = KafkaCandidateSink(config, topic_name, "w-a")
    assert topic_name not in kafka_broker.list_topics()  # lazy: building calls no broker
    sink.publish([])  # the first publish sets the topic up
    sink.close()
    assert topic_name in kafka_broker.list_topics()
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    try:
        assert cleanup_policy(admin, topic_name) == "compact"
    finally:
        admin.close()
    assert ensure_compacted_topic(config, topic_name) is False  # exists: left as it is


def test_replays_publish_one_key_per_suggestion_and_replicas_merge_without_personal_data(
    kafka_broker: TansuBroker, source_config: Callable[..., KafkaSourceConfig], topic_name: str
) -> None:
    """Two replicas share the events (A: 0, 2, 4; B: 1, 3). "hostel fee receipt kab
    milega" is asked twice, once on each (events 1 and 4): keyed by the question alone the
    topic kept B's count 1 (trial 46 F1); keyed by question and writer it keeps A's 1 and
    B's 1, merged to 2."""
    sink_a = KafkaCandidateSink(source_config(), topic_name, "w-a", partitions=2)
    sink_b = KafkaCandidateSink(source_config(), topic_name, "w-b", partitions=2)
    try:
        run_replica(sink_a, [0, 2, 4])  # replica A
        run_replica(sink_a, [0, 2, 4])  # replica A replayed from scratch
        run_replica(sink_b, [1, 3])  # replica B, its share of the partitions
    finally:
        sink_a.close()
        sink_b.close()
    messages = read_all(kafka_broker, topic_name)
    assert len(messages) == 3 + 3 + 2 == sink_a.published + sink_b.published
    latest = {key: json.loads(value) for key, value in messages}
    # "mail <EMAIL> the hostel fee receipt" and "hostel fee receipt kab milega" are not
    # near-duplicates; the two spellings of the second are. A key is the normalised subject
    # (service.text.subject: no placeholder, no contact clause such as "my aadhaar <AADHAAR>")
    # and the writer
    assert sorted(latest) == [
        b"call about the bus pass\nw-a",
        b"hostel fee receipt kab milega\nw-a",
        b"hostel fee receipt kab milega\nw-b",
        b"mail the hostel fee receipt\nw-a",
        b"pan for scholarship\nw-b",
    ]
    assert latest[b"hostel fee receipt kab milega\nw-b"]["count"] == 1
    assert latest[b"hostel fee receipt kab milega\nw-b"]["writer"] == "w-b"
    merged = {r["normalised"]: r for r in merge_records(json.loads(v) for _, v in messages)}
    assert sorted(merged) == ["call about the bus pass", "hostel fee receipt kab milega",
                              "mail the hostel fee receipt", "pan for scholarship"]  # fmt: skip
    hostel = merged["hostel fee receipt kab milega"]
    assert (hostel["count"], hostel["writers"]) == (2, ["w-a", "w-b"])
    assert sorted(hostel["events"]) == ["e1", "e4"]
    assert len({r["id"] for r in merged.values()}) == 4
    for key, value in messages:
        text = key.decode() + value.decode()
        assert not any(item in text for item in PLANTED)
        assert "98765" not in text and "2346" not in text


def test_sink_built_while_the_broker_is_down_sets_up_once_it_is_up(
    topic_name: str, start_broker: StartBroker
) -> None:
    """Building the sink calls no broker (serve must start with the broker down); a publish
    while it is down raises ``SourceUnavailable`` (the harvest stage counts it and retries at
    its next flush), and the next publish after the broker came up creates the compacted
    topic and delivers the records."""
    port = free_port()
    config = KafkaSourceConfig(bootstrap_servers=f"127.0.0.1:{port}", topic="unused",
                               consumer_group="unused")  # fmt: skip
    sink = KafkaCandidateSink(config, topic_name, "w-a", flush_timeout_s=2.0)
    record = {"id": "c-1", "normalised": "hostel fee kab", "count": 1}
    with pytest.raises(SourceUnavailable):
        sink.publish([record])
    broker = start_broker(port)
    sink.publish([record])
    sink.close()
    assert read_all(broker, topic_name) == [(b"hostel fee kab\nw-a", json.dumps(
        {**record, "writer": "w-a"}, separators=(",", ":")).encode())]  # fmt: skip
    assert sink.published == 1
