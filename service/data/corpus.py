"""Corpus passages: the :class:`Corpus` record and JSONL loading with validation.

Corpus row (one JSON object per line, UTF-8, blank lines skipped)::

    {"id": "p-0412", "text": "...", "doc": "fee-circular-2026.pdf", "doc_type": "scanned_pdf",
     "acl": ["student", "parent", "staff"]}

``id`` and ``text`` are required non-blank strings; ``doc`` and ``doc_type`` optional strings;
``acl`` an optional list of role strings (empty = everyone). Unknown fields are ignored. A row
is at most :data:`MAX_CORPUS_ROW_BYTES` (1 MiB) of UTF-8.

This module also holds the JSONL reading helpers the gold-set loader shares: every problem of
a file is collected as ``"<file>, line <n>[ (id '<id>')], field '<name>': <what>"`` and raised
once. Messages name files, lines, fields and ids, never a row's text (it may hold personal data).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from service.errors import GoldwatchError
from service.files.regular import not_utf8, open_regular
from service.records import Passage

RowT = TypeVar("RowT", bound=BaseModel)

#: How many problems an error message lists before ``"... and N more"``.
MAX_LISTED_PROBLEMS = 20

#: Longest corpus row (one JSONL line, UTF-8 bytes): 1 MiB. A longer row is an error naming
#: its file and line, found before the row is parsed (a whole book pasted as one passage
#: would otherwise be indexed silently, at the cost of minutes and gigabytes).
MAX_CORPUS_ROW_BYTES = 1 << 20

_JSON_TYPE_NAMES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


class DataFileError(GoldwatchError, ValueError):
    """Every problem found in one data file, raised once after the whole file was read.

    Attributes:
        path: the file.
        problems: one string per problem, ``"<file>, line <n>, field '<name>': <what>"``.

    The message lists the first :data:`MAX_LISTED_PROBLEMS` and ends with ``"... and N more"``.
    """

    def __init__(self, path: Path | str, problems: Sequence[str]) -> None:
        self.path = Path(path)
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__(format_problems(self.path, self.problems))


class CorpusError(DataFileError):
    """A corpus file is malformed (bad JSON, missing/blank id or text, wrong types, dup ids)."""


def format_problems(path: Path | str, problems: Sequence[str]) -> str:
    """Return ``"<n> problem(s) in <file>:"`` followed by at most 20 problems, one per line."""
    shown = [f"  - {p}" for p in problems[:MAX_LISTED_PROBLEMS]]
    if len(problems) > MAX_LISTED_PROBLEMS:
        shown.append(f"  ... and {len(problems) - MAX_LISTED_PROBLEMS} more")
    return "\n".join([f"{len(problems)} problem(s) in {path}:", *shown])


def where(path: Path | str, lineno: int, row_id: object = None) -> str:
    """Return ``"<file>, line <n>"``, plus ``" (id '<id>')"`` when ``row_id`` is a string."""
    text = f"{path}, line {lineno}"
    if isinstance(row_id, str) and row_id.strip():
        text += f" (id {row_id[:80]!r})"
    return text


def _bounded_lines(handle: BinaryIO, max_bytes: int) -> Iterator[tuple[int, bytes | None, int]]:
    """Yield ``(line number, raw line, size in bytes)`` for each line of ``handle``; a line
    longer than ``max_bytes`` (line ending excluded) is yielded as ``None`` with its size,
    read in 1 MiB chunks and never held whole in memory."""
    lineno = 0
    while raw := handle.readline(max_bytes + 2):
        lineno += 1
        size = len(raw.rstrip(b"\r\n"))
        if size <= max_bytes:
            yield lineno, raw, size
            continue
        while not raw.endswith(b"\n") and (raw := handle.readline(1 << 20)):
            size += len(raw.rstrip(b"\r\n"))
        yield lineno, None, size


def read_jsonl_objects(
    path: Path, problems: list[str], max_line_bytes: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSONL file.

    Lines that are not UTF-8, not JSON or not a JSON object are reported into ``problems``
    (``"<file>, line <n>: invalid JSON (<reason> at column <c>)"``) and skipped. A UTF-8 BOM
    is tolerated. A line over ``max_line_bytes`` bytes (UTF-8, line ending excluded; ``None``:
    no limit) is reported (``"<file>, line <n>: row is <size> bytes, over the limit of
    <max> bytes"``) and skipped before it is decoded or parsed. Raises ``OSError`` (e.g.
    ``FileNotFoundError``) when the file can't be read.
    """
    with open_regular(path) as handle:  # a FIFO or device: a plain error, not a hang
        for lineno, raw, size in _bounded_lines(handle, max_line_bytes or sys.maxsize - 2):
            if raw is None:
                problems.append(
                    f"{where(path, lineno)}: row is {size:,} bytes, over the limit of "
                    f"{max_line_bytes:,} bytes"
                )
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(f"{where(path, lineno)}: {not_utf8(exc)}")
                continue
            line = line.removeprefix("\ufeff") if lineno == 1 else line
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except RecursionError:  # nested past the interpreter's depth (a review: /metrics 500)
                problems.append(f"{where(path, lineno)}: invalid JSON (nested too deeply)")
                continue
            except json.JSONDecodeError as exc:
                problems.append(
                    f"{where(path, lineno)}: invalid JSON ({exc.msg.removesuffix(' at')} at column "
                    f"{exc.colno})"
                )
                continue
            if not isinstance(obj, dict):
                kind = _JSON_TYPE_NAMES.get(type(obj), "null")
                problems.append(f"{where(path, lineno)}: expected a JSON object, got {kind}")
                continue
            yield lineno, obj


