"""Hybrid retrieval by reciprocal-rank fusion (RRF).

Cormack, Clarke & Büttcher (2009), "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods", SIGIR '09::

    score(d) = Σ_{r ∈ members, d ∈ r} 1 / (rrf_k + rank_r(d))        (rank 1-based, rrf_k = 60)

A document missing from a member's list contributes nothing for that member. Sums use
``math.fsum`` (exactly rounded), so equal rank multisets give bit-identical scores whatever
the member order; ties are then broken by doc id ascending.

>>> fused = fuse([[ScoredDoc("a", 9.0), ScoredDoc("b", 5.0)], [ScoredDoc("b", 0.7)]], rrf_k=60)
>>> [(doc.doc_id, round(doc.score, 5)) for doc in fused]  # b: 1/62 + 1/61, a: 1/61
[('b', 0.03252), ('a', 0.01639)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from service.records import ScoredDoc
from service.retrievers.base import Retriever
from service.retrievers.text import check_k


def fuse(rankings: Sequence[Sequence[ScoredDoc]], rrf_k: int = 60) -> list[ScoredDoc]:
    """Fuse ranked lists (each best first) into one list by RRF.

    Args:
        rankings: one ranked list per member; member scores are ignored, only ranks count (a
            repeated id counts once, at its first place; later places move up, as in
            :func:`~service.evaluation.ir_metrics.rank_run`).
        rrf_k: the RRF constant, ≥ 1.

    Returns:
        Every document seen, fused score descending, ties by doc id ascending.
    """
    parts: dict[str, list[float]] = {}
    for ranking in rankings:
        ids = dict.fromkeys(doc.doc_id for doc in ranking)  # a repeated id counts once, first
        for rank, doc_id in enumerate(ids, start=1):
            parts.setdefault(doc_id, []).append(1.0 / (rrf_k + rank))
    fused = [ScoredDoc(doc_id, math.fsum(values)) for doc_id, values in parts.items()]
    fused.sort(key=lambda doc: (-doc.score, doc.doc_id))
    return fused


class HybridRetriever:
    """Reciprocal-rank fusion of member retrievers (default: bm25 + tfidf).

    Each member is asked for ``max(k, depth)`` results, fused with :func:`fuse`, and the
    top ``k`` are returned. Scores lie in ``(0, len(members) / (rrf_k + 1)]``.

    Args:
        members: the retrievers to fuse (at least one).
        name: the retriever's name.
        rrf_k: the RRF constant, ≥ 1 (60 in Cormack et al.).
        depth: how deep each member list is, ≥ 1.

    Raises:
        ValueError: no members, ``rrf_k < 1`` or ``depth < 1``.
        RetrieverError: a member failed (propagated).
    """

    def __init__(
        self,
        members: Sequence[Retriever],
        *,
        name: str = "hybrid",
        rrf_k: int = 60,
        depth: int = 100,
    ) -> None:
        if not members:
            raise ValueError("hybrid needs at least one member retriever")
        if rrf_k < 1 or depth < 1:
            raise ValueError(f"hybrid needs rrf_k >= 1 and depth >= 1, got {rrf_k}, {depth}")
        self.name = name
        self.members = tuple(members)
        self.rrf_k = rrf_k
        self.depth = depth

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        """Return the top ``k`` fused passages for ``question``."""
        return self.search_batch([question], k)[0]

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """Return the top ``k`` fused passages per question; one batch call per member."""
        check_k(k)
        if not questions:
            return []
        deep = max(k, self.depth)
        per_member = [member.search_batch(questions, deep) for member in self.members]
        return [
            fuse([lists[i] for lists in per_member], self.rrf_k)[:k] for i in range(len(questions))
        ]
