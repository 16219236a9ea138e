"""Rebalance listener: commit processed offsets of revoked partitions, then forget them.

kafka-python 3.x runs rebalance callbacks on its I/O thread, the loop that also sends
heartbeats; a blocking consumer call from a sync listener raises ``RuntimeError`` there.
This listener is therefore an ``AsyncConsumerRebalanceListener``: it starts the commit with
``commit_async`` and awaits it, so heartbeats keep flowing, and does nothing else slow.

On revoke (also called by ``consumer.close()``): unless the source is marked failed, first
have everything processed so far checkpointed (see below), then commit the processed but
uncommitted offsets of the revoked partitions (a failure is counted and logged; the next
owner replays from the last commit), then drop their checkpoint and lag state. On lost
(forced out of the group): drop without committing; the next owner replays what followed the
last commit (at least once, deduplicated downstream only within one replica). On assign:
record the assignment and call the optional hook (e.g. to reset windows).

The checkpoint on revoke: the poll loop checkpoints (stage states and positions durable, then
offsets stored) only every ``commit_interval_s`` / ``commit_every``, so the offsets stored at
a revocation lag what the replica has counted; committing only those made the next owner
count the difference again. With :meth:`CommitOnRevoke.set_revoke_checkpoint` the loop hands
over a blocking checkpoint function, and a revocation runs it before committing. It cannot
run on the consumer thread: kafka-python 3 runs the listener inside a ``_net.run`` that the
consumer thread waits in (``poll()`` driving the join, or ``close()``) until the listener
returns, so a listener waiting for that thread would always time out. It runs on a worker
thread instead, serialized with the loop by the loop's own lock (a batch being handled
finishes first and is included), while the listener waits cooperatively: it yields
``KernelEvent('_sleep', ...)`` to kafka-python's selector, so heartbeats keep flowing. The wait
is bounded (``timeout_s``, under the group's rebalance timeout); on timeout or failure the
listener counts it, logs a warning and commits what is stored, as before (the next owner
replays the rest: at least once).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from kafka import TopicPartition
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.net.selector import KernelEvent
from kafka.structs import OffsetAndMetadata

from consumers.checkpoint import Checkpoint
from consumers.lag import LagSampler

log = logging.getLogger(__name__)

PartitionHook = Callable[[list[tuple[str, int]]], None]
"""Called with sorted ``[(topic, partition), ...]``; must return promptly."""

#: Per thread: the revoke checkpoint's worker learns here that the listener stopped waiting.
_worker = threading.local()


def revoke_abandoned() -> bool:
    """Whether the calling thread is a revoke checkpoint's worker whose listener gave up
    waiting for it (``revoke_checkpoint_timeout_ms``): what it would store now belongs to an
    assignment already forgotten — the partition may be assigned again, to this member, and
    read again from its last commit — so it must store nothing (a review: a late store of
    offset X, then the consumer's store of a re-read offset below X, raised
    ``InvalidStoredOffset``)."""
    event: threading.Event | None = getattr(_worker, "abandoned", None)
    return event is not None and event.is_set()


RevokeCheckpoint = Callable[[], None]
"""Blocking: make everything processed so far durable and store its offsets in the
:class:`Checkpoint` (without committing them); called on a worker thread. Raises on failure."""

#: Seconds between two looks at the revoke checkpoint while the listener waits for it.
REVOKE_POLL_S = 0.02


async def kernel_sleep(seconds: float) -> None:
    """Sleep on kafka-python's own coroutine runtime (``kafka.net.selector``): the selector
    reschedules the listener's task after ``seconds`` and runs other tasks (heartbeats)
    meanwhile. Only valid inside a coroutine driven by that selector (not asyncio)."""
    await KernelEvent("_sleep", seconds)


class AsyncCommitter(Protocol):
    """The part of ``kafka.KafkaConsumer`` the listener uses."""

    def commit_async(self, offsets: Any = None, callback: Any = None) -> Any: ...


def to_kafka_offsets(
    offsets: dict[tuple[str, int], int],
) -> dict[TopicPartition, OffsetAndMetadata]:
    """``{(topic, p): committed_offset}`` -> kafka-python's commit argument."""
    return {TopicPartition(t, p): OffsetAndMetadata(off, "", -1) for (t, p), off in offsets.items()}


def _keys(partitions: Iterable[TopicPartition]) -> list[tuple[str, int]]:
    return sorted((tp.topic, tp.partition) for tp in partitions)


