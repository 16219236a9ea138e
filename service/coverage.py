"""The coverage-gap rule: how far a label's live share is above its share of the gold set.

One rule for both views of "categories the gold set under-covers": the drift view's list
(:func:`service.drift.stats_tests.coverage_gaps`, over all live traffic) and the harvest's
``coverage_gap`` reason (:class:`service.harvest.signals.CoverageTracker`, over its window).
Plain floats and the standard library only, so the harvest need not import scipy.

With ``x`` of ``n`` live events carrying a label and ``k`` of the gold set's ``G`` rows:
live share ``p = x / n``, gold share ``g = k / G``, and the gap is

* ``max(0, L − g)`` when ``x > 0`` and ``p ≥ min_ratio × g`` (relative: a majority label a few
  points above its gold share — en 86 % live, 76 % gold — is not under-covered, a label the
  gold set lacks can be), ``L`` the Wilson (1927) lower bound of ``p`` over the ``n`` events;
* else 0; also 0 for ``und`` (undetermined: a question whose language or topic could not be
  told is no gap of one) and without live events or gold rows.

The gold share is exact: the gold set is the set being completed, not a sample of one, so its
Wilson interval is the point ``g`` and Newcombe's (1998, method 10) lower bound of ``p − g``,
``d − √((p − L)² + (u_g − g)²)``, is ``L − g``. (A two-sample bound that also counts the gold
set's sampling error answers another question — does the gold set's *population* under-cover?
— and with a 42-row gold set misses a language at 10 % of live traffic the gold set lacks.)
A caller compares the gap with its floor (0.02 in both views).

>>> round(wilson_lower(101, 1_000), 6)  # 10.1 % of 1,000 live events
0.083824
>>> round(gap_lower_bound(101, 1_000, 0, 42), 6), gap_lower_bound(790, 1_000, 42, 42)
(0.083824, 0.0)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from math import sqrt
from typing import NamedTuple

__all__ = [
    "OUT_OF_SCOPE_COUNTED",
    "UNDETERMINED",
    "Z95",
    "UnderCovered",
    "document_counts",
    "gap_lower_bound",
    "rise_lower_bound",
    "top_document",
    "under_covered",
    "wilson_bounds",
    "wilson_lower",
]

#: The standard normal's 97.5 % quantile: two-sided 95 % intervals (``scipy.special.ndtri(0.975)``).
Z95 = 1.959963984540054
#: The label of an event whose language or topic is unknown: never a coverage gap.
UNDETERMINED = "und"

#: Said where the language and topic coverage gaps are shown (session 41). A question judged
#: out of scope (a stable, calibrated verdict) counts in them, and in no document share: its
#: language and topic are its own, and gold rows there — unanswerable ones like it among them
#: — measure the scope detector and the refusals in that language or topic, which is what a
#: gold set is for on such traffic; its "document" is production's first passage, which does
#: not cover it, so gold rows on that document would not cover it either (s40-uncov).
OUT_OF_SCOPE_COUNTED = (
    "questions judged out of scope count in the language and topic gaps (their language and "
    "topic are their own: gold rows there, unanswerable ones among them, measure the scope "
    "detector and the refusals on them) but in no document share (their document, "
    "production's first passage, does not cover them)"
)


def wilson_bounds(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes / n`` (Wilson 1927; Newcombe 1998 method 3),
    ``(p̂ + z²/2n ± z √(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``, clipped to [0, 1]; ``n ≤ 0``
    gives ``(0, 1)``. ``z`` is the normal quantile (1.96: 95 %, two-sided). Plain floats:
    :func:`service.drift.stats_tests.wilson_interval`'s values (a test pins them equal)."""
    if n <= 0:
        return 0.0, 1.0
    p, z2 = successes / n, z * z
    centre = p + z2 / (2 * n)
    half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    scale = 1 + z2 / n
    return max(0.0, (centre - half) / scale), min(1.0, (centre + half) / scale)


def wilson_lower(successes: float, n: float, z: float = Z95) -> float:
    """The lower end of :func:`wilson_bounds`, in [0, 1]."""
    return wilson_bounds(successes, n, z)[0]


def rise_lower_bound(x1: float, n1: float, x2: float, n2: float, z: float = Z95) -> float:
    """The lower end of Newcombe's (1998, method 10) hybrid score interval of
    ``x1/n1 − x2/n2``, ``d − √((p1 − l1)² + (u2 − p2)²)`` from the Wilson intervals
    ``(l, u)`` of each share, in [−1, 1]; −1 when either ``n`` is 0 (no evidence of a rise).
    Plain floats: :func:`service.drift.stats_tests.newcombe_interval`'s lower end.

    >>> round(rise_lower_bound(56, 70, 48, 80), 4)  # Newcombe 1998, example (a)
    0.0524
    """
    if n1 <= 0 or n2 <= 0:
        return -1.0
    p1, p2 = x1 / n1, x2 / n2
    l1 = wilson_lower(x1, n1, z)
    u2 = wilson_bounds(x2, n2, z)[1]
    return max(-1.0, p1 - p2 - sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2))


