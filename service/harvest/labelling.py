"""Labelling suggestions: list them with their status, accept one into the gold set, reject one.

* **List** (:meth:`Labelling.list`): records of the repository joined with their decisions
  (``status``: ``suggested``, ``accepted`` or ``rejected``), filtered, then undecided first,
  each group in balanced selection order (:func:`service.harvest.ranking.select`), then
  paginated.
* **Get** (:meth:`Labelling.get`): one suggestion as a listing item.
* **Accept** (:meth:`Labelling.accept`): appends one row to the gold-set JSONL file — a fresh
  id (unique against the ids of the set as it was when the labelling started *and* of the
  file as it is now), the scrubbed question — or the labeller's rewording of it
  (``question``, scrubbed again: to take out personal data the scrubber missed, such as a
  name nobody introduced, or to fix a typo; the suggestion's own text is then not kept in
  the row unless ``keep_asked``) —, the labeller's gold passage ids and kind,
  ``source`` (``real`` unless the suggestion was a generated question; ``written`` for a
  rewording that differs from every wording users asked, :func:`is_reworded`, with
  ``"reworded": true`` and, with ``keep_asked``, the shown wording as ``asked``), the labels the
  labeller set or confirmed (:data:`LABEL_FIELDS`: ``topic``, ``language``, ``role``,
  ``answer_contains``, ``reference_answer``; only those sent), ``suggested`` (provenance:
  what goldwatch guessed and the labeller did not confirm — the classifier's ``language``
  and ``topic`` unless ``novel``, the first asker's ``role`` — never read as labels:
  the gold-set loader ignores it), ``harvest_id`` (the suggestion id; the loader reads it,
  and the topic labels' rule does not count an accepted row without a ``topic`` against
  the labelled ones) and, when the question came from an OpenTelemetry trace,
  ``trace_id`` (the suggestion's, provenance the loader ignores) — and keeps the
  decision. A guess is a label only when the labeller sends it back::

      {"id": "q-031", "question": "exam kab hai?", "gold": ["p-7"], "kind": "plain",
       "source": "real", "topic": "exams", "suggested": {"language": "hi-Latn",
       "topic": "library", "role": "staff"}, "harvest_id": "c-…",
       "trace_id": "0af7651916cd43dd8448eb211c80319c"}

  Existing rows are never rewritten. Before the append the accept is *held*
  (:meth:`~service.harvest.store.CandidateRepository.hold`: a pending entry under the
  decision's key, kept with the record), so no checkpoint sweeps the record of an evicted
  suggestion while its row may be in the file without its decision. If keeping the decision
  failed (503, "retry the accept"), or a crash came between the append and the decision, a
  retry finds the ``harvest_id`` already in the file, does not append again, and keeps the
  decision of that row as the gold-set loader reads it; a reject of a held suggestion first
  looks for that row and, found, keeps that accept instead (:class:`AlreadyDecided`). Until
  then the held suggestion is listed and exported as suggested. The gold
  passages must fit the kind (:func:`service.data.goldset.kind_problem`: e.g. ``multi-passage``
  needs two), and the gold set with the new row must pass the reload's own checks
  (``gold_rule``: the topic labels' rule), else nothing is appended (422). A question that
  duplicates a row of the file — harvest's gold near-duplicate rule on both subjects,
  :func:`duplicated_gold_row` — is refused (:class:`DuplicatesGold`, 409 naming the row's
  id; trial 21 appended a second copy of a gold row that differed by ``my email: <EMAIL>``):
  reject it as a duplicate, or reword it. When the file
  cannot be written (missing although it existed at start — moved away —, not a regular
  file, unwritable, disk full, locked by another process for over
  ``harvest.gold_lock_timeout_s``, its last line torn by an earlier crash, or any line
  that keeps the file from loading whole, which ``/readyz`` reports by the same check)
  :class:`GoldSetUnavailable` is raised, the file is left as it was (the append is whole or cut
  off again: :mod:`service.files.append_only`) and the suggestion stays undecided, so the same
  accept can be retried.
* **Reject** (:meth:`Labelling.reject`): keeps the decision with a scrubbed reason;
  control characters are taken out of it (:func:`clean_reason`), and a reason the scrubber
  made longer than :data:`MAX_REASON_CHARS` is clipped with an ellipsis (:func:`clip_reason`).

A suggestion is decided once; a second decision raises :class:`AlreadyDecided`. A decision
is kept with the record it was taken on: the consumer's checkpoint sweeps the records of
suggestions no longer held (:func:`service.harvest.store.candidate_sweep`) under the
engine's lock, not this class's, so one may go between reading a record and deciding on it;
the decision then writes the record back in its own transaction (and a decided record is
never swept).
"""

from __future__ import annotations

import builtins
import errno
import fcntl
import json
import logging
import os
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, NotRequired, cast

from typing_extensions import TypedDict

from service.data.goldset import MAX_GOLD_ROW_BYTES, GoldFileCheck, kind_problem, parse_gold_row
from service.errors import GoldwatchError
from service.files.append_only import (
    MaybeWritten,
    TornTail,
    append_whole,
    open_append,
    prepare_tail,
)
from service.files.regular import read_regular
from service.harvest.config import REASONS, HarvestConfig
from service.harvest.ranking import select
from service.harvest.store import CandidateRepository, Decision, SuggestionRecord
from service.harvest.suggestion import Suggestion
from service.harvest.text import comparison_form, jaccard, strip_controls, trigrams
from service.pii.scrub import scrub
from service.records import PLACEHOLDERS, GoldQuestion
from service.state import StateError
from service.text.subject import has_placeholder, subject, without_placeholders
from service.text.wording import core_form, may_merge, wording

__all__ = [
    "STATUSES",
    "AlreadyDecided",
    "CandidateNotFound",
    "DuplicatesGold",
    "GoldSetUnavailable",
    "Labelling",
    "LABEL_FIELDS",
    "LabellingError",
    "Page",
    "clean_reason",
    "clip_reason",
    "duplicated_gold_row",
    "fresh_gold_id",
    "asked_wordings",
    "is_reworded",
    "placeholder_warning",
    "reworded_warning",
]

log = logging.getLogger(__name__)

STATUSES = ("suggested", "accepted", "rejected")
#: Labels a labeller may set or correct on accept (gold-set row fields), in row order.
LABEL_FIELDS = ("question", "topic", "language", "role", "answer_contains", "reference_answer")
#: Guesses of a suggestion kept as provenance (``suggested``) when not confirmed.
GUESSED_FIELDS = ("language", "topic", "role")
#: Most characters of a reject reason, as sent and as kept (scrubbed, then clipped).
MAX_REASON_CHARS = 500
ELLIPSIS = "\u2026"
_NUMBERED = re.compile(r"^q-(\d+)$")


