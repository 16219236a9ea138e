"""Where suggestions go: the sink port, and the repositories the API and CLI read.

A *record* is the published form of a suggestion: :meth:`Suggestion.to_json` plus
``priority`` (float ≥ 0) and ``primary_reason``. Sinks receive the full current record of
every suggestion that changed (never an increment), so publishing the same state twice —
after a restart, a redelivery, or from two replicas — leaves one entry per id.

* :class:`CandidateSink` — the port: ``publish(records)``. Implementations here: the two
  repositories; in ``consumers.harvest_sink``: the compacted Kafka topic.
* :class:`CandidateRepository` — records and labelling decisions, read back by id.
  :class:`MemoryCandidates` (tests) and :class:`StateStoreCandidates` (keys
  ``harvest/candidate/<id>`` and ``harvest/decision/<id>`` of the SQLite state store —
  serve's file, a replay's in-memory database —, so ``goldwatch candidates export`` can read
  a stopped service's state file). Both also have ``get_many(ids)``, which the harvest stage
  uses to rebuild suggestions on a restart, ``decided_of(ids)``, which it uses to leave
  out those decided since its snapshot and before a new suggestion starts under a decided
  id, and ``remember_decided``/``remembered_decided``, which keep the decisions it remembers
  (:data:`DECIDED_KEY`) so that its checkpoints need not rewrite them unchanged.

What the state store keeps is bounded by ``harvest.max_suggestions``: a checkpoint keeps
the records of the suggestions its harvest snapshot holds and of those decided (or whose
accept is held, below), and deletes the others in its own transaction
(:func:`candidate_sweep`, a :class:`~service.state.Sweep`): stored = held + decided,
whatever earlier checkpoints left (a failed one deletes nothing; the next that commits
sweeps its leftovers). It sweeps only when a suggestion was evicted since the last committed
sweep, or first after a start or restore (the snapshot's ``sweep``): otherwise nothing can
have left, and the sweep's scan of every record is skipped. Decided records
stay: a decision is never left without the record it was taken on — :meth:`decide` writes
that record back, in the decision's transaction, if a checkpoint swept it after the
labeller read it. The other sinks are not swept: the compacted Kafka topic is shared by the
replicas, keyed by the normalised question and the replica's writer id, and its readers merge
a question's records (:mod:`service.harvest.merge`), so a tombstone would take a replica's
asks out of the merged count; compaction keeps one record per key there.

A decided record is never written over: :meth:`CandidateRepository.publish` leaves the record
of every suggestion holding a decision as it is, checked in the publish's transaction
(:meth:`~service.state.StateStore.write_unless`), and returns their ids, so no publish built
before a decision was known (a batch under way, the last flush, a process that was never
told) overwrites the record it was taken on. A hold is no decision: the stage's records keep
being written while an accept is under way (refusing them would make the stage drop a
suggestion whose accept may still fail and leave it undecided: its counts since then lost). The
one window left is between a labeller's read and the decision: the decision keeps the record
then stored, which may be newer than the one read (``decide`` writes its record only when
none is stored).

A decision is ``{"status": "accepted" | "rejected", "decided_at": RFC 3339, ...}``; accepted
ones add ``gold_id``, ``gold``, ``kind``; rejected ones ``reason``.

An accept under way is *held* (:meth:`CandidateRepository.hold`): before its gold row is
appended, ``{"status": "pending", "since": RFC 3339}`` is kept under the decision's key
(``harvest/decision/<id>``), with the record brought back if a checkpoint swept it, in one
transaction, so no sweep deletes the record while the gold row may be in the file without
its decision (the decision failed to be kept, or the process was killed in between); the
decision overwrites it, a failed append releases it. A held suggestion is not decided:
:meth:`~CandidateRepository.decision` and :meth:`~CandidateRepository.decisions` leave it out,
so the labelling API, ``candidates export`` and the report show it as suggested until an
accept (which reuses a gold row carrying its id) or a reject (which first settles it as
accepted if such a row is in the file) decides it.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, NotRequired, Protocol, cast, runtime_checkable

import msgspec
from typing_extensions import TypedDict

from service.harvest.config import HarvestConfig
from service.harvest.ranking import primary_reason, priority
from service.harvest.suggestion import Suggestion, SuggestionJson, wording_note
from service.state import Guard, JsonText, StateStore, Sweep

__all__ = [
    "CANDIDATE_PREFIX",
    "DECIDED_KEY",
    "DECISION_PREFIX",
    "CandidateRepository",
    "CandidateSink",
    "Decision",
    "MemoryCandidates",
    "PENDING",
    "StateStoreCandidates",
    "SuggestionRecord",
    "candidate_sweep",
    "record",
    "record_json",
    "record_text",
    "records_json",
]

CANDIDATE_PREFIX = "harvest/candidate/"
DECISION_PREFIX = "harvest/decision/"
#: The harvest stage's remembered decisions (``[[id, normalised question], ...]``), kept by
#: the repository so that a checkpoint does not rewrite them unchanged.
DECIDED_KEY = "harvest/decided"
#: The ``status`` of an accept under way, kept under the decision's key (module docstring).
PENDING = "pending"
_CHUNK = 500

# TypedDicts from typing_extensions: the API serves these (pydantic needs them on < 3.12).


class SuggestionRecord(SuggestionJson):
    """The published record of a suggestion (:func:`record`): the fields of
    :meth:`~service.harvest.suggestion.Suggestion.to_json` in their order — ``id``
    (``c-`` + 16 hex digits), the scrubbed ``question`` and its ``normalised`` form, the
    guessed ``language`` (BCP 47), ``topic`` and asker ``role``, ``source`` (``real`` or
    ``generated``), ``count`` of distinct events, ``first_seen``/``last_seen`` (RFC 3339,
    UTC), the recent ``events`` ids, ``reasons`` ``{reason: events}``, up to 3 scrubbed
    ``variants``, the ``pool`` ``{passage id: {retriever: best rank (1-based)}}``, the
    coverage ``gap`` (≥ 0) with its ``gap_dimension`` (``"language"``, ``"topic"`` or
    ``"document"``, ``None`` without a gap) and the first ``trace_id`` — then ``priority``
    (float ≥ 0, 6 decimals) and ``primary_reason``; and ``wording_note`` only when the
    ``question`` shown is not the first wording asked
    (:func:`~service.harvest.suggestion.wording_note`: which it is, and the placeholders the
    earlier ones hold)."""

    priority: float
    primary_reason: str | None
    wording_note: NotRequired[str]


class GapSuggestions(TypedDict):
    """The suggestions held in one current coverage gap
    (:meth:`~service.harvest.stage.HarvestStage.best_records_in_gaps`): the gap's
    ``dimension`` (``"language"``, ``"topic"`` or ``"document"``), ``value`` (a BCP 47 tag,
    a topic id or a document label) and ``gap`` (in [0, 1], over harvest's window), how many
    suggestions carry that value (``n`` ≥ 1) and the records of the ``top`` ones by
    priority."""

    dimension: str
    value: str
    gap: float
    n: int
    top: list[SuggestionRecord]


class Decision(TypedDict):
    """A labelling decision: ``status`` and ``decided_at`` (RFC 3339, UTC); an accept adds
    ``gold_id``, the ``gold`` passage ids, ``kind`` and the ``labels`` written; a reject
    adds its scrubbed ``reason`` (≤ 500 characters). An accept whose ``question`` label
    differs from every wording users asked adds ``"source": "written"`` and
    ``"reworded": true``, as its gold row has them. Keys in the order
    :class:`~service.harvest.labelling.Labelling` writes them. ``warnings`` (an accept's
    answer only, never kept): what the reviewer should know of the row written
    (:func:`~service.harvest.labelling.placeholder_warning`)."""

    status: Literal["accepted", "rejected"]
    gold_id: NotRequired[str]
    gold: NotRequired[list[str]]
    kind: NotRequired[str]
    labels: NotRequired[dict[str, Any]]
    reason: NotRequired[str]
    decided_at: str
    source: NotRequired[str]
    reworded: NotRequired[bool]
    warnings: NotRequired[list[str]]


def record(suggestion: Suggestion, config: HarvestConfig) -> SuggestionRecord:
    """The published record of ``suggestion`` (module docstring)."""
    row = cast(SuggestionRecord, suggestion.to_json())  # a new dictionary: completed here
    row["priority"] = round(priority(suggestion, config), 6)
    row["primary_reason"] = primary_reason(suggestion, config)
    note = wording_note(suggestion.question, suggestion.variants)
    if note is not None:
        row["wording_note"] = note
    return row


def record_text(suggestion: Suggestion, config: HarvestConfig) -> str:
    """``record_json(record(suggestion, config))``: the same text, without the record's
    new containers (:meth:`Suggestion.to_json` copies ``events``, ``reasons``, ``variants``
    and the ``pool`` of up to ``max_pool`` passages, so that a sink may keep the record):
    the suggestion's own are encoded as they are (its tuples as JSON arrays, as their list
    copies are). For a sink that encodes at once (:meth:`StateStoreCandidates.publish_json`):
    a checkpoint of a production-shaped replay writes ~2,600 records, ~1.5 KB each."""
    s = suggestion
    rank = round(priority(s, config), 6)
    row = cast(dict[str, Any], s.to_json(shared=True))  # encoded below, then dropped
    row["priority"] = rank
    row["primary_reason"] = primary_reason(s, config)
    if s.variants and s.question is not s.variants[0]:  # (the usual case: the same object)
        note = wording_note(s.question, s.variants)
        if note is not None:
            row["wording_note"] = note
    # its only floats are gap and priority: when both are in the range msgspec writes as
    # json does, encoded at once (record_json would look at every value for floats)
    gap = s.gap
    if (type(gap) is float and (_FIXED_LOW <= abs(gap) < _FIXED_HIGH or gap == 0.0)
            and (_FIXED_LOW <= abs(rank) < _FIXED_HIGH or rank == 0.0)):  # fmt: skip
        try:
            return _ENCODER.encode(row).decode("utf-8")
        except (TypeError, ValueError):  # a lone surrogate: record_json's json.dumps
            pass
    return record_json(row)


_ENCODER = msgspec.json.Encoder()
_Raw = msgspec.Raw
#: How json.dumps writes the floats float.__repr__ does not (its default allow_nan=True).
_NON_FINITE = {math.inf: b"Infinity", -math.inf: b"-Infinity"}
#: The magnitudes ``float.__repr__`` writes in fixed notation (else with an exponent).
_FIXED_LOW, _FIXED_HIGH = 1e-4, 1e16


def _json_float(value: float) -> msgspec.Raw:
    """``value`` as ``json.dumps`` writes it (``float.__repr__``; NaN and infinities as
    ``NaN``, ``Infinity``, ``-Infinity``), without its encoder's set-up per call."""
    if value != value:
        return _Raw(b"NaN")
    return _Raw(_NON_FINITE.get(value) or float.__repr__(value).encode("ascii"))


