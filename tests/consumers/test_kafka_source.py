"""KafkaSource against a real Tansu broker: offsets, redelivery, groups, DLQ, lag, faults."""

from __future__ import annotations

import base64
import contextlib
import copy
import itertools
import json
import pickle
import threading
import time
from collections.abc import Callable
from typing import Any

import kafka.partitioner.default
import pytest
from kafka import KafkaConsumer
from kafka.consumer.fetcher import ConsumerRecord

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.errors import DeadLetterError
from consumers.kafka_source import (
    KafkaSource,
    KafkaSourceConfig,
    dead_letter_headers,
    dead_letter_value,
    messages_from_records,
)
from tests.acceptance.conftest import read_topic
from tests.kafka_broker import TansuBroker

pytestmark = pytest.mark.kafka

N_MESSAGES = 1000
N_PARTITIONS = 4

MakeConfig = Callable[..., KafkaSourceConfig]
OpenSource = Callable[[KafkaSourceConfig], KafkaSource]


def values(n: int = N_MESSAGES, prefix: str = "m") -> list[bytes]:
    return [f'{{"event_id": "{prefix}-{i}"}}'.encode() for i in range(n)]


def drain(
    source: KafkaSource,
    expected: int,
    timeout_s: float = 60.0,
    commit: bool = True,
) -> list[RawMessage]:
    """Poll until ``expected`` messages arrived (or ``timeout_s``, a bound for a loaded
    machine: the loop ends as soon as they are there), committing each batch."""
    got: list[RawMessage] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < expected and time.monotonic() < deadline:
        batch = source.poll(max_records=200, timeout_ms=200)
        got.extend(batch)
        if commit and batch:
            source.commit(batch)
    return got


#: The end-of-stream marker: produced to every partition after the messages that must (or
#: must not) arrive. A partition is read in offset order, so once its marker is in, whatever
#: came before it has arrived too; no "wait a while, then assert nothing came".
END = b'{"event_id": "end-of-stream"}'


def is_end(message: RawMessage) -> bool:
    return message.value == END


def without_ends(messages: list[RawMessage]) -> list[RawMessage]:
    return [m for m in messages if not is_end(m)]


def produce_ends(broker: TansuBroker, topic: str) -> int:
    """Produce one :data:`END` to every partition of ``topic``; return how many."""
    partitions = sorted(broker.end_offsets(topic))
    for partition in partitions:
        broker.produce(topic, [END], partition=partition)
    return len(partitions)


def poll_to_ends(source: KafkaSource, ends: int, timeout_s: float = 60.0) -> list[RawMessage]:
    """Poll (no commit) until ``ends`` end-of-stream markers arrived; return every message
    polled, markers included. Fails after ``timeout_s`` (a bound, not a timing)."""
    got: list[RawMessage] = []
    deadline = time.monotonic() + timeout_s
    while sum(map(is_end, got)) < ends:
        assert time.monotonic() < deadline, f"{sum(map(is_end, got))} of {ends} end markers"
        got.extend(source.poll(max_records=200, timeout_ms=200))
    return got


