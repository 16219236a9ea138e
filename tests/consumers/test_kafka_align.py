"""The Kafka partitions' event-time alignment on a broker (Tansu): what the source holds back
is never lost nor handed out twice when the group rebalances, the consumer subscribes again
or closes (a review of s36-align reproduced the first two: records lost at an eager
rebalance that kept their partition, a partition never read again after a re-subscription).

Partition 0 is a stretch far ahead in event time (held back while partition 1, behind,
still has records to read), so records of it sit in the source's buffers when the group
changes. Each test checks every offset handed out exactly once: after the records, an end
marker is produced to each partition, later than every record in event time; a partition
is read in offset order, so a record handed out again would come before its marker.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

import pytest
from kafka import KafkaConsumer, TopicPartition

from consumers.base import RawMessage
from consumers.kafka_source import KafkaSource
from service.settings.kafka import KafkaSourceConfig
from tests.consumers.conftest import FAST_GROUP_SETTINGS
from tests.kafka_broker import TansuBroker

pytestmark = pytest.mark.kafka

MakeConfig = Callable[..., KafkaSourceConfig]

#: Event time of partition 0's stretch ahead (seconds): far past every record of partition 1.
AHEAD = 1e6
#: The end markers' event time: after every record.
END_T = 3e6
#: The other member's group timings (kafka-python's names), those of the source under test.
GROUP_TIMINGS = ("session_timeout_ms", "heartbeat_interval_ms", "max_poll_interval_ms",
                 "request_timeout_ms")  # fmt: skip
#: The alignment's bound (event-time seconds).
SKEW_S = 100.0


def event_times(messages: Sequence[RawMessage]) -> list[float | None]:
    """The test records' event times: their value's ``t``."""
    return [json.loads(message.value or b"{}").get("t") for message in messages]


def produce(broker: TansuBroker, topic: str, partition: int, stamps: Sequence[float]) -> None:
    broker.produce(topic, [json.dumps({"t": t}).encode() for t in stamps], partition=partition)


class Reader:
    """Polls an aligned source, committing each batch (``force``), and keeps every
    ``(partition, offset)`` handed out, end markers apart."""

    def __init__(self, source: KafkaSource) -> None:
        self.source = source
        self.handed: list[tuple[int, int]] = []
        self.ends: set[int] = set()

    def poll(self, max_records: int = 20) -> None:
        batch = self.source.poll(max_records=max_records, timeout_ms=200)
        for message in batch:
            origin = message.origin
            assert origin.partition is not None and origin.offset is not None
            if json.loads(message.value or b"{}").get("t") == END_T:
                self.ends.add(origin.partition)
            else:
                self.handed.append((origin.partition, origin.offset))
        if batch:
            self.source.commit(batch, force=True)

    def until(self, done: Callable[[], bool], what: str, timeout_s: float = 90.0,
              why: Callable[[], str] = str) -> None:  # fmt: skip
        """Poll until ``done()`` (``timeout_s`` is a bound for a loaded machine); ``why()``
        says what was missing when it fails."""
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s; {why()}"
            self.poll()

    def held(self, partition: int) -> bool:
        aligner = self.source._aligner
        assert aligner is not None
        return any(tp.partition == partition for tp in aligner.buffered())

    def count(self, partition: int) -> int:
        return sum(1 for p, _ in self.handed if p == partition)


#: The held-partition setup's partition 0: records early in event time, then far ahead.
EARLY, AHEAD_RECORDS = 20, 280


def start_holding(broker: TansuBroker, topic: str, config: KafkaSourceConfig,
                  behind: int = 3_000) -> tuple[KafkaSource, Reader, dict[int, int]]:  # fmt: skip
    """The held-partition setup the alignment tests share: on ``topic`` (2 partitions),
    partition 0 gets :data:`EARLY` records early and :data:`AHEAD_RECORDS` far ahead in
    event time, partition 1 ``behind`` records behind; an aligned source (``config``) is
    read until partition 0's early records are handed out and the rest of it is held back
    (and 50 of partition 1's are read). Returns ``(source, its reader, the partitions' end
    offsets before any marker)``; the caller closes the source (it is closed here when
    the setup fails).

    Raises:
        AssertionError: partition 0 was not held back within the reader's bound.
    """
    produce(broker, topic, 0, [*range(EARLY), *(AHEAD + i for i in range(AHEAD_RECORDS))])
    produce(broker, topic, 1, range(behind))
    ends = broker.end_offsets(topic)
    source = KafkaSource(config, event_times=event_times, max_skew_s=SKEW_S)
    try:
        reader = Reader(source)
        reader.until(lambda: reader.held(0) and reader.count(0) == EARLY and reader.count(1) >= 50,
                     f"partition 0 held back after its {EARLY} early records")  # fmt: skip
    except BaseException:
        source.close()
        raise
    return source, reader, ends


def first_held(source: KafkaSource) -> dict[int, int]:
    """``{partition: offset of its first record held back}``."""
    assert source._aligner is not None
    return {tp.partition: record.offset for tp, record in source._aligner.first_held().items()}


def assert_commits_behind_held(broker: TansuBroker, topic: str, group: str,
                               source: KafkaSource) -> None:  # fmt: skip
    """No partition's committed offset is past its first record held back."""
    held = first_held(source)
    committed = broker.committed(topic, group)
    for partition, offset in held.items():
        assert (committed.get(partition) or 0) <= offset, (partition, committed, held)


