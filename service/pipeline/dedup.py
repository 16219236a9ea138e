"""Drop events whose ``event_id`` was seen recently (redeliveries after a crash or rebalance).

:class:`RecentIds` is an insertion-ordered bounded set of the last ``capacity`` ids: adding
an id already present refreshes it (LRU); adding a new id beyond capacity evicts the oldest.
:class:`DedupStage` runs it over each batch; its state (the ids, oldest first) is persisted
with each checkpoint, so a batch redelivered after a crash is counted once.

The persisted state is ``{"ids": "<id>\\n<id>\\n..."}``, the ids joined by newlines in one
string (:func:`pack`): the service checkpoints every second, and JSON-encoding a list of 100,000
ids is one C call that holds the GIL for ~9-12 ms (the API's threads wait meanwhile), a single
1.3 MB string ~3.5 ms. A window holding an id with a newline is kept as a plain list, and a
list (the format before) is still read.

An ``event_id`` holding personal data (``ivan@example.com``, a bare phone number) is replaced
by its stable pseudonym (:func:`service.pii.pseudonymise`: ``pii-`` + 32 hex digits of its
SHA-256, or HMAC-SHA256 under ``analytics.pii_key``) before it is remembered: the dedup stage
runs first, so no later stage, the state file or an HTTP response ever sees the raw id, and
equal ids stay equal, distinct ids distinct. Restoring a window written before that
pseudonymises its ids that look personal (an ``@``, a space, non-ASCII, a bare number:
:data:`_LEGACY_SUSPECT`).

>>> recent = RecentIds(capacity=2)
>>> [recent.add(i) for i in ["a", "b", "a", "c", "b"]]
[True, True, False, True, True]
>>> recent.snapshot()
['c', 'b']
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Collection, Iterable, Iterator
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from service.pii.event import pseudonymise_event_ids
from service.pii.pseudonym import UNKEYED, Pseudonymiser

if TYPE_CHECKING:
    from service.pipeline import Batch

DUPLICATE = "duplicate"
_event_id_of = attrgetter("event_id")
#: Ids of a window saved before ids were pseudonymised that :meth:`DedupStage.restore` runs
#: through :func:`service.pii.pseudonymise`: an ``@``, a space, a non-ASCII character, or a
#: bare number of 8+ digits (``+``, ``(``, ``)``, ``-`` between). Running the whole scrubber
#: over every id of a full 100,000-id window took 7-9 s at start (loaded machine, 0.1 s
#: without); new ids all go through it, in :meth:`DedupStage.process`.
_LEGACY_SUSPECT = re.compile(r"[@\s]|[^\x00-\x7f]|^[+(]?\d[\d()\- ]{6,}\d$")
_SEPARATOR = "\n"


def pack(ids: Collection[str]) -> dict[str, str] | list[str]:
    """Return the persisted form of ``ids`` (oldest first): ``{"ids": ids joined by "\\n"}``,
    or a list of ``ids`` when they could not be split back (an id holds a newline, or the
    one id is empty).

    >>> pack(["a", "b"]), pack([]), pack(["a\\nb"])
    ({'ids': 'a\\nb'}, {'ids': ''}, ['a\\nb'])
    """
    joined = _SEPARATOR.join(ids)
    if joined.count(_SEPARATOR) != max(0, len(ids) - 1) or (not joined and len(ids)):
        return list(ids)
    return {"ids": joined}


def unpack(state: Any) -> list[str]:
    """Return the ids of a persisted window (:func:`pack`'s output, a plain list, or ``None``).

    Raises:
        ValueError: ``state`` is neither.

    >>> unpack({"ids": "a\\nb"}), unpack({"ids": ""}), unpack(["x"]), unpack(None)
    (['a', 'b'], [], ['x'], [])
    """
    if state is None:
        return []
    if isinstance(state, list):
        return state
    if isinstance(state, dict) and isinstance(state.get("ids"), str):
        joined = state["ids"]
        return joined.split(_SEPARATOR) if joined else []
    raise ValueError(f"dedup state: expected a list or {{'ids': str}}, got {type(state).__name__}")


class RecentIds:
    """The last ``capacity`` distinct ids, oldest first.

    Raises:
        ValueError: ``capacity`` < 1.
    """

    def __init__(self, capacity: int, ids: Iterable[str] = ()) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        # ``_ids`` holds the window in order (id -> how many times it is queued in
        # ``_order``); ``_order`` is every add, oldest first, so the oldest id is found
        # without ``next(iter(dict))``, which walks over every key deleted before it until the
        # dict is resized (about 10 µs per new id once a 100,000-id window is full). A
        # refreshed id is moved to the dict's end and queued again; its older queue entries
        # are skipped when they come up for eviction. A dict iterates (``snapshot``) and
        # updates faster than an OrderedDict.
        self._ids: dict[str, int] = {}
        self._order: deque[str] = deque()
        self.add_all(ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def __iter__(self) -> Iterator[str]:
        """The ids, oldest first (do not add while iterating)."""
        return iter(self._ids)

    def add(self, event_id: str) -> bool:
        """Remember ``event_id``; return True if it was new, False if it was a repeat."""
        return self.add_all((event_id,))[0]

    def add_all(self, event_ids: Iterable[str]) -> list[bool]:
        """:meth:`add` each id in order; return whether each was new (one entry per id)."""
        ids, order, capacity = self._ids, self._order, self.capacity
        queue, oldest = order.append, order.popleft
        fresh: list[bool] = []
        append = fresh.append
        for event_id in event_ids:
            queue(event_id)
            if event_id in ids:
                ids[event_id] = ids.pop(event_id) + 1  # moved to the newest end
                append(False)
                continue
            ids[event_id] = 1
            append(True)
            if len(ids) > capacity:
                while True:  # drop stale queue entries until the oldest id's last one
                    gone = oldest()
                    left = ids[gone] - 1
                    if not left:
                        del ids[gone]
                        break
                    ids[gone] = left
        if len(order) > 2 * capacity:  # many refreshes, no evictions: requeue compactly
            self._order = deque(ids)
            self._ids = dict.fromkeys(ids, 1)
        return fresh

    def snapshot(self) -> list[str]:
        """Return the ids, oldest first (JSON-able)."""
        return list(self._ids)


class DedupStage:
    """Pipeline stage: drops events whose ``event_id`` is in the recent window.

    First replaces each event whose ``event_id`` holds personal data by a copy with the
    id's pseudonym (:func:`service.pii.pseudonymise_event_ids` with ``pseudonymiser``: keyed
    or not), so the window, the state and every later stage hold the pseudonym; the same key
    gives the same pseudonyms after a restart, so redeliveries are still dropped. Duplicates
    inside one batch are dropped too. Dropped events are counted in
    ``batch.dropped["duplicate"]``. State: the window's ids, oldest first, as :func:`pack`
    writes them; restoring into a smaller window keeps the newest ids, pseudonymising the raw
    ids of an older state that look personal (:data:`_LEGACY_SUSPECT`).

    Raises:
        ValueError: ``window`` < 1.
    """

    name = "dedup"
    reads_records = False  # event ids only (see service.pipeline.Stage)

    def __init__(
        self,
        window: int,
        pseudonymise_ids: bool = True,
        pseudonymiser: Pseudonymiser = UNKEYED,
    ) -> None:
        self.recent = RecentIds(window)
        #: Pseudonymise ids that hold personal data (off only with the PII stage off: it
        #: costs ~5 µs an event, a fifth of the bare pipeline's whole cost).
        self.pseudonymise_ids = pseudonymise_ids
        self.pseudonymiser = pseudonymiser

    def process(self, batch: Batch) -> None:
        if self.pseudonymise_ids:
            pseudonymise_event_ids(batch.events, self.pseudonymiser)
        batch.keep(self.recent.add_all(list(map(_event_id_of, batch.events))), DUPLICATE)

    def state_snapshot(self) -> Any:
        return pack(self.recent)  # joined straight from the window, no list copy

    def restore(self, state: Any) -> None:
        ids = unpack(state)
        self.recent = RecentIds(
            self.recent.capacity,
            (self.pseudonymiser(i) if _LEGACY_SUSPECT.search(i) else i for i in ids),
        )
