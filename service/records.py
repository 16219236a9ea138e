"""Immutable records shared by every goldwatch module.

Shapes follow ir_measures / ranx conventions:

* ``Qrels`` — ``dict[query_id, dict[doc_id, relevance]]``; relevance is an ``int`` (graded
  allowed, ``> 0`` means relevant, ``<= 0`` judged non-relevant).
* ``Run`` — ``dict[query_id, list[ScoredDoc]]``: the retrieved list per query, in any order;
  metric code re-orders it with trec_eval's rule (score descending, ties by doc id descending).
* Ranks are 1-based everywhere.

This module imports nothing but the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

#: Personal-data types the scrubber (:mod:`service.pii`) finds, in detection order.
PII_TYPES: tuple[str, ...] = (
    "url", "secret", "email", "upi", "iban", "account", "card", "aadhaar", "ssn", "pan",
    "passport", "voter_id", "ip", "phone", "address", "name",
)  # fmt: skip
#: The placeholder that replaces each type in a scrubbed text: ``f"<{type.upper()}>"``.
PLACEHOLDERS = {kind: f"<{kind.upper()}>" for kind in PII_TYPES}

#: Question kinds of the gold set (design brief, idea 2). ``unanswerable`` and ``off-topic`` rows
#: have ``gold == ()``: an ``unanswerable`` row asks about the corpus's subjects and its answer
#: is missing (SQuAD 2.0's "impossible" questions); an ``off-topic`` row asks about something
#: the corpus is not about at all (another product, small talk) — what the out-of-scope
#: detector is calibrated on when the gold set has any (:func:`service.refusals.scope.scope_rows`).
Kind = Literal["plain", "expert", "multi-passage", "unanswerable", "role-restricted", "off-topic"]
KINDS: tuple[str, ...] = (
    "plain", "expert", "multi-passage", "unanswerable", "role-restricted", "off-topic",
)  # fmt: skip
#: The kind of an off-topic gold row (:data:`KINDS`).
OFF_TOPIC = "off-topic"

#: Where a gold question came from (design brief, idea 3). Reported apart, never mixed silently.
Source = Literal["real", "written", "generated"]
SOURCES: tuple[str, ...] = ("real", "written", "generated")


class ScoredDoc(NamedTuple):
    """One retrieved passage: its id and the retriever's score (higher is better).

    ``score`` is unitless and only comparable within one query of one retriever.
    """

    doc_id: str
    score: float


Qrels = dict[str, dict[str, int]]
Run = dict[str, list[ScoredDoc]]


@dataclass(frozen=True, slots=True)
class Passage:
    """One corpus passage (a chunk of a document).

    Attributes:
        id: unique passage id, e.g. ``"p-0412"``.
        text: the passage text (non-empty).
        doc: the source document it was cut from, e.g. ``"fee-circular-2026.pdf"``.
        doc_type: free label such as ``"pdf"``, ``"scanned_pdf"``, ``"html"``.
        acl: roles allowed to see the passage; empty means everyone.
    """

    id: str
    text: str
    doc: str | None = None
    doc_type: str | None = None
    acl: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GoldQuestion:
    """One gold-set row.

    Attributes:
        id: unique question id, e.g. ``"q-017"``.
        question: the question text (non-empty).
        gold: relevant passage ids; ``()`` marks an unanswerable question, which is excluded
            from recall / MRR and reported separately.
        kind: one of :data:`KINDS` (free text accepted, but the standard ones are reported).
        relevance: graded relevance per gold id (TREC qrels levels); defaults to 1 per id.
        answer_contains: substrings a correct answer must contain (dumb answer check).
        reference_answer, source, doc_type, role, language, topic: optional breakdown fields.
        harvest_id: the harvested suggestion's id on a row an accept appended (the file's
            ``harvest_id``), ``None`` on rows the user wrote; not part of the row's version.
    """

    id: str
    question: str
    gold: tuple[str, ...]
    kind: str = "plain"
    relevance: Mapping[str, int] = field(default_factory=dict)
    answer_contains: tuple[str, ...] = ()
    reference_answer: str | None = None
    source: str | None = None
    doc_type: str | None = None
    role: str | None = None
    language: str | None = None
    topic: str | None = None
    harvest_id: str | None = None

    @property
    def answerable(self) -> bool:
        """True when the question has at least one gold passage."""
        return len(self.gold) > 0

    def qrels_row(self) -> dict[str, int]:
        """Return ``{doc_id: relevance}`` for this question (relevance 1 unless graded)."""
        return {doc_id: int(self.relevance.get(doc_id, 1)) for doc_id in self.gold}


#: Fields of :class:`GoldQuestion` that evaluation reports break metrics down by.
BREAKDOWN_FIELDS: tuple[str, ...] = ("kind", "doc_type", "source", "language", "role", "topic")