def _missing(reader: Reader, everything: set[tuple[int, int]]) -> str:
    """What a reader has not handed out (per partition: how many, the first and last) and
    where its consumer stands, for a failure's message."""
    missing = sorted(everything - set(reader.handed))
    per: dict[int, list[int]] = {}
    for partition, offset in missing:
        per.setdefault(partition, []).append(offset)
    consumer = reader.source._consumer
    states = {tp.partition: (state.position, state.paused)
              for tp, state in consumer._subscription.assignment.items()}  # fmt: skip
    fetcher = consumer._fetcher
    parked = [*fetcher._paused_partition_records, *fetcher._paused_completed_fetches]
    status = reader.source.status()
    return (
        f"missing { {p: (len(o), o[0], o[-1]) for p, o in per.items()} }, states {states}, "
        f"parked {parked}, alignment {status['alignment']}, "
        f"committed {status['committed_offsets']}, rebalances {status['rebalances']}"
    )


def finish(broker: TansuBroker, topic: str, reader: Reader, ends: dict[int, int],
           before: frozenset[tuple[int, int]] = frozenset()) -> None:  # fmt: skip
    """Read every record up to ``ends`` (the partitions' end offsets before the markers)
    but those handed out ``before`` (by another member), then the markers; assert each
    handed out exactly once."""
    everything = {(p, o) for p, end in ends.items() for o in range(end)} - before
    reader.until(lambda: everything <= set(reader.handed), "every record handed out",
                 why=lambda: _missing(reader, everything))  # fmt: skip
    for partition in ends:
        produce(broker, topic, partition, [END_T])
    reader.until(lambda: reader.ends == set(ends), "the end markers")
    twice = {key: n for key, n in Counter(reader.handed).items() if n > 1}
    assert not twice, f"handed out more than once: {sorted(twice)[:10]}"
    assert set(reader.handed) == everything


class _LeftOutOfTheGroup(Exception):
    """The test broker formed the group's generation without the source under test."""


def test_a_rebalance_that_keeps_a_partition_holding_records_loses_nothing(
    kafka_broker: TansuBroker,
    topic_name: str,
    source_config: MakeConfig,
    consumer_group: str,
) -> None:
    """Partition 0: 20 records early, then 280 far ahead (held back); partition 1: 5,000
    behind. While partition 0's records are held (its committed offset not past them),
    another member joins the group for another topic only: an eager rebalance revokes both
    partitions and assigns them back to this member, which kafka-python does keeping their
    positions, past the held records. Every record is handed out exactly once and the group
    commits each partition to its end (s36-align: the 20 held records of partition 0 lost
    while the commits moved past them).

    Tansu now and then never answers the source's JoinGroup of a third rebalance and forms
    the generation with the other member alone (seen once in 5 runs on a loaded machine:
    the source then holds no partition and reads nothing): only then the scenario runs once
    more, on a fresh topic and group. A partition assigned to the source and not read, a
    record lost or handed out twice fails at once.
    """
    for attempt in range(2):
        topic = f"{topic_name}-{attempt}"
        kafka_broker.create_topic(topic, 2)
        try:
            _keep_a_partition_while_holding(kafka_broker, topic, source_config,
                                            f"{consumer_group}-{attempt}")  # fmt: skip
            return
        except _LeftOutOfTheGroup:
            if attempt:
                raise


