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

from collections import OrderedDict
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
        # An OrderedDict, not a dict: evicting a dict's oldest key (``next(iter(d))``) walks
        # over every key deleted before it until the next resize, which made a full window
        # cost about 10 µs per new id (a 100,000-id window); ``popitem(last=False)`` is O(1).
        self._ids: OrderedDict[str, None] = OrderedDict()
        self.add_all(ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def add(self, event_id: str) -> bool:
        """Remember ``event_id``; return True if it was new, False if it was a repeat."""
        return self.add_all((event_id,))[0]

    def add_all(self, event_ids: Iterable[str]) -> list[bool]:
        """:meth:`add` each id in order; return whether each was new (one entry per id)."""
        ids, capacity = self._ids, self.capacity
        refresh, evict = ids.move_to_end, ids.popitem
        fresh: list[bool] = []
        append = fresh.append
        for event_id in event_ids:
            if event_id in ids:
                refresh(event_id)  # move to the newest end
                append(False)
                continue
            ids[event_id] = None
            if len(ids) > capacity:
                evict(last=False)
            append(True)
        return fresh

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
        batch.keep(self.recent.add_all([event.event_id for event in batch.events]), DUPLICATE)

    def state_snapshot(self) -> Any:
        return self.recent.snapshot()

    def restore(self, state: Any) -> None:
        self.recent = RecentIds(self.recent.capacity, state or ())
