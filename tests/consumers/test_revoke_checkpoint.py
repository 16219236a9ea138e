"""The checkpoint on revoke without a broker: :class:`consumers.rebalance.CommitOnRevoke` runs
the poll loop's checkpoint (on a worker thread, waiting cooperatively) before committing the
revoked partitions, so what was processed since the last checkpoint is committed, not read
again by the next owner. kafka-python is stood in for by a source that runs the listener (with
asyncio in place of kafka-python's selector) while the consumer thread waits in ``poll``, as
kafka-python 3 does. Two loops in one group on a real broker: test_loop.py
(``test_a_member_joining_mid_stream_makes_no_event_count_twice``, ``kafka`` marker)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from kafka import TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from kafka.net.selector import KernelEvent
from kafka.structs import OffsetAndMetadata
from prometheus_client import CollectorRegistry

from consumers.base import CheckpointsOnRevoke, DeadLetter, Origin, RawMessage
from consumers.checkpoint import Checkpoint
from consumers.kafka_source import KafkaSource
from consumers.lag import LagSampler
from consumers.loop import run
from consumers.rebalance import (
    CommitOnRevoke,
    kernel_sleep,
    revoke_abandoned,
    to_kafka_offsets,
)
from service.pipeline import Batch, CountingStage, Pipeline, PipelineConfig
from service.settings.kafka import KafkaSourceConfig
from service.state import StateError, StateStore
from service.telemetry import build_metrics

T = "queries"
#: checkpoints only at a revocation or at the end: everything processed before a revocation
#: is processed-but-uncheckpointed
RARELY = PipelineConfig(
    max_batch_size=10, max_batch_wait_ms=0, commit_interval_s=3600, commit_every=1_000_000
)


class Committer:
    """``commit_async`` recording each commit (and ``calls``, shared with the state)."""

    def __init__(self, calls: list[str]) -> None:
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []
        self.calls = calls

    async def commit_async(self, offsets: Any = None, callback: Any = None) -> None:
        self.calls.append("commit_async")
        self.commits.append(offsets)


def committed(committer: Committer) -> dict[int, int]:
    """``{partition: committed offset}`` over all commits, the last one winning."""
    return {tp.partition: om.offset for c in committer.commits for tp, om in c.items()}


def event(i: int) -> bytes:
    return json.dumps({"event_id": f"e-{i}", "timestamp": 1_795_946_400 + i,
                       "question": f"q{i}"}).encode()  # fmt: skip


def batch(partition: int, offsets: range) -> list[RawMessage]:
    return [RawMessage(event(partition * 1000 + o), Origin(T, partition, o)) for o in offsets]


class RevokingSource:
    """A Kafka-like source over fixed batches, with a real :class:`CommitOnRevoke` and
    :class:`Checkpoint`: ``commit`` stores as :meth:`KafkaSource.commit` does (only assigned
    partitions; commits held while a revoke checkpoint runs), and ``revoke`` runs the
    listener to completion on the calling thread, as kafka-python's ``poll`` blocks the
    consumer thread while its I/O thread runs it."""

    name = "kafka:queries"

    def __init__(self, batches: list[list[RawMessage]], calls: list[str],
                 timeout_s: float = 30.0,
                 sleep: Callable[[float], Any] = asyncio.sleep) -> None:  # fmt: skip
        self.batches = list(batches)
        self.calls = calls
        self.checkpoint = Checkpoint(commit_interval_s=3600)
        self.committer = Committer(calls)
        self.failed = False
        self.listener = CommitOnRevoke(self.committer, self.checkpoint, LagSampler(),
                                       lambda: self.failed, revoke_timeout_s=timeout_s,
                                       sleep=sleep)  # fmt: skip
        asyncio.run(self.listener.on_partitions_assigned([TopicPartition(T, p) for p in (0, 1)]))
        self.revoke_at_poll: int | None = None
        self.polls = 0
        self.hooked: list[bool] = []
        self.held = 0

    def checkpoint_on_revoke(self, checkpoint: Callable[[], None] | None) -> None:
        self.hooked.append(checkpoint is not None)
        if checkpoint is None:
            self.listener.set_revoke_checkpoint(None)
            return

        def holding() -> None:
            self.held += 1
            try:
                checkpoint()
            finally:
                self.held -= 1

        self.listener.set_revoke_checkpoint(holding)

    def revoke(self, partitions: Sequence[int]) -> None:
        asyncio.run(self.listener.on_partitions_revoked([TopicPartition(T, p) for p in partitions]))

    @property
    def at_eof(self) -> bool:
        return not self.batches

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        self.polls += 1
        if self.polls == self.revoke_at_poll:
            self.revoke([0])
        owned = self.listener.assigned()
        messages = self.batches.pop(0) if self.batches else []
        return [m for m in messages if (m.origin.topic, m.origin.partition) in owned]

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        pass

    def commit(self, messages: Sequence[RawMessage], force: bool = False) -> None:
        self.calls.append("store")
        owned = self.listener.assigned()
        for m in messages:
            o = m.origin
            assert o.topic is not None and o.partition is not None and o.offset is not None
            if (o.topic, o.partition) in owned:
                self.checkpoint.store(o.topic, o.partition, o.offset)
        if force and not self.held:  # a synchronous commit, as KafkaSource._commit_stored
            offsets = self.checkpoint.to_commit(owned)
            self.calls.append("commit")
            self.committer.commits.append(to_kafka_offsets(offsets))
            self.checkpoint.mark_committed(offsets)

    def status(self) -> dict[str, Any]:
        return {"rebalances": self.listener.rebalances}

    def ready(self) -> bool:
        return True

    def mark_failed(self) -> None:
        self.failed = True

    def close(self) -> None:
        self.calls.append("close")
        # consumer.close() revokes what is still assigned (after the loop unhooked itself)
        self.revoke(sorted(p for _, p in self.listener.assigned()))


class RecordingState(StateStore):
    calls: list[str]
    error: Exception | None = None

    def checkpoint(self, updates: Mapping[str, Any], *args: Any, **kwargs: Any) -> int:
        self.calls.append("checkpoint")
        if self.error is not None:
            raise self.error
        return super().checkpoint(updates, *args, **kwargs)


def recording_state(calls: list[str]) -> RecordingState:
    store = StateStore.in_memory()
    recorder = RecordingState(store._conn, ":memory:")
    recorder.calls = calls
    return recorder


class Gate(CountingStage):
    """Runs ``during`` while processing the ``nth`` batch (1-based): the consumer thread is
    then inside the loop's ``handle``, holding its lock."""

    name = "gate"

    def __init__(self, nth: int, during: Callable[[], None]) -> None:
        super().__init__()
        self.nth, self.during, self.batches = nth, during, 0

    def process(self, batch: Batch) -> None:
        super().process(batch)
        self.batches += 1
        if self.batches == self.nth:
            self.during()


