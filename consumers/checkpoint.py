"""Per-partition offsets of processed messages, and when to commit them.

Offsets are stored only after a message is processed (or dead-lettered). Stores must
increase per partition (quix-streams ``InvalidStoredOffset``); :meth:`Checkpoint.to_commit`
yields ``last + 1``, the ``committed_offset`` Kafka expects (the next message to read).

>>> cp = Checkpoint(commit_interval_s=0.0)
>>> cp.store("queries", 0, 41)
>>> cp.store("queries", 0, 42)
>>> cp.to_commit()
{('queries', 0): 43}
>>> cp.mark_committed({("queries", 0): 43})
>>> cp.to_commit()
{}
>>> cp.store("queries", 0, 42)
Traceback (most recent call last):
...
consumers.errors.InvalidStoredOffset: queries[0]: offset 42 stored after 42
>>> cp.store("queries", 0, 45, first=43)
>>> cp.uncommitted()
3
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping

from consumers.errors import InvalidStoredOffset

TopicPartitionKey = tuple[str, int]
"""``(topic, partition)``."""


class Checkpoint:
    """Monotonic per-partition offsets stored since the last commit.

    Thread-safe: the poll loop stores and commits on the consumer thread, the rebalance
    listener drops revoked partitions on kafka-python's I/O thread.

    :param commit_interval_s: seconds between scheduled commits; ``0`` = commit every batch.
    :param clock: monotonic clock in seconds (injectable for tests).
    :raises ValueError: ``commit_interval_s`` is negative.
    """

    def __init__(
        self, commit_interval_s: float = 5.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if commit_interval_s < 0:
            raise ValueError(f"commit_interval_s must be >= 0, got {commit_interval_s}")
        self._interval = commit_interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stored: dict[TopicPartitionKey, int] = {}
        self._committed: dict[TopicPartitionKey, int] = {}
        #: the first offset stored of a partition nothing was committed for through this
        #: checkpoint (where its next owner would start reading: :meth:`uncommitted`)
        self._first: dict[TopicPartitionKey, int] = {}
        self._last_commit = clock()

    def store(self, topic: str, partition: int, offset: int, first: int | None = None) -> None:
        """Record that ``offset`` of ``topic[partition]`` is processed, and with it every
        message from ``first`` (the lowest offset of the messages stored now; ``None``:
        ``offset``'s alone).

        :raises InvalidStoredOffset: ``offset`` is not greater than the last stored offset
            (or not at least the committed offset) of that partition.
        """
        key = (topic, partition)
        with self._lock:
            last = self._stored.get(key)
            if last is None and key in self._committed:
                last = self._committed[key] - 1
            if last is not None and offset <= last:
                raise InvalidStoredOffset(
                    f"{topic}[{partition}]: offset {offset} stored after {last}"
                )
            if last is None:  # the partition's first store since it was assigned
                self._first[key] = offset if first is None else min(first, offset)
            self._stored[key] = offset

    def uncommitted(self, partitions: Iterable[TopicPartitionKey] | None = None) -> int:
        """Offsets stored but not committed, summed over the partitions (optionally only
        ``partitions``), ≥ 0: per partition ``last stored + 1`` minus its committed offset
        (or, before its first commit here, minus the first offset stored).

        The consumer stores offsets only after a durable checkpoint, so this is the stretch
        an at-least-once consumer would see again: were the process to die now, the
        partitions' next owner would read it from the committed offsets and count it a
        second time. In offsets, not messages (a compacted or transactional topic's offsets
        have gaps).
        """
        with self._lock:
            wanted = None if partitions is None else set(partitions)
            total = 0
            for key, offset in self._stored.items():
                if wanted is not None and key not in wanted:
                    continue
                start = self._committed.get(key, self._first.get(key, offset + 1))
                total += max(0, offset + 1 - start)
            return total

    def to_commit(
        self, partitions: Iterable[TopicPartitionKey] | None = None
    ) -> dict[TopicPartitionKey, int]:
        """``{(topic, partition): last stored + 1}`` not yet committed (optionally only
        for ``partitions``)."""
        with self._lock:
            wanted = None if partitions is None else set(partitions)
            return {
                key: offset + 1
                for key, offset in self._stored.items()
                if (wanted is None or key in wanted) and self._committed.get(key) != offset + 1
            }

    def mark_committed(self, offsets: Mapping[TopicPartitionKey, int]) -> None:
        """Record committed offsets (``last + 1``) and restart the commit interval."""
        with self._lock:
            self._committed.update(offsets)
            self._last_commit = self._clock()

    def committed(self) -> dict[TopicPartitionKey, int]:
        """``{(topic, partition): committed_offset}`` committed through this checkpoint."""
        with self._lock:
            return dict(self._committed)

    def drop(self, partitions: Iterable[TopicPartitionKey]) -> None:
        """Forget stored and committed offsets of ``partitions`` (revoked or lost)."""
        with self._lock:
            for key in partitions:
                self._stored.pop(key, None)
                self._committed.pop(key, None)
                self._first.pop(key, None)

    def due(self) -> bool:
        """True when ``commit_interval_s`` seconds have passed since the last commit."""
        with self._lock:
            return self._clock() - self._last_commit >= self._interval

    @property
    def pending(self) -> bool:
        """True when some stored offset is not committed yet."""
        return bool(self.to_commit())