def validation_problems(path: Path, lineno: int, row_id: object, exc: ValidationError) -> list[str]:
    """Turn a pydantic error into ``"<file>, line <n>, field '<name>': <what>"`` strings.

    Pydantic messages are used without the offending input, so row text is never echoed.
    """
    out = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        name = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        msg = "is required" if err["type"] == "missing" else err["msg"]
        msg = msg.removeprefix("Value error, ")
        if err["type"] == "literal_error":
            msg = f"unknown value, {msg[:1].lower()}{msg[1:]}"
        out.append(f"{where(path, lineno, row_id)}, field '{name.lstrip('.') or '?'}': {msg}")
    return out


def duplicate_problem(path: Path, lineno: int, row_id: str, first_line: int) -> str:
    """Return the problem string for an id already seen on ``first_line``."""
    return (
        f"{where(path, lineno, row_id)}, field 'id': duplicate id "
        f"(first on line {first_line}, again on line {lineno})"
    )


def validated_rows(
    path: Path, model: type[RowT], problems: list[str], max_line_bytes: int | None = None
) -> Iterator[tuple[int, RowT]]:
    """Yield ``(line, row)`` for each JSONL object of ``path`` that validates as ``model`` and
    whose ``id`` was not seen on an earlier line; every other line adds to ``problems``
    (a line over ``max_line_bytes``, invalid JSON, wrong fields, duplicate id naming both
    lines)."""
    first_line: dict[str, int] = {}
    for lineno, obj in read_jsonl_objects(path, problems, max_line_bytes):
        try:
            row = model.model_validate(obj)
        except ValidationError as exc:
            problems.extend(validation_problems(path, lineno, obj.get("id"), exc))
            continue
        row_id = row.id  # type: ignore[attr-defined]
        if row_id in first_line:
            problems.append(duplicate_problem(path, lineno, row_id, first_line[row_id]))
            continue
        first_line[row_id] = lineno
        yield lineno, row


def non_blank(value: str) -> str:
    """Pydantic validator body: reject empty or whitespace-only strings (no echo of value)."""
    if not value.strip():
        raise ValueError("must not be empty or blank")
    return value


class _PassageRow(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    id: str
    text: str
    doc: str | None = None
    doc_type: str | None = None
    acl: list[str] = Field(default_factory=list)

    _check_non_blank = field_validator("id", "text")(non_blank)

    @field_validator("acl")
    @classmethod
    def _check_acl(cls, value: list[str]) -> list[str]:
        for index, role in enumerate(value):
            if not role.strip():
                raise ValueError(f"role at position {index} must not be empty or blank")
        return value


def content_version(rows: list[Any]) -> str:
    """Return the first 12 hex chars of the sha256 of ``rows`` as canonical JSON."""
    canonical = json.dumps(rows, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Corpus:
    """The passages a gold set refers to, in file order, with unique ids.

    Attributes:
        passages: the :class:`~service.records.Passage` records.
        path: the file it was loaded from, if any.
        by_id: ``{passage id: Passage}`` (derived).
        ids: passage ids in file order (derived).
        version: first 12 hex chars of the sha256 of the canonical content (sorted by id,
            acl order ignored), so re-ordering the file keeps the version.

    Raises:
        ValueError: two passages share an id.

    >>> corpus = Corpus((Passage("p-1", "Fees are due in July."), Passage("p-2", "Hostel rules.")))
    >>> "p-1" in corpus, "p-9" in corpus, len(corpus), corpus.ids
    (True, False, 2, ('p-1', 'p-2'))
    >>> len(corpus.version)
    12
    """

    passages: tuple[Passage, ...]
    path: Path | None = None
    by_id: Mapping[str, Passage] = field(init=False, repr=False, compare=False)
    ids: tuple[str, ...] = field(init=False, repr=False, compare=False)
    version: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        passages = tuple(self.passages)
        by_id: dict[str, Passage] = {}
        for passage in passages:
            if passage.id in by_id:
                raise ValueError(f"duplicate passage id {passage.id!r}")
            by_id[passage.id] = passage
        rows = [[p.id, p.text, p.doc, p.doc_type, sorted(p.acl)] for p in passages]
        object.__setattr__(self, "passages", passages)
        object.__setattr__(self, "by_id", by_id)
        object.__setattr__(self, "ids", tuple(by_id))
        object.__setattr__(
            self, "version", content_version(sorted(rows, key=lambda row: str(row[0])))
        )

    def __contains__(self, passage_id: object) -> bool:
        return passage_id in self.by_id

    def __len__(self) -> int:
        return len(self.passages)

    def __iter__(self) -> Iterator[Passage]:
        return iter(self.passages)


def load_corpus(path: Path | str) -> Corpus:
    """Read a corpus JSONL file (format in the module docstring) into a :class:`Corpus`.

    Raises:
        CorpusError: listing every problem as ``"<file>, line <n>, field '<name>': <what>"`` —
            a row over :data:`MAX_CORPUS_ROW_BYTES`, bad JSON, non-object rows, missing/blank
            ``id`` or ``text``, wrong types, ``acl`` not a list of non-blank strings,
            duplicate ids (naming both lines), or no rows.
        OSError: the file can't be read.
    """
    path = Path(path)
    problems: list[str] = []
    passages = [
        Passage(row.id, row.text, row.doc, row.doc_type, tuple(row.acl))
        for _, row in validated_rows(path, _PassageRow, problems, MAX_CORPUS_ROW_BYTES)
    ]
    if not passages and not problems:
        problems.append(f"{path}: contains no passages")
    if problems:
        raise CorpusError(path, problems)
    return Corpus(tuple(passages), path=path)