def _keep_a_partition_while_holding(
    kafka_broker: TansuBroker, topic: str, source_config: MakeConfig, consumer_group: str
) -> None:
    """The scenario of the test above on ``topic`` (2 partitions, created) and ``consumer_group``.

    Raises:
        _LeftOutOfTheGroup: a check failed while the source held no partition.
    """
    other_topic = f"{topic}-other"
    kafka_broker.create_topic(other_topic, 1)
    source, reader, ends = start_holding(
        kafka_broker, topic, source_config(topic=topic, consumer_group=consumer_group), 5_000
    )
    stop = threading.Event()
    other: threading.Thread | None = None
    try:
        assert first_held(source)[0] == EARLY
        assert_commits_behind_held(kafka_broker, topic, consumer_group, source)

        def member() -> None:
            timings = {name: FAST_GROUP_SETTINGS[name] for name in GROUP_TIMINGS}
            consumer = KafkaConsumer(other_topic, group_id=consumer_group,
                                     bootstrap_servers=kafka_broker.bootstrap_servers,
                                     **timings)  # fmt: skip
            try:
                while not stop.is_set():
                    consumer.poll(timeout_ms=200)
            finally:
                consumer.close()

        other = threading.Thread(target=member)
        other.start()
        # no poll until the group asks this member to rejoin (its heartbeats run on
        # kafka-python's I/O thread): the next poll then revokes with records held back
        coordinator = source._consumer._coordinator
        deadline = time.monotonic() + 60
        while not coordinator.rejoin_needed:
            assert time.monotonic() < deadline, "the group did not start a rebalance"
            time.sleep(0.05)
        assert reader.held(0)
        rebalances = source.status()["rebalances"]
        reader.until(lambda: source.status()["rebalances"] > rebalances
                     and len(source.assignment()) == 2, "assigned again")  # fmt: skip
        assert_commits_behind_held(kafka_broker, topic, consumer_group, source)
        # the other member stays: Tansu sometimes never answers the SyncGroup of a rebalance
        # that a member leaving starts right after the last one (seen once in 4 runs)
        finish(kafka_broker, topic, reader, ends)
        assert kafka_broker.committed(topic, consumer_group) == {p: n + 1 for p, n in ends.items()}
        alignment = source.status()["alignment"]
        assert alignment["rewinds"] >= 1, alignment  # a kept partition was read again
    except AssertionError as failed:
        if not source.assignment():
            # this member is in no generation of the group: the broker left it out
            raise _LeftOutOfTheGroup(str(failed)) from failed
        raise
    finally:
        stop.set()
        if other is not None:
            other.join(timeout=30)
        source.close()


def test_a_re_subscription_does_not_stop_a_partition_holding_records(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    consumer_group: str,
) -> None:
    """Partition 0: 300 records far ahead, fetched at once and held back (kafka-python parks
    the part of the fetch not returned yet while the partition is paused); partition 1: 70
    behind. The source subscribes again (as for a changed partition set or a re-created
    topic) while holding them: both partitions are read to the end, each record once
    (s36-align: the parked fetch data stayed in kafka-python's fetcher, which never fetches
    a partition with parked data: partition 0 read 0 of 300, for good)."""
    topic = make_topic(2)
    produce(kafka_broker, topic, 0, [AHEAD + i for i in range(300)])
    produce(kafka_broker, topic, 1, range(70))
    ends = kafka_broker.end_offsets(topic)
    source = KafkaSource(source_config(), event_times=event_times, max_skew_s=SKEW_S)
    try:
        reader = Reader(source)
        reader.until(lambda: reader.held(0) and reader.count(1) >= 50,
                     "partition 0 held back")  # fmt: skip
        parked = source._consumer._fetcher._paused_partition_records
        assert TopicPartition(topic, 0) in parked  # what stopped the partition
        assert_commits_behind_held(kafka_broker, topic, consumer_group, source)
        source._resubscribe()
        finish(kafka_broker, topic, reader, ends)
        assert source.status()["resubscribes"] == 1
        assert kafka_broker.committed(topic, consumer_group) == {p: n + 1 for p, n in ends.items()}
    finally:
        source.close()


def test_a_source_closed_holding_records_commits_none_of_them(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    consumer_group: str,
) -> None:
    """A source closed (a clean stop) while partition 0's records are held back commits
    exactly what it handed out, nothing held: the group's next member, not aligned, reads
    every record the first did not hand out, and none it did."""
    topic = make_topic(2)
    first, reader, ends = start_holding(kafka_broker, topic, source_config())
    try:
        held = first_held(first)
    finally:
        first.close()
    handed = set(reader.handed)
    assert len(handed) == len(reader.handed)
    committed = kafka_broker.committed(topic, consumer_group)
    for partition, offset in held.items():
        assert (committed[partition] or 0) <= offset, (committed, held)
    assert committed == {p: 1 + max(o for q, o in handed if q == p) for p in ends}
    second = KafkaSource(source_config())
    try:  # reads from the commits: exactly what the first did not hand out
        finish(kafka_broker, topic, Reader(second), ends, before=frozenset(handed))
    finally:
        second.close()