def record_json(row: Mapping[str, Any]) -> str:
    """``json.dumps(row, separators=(",", ":"), ensure_ascii=False)``: the same text, at
    about a sixth of its cost on a record of 40 pooled passages (msgspec encodes it).

    msgspec writes strings, integers, ``None``, booleans, lists and dictionaries as
    ``json.dumps`` does (every code point escaped alike), but floats in their own notation
    (``1e-05`` as ``0.00001``) and NaN as ``null``: so the top-level floats (a record's
    ``gap`` and ``priority``) go in as raw JSON written as ``json`` writes them
    (:func:`_json_float`). A record holds no nested float (:class:`SuggestionRecord`).
    Whatever msgspec cannot encode (a lone surrogate, a foreign type) goes to
    ``json.dumps``, which raises, or writes, as before.

    A float with ``1e-4 <= |x| < 1e16``, or zero, is written alike by both (the range where
    ``float.__repr__`` uses fixed notation; msgspec then gives the same shortest digits:
    checked on 900,000 random and edge values, msgspec 0.23), so a row whose floats all lie
    there (a record's usually do) is encoded as it is: about 40 % of the cost of building
    the raw-float copy first.

    Raises:
        TypeError: a value is not JSON-serialisable.
    """
    for value in row.values():
        if type(value) is float and not (_FIXED_LOW <= abs(value) < _FIXED_HIGH or value == 0.0):
            fields = {key: _json_float(value) if type(value) is float else value
                      for key, value in row.items()}  # fmt: skip
            break
    else:
        fields = row  # type: ignore[assignment]
    try:
        return _ENCODER.encode(fields).decode("utf-8")
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return json.dumps(row, separators=(",", ":"), ensure_ascii=False)


