"""TREC qrels, run and topics files: reading (with file:line errors) and writing.

Formats (whitespace separated; blank lines and lines starting with ``#`` are skipped):

* qrels: ``qid iter docno rel`` — exactly 4 columns, ``rel`` an integer (graded allowed,
  ``> 0`` relevant). ``iter`` is ignored.
* run: ``qid Q0 docno rank score tag`` — at least 6 columns; extra columns after the 6th are
  ignored (trec_eval's ``results.trunc`` carries junk there). ``rank`` must be an integer but,
  as in trec_eval, is not used: order comes from score descending, ties by docno descending.
* topics: classic TREC SGML-ish blocks (``<top> <num> Number: 301 <title> ... </top>``) or a
  ``qid<TAB>text`` TSV, detected by content (a ``<top>`` tag means SGML).

Malformed lines raise :class:`TrecFormatError` listing ``"<file>, line <n>: <what>"`` for
every problem of the file; a file that is not UTF-8 text (binary, Latin-1...) stops at its
first such line, named with the byte offset. Topic texts are never echoed in messages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from service.errors import GoldwatchError
from service.files.regular import not_utf8
from service.records import Qrels, Run, ScoredDoc

_MAX_LISTED = 20
_TOPIC_FIELDS = {"title": "Topic:", "desc": "Description:", "narr": "Narrative:"}
_TOP_BLOCK = re.compile(r"<top>(.*?)(?:</top>|(?=<top>)|\Z)", re.IGNORECASE | re.DOTALL)
_NUM = re.compile(r"<num>\s*(?:Number:)?\s*([^\s<]+)", re.IGNORECASE)


class TrecFormatError(GoldwatchError, ValueError):
    """A TREC file has malformed lines; ``problems`` lists ``"<file>, line <n>: <what>"``.

    The message shows the first 20 problems and ends with ``"... and N more"``.
    """

    def __init__(self, path: Path | str, problems: Sequence[str]) -> None:
        self.path = Path(path)
        self.problems: tuple[str, ...] = tuple(problems)
        shown = [f"  - {p}" for p in self.problems[:_MAX_LISTED]]
        if len(self.problems) > _MAX_LISTED:
            shown.append(f"  ... and {len(self.problems) - _MAX_LISTED} more")
        super().__init__("\n".join([f"{len(self.problems)} problem(s) in {path}:", *shown]))


def _decoded(path: Path, lineno: int, raw: bytes) -> str:
    """One line of ``path`` as text; a UTF-8 BOM on the first line is dropped.

    Raises:
        TrecFormatError: the line is not UTF-8 or holds a NUL byte (a binary file), naming
            the file, the line and the byte offset within the line.
    """
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrecFormatError(path, [f"{path}, line {lineno}: {not_utf8(exc)}"]) from None
    if "\0" in line:
        what = f"a NUL byte (byte {line.index(chr(0))} of the line): a binary file, not text"
        raise TrecFormatError(path, [f"{path}, line {lineno}: {what}"])
    return line.removeprefix("\ufeff") if lineno == 1 else line


def _data_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            cols = _decoded(path, lineno, raw).split()
            if cols and not cols[0].startswith("#"):
                yield lineno, cols


def read_qrels(path: Path | str) -> Qrels:
    """Read a qrels file into ``{qid: {docno: rel}}`` (all judgments, rel ``<= 0`` included).

    Raises:
        TrecFormatError: a line has not 4 columns, a non-integer rel, or repeats a
            ``(qid, docno)`` pair (naming both lines).
        OSError: the file can't be read.
    """
    path = Path(path)
    qrels: Qrels = {}
    seen: dict[tuple[str, str], int] = {}
    problems: list[str] = []
    for lineno, cols in _data_lines(path):
        here = f"{path}, line {lineno}"
        if len(cols) != 4:
            problems.append(f"{here}: expected 4 columns 'qid iter docno rel', got {len(cols)}")
            continue
        qid, _, docno, rel_text = cols
        try:
            rel = int(rel_text)
        except ValueError:
            problems.append(f"{here}: rel (column 4) must be an integer")
            continue
        if (qid, docno) in seen:
            first = seen[(qid, docno)]
            problems.append(f"{here}: duplicate judgment for {qid} {docno} (first on line {first})")
            continue
        seen[(qid, docno)] = lineno
        qrels.setdefault(qid, {})[docno] = rel
    if problems:
        raise TrecFormatError(path, problems)
    return qrels


def read_run(path: Path | str) -> Run:
    """Read a run file into ``{qid: [ScoredDoc, ...]}`` in file order.

    Raises:
        TrecFormatError: a line has fewer than 6 columns, a non-integer rank, a non-finite
            or non-numeric score. A docno repeated within a topic is kept (the metrics
            keep its best rank and count the duplicates).
        OSError: the file can't be read.
    """
    path = Path(path)
    run: Run = {}
    problems: list[str] = []
    for lineno, cols in _data_lines(path):
        here = f"{path}, line {lineno}"
        if len(cols) < 6:
            problems.append(
                f"{here}: expected 6 columns 'qid Q0 docno rank score tag', got {len(cols)}"
            )
            continue
        qid, _, docno, rank_text, score_text = cols[:5]
        try:
            int(rank_text)
            score = float(score_text)
        except ValueError:
            problems.append(
                f"{here}: rank (column 4) must be an integer and score (column 5) a number"
            )
            continue
        if not math.isfinite(score):
            problems.append(f"{here}: score (column 5) must be finite")
            continue
        # A repeated docno is kept: the metrics keep its best rank and count the
        # duplicates (goldwatch's rule; trec_eval itself stops with an error).
        run.setdefault(qid, []).append(ScoredDoc(docno, score))
    if problems:
        raise TrecFormatError(path, problems)
    return run


def _check_token(value: str, what: str) -> str:
    if not value or any(ch.isspace() for ch in value):
        raise ValueError(
            f"{what} {value!r} is empty or contains whitespace; TREC files can't hold it"
        )
    return value


def trec_order(docs: Iterable[ScoredDoc]) -> list[ScoredDoc]:
    """Return docs in trec_eval order: score descending, ties by doc id descending.

    >>> docs = [ScoredDoc("a", 1.0), ScoredDoc("c", 2.0), ScoredDoc("b", 1.0)]
    >>> [d.doc_id for d in trec_order(docs)]
    ['c', 'b', 'a']
    """
    return sorted(docs, key=lambda d: (d.score, d.doc_id), reverse=True)


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: Path | str) -> None:
    """Write ``qid 0 docno rel`` lines, sorted by qid then docno.

    Raises:
        ValueError: an id is empty or contains whitespace.
    """
    lines = []
    for qid in sorted(qrels):
        for docno in sorted(qrels[qid]):
            _check_token(qid, "query id")
            _check_token(docno, "doc id")
            lines.append(f"{qid} 0 {docno} {int(qrels[qid][docno])}\n")
    Path(path).write_text("".join(lines), encoding="utf-8")


def write_run(run: Mapping[str, Sequence[ScoredDoc]], path: Path | str, tag: str) -> None:
    """Write ``qid Q0 docno rank score tag`` lines, topics sorted by qid, docs in trec order.

    Ranks are 1-based and follow :func:`trec_order`; scores are written with ``repr`` so they
    read back exactly.

    Raises:
        ValueError: ``tag`` or an id is empty or contains whitespace, or a score isn't finite.
    """
    _check_token(tag, "run tag")
    lines = []
    for qid in sorted(run):
        _check_token(qid, "query id")
        for rank, doc in enumerate(trec_order(run[qid]), start=1):
            _check_token(doc.doc_id, "doc id")
            if not math.isfinite(doc.score):
                raise ValueError(f"score of {doc.doc_id!r} for topic {qid!r} is not finite")
            lines.append(f"{qid} Q0 {doc.doc_id} {rank} {float(doc.score)!r} {tag}\n")
    Path(path).write_text("".join(lines), encoding="utf-8")


def read_topics(path: Path | str, field: str = "title") -> dict[str, str]:
    """Read topics into ``{qid: text}`` in file order; SGML or TSV, detected by content.

    SGML: each ``<top>`` block needs ``<num>`` (``Number:`` prefix optional) and the chosen
    ``field`` (``"title"``, ``"desc"`` or ``"narr"``); its text runs to the next tag, with the
    ``Topic:`` / ``Description:`` / ``Narrative:`` prefix removed and whitespace collapsed.
    TSV: ``qid<TAB>text`` per non-blank line.

    Raises:
        TrecFormatError: a block without ``<num>`` or the field, empty text, a TSV line
            without a tab, or a repeated qid.
        ValueError: ``field`` is not one of the three above.
    """
    if field not in _TOPIC_FIELDS:
        raise ValueError(f"field must be one of {sorted(_TOPIC_FIELDS)}, got {field!r}")
    path = Path(path)
    text = "".join(
        _decoded(path, lineno, raw)
        for lineno, raw in enumerate(path.read_bytes().splitlines(keepends=True), start=1)
    )
    problems: list[str] = []
    if re.search(r"<top>", text, re.IGNORECASE):
        topics = _sgml_topics(path, text, field, problems)
    else:
        topics = _tsv_topics(path, text, problems)
    if not topics and not problems:
        problems.append(f"{path}: contains no topics")
    if problems:
        raise TrecFormatError(path, problems)
    return topics


def _add_topic(
    topics: dict[str, str],
    lines: dict[str, int],
    qid: str,
    body: str,
    here: str,
    lineno: int,
    problems: list[str],
) -> None:
    if not body:
        problems.append(f"{here}: topic {qid} has empty text")
    elif qid in topics:
        problems.append(f"{here}: duplicate topic {qid} (first on line {lines[qid]})")
    else:
        topics[qid], lines[qid] = body, lineno


def _sgml_topics(path: Path, text: str, field: str, problems: list[str]) -> dict[str, str]:
    topics: dict[str, str] = {}
    lines: dict[str, int] = {}
    field_re = re.compile(rf"<{field}>\s*(?:{_TOPIC_FIELDS[field]})?(.*?)(?=<|\Z)", re.I | re.S)
    for block in _TOP_BLOCK.finditer(text):
        lineno = text.count("\n", 0, block.start()) + 1
        here = f"{path}, line {lineno}"
        num, body = _NUM.search(block.group(1)), field_re.search(block.group(1))
        if num is None or body is None:
            missing = "<num>" if num is None else f"<{field}>"
            problems.append(f"{here}: topic block without {missing}")
            continue
        body_text = " ".join(body.group(1).split())
        _add_topic(topics, lines, num.group(1), body_text, here, lineno, problems)
    return topics


def _tsv_topics(path: Path, text: str, problems: list[str]) -> dict[str, str]:
    topics: dict[str, str] = {}
    lines: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        here = f"{path}, line {lineno}"
        qid, tab, body = line.partition("\t")
        if not tab or not qid.strip():
            problems.append(f"{here}: expected 'qid<TAB>text'")
            continue
        _add_topic(topics, lines, qid.strip(), " ".join(body.split()), here, lineno, problems)
    return topics