class LabellingError(GoldwatchError, ValueError):
    """A request cannot be applied; the message never quotes user text."""


class CandidateNotFound(LabellingError, LookupError):
    """No suggestion has this id."""


class AlreadyDecided(LabellingError):
    """The suggestion was already accepted or rejected (``status`` says which)."""

    def __init__(self, status: str) -> None:
        super().__init__(f"this suggestion is already {status}")
        self.status = status


class DuplicatesGold(LabellingError):
    """The question the accept would write asks what a gold row of the file already asks
    (:func:`duplicated_gold_row`); nothing was written (409). The message names the row's id,
    never text."""

    def __init__(self, gold_id: str) -> None:
        super().__init__(
            f"the question duplicates gold row {gold_id} (the same question once personal-data "
            f"placeholders and contact clauses are taken out); nothing was written: reject "
            f"the suggestion as a duplicate of {gold_id}, or accept with a reworded "
            f'"question" label that asks something else'
        )
        self.gold_id = gold_id


class GoldSetUnavailable(LabellingError):
    """The gold-set file cannot be written now (missing, not a regular file, unwritable, disk
    full); nothing was decided, so the request can be retried once the file is back. The
    message names the file and the problem, never user text."""


class GoldFileBroken(Exception):
    """The gold-set file no longer loads whole (:class:`~service.data.goldset.GoldFileCheck`);
    the message names the file and the first bad line, never its content."""


class PoolRow(TypedDict):
    """A passage of a suggestion's pool for a labeller: its ``id`` and ``by``
    ``{retriever: best rank (1-based)}``, retrievers sorted by name."""

    id: str
    by: dict[str, int]


class CandidateItem(TypedDict):
    """A suggestion as the labeller sees it (:meth:`Labelling.list` items, :meth:`Labelling.get`,
    ``GET /v1/gold-candidates``): the published record
    (:class:`~service.harvest.store.SuggestionRecord`) without ``normalised``, ``events``,
    ``reasons`` and ``pool``, in its order, with its guesses (:data:`GUESSED_FIELDS`: the
    language the detector gave, the topic the topic model gave — ``novel`` included —, the
    first asker's role) not as fields of their own but under ``suggested`` (``{field:
    guess}``, the set ones only), as an accepted gold row and ``candidates export`` keep
    them: goldwatch guessed them, nobody confirmed them (trial 40: a listing's top-level
    ``"topic": "Rhine"`` on a Harvard question read as a label). Then ``status``
    (``suggested``, ``accepted``, ``rejected``), the ``decision`` (``None`` while
    undecided), ``reasons`` (heaviest first), ``reason_counts`` ``{reason: events}`` in
    that order and the ``pool`` as :class:`PoolRow` (found by more retrievers first, then
    best rank, then id). From typing_extensions: the API serves it (pydantic needs that on
    Python < 3.12). ``wording_note`` (after ``primary_reason``, only when the ``question``
    shown is not the first wording asked) says which wording it is and why."""

    id: str
    question: str
    source: str
    count: int
    first_seen: str
    last_seen: str
    variants: list[str]
    gap: float
    gap_dimension: NotRequired[str | None]  # absent from a record written before it existed
    trace_id: str | None
    priority: float
    primary_reason: str | None
    wording_note: NotRequired[str]  # only when the question shown is not the first asked
    suggested: dict[str, str]
    status: str
    decision: Decision | None
    reasons: list[str]
    reason_counts: dict[str, int]
    pool: list[PoolRow]


class Page(NamedTuple):
    """One page of suggestions: ``total`` after filtering, ``items`` of this page, and
    ``near_duplicates``: the suggestions matching the filters that the listing leaves out as
    near-duplicates of one listed (:func:`~service.harvest.ranking.select`'s ``distinct``:
    pairs the harvest stage's LSH did not merge), which :meth:`Labelling.counts` counts:
    ``total + near_duplicates`` is the stored suggestions matching the filters."""

    total: int
    items: list[CandidateItem]
    near_duplicates: int = 0


def fresh_gold_id(existing: set[str]) -> str:
    """The next ``q-N`` id: one more than the largest numbered id, zero-padded to its width
    (at least 3 digits), skipping ids in use.

    >>> fresh_gold_id({"q-007", "q-012", "x-1"}), fresh_gold_id(set()), fresh_gold_id({"q-0999"})
    ('q-013', 'q-001', 'q-1000')
    """
    numbers = [m.group(1) for i in existing if (m := _NUMBERED.match(i))]
    width = max([3, *(len(n) for n in numbers)])
    n = max((int(x) for x in numbers), default=0) + 1
    while f"q-{n:0{width}d}" in existing:
        n += 1
    return f"q-{n:0{width}d}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _check_labels(gold: Sequence[str], kind: str) -> None:
    if any(not isinstance(p, str) or not p.strip() or len(p) > 256 for p in gold):
        raise LabellingError("gold: passage ids must be non-blank strings of at most 256 chars")
    if len(set(gold)) != len(gold):
        raise LabellingError("gold: passage ids repeat")
    problem = kind_problem(kind, gold)  # the gold-set loader's own rule
    if problem is not None:
        raise LabellingError(f"{problem[0]}: {problem[1]}")


_SPACE_CONTROLS = str.maketrans(dict.fromkeys("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85", " "))


def clean_reason(text: str) -> str:
    """``text`` without control characters: line breaks and tabs (and the other whitespace
    controls) become one space each, every other control character (``Cc``: NUL, ESC, DEL,
    C1) and the bidirectional controls are removed
    (:func:`~service.harvest.text.strip_controls`, as from a suggestion's wording); then
    stripped.

    >>> clean_reason("dup\\x00licate\\nof q-12\\u202e\\x1b[31m ")
    'duplicate of q-12[31m'
    """
    return strip_controls(text.translate(_SPACE_CONTROLS)).strip()