def records_json(rows: Sequence[Mapping[str, Any]]) -> str:
    """``json.dumps(list(rows), separators=(",", ":"), ensure_ascii=False)``: the JSON array
    of :func:`record_json` of each row, the same text, in one msgspec call when no row has a
    top-level float outside the range both write alike (the usual case: a checkpoint's
    ~1,000 suggestions carried in full), else row by row.

    Raises:
        TypeError: a value is not JSON-serialisable.
    """
    for row in rows:
        for value in row.values():
            if type(value) is float and not (
                _FIXED_LOW <= abs(value) < _FIXED_HIGH or value == 0.0
            ):
                return "[" + ",".join(map(record_json, rows)) + "]"
    try:
        return _ENCODER.encode(rows).decode("utf-8")
    except (TypeError, ValueError):  # a lone surrogate, a foreign type: as record_json does
        return json.dumps(list(rows), separators=(",", ":"), ensure_ascii=False)


@runtime_checkable
class CandidateSink(Protocol):
    """Receives the current records of changed suggestions (idempotent by ``id``).

    ``publish`` may raise; the harvest stage then keeps the records and retries later. It
    returns the ids of the records it refused to write (a repository: those of decided
    suggestions, :meth:`CandidateRepository.publish`), or ``None`` (it takes them all).
    """

    def publish(self, records: Sequence[Mapping[str, Any]]) -> Collection[str] | None: ...