def loop_run(source: RevokingSource, calls: list[str], stages: Sequence[Any] = ()) -> Any:
    state = recording_state(calls)
    report = run(source, Pipeline(list(stages)), state,
                 build_metrics(CollectorRegistry(), topics=[T]), threading.Event(),
                 config=RARELY, until_eof=True)  # fmt: skip
    return report, state


def test_a_revocation_commits_everything_processed_before_it_after_a_checkpoint() -> None:
    calls: list[str] = []
    source = RevokingSource([batch(0, range(0, 10)), batch(1, range(0, 5)),
                             batch(0, range(10, 20)), batch(0, range(20, 30))], calls)  # fmt: skip
    source.revoke_at_poll = 4  # 25 events processed, none checkpointed yet
    report, _ = loop_run(source, calls)
    assert isinstance(source, CheckpointsOnRevoke)
    # partition 0: offsets 0..19 processed, so the next owner starts at 20 (the batch of
    # 20..29, polled after the revocation, is not handed out); partition 1 stays owned
    assert source.committer.commits[0] == {TopicPartition(T, 0): OffsetAndMetadata(20, "", -1)}
    assert report.processed == 25
    # the state is durable before the offsets are stored and committed
    first = calls.index("commit_async")
    assert calls[:first] == ["checkpoint", "store"]
    listener = source.listener
    assert (listener.revoke_checkpoints, listener.revoke_checkpoint_timeouts) == (1, 0)
    # the revoke checkpoint also stored partition 1 (0..4) without committing it, so the
    # final checkpoint has nothing left to do; the loop unhooks itself before closing, and
    # close's revocation commits partition 1 without calling the loop again
    assert source.hooked == [True, False]
    assert committed(source.committer) == {0: 20, 1: 5}
    assert calls[-2:] == ["close", "commit_async"] and calls.count("checkpoint") == 1


