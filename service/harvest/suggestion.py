"""One gold-question suggestion: a cluster of near-duplicate live questions and its evidence.

A :class:`Suggestion` is built from :class:`Occurrence` records (one per selected event, or per
disagreeing shadow result) and keeps, bounded:

* ``question`` — the wording shown and accepted by default: the first wording seen without a
  personal-data placeholder (``<EMAIL>``, ``<NAME>`` …: text a scrub replaced), else the
  first wording seen (:func:`chosen_wording`; already scrubbed; control characters other
  than tab and newline, and bidirectional controls, taken out). Its ``normalised`` form (of
  the first wording seen, without placeholders and contact clauses:
  :func:`service.text.subject.subject`) and ``id``
  (:func:`service.harvest.text.candidate_id` of it, stable across replicas) never change;
* ``count`` — distinct events merged in; ``first_seen``/``last_seen`` (RFC 3339 UTC, event
  time); ``events`` — the last :data:`RECENT_EVENTS` event ids (an event id seen again is not
  counted twice);
* ``reasons`` — ``{reason: events it applied to}``: each reason counted once per event,
  whether it came with the event or with a shadow result before or after it (the harvest
  stage passes an event's later evidence as a non-counting occurrence carrying only the
  reasons not yet counted for that event);
* ``variants`` — up to ``max_variants`` distinct wordings in the order first asked, scrubbed
  again with :func:`service.pii.scrub` before they are kept (as ``question`` is), unless the
  occurrence says its scrub found nothing in it (``Occurrence.scrubbed``: the text is then
  what a scrub of it gives, so it is kept as it is). Wordings are told apart by their
  :func:`~service.harvest.text.comparison_form` with their placeholders (``My email is
  <EMAIL>. Who won?`` and ``Who won?`` are two wordings, though one suggestion). When every
  kept wording holds a placeholder, one more wording without any is kept past the bound (at
  most ``max_variants + 1``), so that a clean wording asked later can be shown;
* ``pool`` — ``{passage id: {retriever: best rank}}`` from the top ``pool_k`` of production
  and of every shadow candidate, at most ``max_pool`` passages (first come first kept);
* ``language``, ``topic``, ``role``, ``source`` (``real`` or ``generated``) of the first
  occurrence, and ``gap`` — the largest coverage gap of its topic, language or document, in
  [0, 1] — with ``gap_dimension``, the dimension whose gap it is (``"language"``, ``"topic"``
  or ``"document"``; on a tie the language, then the topic; ``None`` while ``gap`` is 0, and
  in a record written before the field existed);
* ``trace_id`` — provenance: the OpenTelemetry trace of the first counted occurrence that
  came from a trace (the representative's own when it did), ``None`` when none did.

:meth:`Suggestion.to_json` / :meth:`Suggestion.from_json` round-trip through plain JSON;
:meth:`Suggestion.from_record` rebuilds one from its published record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

from typing_extensions import TypedDict

from service.harvest.text import comparison_form, strip_controls
from service.pii.scrub import scrub
from service.records import PLACEHOLDERS
from service.text.subject import has_placeholder

__all__ = ["RECENT_EVENTS", "Occurrence", "Suggestion", "chosen_wording", "wording_note"]

#: Event ids remembered per suggestion to ignore a redelivered event.
RECENT_EVENTS = 8

#: :data:`comparison_form` of kept variants, cached: every merge compares its text with them.
_normalised = lru_cache(maxsize=8_192)(comparison_form)


#: passage id -> the one string object of that id that pools hold (:func:`_shared_ids`)
_PASSAGE_IDS: dict[str, str] = {}
#: How many passage ids :data:`_PASSAGE_IDS` holds when it is emptied (then filled again).
_SHARED_IDS = 16_384


def _shared_ids(ids: Sequence[str]) -> tuple[str, ...]:
    """``ids`` as a tuple of equal strings, each id the same object wherever pools hold it.

    A ranking's ids are strings the event's decoder allocated: pooled as they come, each
    suggestion kept its own copies (118,485 pool keys of 317 distinct ids after
    ``benchmarks.bench_production``'s 50,000 events), scattered over the heap between
    freed events, and encoding a suggestion's record at a checkpoint read each one (a cache
    miss): 6.9 µs a pool of ~22 passages, 2.2 µs with its keys shared. Equal strings, so
    every record, snapshot and comparison is the same. Once :data:`_SHARED_IDS` ids or more
    are remembered, the table is emptied before the next ranking's go in (the ids pooled
    before stay as they are), so it holds fewer than ``_SHARED_IDS + len(ids)`` whatever ids
    come."""
    if len(_PASSAGE_IDS) >= _SHARED_IDS:
        _PASSAGE_IDS.clear()
    return tuple(map(_PASSAGE_IDS.setdefault, ids, ids))


#: retriever -> its ``{retriever: rank}`` for ranks 1, 2, ... (:func:`_rank_dicts`)
_RANK_DICTS: dict[str, list[dict[str, int]]] = {}


def _rank_dicts(retriever: str, n: int) -> list[dict[str, int]]:
    """``[{retriever: 1}, ..., {retriever: n}]`` (at least ``n``), the same objects at every
    call: pools share them (a pool's entry is replaced, never changed in place), so merging
    a ranking into a new suggestion allocates no dictionary per passage."""
    ranks = _RANK_DICTS.get(retriever)
    if ranks is None or len(ranks) < n:
        if len(_RANK_DICTS) >= 256:  # retriever names are few; bounded whatever comes
            _RANK_DICTS.clear()
        ranks = _RANK_DICTS[retriever] = [{retriever: rank} for rank in range(1, max(n, 10) + 1)]
    return ranks


#: reasons (as an occurrence lists them) -> ``{reason: times listed}``, the dictionary
#: :meth:`Suggestion.first` copies (:func:`_first_counts`)
_FIRST_COUNTS: dict[tuple[str, ...], dict[str, int]] = {}


def _counts(reasons: Iterable[str]) -> dict[str, int]:
    """``{reason: times it is listed in reasons}``, keys in first-listed order."""
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    return counts


def _first_counts(reasons: Sequence[str]) -> dict[str, int]:
    """:func:`_counts` of ``reasons``, a new dictionary each call: copied from the one
    remembered for a tuple of reasons (the few combinations of
    :data:`~service.harvest.config.REASONS` a stream gives; a copy costs a fifth of the
    counting loop, and every suggestion started counts its first reasons). At most 4,096
    remembered (then forgotten)."""
    if not isinstance(reasons, tuple):  # (a caller's list: counted, not remembered)
        return _counts(reasons)
    counts = _FIRST_COUNTS.get(reasons)
    if counts is None:
        if len(_FIRST_COUNTS) >= 4_096:
            _FIRST_COUNTS.clear()
        counts = _FIRST_COUNTS[reasons] = _counts(reasons)
    return counts.copy()


class Occurrence(NamedTuple):
    """One live question picked for harvesting.

    Attributes:
        event_id, timestamp: of the event (aware UTC datetime).
        question: the (scrubbed) question; ``normalised``: its normalised form.
        reasons: the reasons that applied, each once.
        rankings: ``{retriever: passage ids best first}`` (production and/or candidates).
        language, topic, role: breakdown labels (``None`` unknown).
        source: ``"real"`` or ``"generated"``.
        gap: the largest coverage gap of its topic, language or document at that time, in
            [0, 1].
        gap_dimension: ``"language"``, ``"topic"`` or ``"document"``, whose gap ``gap`` is
            (on a tie the language's, then the topic's), ``None`` when ``gap`` is 0.
        counts: whether this is a new event (``False``: evidence added to a counted event,
            e.g. a shadow result arriving after its event). Not ``count``: that would hide
            ``tuple.count``.
        trace_id: the OpenTelemetry trace the event came from (``None``: not from a trace).
        scrubbed: ``question`` is a :func:`service.pii.scrub` result that found nothing
            (``counts`` empty): ``scrub(question).text == question``, so a suggestion keeps
            it without scrubbing it again. ``False`` (the default, always safe): scrubbed
            again before it is kept (a scrub that replaced something may have stopped at
            :data:`service.pii.scrub.MAX_PASSES` with more to find).
    """

    event_id: str
    timestamp: datetime
    question: str
    normalised: str
    reasons: tuple[str, ...]
    rankings: Mapping[str, Sequence[str]] = {}
    language: str | None = None
    topic: str | None = None
    role: str | None = None
    source: str = "real"
    gap: float = 0.0
    counts: bool = True
    trace_id: str | None = None
    gap_dimension: str | None = None
    scrubbed: bool = False


def _shown(wording: str) -> str:
    """A wording as a suggestion keeps and exports it: without control characters other
    than tab and newline, nor bidirectional controls (:func:`strip_controls`, as reject
    reasons are cleaned; trial 11 kept ``bell\\u0007``, ``nul\\u0000`` and an RTL
    override U+202E in a harvested question)."""
    return strip_controls(wording, keep="\t\n")


def chosen_wording(variants: Sequence[str]) -> int:
    """The index in ``variants`` (a suggestion's wordings, scrubbed, in the order first
    asked) of the wording a suggestion shows and an accept writes by default: the first
    without a personal-data placeholder (:func:`~service.text.subject.has_placeholder`);
    when all hold one (or there are none), 0. Ties go to the earliest asked: the same
    wordings in the same order give the same choice.

    >>> chosen_wording(["My email is <EMAIL>. Who won?", "Who won?", "who won"])
    1
    >>> chosen_wording(["Call <NAME>", "Ask <NAME>"]), chosen_wording([])
    (0, 0)
    """
    for index, wording in enumerate(variants):
        if not has_placeholder(wording):
            return index
    return 0


def wording_note(question: str, variants: Sequence[str]) -> str | None:
    """Why ``question`` is shown when it is not the first wording asked (``variants[0]``):
    which wording it is and what the earlier ones hold; ``None`` when it is the first (or
    not among ``variants``: a record kept by an older version). Placeholders are named,
    never what they replaced.

    >>> print(wording_note("Who won?", ["My email is <EMAIL>. Who won?", "Who won?"]))
    shown: wording 2 of 2, the first asked without personal-data placeholders (wording 1 \
holds <EMAIL>)
    >>> print(wording_note("call my name", ["call me <NAME>", "just call me <NAME>",
    ...                                      "you can call me <NAME>", "call my name"]))
    shown: wording 4 of 4, the first asked without personal-data placeholders (wordings 1, \
2, 3 hold <NAME>)
    >>> wording_note("Who won?", ["Who won?", "My email is <EMAIL>. Who won?"]) is None
    True
    """
    if not variants or question == variants[0] or question not in variants:
        return None
    index = variants.index(question)
    groups: dict[str, list[str]] = {}  # the placeholders held -> the wordings holding them
    for i in range(index):
        groups.setdefault(", ".join(placeholders(variants[i])), []).append(str(i + 1))
    held = "; ".join(
        f"wording {n[0]} holds {found}" if len(n) == 1 else f"wordings {', '.join(n)} hold {found}"
        for found, n in groups.items()
    )
    return (f"shown: wording {index + 1} of {len(variants)}, the first asked without "
            f"personal-data placeholders ({held})")  # fmt: skip


def placeholders(text: str) -> list[str]:
    """The personal-data placeholders ``text`` holds, each once, in
    :data:`service.records.PLACEHOLDERS` order (as
    :func:`~service.harvest.labelling.placeholder_warning` names them).

    >>> placeholders("My name is <NAME>, mail <EMAIL> or <NAME>?")
    ['<EMAIL>', '<NAME>']
    """
    return [p for p in PLACEHOLDERS.values() if p in text] if "<" in text else []


class SuggestionJson(TypedDict):
    """:meth:`Suggestion.to_json`: every field, JSON-able, in field order (``events`` and
    ``variants`` as lists; ``pool`` ``{passage id: {retriever: best rank}}``). From
    typing_extensions: the API serves it inside its records (pydantic needs that on
    Python < 3.12)."""

    id: str
    question: str
    normalised: str
    language: str | None
    topic: str | None
    role: str | None
    source: str
    count: int
    first_seen: str
    last_seen: str
    events: list[str]
    reasons: dict[str, int]
    variants: list[str]
    pool: dict[str, dict[str, int]]
    gap: float
    gap_dimension: str | None
    trace_id: str | None


@dataclass
class Suggestion:
    """A suggested gold question (shape in the module docstring); mutable while harvested.

    ``events`` and ``variants`` are tuples, replaced when they change: thousands of
    suggestions are held, and tuples of strings (like dictionaries of strings and numbers)
    are not walked by the garbage collector's full collections, where lists would be.
    """

    id: str
    question: str
    normalised: str
    language: str | None = None
    topic: str | None = None
    role: str | None = None
    source: str = "real"
    count: int = 0
    first_seen: str = ""
    last_seen: str = ""
    events: tuple[str, ...] = ()
    reasons: dict[str, int] = field(default_factory=dict)
    variants: tuple[str, ...] = ()
    pool: dict[str, dict[str, int]] = field(default_factory=dict)
    gap: float = 0.0
    gap_dimension: str | None = None
    trace_id: str | None = None

    def __post_init__(self) -> None:
        # {retriever: the top ranking last pooled}: not a field, never serialised
        self._pooled: dict[str, tuple[str, ...]] = {}
        # the wording start() scrubbed into ``question`` (its first variant: scrubbed once)
        self._started_from: str | None = None
        # ...and that wording as shown (scrubbed): ``question`` may later move to a clean one
        self._started_shown: str | None = None

    @classmethod
    def start(cls, suggestion_id: str, occurrence: Occurrence) -> Suggestion:
        """A new suggestion whose representative is ``occurrence`` (not yet added)."""
        wording = occurrence.question
        suggestion = cls(
            id=suggestion_id,
            question=_shown(wording if occurrence.scrubbed else scrub(wording).text),
            normalised=occurrence.normalised,
            language=occurrence.language,
            topic=occurrence.topic,
            role=occurrence.role,
            source=occurrence.source,
            trace_id=occurrence.trace_id,
        )
        suggestion._started_from = occurrence.question
        suggestion._started_shown = suggestion.question
        return suggestion

    @classmethod
    def first(
        cls,
        suggestion_id: str,
        occurrence: Occurrence,
        max_variants: int = 3,
        pool_k: int = 10,
        max_pool: int = 40,
    ) -> Suggestion:
        """``start(suggestion_id, occurrence)`` with ``occurrence`` (counted: ``counts``
        true) added: the same suggestion, field for field, built in one step. On a stream of
        new questions most suggestions are started this way and evicted unchanged, so the
        general :meth:`add` (its redelivery, variant and gap checks, each trivially decided
        on an empty suggestion) is skipped: ``count`` 1, ``first_seen`` and ``last_seen`` the
        event's time, ``events`` its id, ``variants`` the representative's wording (its first
        variant: ``max_variants`` ≥ 1), ``reasons`` each counted once, the gap and its
        dimension the occurrence's; the pool as :meth:`add` builds it.

        Raises:
            ValueError: ``occurrence.counts`` is false (evidence for an event never counted
                starts no suggestion; :meth:`start` then :meth:`add` would count nothing).
        """
        if not occurrence.counts:
            raise ValueError("a suggestion is started by a counted occurrence")
        wording = occurrence.question
        question = _shown(wording if occurrence.scrubbed else scrub(wording).text)
        stamp = occurrence.timestamp.isoformat().replace("+00:00", "Z")
        reasons = _first_counts(occurrence.reasons)
        gap = occurrence.gap
        # add's rule against an empty suggestion's (0.0, None): any gap ≥ 0 is taken
        dimension = occurrence.gap_dimension if gap >= 0.0 else None
        suggestion = cls(
            suggestion_id, question, occurrence.normalised, occurrence.language,
            occurrence.topic, occurrence.role, occurrence.source, 1, stamp, stamp,
            (occurrence.event_id,), reasons, (question,) if max_variants > 0 else (), {},
            gap if gap >= 0.0 else 0.0, dimension, occurrence.trace_id,
        )  # fmt: skip
        suggestion._started_from = wording
        suggestion._started_shown = question
        pooled = suggestion._pooled
        for retriever, ranking in occurrence.rankings.items():
            top = tuple(ranking[:pool_k])
            if pooled.get(retriever) != top:
                pooled[retriever] = suggestion._pool(retriever, top, max_pool)
        return suggestion

    def add(
        self, occurrence: Occurrence, max_variants: int = 3, pool_k: int = 10, max_pool: int = 40
    ) -> bool:
        """Merge ``occurrence`` in; return ``False`` (and change nothing) when its event id
        was already counted and it brings no new evidence."""
        seen = occurrence.event_id in self.events
        if occurrence.counts and not seen:
            self._count(occurrence, max_variants)
        elif occurrence.counts:
            return False
        for reason in occurrence.reasons:
            self.reasons[reason] = self.reasons.get(reason, 0) + 1
        for retriever, ranking in occurrence.rankings.items():
            top = tuple(ranking[:pool_k])
            # pooling only adds passages and lowers ranks, so the ranking pooled last time
            # changes nothing (the usual case: the same question, the same retrieval)
            if self._pooled.get(retriever) != top:
                self._pooled[retriever] = self._pool(retriever, top, max_pool)
        if occurrence.counts and (occurrence.gap > self.gap or (
                occurrence.gap == self.gap and self.gap_dimension is None)):  # fmt: skip
            # the dimension of the largest gap (a record from before the field learns it
            # from the next occurrence with as large a gap)
            self.gap, self.gap_dimension = occurrence.gap, occurrence.gap_dimension
        return True

    def _count(self, occurrence: Occurrence, max_variants: int) -> None:
        self.count += 1
        stamp = occurrence.timestamp.isoformat().replace("+00:00", "Z")
        self.first_seen = min(self.first_seen or stamp, stamp)
        self.last_seen = max(self.last_seen, stamp)
        self.events = (*self.events, occurrence.event_id)[-RECENT_EVENTS:]
        if self.trace_id is None:
            self.trace_id = occurrence.trace_id
        wording = occurrence.question
        # room for another wording: below the bound, or one clean wording past it while the
        # shown wording (clean whenever a kept one is) holds a placeholder
        if len(self.variants) >= max_variants and not (
                len(self.variants) == max_variants and has_placeholder(self.question)
                and not has_placeholder(wording)):  # fmt: skip
            return
        clean = not has_placeholder(wording)
        # a clean wording's normalised form is its comparison form (subject() keeps a text
        # without placeholders as it is); one with placeholders is told apart with them
        key = occurrence.normalised if clean else _normalised(wording)
        if self.variants and key == _normalised(self.variants[0]):  # the usual repeat
            return
        if key in {_normalised(v) for v in self.variants}:
            return
        if wording == self._started_from and self._started_shown is not None:
            kept = self._started_shown  # start() then add(): scrubbed once, by start()
        else:
            kept = _shown(wording if occurrence.scrubbed else scrub(wording).text)
        self.variants = (*self.variants, kept)
        if has_placeholder(self.question) and not has_placeholder(kept):
            self.question = kept  # chosen_wording(variants): the first clean one

    def _pool(self, retriever: str, ranking: Sequence[str], max_pool: int) -> tuple[str, ...]:
        """Pool ``ranking`` (passage ids, best first) of ``retriever``; return it as pooled,
        its ids the shared strings (:func:`_shared_ids`) the pool's keys are."""
        # copy on write: a passage's {retriever: rank} is replaced, never changed in place,
        # so to_json may share it with the records it built, and a passage's first
        # {retriever: rank} is the one shared by every suggestion (_rank_dicts)
        pool = self.pool
        ranking = _shared_ids(ranking)
        mine = _rank_dicts(retriever, len(ranking))
        if not pool and len(ranking) <= max_pool:  # a new suggestion: one C-level update
            pool.update(zip(ranking, mine, strict=False))  # mine may be longer
            if len(pool) == len(ranking):
                return ranking
            pool.clear()  # a passage repeated: its first (best) rank must win, as below
        for rank, passage in enumerate(ranking, start=1):
            ranks = pool.get(passage)
            if ranks is None:
                if len(pool) < max_pool:
                    pool[passage] = mine[rank - 1]
                continue
            best = ranks.get(retriever)
            if best is None or rank < best:
                pool[passage] = {**ranks, retriever: rank}
        return ranking

    def pool_rows(self) -> list[dict[str, Any]]:
        """The pool for a labeller: ``[{"id", "by": {retriever: rank}}]``, passages found by
        more retrievers first, then by best rank, then id."""
        rows: list[dict[str, Any]] = [
            {"id": pid, "by": dict(sorted(by.items()))} for pid, by in self.pool.items()
        ]
        rows.sort(key=lambda r: (-len(r["by"]), min(r["by"].values()), r["id"]))
        return rows

    def to_json(self, *, shared: bool = False) -> SuggestionJson:
        """Every field as JSON-able data: new containers, except each passage's
        ``{retriever: rank}`` in ``pool``, which the suggestion replaces rather than changes
        (so nothing that merges into the suggestion changes what this returned).

        ``shared``: the suggestion's own ``events``, ``reasons``, ``variants`` and ``pool``
        (tuples and dictionaries, no copies), for a caller that encodes the result at once
        and keeps nothing of it (:func:`~service.harvest.store.record_text`); a JSON encoder
        writes a tuple as the list it copies to."""
        if shared:
            events: Any = self.events
            reasons: Any = self.reasons
            variants: Any = self.variants
            pool: Any = self.pool
        else:  # the pool's values are never changed (_pool): a shallow copy
            events, reasons = list(self.events), dict(self.reasons)
            variants, pool = list(self.variants), dict(self.pool)
        return {
            "id": self.id, "question": self.question, "normalised": self.normalised,
            "language": self.language, "topic": self.topic, "role": self.role,
            "source": self.source, "count": self.count, "first_seen": self.first_seen,
            "last_seen": self.last_seen, "events": events, "reasons": reasons,
            "variants": variants, "pool": pool, "gap": self.gap,
            "gap_dimension": self.gap_dimension, "trace_id": self.trace_id,
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Suggestion:
        """Rebuild from :meth:`to_json` output. A ``question`` with a placeholder while a
        variant has none (a record kept by a version before :func:`chosen_wording`) is
        replaced by the chosen variant; :meth:`to_json` output of this version is rebuilt
        as it was.

        Raises:
            KeyError, TypeError: ``data`` lacks ``id``, ``question`` or ``normalised``.
        """
        suggestion = cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})
        suggestion.events = tuple(suggestion.events)
        suggestion.variants = tuple(suggestion.variants)
        if has_placeholder(suggestion.question) and suggestion.variants:
            # a record kept before the shown wording was chosen: the same rule now
            chosen = suggestion.variants[chosen_wording(suggestion.variants)]
            if not has_placeholder(chosen):
                suggestion.question = chosen
        return suggestion

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Suggestion:
        """Rebuild from a published record (:func:`service.harvest.store.record`: the
        :meth:`to_json` fields plus derived ones, which are ignored), copying every container
        so that merging into the suggestion never changes the record it was read from.

        Raises:
            KeyError, TypeError: ``data`` lacks ``id``, ``question`` or ``normalised``.
        """
        suggestion = cls.from_json(data)
        suggestion.reasons = dict(suggestion.reasons)
        suggestion.pool = {pid: dict(by) for pid, by in suggestion.pool.items()}
        return suggestion