@runtime_checkable
class CandidateRepository(CandidateSink, Protocol):
    """Records and decisions by suggestion id."""

    def publish(self, records: Sequence[Mapping[str, Any]]) -> Collection[str]:
        """Write ``records`` (one transaction), except each whose suggestion holds a decision
        (a hold is none): the record a decision was taken on is never written over. The
        check and the writes are one transaction, so a decision kept at any moment is never
        overwritten by a record built before it was known. Returns the ids left unwritten
        (decided), in the order of ``records``."""
        ...

    def get(self, candidate_id: str) -> SuggestionRecord | None: ...

    def all(self) -> list[SuggestionRecord]: ...

    def decision(self, candidate_id: str) -> Decision | None: ...

    def decisions(self) -> dict[str, Decision]: ...

    def decide(
        self, candidate_id: str, decision: Decision, record: Mapping[str, Any] | None = None
    ) -> None:
        """Keep ``decision`` for ``candidate_id``; with ``record`` (the suggestion's record
        the decision was taken on), also write it, in the same transaction, if the
        repository no longer holds one (a checkpoint swept it meanwhile)."""
        ...

    def hold(self, candidate_id: str, record: Mapping[str, Any], since: str) -> bool:
        """Keep ``candidate_id``'s ``record`` (written back if absent) and mark the accept
        under way (``since``: RFC 3339), in one transaction, before its gold row is appended
        (module docstring); :meth:`decide` ends the hold. Returns whether ``record`` was
        written back (a checkpoint had swept it)."""
        ...

    def release(self, candidate_id: str, written: Mapping[str, Any] | None = None) -> None:
        """End a hold whose gold row was not appended (the suggestion stays undecided).
        ``written``: the record :meth:`hold` wrote back, deleted in the same transaction
        unless rewritten since (so the release leaves no record neither held nor decided)."""
        ...

    def pending(self, candidate_id: str) -> bool:
        """Whether an accept of ``candidate_id`` is held (under way, or failed after its gold
        row may have been appended)."""
        ...


def _held_ids(snapshot: Any) -> list[str] | None:
    """The ids of the suggestions a harvest stage snapshot holds (its ``ids``; a version 1
    snapshot, without them, its suggestions'), or ``None`` (no sweep) when the snapshot says
    ``"sweep": false``: no suggestion left since the last committed sweep, so there is
    nothing to delete and the checkpoint skips the sweep's cost (a scan of the records).

    Raises:
        TypeError: ``snapshot`` is not a harvest snapshot (nothing is swept or written).
    """
    if not isinstance(snapshot, Mapping):
        raise TypeError("the harvest stage's snapshot is not a mapping")
    if snapshot.get("sweep") is False:
        return None
    if "ids" in snapshot:
        return [str(sid) for sid in snapshot["ids"]]
    return [str(row["id"]) for row in snapshot.get("suggestions", ())]


def candidate_sweep(snapshot_key: str) -> Sweep:
    """The :class:`~service.state.Sweep` that keeps the state store's suggestion records to
    those held and decided (module docstring), run by each checkpoint that writes the
    harvest stage's snapshot under ``snapshot_key`` (``stage/harvest``)."""
    return Sweep(snapshot_key, CANDIDATE_PREFIX, _held_ids, DECISION_PREFIX)


