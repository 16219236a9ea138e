"""Where suggestions go: the sink port, and the repositories the API and CLI read.

A *record* is the published form of a suggestion: :meth:`Suggestion.to_json` plus
``priority`` (float ≥ 0) and ``primary_reason``. Sinks receive the full current record of
every suggestion that changed (never an increment), so publishing the same state twice —
after a restart, a redelivery, or from two replicas — leaves one entry per id.

* :class:`CandidateSink` — the port: ``publish(records)``. Implementations here: the two
  repositories; in ``consumers.harvest_sink``: the compacted Kafka topic.
* :class:`CandidateRepository` — records and labelling decisions, read back by id.
  :class:`MemoryCandidates` (tests, replay) and :class:`StateStoreCandidates` (keys
  ``harvest/candidate/<id>`` and ``harvest/decision/<id>`` of the SQLite state store, so
  ``goldwatch candidates export`` can read a stopped service's state file). Both also have
  ``get_many(ids)``, which the harvest stage uses to rebuild suggestions on a restart.

A decision is ``{"status": "accepted" | "rejected", "decided_at": RFC 3339, ...}``; accepted
ones add ``gold_id``, ``gold``, ``kind``; rejected ones ``reason``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from service.harvest.config import HarvestConfig
from service.harvest.ranking import primary_reason, priority
from service.harvest.suggestion import Suggestion
from service.state import StateStore

__all__ = [
    "CANDIDATE_PREFIX",
    "DECISION_PREFIX",
    "CandidateRepository",
    "CandidateSink",
    "MemoryCandidates",
    "StateStoreCandidates",
    "record",
]

CANDIDATE_PREFIX = "harvest/candidate/"
DECISION_PREFIX = "harvest/decision/"
_CHUNK = 500


def record(suggestion: Suggestion, config: HarvestConfig) -> dict[str, Any]:
    """The published record of ``suggestion`` (module docstring)."""
    return {
        **suggestion.to_json(),
        "priority": round(priority(suggestion, config), 6),
        "primary_reason": primary_reason(suggestion, config),
    }


@runtime_checkable
class CandidateSink(Protocol):
    """Receives the current records of changed suggestions (idempotent by ``id``).

    ``publish`` may raise; the harvest stage then keeps the records and retries later.
    """

    def publish(self, records: Sequence[Mapping[str, Any]]) -> None: ...


@runtime_checkable
class CandidateRepository(CandidateSink, Protocol):
    """Records and decisions by suggestion id."""

    def get(self, candidate_id: str) -> dict[str, Any] | None: ...

    def all(self) -> list[dict[str, Any]]: ...

    def decision(self, candidate_id: str) -> dict[str, Any] | None: ...

    def decisions(self) -> dict[str, dict[str, Any]]: ...

    def decide(self, candidate_id: str, decision: Mapping[str, Any]) -> None: ...


class MemoryCandidates:
    """A :class:`CandidateRepository` in memory (thread-safe)."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._decisions: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def publish(self, records: Sequence[Mapping[str, Any]]) -> None:
        with self._lock:
            for row in records:
                self._records[str(row["id"])] = dict(row)

    def get(self, candidate_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._records.get(candidate_id)
            return dict(row) if row is not None else None

    def all(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(row) for _, row in sorted(self._records.items())]

    def get_many(self, candidate_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``{id: record}`` of the ``candidate_ids`` held."""
        with self._lock:
            found = ((cid, self._records.get(cid)) for cid in candidate_ids)
            return {cid: dict(row) for cid, row in found if row is not None}

    def decision(self, candidate_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._decisions.get(candidate_id)
            return dict(found) if found is not None else None

    def decisions(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v) for k, v in self._decisions.items()}

    def decide(self, candidate_id: str, decision: Mapping[str, Any]) -> None:
        with self._lock:
            self._decisions[candidate_id] = dict(decision)


class StateStoreCandidates:
    """A :class:`CandidateRepository` over the SQLite :class:`~service.state.StateStore`.

    Each ``publish`` is one durable transaction. Raises
    :class:`~service.state.StateError` when the store cannot be read or written.
    """

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def publish(self, records: Sequence[Mapping[str, Any]]) -> None:
        if records:
            self.store.checkpoint({CANDIDATE_PREFIX + str(r["id"]): dict(r) for r in records})

    def get(self, candidate_id: str) -> dict[str, Any] | None:
        return self.store.get(CANDIDATE_PREFIX + candidate_id)  # type: ignore[no-any-return]

    def all(self) -> list[dict[str, Any]]:
        return list(self._read(CANDIDATE_PREFIX).values())

    def get_many(self, candidate_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """``{id: record}`` of the ``candidate_ids`` stored (read in chunks)."""
        return self._read(CANDIDATE_PREFIX, [CANDIDATE_PREFIX + cid for cid in candidate_ids])

    def decision(self, candidate_id: str) -> dict[str, Any] | None:
        return self.store.get(DECISION_PREFIX + candidate_id)  # type: ignore[no-any-return]

    def decisions(self) -> dict[str, dict[str, Any]]:
        return self._read(DECISION_PREFIX)

    def decide(self, candidate_id: str, decision: Mapping[str, Any]) -> None:
        self.store.checkpoint({DECISION_PREFIX + candidate_id: dict(decision)})

    def _read(self, prefix: str, keys: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        keys = self.store.keys(prefix) if keys is None else keys
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), _CHUNK):
            values = self.store.get_many(keys[start : start + _CHUNK])
            out.update({key[len(prefix) :]: values[key] for key in sorted(values)})
        return out
