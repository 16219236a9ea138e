"""The gold set: loading (JSONL or TREC qrels + topics), validation, writing, versioning.

Gold-set row (one JSON object per line, UTF-8, blank lines skipped)::

    {"id": "q-017", "question": "...", "gold": ["p-0412"], "kind": "plain",
     "answer_contains": ["semester"], "reference_answer": "...", "source": "real",
     "doc_type": "scanned_pdf", "role": "parent", "language": "hi-Latn", "topic": "fees"}

* ``id``, ``question``: required non-blank strings. ``gold``: required list of passage ids;
  ``[]`` marks an unanswerable question. Graded relevance may be given as an object
  ``{"p-0412": 2}`` (every value ``> 0``).
* ``kind`` defaults to ``"unanswerable"`` when ``gold`` is empty, ``"plain"`` otherwise; an
  explicit ``"unanswerable"`` or ``"off-topic"`` (a question the corpus is not about at all:
  what the out-of-scope detector is calibrated on) with non-empty ``gold`` is an error, and so is a
  ``"multi-passage"`` row with fewer than two gold passages (:func:`kind_problem`).
* ``source`` is one of ``real``, ``written``, ``generated``. Unknown fields are ignored
  (among them ``reworded`` and ``asked``, which an accept with a reworded question writes
  beside ``"source": "written"``: :func:`service.harvest.labelling.is_reworded`).
* A row of ``goldwatch candidates export`` still ``"status": "suggested"`` without a ``kind``
  is refused: nobody labelled it, and its ``gold: []`` would make it unanswerable.
* ``harvest_id`` (written by an accept: the harvested suggestion's id) marks a row the
  labelling API appended (:attr:`GoldQuestion.harvest_id`; the topic labels' rule does not
  count such a row without a ``topic`` against the labelled ones); a non-string is ignored.
* ``language`` is read as live traffic is labelled: canonical case, region folded (``en-US``,
  ``en-GB`` → ``en``; the script is kept: ``hi-Latn``, ``zh-Hant``).
* The shape ``{"id", "question", "relevantDocs", "answerContains"}`` is accepted too.
* A row is at most :data:`MAX_GOLD_ROW_BYTES` (64 KiB) of UTF-8.

Errors name the file, line, field and id — never the question text (it may hold personal data).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from service.data.corpus import (
    MAX_LISTED_PROBLEMS,
    Corpus,
    DataFileError,
    content_version,
    non_blank,
    validated_rows,
    where,
)
from service.evaluation.trec import read_qrels, read_topics
from service.language.detector import LABELS
from service.language.tags import is_language_tag, language_key
from service.pii.scrub import scrub
from service.records import KINDS, GoldQuestion, Qrels
from service.text.normalise import normalise

logger = logging.getLogger(__name__)

#: Longest gold-set row (one JSONL line, UTF-8 bytes): 64 KiB, room for a long question with
#: its reference answer. A longer row is an error naming its file and line, found before the
#: row is parsed (a pasted 5 MB "question" would otherwise be retrieved for minutes).
MAX_GOLD_ROW_BYTES = 64 << 10

#: The primary subtags a gold row's language may have: those of the language stage's labels.
_LABEL_PRIMARIES: frozenset[str] = frozenset({label.split("-")[0] for label in LABELS} | {"und"})
_OPTIONAL_FIELDS = ("reference_answer", "source", "doc_type", "role", "language", "topic")


class GoldSetError(DataFileError):
    """A gold-set file is malformed; ``problems`` lists ``"<file>, line <n>, field '<f>': ..."``."""


class _GoldRow(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    id: str
    question: str
    gold: dict[str, int] = Field(validation_alias=AliasChoices("gold", "relevantDocs"))
    kind: str | None = None
    answer_contains: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("answer_contains", "answerContains")
    )
    reference_answer: str | None = None
    source: Literal["real", "written", "generated"] | None = None
    doc_type: str | None = None
    role: str | None = None
    language: str | None = None
    topic: str | None = None
    # written by an accept (service.harvest.labelling); any other value is ignored, as before
    harvest_id: Any = None
    # "suggested" on a row of `goldwatch candidates export` (service.harvest.export); any
    # other value is ignored
    status: Any = None

    _check_non_blank = field_validator("id", "question", "kind")(non_blank)

    @field_validator("language")
    @classmethod
    def _canonical_language(cls, value: str | None) -> str | None:
        """A language tag as live traffic is labelled: canonical case, region folded
        (``hi-latn`` → ``hi-Latn``, ``en-us`` → ``en``, ``zh-Hant-TW`` → ``zh-Hant``;
        :func:`~service.language.tags.language_key`), so drift, shares, per-language quality
        and metric labels compare like with like.

        Raises:
            ValueError: not a language tag by the accept API's check
                (:func:`~service.language.tags.is_language_tag`; ``Deutsch (Schweiz)`` would
                be a gold language of its own that live traffic never shows), or its primary
                subtag is none of the language stage's labels' (``english``: :data:`LABELS
                <service.language.detector.LABELS>`, and ``und``); the message does not
                repeat the value."""
        if value is None:
            return None
        if not is_language_tag(value):
            raise ValueError("must be a BCP 47 language tag such as 'de', 'de-CH' or 'hi-Latn'")
        key = language_key(value)
        if key.split("-")[0].lower() not in _LABEL_PRIMARIES:
            # "english" is a well-formed tag, but no live question is ever labelled with it:
            # its rows would be a gold language of their own (trial 12; the accept API refuses
            # it, and now so does the file)
            raise ValueError("is not a language the language stage labels: use a langdetect "
                             "code such as 'en', 'de' or 'es' (or 'hi-Latn', 'und')")  # fmt: skip
        return key

    @field_validator("gold", mode="plain")
    @classmethod
    def _parse_gold(cls, value: object) -> dict[str, int]:
        items: list[tuple[object, object]]
        if isinstance(value, list):
            items = [(doc_id, 1) for doc_id in value]
        elif isinstance(value, dict):
            items = list(value.items())
        else:
            raise ValueError("must be a list of passage ids or an object {passage id: relevance}")
        out: dict[str, int] = {}
        for pos, (doc_id, rel) in enumerate(items):
            if not isinstance(doc_id, str) or not doc_id.strip():
                raise ValueError(f"item {pos} must be a non-empty string passage id")
            if isinstance(rel, bool) or not isinstance(rel, int) or rel <= 0:
                raise ValueError(f"relevance of item {pos} must be an integer > 0")
            if doc_id in out:
                raise ValueError(f"item {pos} repeats passage id {doc_id!r}")
            out[doc_id] = rel
        return out

    @field_validator("answer_contains")
    @classmethod
    def _check_answer_contains(cls, value: list[str]) -> list[str]:
        for pos, needle in enumerate(value):
            if not needle.strip():
                raise ValueError(f"item {pos} must not be empty or blank")
        return value

    def to_question(self) -> GoldQuestion:
        kind = self.kind or ("plain" if self.gold else "unanswerable")
        graded = any(rel != 1 for rel in self.gold.values())
        optional = {name: getattr(self, name) for name in _OPTIONAL_FIELDS}
        return GoldQuestion(
            id=self.id,
            question=self.question,
            gold=tuple(self.gold),
            kind=kind,
            relevance=dict(self.gold) if graded else {},
            answer_contains=tuple(self.answer_contains),
            **optional,
            harvest_id=self.harvest_id if isinstance(self.harvest_id, str) else None,
        )


def row_version(question: GoldQuestion) -> str:
    """The version of one gold row: first 12 hex chars of the sha256 of its canonical content
    (as in :attr:`GoldSet.version`: id, question, gold passages with their grades, kind,
    ``answer_contains`` and the optional fields), so a row is changed exactly when this is.

    >>> row_version(GoldQuestion("q-1", "When are fees due?", ("p-1",))) == row_version(
    ...     GoldQuestion("q-1", "When are fees due?", ("p-1",)))
    True
    >>> row_version(GoldQuestion("q-1", "When are fees due?", ("p-1", "p-2"))) == row_version(
    ...     GoldQuestion("q-1", "When are fees due?", ("p-1",)))
    False
    """
    return content_version([{**_canonical_row(question),
                             "gold": dict(sorted(question.qrels_row().items()))}])  # fmt: skip


def row_content(question: GoldQuestion) -> str:
    """The version of one gold row's content without its id (12 hex chars, as
    :func:`row_version` on the row with the id left out): two rows that differ only in their
    id have the same content, so a renumbered (or reordered) gold set can be matched to the
    rows it renamed (:mod:`service.quality.stage` carries their live measurements over).

    >>> row_content(GoldQuestion("q-1", "When are fees due?", ("p-1",))) == row_content(
    ...     GoldQuestion("n-007", "When are fees due?", ("p-1",)))
    True
    >>> row_content(GoldQuestion("q-1", "When are fees due?", ("p-1",))) == row_content(
    ...     GoldQuestion("q-1", "When are the fees due?", ("p-1",)))
    False
    """
    row = _canonical_row(question)
    del row["id"]
    return content_version([{**row, "gold": dict(sorted(question.qrels_row().items()))}])


def content_order(questions: Iterable[GoldQuestion]) -> Callable[[str], str]:
    """A sort key of a gold id: its row's :func:`row_content` (``""`` for an id not among
    ``questions``), for the seeded resampling of a paired comparison
    (:func:`service.evaluation.compare.paired_comparison`'s ``order``), so its interval and
    p-value do not move with a renumbering or reordering of the gold set.

    >>> key = content_order([GoldQuestion("q-2", "When are fees due?", ("p-1",))])
    >>> key("q-2") == row_content(GoldQuestion("n-1", "When are fees due?", ("p-1",))), key("x")
    (True, '')
    """
    contents = {q.id: row_content(q) for q in questions}
    return lambda gold_id: contents.get(gold_id, "")


def _canonical_row(question: GoldQuestion) -> dict[str, Any]:
    row: dict[str, Any] = {"id": question.id, "question": question.question}
    qrels_row = question.qrels_row()
    graded = any(rel != 1 for rel in qrels_row.values())
    row["gold"] = qrels_row if graded else list(question.gold)
    row["kind"] = question.kind
    if question.answer_contains:
        row["answer_contains"] = list(question.answer_contains)
    for name in _OPTIONAL_FIELDS:
        if getattr(question, name) is not None:
            row[name] = getattr(question, name)
    return row


@dataclass(frozen=True)
class GoldSet:
    """An immutable gold set: questions in file order, with unique ids.

    Attributes:
        questions: the :class:`~service.records.GoldQuestion` records.
        path: the file it came from, if any.
        by_id: ``{question id: GoldQuestion}`` (derived).
        version: the ``gold_set_version`` — first 12 hex chars of the sha256 of the canonical
            content (rows sorted by id, gold ids sorted), independent of file order and shape.

    Raises:
        ValueError: two questions share an id.

    >>> gs = GoldSet((GoldQuestion("q-1", "When are fees due?", ("p-1",)),
    ...               GoldQuestion("q-2", "Who won in 1990?", (), kind="unanswerable")))
    >>> len(gs), [q.id for q in gs.unanswerable()], gs.qrels()
    (2, ['q-2'], {'q-1': {'p-1': 1}})
    """

    questions: tuple[GoldQuestion, ...]
    path: Path | None = None
    by_id: Mapping[str, GoldQuestion] = field(init=False, repr=False, compare=False)
    version: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        questions = tuple(self.questions)
        by_id: dict[str, GoldQuestion] = {}
        for question in questions:
            if question.id in by_id:
                raise ValueError(f"duplicate question id {question.id!r}")
            by_id[question.id] = question
        rows = [
            {**_canonical_row(q), "gold": dict(sorted(q.qrels_row().items()))}
            for q in sorted(questions, key=lambda q: q.id)
        ]
        object.__setattr__(self, "questions", questions)
        object.__setattr__(self, "by_id", by_id)
        object.__setattr__(self, "version", content_version(rows))

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[GoldQuestion]:
        return iter(self.questions)

    def answerable(self) -> tuple[GoldQuestion, ...]:
        """Questions with at least one gold passage, in order."""
        return tuple(q for q in self.questions if q.answerable)

    def unanswerable(self) -> tuple[GoldQuestion, ...]:
        """Questions with ``gold == ()``, in order (reported apart from recall / MRR)."""
        return tuple(q for q in self.questions if not q.answerable)

    def qrels(self) -> Qrels:
        """``{question id: {passage id: relevance}}`` for answerable questions (graded kept)."""
        return {q.id: q.qrels_row() for q in self.questions if q.answerable}


#: Kinds that may have no gold passage: unanswerable, off-topic (the corpus is not about it),
#: and role-restricted asked by a role that may read none of the answer.
_EMPTY_GOLD_KINDS = ("unanswerable", "off-topic", "role-restricted")

#: Fewest gold passages of a kind: a multi-passage question needs a rule and its exception.
MIN_GOLD: Mapping[str, int] = {"multi-passage": 2}


def kind_problem(kind: str | None, gold: Collection[str]) -> tuple[str, str] | None:
    """The first way a row's ``kind`` does not fit its ``gold`` passage ids, as ``(field,
    what)``, or ``None`` when they fit. ``kind=None`` (inferred from ``gold``) always fits.

    Rules: ``kind`` is one of :data:`~service.records.KINDS`; ``unanswerable`` and
    ``off-topic`` have no gold passage; only they and ``role-restricted`` may have none;
    ``multi-passage`` has at least :data:`MIN_GOLD` ``["multi-passage"]`` (2). The message
    quotes only the kind and counts, never passage ids or question text.

    >>> kind_problem("multi-passage", ["p-1"])
    ('gold', "kind 'multi-passage' needs at least 2 gold passages, has 1")
    >>> kind_problem("plain", ["p-1"]) is None, kind_problem(None, []) is None
    (True, True)
    """
    if kind is None:
        return None
    if kind not in KINDS:
        return "kind", f"must be one of {', '.join(KINDS)}"
    if kind in ("unanswerable", "off-topic") and gold:
        return "kind", f"{kind!r} but gold is not empty"
    if kind not in _EMPTY_GOLD_KINDS and not gold:
        return "gold", f"empty (unanswerable) but kind is {kind!r}; use kind 'unanswerable'"
    least = MIN_GOLD.get(kind, 0)
    if gold and len(gold) < least:
        return "gold", f"kind {kind!r} needs at least {least} gold passages, has {len(gold)}"
    return None


#: Why an exported suggestion no labeller finished is refused (:func:`_label_problem`).
UNLABELLED = (
    "an exported suggestion not labelled yet (status 'suggested', no kind): give it gold "
    "and kind — the labeller's verdict, 'unanswerable' too — or leave the row out"
)


def _label_problem(row: _GoldRow) -> tuple[str, str] | None:
    """A row of ``goldwatch candidates export`` that nobody labelled — ``status`` still
    ``"suggested"`` and no ``kind`` — would load as an *unanswerable* question (its ``gold``
    is the export's ``[]``): a verdict no person gave. So ``kind`` is the labeller's mark:
    with it the row loads (``gold: []`` and kind ``unanswerable`` is a verdict), without it
    the row is refused (trial finding 10 of the sixteenth session)."""
    if row.status == "suggested" and row.kind is None:
        return "kind", UNLABELLED
    return kind_problem(row.kind, row.gold)


def _row_problems(path: Path, lineno: int, row: _GoldRow) -> list[str]:
    problem = _label_problem(row)
    if problem is None:
        return []
    name, what = problem
    return [f"{where(path, lineno, row.id)}, field '{name}': {what}"]


def parse_gold_row(obj: object) -> GoldQuestion:
    """One gold-set row (a parsed JSON object) as :func:`load_gold_set` reads it.

    Raises:
        ValueError: the row is not an object, misses a field, has a wrong type, or its kind
            does not fit its gold passages (the message names fields, never values).
    """
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    try:
        row = _GoldRow.model_validate(obj)
    except ValidationError as exc:
        names = sorted({".".join(map(str, e["loc"])) or "?" for e in exc.errors()})
        raise ValueError(f"invalid field(s): {', '.join(names)}") from None
    problem = _label_problem(row)
    if problem is not None:
        raise ValueError(f"field '{problem[0]}': {problem[1]}")
    return row.to_question()


def load_gold_set(path: Path | str) -> GoldSet:
    """Read a gold-set JSONL file (format in the module docstring) into a :class:`GoldSet`.

    Raises:
        GoldSetError: listing every problem as ``"<file>, line <n> (id '<id>'), field '<f>':
            <what>"`` (first 20, then ``"... and N more"``): a row over
            :data:`MAX_GOLD_ROW_BYTES`, invalid JSON, non-object rows,
            missing/blank ``id`` or ``question``, missing ``gold``, wrong types, unknown
            ``source``, a ``kind`` that does not fit ``gold`` (:func:`kind_problem`), an
            exported suggestion nobody labelled (``status: "suggested"`` and no ``kind``),
            duplicate ids (naming both lines), or an empty file.
        OSError: the file can't be read.
    """
    path = Path(path)
    problems: list[str] = []
    questions: list[GoldQuestion] = []
    for lineno, row in validated_rows(path, _GoldRow, problems, MAX_GOLD_ROW_BYTES):
        row_problems = _row_problems(path, lineno, row)
        problems.extend(row_problems)
        if not row_problems:
            questions.append(row.to_question())
    if not questions and not problems:
        problems.append(f"{path}: contains no questions")
    if problems:
        raise GoldSetError(path, problems)
    return GoldSet(tuple(questions), path=path)


def gold_file_problem(path: Path | str) -> str | None:
    """Why ``path`` does not load as :func:`load_gold_set` reads it, or ``None`` when it does.

    The message names the file, the first bad line and the problem, never the line's content:
    ``"gold-set file no longer loads: <file>, line <n>: <problem> (and N more)"``, or
    ``"gold-set file <file> cannot be read: <reason>"``.
    """
    try:
        load_gold_set(path)
    except DataFileError as exc:
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        first = exc.problems[0] if exc.problems else str(path)
        return f"gold-set file no longer loads: {first}{more}"
    except OSError as exc:
        return f"gold-set file {path} cannot be read: {exc.strerror or type(exc).__name__}"
    return None


def _file_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def gold_file_key(path: Path | str) -> tuple[int, ...]:
    """The file's identity, size and mtime as :class:`GoldFileCheck` compares them (device,
    inode, bytes, mtime in ns; ``(-1, errno)`` when it cannot be ``stat``-ed): a changed key
    means the file may have changed (an edit, a replacement, an append). One ``stat``."""
    try:
        return _file_key(os.stat(path))
    except OSError as exc:
        return (-1, exc.errno or 0)


class GoldFileCheck:
    """Whether a gold-set file loads whole (:func:`gold_file_problem`), the one answer that
    readiness (``/readyz``, ``/v1/status``) and the accept path (:mod:`service.harvest.labelling`)
    share, so they always agree.

    The file is parsed again only when its identity (device, inode), size or mtime changed
    since the last check, so a check is a ``stat``. An append known to keep the file whole
    (:meth:`appended`) moves the remembered answer to the file's new size without parsing.
    Thread-safe.

    Args:
        path: the gold-set JSONL file.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._checked: tuple[tuple[int, ...], str | None] | None = None

    def problem(self) -> str | None:
        """:func:`gold_file_problem` of the file as it is now (cached by identity, size and
        mtime); a new problem is logged once, as an error."""
        key = gold_file_key(self.path)
        with self._lock:
            if self._checked is not None and self._checked[0] == key:
                return self._checked[1]
            problem = gold_file_problem(self.path)
            self._checked = (key, problem)
        if problem is not None:
            logger.error("%s", problem)
        return problem

    def last_problem(self) -> str | None:
        """The answer of the last :meth:`problem` (``None`` before the first): no I/O and no
        wait for a check in progress, for a scrape on the HTTP event loop."""
        checked = self._checked
        return None if checked is None else checked[1]

    def appended(self, before: os.stat_result, after: os.stat_result) -> None:
        """Record that the file, as it was at ``before`` (an ``fstat`` under the writer's
        lock), got one more complete row that :func:`parse_gold_row` reads and whose id no
        row has, ending at ``after``: if it loaded whole at ``before`` it loads whole at
        ``after`` (no row-spanning rule of the loader can fail by it), so the answer is kept
        without a parse. Otherwise nothing is recorded (the next check parses)."""
        with self._lock:
            if self._checked == (_file_key(before), None):
                self._checked = (_file_key(after), None)


