"""The question bank of the demo query log: ``questions.yaml`` beside this module, read and checked.

The questions themselves are data, written by hand in ``questions.yaml`` (its header comment
describes every field); :mod:`service.demo.querylog` draws the log's questions from them. This
module turns the file into typed, frozen records and refuses a file it cannot trust, so a typo
in the bank fails loudly instead of quietly changing the demo log:

* :class:`Intent` — one thing users ask about (topic, name, scope, schedule) with its questions
  per language label (``en``, ``hi-Latn``, ``hi``);
* :class:`PlantedPii` — a question with made-up personal data, placed at a fixed share of the
  log for the scrubber to catch;
* :func:`load_question_bank` reads and validates any bank file; :func:`question_bank` is the
  packaged one, read once.

A bad file raises :class:`QuestionBankError` listing every problem as ``"<file>, line <n>,
<entry>, field '<name>': <what>"``, for example ``"questions.yaml, line 77, intents[1]
(fees/instalments), field 'scope': unknown value, input should be 'in', 'unanswerable' or 'out'"``.

>>> bank = question_bank()
>>> bank.intents[0].topic, bank.intents[0].name, bank.intents[0].scope
('fees', 'tuition', 'in')
>>> bank.intents[0].questions["en"][0]
'How much is the B.Tech fee for one year?'
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from service.data.corpus import DataFileError
from service.demo import DEMO_DIR
from service.records import PII_TYPES

__all__ = [
    "DEFAULT_PATH", "LANGUAGES", "ROLES", "Intent", "PlantedPii", "QuestionBank",
    "QuestionBankError", "Scope", "load_question_bank", "question_bank",
]  # fmt: skip

Scope = Literal["in", "unanswerable", "out"]
Language = Literal["en", "hi-Latn", "hi"]
Role = Literal["student", "parent", "staff"]

#: Language labels, as in the gold set: English, romanised Hindi / Hinglish, Hindi (Devanagari).
LANGUAGES: tuple[str, ...] = get_args(Language)
#: The askers' roles, as in the demo corpus's passage ACLs.
ROLES: tuple[str, ...] = get_args(Role)
#: The packaged bank.
DEFAULT_PATH: Path = DEMO_DIR / "questions.yaml"

#: A topic or intent name: lower-case words joined by single hyphens (``late-fee``).
_LABEL = r"^[a-z0-9]+(-[a-z0-9]+)*$"


@dataclass(frozen=True)
class Intent:
    """One thing users ask about, with its questions per language.

    Attributes:
        topic: topic label, as in the gold set (``fees``, ``hostel``, ..., ``out-of-scope``).
        name: short intent name, unique within the topic.
        scope: ``"in"`` (answerable from the demo corpus), ``"unanswerable"`` (the college's
            business, but the corpus has no answer: refuse) or ``"out"`` (not the college's
            business: refuse).
        questions: ``{language label: questions}`` in :data:`LANGUAGES` order; a language may
            be missing, a present one has at least one question.
        schedule: answered from the SEE timetable (the document phase C removes).
    """

    topic: str
    name: str
    scope: Scope
    questions: dict[str, tuple[str, ...]]
    schedule: bool = False


@dataclass(frozen=True)
class PlantedPii:
    """A question with personal data, placed at a fixed share of the log.

    Attributes:
        at: position as a share of the log, ``0 <= at < 1``; the generator puts it at event
            ``round(at * n)`` of ``n``.
        question: the question text, with its personal data (used as written).
        topic, intent: the intent it belongs to (an :class:`Intent`'s topic and name).
        language: its language label (:data:`LANGUAGES`).
        role: the asker's role (:data:`ROLES`).
        pii: the kinds of personal data in it, as :mod:`service.pii` names them
            (:data:`service.records.PII_TYPES`).
    """

    at: float
    question: str
    topic: str
    intent: str
    language: str
    role: str
    pii: tuple[str, ...]


@dataclass(frozen=True)
class QuestionBank:
    """A validated question bank, in file order (the generator's draws depend on it).

    Attributes:
        intents: every intent; ``(topic, name)`` pairs are unique and no question appears
            twice in the bank.
        planted_pii: the planted questions; their ``at`` values are distinct and each names
            an intent of :attr:`intents`.
        path: the file it was read from.
    """

    intents: tuple[Intent, ...]
    planted_pii: tuple[PlantedPii, ...]
    path: Path


class QuestionBankError(DataFileError):
    """A question-bank file is malformed; ``problems`` lists ``"<file>, line <n>, <entry>,
    field '<f>': <what>"`` strings (:class:`service.data.corpus.DataFileError`)."""


def _no_outer_space(value: str) -> str:
    if not value.strip() or value != value.strip():
        raise ValueError("must not be blank or start or end with spaces")
    return value


def _known_pii(kinds: list[str]) -> list[str]:
    unknown = sorted(set(kinds) - set(PII_TYPES))
    if unknown:
        raise ValueError(f"unknown kind(s) {unknown}; known: {', '.join(PII_TYPES)}")
    if len(set(kinds)) != len(kinds):
        raise ValueError("repeats a kind")
    return kinds


_Label = Annotated[str, Field(pattern=_LABEL)]
_Text = Annotated[str, AfterValidator(_no_outer_space)]


class _IntentEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    topic: _Label
    name: _Label
    scope: Scope = "in"
    schedule: bool = False
    questions: dict[Language, str] = Field(min_length=1)


class _PlantedEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    at: float = Field(ge=0.0, lt=1.0)
    question: _Text
    topic: _Label
    intent: _Label
    language: Language
    role: Role
    pii: Annotated[list[str], Field(min_length=1), AfterValidator(_known_pii)]


def _lines(block: str) -> tuple[str, ...]:
    """Non-blank, stripped lines of a text block: one question each."""
    return tuple(line.strip() for line in block.strip().splitlines() if line.strip())


def _field_problems(where: str, exc: ValidationError) -> Iterator[str]:
    """``"<where>, field '<name>': <what>"`` per pydantic error, never echoing the input."""
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        loc = [p for p in err["loc"] if p != "[key]"]
        name = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
        msg = "is required" if err["type"] == "missing" else err["msg"]
        msg = msg.removeprefix("Value error, ")
        if err["type"] == "literal_error":
            what = "key" if len(loc) < len(err["loc"]) else "value"
            msg = f"unknown {what}, {msg[:1].lower()}{msg[1:]}"
        elif err["type"] == "extra_forbidden":
            msg = "unknown field"
        yield f"{where}, field '{name.lstrip('.') or '?'}': {msg}"


def _duplicate_keys(node: yaml.Node) -> Iterator[tuple[int, str]]:
    """``(line, key)`` for every key repeated within one YAML mapping (PyYAML keeps the last
    silently, which would drop a block of questions without a word)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if key.value in seen:
                yield key.start_mark.line + 1, str(key.value)
            seen.add(key.value)
            yield from _duplicate_keys(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _duplicate_keys(item)


def _entries(root: yaml.Node, data: dict[str, Any], key: str) -> list[tuple[int, Any]]:
    """``(line, entry)`` for each item of the top-level list ``key`` (empty when absent)."""
    for key_node, value_node in root.value:
        if key_node.value == key and isinstance(value_node, yaml.SequenceNode):
            lines = [item.start_mark.line + 1 for item in value_node.value]
            return list(zip(lines, data[key], strict=True))
    return []


def _parse(path: Path, problems: list[str]) -> tuple[yaml.Node, dict[str, Any]] | None:
    """The file's node tree (for line numbers) and its data, from one parse; ``None`` (with a
    problem) when it is not a UTF-8 YAML mapping of ``intents`` and ``planted_pii``."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not UTF-8 (byte {exc.start})")
        return None
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = f", line {mark.line + 1}" if mark is not None else ""
        problems.append(f"{path}{line}: not valid YAML ({exc.problem})")
        return None
    finally:
        loader.dispose()
    if root is None or not isinstance(data, dict):
        problems.append(f"{path}: must be a mapping with the keys 'intents' and 'planted_pii'")
        return None
    problems.extend(
        f"{path}, line {line}: key {key!r} repeated" for line, key in _duplicate_keys(root)
    )
    for key in sorted(set(map(str, data)) - {"intents", "planted_pii"}):
        problems.append(f"{path}: unknown top-level key {key!r}")
    for key in ("intents", "planted_pii"):
        if not isinstance(data.get(key), list) or not data[key]:
            problems.append(f"{path}: '{key}' must be a non-empty list")
    return root, data