def test_a_batch_being_handled_when_the_revocation_comes_is_in_its_checkpoint() -> None:
    calls: list[str] = []
    waiting = threading.Event()

    async def sleep(seconds: float) -> None:
        waiting.set()  # the listener started the checkpoint and waits for it
        await asyncio.sleep(seconds)

    source = RevokingSource([batch(0, range(0, 10)), batch(0, range(10, 20))], calls, sleep=sleep)
    revoker = threading.Thread(target=source.revoke, args=([0],))

    def during() -> None:  # consumer thread, inside handle (the loop's lock held)
        revoker.start()  # "kafka-python's I/O thread"
        assert waiting.wait(30)

    report, _ = loop_run(source, calls, [Gate(2, during)])
    revoker.join(30)
    assert not revoker.is_alive()
    # the checkpoint waited for the batch 10..19 and stored it: the next owner starts at 20
    assert source.committer.commits[0] == {TopicPartition(T, 0): OffsetAndMetadata(20, "", -1)}
    assert report.processed == 20 and source.listener.revoke_checkpoints == 1


def test_a_timed_out_revoke_checkpoint_commits_the_last_checkpoint_and_is_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []
    release = threading.Event()
    source = RevokingSource([batch(0, range(0, 10)), batch(0, range(10, 20))], calls,
                            timeout_s=0.05)  # fmt: skip
    source.checkpoint.store(T, 0, 4)  # a checkpoint before this run stored 0..4

    def revoke() -> None:
        source.revoke([0])
        release.set()

    revoker = threading.Thread(target=revoke)

    def during() -> None:  # the loop stays busy past the listener's timeout
        revoker.start()
        assert release.wait(30)

    loop_run(source, calls, [Gate(2, during)])
    revoker.join(30)
    # at least once: the last checkpoint's offset is committed, the rest is replayed
    assert source.committer.commits[0] == {TopicPartition(T, 0): OffsetAndMetadata(5, "", -1)}
    assert source.listener.revoke_checkpoint_timeouts == 1
    assert "not done within" in caplog.text
    assert (T, 0) not in source.listener.assigned()


def test_a_failed_revoke_checkpoint_commits_nothing_new_and_stops_the_loop() -> None:
    calls: list[str] = []
    source = RevokingSource([batch(0, range(0, 10)), batch(0, range(10, 20)),
                             batch(1, range(0, 3))], calls)  # fmt: skip
    source.revoke_at_poll = 3
    state = recording_state(calls)
    state.error = StateError("disk full")
    with pytest.raises(StateError):
        run(source, Pipeline([]), state, build_metrics(CollectorRegistry(), topics=[T]),
            threading.Event(), config=RARELY, until_eof=True)  # fmt: skip
    assert source.listener.revoke_checkpoint_failures == 1
    assert source.committer.commits == [] and source.failed  # nothing was stored
    assert calls.count("checkpoint") == 1  # the failed one; no final checkpoint after it


def test_a_failed_source_does_not_ask_for_a_checkpoint() -> None:
    calls: list[str] = []
    source = RevokingSource([], calls)
    ran: list[int] = []
    source.listener.set_revoke_checkpoint(lambda: ran.append(1))
    source.failed = True
    source.revoke([0, 1])
    assert ran == [] and source.committer.commits == [] and source.listener.assigned() == set()


def test_lost_partitions_are_forgotten_without_a_checkpoint() -> None:
    calls: list[str] = []
    source = RevokingSource([], calls)
    ran: list[int] = []
    source.listener.set_revoke_checkpoint(lambda: ran.append(1))
    asyncio.run(source.listener.on_partitions_lost([TopicPartition(T, 0)]))
    assert ran == [] and source.committer.commits == [] and source.listener.assigned() == {(T, 1)}


@pytest.mark.parametrize("late", [False, True])
def test_a_checkpoint_the_listener_gave_up_on_knows_it_stores_nothing(late: bool) -> None:
    """A review: after the timeout the partitions are forgotten and may come straight back to
    this member, read again from the last commit; a late checkpoint's store of offset X, then
    the consumer's store of a re-read offset below X, raised InvalidStoredOffset. The worker
    sees it was given up on (revoke_abandoned), on its own thread only."""
    source = RevokingSource([], [], timeout_s=0.05)
    release, seen = threading.Event(), []

    def checkpoint() -> None:
        if late:
            assert release.wait(30)
        seen.append(revoke_abandoned())

    source.listener.set_revoke_checkpoint(checkpoint)
    source.revoke([0])
    release.set()
    for _ in range(3000):  # bounded wait for the worker (not a timing assertion)
        if seen:
            break
        threading.Event().wait(0.01)
    assert seen == [late]
    assert source.listener.revoke_checkpoint_timeouts == int(late)
    assert not revoke_abandoned()  # this thread is no worker