def gap_lower_bound(
    live_count: float,
    live_total: float,
    gold_count: float,
    gold_total: float,
    min_ratio: float = 2.0,
    z: float = Z95,
    label: str | None = None,
) -> float:
    """The coverage gap of one label (module docstring): ``max(0, L − g)`` when
    ``live_count > 0`` and ``p ≥ min_ratio × g``, else 0; a share difference in [0, 1].

    ``p ≥ min_ratio × g`` is tested as ``x · G ≥ min_ratio · k · n`` (no division to round).
    0 when ``live_total`` or ``gold_total`` is 0 and when ``label`` is ``und``."""
    if live_total <= 0 or gold_total <= 0 or live_count <= 0 or label == UNDETERMINED:
        return 0.0
    if live_count * gold_total < min_ratio * gold_count * live_total:
        return 0.0
    return max(0.0, wilson_lower(live_count, live_total, z) - gold_count / gold_total)


class UnderCovered(NamedTuple):
    """One under-covered label (:func:`under_covered`): ``live`` of ``live_total`` events and
    ``gold`` of ``gold_total`` gold references carry it; ``gap`` is
    :func:`gap_lower_bound`'s ``L − g`` (a share difference in (0, 1])."""

    label: str
    live: int
    live_total: int
    gold: int
    gold_total: int
    gap: float


def under_covered(
    live_counts: Mapping[str, int],
    gold_counts: Mapping[str, int],
    min_ratio: float = 2.0,
    min_gap: float = 0.02,
    uncounted: int = 0,
) -> list[UnderCovered]:
    """Every label of ``live_counts`` whose :func:`gap_lower_bound` against ``gold_counts``
    (totals: the sums of each, plus ``uncounted`` live events of labels no longer counted)
    is positive and at least ``min_gap``, largest gap first (then by label): the drift
    view's :func:`service.drift.stats_tests.coverage_gaps` rule without scipy. ``[]``
    without live events or gold counts.

    >>> [tuple(g)[:5] for g in under_covered({"a": 60, "b": 40}, {"b": 9, "a": 1})]
    [('a', 60, 100, 1, 10)]
    >>> [tuple(g)[:5] for g in under_covered({"a": 60}, {"b": 9, "a": 1}, uncounted=40)]
    [('a', 60, 100, 1, 10)]
    """
    live_total = sum(live_counts.values()) + uncounted
    gold_total = sum(gold_counts.values())
    rows = []
    for label, live in live_counts.items():
        gold = gold_counts.get(label, 0)
        gap = gap_lower_bound(live, live_total, gold, gold_total, min_ratio, label=label)
        if gap > 0 and gap >= min_gap:
            rows.append(UnderCovered(label, live, live_total, gold, gold_total, gap))
    return sorted(rows, key=lambda row: (-row.gap, row.label))


def top_document(ranking: Sequence[str], doc_of: Mapping[str, str]) -> str | None:
    """The document a retrieval is about: that of its first passage (``ranking`` is passage
    ids best first; ``doc_of`` passage id → document label). ``None`` for an empty ranking
    or a first passage ``doc_of`` does not know (no document in the corpus, or not in it).

    The first passage, not the document holding most of the top k: it is the one the
    answer most likely rests on, and a plurality of a top k favours documents cut into many
    passages and depends on k.

    >>> top_document(["p2", "p1", "p3"], {"p1": "a.html", "p2": "b.html", "p3": "a.html"})
    'b.html'
    >>> top_document([], {}), top_document(["p9"], {"p1": "a.html"})
    (None, None)
    """
    return doc_of.get(ranking[0]) if ranking else None


def document_counts(qrels: Iterable[Sequence[str]], doc_of: Mapping[str, str]) -> dict[str, int]:
    """``{document: gold rows asking about it}``: each row's relevant passage ids
    (``qrels``, one sequence per gold row) read as their documents (``doc_of``), each
    document counted once per row; an unanswerable row (no passage) and passages
    ``doc_of`` does not know count nothing. A row over two documents counts once for each,
    so the total (the gold side's ``G``) is the number of row–document pairs: a document's
    gold share is its part of what the gold set asks about.

    >>> document_counts([["p1", "p2"], ["p3"], [], ["p9"]], {"p1": "a", "p2": "a", "p3": "b"})
    {'a': 1, 'b': 1}
    >>> document_counts([["p1", "p3"]], {"p1": "a", "p3": "b"})
    {'a': 1, 'b': 1}
    """
    counts: dict[str, int] = {}
    for passages in qrels:
        for doc in {doc_of[p] for p in passages if p in doc_of}:
            counts[doc] = counts.get(doc, 0) + 1
    return dict(sorted(counts.items()))
