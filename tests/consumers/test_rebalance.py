"""``consumers.rebalance.CommitOnRevoke`` without a broker (a recording committer in place of
the ``KafkaConsumer``): what a revocation commits, and what a failed source or a lost
partition does not. The same listener against a real Tansu broker: test_kafka_source.py."""

from __future__ import annotations

import asyncio
from typing import Any

from kafka import TopicPartition
from kafka.errors import KafkaTimeoutError
from kafka.structs import OffsetAndMetadata

from consumers.checkpoint import Checkpoint
from consumers.lag import LagSampler
from consumers.rebalance import CommitOnRevoke

T = "queries"


class Committer:
    """Records each ``commit_async`` argument; raises ``error`` instead when one is set."""

    def __init__(self, error: Exception | None = None) -> None:
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []
        self.error = error

    async def commit_async(self, offsets: Any = None, callback: Any = None) -> None:
        if self.error is not None:
            raise self.error
        self.commits.append(offsets)


def listener(committer: Committer, failed: bool = False) -> tuple[CommitOnRevoke, Checkpoint]:
    checkpoint = Checkpoint(commit_interval_s=3600)
    revoked: list[list[tuple[str, int]]] = []
    listen = CommitOnRevoke(committer, checkpoint, LagSampler(), lambda: failed,
                            on_revoke=revoked.append)  # fmt: skip
    asyncio.run(listen.on_partitions_assigned([TopicPartition(T, 0), TopicPartition(T, 1)]))
    checkpoint.store(T, 0, 41)  # offsets 0..41 of partition 0 processed
    checkpoint.store(T, 1, 6)
    return listen, checkpoint


def test_revoke_commits_the_next_offset_of_each_revoked_partition_and_forgets_it() -> None:
    committer = Committer()
    listen, checkpoint = listener(committer)
    asyncio.run(listen.on_partitions_revoked([TopicPartition(T, 0)]))
    # the committed offset is the next one to read: last processed 41 -> 42
    assert committer.commits == [{TopicPartition(T, 0): OffsetAndMetadata(42, "", -1)}]
    assert listen.revoke_commits == 1 and listen.assigned() == {(T, 1)}
    assert checkpoint.to_commit() == {(T, 1): 7}  # partition 0 forgotten, 1 still pending
    assert listen.rebalances == 1


def test_a_failed_source_commits_nothing_on_revoke() -> None:
    committer = Committer()
    listen, _ = listener(committer, failed=True)
    asyncio.run(listen.on_partitions_revoked([TopicPartition(T, 0), TopicPartition(T, 1)]))
    assert committer.commits == [] and listen.assigned() == set()


def test_a_lost_partition_is_forgotten_without_a_commit() -> None:
    committer = Committer()
    listen, checkpoint = listener(committer)
    asyncio.run(listen.on_partitions_lost([TopicPartition(T, 1)]))
    assert committer.commits == [] and listen.assigned() == {(T, 0)}
    assert checkpoint.to_commit() == {(T, 0): 42}


def test_a_failed_revoke_commit_is_counted_and_the_partition_still_forgotten() -> None:
    committer = Committer(KafkaTimeoutError("no answer"))
    listen, checkpoint = listener(committer)
    asyncio.run(listen.on_partitions_revoked([TopicPartition(T, 0)]))
    assert (listen.revoke_commits, listen.revoke_commit_failures) == (0, 1)
    assert checkpoint.committed() == {} and listen.assigned() == {(T, 1)}