class MemoryCandidates:
    """A :class:`CandidateRepository` in memory (thread-safe)."""

    def __init__(self) -> None:
        self._records: dict[str, SuggestionRecord] = {}
        self._decisions: dict[str, Decision] = {}
        self._pending: set[str] = set()
        self._remembered: list[list[str]] = []
        self._lock = threading.Lock()

    def publish(self, records: Sequence[Mapping[str, Any]]) -> list[str]:
        refused: list[str] = []
        with self._lock:
            for row in records:
                sid = str(row["id"])
                if sid in self._decisions:  # the record it was decided on stays
                    refused.append(sid)
                else:
                    self._records[sid] = cast(SuggestionRecord, dict(row))
        return refused

    def get(self, candidate_id: str) -> SuggestionRecord | None:
        with self._lock:
            row = self._records.get(candidate_id)
            return row.copy() if row is not None else None

    def all(self) -> list[SuggestionRecord]:
        with self._lock:
            return [row.copy() for _, row in sorted(self._records.items())]

    def get_many(self, candidate_ids: Sequence[str]) -> dict[str, SuggestionRecord]:
        """``{id: record}`` of the ``candidate_ids`` held."""
        with self._lock:
            found = ((cid, self._records.get(cid)) for cid in candidate_ids)
            return {cid: row.copy() for cid, row in found if row is not None}

    def decision(self, candidate_id: str) -> Decision | None:
        with self._lock:
            found = self._decisions.get(candidate_id)
            return found.copy() if found is not None else None

    def decisions(self) -> dict[str, Decision]:
        with self._lock:
            return {k: v.copy() for k, v in self._decisions.items()}

    def decided_of(self, candidate_ids: Sequence[str]) -> set[str]:
        """The ``candidate_ids`` with a decision (a hold is none)."""
        with self._lock:
            return {cid for cid in candidate_ids if cid in self._decisions}

    def decide(
        self, candidate_id: str, decision: Decision, record: Mapping[str, Any] | None = None
    ) -> None:
        with self._lock:
            self._decisions[candidate_id] = decision.copy()
            self._pending.discard(candidate_id)
            if record is not None and candidate_id not in self._records:
                self._records[candidate_id] = cast(SuggestionRecord, dict(record))

    def hold(self, candidate_id: str, record: Mapping[str, Any], since: str) -> bool:
        with self._lock:
            self._pending.add(candidate_id)
            if candidate_id in self._records:
                return False
            self._records[candidate_id] = cast(SuggestionRecord, dict(record))
            return True

    def release(self, candidate_id: str, written: Mapping[str, Any] | None = None) -> None:
        with self._lock:
            if candidate_id in self._pending and written is not None:
                if self._records.get(candidate_id) == dict(written):
                    del self._records[candidate_id]
            self._pending.discard(candidate_id)

    def pending(self, candidate_id: str) -> bool:
        with self._lock:
            return candidate_id in self._pending

    def remember_decided(self, rows: Sequence[Sequence[str]]) -> None:
        """Keep the harvest stage's remembered decisions (``[[id, normalised], ...]``)."""
        with self._lock:
            self._remembered = [[str(sid), str(text)] for sid, text in rows]

    def remembered_decided(self) -> list[list[str]]:
        """What :meth:`remember_decided` kept last (``[]`` before)."""
        with self._lock:
            return [list(row) for row in self._remembered]