def write_gold_set(questions: GoldSet | Iterable[GoldQuestion], path: Path | str) -> None:
    """Write questions as gold-set JSONL that :func:`load_gold_set` reads back identically.

    ``gold`` is a list, or an object ``{id: relevance}`` when any relevance differs from 1;
    ``None`` optional fields and empty ``answer_contains`` are left out.
    """
    lines = [json.dumps(_canonical_row(q), ensure_ascii=False) + "\n" for q in questions]
    Path(path).write_text("".join(lines), encoding="utf-8")


def load_trec_gold_set(
    qrels_path: Path | str, topics_path: Path | str | None = None, *, topic_field: str = "title"
) -> GoldSet:
    """Build a gold set from TREC qrels and topics (see :mod:`service.evaluation.trec` for formats).

    Every topic becomes one question (text = its ``topic_field``), in topics-file order;
    without a topics file, every judged topic becomes a question whose text is its id. Its
    gold is the docs judged ``rel > 0``, with graded relevance kept in ``relevance``; a topic
    whose judgments are all ``rel <= 0`` (or that has none, logged as a warning) is
    ``kind="unanswerable"``. Judgments with ``rel <= 0`` are otherwise dropped.

    Raises:
        GoldSetError: qrels judge topics that the topics file lacks.
        TrecFormatError: either file is malformed.
    """
    qrels = read_qrels(qrels_path)
    if topics_path is None:
        topics = {qid: qid for qid in qrels}
    else:
        topics = read_topics(topics_path, field=topic_field)
    orphans = [qid for qid in qrels if qid not in topics]
    if orphans:
        problems = [
            f"{qrels_path}: topic {qid!r} is judged but missing from {topics_path}"
            for qid in orphans
        ]
        raise GoldSetError(qrels_path, problems)
    unjudged = [qid for qid in topics if qid not in qrels]
    if unjudged:
        logger.warning(
            "%d topic(s) have no judgments, treated as unanswerable: %s",
            len(unjudged),
            ", ".join(unjudged[:MAX_LISTED_PROBLEMS]),
        )
    questions = []
    for qid, text in topics.items():
        relevant = {doc: rel for doc, rel in qrels.get(qid, {}).items() if rel > 0}
        kind = "plain" if relevant else "unanswerable"
        questions.append(GoldQuestion(qid, text, tuple(relevant), kind, relevance=relevant))
    return GoldSet(tuple(questions), path=Path(qrels_path))


