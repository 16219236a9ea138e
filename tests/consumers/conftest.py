"""Fixtures for consumer tests: unique topics and groups on the session's Tansu broker
(``kafka_broker``, tests/kafka_fixtures.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from consumers.kafka_source import KafkaSource, KafkaSourceConfig
from tests.kafka_broker import TansuBroker


@pytest.fixture
def topic_name() -> str:
    """A topic name no other test uses."""
    return f"goldwatch-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def consumer_group() -> str:
    """A consumer group name no other test uses (quix-streams' ``random_consumer_group``)."""
    return f"goldwatch-group-{uuid.uuid4().hex}"


@pytest.fixture
def make_topic(kafka_broker: TansuBroker, topic_name: str) -> Callable[[int], str]:
    """``make_topic(partitions) -> topic``: create the test's topic on the broker."""

    def make(partitions: int = 4) -> str:
        kafka_broker.create_topic(topic_name, partitions)
        return topic_name

    return make


FAST_GROUP_SETTINGS: dict[str, Any] = {
    # Tansu holds a group join for about session_timeout / 2: keep it small for fast tests.
    "session_timeout_ms": 3000,
    "heartbeat_interval_ms": 300,
    "max_poll_interval_ms": 6000,
    "request_timeout_ms": 4000,
    "commit_interval_s": 0.0,
    "lag_interval_s": 0.5,
    "probe_interval_s": 0.5,
    "probe_timeout_ms": 500,
    "ready_stale_after_s": 2.0,
}


@pytest.fixture
def source_config(
    kafka_broker: TansuBroker, topic_name: str, consumer_group: str
) -> Callable[..., KafkaSourceConfig]:
    """``source_config(**overrides)``: a fast-test config for the test's topic and group."""

    def make(**overrides: Any) -> KafkaSourceConfig:
        fields = {
            "bootstrap_servers": kafka_broker.bootstrap_servers,
            "topic": topic_name,
            "consumer_group": consumer_group,
            "client_id": "goldwatch-test",
            **FAST_GROUP_SETTINGS,
            **overrides,
        }
        return KafkaSourceConfig(**fields)

    return make


@pytest.fixture
def open_source() -> Iterator[Callable[[KafkaSourceConfig], KafkaSource]]:
    """``open_source(config)``: a KafkaSource closed at teardown if the test did not."""
    opened: list[KafkaSource] = []

    def make(config: KafkaSourceConfig) -> KafkaSource:
        source = KafkaSource(config)
        opened.append(source)
        return source

    yield make
    for source in opened:
        source.close()
