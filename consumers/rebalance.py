"""Rebalance listener: commit processed offsets of revoked partitions, then forget them.

kafka-python 3.x runs rebalance callbacks on its I/O thread, the loop that also sends
heartbeats; a blocking consumer call from a sync listener raises ``RuntimeError`` there.
This listener is therefore an ``AsyncConsumerRebalanceListener``: it starts the commit with
``commit_async`` and awaits it, so heartbeats keep flowing, and does nothing else slow.

On revoke (also called by ``consumer.close()``): unless the source is marked failed, commit
the processed-but-uncommitted offsets of the revoked partitions (a failure is counted and
logged; the next owner replays from the last commit), then drop their checkpoint and lag
state. On lost (forced out of the group): drop without committing. On assign: record the
assignment and call the optional hook (e.g. to reset windows).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kafka import TopicPartition
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from consumers.checkpoint import Checkpoint
from consumers.lag import LagSampler

log = logging.getLogger(__name__)

PartitionHook = Callable[[list[tuple[str, int]]], None]
"""Called with sorted ``[(topic, partition), ...]``; must return promptly."""


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
    """

    def __init__(
        self,
        consumer: AsyncCommitter,
        checkpoint: Checkpoint,
        lag: LagSampler,
        is_failed: Callable[[], bool],
        on_assign: PartitionHook | None = None,
        on_revoke: PartitionHook | None = None,
    ) -> None:
        self._consumer = consumer
        self._checkpoint = checkpoint
        self._lag = lag
        self._is_failed = is_failed
        self._on_assign = on_assign
        self._on_revoke = on_revoke
        self._lock = threading.Lock()
        self._assigned: set[tuple[str, int]] = set()
        self.rebalances = 0
        self.revoke_commits = 0
        self.revoke_commit_failures = 0

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
            await self._commit(self._checkpoint.to_commit(keys))
        self._forget(keys)

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