def validate_against_corpus(gold_set: GoldSet, corpus: Corpus) -> list[str]:
    """Return one warning per question whose gold ids are absent from ``corpus``; log them.

    Warning format: ``"question 'q-1': gold id(s) not in corpus <version>: 'p-9', 'p-10'"``.
    Missing ids are not fatal (the corpus may lag the gold set) but such questions can never
    be retrieved, so recall is capped. One summary warning is logged (first 20 listed).
    """
    warnings = []
    for question in gold_set:
        missing = [doc_id for doc_id in question.gold if doc_id not in corpus]
        if missing:
            ids = ", ".join(repr(doc_id) for doc_id in missing)
            warnings.append(
                f"question {question.id!r}: gold id(s) not in corpus "
                f"{corpus.path or corpus.version}: {ids}"
            )
    if warnings:
        shown = "\n  ".join(warnings[:MAX_LISTED_PROBLEMS])
        more = len(warnings) - MAX_LISTED_PROBLEMS
        tail = f"\n  ... and {more} more" if more > 0 else ""
        logger.info(
            "%d gold question(s) cite passages missing from the corpus:\n  %s%s",
            len(warnings),
            shown,
            tail,
        )
    return warnings


def repeated_questions(gold_set: GoldSet, shown: int = 3) -> str | None:
    """One line when the gold set asks the same question in more than one row, or ``None``.

    "The same" is the text known-question matching compares (NFKC, case folded, punctuation
    and whitespace collapsed: :func:`service.text.normalise.normalise`), for the same
    ``role`` (rows that differ by role are the ACL's own cases: the answer a student may see
    is not the one staff may). Each row is scored on its own, so two rows
    with different gold passages ask one retriever for two rankings of one question: neither
    can be met in full, and the pair counts twice in every mean (trial 13). The line names
    the groups' row ids (first ``shown`` groups), never the question's text, e.g.
    ``"2 questions appear in more than one gold-set row (rows 'g-1', 'g-9'; 'g-4', 'g-5'),
    1 of them with different gold passages: each row is scored on its own, so a retriever
    cannot meet both; merge such rows into one with all their gold passages"``.

    >>> from service.records import GoldQuestion
    >>> rows = [GoldQuestion("a", "When was X built?", ("p1",)),
    ...         GoldQuestion("b", "when was  x BUILT?", ("p2",)),
    ...         GoldQuestion("c", "When was X built?", ("p1",), role="staff")]
    >>> repeated_questions(GoldSet(tuple(rows)))  # doctest: +NORMALIZE_WHITESPACE
    "1 question appears in more than one gold-set row (rows 'a', 'b'), 1 of them with
    different gold passages: each row is scored on its own, so a retriever cannot meet
    both; merge such rows into one with all their gold passages"
    """
    groups: dict[tuple[str, str | None], list[GoldQuestion]] = {}
    for question in gold_set:
        text = normalise(question.question, separators="punctuation")  # as known questions
        groups.setdefault((text, question.role), []).append(question)
    repeated = [rows for rows in groups.values() if len(rows) > 1]
    if not repeated:
        return None
    differ = sum(1 for rows in repeated if len({frozenset(q.gold) for q in rows}) > 1)
    named = "; ".join(", ".join(repr(q.id) for q in rows) for rows in repeated[:shown])
    more = "; …" if len(repeated) > shown else ""
    many = len(repeated) > 1
    head = (f"{len(repeated)} question{'s' if many else ''} appear{'' if many else 's'} in "
            f"more than one gold-set row (rows {named}{more})")  # fmt: skip
    if differ:
        return (f"{head}, {differ} of them with different gold passages: each row is scored "
                "on its own, so a retriever cannot meet both; merge such rows into one with "
                "all their gold passages")  # fmt: skip
    return f"{head}, with the same gold passages: each counts in every mean once per row"


