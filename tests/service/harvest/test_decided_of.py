"""The repository's decided_of: one range look-up when no decision is stored, the same
answers as reading every id otherwise (the harvest stage asks it at every merge)."""

from __future__ import annotations

from typing import Any

import pytest

from service.harvest.store import DECISION_PREFIX, StateStoreCandidates
from service.state import StateStore

REJECT = {"status": "rejected", "reason": "no", "decided_at": "2026-12-04T06:00:00Z"}
ACCEPT = {"status": "accepted", "decided_at": "2026-12-04T06:00:00Z"}


class _Counting(StateStore):
    """A state store counting its ``get_many`` calls (the per-id read)."""

    reads = 0

    def get_many(self, keys: Any) -> dict[str, Any]:
        self.reads += 1
        return super().get_many(keys)


def _store() -> _Counting:
    store = _Counting.in_memory()
    assert isinstance(store, _Counting)
    return store


def test_any_key_reads_the_prefix_range_only() -> None:
    store = StateStore.in_memory()
    assert not store.any_key("harvest/decision/")
    store.checkpoint({"harvest/decision0": 1, "harvest/decisio": 2, "harvest/candidate/c-1": 3})
    assert not store.any_key("harvest/decision/")  # '0' follows '/': outside the range
    store.checkpoint({"harvest/decision/c-1": {"status": "rejected"}})
    assert store.any_key("harvest/decision/")
    assert store.any_key("harvest/decision/c-1")
    assert not store.any_key("harvest/decision/c-2")
    store.checkpoint({"harvest/decision/c-1": None})  # deleted
    assert not store.any_key("harvest/decision/")
    with pytest.raises(ValueError, match="non-empty"):
        store.any_key("")


def test_no_decision_stored_is_one_look_up_and_no_per_id_read() -> None:
    store = _store()
    repo = StateStoreCandidates(store)
    repo.publish([{"id": "c-1", "normalised": "a"}, {"id": "c-2", "normalised": "b"}])
    assert repo.decided_of(["c-1", "c-2", "c-3"]) == set()
    assert store.reads == 0
    assert repo.decided_of([]) == set()


def test_decisions_and_holds_read_as_before() -> None:
    """A hold (an accept under way) is no decision; decisions are found by id, whatever
    else is stored."""
    store = _store()
    repo = StateStoreCandidates(store)
    repo.hold("c-1", {"id": "c-1", "normalised": "a"}, "2026-12-04T06:00:00Z")
    assert repo.decided_of(["c-1", "c-2"]) == set()  # a hold only
    assert store.reads == 1
    store.checkpoint({DECISION_PREFIX + "c-2": REJECT, DECISION_PREFIX + "c-4": ACCEPT})
    assert repo.decided_of(["c-1", "c-2", "c-3", "c-4"]) == {"c-2", "c-4"}
    assert repo.decided_of(["c-3"]) == set()