def test_the_listener_waits_on_kafka_pythons_selector_by_yielding_a_sleep() -> None:
    waiting = kernel_sleep(0.02).__await__()
    yielded = next(waiting)
    assert isinstance(yielded, KernelEvent)
    assert (yielded.method, yielded.args) == ("_sleep", (0.02,))


def test_the_revoke_timeout_is_checked_and_derived() -> None:
    base: dict[str, Any] = {"bootstrap_servers": "b:9092", "topic": T, "consumer_group": "g"}
    assert KafkaSourceConfig(**base).revoke_timeout_ms() == 60_000
    assert KafkaSourceConfig(**base, max_poll_interval_ms=10_000).revoke_timeout_ms() == 5_000
    assert KafkaSourceConfig(**base, revoke_checkpoint_timeout_ms=7).revoke_timeout_ms() == 7
    with pytest.raises(ValueError, match="max_poll_interval_ms / 2"):
        KafkaSourceConfig(**base, max_poll_interval_ms=10_000, revoke_checkpoint_timeout_ms=6_000)
    with pytest.raises(ValueError):
        CommitOnRevoke(Committer([]), Checkpoint(), LagSampler(), lambda: False,
                       revoke_timeout_s=0)  # fmt: skip


class PollingConsumer:
    """``poll`` of a ``KafkaConsumer`` handing out fixed record lists by partition."""

    def __init__(self, batches: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        self.batches = batches

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> Any:
        return self.batches


def record(partition: int, offset: int) -> ConsumerRecord:
    return ConsumerRecord(T, partition, None, offset, 0, 0, None, event(offset), [], None, 4,
                          -1, -1)  # fmt: skip


def test_poll_hands_out_no_record_of_a_partition_revoked_meanwhile() -> None:
    source = KafkaSource.__new__(KafkaSource)
    source._consumer = PollingConsumer({TopicPartition(T, 0): [record(0, 7)],
                                        TopicPartition(T, 1): [record(1, 3)]})  # fmt: skip
    listener = CommitOnRevoke(Committer([]), Checkpoint(), LagSampler(), lambda: False)
    asyncio.run(listener.on_partitions_assigned([TopicPartition(T, 1)]))
    source._listener = listener
    source._last_ok = 0.0
    source._no_revoke_worker = threading.Event()
    source._no_revoke_worker.set()  # no revoke checkpoint running
    source._maybe_probe = lambda: None  # type: ignore[method-assign]
    source._follow_partitions = lambda: None  # type: ignore[method-assign]
    assert [m.origin for m in source.poll(10, 0)] == [Origin(T, 1, 3)]


def test_poll_returns_only_once_no_revoke_checkpoint_runs() -> None:
    """A review: a checkpoint the listener gave up on may still run on its worker; a trace
    source changes its open traces right after poll returns, which that checkpoint reads, so
    poll waits for it."""
    source = KafkaSource.__new__(KafkaSource)
    source._consumer = PollingConsumer({TopicPartition(T, 1): [record(1, 3)]})
    listener = CommitOnRevoke(Committer([]), Checkpoint(), LagSampler(), lambda: False)
    asyncio.run(listener.on_partitions_assigned([TopicPartition(T, 1)]))
    source._listener = listener
    source._last_ok = 0.0
    source._no_revoke_worker = threading.Event()  # a revoke checkpoint runs
    source._maybe_probe = lambda: None  # type: ignore[method-assign]
    source._follow_partitions = lambda: None  # type: ignore[method-assign]
    got: list[list[RawMessage]] = []
    poller = threading.Thread(target=lambda: got.append(source.poll(10, 0)))
    poller.start()
    poller.join(0.2)
    assert poller.is_alive() and got == []  # still waiting for the checkpoint
    source._no_revoke_worker.set()
    poller.join(30)
    assert [m.origin for m in got[0]] == [Origin(T, 1, 3)]