class StateStoreCandidates:
    """A :class:`CandidateRepository` over the SQLite :class:`~service.state.StateStore`.

    Each ``publish`` is one durable transaction (which leaves decided suggestions' records
    as they are: :meth:`CandidateRepository.publish`); records are written as
    :func:`record_json` encodes them (``json.dumps``'s text), or as given already encoded
    (:meth:`publish_json`, e.g. by :func:`record_text`). The writer registers
    :func:`candidate_sweep` on the store, so its checkpoints keep only the records held or
    decided. Raises :class:`~service.state.StateError` when the store cannot be read or
    written.
    """

    def __init__(self, store: StateStore) -> None:
        self.store = store

    def publish(self, records: Sequence[Mapping[str, Any]]) -> list[str]:
        return self.publish_json({str(r["id"]): record_json(r) for r in records})

    def publish_json(self, texts: Mapping[str, str]) -> list[str]:
        """:meth:`publish` of records already encoded: ``{id: record_json(record)}`` (or
        :func:`record_text`), in order; the same transaction and refusals."""
        if not texts:
            return []
        skipped = self.store.write_unless(
            {CANDIDATE_PREFIX + sid: JsonText(text) for sid, text in texts.items()},
            {CANDIDATE_PREFIX + sid: Guard(DECISION_PREFIX + sid, "status", PENDING)
             for sid in texts},
        )  # fmt: skip
        return [key[len(CANDIDATE_PREFIX) :] for key in skipped]

    # The store holds JSON written by publish/decide (records and decisions as typed above).

    def get(self, candidate_id: str) -> SuggestionRecord | None:
        return cast("SuggestionRecord | None", self.store.get(CANDIDATE_PREFIX + candidate_id))

    def all(self) -> list[SuggestionRecord]:
        return cast("list[SuggestionRecord]", list(self._read(CANDIDATE_PREFIX).values()))

    def get_many(self, candidate_ids: Sequence[str]) -> dict[str, SuggestionRecord]:
        """``{id: record}`` of the ``candidate_ids`` stored (read in chunks)."""
        keys = [CANDIDATE_PREFIX + cid for cid in candidate_ids]
        return cast("dict[str, SuggestionRecord]", self._read(CANDIDATE_PREFIX, keys))

    def decision(self, candidate_id: str) -> Decision | None:
        found = self.store.get(DECISION_PREFIX + candidate_id)
        return None if _is_pending(found) else cast("Decision | None", found)

    def decisions(self) -> dict[str, Decision]:
        found = self._read(DECISION_PREFIX)
        kept = {cid: value for cid, value in found.items() if not _is_pending(value)}
        return cast("dict[str, Decision]", kept)

    def decided_of(self, candidate_ids: Sequence[str]) -> set[str]:
        """The ``candidate_ids`` with a decision (a hold is none), read in chunks: the
        harvest stage's restore asks this of the suggestions its snapshot holds, and each of
        its merges of the ids it could start. Without any decision or hold stored (a replay,
        a service before its first labelling) that is one look-up of the keys' range, not
        one per id."""
        if not candidate_ids or not self.store.any_key(DECISION_PREFIX):
            return set()
        found = self._read(DECISION_PREFIX, [DECISION_PREFIX + cid for cid in candidate_ids])
        return {cid for cid, value in found.items() if not _is_pending(value)}

    def hold(self, candidate_id: str, record: Mapping[str, Any], since: str) -> bool:
        return 1 == self.store.checkpoint(
            {DECISION_PREFIX + candidate_id: {"status": PENDING, "since": since}},
            if_absent={CANDIDATE_PREFIX + candidate_id: JsonText(record_json(record))},
        )

    def release(self, candidate_id: str, written: Mapping[str, Any] | None = None) -> None:
        if self.pending(candidate_id):
            self.store.checkpoint(
                {DECISION_PREFIX + candidate_id: None},
                delete_if=None if written is None else {
                    CANDIDATE_PREFIX + candidate_id: JsonText(record_json(written))},
            )  # fmt: skip

    def pending(self, candidate_id: str) -> bool:
        return _is_pending(self.store.get(DECISION_PREFIX + candidate_id))

    def remember_decided(self, rows: Sequence[Sequence[str]]) -> None:
        """Keep the harvest stage's remembered decisions (``[[id, normalised], ...]``) under
        :data:`DECIDED_KEY`, one durable transaction (not swept: outside the records'
        prefix)."""
        self.store.checkpoint({DECIDED_KEY: [[str(sid), str(text)] for sid, text in rows]})

    def remembered_decided(self) -> list[list[str]]:
        """What :meth:`remember_decided` kept last (``[]`` before)."""
        found = self.store.get(DECIDED_KEY, default=[])
        return [[str(sid), str(text)] for sid, text in found]

    def decide(
        self, candidate_id: str, decision: Decision, record: Mapping[str, Any] | None = None
    ) -> None:
        back = {} if record is None else {CANDIDATE_PREFIX + candidate_id: JsonText(
            record_json(record))}  # fmt: skip
        self.store.checkpoint({DECISION_PREFIX + candidate_id: dict(decision)}, if_absent=back)

    def _read(self, prefix: str, keys: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        keys = self.store.keys(prefix) if keys is None else keys
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(keys), _CHUNK):
            values = self.store.get_many(keys[start : start + _CHUNK])
            out.update({key[len(prefix) :]: values[key] for key in sorted(values)})
        return out


def _is_pending(value: Any) -> bool:
    """Whether a value under a decision's key is a hold (:data:`PENDING`), not a decision."""
    return isinstance(value, Mapping) and value.get("status") == PENDING
