"""The retriever protocol: ``(question, k) -> ranked list of (passage id, score)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from service.errors import GoldwatchError
from service.records import ScoredDoc


class RetrieverError(GoldwatchError, RuntimeError):
    """A retriever failed to answer (network error, bad response, timeout after retries).

    The message never includes the question text (it may hold personal data).
    """


FailedStage = Literal["build", "search"]
"""Where a retriever failed: ``"build"`` (importing, configuring, constructing it: no question
was sent yet) or ``"search"`` (answering questions)."""

_FAILED_RETRIEVER = "goldwatch_failed_retriever"


def mark_failed_retriever(exc: BaseException, name: str, stage: FailedStage) -> None:
    """Record on ``exc`` which retriever failed and in which stage, keeping its type.

    The first mark wins, so a hybrid's failing member is named rather than the hybrid. Read
    it back with :func:`failed_retriever` (the gold-set run's failure log names it).
    """
    if getattr(exc, _FAILED_RETRIEVER, None) is None:
        setattr(exc, _FAILED_RETRIEVER, (name, stage))


def failed_retriever(exc: BaseException) -> tuple[str, FailedStage] | None:
    """``(retriever name, stage)`` marked by :func:`mark_failed_retriever`, or ``None``."""
    mark: tuple[str, FailedStage] | None = getattr(exc, _FAILED_RETRIEVER, None)
    return mark


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks corpus passages for a question.

    Implementations return at most ``k`` distinct passage ids as
    :class:`~service.records.ScoredDoc`, best first (higher score = better). A user's retriever
    (entry point, HTTP) that repeats an id keeps the repeats (:func:`top_k_ids`), so ``eval``
    counts and scores them as it does a TREC run file's (``n_duplicates``, best rank kept).
    ``search_batch`` returns one list per question, in input order;
    built-in retrievers vectorise it, remote ones may loop.

    Raises:
        RetrieverError: the retriever could not answer.
        ValueError: ``k < 1``.
    """

    name: str

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        """Return the top ``k`` passages for one question."""
        ...

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """Return the top ``k`` passages for each question, in input order."""
        ...


class ReturnedOrder:
    """Counts, over the result lists a retriever returned as it returned them (before
    :func:`top_k_ids` sorts them), the lists whose scores are not all equal (``ordered``) and
    those of them whose scores never fall from one entry to the next (``rising``): the order
    of distances (lower is better) returned best first, which ``eval`` would score reversed
    (:meth:`service.evaluation.evaluate.RetrieverReport.order_warning`). Not thread-safe: the
    ``eval`` job calls a retriever from one thread.

    >>> order = ReturnedOrder()
    >>> order.observe([ScoredDoc("a", 0.1), ScoredDoc("b", 0.3)])
    >>> order.observe([ScoredDoc("a", 2.0), ScoredDoc("b", 1.0)])
    >>> order.observe([ScoredDoc("a", 1.0)])
    >>> (order.rising, order.ordered)
    (1, 2)
    """

    def __init__(self) -> None:
        self.rising = 0
        self.ordered = 0

    def observe(self, docs: Sequence[ScoredDoc]) -> None:
        """Count one returned list."""
        scores = [doc.score for doc in docs]
        if len(set(scores)) < 2:
            return
        self.ordered += 1
        self.rising += all(a <= b for a, b in zip(scores, scores[1:], strict=False))


def top_k_ids(docs: Sequence[ScoredDoc], k: int) -> list[ScoredDoc]:
    """Sort results by score descending (stable: the retriever's order breaks ties) and keep
    every entry of the first ``k`` distinct ids, repeats included.

    Repeats are not dropped here: ``eval`` handles them as it does a TREC run file's
    (:func:`service.evaluation.ir_metrics.rank_run`: best rank kept, the rest counted in
    ``n_duplicates``), so a retriever returning every id twice reports its duplicates
    instead of scoring silently like a clean one (trial 11).

    Args:
        docs: validated ``(doc_id, score)`` pairs, finite scores, any order.
        k: how many distinct ids to keep, >= 1.

    Returns:
        The kept entries, best first; ``len`` is between the distinct ids kept and ``len(docs)``.

    >>> [d.doc_id for d in top_k_ids([ScoredDoc("a", 1.0), ScoredDoc("b", 2.0),
    ...                               ScoredDoc("b", 2.0), ScoredDoc("c", 0.5)], 2)]
    ['b', 'b', 'a']
    """
    ordered = sorted(docs, key=lambda doc: -doc.score)
    kept: set[str] = set()
    out: list[ScoredDoc] = []
    for doc in ordered:
        if doc.doc_id not in kept:
            if len(kept) == k:
                continue
            kept.add(doc.doc_id)
        out.append(doc)
    return out