def _entry_label(raw: object) -> str:
    """``"topic/name"`` of a raw intent entry, as far as it has them (``"?"`` otherwise)."""
    if not isinstance(raw, dict):
        return "?"
    return "/".join(str(raw.get(field, "?"))[:40] for field in ("topic", "name"))


def _intents(path: Path, entries: list[tuple[int, Any]], problems: list[str]) -> list[Intent]:
    intents: list[Intent] = []
    first: dict[tuple[str, str], int] = {}
    asked: dict[str, str] = {}
    for k, (line, raw) in enumerate(entries):
        label = _entry_label(raw)
        where = f"{path}, line {line}, intents[{k}] ({label})"
        try:
            entry = _IntentEntry.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_field_problems(where, exc))
            continue
        key = (entry.topic, entry.name)
        if key in first:
            problems.append(f"{where}, field 'name': repeats the intent on line {first[key]}")
            continue
        first[key] = line
        questions: dict[str, tuple[str, ...]] = {
            lang: _lines(entry.questions[lang]) for lang in LANGUAGES if lang in entry.questions
        }
        for lang, texts in questions.items():
            if not texts:
                problems.append(f"{where}, field 'questions.{lang}': no questions")
            for number, text in enumerate(texts, start=1):
                if text in asked:
                    problems.append(
                        f"{where}, field 'questions.{lang}': question {number} is already in "
                        f"{asked[text]}"
                    )
                asked.setdefault(text, f"line {line}, intents[{k}] ({label})")
        intents.append(Intent(entry.topic, entry.name, entry.scope, questions, entry.schedule))
    return intents