def wait_assigned(source: KafkaSource, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not source.status()["assigned_count"] and time.monotonic() < deadline:
        source.poll(max_records=1, timeout_ms=100)
    assert source.status()["assigned_count"], "no assignment"


def ids(messages: list[RawMessage]) -> set[tuple[int | None, int | None]]:
    return {(m.origin.partition, m.origin.offset) for m in messages}


def read_dead_letters(broker: TansuBroker, topic: str, limit: int | None = None) -> list[Any]:
    """The records of ``<topic>.dlq`` from the start: all of them up to the topic's end
    offsets, or the first ``limit`` (5 s without one ends the read: a bound)."""
    if limit is None:
        return read_topic(broker, f"{topic}.dlq")
    reader = KafkaConsumer(
        f"{topic}.dlq",
        bootstrap_servers=broker.bootstrap_servers,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    try:
        return list(itertools.islice(reader, limit))
    finally:
        reader.close()


def test_consume_all_commit_and_new_member_sees_nothing(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
    consumer_group: str,
) -> None:
    topic = make_topic(N_PARTITIONS)
    kafka_broker.produce(topic, values())
    source = open_source(source_config())
    got = drain(source, N_MESSAGES)
    assert len(got) == N_MESSAGES and len(ids(got)) == N_MESSAGES
    assert {m.origin.topic for m in got} == {topic}
    status = source.status()
    assert status["commits"] >= 1 and status["commit_failures"] == 0
    source.close()

    end = kafka_broker.end_offsets(topic)
    assert sum(end.values()) == N_MESSAGES
    assert kafka_broker.committed(topic, consumer_group) == end

    again = open_source(source_config())
    wait_assigned(again)
    assert without_ends(poll_to_ends(again, produce_ends(kafka_broker, topic))) == []


def test_restart_redelivers_exactly_the_uncommitted(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
) -> None:
    topic = make_topic(N_PARTITIONS)
    kafka_broker.produce(topic, values())
    first = open_source(source_config())
    got = drain(first, N_MESSAGES, commit=False)
    assert len(got) == N_MESSAGES
    half = got[: N_MESSAGES // 2]  # poll order keeps each partition's prefix
    first.commit(half, force=True)
    first.close()

    second = open_source(source_config())
    replayed = drain(second, N_MESSAGES // 2)
    assert ids(replayed) == ids(got) - ids(half)
    assert without_ends(poll_to_ends(second, produce_ends(kafka_broker, topic))) == []


def test_close_commits_stored_offsets_unless_failed(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
    consumer_group: str,
) -> None:
    topic = make_topic(2)
    kafka_broker.produce(topic, values(100))
    slow_commits = source_config(commit_interval_s=3600.0)

    failed = open_source(slow_commits)
    got = drain(failed, 100, commit=False)
    failed.commit(got[:10])  # stored, not due: nothing committed yet
    assert failed.status()["uncommitted_offsets"] == 10  # what a crash now counts again
    failed.mark_failed()
    failed.close()  # after a crash the revoke listener must not commit
    assert kafka_broker.committed(topic, consumer_group) == {0: None, 1: None}

    healthy = open_source(slow_commits)
    got = drain(healthy, 100, commit=False)
    healthy.commit(got[:30])  # stored, not due
    healthy.commit(got[30:])
    assert healthy.status()["uncommitted_offsets"] == 100
    healthy.close()  # the revoke listener commits the stored offsets
    assert kafka_broker.committed(topic, consumer_group) == kafka_broker.end_offsets(topic)
    assert healthy.status()["uncommitted_offsets"] == 0


def test_uncommitted_offsets_fall_to_zero_at_a_commit(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
    consumer_group: str,
) -> None:
    topic = make_topic(2)
    kafka_broker.produce(topic, values(60))
    source = open_source(source_config(commit_interval_s=3600.0))
    try:
        got = drain(source, 60, commit=False)
        source.commit(got[:25])
        assert source.status()["uncommitted_offsets"] == 25
        source.commit(got[25:40], force=True)  # committed: nothing would be counted again
        committed = kafka_broker.committed(topic, consumer_group)
        assert sum(offset or 0 for offset in committed.values()) == 40
        assert source.status()["uncommitted_offsets"] == 0
        source.commit(got[40:])
        assert source.status()["uncommitted_offsets"] == 20
    finally:
        source.close()


class Member(threading.Thread):
    """One group member polling and committing on its own thread until stopped."""

    def __init__(self, source: KafkaSource) -> None:
        super().__init__(daemon=True)
        self.source = source
        self.got: list[RawMessage] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                batch = self.source.poll(max_records=100, timeout_ms=100)
                self.got.extend(batch)
                self.source.commit(batch)
            self.source.close()
        except BaseException as exc:  # reported by the test
            self.error = exc


def test_two_members_split_partitions(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
) -> None:
    topic = make_topic(N_PARTITIONS)
    members = [Member(open_source(source_config(client_id=f"member-{i}"))) for i in range(2)]
    for m in members:
        m.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            parts = [set(m.source.status()["assigned_partitions"]) for m in members]
            if all(parts) and len(parts[0] | parts[1]) == N_PARTITIONS:
                break
            time.sleep(0.1)
        assert all(parts) and not parts[0] & parts[1]
        assert parts[0] | parts[1] == set(range(N_PARTITIONS))

        kafka_broker.produce(topic, values())
        ends = produce_ends(kafka_broker, topic)  # a duplicate would come before its marker
        deadline = time.monotonic() + 60
        while sum(is_end(g) for m in members for g in m.got) < ends:
            assert time.monotonic() < deadline, "the end markers did not arrive"
            time.sleep(0.1)
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.join(timeout=15)
    assert [m.error for m in members] == [None, None]
    both = without_ends(members[0].got + members[1].got)
    assert len(both) == N_MESSAGES and len(ids(both)) == N_MESSAGES
    for member, own in zip(members, parts, strict=True):
        assert {msg.origin.partition for msg in without_ends(member.got)} == own


def test_dead_letters_land_on_dlq_topic(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
) -> None:
    topic = make_topic(2)
    kafka_broker.create_topic(f"{topic}.dlq", 1)
    poison = [b"\xff\xfe not utf8", b"{not json"]
    kafka_broker.produce(topic, poison, partition=1, keys=[b"k1", None])
    source = open_source(source_config())
    got = drain(source, 2)
    letters = [DeadLetter(m, reason="not_json", detail="line 1: expected value") for m in got]
    source.dead_letter(letters)
    # queued only: nothing is produced or counted before the sync the loop runs per checkpoint
    assert source.pending_dead_letters == 2 and source.status()["dead_letters"] == 0
    source.sync_dead_letters()
    assert source.pending_dead_letters == 0 and source.status()["dead_letters"] == 2

    records = read_dead_letters(kafka_broker, topic, limit=2)
    assert [r.key for r in records] == [b"k1", None]
    bodies = [json.loads(r.value) for r in records]
    assert [base64.b64decode(b["value_b64"]) for b in bodies] == poison
    assert bodies[0]["key_b64"] == base64.b64encode(b"k1").decode()
    assert {b["reason"] for b in bodies} == {"not_json"}
    assert [b["origin"] for b in bodies] == [
        {"topic": topic, "partition": 1, "offset": 0},
        {"topic": topic, "partition": 1, "offset": 1},
    ]
    # the reason and origin as record headers too (routing without parsing the body)
    assert [dict(r.headers) for r in records] == [
        {"goldwatch.dlq.reason": b"not_json", "goldwatch.dlq.topic": topic.encode(),
         "goldwatch.dlq.partition": b"1", "goldwatch.dlq.offset": str(offset).encode()}
        for offset in (0, 1)
    ]  # fmt: skip


@pytest.mark.parametrize("dlq_partitions", [1, 3])
def test_dead_letters_land_where_the_partitioner_puts_them_hashing_keys_only_when_it_must(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
    monkeypatch: pytest.MonkeyPatch,
    dlq_partitions: int,
) -> None:
    """A keyed letter lands on the partition of its key's murmur2 (the Java client's
    partitioner, which kafka-python's default copies), a key-less one anywhere: with one
    partition, all on 0, and the producer is told so instead of hashing each key."""
    topic = make_topic(1)
    kafka_broker.create_topic(f"{topic}.dlq", dlq_partitions)
    hashed: list[bytes] = []
    murmur2 = kafka.partitioner.default.murmur2

    def counted(data: bytes) -> int:
        hashed.append(bytes(data))
        return int(murmur2(data))

    monkeypatch.setattr(kafka.partitioner.default, "murmur2", counted)
    keys = [b"user-%d" % i for i in range(12)] + [None] * 3
    letters = [DeadLetter(RawMessage(b"{bad", Origin(topic, 0, offset), key), "not_json", "d")
               for offset, key in enumerate(keys)]  # fmt: skip
    source = open_source(source_config())
    source.dead_letter(letters)
    source.sync_dead_letters()
    assert source.status()["dead_letters"] == len(keys)

    records = read_dead_letters(kafka_broker, topic)
    by_offset = {json.loads(r.value)["origin"]["offset"]: r for r in records}
    assert sorted(by_offset) == list(range(len(keys)))
    for offset, key in enumerate(keys):
        assert by_offset[offset].key == key
        if dlq_partitions == 1:
            assert by_offset[offset].partition == 0
        elif key is not None:
            assert by_offset[offset].partition == (murmur2(key) & 0x7FFFFFFF) % dlq_partitions
    assert hashed == ([] if dlq_partitions == 1 else [k for k in keys if k is not None])


def test_a_dead_letter_of_a_message_near_the_size_limit_is_sent_cut_not_retried_forever(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
) -> None:
    # 900,000 bytes fit a Kafka record (1 MiB); their base64 (1,200,000 characters) does not:
    # the producer refused the whole letter, and every later sync raised DeadLetterError
    topic = make_topic(1)
    kafka_broker.create_topic(f"{topic}.dlq", 1)
    big = b"{" + b"x" * 899_999
    kafka_broker.produce(topic, [big, b"{also not json"], partition=0, keys=[b"k" * 20_000, None])
    source = open_source(source_config())
    got = drain(source, 2)
    assert [len(m.value or b"") for m in got] == [900_000, 14]
    source.dead_letter([DeadLetter(m, reason="not_json", detail="expected value") for m in got])
    source.sync_dead_letters()  # raised DeadLetterError before, on every call
    assert source.pending_dead_letters == 0 and source.status()["dead_letters"] == 2

    records = read_dead_letters(kafka_broker, topic, limit=2)
    assert [r.key for r in records] == [None, None]  # a 20 kB key is not a record key
    first, second = (json.loads(r.value) for r in records)
    assert first["truncated"] is True and first["value_bytes"] == 900_000
    assert big.startswith(base64.b64decode(first["value_b64"]))
    assert first["key_bytes"] == 20_000
    assert "truncated" not in second
    assert base64.b64decode(second["value_b64"]) == b"{also not json"


def test_dead_letters_unacknowledged_during_a_pause_stay_queued_until_a_sync_succeeds(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
) -> None:
    topic = make_topic(1)
    kafka_broker.create_topic(f"{topic}.dlq", 1)
    kafka_broker.produce(topic, [b"{bad 0", b"{bad 1"], partition=0)
    source = open_source(source_config())
    got = drain(source, 2)
    source.dead_letter([DeadLetter(got[0], "not_json", "d")])
    source.sync_dead_letters()  # the producer and the DLQ topic's metadata exist now
    kafka_broker.pause()
    try:
        source.dead_letter([DeadLetter(got[1], "not_json", "d")])
        with pytest.raises(DeadLetterError):
            source.sync_dead_letters()  # request_timeout_ms (4 s) without an acknowledgement
        assert source.pending_dead_letters == 1 and source.status()["dead_letters"] == 1
    finally:
        kafka_broker.resume()
    deadline = time.monotonic() + 30
    while source.pending_dead_letters and time.monotonic() < deadline:
        with contextlib.suppress(DeadLetterError):
            source.sync_dead_letters()
    assert source.pending_dead_letters == 0 and source.status()["dead_letters"] == 2

    offsets = [
        json.loads(r.value)["origin"]["offset"] for r in read_dead_letters(kafka_broker, topic)
    ]
    assert sorted(set(offsets)) == [0, 1]  # both landed (the second possibly twice)


def test_lag_is_end_minus_committed(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
) -> None:
    topic = make_topic(N_PARTITIONS)
    kafka_broker.produce(topic, values())
    # The drain leaves a fetch long-polling the idle topic (fetch_max_wait_ms, 500 ms), and
    # the broker answers the lag sample's ListOffsets on that connection only after it: a
    # probe timeout of 500 ms then fails or passes by a few ms, so give it room.
    source = open_source(source_config(probe_timeout_ms=2000))
    got = drain(source, N_MESSAGES, commit=False)
    per_partition = {p: [m for m in got if m.origin.partition == p] for p in range(N_PARTITIONS)}
    done = {p: 10 * (p + 1) for p in range(N_PARTITIONS)}  # commit 10, 20, 30, 40 messages
    source.commit([m for p, ms in per_partition.items() for m in ms[: done[p]]], force=True)
    assert source.refresh_lag()
    end = kafka_broker.end_offsets(topic)
    lag = {row["partition"]: row for row in source.lag()}
    assert {p: row["lag"] for p, row in lag.items()} == {p: end[p] - done[p] for p in end}
    assert {p: row["committed_offset"] for p, row in lag.items()} == done

    source.commit(got, force=True)
    assert {row["lag"] for row in source.lag()} == {0}
    assert source.status()["lag"] == source.lag()


def test_a_restarted_member_reports_the_group_committed_offsets_it_inherits(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
    consumer_group: str,
) -> None:
    """Trial 46 (F11): after a restart, ``committed_offsets`` said ``{}`` (only this run's
    commits) while every ``lag`` row showed the group's committed offset. Both now give the
    group's offset of each held partition: here 10, 20, 30 and 40, committed by the first run."""
    topic = make_topic(N_PARTITIONS)
    kafka_broker.produce(topic, values())
    first = open_source(source_config())
    got = drain(first, N_MESSAGES, commit=False)
    done = {p: 10 * (p + 1) for p in range(N_PARTITIONS)}
    first.commit([m for p in range(N_PARTITIONS)
                  for m in [m for m in got if m.origin.partition == p][: done[p]]],
                 force=True)  # fmt: skip
    first.mark_failed()  # close commits nothing more
    first.close()
    assert kafka_broker.committed(topic, consumer_group) == done

    second = open_source(source_config(probe_timeout_ms=2000))
    wait_assigned(second)
    assert second.refresh_lag()
    status = second.status()
    assert status["committed_offsets"] == {f"{topic}[{p}]": done[p] for p in done}
    assert {row["partition"]: row["committed_offset"] for row in status["lag"]} == done


def test_broker_pause_turns_not_ready_and_resume_loses_nothing(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
) -> None:
    topic = make_topic(N_PARTITIONS)
    kafka_broker.produce(topic, values(200, "before"))
    source = open_source(source_config())
    got = drain(source, 200)
    assert source.ready()

    kafka_broker.pause()
    try:
        paused_at = last_ready = time.monotonic()
        while time.monotonic() - paused_at < 10:
            if not source.ready():
                break
            last_ready = time.monotonic()  # ready() said so until at least here
            got.extend(source.poll(max_records=100, timeout_ms=200))
        assert not source.ready()
        # The last moment it still said ready, not when this loop asked next: ready() only
        # compares the clock with the broker's last answer, while a poll (with its lag probe)
        # can take longer than usual on a loaded machine.
        ready_for = last_ready - paused_at
        assert ready_for < 2.0 + 2.0  # ready_stale_after_s + one probe timeout and poll
    finally:
        kafka_broker.resume()

    resumed_at = time.monotonic()
    while not source.ready() and time.monotonic() - resumed_at < 15:
        got.extend(source.poll(max_records=100, timeout_ms=200))
    assert source.ready()
    kafka_broker.produce(topic, values(200, "after"))
    got.extend(drain(source, 400 - len(got)))
    assert sorted(m.value for m in got) == sorted(values(200, "before") + values(200, "after"))
    assert len(ids(got)) == 400


def test_tombstone_is_delivered_with_value_none(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
) -> None:
    topic = make_topic(1)
    kafka_broker.produce(topic, [b"{}", None], keys=[b"a", b"a"])
    source = open_source(source_config())
    got = drain(source, 2)
    assert [(m.key, m.value) for m in got] == [(b"a", b"{}"), (b"a", None)]
    assert got[1].origin.offset == 1 and got[1].timestamp_ms is not None


def test_rebalance_commits_stored_offsets_of_revoked_partitions(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
    consumer_group: str,
) -> None:
    topic = make_topic(N_PARTITIONS)
    kafka_broker.produce(topic, values())
    slow_commits = source_config(commit_interval_s=3600.0)  # store only: never due
    first = Member(open_source(slow_commits))
    first.start()
    second = Member(open_source(slow_commits))
    try:
        deadline = time.monotonic() + 60
        while len(first.got) < N_MESSAGES and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(first.got) == N_MESSAGES
        assert set(kafka_broker.committed(topic, consumer_group).values()) == {None}

        second.start()  # joining revokes everything from the first member, which commits
        deadline = time.monotonic() + 60
        while not second.source.status()["assigned_count"] and time.monotonic() < deadline:
            time.sleep(0.05)
        end = kafka_broker.end_offsets(topic)  # before the markers
        while kafka_broker.committed(topic, consumer_group) != end:
            assert time.monotonic() < deadline, "the revoked partitions were not committed"
            time.sleep(0.05)
        ends = produce_ends(kafka_broker, topic)  # a replay would come before its marker
        deadline = time.monotonic() + 60
        while sum(is_end(g) for m in (first, second) for g in m.got) < ends:
            assert time.monotonic() < deadline, "the end markers did not arrive"
            time.sleep(0.05)
        assert without_ends(second.got) == []  # nothing processed by the first is replayed
        assert kafka_broker.committed(topic, consumer_group) == end
        # the first member counts its new assignment when its own poll runs the callback,
        # which may come after the second member's (once failed in CI after 1 s)
        deadline = time.monotonic() + 60
        while first.source.status()["rebalances"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.source.status()["rebalances"] >= 2
    finally:
        for m in (first, second):
            m.stop.set()
        for m in (first, second):
            m.join(timeout=15)
    assert [first.error, second.error] == [None, None]


def test_commit_failure_is_counted_not_raised_and_retried(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
    consumer_group: str,
) -> None:
    topic = make_topic(2)
    kafka_broker.produce(topic, values(100))
    source = open_source(source_config(request_timeout_ms=2000))
    got = drain(source, 100, commit=False)
    kafka_broker.pause()
    try:
        source.commit(got, force=True)  # times out: logged and counted, the loop goes on
    finally:
        kafka_broker.resume()
    status = source.status()
    assert status["commit_failures"] == 1 and status["committed_offsets"] == {}
    # A bound, not a timing: after SIGCONT the client reconnects and finds the coordinator
    # again, which a loaded machine can stretch past 10 s; the loop ends at the first success.
    deadline = time.monotonic() + 60
    while source.status()["committed_offsets"] == {} and time.monotonic() < deadline:
        source.poll(max_records=10, timeout_ms=200)
        source.commit([], force=True)  # the stored offsets are still pending: retried
    assert kafka_broker.committed(topic, consumer_group) == kafka_broker.end_offsets(topic)


def test_records_become_the_same_messages_the_constructors_build() -> None:
    # kafka-python's ConsumerRecord fields: topic, partition, leader_epoch, offset, timestamp,
    # timestamp_type, key, value, headers, checksum, serialized key/value/header sizes
    records = [
        ConsumerRecord("q", 3, -1, 41, 1_700_000_000_000, 0, b"k", b'{"a": 1}', [], None, 1, 8, -1),
        ConsumerRecord("q", 3, -1, 42, 1_700_000_000_001, 0, None, None, [], None, -1, -1, -1),
    ]
    built = messages_from_records(records)
    assert built == [
        RawMessage(b'{"a": 1}', Origin("q", 3, 41), b"k", 1_700_000_000_000),
        RawMessage(None, Origin("q", 3, 42), None, 1_700_000_000_001),
    ]
    assert [type(m.origin) for m in built] == [Origin, Origin]
    assert (built[1].origin.file, built[1].origin.line) == (None, None)
    assert hash(built[0]) == hash(
        RawMessage(b'{"a": 1}', Origin("q", 3, 41), b"k", 1_700_000_000_000)
    )


def test_a_record_message_is_a_raw_message_in_everything_but_when_it_builds_its_origin() -> None:
    record = ConsumerRecord("q", 1, -1, 7, 1_700_000_000_123, 0, b"key", b"not json", [], None,
                            3, 8, -1)  # fmt: skip
    (built,) = messages_from_records([record])
    plain = RawMessage(b"not json", Origin("q", 1, 7), b"key", 1_700_000_000_123)
    assert isinstance(built, RawMessage) and built.value == b"not json"
    assert (built.key, built.timestamp_ms) == (b"key", 1_700_000_000_123)
    assert built.origin is built.origin and built.origin == Origin("q", 1, 7)  # built once
    assert built == plain and plain == built and not built != plain  # noqa: SIM202
    assert built != RawMessage(b"not json", Origin("q", 1, 8), b"key", 1_700_000_000_123)
    assert {built, plain} == {plain}
    # its dead letter is the plain message's, byte for byte
    letter, plain_letter = DeadLetter(built, "not_json", "d"), DeadLetter(plain, "not_json", "d")
    assert letter == plain_letter
    assert dead_letter_value(letter) == dead_letter_value(plain_letter)
    assert dead_letter_headers(letter) == [
        ("goldwatch.dlq.reason", b"not_json"), ("goldwatch.dlq.topic", b"q"),
        ("goldwatch.dlq.partition", b"1"), ("goldwatch.dlq.offset", b"7"),
    ]  # fmt: skip
    with pytest.raises(AttributeError):  # frozen, as RawMessage
        built.value = b"x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        built.record = None
    copied = copy.copy(built)  # a copy is the plain message
    assert (
        type(copied) is RawMessage
        and copied == plain
        and pickle.loads(pickle.dumps(built)) == plain
    )


@pytest.mark.slow
def test_a_changed_partition_set_is_assigned_in_full(
    kafka_broker: TansuBroker,
    make_topic: Callable[[int], str],
    source_config: MakeConfig,
    open_source: OpenSource,
    consumer_group: str,
) -> None:
    """The partition-set check alone (no poll loop, so no topic-id comparison): a source
    assigned the one partition of its topic sees the topic come back with 4 partitions and
    gets all 4 assigned, reads the 400 new records (100 per partition, offsets 0..99 each)
    and (``drain`` commits every batch) each partition is committed at 100 (before the fix:
    partition 0 only, 100 of 400, or nothing assigned after kafka-python's own rejoin)."""
    topic = make_topic(1)
    source = open_source(source_config())
    wait_assigned(source)
    assert source.assignment() == {(topic, 0)}
    kafka_broker.delete_topic(topic)
    kafka_broker.create_topic(topic, N_PARTITIONS)
    for partition in range(N_PARTITIONS):
        kafka_broker.produce(topic, values(100, prefix=f"p{partition}"), partition=partition)
    got = drain(source, 4 * 100)
    assert ids(got) == {(p, o) for p in range(N_PARTITIONS) for o in range(100)}
    assert source.assignment() == {(topic, p) for p in range(N_PARTITIONS)}
    assert source.status()["resubscribes"] >= 1
    assert kafka_broker.committed(topic, consumer_group) == dict.fromkeys(range(N_PARTITIONS), 100)