def clip_reason(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` if it has at most ``limit`` characters (code points), else its first ``limit
    - 1`` characters, right-stripped, and ``"…"`` (U+2026). A placeholder of
    :func:`service.pii.scrub` (``<EMAIL>``) that the cut would split is left out whole.

    Scrubbing can lengthen a reason (each 6-character ``a@b.co`` becomes the 7-character
    ``<EMAIL>``: 71 of them, 497 characters with spaces, become 567), so a reason within the
    limit as sent can exceed it once scrubbed. Clip only scrubbed text: a cut through raw
    personal data could leave a part the scrubber no longer recognises.

    Raises:
        ValueError: ``limit`` < 1.

    >>> clip_reason("duplicate of q-12", 10)
    'duplicate…'
    >>> clip_reason("see <EMAIL> and q-3", 10), clip_reason("abc", 3)
    ('see…', 'abc')
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if len(text) <= limit:
        return text
    cut = limit - 1
    opening = text.rfind("<", max(0, cut - _LONGEST_PLACEHOLDER + 1), cut)
    if opening >= 0 and any(text.startswith(p, opening) and opening + len(p) > cut
                            for p in PLACEHOLDERS.values()):  # fmt: skip
        cut = opening
    return text[:cut].rstrip() + ELLIPSIS


def placeholder_warning(question: str) -> str | None:
    """What an accept answers when the gold row written still holds personal-data
    placeholders (``<NAME>``, ``<EMAIL>`` …: the asked text was scrubbed); ``None`` otherwise.

    The row keeps the text as it was asked and scrubbed (nothing the reviewer did not
    confirm is written); topics, out-of-scope and their gold-set fit read its subject
    (:func:`service.text.subject.subject`), which the warning quotes. A reviewer who wants
    the text itself reworded sends a ``question`` label with the accept (trial 12 F6: one
    accepted ``My name is <NAME>, my email is <EMAIL> …`` row drew 59 of 60 scrubbed live
    questions into its topic before the analysis read subjects).

    >>> placeholder_warning("Who won?") is None
    True
    >>> print(placeholder_warning("My name is <NAME>. Who won?"))
    the question written holds placeholders (<NAME>) of scrubbed personal data: it is kept as \
asked; topics and out-of-scope read it as 'Who won?' (without the placeholders and the \
contact clauses around them); to write another wording, accept with a reworded "question" \
label (or edit the gold-set row)
    """
    if not has_placeholder(question):
        return None
    found = [p for p in PLACEHOLDERS.values() if p in question]
    read = subject(question)
    if read == question:  # nothing but contact clauses: the request itself (subject())
        how = ("as asked, placeholders included (it holds nothing but contact words around "
               "them: a request about those details)")  # fmt: skip
    elif " ".join(read.split()) == without_placeholders(question):  # no clause removed
        how = f"as {read!r} (only the placeholders taken out; the words around them stay)"
    else:
        how = f"as {read!r} (without the placeholders and the contact clauses around them)"
    return (f"the question written holds placeholders ({', '.join(found)}) of scrubbed "
            f"personal data: it is kept as asked; topics and out-of-scope read it {how}; to "
            f"write another wording, accept with a reworded \"question\" label (or edit the "
            f"gold-set row)")  # fmt: skip


_LONGEST_PLACEHOLDER = max(len(p) for p in PLACEHOLDERS.values())


def duplicated_gold_row(
    question: str, rows: Iterable[Mapping[str, Any]], similarity: float, role: str | None = None
) -> str | None:
    """The id of the gold row that ``question`` duplicates, or ``None``: harvest's rule for a
    gold near-duplicate (:mod:`service.harvest.stage`), on both questions' subjects
    (:func:`service.text.subject.subject`: without placeholders and the contact clauses
    around them) in comparison form — the same text, or character-trigram Jaccard ≥
    ``similarity`` (``harvest.similarity``; of the texts without an opening and edge
    courtesy, :func:`service.text.wording.core_form`, as harvest's index) with the same
    numbers, content words and question word (:func:`service.text.wording.may_merge`), and
    here the same question words on both sides (harvest's rule compares them only when both
    have one: "Why do I need a visa for Spain?" is no copy of "Do I need a visa for Spain?",
    and an accept has no override). Only rows of the same ``role`` (the new row's; ``None``:
    none) are compared: rows that differ by role are the ACL's own cases
    (:func:`service.data.goldset.repeated_questions`). The same text wins, then the highest
    Jaccard, then file order. A row without a string ``id`` and ``question`` is skipped.

    Trial 21: a gold question followed by ``my email: <EMAIL>`` was suggested and accepted as
    a second copy of the gold row.

    >>> rows = [{"id": "g-013", "question": "What was the first problem during the test?"}]
    >>> duplicated_gold_row("What was the first problem during the test? my email: <EMAIL>",
    ...                     rows, 0.6)
    'g-013'
    >>> duplicated_gold_row("What was the second problem during the test?", rows, 0.6) is None
    True
    """
    mine = comparison_form(subject(question))
    if not mine:
        return None
    grams = trigrams(core_form(mine))  # the trigram gate reads no opening, no edge courtesy
    asks = wording(mine).asks
    best: tuple[float, str] | None = None
    for row in rows:
        gold_id, text = row.get("id"), row.get("question")
        if not isinstance(gold_id, str) or not isinstance(text, str):
            continue
        if (row.get("role") or None) != (role or None):
            continue
        theirs = comparison_form(subject(text))
        if theirs == mine:
            return gold_id
        score = jaccard(grams, trigrams(core_form(theirs)))
        if (score >= similarity and (best is None or score > best[0])
                and may_merge(mine, theirs) and wording(theirs).asks == asks):  # fmt: skip
            best = (score, gold_id)
    return None if best is None else best[1]


def _ids_in(content: bytes) -> dict[str, dict[str, Any]]:
    """``{id: row}`` of the parsable rows of gold-set JSONL ``content``."""
    rows: dict[str, dict[str, Any]] = {}
    for line in content.splitlines():
        try:
            parsed = json.loads(line)
        except ValueError:
            continue  # the loader reports malformed lines; appending is still safe
        if isinstance(parsed, dict) and isinstance(parsed.get("id"), str):
            rows[parsed["id"]] = parsed
    return rows


class Labelling:
    """The labelling use cases over a repository and a gold-set file.

    Args:
        repository: records and decisions.
        gold_path: the gold-set JSONL file accepted rows are appended to. Its ids are read
            now: fresh ids are unique against them and against the file at each accept.
            If it exists now, an accept while it is missing is refused
            (:class:`GoldSetUnavailable`) rather than starting a new file whose ids would
            collide with the set's; if it does not exist now, the first accept creates it.
        config: weights and quotas for the listing order.
        on_accept: called with each accepted row (e.g. to refresh the topic model and the
            gold distributions).
        on_decide: called with the suggestion's id and normalised question after each
            decision is kept (accept, reject, or an accept a reject settled), outside the
            lock: the service tells the harvest stage, which then stops holding the
            suggestion (:meth:`service.harvest.stage.HarvestStage.decided`). A failure is
            logged; the decision stays kept (the stage also learns it at its next restore).
        passages: the corpus's passage ids; when given, an accept naming another id is
            refused (a typo would make a gold question no retriever can ever find).
        clock: returns the decision time as RFC 3339 UTC.
        gold_check: whether the gold-set file loads whole; the service passes the check its
            readiness uses, so an accept is refused (:class:`GoldSetUnavailable`, naming the
            file and line) exactly while ``/readyz`` says the file no longer loads. Default:
            a check of its own on ``gold_path``.
        gold_rule: the gold-set reload's checks beyond each row's, given the questions the
            file would hold with the new row (file order, the new one last): why the reload
            would refuse them (a message naming fields and counts, never text), or ``None``.
            An accept it refuses appends nothing (:class:`LabellingError`, 422): the service
            passes the topic labels' rule
            (:func:`service.runtime.analytics.topic_label_rule`), so an accept never leaves
            a file that the refresh, the next start and ``config check`` refuse.
    """

    def __init__(
        self,
        repository: CandidateRepository,
        gold_path: Path | str,
        config: HarvestConfig | None = None,
        on_accept: Callable[[GoldQuestion], None] | None = None,
        clock: Callable[[], str] = _now,
        passages: Collection[str] | None = None,
        gold_check: GoldFileCheck | None = None,
        on_decide: Callable[[str, str], None] | None = None,
        gold_rule: Callable[[Sequence[GoldQuestion]], str | None] | None = None,
    ) -> None:
        self.repository = repository
        self.gold_path = Path(gold_path)
        self.config = config or HarvestConfig()
        self.on_accept = on_accept
        self.on_decide = on_decide
        self.clock = clock
        self.passages = frozenset(passages) if passages is not None else None
        self.gold_check = gold_check or GoldFileCheck(self.gold_path)
        self.gold_rule = gold_rule
        self._lock = threading.Lock()
        self._expected = self.gold_path.exists()
        self._known_ids: set[str] = set()
        if self._expected:
            try:
                self._known_ids = set(_ids_in(read_regular(self.gold_path)))
            except OSError as exc:  # checked again, with a clear answer, at each accept
                log.warning("gold-set file %s unreadable at start: %s", self.gold_path,
                            _problem(exc))  # fmt: skip

    def list(
        self,
        reason: str | None = None,
        language: str | None = None,
        topic: str | None = None,
        status: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> Page:
        """Suggestions matching every given filter, undecided ones first, each group in
        selection order, ``limit`` from ``offset``. ``language`` and ``topic`` match the
        suggestion's guesses (``suggested``: the detected language, the topic model's
        topic), ``language`` case-insensitively (BCP 47 tags are: ``hi-latn`` finds
        ``hi-Latn``), ``topic`` exactly. Each item is :class:`CandidateItem`: the record with
        its guesses under ``suggested``, plus ``status``, ``decision``, ``reasons`` (a list,
        heaviest first), ``reason_counts``, and ``pool`` as labeller rows.

        Raises:
            LabellingError: unknown ``reason`` or ``status``, negative offset or limit.
        """
        if reason is not None and reason not in REASONS:
            raise LabellingError(f"reason must be one of {', '.join(REASONS)}")
        if status is not None and status not in STATUSES:
            raise LabellingError(f"status must be one of {', '.join(STATUSES)}")
        if offset < 0 or limit < 0:
            raise LabellingError("offset and limit must be >= 0")
        wanted_language = language.lower() if language is not None else None
        decisions = self.repository.decisions()
        rows = {}
        for row in self.repository.all():
            decision = decisions.get(row["id"])
            row_status = decision["status"] if decision else "suggested"
            if (
                (reason is None or reason in row.get("reasons", {}))
                and (
                    wanted_language is None
                    or str(row.get("language") or "").lower() == wanted_language
                )
                and (topic is None or row.get("topic") == topic)
                and (status is None or row_status == status)
            ):
                rows[row["id"]] = (row, row_status, decision)
        ordered = select((Suggestion.from_json(r) for r, _, _ in rows.values()), self.config)
        # undecided first (what a labeller works on), then the decided, each in that order
        ordered.sort(key=lambda suggestion: rows[suggestion.id][1] != "suggested")
        page = ordered[offset : offset + limit]
        return Page(len(ordered), [self._item(*rows[s.id], s) for s in page],
                    len(rows) - len(ordered))  # fmt: skip

    def counts(self) -> dict[str, int]:
        """How many suggestions are stored, by status: ``{"suggested": n, "accepted": n,
        "rejected": n}`` (every key of :data:`STATUSES`). Stored, near-duplicates included:
        each is :meth:`list`'s ``total + near_duplicates`` with that ``status`` (the listing
        leaves out a near-duplicate of a listed suggestion; session 51: a status of 214
        suggested beside a listing of 213)."""
        decisions = self.repository.decisions()
        counts = dict.fromkeys(STATUSES, 0)
        for row in self.repository.all():
            decision = decisions.get(row["id"])
            counts[decision["status"] if decision else "suggested"] += 1
        return counts

    def get(self, candidate_id: str) -> CandidateItem:
        """One suggestion as a :meth:`list` item (with its status and decision).

        Raises:
            CandidateNotFound: no suggestion has this id.
        """
        row = self.repository.get(candidate_id)
        if row is None:
            raise CandidateNotFound("no suggestion has this id")
        decision = self.repository.decision(candidate_id)
        status = decision["status"] if decision else "suggested"
        return self._item(row, status, decision, Suggestion.from_json(row))

    def _item(
        self,
        row: SuggestionRecord,
        status: str,
        decision: Decision | None,
        suggestion: Suggestion,
    ) -> CandidateItem:
        counts = row.get("reasons", {})
        order = sorted(counts, key=lambda r: (-self.config.weight(r), REASONS.index(r)))
        skip = {"normalised", "reasons", "pool", "events", *GUESSED_FIELDS}
        fields: Mapping[str, Any] = row
        # a record kept by an older version may lack a field: it is left out, not made up
        return cast(CandidateItem, {
            **{k: v for k, v in row.items() if k not in skip},
            "suggested": {name: fields[name] for name in GUESSED_FIELDS if fields.get(name)},
            "status": status,
            "decision": decision,
            "reasons": order,
            "reason_counts": {r: counts[r] for r in order},
            "pool": suggestion.pool_rows(),
        })  # fmt: skip

    def accept(
        self,
        candidate_id: str,
        gold: Sequence[str],
        kind: str,
        labels: Mapping[str, Any] | None = None,
        deadline: float | None = None,
        *,
        keep_asked: bool = False,
    ) -> Decision:
        """Append the suggestion to the gold set and keep the decision; return the decision
        ``{"status": "accepted", "gold_id", "gold", "kind", "decided_at"}`` plus the
        ``labels`` written, and for a reworded question (a ``question`` label that differs
        from every wording users asked: :func:`is_reworded`) ``"source": "written"`` and
        ``"reworded": true`` as in the row, with a warning saying so in the answer.

        ``labels`` holds what the labeller set or confirmed, keys of :data:`LABEL_FIELDS`
        (``answer_contains`` a list of strings, the others strings; ``None`` values are
        left out): only these become labels of the gold row; the suggestion's own guesses
        go under ``suggested`` (module docstring).

        ``deadline`` (a ``time.monotonic()`` value) ends the wait for the gold-set file's
        lock; the HTTP route sets it from the request's arrival, so the time queued behind
        other accepts and the time waiting for the lock share ``config.gold_lock_timeout_s``.
        Default: ``config.gold_lock_timeout_s`` from now.

        ``keep_asked``: also write the shown wording the labeller reworded (scrubbed) as the
        row's ``asked``; only with a reworded question (otherwise nothing was changed and the
        row's ``question`` is that wording). Off by default: a rewording may take out
        personal data the scrubber missed, which ``asked`` would put back.

        Raises:
            CandidateNotFound, AlreadyDecided, LabellingError: see the class docstrings
                (blank or repeated ids, ids that do not fit the kind — see
                :func:`service.data.goldset.kind_problem` —, ids not in ``passages``, or a gold
                row over the loader's 64 KiB a row, naming its largest fields:
                :func:`row_too_large`).
            DuplicatesGold: the question written (the suggestion's, or the ``question``
                label) duplicates a gold row of the file (:func:`duplicated_gold_row`);
                nothing is written, the suggestion stays undecided (409).
            GoldSetUnavailable: the gold-set file cannot be written (module docstring);
                logged once as a warning naming the file and the error, without user text.
        """
        _check_labels(gold, kind)
        confirmed = _confirmed(labels)
        if self.passages is not None:
            unknown = sum(1 for passage in gold if passage not in self.passages)
            if unknown:
                raise LabellingError(f"gold: {unknown} passage id(s) are not in the corpus")
        if deadline is None:
            deadline = time.monotonic() + self.config.gold_lock_timeout_s
        with self._lock:
            row = self._undecided(candidate_id)
            # a hold left by an earlier accept (killed, or failed after its row may have been
            # written) is that accept's: this one must not release it when it fails
            try:  # held before the append: no checkpoint sweeps the record until decided
                held_before = self.repository.pending(candidate_id)
                wrote = self.repository.hold(candidate_id, row, self.clock())
            except StateError as exc:
                log.warning("accept of %s refused: %s", candidate_id, exc)
                raise GoldSetUnavailable(
                    f"the decision cannot be kept ({exc}); nothing was written, retry the accept"
                ) from None
            try:
                gold_row, question = self._append(row, list(gold), kind, confirmed, deadline,
                                                  keep_asked)  # fmt: skip
            except MaybeWritten as exc:  # the row may be in the file: kept held, so the
                # retry reuses it or a reject's settle finds it
                message = (f"gold-set file {self.gold_path} failed after the row may have "
                           f"been written: {_problem(exc)}; retry the accept")  # fmt: skip
                log.warning("accept refused: %s", message)
                raise GoldSetUnavailable(message) from None
            except OSError as exc:
                message = f"gold-set file {self.gold_path} cannot be written: {_problem(exc)}"
                log.warning("accept refused: %s", message)
                self._release(candidate_id, row if wrote else None, held_before)
                raise GoldSetUnavailable(message) from None
            except TornTail as exc:  # names the file and line, never its content
                log.warning("accept refused: %s", exc)
                self._release(candidate_id, row if wrote else None, held_before)
                raise GoldSetUnavailable(f"gold-set file damaged: {exc}") from None
            except GoldFileBroken as exc:  # readiness's own message: file and line
                log.warning("accept refused: %s", exc)
                self._release(candidate_id, row if wrote else None, held_before)
                raise GoldSetUnavailable(str(exc)) from None
            except GoldSetUnavailable:  # a malformed row holds it: kept held for the retry
                raise
            except LabellingError:  # the row would not load: nothing was appended
                self._release(candidate_id, row if wrote else None, held_before)
                raise
            # the row in the file is what counts (after a crash: the one appended then)
            decision: Decision = {
                "status": "accepted", "gold_id": question.id, "gold": list(question.gold),
                "kind": question.kind, "labels": confirmed, "decided_at": self.clock(),
            }  # fmt: skip
            if gold_row.get("reworded") is True:  # the row in the file says so
                decision = {**decision, "source": str(gold_row.get("source")), "reworded": True}
            try:  # with the record read: a checkpoint may have swept it since
                self.repository.decide(candidate_id, decision, row)
            except StateError as exc:  # not kept; held, so the record stays (no sweep
                # deletes it) and a retry finds the row in the file and keeps the decision
                log.warning("accept of %s not kept: %s", candidate_id, exc)
                raise GoldSetUnavailable(
                    f"the row is in the gold-set file but the decision could not be kept "
                    f"({exc}); retry the accept"
                ) from None
        self._decided(candidate_id, row)
        self._accepted(question)
        warnings = [reworded_warning(candidate_id, "asked" in gold_row)] if decision.get(
            "reworded") else []  # fmt: skip
        warning = placeholder_warning(question.question)
        if warning is not None:
            warnings.append(warning)
        if warnings:  # in the answer only: the decision kept is unchanged
            decision = {**decision, "warnings": warnings}
        return decision

    def reject(self, candidate_id: str, reason: str) -> Decision:
        """Keep a rejection ``{"status": "rejected", "reason", "decided_at"}`` and return it.

        The reason sent has 1 to :data:`MAX_REASON_CHARS` (500) characters; control
        characters are taken out (:func:`clean_reason`), then it is scrubbed, and the
        scrubbed text, which can be longer than what was sent, is clipped to 500 characters
        with an ellipsis (:func:`clip_reason`): the reason kept and returned never exceeds
        the limit.

        Raises:
            CandidateNotFound, AlreadyDecided, LabellingError (too long as sent, or blank
                once its control characters are taken out; the message never quotes it).
        """
        cleaned = clean_reason(reason)
        if not cleaned or len(reason) > MAX_REASON_CHARS:
            raise LabellingError(f"reason must be 1..{MAX_REASON_CHARS} non-blank characters")
        kept = clip_reason(scrub(cleaned).text)
        settled: GoldQuestion | None = None
        with self._lock:
            row = self._undecided(candidate_id)
            if self.repository.pending(candidate_id):  # an accept failed after its append?
                settled = self._settle(candidate_id, row)
            if settled is None:
                decision: Decision = {"status": "rejected", "reason": kept,
                                      "decided_at": self.clock()}  # fmt: skip
                # with the record read: a checkpoint may have swept it since
                self.repository.decide(candidate_id, decision, row)
        self._decided(candidate_id, row)
        if settled is not None:  # the accept is kept: refreshed as an accept's retry is
            self._accepted(settled)
            raise AlreadyDecided("accepted")
        return decision

    def _decided(self, candidate_id: str, row: SuggestionRecord) -> None:
        """Tell ``on_decide`` of a kept decision (outside the lock); a failure is logged."""
        if self.on_decide is not None:
            try:  # the decision is kept: the stage also finds it at its next restore
                self.on_decide(candidate_id, str(row.get("normalised") or ""))
            except Exception:
                log.exception("after deciding %s: the harvest stage was not told", candidate_id)

    def _accepted(self, question: GoldQuestion) -> None:
        """Tell ``on_accept`` of a kept accept (outside the lock); a failure is logged."""
        if self.on_accept is not None:
            try:  # the decision is kept: a failed refresh must not turn it into an error
                self.on_accept(question)
            except Exception:
                log.exception("after accepting %s: the gold-set refresh could not start",
                              question.id)  # fmt: skip

    def _release(
        self, candidate_id: str, written: SuggestionRecord | None, held_before: bool = False
    ) -> None:
        """End the hold of an accept that appended nothing, deleting the record the hold
        wrote back (``written``: a checkpoint had swept it, so it is neither held nor decided);
        if that cannot be written the hold stays (the record is then kept until a decision,
        which is harmless). ``held_before``: the suggestion was held before this accept (an
        earlier one's row may be in the file): the hold stays for a retry or a reject to
        settle."""
        if held_before:
            return
        try:
            self.repository.release(candidate_id, written)
        except StateError as exc:
            log.warning("hold of %s not released: %s", candidate_id, exc)

    def _settle(self, candidate_id: str, row: SuggestionRecord) -> GoldQuestion | None:
        """A held suggestion (an accept whose decision was not kept: failed, or the process
        was killed after the append): if the gold-set file has a row carrying its id, keep
        the accept that row records and return its question (the reject is then refused);
        ``None`` when the file has no such row (or does not exist yet, never having been
        written: a fresh gold path).

        Raises:
            GoldSetUnavailable: the file cannot be read (or is gone although it existed),
                so whether it holds the row is unknown; or that row is not a valid gold row.
        """
        try:
            content = read_regular(self.gold_path)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError) and not self._expected:
                return None  # never created (a fresh gold path): no accept appended a row
            message = f"gold-set file {self.gold_path} cannot be read: {_problem(exc)}"
            log.warning("reject refused: %s", message)
            raise GoldSetUnavailable(message) from None
        for parsed in _ids_in(content).values():
            if parsed.get("harvest_id") == candidate_id:
                question = _recovered(parsed, self.gold_path)
                labels = {name: parsed[name] for name in LABEL_FIELDS if name in parsed}
                decision: Decision = {
                    "status": "accepted", "gold_id": question.id, "gold": list(question.gold),
                    "kind": question.kind, "labels": labels, "decided_at": self.clock(),
                }  # fmt: skip
                if parsed.get("reworded") is True:
                    decision = {**decision, "source": str(parsed.get("source")),
                                "reworded": True}  # fmt: skip
                self.repository.decide(candidate_id, decision, row)
                return question
        return None

    def _undecided(self, candidate_id: str) -> SuggestionRecord:
        row = self.repository.get(candidate_id)
        if row is None:
            raise CandidateNotFound("no suggestion has this id")
        decision = self.repository.decision(candidate_id)
        if decision is not None:
            raise AlreadyDecided(str(decision.get("status")))
        return row

    def _append(
        self,
        row: SuggestionRecord,
        gold: builtins.list[str],  # ``list`` in this class is the method Labelling.list
        kind: str,
        labels: Mapping[str, Any],
        deadline: float,
        keep_asked: bool = False,
    ) -> tuple[dict[str, Any], GoldQuestion]:
        """Append the gold row under an exclusive ``flock`` of the file, waited for until
        ``deadline`` (``time.monotonic()``); the append is whole or cut off again
        (:func:`service.files.append_only.append_whole`), so the file ends as it began or with
        the complete new row.

        Returns:
            ``(row, question)``: the row in the file — the new one, or after a crash between
            an append and its decision, the one appended then, read back as the gold-set
            loader reads it (:func:`service.data.goldset.parse_gold_row`) — and its question.

        Raises:
            OSError: missing (``ENOENT``) although it existed at start, not a regular file
                (``EINVAL``), locked by another process for too long (``EAGAIN``), or cannot
                be opened, read or written; nothing was appended.
            MaybeWritten: an :class:`OSError` after the row may have reached the file (the
                write or fsync failed and could not be cut back; the file failed after the
                append or at its close).
            TornTail: the file's last line is incomplete (an earlier append cut short).
            GoldFileBroken: the file (not empty) no longer loads whole: a row appended now
                would be lost with it; nothing is written.
            GoldSetUnavailable: the file holds this suggestion's row, malformed.
            LabellingError: the new row is over the loader's
                :data:`~service.data.goldset.MAX_GOLD_ROW_BYTES` (:func:`row_too_large`), or
                the gold set with it fails ``gold_rule``, or its question duplicates a row
                of the file (:class:`DuplicatesGold`); nothing is written.
        """
        try:
            fd = open_append(self.gold_path, 0o644, create=not self._expected)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "missing (moved or deleted?)") from None
        written = False
        try:
            # other processes append too
            _lock_exclusive(fd, deadline, self.config.gold_lock_timeout_s)
            existing = _ids_in(_read_all(fd))
            for parsed in existing.values():
                if parsed.get("harvest_id") == row["id"]:  # appended before a crash: reuse
                    written = True
                    return parsed, _recovered(parsed, self.gold_path)
            prefix = prepare_tail(fd, self.gold_path, on_torn="refuse")
            before = os.fstat(fd)
            # rows appended to a file that no longer loads would be lost with it (the next
            # start refuses it); readiness says 503 for the same reason
            problem = self.gold_check.problem() if before.st_size else None
            if problem is not None:
                raise GoldFileBroken(problem)
            gold_id = fresh_gold_id(self._known_ids | set(existing))
            gold_row = _gold_row(gold_id, row, gold, kind, labels, keep_asked)
            duplicated = duplicated_gold_row(gold_row["question"], existing.values(),
                                             self.config.similarity,
                                             gold_row.get("role"))  # fmt: skip
            if duplicated is not None:  # a second copy would be matched, counted and
                raise DuplicatesGold(duplicated)  # measured as the first one is
            line = json.dumps(gold_row, ensure_ascii=False).encode("utf-8") + b"\n"
            if len(line) - 1 > MAX_GOLD_ROW_BYTES:  # the loader would refuse the whole file
                raise LabellingError(row_too_large(gold_row, len(line) - 1))
            try:  # a row the loader refuses would make the whole file refused
                question = parse_gold_row(gold_row)
            except ValueError as exc:  # names fields, never values
                raise LabellingError(f"the gold row would not load: {exc}") from None
            if self.gold_rule is not None:  # the set with the row, as the reload checks it
                refused = self.gold_rule([*_parsed(existing.values()), question])
                if refused is not None:
                    raise LabellingError(f"the gold set would not load with this row: {refused}")
            append_whole(fd, prefix + line)  # MaybeWritten: not cut back
            written = True  # the row is in the file: any error from here may follow it
            self.gold_check.appended(before, os.fstat(fd))
        except OSError as exc:
            if written and not isinstance(exc, MaybeWritten):
                raise MaybeWritten(exc.errno, exc.strerror) from exc
            raise
        finally:
            try:
                os.close(fd)  # releases the flock; nothing buffered is left to write
            except OSError as exc:  # e.g. EIO: after an append, the row may be in the file
                if written:
                    raise MaybeWritten(exc.errno, exc.strerror) from exc
                raise
        self._expected = True
        self._known_ids.add(gold_row["id"])
        return gold_row, _question(gold_row)


def row_too_large(gold_row: Mapping[str, Any], size: int) -> str:
    """The message refusing a gold row of ``size`` bytes (its JSONL line, UTF-8, without
    the newline) over :data:`~service.data.goldset.MAX_GOLD_ROW_BYTES` (65,536), which the
    gold-set loader refuses (and with it the whole file: ``/readyz`` 503, ``serve`` exit 2).
    It names the fields over 1 KiB, largest first, with their sizes in bytes, and which of
    them the labeller sets; never their text.

    >>> row = {"question": "?" * 9000, "reference_answer": "\u00e9" * 30000, "kind": "plain"}
    >>> print(row_too_large(row, 69_050))  # doctest: +NORMALIZE_WHITESPACE
    the gold row would be 69,050 bytes of UTF-8, over the gold set's limit of 65,536 bytes
    a row: reference_answer 60,002 bytes, question 9,002 bytes; shorten reference_answer or
    question (send it reworded)
    """
    sizes = {name: len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
             for name, value in gold_row.items()}  # fmt: skip
    large = sorted((n for n, b in sizes.items() if b > 1024), key=lambda n: (-sizes[n], n))
    listed = ", ".join(f"{name} {sizes[name]:,} bytes" for name in large)
    settable = [name for name in large if name in LABEL_FIELDS]
    names = [f"{name} (send it reworded)" if name == "question" else name for name in settable]
    head = ", ".join(names[:-1])
    joined = f"{head} or {names[-1]}" if head else "".join(names)
    advice = (f"shorten {joined}" if settable
              else "the suggestion's question alone is too long to be a gold question")  # fmt: skip
    return (f"the gold row would be {size:,} bytes of UTF-8, over the gold set's limit of "
            f"{MAX_GOLD_ROW_BYTES:,} bytes a row: {listed}; {advice}")  # fmt: skip


def _lock_exclusive(fd: int, deadline: float, timeout_s: float) -> None:
    """``flock(LOCK_EX)`` polled every 20 ms until ``deadline`` (``time.monotonic()``; at
    least one try, also when it has passed).

    Raises:
        OSError: ``EAGAIN`` when another process still holds the lock at ``deadline``; the
            message gives ``timeout_s``, the accept's whole allowance.
    """
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise OSError(errno.EAGAIN, f"locked by another process: the accept waited "
                              f"its {timeout_s:g} s") from None  # fmt: skip
            time.sleep(min(0.02, max(0.0, deadline - time.monotonic())))


def _read_all(fd: int) -> bytes:
    """The whole file at ``fd`` (read with ``pread``, the offset untouched)."""
    parts, offset = [], 0
    while block := os.pread(fd, 1 << 20, offset):
        parts.append(block)
        offset += len(block)
    return b"".join(parts)


def _parsed(rows: Iterable[dict[str, Any]]) -> list[GoldQuestion]:
    """The questions of parsed gold-set rows that load (the file loads whole when an accept
    appends: :class:`~service.data.goldset.GoldFileCheck`)."""
    questions = []
    for row in rows:
        try:
            questions.append(parse_gold_row(row))
        except ValueError:
            continue
    return questions


def _recovered(row: dict[str, Any], path: Path) -> GoldQuestion:
    """The question of a row an earlier accept appended, read as the loader reads it.

    Raises:
        GoldSetUnavailable: the row no longer is a valid gold row (edited by hand?); the
            message names its id and the bad fields, never its text.
    """
    try:
        return parse_gold_row(row)
    except ValueError as exc:
        raise GoldSetUnavailable(
            f"gold-set file {path}: row {str(row.get('id'))[:80]!r} holds this suggestion "
            f"but is not a valid gold row ({exc}); fix it, then accept again"
        ) from None


def _problem(exc: OSError) -> str:
    """``"<what> (<errno name>)"`` of an OS error, without the file name it may carry."""
    name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
    return f"{exc.strerror or type(exc).__name__} ({name})"


def _confirmed(labels: Mapping[str, Any] | None) -> dict[str, Any]:
    """The labeller's labels, checked and scrubbed (:func:`service.pii.scrub`: a role or a
    reference answer holding an e-mail or a self-introduced name was stored as sent — a
    third trial): keys of :data:`LABEL_FIELDS`, ``None`` left out.

    Raises:
        LabellingError: an unknown key, or a value of the wrong shape; the message names
            the field, never the value.
    """
    out: dict[str, Any] = {}
    for name, value in (labels or {}).items():
        if name not in LABEL_FIELDS:
            raise LabellingError(f"labels: unknown field (accepted: {', '.join(LABEL_FIELDS)})")
        if value is None:
            continue
        if name == "answer_contains":
            if not isinstance(value, list | tuple) or not all(
                isinstance(v, str) and v.strip() for v in value
            ):
                raise LabellingError(f"{name}: must be a list of non-blank strings")
            out[name] = [scrub(v).text for v in value]
        elif not isinstance(value, str) or not value.strip():
            raise LabellingError(f"{name}: must be a non-blank string")
        elif name == "question":  # the labeller's rewording, scrubbed like the asked text
            out[name] = scrub(value.strip()).text
        else:  # every label is scrubbed before it is stored, as a reject reason is
            out[name] = scrub(value).text
    return {name: out[name] for name in LABEL_FIELDS if name in out}


def asked_wordings(row: Mapping[str, Any]) -> set[str]:
    """The wordings users asked of a suggestion record as harvest tells wordings apart: its
    shown ``question`` and its ``variants`` (a record kept by an older version may have none),
    scrubbed as a gold row's question is, in their
    :func:`wording_form` (case, spacing and end marks aside; every other sign counts).

    >>> sorted(asked_wordings({"question": "Who won?", "variants": ["mail a@b.co. Who won?"]}))
    ['mail <email>. who won', 'who won']
    """
    texts = [row["question"], *(v for v in row.get("variants") or () if isinstance(v, str))]
    return {wording_form(scrub(text).text) for text in texts}


#: What may end or open a wording without changing it (ASCII and full-width).
_EDGE_MARKS = "?!.,;:…？！。，；：、 \t\n"


def wording_form(text: str) -> str:
    """``text`` with only cosmetic differences taken out, for telling a labeller's rewording
    from a wording users asked: Unicode NFKC, case folded, runs of whitespace as one space,
    and ``?!.,;:…`` (and their full-width forms) at either end dropped. Every other sign
    counts — ``€``/``$``, ``<``/``>``, ``C++``/``C``, ``5%``/``5`` and a placeholder
    ``<NAME>`` against the bare word differ (not harvest's ``comparison_form``, which folds
    every sign to a space).

    >>> wording_form("  Hostel fee refund kab milega?? ")
    'hostel fee refund kab milega'
    >>> wording_form("Can I exchange 100€ to USD?") == wording_form("Can I exchange 100$ to USD?")
    False
    """
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded.strip(_EDGE_MARKS)


def is_reworded(question: str, row: Mapping[str, Any]) -> bool:
    """Whether ``question`` (a ``question`` label, scrubbed) differs from every wording users
    asked of the suggestion record ``row`` (:func:`asked_wordings`): a labeller's text, not a
    user's.

    >>> row = {"question": "Can exchanged be made to EUR?", "variants": []}
    >>> is_reworded("Can I exchange my money to EUR?", row)
    True
    >>> is_reworded("can exchanged be made to EUR", row)  # case and end marks aside
    False
    >>> is_reworded("Can exchanged be made to USD?", row)
    True
    """
    return wording_form(question) not in asked_wordings(row)


def reworded_warning(candidate_id: str, asked_kept: bool) -> str:
    """The accept's warning for a reworded question (the row's ``source`` is ``written``).

    >>> print(reworded_warning("c-1", False))  # doctest: +NORMALIZE_WHITESPACE
    the question was reworded: it differs from every wording users asked, so the row's
    source is "written" (eval reports it with the written questions, not the real ones) and
    it is marked "reworded"; the wording asked is not in the row (a rewording may take out
    personal data the scrubber missed): it stays with suggestion c-1 (GET
    /v1/gold-candidates/c-1); accept with "keep_asked": true to write it as "asked"
    """
    where = ("the wording asked is in the row as \"asked\" (scrubbed)" if asked_kept else
             f"the wording asked is not in the row (a rewording may take out personal data "
             f"the scrubber missed): it stays with suggestion {candidate_id} (GET "
             f"/v1/gold-candidates/{candidate_id}); accept with \"keep_asked\": true to "
             f"write it as \"asked\"")  # fmt: skip
    return ("the question was reworded: it differs from every wording users asked, so the "
            "row's source is \"written\" (eval reports it with the written questions, not the "
            f"real ones) and it is marked \"reworded\"; {where}")  # fmt: skip


def _gold_row(
    gold_id: str,
    row: Mapping[str, Any],
    gold: list[str],
    kind: str,
    labels: Mapping[str, Any],
    keep_asked: bool = False,
) -> dict[str, Any]:
    """The gold-set row of an accepted suggestion: the labeller's labels as fields, the
    unconfirmed guesses under ``suggested`` (module docstring). A ``question`` label that
    differs from every wording users asked (:func:`is_reworded`) makes the row
    ``"source": "written"`` — the text eval retrieves with is the labeller's, not a user's —
    with ``"reworded": true``, and with ``keep_asked`` the shown wording (scrubbed) as
    ``asked``; a ``question`` label equal to an asked wording changes nothing else."""
    asked = scrub(row["question"]).text
    source = "generated" if row.get("source") == "generated" else "real"
    reworded = "question" in labels and is_reworded(labels["question"], row)
    out: dict[str, Any] = {"id": gold_id, "question": asked, "gold": gold, "kind": kind,
                           "source": "written" if reworded else source, **labels}  # fmt: skip
    if reworded:
        out["reworded"] = True
        if keep_asked:
            out["asked"] = asked
    guesses = {name: row[name] for name in GUESSED_FIELDS
               if row.get(name) and name not in labels
               and not (name == "topic" and row[name] == "novel")}  # fmt: skip
    if guesses:
        out["suggested"] = guesses
    out["harvest_id"] = row["id"]
    if row.get("trace_id"):
        out["trace_id"] = row["trace_id"]
    return out


def _question(row: dict[str, Any]) -> GoldQuestion:
    return GoldQuestion(
        id=row["id"], question=row["question"], gold=tuple(row["gold"]), kind=row["kind"],
        source=row.get("source"), role=row.get("role"), language=row.get("language"),
        topic=row.get("topic"), answer_contains=tuple(row.get("answer_contains", ())),
        reference_answer=row.get("reference_answer"),
        harvest_id=row.get("harvest_id"),
    )  # fmt: skip
