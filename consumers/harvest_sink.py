"""Publish gold-question suggestions to a compacted Kafka topic keyed by question and replica.

Every replica publishes the full current record of each changed suggestion (a
:class:`service.harvest.store.CandidateSink`); the key is the suggestion's normalised question
and the replica's writer id (UTF-8, :func:`candidate_key`), so log compaction keeps each
replica's latest record of each question, and a replay or restart from the same state
overwrites rather than duplicates. Each replica's record counts the events of its own
partitions only: a reader merges a question's records (:mod:`service.harvest.merge`,
``goldwatch candidates export --from-records``) — counts summed, reasons unioned, first and
last seen the min and max. (Keyed by the question alone, as before, the last replica to
write won and the others' counts were lost: trial 46 F1.) The value is the record plus its
``writer``, as compact UTF-8 JSON; every text in it was scrubbed of personal data by the
harvest stage.

The topic is created with ``cleanup.policy=compact`` when missing (an existing topic is used
as it is; a warning is logged when its policy does not compact: ``compact,delete``, which
adds a retention, does). goldwatch never deletes from it (no tombstones: the replicas share
it), so compaction keeps the last record of every question sent. A retention
(``compact,delete``) would bound that by time but also delete the record of a suggestion
still held: the sink sends a record again only when its suggestion changes, and a held
suggestion may go unchanged for longer than any retention.

Decided suggestions: the topic holds no decisions (they live in each replica's state store,
read by the labelling API). The harvest stage gives this sink no record its repository (the
state store, listed first) refused as decided in the same flush, nor one it knows decided;
what it cannot know: a decision kept between the repository's write and this produce, or in
another replica's state file (the record the replica publishes may follow the decision
there). A decided question's last record stays on the topic (no tombstones, above), and
the other replicas, which do not know the decision, go on publishing theirs (trial 46 F7).

The sink connects lazily: building it never calls the broker, so a broker that is down when
``serve`` starts cannot stop the service (the consumer reports it as not ready and retries).
The topic and producer are set up by the first :meth:`KafkaCandidateSink.publish`; a publish
that cannot reach the broker raises, and the harvest stage counts it as a sink failure and
publishes the same records again at its next flush, which retries the setup.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import KafkaError, TopicAlreadyExistsError

from consumers.errors import SourceUnavailable
from service.settings.kafka import KafkaSourceConfig

log = logging.getLogger(__name__)

COMPACT = {"cleanup.policy": "compact"}


def candidate_key(record: Mapping[str, Any], writer: str) -> bytes:
    """The message key of a record: its normalised question, a newline (never in a
    normalised question) and ``writer`` (the publishing replica's writer id), UTF-8."""
    return f"{record['normalised']}\n{writer}".encode()


def candidate_value(record: Mapping[str, Any], writer: str) -> bytes:
    """The message value of a record: the record plus ``"writer": writer``, compact UTF-8
    JSON."""
    value = {**record, "writer": writer}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class KafkaCandidateSink:
    """A candidate sink writing to ``topic`` with an ``acks=all`` producer.

    :param config: connection and security settings (those of the Kafka source).
    :param topic: the compacted suggestions topic.
    :param writer: this replica's writer id (non-empty; kept in its state file, so a restart
        from the same state keeps it), part of every key and value.
    :param partitions: partitions when the topic is created.
    :param replication_factor: replicas when the topic is created.
    :param flush_timeout_s: how long :meth:`publish` waits for the broker, in seconds; it
        also bounds each connection attempt of the lazy setup (``bootstrap_timeout_ms``).
    """

    def __init__(
        self,
        config: KafkaSourceConfig,
        topic: str,
        writer: str,
        partitions: int = 1,
        replication_factor: int = 1,
        flush_timeout_s: float = 10.0,
    ) -> None:
        if not writer:
            raise ValueError("a candidate sink needs a writer id")
        self.topic, self.writer = topic, writer
        self.flush_timeout_s = flush_timeout_s
        self.published = 0
        self._config = config
        self._partitions, self._replication_factor = partitions, replication_factor
        self._producer: KafkaProducer | None = None

    def _ready_producer(self) -> KafkaProducer:
        """The producer, setting up the topic and producer on first use.

        :raises SourceUnavailable: the brokers cannot be reached within ``flush_timeout_s``,
            or the topic cannot be created (retried at the next call).
        """
        if self._producer is not None:
            return self._producer
        bootstrap_ms = max(1, int(self.flush_timeout_s * 1000))
        try:
            ensure_compacted_topic(self._config, self.topic, self._partitions,
                                   self._replication_factor, bootstrap_ms)  # fmt: skip
            self._producer = KafkaProducer(
                **self._config.client_kwargs(),
                acks="all",
                linger_ms=50,
                bootstrap_timeout_ms=bootstrap_ms,
            )
        except KafkaError as exc:
            raise SourceUnavailable(f"cannot set up topic {self.topic}: {exc!r}") from exc
        return self._producer

    def publish(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Send ``records`` and wait until the broker has them all (setting up the topic and
        producer first if no publish has done it yet).

        :raises kafka.errors.KafkaError: a send failed or timed out (the caller retries).
        :raises SourceUnavailable: the broker cannot be reached to set up (the caller retries).
        """
        producer = self._ready_producer()
        futures = [
            producer.send(
                self.topic, key=candidate_key(r, self.writer), value=candidate_value(r, self.writer)
            )
            for r in records
        ]
        producer.flush(timeout=self.flush_timeout_s)
        for future in futures:
            future.get(timeout=self.flush_timeout_s)
        self.published += len(futures)

    def close(self) -> None:
        """Flush and close the producer (nothing to do when no publish set it up)."""
        if self._producer is not None:
            self._producer.close(timeout=self.flush_timeout_s)


def ensure_compacted_topic(
    config: KafkaSourceConfig,
    topic: str,
    partitions: int = 1,
    replication_factor: int = 1,
    bootstrap_timeout_ms: int = 30_000,
) -> bool:
    """Create ``topic`` with ``cleanup.policy=compact`` unless it exists; return whether it
    was created. ``bootstrap_timeout_ms`` bounds the wait for a first broker (ms).

    :raises kafka.errors.KafkaError: the admin request failed.
    """
    admin = KafkaAdminClient(**config.client_kwargs(), bootstrap_timeout_ms=bootstrap_timeout_ms)
    try:
        if topic in set(admin.list_topics()):
            _warn_unless_compacted(admin, topic)
            return False
        try:
            admin.create_topics({topic: {"num_partitions": partitions,
                                         "replication_factor": replication_factor,
                                         "configs": dict(COMPACT)}})  # fmt: skip
        except TopicAlreadyExistsError:
            return False  # another replica won the race
        log.info("created compacted topic %s (%d partitions)", topic, partitions)
        return True
    finally:
        admin.close()


def cleanup_policy(admin: KafkaAdminClient, topic: str) -> str | None:
    """The topic's ``cleanup.policy`` as the broker reports it (``None``: not reported)."""
    try:
        found = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                       config_filter="all")  # fmt: skip
        entries = next(iter(found.values()))[topic]
    except (KafkaError, StopIteration, KeyError, TypeError, AttributeError):
        return None
    entry = entries.get("cleanup.policy")
    value = entry.get("value") if isinstance(entry, Mapping) else entry
    return None if value is None else str(value)


def is_compacted(policy: str | None) -> bool:
    """Whether a ``cleanup.policy`` compacts (``compact``, or ``compact,delete``: compaction
    plus a retention, which also deletes held suggestions unchanged for longer than it, see
    the module docstring); ``None`` (not reported) counts as compacted.

    >>> [is_compacted(p) for p in (None, "compact", "delete,compact", "delete")]
    [True, True, True, False]
    """
    return policy is None or "compact" in (part.strip() for part in policy.split(","))


def _warn_unless_compacted(admin: KafkaAdminClient, topic: str) -> None:
    if not is_compacted(cleanup_policy(admin, topic)):
        log.warning("topic %s is not compacted: replicas' suggestions will pile up", topic)
