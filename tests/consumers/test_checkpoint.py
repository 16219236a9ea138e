"""Unit tests of the per-partition offset checkpoint (no broker)."""

from __future__ import annotations

import pytest

from consumers.checkpoint import Checkpoint
from consumers.errors import GoldwatchConsumerError, InvalidStoredOffset


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_to_commit_is_last_stored_plus_one_per_partition() -> None:
    cp = Checkpoint()
    for offset in (0, 1, 7):
        cp.store("q", 0, offset)
    cp.store("q", 3, 41)
    assert cp.to_commit() == {("q", 0): 8, ("q", 3): 42}
    assert cp.to_commit([("q", 3), ("q", 9)]) == {("q", 3): 42}
    assert cp.pending


def test_uncommitted_counts_stored_offsets_past_the_commit() -> None:
    cp = Checkpoint()
    assert cp.uncommitted() == 0
    cp.store("q", 0, 9, first=5)  # offsets 5..9 checkpointed, nothing committed: 5
    cp.store("q", 1, 3)  # no first: offset 3 alone: 1
    assert cp.uncommitted() == 6
    cp.mark_committed({("q", 0): 8})  # 8 and 9 left
    assert cp.uncommitted() == 3
    cp.store("q", 0, 14, first=10)  # 8..14: 7 (the first offset counts only before a commit)
    assert cp.uncommitted() == 8
    assert cp.uncommitted([("q", 1), ("q", 7)]) == 1
    cp.mark_committed(cp.to_commit())
    assert cp.uncommitted() == 0
    cp.drop([("q", 1)])
    cp.store("q", 1, 20, first=18)  # assigned again after a drop: counted from 18
    assert cp.uncommitted() == 3


@pytest.mark.parametrize("offset", [5, 4, 0])
def test_non_increasing_store_raises(offset: int) -> None:
    cp = Checkpoint()
    cp.store("q", 0, 5)
    with pytest.raises(InvalidStoredOffset, match=r"q\[0\]"):
        cp.store("q", 0, offset)
    assert issubclass(InvalidStoredOffset, GoldwatchConsumerError)


def test_partitions_are_independent() -> None:
    cp = Checkpoint()
    cp.store("q", 0, 10)
    cp.store("q", 1, 2)
    cp.store("other", 0, 1)
    assert cp.to_commit() == {("q", 0): 11, ("q", 1): 3, ("other", 0): 2}


def test_committed_offsets_leave_to_commit_and_stay_monotonic() -> None:
    cp = Checkpoint()
    cp.store("q", 0, 9)
    cp.mark_committed({("q", 0): 10})
    assert cp.to_commit() == {} and not cp.pending
    assert cp.committed() == {("q", 0): 10}
    cp.store("q", 0, 10)
    assert cp.to_commit() == {("q", 0): 11}


def test_store_below_committed_raises_even_without_stored_offset() -> None:
    cp = Checkpoint()
    cp.mark_committed({("q", 0): 10})
    with pytest.raises(InvalidStoredOffset):
        cp.store("q", 0, 9)
    cp.store("q", 0, 10)


def test_drop_forgets_revoked_partitions_so_replays_are_allowed() -> None:
    cp = Checkpoint()
    cp.store("q", 0, 9)
    cp.store("q", 1, 4)
    cp.mark_committed({("q", 0): 10})
    cp.drop([("q", 0)])
    assert cp.to_commit() == {("q", 1): 5}
    assert cp.committed() == {}
    cp.store("q", 0, 3)  # a new owner replays from its committed offset
    assert cp.to_commit()[("q", 0)] == 4


def test_due_follows_the_commit_interval() -> None:
    clock = FakeClock()
    cp = Checkpoint(commit_interval_s=5.0, clock=clock)
    assert not cp.due()
    clock.now += 4.9
    assert not cp.due()
    clock.now += 0.1
    assert cp.due()
    cp.mark_committed({})
    assert not cp.due()


def test_zero_interval_is_always_due_and_negative_is_rejected() -> None:
    assert Checkpoint(commit_interval_s=0.0).due()
    with pytest.raises(ValueError, match="commit_interval_s"):
        Checkpoint(commit_interval_s=-1.0)