def corpus_coverage(gold_set: GoldSet, corpus: Corpus, shown: int = 5) -> str | None:
    """Check that ``corpus`` holds the gold set's gold passages.

    Returns:
        ``None`` when every gold id is in the corpus; else ONE warning line with the number
        of missing ids, the number of questions citing them and the first ``shown`` ids,
        e.g. ``"3 gold id(s) of 2 question(s) are not in corpus c.jsonl (first: 'p-9',
        'p-10', 'p-11'); those questions can never be retrieved, so recall is capped"``.

    Raises:
        GoldSetError: the gold set names gold passages and the corpus holds none of them
            (a gold set scored against the wrong corpus would score 0 everywhere).
    """
    cited = list(dict.fromkeys(doc_id for q in gold_set for doc_id in q.gold))
    missing = [doc_id for doc_id in cited if doc_id not in corpus]
    where = corpus.path or f"version {corpus.version}"
    if not missing:
        return None
    if len(missing) == len(cited):
        first = ", ".join(repr(doc_id) for doc_id in missing[:shown])
        raise GoldSetError(
            gold_set.path or "gold set",
            [
                f"none of its {len(cited)} gold passage id(s) is in corpus {where} (first: "
                f"{first}): is it the corpus the gold set was written for?"
            ],
        )
    questions = sum(1 for q in gold_set if any(doc_id not in corpus for doc_id in q.gold))
    first = ", ".join(repr(doc_id) for doc_id in missing[:shown])
    more = ", …" if len(missing) > shown else ""
    return (f"{len(missing)} gold id(s) of {questions} question(s) are not in corpus {where} "
            f"(first: {first}{more}); those questions can never be retrieved, so recall is "
            "capped")  # fmt: skip


