"""Out-of-scope estimate: is a live question answerable from the corpus at all?

The score of a question is its retriever's best score (the production retriever's, carried by
the event as ``retrieval.results[].score``, or a built-in retriever run by the stage). A
question is *out of scope* when that score is below a threshold calibrated on the gold set:
answerable questions (``gold != []``) are the positives, unanswerable ones the negatives, and
the threshold maximises Youden's J = TPR − FPR on their best-score distributions, which is the
same cut as maximising balanced accuracy ((TPR + TNR) / 2 = (J + 1) / 2). Scores are only
comparable within one retriever, so calibrate on the retriever that produces the live scores.

:class:`ScopeStage` also crosses the estimate with the ``refused`` annotation of
:class:`service.refusals.RefusalStage` (run it first):

* ``over_refusal``: refused while in scope (the system declined a question it could answer);
* ``under_refusal``: answered while out of scope (likely a made-up answer).

Both are ``None`` when either side is unknown. Source: Youden 1950, "Index for rating
diagnostic tests"; scikit-learn ``roc_curve``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve

from service.batch_cache import BatchCache
from service.pipeline import Batch, StatelessStage
from service.records import GoldQuestion, Run, ScoredDoc

if TYPE_CHECKING:
    from service.events import QueryLogEvent
    from service.retrievers.base import Retriever


class ScopeCalibration(NamedTuple):
    """A calibrated out-of-scope threshold and how well it separates the gold set.

    Attributes:
        threshold: in scope iff best score ``>= threshold`` (retriever score units).
        tpr: share of answerable gold questions in scope, in [0, 1].
        fpr: share of unanswerable gold questions in scope, in [0, 1].
        balanced_accuracy: ``(tpr + 1 - fpr) / 2``.
        auc: ROC AUC of the best score for answerable vs unanswerable.
        n_answerable, n_unanswerable: sizes of the two groups.
        retriever: name of the retriever whose scores were calibrated (``None``: unknown).
    """

    threshold: float
    tpr: float
    fpr: float
    balanced_accuracy: float
    auc: float
    n_answerable: int
    n_unanswerable: int
    retriever: str | None = None

    def in_scope(self, score: float | None) -> bool | None:
        """True/False for a best score; ``None`` when there is no score."""
        return None if score is None else score >= self.threshold


def best_score(results: Iterable[ScoredDoc] | None) -> float | None:
    """The highest score of a result list, or ``None`` when it is empty or unscored."""
    scores = [doc.score for doc in results or () if doc.score is not None]
    return max(scores) if scores else None


def calibrate_threshold(
    answerable: Sequence[float | None],
    unanswerable: Sequence[float | None],
    retriever: str | None = None,
    min_tpr: float = 0.0,
) -> ScopeCalibration:
    """Choose the threshold maximising Youden's J on two best-score samples, among the
    thresholds that keep at least ``min_tpr`` of the answerable questions in scope.

    A missing score (``None``: nothing retrieved) counts as the lowest score. Ties between
    thresholds go to the highest one (fewest unanswerable questions let through).
    ``min_tpr`` guards against a threshold that flags in-scope traffic: live questions are
    typed in users' words and score lower than gold questions, which often reuse the
    passage's words (design brief, idea 3).

    Raises:
        ValueError: either sample is empty, or ``min_tpr`` is outside [0, 1].

    >>> cal = calibrate_threshold([9.0, 8.0, 7.5, 3.0], [2.0, 4.0, None])
    >>> cal.threshold, cal.tpr, cal.fpr, cal.balanced_accuracy
    (7.5, 0.75, 0.0, 0.875)
    """
    if not answerable or not unanswerable:
        raise ValueError("calibration needs answerable and unanswerable questions")
    if not 0.0 <= min_tpr <= 1.0:
        raise ValueError(f"min_tpr must be in [0, 1], got {min_tpr}")
    raw = [*answerable, *unanswerable]
    finite = [s for s in raw if s is not None]
    floor = (min(finite) - 1.0) if finite else 0.0
    scores = np.array([floor if s is None else s for s in raw], dtype=float)
    truth = np.r_[np.ones(len(answerable)), np.zeros(len(unanswerable))]
    fpr, tpr, thresholds = roc_curve(truth, scores, drop_intermediate=False)
    usable = np.isfinite(thresholds) & (tpr >= min_tpr - 1e-12)
    best = int(np.argmax(np.where(usable, tpr - fpr, -np.inf)))
    threshold = float(thresholds[best])
    return ScopeCalibration(
        threshold=threshold,
        tpr=float(tpr[best]),
        fpr=float(fpr[best]),
        balanced_accuracy=float((tpr[best] + 1 - fpr[best]) / 2),
        auc=float(roc_auc_score(truth, scores)),
        n_answerable=len(answerable),
        n_unanswerable=len(unanswerable),
        retriever=retriever,
    )


def calibrate_from_run(
    questions: Iterable[GoldQuestion], run: Run, retriever: str | None = None, min_tpr: float = 0.0
) -> ScopeCalibration:
    """Calibrate from a retriever's gold-set run (``{question id: [ScoredDoc]}``).

    Questions missing from ``run`` count as "nothing retrieved".

    Raises:
        ValueError: the gold set lacks answerable or unanswerable questions.
    """
    answerable, unanswerable = [], []
    for question in questions:
        score = best_score(run.get(question.id))
        (answerable if question.answerable else unanswerable).append(score)
    return calibrate_threshold(answerable, unanswerable, retriever, min_tpr)


def calibrate_with_retriever(
    questions: Sequence[GoldQuestion], retriever: Retriever, k: int = 10, min_tpr: float = 0.0
) -> ScopeCalibration:
    """Run ``retriever`` over the gold questions (one batch call) and calibrate on it."""
    results = retriever.search_batch([q.question for q in questions], k)
    run = {q.id: list(found) for q, found in zip(questions, results, strict=True)}
    return calibrate_from_run(questions, run, retriever.name, min_tpr)


def event_score(event: QueryLogEvent, retriever: str | None = None) -> float | None:
    """The production best score of an event; ``None`` without results, or when the event
    names a retriever other than ``retriever`` (scores of two retrievers don't compare)."""
    retrieval = event.retrieval
    if retrieval is None:
        return None
    if retriever and retrieval.retriever and retrieval.retriever != retriever:
        return None
    scores = [r.score for r in retrieval.results if r.score is not None]
    return max(scores) if scores else None


def crossed(refused: bool | None, out_of_scope: bool | None) -> Mapping[str, bool | None]:
    """``{"over_refusal", "under_refusal"}`` for one event (``None`` when either is unknown).

    >>> dict(crossed(True, False)), dict(crossed(None, True))
    ({'over_refusal': True, 'under_refusal': False}, {'over_refusal': None, 'under_refusal': None})
    """
    if refused is None or out_of_scope is None:
        return {"over_refusal": None, "under_refusal": None}
    return {
        "over_refusal": refused and not out_of_scope,
        "under_refusal": (not refused) and out_of_scope,
    }


class ScopeStage(StatelessStage):
    """Pipeline stage writing, per event, ``scope_score`` (float or ``None``),
    ``out_of_scope`` (bool, or ``None`` without a score), ``over_refusal`` and
    ``under_refusal`` (see :func:`crossed`; reads ``annotations[i]["refused"]``).

    Args:
        calibration: from :func:`calibrate_from_run` / :func:`calibrate_with_retriever`.
        retriever: score questions with this retriever (one ``search_batch`` per batch)
            instead of the events' own production scores; it must be the calibrated one.
        k: depth asked of ``retriever``.

    Raises:
        ValueError: ``retriever`` is not the one ``calibration`` was made with, or ``k < 1``.
    """

    name = "scope"

    def __init__(
        self, calibration: ScopeCalibration, retriever: Retriever | None = None, k: int = 10
    ) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if retriever is not None and calibration.retriever not in (None, retriever.name):
            raise ValueError(
                f"calibrated on {calibration.retriever!r}, asked to score with {retriever.name!r}"
            )
        self.calibration = calibration
        self.retriever = retriever
        self.k = k
        self.cache: BatchCache[float | None] = BatchCache()

    def scores(self, events: Sequence[QueryLogEvent]) -> list[float | None]:
        """Best score per event, from the built-in retriever or the events themselves."""
        if self.retriever is None:
            return [event_score(e, self.calibration.retriever) for e in events]
        retriever, k = self.retriever, self.k
        fast = getattr(retriever, "best_scores", None)

        def best(questions: list[str]) -> list[float | None]:
            if fast is not None:  # the best score without building result lists
                return list(fast(questions))
            return [best_score(found) for found in retriever.search_batch(questions, k)]

        return self.cache.get_many([e.question for e in events], best) if events else []

    def process(self, batch: Batch) -> None:
        for notes, score in zip(batch.annotations, self.scores(batch.events), strict=True):
            out = self.calibration.in_scope(score)
            notes["scope_score"] = score
            notes["out_of_scope"] = None if out is None else not out
            notes.update(crossed(notes.get("refused"), notes["out_of_scope"]))


def describe(calibration: ScopeCalibration) -> dict[str, Any]:
    """The calibration as a JSON-able report row (``-inf``/``nan`` become ``None``)."""
    row = calibration._asdict()
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}