def _planted(
    path: Path, entries: list[tuple[int, Any]], known: set[tuple[Any, Any]], problems: list[str]
) -> list[PlantedPii]:
    first_at: dict[float, int] = {}
    planted: list[PlantedPii] = []
    for k, (line, raw) in enumerate(entries):
        where = f"{path}, line {line}, planted_pii[{k}]"
        try:
            entry = _PlantedEntry.model_validate(raw)
        except ValidationError as exc:
            problems.extend(_field_problems(where, exc))
            continue
        if (entry.topic, entry.intent) not in known:
            problems.append(
                f"{where}, field 'intent': no intent '{entry.topic}/{entry.intent}' in 'intents'"
            )
        if entry.at in first_at:
            problems.append(f"{where}, field 'at': same position as line {first_at[entry.at]}")
        first_at.setdefault(entry.at, line)
        planted.append(
            PlantedPii(
                entry.at,
                entry.question,
                entry.topic,
                entry.intent,
                entry.language,
                entry.role,
                tuple(entry.pii),
            )
        )
    return planted


def load_question_bank(path: Path | str = DEFAULT_PATH) -> QuestionBank:
    """Read and validate a question-bank YAML file (format: the header of ``questions.yaml``).

    Args:
        path: the file; the packaged bank by default.

    Returns:
        The bank, intents and planted questions in file order; each intent's questions in
        :data:`LANGUAGES` order, one per non-blank line of its block, stripped.

    Raises:
        QuestionBankError: listing every problem, each naming the file, the line and the
            entry (``intents[3] (fees/refund)``, ``planted_pii[2]``) and the field: invalid
            UTF-8 or YAML, a key repeated in one mapping, unknown or missing fields, wrong
            types, a topic or name that is not lower-case-hyphenated, an unknown scope,
            language, role or personal-data kind, an empty question block, a repeated
            ``(topic, name)`` or question, a planted question naming an unknown intent, a
            position outside ``[0, 1)`` or used twice.
        OSError: the file cannot be read.
    """
    path = Path(path)
    problems: list[str] = []
    parsed = _parse(path, problems)
    if parsed is None:
        raise QuestionBankError(path, problems)
    root, data = parsed
    entries = _entries(root, data, "intents")
    intents = _intents(path, entries, problems)
    # every (topic, name) written, valid or not: one mistake in an intent is one problem
    known = {(raw.get("topic"), raw.get("name")) for _, raw in entries if isinstance(raw, dict)}
    planted = _planted(path, _entries(root, data, "planted_pii"), known, problems)
    if problems:
        raise QuestionBankError(path, problems)
    return QuestionBank(tuple(intents), tuple(planted), path)


@cache
def question_bank() -> QuestionBank:
    """The packaged bank (:data:`DEFAULT_PATH`), read and validated once per process.

    Raises:
        QuestionBankError: the packaged file is malformed (:func:`load_question_bank`).
    """
    return load_question_bank(DEFAULT_PATH)