def personal_data(gold_set: GoldSet, shown: int = 5) -> str | None:
    """One line when gold questions hold personal data (:func:`service.pii.scrub.scrub`'s
    kinds: e-mail, phone, card, name with a cue...), or ``None``.

    eval writes gold questions into its outputs (the misses file, the HTML report's misses
    and unanswerable tables) scrubbed, as the live path writes every question; the line says
    so and names the rows (first ``shown`` ids) and the kinds, never the text, so the user
    can clean the gold set itself (trial 14: an e-mail address copied from a gold row into
    ``--misses`` and the HTML report).

    >>> from service.records import GoldQuestion
    >>> rows = [GoldQuestion("a", "mail bob@example.com the fee receipt?", ("p1",)),
    ...         GoldQuestion("b", "When was X built?", ("p2",))]
    >>> personal_data(GoldSet(tuple(rows)))  # doctest: +NORMALIZE_WHITESPACE
    "1 gold question holds personal data (row 'a': email): eval's outputs show it scrubbed;
    clean the gold set itself"
    """
    found = [(q.id, sorted(kind for kind, n in scrub(q.question).counts.items() if n))
             for q in gold_set]  # fmt: skip
    found = [(qid, kinds) for qid, kinds in found if kinds]
    if not found:
        return None
    named = ", ".join(f"{qid!r}: {'/'.join(kinds)}" for qid, kinds in found[:shown])
    more = f", and {len(found) - shown} more" if len(found) > shown else ""
    many = len(found) > 1
    return (f"{len(found)} gold question{'s' if many else ''} hold{'' if many else 's'} "
            f"personal data (row{'s' if many else ''} {named}{more}): eval's outputs show "
            f"{'them' if many else 'it'} scrubbed; clean the gold set itself")  # fmt: skip
