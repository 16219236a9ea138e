"""Answer-level dumb checks: free, deterministic, no model in the loop.

Given a file of production answers (``{"id", "answer"}`` JSONL, optional ``"refused": bool``):

* for answerable gold questions with ``answer_contains``: does the answer contain every
  expected string as a whole-token sequence? Both are normalised (NFKC + casefold, every
  punctuation character a space, whitespace runs collapsed: ``normalise(..., separators=
  "punctuation")``), and the expected tokens must appear consecutively in the answer's tokens:
  "No" is not in "I don't know" (``i don t know``), "Paris" is not in "Parisian", "U.S." is in
  "the u.s. rules" (``u s``). A refused answer never counts as containing the answer (trial 11:
  "No" had matched inside "I don't know", 27 refusals counted as hits). A string holding a PII
  placeholder (``call <PHONE>``: an accepted label is scrubbed before it is stored, as every
  label is) is also looked for in the answer as scrubbed, so it matches an answer giving a
  phone number there (a sixth trial's confirmed "call +1 212 555 0199" could never match);
* for unanswerable gold questions: did the system refuse (the right behaviour)?
* for answerable questions: did it refuse anyway (over-refusal)?
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from service.errors import GoldwatchError
from service.pii.scrub import scrub
from service.records import PLACEHOLDERS, GoldQuestion
from service.refusals.detector import RefusalDetector
from service.text import normalise


class AnswersFileError(GoldwatchError, ValueError):
    """The answers file is unreadable; the message names file, line and field."""


@dataclass(frozen=True, slots=True)
class Answer:
    """One production answer: its text and, if the system said so, whether it refused."""

    question_id: str
    text: str
    refused: bool | None = None


def load_answers(path: Path) -> dict[str, Answer]:
    """Read ``{"id", "answer", "refused"?}`` JSONL into ``{question_id: Answer}``.

    Raises:
        AnswersFileError: bad JSON, a missing/wrong-typed field, or a duplicate id.
    """
    answers: dict[str, Answer] = {}
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise AnswersFileError(f"{where}: not valid JSON") from None
            if not isinstance(row, dict):
                raise AnswersFileError(f"{where}: expected a JSON object")
            qid, text, refused = row.get("id"), row.get("answer", ""), row.get("refused")
            if not isinstance(qid, str) or not qid:
                raise AnswersFileError(f"{where}: field 'id' must be a non-empty string")
            if text is None:
                text = ""
            if not isinstance(text, str):
                raise AnswersFileError(f"{where}: field 'answer' must be a string")
            if refused is not None and not isinstance(refused, bool):
                raise AnswersFileError(f"{where}: field 'refused' must be true, false or null")
            if qid in answers:
                raise AnswersFileError(f"{where}: duplicate id {qid!r}")
            answers[qid] = Answer(qid, text, refused)
    return answers


@dataclass(frozen=True)
class AnswerCheckReport:
    """Summary of the answer checks.

    Attributes:
        contains_rate: share of checked answerable questions whose answer holds every
            ``answer_contains`` string as whole tokens and is not refused (``None`` if no
            question has them); the rule is :data:`CONTAINS_RULE`.
        unanswerable_refusal_rate: share of unanswerable questions that were refused
            (``None`` if none).
        over_refusal_rate: share of answerable questions that were refused (``None`` if none).
        per_question: question id → ``{"contains": bool|None, "refused": bool}``.
        missing: gold question ids with no answer in the file.
        unknown: answer ids that are no gold question's (file order): ignored, and said so
            (a mis-keyed answers file otherwise shows only as ``missing``).
    """

    n_answers: int
    contains_rate: float | None
    unanswerable_refusal_rate: float | None
    over_refusal_rate: float | None
    per_question: dict[str, dict[str, bool | None]]
    missing: tuple[str, ...]
    unknown: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        """Return the JSON form."""
        return {
            "n_answers": self.n_answers,
            "contains_rate": self.contains_rate,
            "contains_rule": CONTAINS_RULE,
            "unanswerable_refusal_rate": self.unanswerable_refusal_rate,
            "over_refusal_rate": self.over_refusal_rate,
            "missing": list(self.missing),
            "unknown": list(self.unknown),
            "per_question": self.per_question,
        }


#: How ``contains`` is decided, as written into the JSON report and the CLI help.
CONTAINS_RULE = (
    "every answer_contains string appears in the answer as a whole-token sequence after "
    "NFKC + casefold with punctuation and whitespace collapsed to single spaces "
    "('No' is not in \"I don't know\", 'Paris' not in 'Parisian'); a refused answer never counts"
)


def _has_tokens(text: str, needle: str) -> bool:
    """Whether normalised ``needle`` is a whole-token run of normalised ``text`` (space-padded
    substring test: both are single-space separated after ``normalise``)."""
    return f" {needle} " in f" {text} "


def _contains_all(answer: str, checks: Sequence[str]) -> bool:
    """Whether ``answer`` holds every one of ``checks`` as a whole-token sequence (both
    NFKC + casefold, punctuation and whitespace collapsed: :data:`CONTAINS_RULE`); a check
    holding a PII placeholder (``<PHONE>``) may match the answer as
    :func:`~service.pii.scrub.scrub` leaves it instead (module docstring). A check with no
    token left after normalising (only punctuation) is looked for as a plain substring.

    >>> _contains_all("Call +1 212 555 0199 today", ["call <PHONE>"])
    True
    >>> _contains_all("Call us today", ["call <PHONE>"])
    False
    >>> _contains_all("I don't know.", ["No"]), _contains_all("No, it is not.", ["no"])
    (False, True)
    """
    text = normalise(answer, separators="punctuation")
    scrubbed: str | None = None
    for check in checks:
        needle = normalise(check, separators="punctuation")
        if not needle:
            if normalise(check, separators="whitespace") in normalise(
                answer, separators="whitespace"
            ):
                continue
            return False
        if _has_tokens(text, needle):
            continue
        if not any(placeholder in check for placeholder in PLACEHOLDERS.values()):
            return False
        if scrubbed is None:
            scrubbed = normalise(scrub(answer).text, separators="punctuation")
        if not _has_tokens(scrubbed, needle):
            return False
    return True


def _rate(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def check_answers(
    questions: Sequence[GoldQuestion],
    answers: Mapping[str, Answer],
    detector: RefusalDetector | None = None,
) -> AnswerCheckReport:
    """Run the dumb checks of every gold question that has an answer.

    An explicit ``refused`` flag in the answers file wins over the pattern detector. A refused
    answer's ``contains`` is ``False`` whatever it says (:data:`CONTAINS_RULE`).
    """
    detector = detector or RefusalDetector()
    asked = {q.id for q in questions}
    per_question: dict[str, dict[str, bool | None]] = {}
    contains: list[bool] = []
    refused_unanswerable: list[bool] = []
    refused_answerable: list[bool] = []
    for q in questions:
        answer = answers.get(q.id)
        if answer is None:
            continue
        refused = answer.refused if answer.refused is not None else detector.is_refusal(answer.text)
        hit: bool | None = None
        if q.answerable and q.answer_contains:
            hit = not refused and _contains_all(answer.text, q.answer_contains)
            contains.append(hit)
        (refused_answerable if q.answerable else refused_unanswerable).append(refused)
        per_question[q.id] = {"contains": hit, "refused": refused}
    return AnswerCheckReport(
        n_answers=len(per_question),
        contains_rate=_rate(contains),
        unanswerable_refusal_rate=_rate(refused_unanswerable),
        over_refusal_rate=_rate(refused_answerable),
        per_question=per_question,
        missing=tuple(q.id for q in questions if q.id not in answers),
        unknown=tuple(i for i in answers if i not in per_question and i not in asked),
    )


def unknown_answers_text(unknown: list[str]) -> str:
    """``"2 answers are for ids not in the gold set, ignored: ghost-1, ghost-2"`` (the first
    five ids, then how many more).

    >>> unknown_answers_text(["a", "b", "c", "d", "e", "f", "g"])
    '7 answers are for ids not in the gold set, ignored: a, b, c, d, e and 2 more'
    >>> unknown_answers_text(["ghost-1"])
    '1 answer is for an id not in the gold set, ignored: ghost-1'
    """
    shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
    noun = "answer is for an id" if len(unknown) == 1 else "answers are for ids"
    return f"{len(unknown)} {noun} not in the gold set, ignored: {shown}"
