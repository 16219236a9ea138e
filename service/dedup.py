"""Drop events whose ``event_id`` was seen recently (redeliveries after a crash or rebalance).

:class:`RecentIds` is an insertion-ordered bounded set of the last ``capacity`` ids: adding
an id already present refreshes it (LRU); adding a new id beyond capacity evicts the oldest.
:class:`DedupStage` runs it over each batch; its state (the ids, oldest first) is persisted
with each checkpoint, so a batch redelivered after a crash is counted once.

>>> recent = RecentIds(capacity=2)
>>> [recent.add(i) for i in ["a", "b", "a", "c", "b"]]
[True, True, False, True, True]
>>> recent.snapshot()
['c', 'b']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.pipeline import Batch

DUPLICATE = "duplicate"


class RecentIds:
    """The last ``capacity`` distinct ids, oldest first.

    Raises:
        ValueError: ``capacity`` < 1.
    """

    def __init__(self, capacity: int, ids: Iterable[str] = ()) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._ids: dict[str, None] = {}
        for event_id in ids:
            self.add(event_id)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def add(self, event_id: str) -> bool:
        """Remember ``event_id``; return True if it was new, False if it was a repeat."""
        ids = self._ids
        if event_id in ids:
            del ids[event_id]  # refresh: move to the newest end
            ids[event_id] = None
            return False
        ids[event_id] = None
        if len(ids) > self.capacity:
            del ids[next(iter(ids))]
        return True

    def snapshot(self) -> list[str]:
        """Return the ids, oldest first (JSON-able)."""
        return list(self._ids)


class DedupStage:
    """Pipeline stage: drops events whose ``event_id`` is in the recent window.

    Duplicates inside one batch are dropped too. Dropped events are counted in
    ``batch.dropped["duplicate"]``. State: the window's ids, oldest first; restoring into a
    smaller window keeps the newest ids.

    Raises:
        ValueError: ``window`` < 1.
    """

    name = "dedup"

    def __init__(self, window: int) -> None:
        self.recent = RecentIds(window)

    def process(self, batch: Batch) -> None:
        add = self.recent.add
        batch.keep([add(event.event_id) for event in batch.events], DUPLICATE)

    def state_snapshot(self) -> Any:
        return self.recent.snapshot()

    def restore(self, state: Any) -> None:
        self.recent = RecentIds(self.recent.capacity, state or ())
