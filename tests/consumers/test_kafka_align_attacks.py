"""Tansu: the event-time alignment under group churn a review tried (s37-rev-align): a
member kicked out of the group (``max_poll_interval_ms`` exceeded) while it holds records,
a partition holding records moved to another aligned member, live traffic next to a quiet
and an empty partition. Each record is handed out once (commits after every batch, so no
redelivery is expected), the group's commits reach every partition's end."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

from consumers.kafka_source import KafkaSource
from tests.consumers.test_kafka_align import (
    AHEAD,
    SKEW_S,
    MakeConfig,
    Reader,
    assert_commits_behind_held,
    event_times,
    finish,
    first_held,
    produce,
    start_holding,
)
from tests.kafka_broker import TansuBroker

pytestmark = pytest.mark.kafka


def test_a_member_kicked_out_of_the_group_while_holding_loses_nothing(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    consumer_group: str,
) -> None:
    """Partition 0 holds 280 records far ahead; the consumer stops polling for longer than
    ``max_poll_interval_ms`` (kafka-python leaves the group: the next poll reports the
    partitions lost) and then goes on: every record is handed out once."""
    topic = make_topic(2)
    source, reader, ends = start_holding(kafka_broker, topic, source_config())
    try:
        assert_commits_behind_held(kafka_broker, topic, consumer_group, source)
        coordinator = source._consumer._coordinator
        deadline = time.monotonic() + 60
        while not coordinator._generation.is_lost():  # the heartbeat thread left the group
            assert time.monotonic() < deadline, "the member did not leave the group"
            time.sleep(0.2)
        assert reader.held(0)
        finish(kafka_broker, topic, reader, ends)
        assert kafka_broker.committed(topic, consumer_group) == {p: n + 1 for p, n in ends.items()}
    finally:
        source.close()


def test_a_partition_holding_records_moved_to_another_aligned_member_loses_nothing(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    consumer_group: str,
) -> None:
    """4 partitions, the even ones far ahead (held back), the odd ones behind; a second
    aligned member joins while the first holds records: the two hand out every record
    once between them."""
    topic = make_topic(4)
    for partition in (0, 2):
        produce(kafka_broker, topic, partition, [*range(10), *(AHEAD + i for i in range(500))])
    for partition in (1, 3):
        produce(kafka_broker, topic, partition, range(4_000))
    ends = kafka_broker.end_offsets(topic)
    everything = {(p, o) for p, end in ends.items() for o in range(end)}
    first = KafkaSource(source_config(), event_times=event_times, max_skew_s=SKEW_S)
    second: KafkaSource | None = None
    stop = threading.Event()
    errors: list[BaseException] = []
    try:
        reader = Reader(first)
        reader.until(lambda: reader.held(0) or reader.held(2), "a partition held back")
        second = KafkaSource(source_config(), event_times=event_times, max_skew_s=SKEW_S)
        other = Reader(second)

        def run() -> None:
            try:
                while not stop.is_set():
                    other.poll()
            except BaseException as exc:  # reported by the test
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            deadline = time.monotonic() + 120
            while not everything <= set(reader.handed) | set(other.handed):
                assert time.monotonic() < deadline, (
                    f"missing {len(everything - set(reader.handed) - set(other.handed))}, "
                    f"first {first.status()['alignment']} {first.assignment()}, second "
                    f"{second.status()['alignment']} {second.assignment()}"
                )
                reader.poll()
        finally:
            stop.set()
            thread.join(timeout=60)
        assert not errors, errors
        both = Counter(reader.handed) + Counter(other.handed)
        twice = sorted(key for key, n in both.items() if n > 1)
        assert not twice, f"handed out more than once: {len(twice)} {twice[:10]}"
        assert set(both) == everything
        assert second.assignment(), "the second member got no partition"
    finally:
        first.close()
        if second is not None:
            second.close()


def test_live_records_are_not_held_by_a_quiet_or_an_empty_partition(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
) -> None:
    """Partition 0 and 1 read to their end (partition 1 quiet at an old event time),
    partition 2 empty: records produced on partition 0 far ahead of partition 1's last one
    are handed out, held only until a read of the quiet partitions' end offsets after they
    were fetched showed nothing there (s40: a partition that looks caught up may only have
    an old high watermark), one read a round."""
    topic = make_topic(3)
    produce(kafka_broker, topic, 0, range(100))
    produce(kafka_broker, topic, 1, range(100))
    source = KafkaSource(source_config(), event_times=event_times, max_skew_s=SKEW_S)
    try:
        reader = Reader(source)
        reader.until(lambda: reader.count(0) == 100 and reader.count(1) == 100, "the backlog")
        for _ in range(10):  # fetch responses bring every partition's high watermark
            reader.poll()
        checks = source.end_checks
        for round_ in range(5):
            produce(kafka_broker, topic, 0, [AHEAD + round_ * 10 + i for i in range(10)])
            reader.until(lambda r=round_: reader.count(0) == 110 + 10 * r, "the live records")
            assert not first_held(source)
            assert source.end_checks > checks and source.end_check_failures == 0
            checks = source.end_checks
    finally:
        source.close()