class CommitOnRevoke(AsyncConsumerRebalanceListener):  # type: ignore[misc]
    """Commit-on-revoke listener sharing the source's :class:`Checkpoint` and :class:`LagSampler`.

    :param consumer: the ``KafkaConsumer`` (only ``commit_async`` is used).
    :param is_failed: returns ``True`` once the source is marked failed (skip commits).
    :param on_assign: hook called after partitions are assigned.
    :param on_revoke: hook called after partitions are revoked or lost.
    :param revoke_timeout_s: longest wait for the revoke checkpoint (seconds, > 0); keep it
        well under the group's rebalance timeout (``max_poll_interval_ms``).
    :param sleep: the cooperative sleep of the listener's runtime (default
        :func:`kernel_sleep`; tests driving the listener with asyncio pass ``asyncio.sleep``).
    :raises ValueError: ``revoke_timeout_s`` is not positive.
    """

    def __init__(
        self,
        consumer: AsyncCommitter,
        checkpoint: Checkpoint,
        lag: LagSampler,
        is_failed: Callable[[], bool],
        on_assign: PartitionHook | None = None,
        on_revoke: PartitionHook | None = None,
        revoke_timeout_s: float = 60.0,
        sleep: Callable[[float], Awaitable[None]] = kernel_sleep,
    ) -> None:
        if not revoke_timeout_s > 0:
            raise ValueError(f"revoke_timeout_s must be > 0, got {revoke_timeout_s}")
        self._consumer = consumer
        self._checkpoint = checkpoint
        self._lag = lag
        self._is_failed = is_failed
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._lock = threading.Lock()
        self._assigned: set[tuple[str, int]] = set()
        self._revoke_timeout_s = revoke_timeout_s
        self._sleep = sleep
        self._revoke_checkpoint: RevokeCheckpoint | None = None
        self.rebalances = 0
        self.revoke_commits = 0
        self.revoke_commit_failures = 0
        #: revoke checkpoints that completed / timed out / raised (then: at least once)
        self.revoke_checkpoints = 0
        self.revoke_checkpoint_timeouts = 0
        self.revoke_checkpoint_failures = 0

    def set_revoke_checkpoint(self, checkpoint: RevokeCheckpoint | None) -> None:
        """Run ``checkpoint`` (on a worker thread) before committing revoked partitions;
        ``None``: commit only what is stored already. Thread-safe."""
        with self._lock:
            self._revoke_checkpoint = checkpoint

    def assigned(self) -> set[tuple[str, int]]:
        """The current assignment as ``{(topic, partition)}``. Thread-safe."""
        with self._lock:
            return set(self._assigned)

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        keys = _keys(assigned)
        with self._lock:
            self._assigned.update(keys)
            self.rebalances += 1
        log.info("assigned partitions %s", keys)
        if self._on_assign is not None:
            self._on_assign(keys)

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        keys = _keys(revoked)
        if self._is_failed():
            log.warning("source failed: not committing revoked partitions %s", keys)
        else:
            await self._checkpoint_processed(keys)
            await self._commit(self._checkpoint.to_commit(keys))
        self._forget(keys)

    async def _checkpoint_processed(self, keys: list[tuple[str, int]]) -> None:
        """Run the revoke checkpoint on a worker thread and wait for it cooperatively, at
        most ``revoke_timeout_s``. Returns when it finished, failed or timed out (the last
        two counted and logged; a checkpoint still running then goes on, and what it stores
        for partitions forgotten by then is skipped: the next owner replays them)."""
        with self._lock:
            checkpoint = self._revoke_checkpoint
        if checkpoint is None or not keys:
            return
        done, abandoned = threading.Event(), threading.Event()
        failure: list[BaseException] = []

        def work() -> None:
            _worker.abandoned = abandoned
            try:
                checkpoint()
            except BaseException as exc:  # reported by the listener; the loop re-raises it
                failure.append(exc)
            finally:
                done.set()

        threading.Thread(target=work, name="goldwatch-revoke-checkpoint", daemon=True).start()
        deadline = time.monotonic() + self._revoke_timeout_s
        while not done.is_set() and time.monotonic() < deadline:
            await self._sleep(REVOKE_POLL_S)
        if not done.is_set():
            abandoned.set()  # what it would still store is skipped (revoke_abandoned)
            self.revoke_checkpoint_timeouts += 1
            log.warning("checkpoint before revoking %s not done within %.1f s: committing what "
                        "was checkpointed before (the next owner replays the rest)", keys,
                        self._revoke_timeout_s)  # fmt: skip
        elif failure:
            self.revoke_checkpoint_failures += 1
            log.warning("checkpoint before revoking %s failed (%r): committing what was "
                        "checkpointed before (the next owner replays the rest)", keys,
                        failure[0])  # fmt: skip
        else:
            self.revoke_checkpoints += 1

    async def on_partitions_lost(self, lost: Iterable[TopicPartition]) -> None:
        keys = _keys(lost)
        log.warning("lost partitions %s (evicted from group): the next owner replays", keys)
        self._forget(keys)

    async def _commit(self, offsets: dict[tuple[str, int], int]) -> None:
        if not offsets:
            return
        try:
            await self._consumer.commit_async(to_kafka_offsets(offsets))
        except KafkaError as exc:
            self.revoke_commit_failures += 1
            for (t, p), off in sorted(offsets.items()):
                log.warning("commit on revoke failed %s[%d] offset=%d: %r", t, p, off, exc)
            return
        self._checkpoint.mark_committed(offsets)
        self._lag.set_committed(offsets)
        self.revoke_commits += 1

    def forget_all(self) -> None:
        """Forget the whole assignment without committing, as after a revocation: for a
        consumer that left the group itself (``unsubscribe``), which calls no listener.
        Consumer thread only, between polls."""
        self._forget(sorted(self.assigned()))

    def _forget(self, keys: list[tuple[str, int]]) -> None:
        if not keys:
            return
        with self._lock:
            self._assigned.difference_update(keys)
        self._checkpoint.drop(keys)
        self._lag.drop(keys)
        log.info("revoked partitions %s", keys)
        if self._on_revoke is not None:
            self._on_revoke(keys)
