"""Out-of-scope estimate: is a live question answerable from the corpus at all?

The score of a question is its retriever's best score (the production retriever's, carried by
the event as ``retrieval.results[].score``, or a built-in retriever run by the stage). A
question is *out of scope* when that score is below a threshold calibrated on the gold set:
answerable questions (``gold != []``) are the positives, unanswerable ones the negatives, and
the threshold maximises Youden's J = TPR − FPR on their best-score distributions, which is the
same cut as maximising balanced accuracy ((TPR + TNR) / 2 = (J + 1) / 2). Scores are only
comparable within one retriever, so calibrate on the retriever that produces the live scores.

:class:`service.refusals.stage.ScopeStage` also crosses the estimate with the ``refused``
annotation of :class:`service.refusals.stage.RefusalStage` (run it first):

* ``over_refusal``: refused while in scope (the system declined a question it could answer);
* ``under_refusal``: answered while out of scope (likely a made-up answer).

Both are ``None`` when either side is unknown. Source: Youden 1950, "Index for rating
diagnostic tests"; scikit-learn ``roc_curve``.

Since issue 17 the default detector is :class:`EmbeddingScope` (``analytics.scope_method:
embedding``): the nearest answerable and unanswerable gold questions and the nearest corpus
passage in embedding space, with the retriever's best score, combined by a logistic regression
calibrated on the gold set, whose quality is the ROC AUC of its cross-validated scores (with a
bootstrap interval) — reported next to its counts, and below ``analytics.quality_floor`` the
counts are uncalibrated (:mod:`service.evaluation.detector_quality`). With either detector a live
question
that near-duplicates a gold question takes that row's answerability (:class:`KnownScope`), so
refusing a question the gold set marks unanswerable is never an over-refusal.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import pickle
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from service.coverage import wilson_bounds
from service.embeddings.nearest import NearestMemo
from service.records import OFF_TOPIC, GoldQuestion, Run, ScoredDoc

if TYPE_CHECKING:
    from service.events import QueryLogEvent
    from service.retrievers.base import Retriever


#: The language label of a question whose language is unknown
#: (:data:`service.language.detector.UNDETERMINED`).
UNDETERMINED = "und"

#: The limit of the out-of-scope detector's calibration, stated wherever it is reported.
CALIBRATION_LIMIT = (
    "its ROC AUC and rates are measured on the gold set's unanswerable questions; live "
    "out-of-scope traffic may look nothing like them, so a calibrated detector can still "
    "miss off-corpus questions"
)


#: :data:`CALIBRATION_LIMIT` of a detector calibrated on the gold set's ``kind: off-topic``
#: rows (:func:`scope_rows`).
OFF_TOPIC_CALIBRATION_LIMIT = (
    "its ROC AUC and rates are measured on the gold set's off-topic questions against its "
    "answerable ones; live off-topic traffic may look nothing like them, so a calibrated "
    "detector can still miss off-corpus questions, and in-domain unanswerable questions (on "
    "the corpus's subjects, their answer missing) are not what it detects"
)


def calibration_limit(quality: Mapping[str, Any] | None) -> str:
    """The limit of the detector's calibration for its quality entry (``negatives``:
    :meth:`~service.evaluation.detector_quality.DetectorQuality.as_dict`):
    :data:`OFF_TOPIC_CALIBRATION_LIMIT` when it was measured on off-topic rows, else
    :data:`CALIBRATION_LIMIT`.

    >>> calibration_limit({"negatives": "off-topic"}) == OFF_TOPIC_CALIBRATION_LIMIT
    True
    >>> calibration_limit(None) == CALIBRATION_LIMIT
    True
    """
    if (quality or {}).get("negatives") == OFF_TOPIC:
        return OFF_TOPIC_CALIBRATION_LIMIT
    return CALIBRATION_LIMIT


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
    from sklearn.metrics import roc_auc_score, roc_curve  # here: a fit, not every start

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


#: Fewest ``kind: off-topic`` gold rows that make them the out-of-scope detector's only
#: negatives (:func:`scope_rows`) whatever ``analytics.quality_min_class`` says: the fit needs
#: two of a class (:class:`EmbeddingScope`).
MIN_OFF_TOPIC = 2


def off_topic_needed(min_class: int) -> int:
    """Fewest ``kind: off-topic`` gold rows that make them the out-of-scope detector's only
    negatives: ``analytics.quality_min_class`` (a measurement on fewer is no measurement:
    :func:`~service.evaluation.detector_quality.too_few`), at least :data:`MIN_OFF_TOPIC`.

    >>> off_topic_needed(10), off_topic_needed(0)
    (10, 2)
    """
    return max(MIN_OFF_TOPIC, min_class)


def scope_rows(
    questions: Sequence[GoldQuestion], min_off_topic: int = MIN_OFF_TOPIC
) -> tuple[list[GoldQuestion], list[GoldQuestion]]:
    """``(the rows the out-of-scope detector is calibrated and measured on, the rows measured
    apart)``, each in gold order.

    The detector claims to tell questions the corpus is not about from questions it answers.
    With at least ``min_off_topic`` ``kind: off-topic`` rows (``gold: []``: the corpus is
    not about them; :func:`off_topic_needed` of ``analytics.quality_min_class``) those are
    its negatives against the answerable rows, and the other ``gold: []`` rows — the
    unanswerable ones not marked off-topic (``kind: unanswerable``; in-domain ones, on the
    corpus's subjects with their answer missing, as SQuAD 2.0's "impossible" questions, have
    the words and embeddings of answerable ones) — are left out of its fit, AUC and rates and
    measured apart (how many it judges out of scope). Trial 46 F5: 15 such rows held a
    SQuAD encyclopedia's detector at ROC AUC 0.432, and 0.743 after 20 off-topic rows were
    added beside them, so a rise of off-topic traffic 7 % → 25 % raised nothing.

    Fewer off-topic rows: every row, every ``gold: []`` row a negative, as before them — so
    a gold set that followed the former advice (off-topic rows written ``kind:
    unanswerable``) keeps the negatives it was measured on when its first off-topic rows
    arrive, instead of dropping to the few new ones (review of s47-f5: 20 such rows, AUC
    0.964, calibrated; then 2 ``kind: off-topic`` rows made it uncalibrated on 2).

    >>> rows = [GoldQuestion("a1", "Who built it?", ("p1",)),
    ...         GoldQuestion("u1", "Who did not build it?", (), kind="unanswerable"),
    ...         GoldQuestion("o1", "Book me a taxi", (), kind="off-topic"),
    ...         GoldQuestion("o2", "Tell me a joke", (), kind="off-topic")]
    >>> [[q.id for q in part] for part in scope_rows(rows)]
    [['a1', 'o1', 'o2'], ['u1']]
    >>> [[q.id for q in part] for part in scope_rows(rows, 3)]
    [['a1', 'u1', 'o1', 'o2'], []]
    """
    off_topic = sum(1 for q in questions if not q.answerable and q.kind == OFF_TOPIC)
    if off_topic < max(MIN_OFF_TOPIC, min_off_topic):
        return list(questions), []
    fitted = [q for q in questions if q.answerable or q.kind == OFF_TOPIC]
    apart = [q for q in questions if not q.answerable and q.kind != OFF_TOPIC]
    return fitted, apart


def calibrate_from_run(
    questions: Iterable[GoldQuestion], run: Run, retriever: str | None = None, min_tpr: float = 0.0
) -> ScopeCalibration:
    """Calibrate from a retriever's gold-set run (``{question id: [ScoredDoc]}``).

    Questions missing from ``run`` count as "nothing retrieved".

    Raises:
        ValueError: the gold set lacks answerable or unanswerable questions.
    """
    answerable: list[float | None] = []
    unanswerable: list[float | None] = []
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


def describe(calibration: ScopeCalibration) -> dict[str, Any]:
    """The calibration as a JSON-able report row (``-inf``/``nan`` become ``None``)."""
    row = calibration._asdict()
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


# -- the embedding detector (issue 17) ---------------------------------------------------------

#: Smallest character n-gram cosine similarity at which a live question is a near-duplicate
#: of a gold question, whose answerability then decides its scope (:class:`KnownScope`; the
#: same measure and default as ``shadow.known_threshold``).
DEFAULT_KNOWN_THRESHOLD = 0.9
#: Feature names of :class:`EmbeddingScope`, in column order (the retriever's only when used).
FEATURES: tuple[str, ...] = ("gold_answerable", "gold_unanswerable", "corpus", "retriever")
#: The largest share of the answerable gold rows the off-corpus rule may leave below its
#: cutoff (:func:`robust_cutoff`): the cutoff is that low quantile of their support
#: similarities, not their least, so one odd answerable row does not set it (trial 11,
#: finding F3: one scrubbed answerable row moved the least from 0.352 to 0.208 and the live
#: over-refusals from 49 to 345). The share is ``min(this, 1 - min_tpr)``
#: (:func:`off_corpus_trim`).
OFF_CORPUS_TRIM = 0.05
#: Support similarities within this of a cutoff are at it, not below (cosine units): the
#: float32 products of unit vectors carry errors of ~1e-7, so a question on a gold row's own
#: passage read 0.99999995 against another row's 1.00000004 and was "below" it.
SUPPORT_TOLERANCE = 1e-6
#: A gold-set change that moves an off-corpus cutoff by more than this (support similarity,
#: cosine units) is stated as a notice (:func:`cutoff_change`).
CUTOFF_NOTICE_DELTA = 0.02


#: The level of an off-corpus cutoff's bootstrap range (:func:`cutoff_band`).
CUTOFF_BAND_LEVEL = 0.95


def cutoff_band(
    values: np.ndarray, trim: float, level: float = CUTOFF_BAND_LEVEL
) -> tuple[float, float]:
    """The range of the off-corpus cutoff :func:`robust_cutoff` ``(values, trim)`` over
    draws of the answerable gold rows that set it: the percentile bootstrap interval (Efron &
    Tibshirani 1993, ch. 13) at ``level``, computed exactly rather than by resampling. The
    cutoff of a resample of ``values`` (shape ``(n,)``, n ≥ 1) with replacement is its
    ``k``-th smallest value (0-based, ``k = ⌊trim · n⌋``: :func:`trimmed_rows`), and it is at
    most the ``j``-th smallest of ``values`` (1-based, ties kept apart by position) iff at
    least ``k + 1`` of the ``n`` draws fall among those ``j``: a Binomial(n, j/n) count, so
    P = 1 - F_Bin(k; n, j/n) — the exact bootstrap law of an order statistic (Hutson & Ernst
    2000, JRSS B 62(1), "The exact bootstrap mean and variance of an L-estimator"). The
    range is ``(the smallest value whose P reaches (1 - level) / 2, the smallest whose P
    reaches (1 + level) / 2)``: the inverted-cdf quantiles of that law, what an infinite
    number of resamples would give. Deterministic, O(n).

    Why: the cutoff is an order statistic of 30-60 rows, set by one or two of them; another
    draw of as many answerable rows (one accepted suggestion) moves it by the gaps between
    the lowest values (trial 37b, finding M3: 0.364 → 0.295 and out of scope 578 → 341 of
    2,881 live questions). A live question whose support similarity lies in this range has an
    off-corpus verdict that depends on that draw (:meth:`EmbeddingScope.bands`). Leaving one
    row out (the jackknife) does not show it: it cannot add a row below the least. Nor can
    the bootstrap: with ``k = 0`` (the least) the range starts at the cutoff.

    Raises:
        ValueError: ``values`` is empty, ``trim`` is outside [0, 1) or ``level`` outside
            (0, 1).

    Three values and ``trim`` 0 (the cutoff is a resample's least): it is 0.1 unless the
    resample misses 0.1 (probability (2/3)³ ≈ 0.296), and 0.3 only when every draw is 0.3
    ((1/3)³ ≈ 0.037): P(≤ 0.2) = 0.963, so the 97.5 % point is 0.3, the 95 % one 0.2.

    >>> cutoff_band(np.array([0.3, 0.1, 0.2]), 0.0)
    (0.1, 0.3)
    >>> cutoff_band(np.array([0.3, 0.1, 0.2]), 0.0, level=0.9)
    (0.1, 0.2)
    """
    from scipy.special import bdtrc  # the binomial upper tail P(X > k), a ufunc

    if values.shape[0] == 0:
        raise ValueError("a cutoff's range needs at least one value")
    if not 0.0 <= trim < 1.0:
        raise ValueError(f"trim must be in [0, 1), got {trim}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n = values.shape[0]
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    # P(the resample's k-th smallest <= the j-th smallest value), j = 1..n (1 at j = n)
    below = np.asarray(bdtrc(trimmed_rows(trim, n), n, np.arange(1, n + 1) / n), dtype=float)
    below[-1] = 1.0
    low = int(np.searchsorted(below, (1.0 - level) / 2 - 1e-12))
    high = int(np.searchsorted(below, (1.0 + level) / 2 - 1e-12))
    return float(ordered[low]), float(ordered[min(high, n - 1)])


def off_corpus_trim(min_tpr: float) -> float:
    """The share of answerable gold rows the off-corpus rule may leave below its cutoff for a
    detector whose in-scope recall target is ``min_tpr`` (in [0, 1]): ``min(OFF_CORPUS_TRIM,
    1 - min_tpr)``, in [0, 0.05], so the rule alone keeps at least ``min_tpr`` of the
    answerable rows in scope on the rows it is set on.

    >>> off_corpus_trim(0.95), off_corpus_trim(0.99), off_corpus_trim(0.0)
    (0.05, 0.01, 0.05)
    """
    return round(min(OFF_CORPUS_TRIM, max(0.0, 1.0 - min_tpr)), 12)


def robust_cutoff(values: np.ndarray, trim: float) -> tuple[float, int]:
    """The off-corpus cutoff of the answerable rows' support similarities ``values`` (shape
    ``(n,)``, n ≥ 1) and the position in ``values`` of the row that sets it: the ``k``-th
    smallest value (0-based), ``k = ⌊trim · n⌋`` (capped at ``n - 1``) — the lower
    ``trim`` order-statistic quantile (Hyndman & Fan 1996, type 1 on ``k + 1``), a trimmed
    minimum. At most ``k`` values lie below it (fewer with ties), so the rule keeps at least
    ``1 - trim`` of these rows in scope; one added value moves it at most to its neighbour
    in sorted order. With ``trim · n < 1`` it is the least value (a small gold set has
    nothing to spare: stated by the reports as "the least"). Ties go to the first position.

    Raises:
        ValueError: ``values`` is empty or ``trim`` is outside [0, 1).

    >>> robust_cutoff(np.array([0.40, 0.05, 0.35] + [0.5] * 17), 0.05)
    (0.35, 2)
    >>> robust_cutoff(np.array([0.40, 0.35] + [0.5] * 17), 0.05)
    (0.35, 1)
    """
    if values.shape[0] == 0:
        raise ValueError("a cutoff needs at least one value")
    if not 0.0 <= trim < 1.0:
        raise ValueError(f"trim must be in [0, 1), got {trim}")
    k = min(int(math.floor(trim * values.shape[0] + 1e-9)), values.shape[0] - 1)
    order = np.argsort(values, kind="stable")
    return float(values[order[k]]), int(order[k])


def nearest_similarity(
    queries: np.ndarray, rows: np.ndarray, exclude_self: bool = False
) -> np.ndarray:
    """Largest cosine similarity of each query to ``rows`` (both L2-normalised), shape
    ``(n_queries,)``, in [-1, 1]; ``-1`` when ``rows`` is empty (nothing to be near).

    With ``exclude_self`` the queries *are* the rows (same order) and each one's similarity
    to itself is left out (leave-one-out).

    >>> q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    >>> nearest_similarity(q, q).tolist(), nearest_similarity(q, q, exclude_self=True).tolist()
    ([1.0, 1.0], [0.0, 0.0])
    """
    if rows.shape[0] == 0 or queries.shape[0] == 0:
        return np.full(queries.shape[0], -1.0)
    sims = queries @ rows.T
    if exclude_self:
        if sims.shape[0] != sims.shape[1]:
            raise ValueError("exclude_self needs the queries to be the rows")
        np.fill_diagonal(sims, -np.inf)
        if sims.shape[1] == 1:
            return np.full(queries.shape[0], -1.0)
    return np.asarray(sims.max(axis=1), dtype=np.float64)


def nearest_with_index(queries: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`nearest_similarity` (without ``exclude_self``) and the position in ``rows`` of
    each query's nearest row: ``(similarity float64, index int64)``, shapes ``(n_queries,)``;
    ``(-1, -1)`` per query when ``rows`` is empty. The same product and maximum as
    :func:`nearest_similarity`, so the similarities are the same bits.

    >>> q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    >>> sims, at = nearest_with_index(q, np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32))
    >>> sims.tolist(), at.tolist()
    ([1.0, 1.0], [1, 0])
    """
    if rows.shape[0] == 0 or queries.shape[0] == 0:
        return np.full(queries.shape[0], -1.0), np.full(queries.shape[0], -1, dtype=np.int64)
    sims = queries @ rows.T
    return (np.asarray(sims.max(axis=1), dtype=np.float64),
            np.asarray(sims.argmax(axis=1), dtype=np.int64))  # fmt: skip


class SupportCheck(NamedTuple):
    """The embedding detector's support: how close to the corpus or the gold set a question
    must be for the fitted regression to speak about it at all.

    A question's *support similarity* is its largest cosine similarity to any corpus passage
    or any gold question (answerable or not). A question whose support similarity is below
    ``cutoff`` — the smallest support similarity of an answerable gold question once the
    lowest ``⌊trim · n⌋`` are left out (:func:`robust_cutoff`; leave-one-out, as the detector's
    features) — is farther from the corpus and from every gold question than the answerable
    gold questions that set it: outside the region the regression was fitted on, where it
    extrapolates arbitrarily (a news gold set whose unanswerable rows are news questions
    teaches it nothing about banking questions). Such a question is counted out of scope
    (*off-corpus*) whatever the regression says.

    Attributes:
        cutoff: support similarity below which a question is off-corpus, in [-1, 1].
        held_out_fpr: the rule's false-positive rate measured on held-out gold answerables:
            in each fold of the detector's stratified cross-validation, the cutoff is the
            same rule on the *training* folds' answerable rows, and a held-out answerable row
            below it counts as a false positive; in [0, 1].
        held_out_tpr: share of held-out *unanswerable* gold rows the same rule flags, in [0, 1]
            (in-domain unanswerable rows are not expected to be caught: the regression is for
            them).
        n_answerable, n_unanswerable: gold rows the rates are measured on.

    With ``by_language`` (the rule by script, :func:`support_by_language`), ``cutoff`` and
    the rates above are the pooled rule's, kept for comparison in the JSON report: a live
    question is judged by ``by_script`` (:meth:`EmbeddingScope.cutoffs`), and the text and
    HTML reports show the per-language rows only.
    """

    cutoff: float
    held_out_fpr: float
    held_out_tpr: float
    n_answerable: int
    n_unanswerable: int
    #: per language key (:func:`service.language.tags.language_key`), when the gold rows'
    #: languages are known: ``{"cutoff": float | None, "basis": "own" | "script Latn" | "not
    #: judged", "script": str | None, "held_out_fpr": float | None, "n_answerable": int,
    #: "n_unanswerable": int}`` (:func:`support_by_language`); empty: one pooled cutoff
    by_language: dict[str, dict[str, Any]] = {}
    #: the fallback cutoff of each script (the least of its own-cutoff languages' cutoffs)
    by_script: dict[str, float] = {}
    #: answerable rows a language needs for its own cutoff (0: the rule is pooled)
    min_rows: int = 0
    #: the share of answerable rows the rule may leave below a cutoff (:func:`robust_cutoff`;
    #: the fold cutoffs of the rates follow the same rule), in [0, 1)
    trim: float = 0.0
    #: the least support similarity of an answerable gold row (the rule's cutoff before trial
    #: 11's F3): what the cutoff would be if no row were left below it
    least: float | None = None
    #: the gold id of the answerable row whose support similarity is ``cutoff`` (``None``:
    #: ids not given)
    set_by: str | None = None
    #: the answerable gold rows below ``cutoff`` (ids, lowest support first): the rows the
    #: rule gives up rather than let them set it
    below: tuple[str, ...] = ()
    #: the notice of the gold-set change that moved the cutoff (:func:`cutoff_change`), or
    #: ``None``
    change: str | None = None
    #: the most ``trim`` allowed (:func:`off_corpus_trim` of the detector's ``min_tpr``); a
    #: ``trim`` below it: leaving out more rows would bring the detector's held-out in-scope
    #: recall below ``min_tpr`` (:class:`EmbeddingScope`)
    trim_limit: float = 0.0
    #: the range of ``cutoff`` over draws of the answerable rows that set it: ``(low, high)``,
    #: its :data:`CUTOFF_BAND_LEVEL` bootstrap interval (:func:`cutoff_band`); ``None``: not
    #: measured (a fit kept before it)
    band: tuple[float, float] | None = None
    #: with the rule by script, each script's cutoff's range (as ``band``; the rows of
    #: ``by_language`` carry their script's as ``"band"``)
    band_by_script: dict[str, tuple[float, float]] = {}


def choose_trim(n: int, limit: float, recall: Callable[[float], float], min_tpr: float) -> float:
    """The off-corpus rule's trim: ``j / n`` for the most rows ``j`` ≤ ``⌊limit · n⌋`` whose
    leaving out keeps ``recall(j / n)`` — the detector's held-out in-scope recall with the rule
    at that trim, in [0, 1] — at ``min_tpr`` or above; 0 (the least) when none does. Tries the
    most first, then bisects (recall falls as the trim grows), so ``recall`` is called at most
    ``2 + log2(⌊limit · n⌋)`` times, each trim once. (Chosen on the folds its recall is
    measured on: a choice among at most ``⌊limit · n⌋ + 1`` rules, not a fit.)

    >>> rates = {0.0: 0.98, 0.05: 0.96, 0.1: 0.95, 0.15: 0.94, 0.2: 0.93}
    >>> choose_trim(20, 0.2, lambda t: rates[round(t, 2)], 0.95)
    0.1
    >>> choose_trim(20, 0.2, lambda t: rates[round(t, 2)], 0.99), choose_trim(19, 0.05, None, 0.9)
    (0.0, 0.0)
    """
    low, high = 0, trimmed_rows(limit, n)
    if high == 0 or recall(high / n) >= min_tpr - 1e-12:
        return high / n if high else 0.0
    high -= 1
    while low < high:
        middle = (low + high + 1) // 2
        if recall(middle / n) >= min_tpr - 1e-12:
            low = middle
        else:
            high = middle - 1
    return low / n


def trimmed_rows(trim: float, n: int) -> int:
    """Answerable rows :func:`robust_cutoff` leaves out of ``n`` at ``trim``: ``⌊trim · n⌋``,
    capped at ``n - 1`` (0 when ``n`` < 1).

    >>> trimmed_rows(0.05, 45), trimmed_rows(0.05, 19), trimmed_rows(0.0, 45)
    (2, 0, 0)
    """
    return max(0, min(int(math.floor(trim * n + 1e-9)), n - 1))


def support_text(support: Mapping[str, Any]) -> str:
    """The off-corpus rule as the reports state it, from a :class:`SupportCheck`'s
    ``_asdict()`` (the JSON report's ``support``): its cutoff, how it is set (the least
    support similarity of the answerable gold questions once the lowest ``⌊trim · n⌋`` are
    left out, :func:`robust_cutoff`), the row that sets it and the least, when known, and its
    held-out false-positive rate; then the notice of a gold-set change that moved it.

    >>> print(support_text({"cutoff": 0.30877, "held_out_fpr": 1 / 45, "n_answerable": 45}))
    ... # doctest: +NORMALIZE_WHITESPACE
    off-corpus rule (support similarity below 0.309, the least any answerable gold question
    has): held-out false-positive rate 2.2% on 45 answerable gold questions (1 of 45; Wilson
    95 % [0.4%, 11.6%])
    >>> print(support_text({"cutoff": 0.352, "held_out_fpr": 2 / 45, "n_answerable": 45,
    ...                     "trim": 0.05, "least": 0.208, "set_by": "q-7"}))
    ... # doctest: +NORMALIZE_WHITESPACE
    off-corpus rule (support similarity below 0.352, the least of the answerable gold
    questions once the lowest 2 of 45 are left out, set by q-7; their least is 0.208):
    held-out false-positive rate 4.4% on 45 answerable gold questions (2 of 45; Wilson 95 %
    [1.2%, 14.8%])

    With the cutoff's range (:func:`cutoff_band`):

    >>> print(support_text({"cutoff": 0.364, "held_out_fpr": 0.0, "n_answerable": 40,
    ...                     "band": (0.288, 0.398)}))  # doctest: +NORMALIZE_WHITESPACE
    off-corpus rule (support similarity below 0.364, the least any answerable gold question
    has): held-out false-positive rate 0.0% on 40 answerable gold questions (0 of 40; Wilson
    95 % [0.0%, 8.8%]); the cutoff's 95 % bootstrap range over draws of as many answerable
    rows: [0.288, 0.398]
    """
    if support.get("by_language"):
        text = ("off-corpus rule by script, measured per gold-set language (support "
                "similarity below the least any answerable gold question of the script's "
                f"languages with at least {support.get('min_rows', 0)} such rows has"
                f"{_trim_clause(support)}; a script without one is not judged):")  # fmt: skip
    else:
        n, trim = int(support["n_answerable"]), float(support.get("trim") or 0.0)
        if trimmed_rows(trim, n):
            how = (f"the least of the answerable gold questions once the lowest "
                   f"{trimmed_rows(trim, n)} of {n} are left out")  # fmt: skip
            if support.get("set_by"):
                how += f", set by {support['set_by']}"
            if support.get("least") is not None:
                how += f"; their least is {support['least']:.3f}"
        else:
            how = "the least any answerable gold question has"
            if support.get("set_by"):
                how += f", set by {support['set_by']}"
            if trimmed_rows(float(support.get("trim_limit") or 0.0), n):
                how += (", none left out: leaving out the lowest would bring the held-out "
                        "in-scope recall below its target")  # fmt: skip
        fpr = float(support["held_out_fpr"])
        text = (f"off-corpus rule (support similarity below {support['cutoff']:.3f}, {how}): "
                f"held-out false-positive rate {fpr:.1%} on {n} answerable gold questions"
                f"{rate_interval(fpr, n)}")  # fmt: skip
    if band := band_text(support):  # (a fit kept before the range has none)
        said = (f"the cutoff's {CUTOFF_BAND_LEVEL * 100:.0f} % bootstrap range over draws of "
                f"as many answerable rows: {band}")  # fmt: skip
        # by script the text ends in a colon: its lines by language follow
        text = f"{text[:-1]}; {said}:" if text.endswith(":") else f"{text}; {said}"
    if support.get("change"):
        text += f"; {support['change']}"
    return text


def _trim_clause(support: Mapping[str, Any]) -> str:
    """``", once the lowest ⌊0.043 · n⌋ of its n are left out"`` for a rule by script with a
    trim (``trim``: :func:`robust_cutoff`; n: the script's setting rows), ``""`` without."""
    trim = float(support.get("trim") or 0.0)
    if trim <= 0:
        return ""
    return f", once the lowest ⌊{trim:.3f} · n⌋ of its n are left out"


def cutoff_change(
    old: float | None,
    new: float,
    why: str,
    set_by: str | None = None,
    least: float | None = None,
    delta: float = CUTOFF_NOTICE_DELTA,
) -> str | None:
    """The notice of a gold-set change that moved an off-corpus cutoff by more than ``delta``
    (support similarity), or ``None`` (no previous cutoff, or a smaller move). ``why``: the
    change (``"accepted gold row q-9"``, ``"a new gold-set file at start"``); ``set_by``
    and ``least`` (:class:`SupportCheck`) name the row that sets the new cutoff and the least
    answerable support.

    >>> cutoff_change(0.352, 0.208, "accepted gold row q-9", "q-9", 0.208)
    ... # doctest: +NORMALIZE_WHITESPACE
    'off-corpus cutoff moved 0.352 → 0.208 (accepted gold row q-9; now set by q-9, the least
    answerable support 0.208): live off-corpus and over-/under-refusal counts before and after
    are not comparable'
    >>> cutoff_change(0.352, 0.349, "accepted gold row q-9") is None
    True
    """
    if old is None or not math.isfinite(old) or abs(new - old) <= delta:
        return None
    detail = why
    if set_by:
        detail += f"; now set by {set_by}"
        if least is not None:
            detail += f", the least answerable support {least:.3f}"
    return (f"off-corpus cutoff moved {old:.3f} → {new:.3f} ({detail}): live off-corpus and "
            "over-/under-refusal counts before and after are not comparable")  # fmt: skip


def support_change(
    old: SupportCheck | None,
    new: SupportCheck,
    why: str,
    delta: float = CUTOFF_NOTICE_DELTA,
) -> str | None:
    """The notice of a gold-set change (``why``) that moved the off-corpus cutoff of ``old``
    (the detector it replaces; ``None``: none) to ``new``'s by more than ``delta``: the pooled
    cutoff (:func:`cutoff_change`), or with the rule by script each script's cutoff that
    moved, appeared or went; ``None`` when none did.

    >>> a = SupportCheck(0.35, 0.0, 0.0, 40, 10, by_script={"Latn": 0.35, "Deva": 0.6})
    >>> b = a._replace(by_script={"Latn": 0.21})
    >>> support_change(a, b, "gold-set refresh, 41 rows")  # doctest: +NORMALIZE_WHITESPACE
    'off-corpus cutoffs moved: Deva 0.600 → not judged, Latn 0.350 → 0.210 (gold-set refresh,
    41 rows): live off-corpus and over-/under-refusal counts before and after are not
    comparable'
    """
    if old is None:
        return None
    if not (old.by_script or new.by_script):
        return cutoff_change(old.cutoff, new.cutoff, why, new.set_by, new.least, delta)
    moved = []
    for script in sorted(set(old.by_script) | set(new.by_script)):
        was, now = old.by_script.get(script), new.by_script.get(script)
        if was is not None and now is not None and abs(now - was) <= delta:
            continue
        moved.append(f"{script} {'not judged' if was is None else f'{was:.3f}'} → "
                     f"{'not judged' if now is None else f'{now:.3f}'}")  # fmt: skip
    if not moved:
        return None
    return (f"off-corpus cutoffs moved: {', '.join(moved)} ({why}): live off-corpus and "
            "over-/under-refusal counts before and after are not comparable")  # fmt: skip


def rate_interval(rate: float, n: int) -> str:
    """``" (1 of 44; Wilson 95 % [0.4%, 11.8%])"``: the count behind a held-out rate
    ``rate`` of ``n`` rows and its Wilson score interval
    (:func:`~service.coverage.wilson_bounds`), which a rate on few rows needs beside it
    (trial 18: "2.3 % on 44 rows" read as precise while ~6 % of its live answerable
    questions were off-corpus); ``""`` when ``n`` is 0. A held-out rate pooled over the
    detector's fold draws (:func:`repeated_folds`) is a mean count of ``n`` rows, not a whole
    one: it is given to a tenth, its interval Wilson's on that count of ``n`` (the rows are
    ``n``; the draws add no rows).

    >>> rate_interval(1 / 44, 44)
    ' (1 of 44; Wilson 95 % [0.4%, 11.8%])'
    >>> rate_interval(16 / 390, 39)
    ' (1.6 of 39, mean over fold draws; Wilson 95 % [1.0%, 15.4%])'
    """
    if n <= 0:
        return ""
    k = round(rate * n)
    if abs(k - rate * n) > 1e-6:
        low, high = wilson_bounds(rate * n, n)
        return (f" ({rate * n:.1f} of {n}, mean over fold draws; Wilson 95 % "
                f"[{low:.1%}, {high:.1%}])")  # fmt: skip
    low, high = wilson_bounds(k, n)
    return f" ({k} of {n}; Wilson 95 % [{low:.1%}, {high:.1%}])"


def support_by_language_text(support: Mapping[str, Any]) -> list[str]:
    """One line per gold-set language of a :class:`SupportCheck`'s ``_asdict()`` judged
    per language (none when it is pooled), and the limit sentence naming the languages.

    >>> lines = support_by_language_text({"by_language": {
    ...     "de": {"cutoff": 0.285, "basis": "own", "script": "Latn", "held_out_fpr": 0.0,
    ...            "n_answerable": 28},
    ...     "en": {"cutoff": 0.285, "basis": "script Latn", "script": "Latn",
    ...            "held_out_fpr": 0.125, "n_answerable": 8},
    ...     "hi": {"cutoff": None, "basis": "not judged", "script": "Deva",
    ...            "held_out_fpr": None, "n_answerable": 1}}})
    >>> for line in lines: print(line)  # doctest: +NORMALIZE_WHITESPACE
    de: below 0.285 (the Latn cutoff; 28 answerable gold questions), held-out false-positive
    rate 0.0% (0 of 28; Wilson 95 % [0.0%, 12.1%])
    en: below 0.285 (the Latn cutoff; too few answerable gold questions to set it, 8),
    false-positive rate 12.5% on them
    hi: not judged by the off-corpus rule (1 answerable gold question, no language of its
    script has enough)
    off-corpus rule limit: cutoffs and false-positive rates are measured on the gold set's
    languages (de, en, hi); a question in another language is not judged, one of no named
    language by its script's cutoff or not at all
    """
    rows = support.get("by_language") or {}
    lines = []
    for key, row in sorted(rows.items()):
        n = row["n_answerable"]
        if row["cutoff"] is None:
            lines.append(f"{key}: not judged by the off-corpus rule ({n} answerable gold "
                         f"question{'s' if n != 1 else ''}, {not_judged_why(row)})")  # fmt: skip
        elif row["basis"] == "own":
            fpr = (
                "not measured (no fold held out one of its rows with a training row of its script)"
                if row["held_out_fpr"] is None
                else f"{row['held_out_fpr']:.1%}{rate_interval(row['held_out_fpr'], n)}"
            )
            lines.append(f"{key}: below {row['cutoff']:.3f} (the {row['script']} cutoff; {n} "
                         f"answerable gold questions), held-out false-positive rate "
                         f"{fpr}")  # fmt: skip
        else:
            if row["held_out_fpr"] is None:  # no answerable row of its own to measure on
                rate = "false-positive rate not measured (no answerable gold question)"
            else:
                rate = f"false-positive rate {row['held_out_fpr']:.1%} on them"
            lines.append(f"{key}: below {row['cutoff']:.3f} (the {row['script']} cutoff; too few "
                         f"answerable gold questions to set it, {n}), {rate}")  # fmt: skip
    if rows:
        from service.language.gold import gold_keys_by_label

        # rows of a script the language stage never labels (en-Latn) judge its label (en)
        folded = [(live, keys) for live, keys in gold_keys_by_label(rows).items()
                  if live not in rows]  # fmt: skip
        also = "".join(f"; the {', '.join(keys)} rows also judge live {live}, the label the "
                       "language stage gives them" for live, keys in folded)  # fmt: skip
        lines.append(
            "off-corpus rule limit: cutoffs and false-positive rates are measured on "
            f"the gold set's languages ({', '.join(sorted(rows))}{also}); a question in "
            "another language is not judged, one of no named language by its script's "
            "cutoff or not at all"
        )
    return lines


def not_judged_why(row: Mapping[str, Any]) -> str:
    """Why a gold-set language of :func:`support_by_language` is not judged by the off-corpus
    rule: its script has no measured language, or its questions have no script at all.

    >>> not_judged_why({"script": "Deva"}), not_judged_why({"script": None})
    ('no language of its script has enough', 'its questions have no letters of a known script')
    """
    if row.get("script") is None:
        return "its questions have no letters of a known script"
    return "no language of its script has enough"


def live_by_language_text(scope: Mapping[str, Any]) -> str:
    """The live off-corpus and not-judged counts per language of the JSON report's
    ``out_of_scope`` (empty when neither has a count).

    >>> live_by_language_text({"off_corpus_by_language": {"en": 700, "de": 3},
    ...                        "not_judged_by_language": {"hi": 250}})
    'live off-corpus by language: en 700, de 3; not judged by the off-corpus rule: hi 250'

    Totals kept before the counts by language (restored without them) count off-corpus
    events no language holds; they are named, so the languages add up to ``off_corpus``:

    >>> live_by_language_text({"off_corpus": 703, "off_corpus_by_language": {"en": 3}})
    'live off-corpus by language: en 3, 700 counted before the counts by language were kept'
    """
    off = scope.get("off_corpus_by_language") or {}
    unjudged = scope.get("not_judged_by_language") or {}
    parts = []
    counts = [f"{k} {n}" for k, n in off.items()]
    if (before := live_before_by_language(scope)) > 0:
        counts.append(f"{before} counted before the counts by language were kept")
    if counts:
        parts.append(f"live off-corpus by language: {', '.join(counts)}")
    if unjudged:
        parts.append("not judged by the off-corpus rule: "
                     + ", ".join(f"{k} {n}" for k, n in unjudged.items()))  # fmt: skip
    return "; ".join(parts)


def band_text(support: Mapping[str, Any], places: int = 3) -> str:
    """The off-corpus cutoff's range as the reports state it, from a :class:`SupportCheck`'s
    ``_asdict()``: ``"[0.288, 0.398]"``, or by script ``"Latn [0.288, 0.398], Deva [0.55,
    0.61]"``; ``""`` when not measured. ``places``: decimals (4 names the range the unstable
    counts run under: :attr:`~service.pipeline.totals.AnnotationTotals.band`).

    >>> band_text({"band": (0.2878, 0.3984)})
    '[0.288, 0.398]'
    >>> band_text({"band": (0.2878, 0.3984)}, places=4)
    '[0.2878, 0.3984]'
    >>> band_text({"by_language": {"en": {}}, "band_by_script": {"Latn": [0.2878, 0.3984]}})
    'Latn [0.288, 0.398]'
    """
    if support.get("by_language"):
        bands = support.get("band_by_script") or {}
        return ", ".join(f"{script} [{low:.{places}f}, {high:.{places}f}]"
                         for script, (low, high) in sorted(bands.items()))  # fmt: skip
    band = support.get("band")
    return "" if band is None else f"[{band[0]:.{places}f}, {band[1]:.{places}f}]"


#: What the out-of-scope share (the reports' ``out_of_scope.share``, the "all events" column
#: of the rates table) counts, said next to the drift windows, which count only the stable
#: verdicts (``drift.out_of_scope.counts``; session 39: the table put the two side by side
#: without saying so).
SHARE_COUNTS = ("every verdict (the out_of_scope drift windows count only the verdicts the "
                "off-corpus cutoff's range does not move)")  # fmt: skip
#: What the unstable count does not cover: a gold-set change refits the regression too,
#: whose threshold and weights move verdicts the cutoff's range does not hold. Measured in
#: session 39 (``bench_scope_coverage``'s draws 0-11: XQuAD-en gold rows, CLINC150 oos;
#: one accepted answerable row on an uncovered article, refit, the 10,854 live verdicts
#: judged again): the threshold moved 0.002-0.058 (trial 37b's accept: 0.439 -> 0.288), and
#: 307 verdicts flipped, 194 of them marked unstable before, 113 not (1.0 % of the verdicts:
#: 111 moved by the regression, 2 by the off-corpus rule at an unchanged cutoff: the accepted
#: row is new support, lifting a question near it above the cutoff from below the range);
#: ``benchmarks.bench_scope_accept``.
REGRESSION_MOVES = ("nor does it cover the detector's regression, which a gold-set change "
                    "refits too: on 12 XQuAD/CLINC150 draws one accepted row moved its "
                    "threshold by 0.002 to 0.058 and flipped verdicts outside the range, 1.0 % "
                    "of all; on trial 37b's smaller gold set one accept moved it from 0.439 "
                    "to 0.288")  # fmt: skip


def unstable_text(scope: Mapping[str, Any]) -> str:
    """What the JSON report's ``out_of_scope`` says of the verdicts the off-corpus cutoff's
    range moves (``unstable``: ``{"out": n, "in": n}`` and, since session 39, the counts
    under the range now in use — ``scored``, ``out_of_scope``, ``since_scored``, ``since``,
    ``stable_share``: :func:`~service.pipeline.totals.unstable_counts`; without them the
    scope's own ``scored`` / ``out_of_scope``; the range, ``support``'s :func:`band_text`):
    how many, since when (a refresh that moved the range, or an upgrade, started them again),
    the out-of-scope count's range, what the range does not cover (:data:`REGRESSION_MOVES`),
    and the verdicts the drift dimension tests with their out-of-scope share; ``""`` when the
    range was not measured or none is scored.

    >>> print(unstable_text({"scored": 2881, "out_of_scope": 578, "unstable": {"out": 281,
    ...     "in": 128}, "support": {"band": (0.2878, 0.3984)}}))  # doctest: +NORMALIZE_WHITESPACE
    409 of 2881 scored questions (14.2%) lie in the off-corpus cutoff's 95 % bootstrap range
    over resamples of the answerable gold rows that set it ([0.288, 0.398]): 281 of the 578
    out of scope and 128 in scope, so within that range the count could rise to 706 or fall
    toward 297 (a bound: the detector's regression may keep some of them out); the range
    resamples these rows and cannot fall below their least, so another gold set may move the
    count further; nor does it cover the detector's regression, which a gold-set change
    refits too: on 12 XQuAD/CLINC150 draws one accepted row moved its threshold by 0.002 to
    0.058 and flipped verdicts outside the range, 1.0 % of all; on trial 37b's smaller gold
    set one accept moved it from 0.439 to 0.288; the out_of_scope drift dimension tests only
    the other 2472 (out of scope 297 of them, 12.0%)

    The upper end is exact (the count only grows as the cutoff rises); the lower end is a
    bound another rule of the detector (the regression) may keep from being reached
    (review of s38-oos). Counted since a refresh moved the range (or an upgrade from totals
    kept without it), the figures are the range's own, and the text says since when:

    >>> print(unstable_text({"scored": 3000, "out_of_scope": 600, "unstable": {"out": 20,
    ...     "in": 10, "scored": 400, "out_of_scope": 90, "since_scored": 2600,
    ...     "since": "2026-12-03T01:00:00+00:00"}, "support": {"band": (0.2878, 0.3984)}}))
    ... # doctest: +NORMALIZE_WHITESPACE
    30 of 400 questions scored since the range became [0.288, 0.398] (event time
    2026-12-03T01:00:00+00:00; the 2600 scored before were judged under another range or
    before these counts were kept) (7.5%) lie in the off-corpus cutoff's 95 % bootstrap
    range over resamples of the answerable gold rows that set it ([0.288, 0.398]): 20 of the
    90 out of scope and 10 in scope, so within that range the count could rise to 100 or
    fall toward 70 (a bound: the detector's regression may keep some of them out); the range
    resamples these rows and cannot fall below their least, so another gold set may move the
    count further; nor does it cover the detector's regression, which a gold-set change
    refits too: on 12 XQuAD/CLINC150 draws one accepted row moved its threshold by 0.002 to
    0.058 and flipped verdicts outside the range, 1.0 % of all; on trial 37b's smaller gold
    set one accept moved it from 0.439 to 0.288; the out_of_scope drift dimension tests only
    the other 370 (out of scope 70 of them, 18.9%)
    """
    unstable = scope.get("unstable")
    band = band_text(scope.get("support") or {})
    if not unstable or not band:
        return ""
    scored = int(unstable.get("scored", scope.get("scored")) or 0)
    if not scored:
        return ""
    out, inside = int(unstable["out"]), int(unstable["in"])
    total = int(unstable.get("out_of_scope", scope["out_of_scope"]))
    moved = out + inside
    level = f"{CUTOFF_BAND_LEVEL * 100:.0f} %"
    before = int(unstable.get("since_scored") or 0)
    what = f"{scored} scored questions"
    if before:  # counted under this range only: since a refresh moved it, or an upgrade
        when = f"event time {unstable['since']}; " if unstable.get("since") else ""
        what = (f"{scored} questions scored since the range became {band} ({when}the "
                f"{before} scored before were judged under another range or before these "
                f"counts were kept)")  # fmt: skip
    stable = scored - moved
    stable_text = (f"; the out_of_scope drift dimension tests only the other {stable} (out of "
                   f"scope {total - out} of them, {(total - out) / stable:.1%})"
                   if stable else "; the out_of_scope drift dimension tests none")  # fmt: skip
    return (f"{moved} of {what} ({moved / scored:.1%}) lie in the "
            f"off-corpus cutoff's {level} bootstrap range over resamples of the "
            f"answerable gold rows that set it ({band}): {out} of the {total} out of scope "
            f"and {inside} in scope, so within that range the count could rise to "
            f"{total + inside} or fall toward {total - out} (a bound: the detector's "
            f"regression may keep some of them out); the range resamples these rows and "
            f"cannot fall below their least, so another gold set may move the count "
            f"further; {REGRESSION_MOVES}{stable_text}")  # fmt: skip


def windows_count(dim: str, body: Mapping[str, Any]) -> str:
    """What a rate dimension's windows count, said after its rates where it differs from the
    share the reports show beside them: ``out_of_scope``'s windows count only the stable
    verdicts (``counts``, :data:`service.drift.stage.UNITS`), its share every verdict;
    ``""`` for the others or a report without ``counts``.

    >>> windows_count("out_of_scope", {"counts": "scored questions (stable)"})
    ' of scored questions (stable)'
    >>> windows_count("refusal", {"counts": "answers"})
    ''
    """
    counts = body.get("counts")
    return f" of {counts}" if dim == "out_of_scope" and counts else ""


def no_gold_rows_text(scope: Mapping[str, Any]) -> str:
    """The live questions the JSON report's ``out_of_scope`` gave no verdict because no gold
    row is written in their language (``no_gold_rows_by_language``); empty when none.

    >>> print(no_gold_rows_text({"no_gold_rows_by_language": {"de": 400, "hi": 3}}))
    ... # doctest: +NORMALIZE_WHITESPACE
    403 questions not judged for scope: no gold row is written in their language
    (de 400, hi 3); add gold rows in it to judge them
    >>> no_gold_rows_text({})
    ''

    Those counted by an earlier gold set or rule in a language the current one judges
    (``no_gold_rows_covered_now``) are not said to lack gold rows:

    >>> print(no_gold_rows_text({"no_gold_rows_by_language": {},
    ...                          "no_gold_rows_covered_now": {"en": 617}}))
    ... # doctest: +NORMALIZE_WHITESPACE
    617 questions not judged for scope earlier, when the gold set (or its language rule)
    had no row in their language (en 617): it has now, and questions in it are judged
    """
    lacking = scope.get("no_gold_rows_by_language") or {}
    covered = scope.get("no_gold_rows_covered_now") or {}
    parts = []
    if lacking:
        n, named = sum(lacking.values()), ", ".join(f"{k} {v}" for k, v in lacking.items())
        parts.append(f"{n} question{'s' if n != 1 else ''} not judged for scope: no gold row is "
                     f"written in their language ({named}); add gold rows in it to judge "
                     "them")  # fmt: skip
    if covered:
        from service.language.gold import covered_now_text

        parts.append(covered_now_text(covered, "not judged for scope"))
    return "; ".join(parts)


def live_before_by_language(scope: Mapping[str, Any]) -> int:
    """Off-corpus events of the JSON report's ``out_of_scope`` that no language's count holds:
    those of totals kept before the counts by language
    (:class:`~service.pipeline.totals.AnnotationTotals` restored without them), else 0."""
    off = scope.get("off_corpus_by_language") or {}
    return int(scope.get("off_corpus", 0)) - sum(int(n) for n in off.values())


def support_by_language(
    gold_sims: np.ndarray,
    corpus: np.ndarray | None,
    labels: np.ndarray,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
    languages: Sequence[str],
    scripts: Sequence[str | None],
    min_rows: int,
    near_duplicate: float = DEFAULT_KNOWN_THRESHOLD,
    trim: float = OFF_CORPUS_TRIM,
    memo: SupportMemo | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
    """The off-corpus rule by script, measured per language: ``(by language, by script)`` for
    the gold rows' language keys ``languages`` and their questions' dominant scripts
    ``scripts`` (shape ``(n,)`` each; other arguments as :func:`calibrate_support`).

    A language is *measured* when it has at least ``min_rows`` answerable rows written in its
    script (the dominant script of most of its rows; ``analytics.quality_min_class``). A
    script's cutoff is the least support similarity of the answerable rows of its measured
    languages written in it once the lowest ``⌊trim · n⌋`` are left out (each row against
    every other gold row and the corpus: :func:`calibrate_support`'s rule, :func:`robust_cutoff`,
    on those rows), and every language written in it is
    judged by it; a row in another script than its language's sets nothing. So a language
    with fewer rows never moves a cutoff (one Hindi or Hinglish row in a German/English gold
    set changes nothing but its own line), nor does a row of another script, and a script
    without a measured language is *not judged* (cutoff ``None``): a cutoff of another script
    does not transfer (trial 6: Devanagari questions the corpus answers sat at support
    0.16-0.18, below every Latin cutoff; 245 of 250 flagged). Each language's cutoff is its
    script's, not its own least row: the least of 10 rows is a noisy cutoff (trial 5:
    Spanish's own 0.474 flagged 32 of 200 answerable XQuAD-es questions; the Latin one, 0.181,
    none).

    Rates, per language: a measured language's held-out false-positive rate over ``folds``
    (in each, the script's cutoff from the training rows alone; its held-out answerable rows
    below it, their near-duplicates left out as in :func:`calibrate_support`; ``None``, not
    measured, when no fold's training rows held a measured row of its script while holding
    out one of its answerable rows); a language with fewer rows, the share of its own
    answerable rows below the script's cutoff (support leave-one-out, near-duplicates left
    out: rows that set no cutoff are held out already).

    Returns:
        ``{language: {"cutoff": float | None, "basis": "own" (measured) | "script Latn"
        (fewer rows) | "not judged", "script", "held_out_fpr": float | None,
        "n_answerable", "n_unanswerable", "band": (low, high) | None}}`` (every language of
        the gold set; ``band``: its script's cutoff's range, :func:`cutoff_band`) and
        ``{script: cutoff}``.

    >>> sims = np.full((5, 5), 0.1); np.fill_diagonal(sims, 1.0)
    >>> sims[0, 1] = sims[1, 0] = 0.6; sims[2, 3] = sims[3, 2] = 0.5
    >>> y = np.array([True, True, True, True, False])
    >>> folds = [(np.array([0, 2, 4]), np.array([1, 3])), (np.array([1, 3]), np.array([0, 2, 4]))]
    >>> by, scripts = support_by_language(sims, None, y, folds, ["de", "de", "en", "hi", "en"],
    ...                                   ["Latn", "Latn", "Latn", "Deva", "Latn"], 2)
    >>> by["de"]["cutoff"], by["en"]["cutoff"], by["en"]["held_out_fpr"], by["hi"]["basis"]
    (0.6, 0.6, 1.0, 'not judged')
    >>> scripts
    {'Latn': 0.6}
    """
    keys = np.array(languages, dtype=object)
    sims = np.array(gold_sims, dtype=np.float64)
    np.fill_diagonal(sims, -np.inf)
    near = np.full(labels.shape[0], -1.0) if corpus is None else np.asarray(corpus, float)
    held = np.where(sims >= near_duplicate, -np.inf, sims).max(axis=1)
    held_support = np.maximum(np.maximum(held, near), -1.0)
    out: dict[str, dict[str, Any]] = {}
    for key in sorted(set(languages)):
        rows = keys == key
        found = [s for s, r in zip(scripts, rows, strict=True) if r and s is not None]
        out[key] = {"cutoff": None, "basis": "not judged",
                    "script": max(sorted(set(found)), key=found.count) if found else None,
                    "held_out_fpr": None, "n_answerable": int((rows & labels).sum()),
                    "n_unanswerable": int((rows & ~labels).sum()), "band": None}  # fmt: skip
    # script -> rows of its measured languages written in it: a row of another script (a
    # romanised question labelled "hi", the Latin and Devanagari rows the detector left "und")
    # sets no cutoff of its language's script, nor counts towards measuring the language
    written = np.array(scripts, dtype=object)
    setters: dict[str, np.ndarray] = {}
    measured = set()
    for key, row in out.items():
        in_script = (keys == key) & (written == row["script"])
        if row["script"] is not None and int((in_script & labels).sum()) >= min_rows:
            mask = setters.setdefault(row["script"], np.zeros(labels.shape[0], dtype=bool))
            mask |= in_script
            measured.add(key)
    checks = {
        script: _calibrate_members(sims, near, labels, folds, mask, mask, near_duplicate,
                                   trim, memo)[0]
        for script, mask in sorted(setters.items())
    }  # fmt: skip
    by_script = {script: check.cutoff for script, check in checks.items()}
    for key, row in out.items():
        script = row["script"]
        if script not in by_script:
            continue
        row["band"] = checks[script].band  # the script's cutoff's range (cutoff_band)
        rows = keys == key
        if key in measured:
            check = _calibrate_members(sims, near, labels, folds, setters[script], rows,
                                       near_duplicate, trim, memo)[0]  # fmt: skip
            fpr = None if np.isnan(check.held_out_fpr) else check.held_out_fpr  # none held out
            row.update(cutoff=by_script[script], basis="own", held_out_fpr=fpr)
        else:
            answerable = rows & labels
            row.update(cutoff=by_script[script], basis=f"script {script}",
                       held_out_fpr=(float(np.mean(held_support[answerable]
                                                     < by_script[script] - SUPPORT_TOLERANCE))
                                     if answerable.any() else None))  # fmt: skip
    return out, by_script


def _held_out_by_script(
    gold_sims: np.ndarray,
    corpus: np.ndarray | None,
    labels: np.ndarray,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
    languages: Sequence[str],
    scripts: Sequence[str | None],
    by_language: Mapping[str, Mapping[str, Any]],
    by_script: Mapping[str, float],
    near_duplicate: float = DEFAULT_KNOWN_THRESHOLD,
    trim: float = OFF_CORPUS_TRIM,
    memo: SupportMemo | None = None,
) -> np.ndarray:
    """The share of its held-out appearances in ``folds`` in which the off-corpus rule by
    script flags each gold row (float, shape ``(n,)``, in [0, 1]): each row is judged by its
    language's script (``by_language`` and ``by_script`` of :func:`support_by_language` on
    the same arguments), in each fold by that script's cutoff from the training rows that set
    it (:func:`_calibrate_members`); a row of a language not judged is never flagged. The
    rule's verdicts that the detector's cross-validated quality folds in
    (:class:`EmbeddingScope`)."""
    sims = np.array(gold_sims, dtype=np.float64)
    np.fill_diagonal(sims, -np.inf)
    near = np.full(labels.shape[0], -1.0) if corpus is None else np.asarray(corpus, float)
    keys = np.array(languages, dtype=object)
    written = np.array(scripts, dtype=object)
    flagged = np.zeros(labels.shape[0], dtype=np.float64)
    for script in by_script:  # each language has one script: the members never overlap
        judged = [k for k, row in by_language.items() if row["script"] == script]
        own = [k for k in judged if by_language[k]["basis"] == "own"]
        setters = np.isin(keys, own) & (written == script)
        members = np.isin(keys, judged)
        flagged = np.maximum(
            flagged,
            _calibrate_members(
                sims, near, labels, folds, setters, members, near_duplicate, trim, memo
            )[1],
        )
    return flagged


#: Support similarities kept during one fit (:func:`_support_of`).
SupportMemo = dict[tuple[Any, ...], np.ndarray]


def _support_of(
    sims: np.ndarray,
    near: np.ndarray,
    rows: np.ndarray,
    against: np.ndarray,
    near_duplicate: float | None,
    memo: SupportMemo | None = None,
) -> np.ndarray:
    """Support similarity of gold rows ``rows`` (indices, shape ``(m,)``): the highest of their
    similarity to the rows ``against`` (``sims``, diagonal ``-inf``) and to the corpus
    (``near``, shape ``(n,)``), at least -1; with ``near_duplicate`` a row's near-duplicates
    (similarity at or above it) among ``against`` are left out. Shape ``(m,)``.

    ``memo``: values kept by ``(rows, against, near_duplicate)`` for one ``sims`` and
    ``near`` (the caller's promise): the off-corpus rule's trims and scripts ask for the same
    folds' supports again (:class:`EmbeddingScope`: ~5 trims × 2-3 rules × every fold of
    every draw), and only the cutoffs drawn from them depend on the trim."""
    key = None
    if memo is not None:
        key = (rows.dtype.str, rows.tobytes(), against.dtype.str, against.tobytes(),
               near_duplicate)  # fmt: skip
        kept = memo.get(key)
        if kept is not None:
            return kept
    block = sims[np.ix_(rows, against)]
    if near_duplicate is not None:
        block = np.where(block >= near_duplicate, -np.inf, block)
    gold = block.max(axis=1) if block.shape[1] else np.full(rows.shape[0], -np.inf)
    found: np.ndarray = np.maximum(np.maximum(gold, near[rows]), -1.0)
    if memo is not None and key is not None:
        found.setflags(write=False)  # shared between callers
        memo[key] = found
    return found


def _calibrate_members(
    sims: np.ndarray,
    near: np.ndarray,
    labels: np.ndarray,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
    setters: np.ndarray,
    members: np.ndarray,
    near_duplicate: float,
    trim: float = 0.0,
    memo: SupportMemo | None = None,
) -> tuple[SupportCheck, np.ndarray]:
    """:func:`calibrate_support`'s rule with the cutoff set by the answerable rows in
    ``setters`` and the rates measured on the rows in ``members`` (bool masks, shape
    ``(n,)``), support always against every (training) gold row and the corpus; a fold whose
    training rows hold no answerable setter judges its held-out members by nothing (not
    counted); ``held_out_fpr`` is NaN when no held-out answerable member was judged (not
    measured: with ``analytics.quality_min_class`` 2, a language's two rows held out together
    in the one fold whose training rows have no other row of their script), not 0 of 0.
    Each cutoff (the fold ones and the final one) is :func:`robust_cutoff` of its setters
    at ``trim``. Also returns, per member, the share of its judged held-out appearances in
    ``folds`` (several fold draws: :func:`repeated_folds`) in which it was below its fold's
    cutoff (float, shape ``(n,)``; 0 for every other row and a member never judged)."""
    everyone = np.arange(labels.shape[0])

    def support(rows: np.ndarray, against: np.ndarray, drop_near: bool) -> np.ndarray:
        return _support_of(sims, near, rows, against, near_duplicate if drop_near else None, memo)

    held_below = np.zeros(labels.shape[0], dtype=np.int64)
    held = np.zeros(labels.shape[0], dtype=np.int64)
    false_pos = caught = n_ans = n_unans = 0
    for train, test in folds:
        answerable = train[labels[train] & setters[train]]
        test = test[members[test]]
        if not answerable.shape[0] or not test.shape[0]:
            continue
        cutoff = robust_cutoff(support(answerable, train, drop_near=False), trim)[0]
        below = support(test, train, drop_near=True) < cutoff - SUPPORT_TOLERANCE
        held_below[test[below]] += 1
        held[test] += 1
        false_pos += int(np.sum(below & labels[test]))
        caught += int(np.sum(below & ~labels[test]))
        n_ans += int(labels[test].sum())
        n_unans += int((~labels[test]).sum())
    values = support(everyone[setters & labels], everyone, drop_near=False)
    cutoff = robust_cutoff(values, trim)[0]
    check = SupportCheck(
        cutoff=cutoff,
        held_out_fpr=false_pos / n_ans if n_ans else float("nan"),
        held_out_tpr=caught / n_unans if n_unans else 0.0,
        n_answerable=int((members & labels).sum()),
        n_unanswerable=int((members & ~labels).sum()),
        trim=trim,
        least=float(values.min()),
        band=cutoff_band(values, trim),
    )
    return check, held_below / np.maximum(held, 1)


def _setters_of(
    values: np.ndarray, rows: np.ndarray, cutoff: float, at: int, ids: Sequence[str] | None
) -> tuple[str | None, tuple[str, ...]]:
    """The id of the row at position ``at`` of ``values`` (support similarities of the gold
    rows ``rows``) and the ids of the rows below ``cutoff``, lowest first; ``(None, ())``
    without ``ids``."""
    if ids is None:
        return None, ()
    order = np.argsort(values, kind="stable")
    below = tuple(ids[int(rows[i])] for i in order if values[i] < cutoff - SUPPORT_TOLERANCE)
    return ids[int(rows[at])], below


def support_similarity(features: np.ndarray, use_corpus: bool) -> np.ndarray:
    """Support similarity of each row of an :class:`EmbeddingScope` feature matrix (all
    columns, before the chosen subset): the largest of its nearest answerable, nearest
    unanswerable and (when used) nearest corpus similarities, shape ``(n,)``, in [-1, 1].

    >>> support_similarity(np.array([[0.2, 0.5, 0.3, 9.0]]), use_corpus=True).tolist()
    [0.5]
    """
    return np.asarray(features[:, : 3 if use_corpus else 2].max(axis=1), dtype=np.float64)


def calibrate_support(
    gold_sims: np.ndarray,
    corpus: np.ndarray | None,
    labels: np.ndarray,
    folds: Iterable[tuple[np.ndarray, np.ndarray]],
    near_duplicate: float = DEFAULT_KNOWN_THRESHOLD,
    trim: float = OFF_CORPUS_TRIM,
    ids: Sequence[str] | None = None,
) -> SupportCheck:
    """The :class:`SupportCheck` of a gold set from its rows' cosine similarities to each
    other ``gold_sims`` (shape ``(n, n)``, the diagonal ignored) and to their nearest corpus
    passage ``corpus`` (shape ``(n,)``, or ``None`` when the corpus is not used), with
    answerability ``labels`` (bool, shape ``(n,)``).

    The cutoff is a low quantile of the answerable rows' support similarities
    (:func:`robust_cutoff` at ``trim``: their least once the lowest ``⌊trim · n⌋`` are left
    out), each row's taken against the other gold rows (leave-one-out) and the corpus: the
    rule the detector applies live. (Their least, the rule before trial 11's finding F3, let
    one odd answerable row set it; it is kept as ``least``.) With ``ids`` (the gold rows'
    ids, shape ``(n,)``) the check names the row that sets the cutoff (``set_by``) and the
    answerable rows below it (``below``).

    Its rates are cross-validated over ``folds`` (``(train indices, test indices)`` pairs,
    e.g. ``StratifiedKFold.split``), truly held out: in each fold the cutoff is the same rule
    on the training rows alone (each against the other training rows and the corpus), and a
    held-out row's support similarity is taken against the training rows and the corpus only
    — never against the rows held out with it, which a live question does not have either.
    A held-out row's *near-duplicates* in the training rows (cosine ≥ ``near_duplicate``,
    default the known-question threshold 0.9 — on embeddings here, not character n-grams) are
    also left out of its support: a live question that near-duplicates a gold question is
    near it by construction and never at risk, so the rate is measured for the questions the
    rule judges — new ones, whose paraphrase is not in the gold set. Without it, a paraphrase
    pair split between folds hides exactly the false positive the pair held out together
    would show. Near-duplicates are *not* left out of the cutoffs (the live one and each
    fold's, the same rule): the rate is that of the rule the detector applies, so a cutoff
    that one row sets shows as that row's false positive when it is held out. The folds are
    the detector's (:func:`grouped_folds`: a document's rows held out together when the gold
    set asks about at least two), and ``gold_sims`` may hide more than the diagonal (``-inf``:
    the rows of one document, :func:`hidden_pairs`), so a row's support is then taken as a
    question's on a document no gold row asks about.

    Raises:
        ValueError: no answerable row, a training fold without one, or ``trim`` outside
            [0, 1).

    >>> sims = np.array([[1.0, 0.95, 0.2, 0.1], [0.95, 1.0, 0.3, 0.1],
    ...                  [0.2, 0.3, 1.0, 0.1], [0.1, 0.1, 0.1, 1.0]])
    >>> y = np.array([True, True, True, False])
    >>> folds = [(np.array([0, 2]), np.array([1, 3])), (np.array([1, 3]), np.array([0, 2]))]
    >>> check = calibrate_support(sims, np.array([0.25, 0.5, 0.25, 0.0]), y, folds)
    >>> check.cutoff, round(check.held_out_fpr, 4), check.held_out_tpr, check.n_answerable
    (0.3, 0.6667, 1.0, 3)
    """
    return _pooled_support(gold_sims, corpus, labels, folds, near_duplicate, trim, ids)[0]


def _pooled_support(
    gold_sims: np.ndarray,
    corpus: np.ndarray | None,
    labels: np.ndarray,
    folds: Iterable[tuple[np.ndarray, np.ndarray]],
    near_duplicate: float,
    trim: float,
    ids: Sequence[str] | None,
    memo: SupportMemo | None = None,
) -> tuple[SupportCheck, np.ndarray]:
    """:func:`calibrate_support` and, per gold row, the share of its held-out appearances in
    ``folds`` in which it was below its fold's cutoff (float, shape ``(n,)``, in [0, 1]; 0 for
    a row never held out; 0 or 1 when ``folds`` is one partition): the rule's verdicts that
    the detector's cross-validated quality folds in (:class:`EmbeddingScope`)."""
    if not labels.any():
        raise ValueError("the support check needs answerable gold questions")
    sims = np.array(gold_sims, dtype=np.float64)  # a copy: the diagonal is overwritten
    np.fill_diagonal(sims, -np.inf)
    near = np.full(labels.shape[0], -1.0) if corpus is None else np.asarray(corpus, float)

    def support(rows: np.ndarray, against: np.ndarray, drop_near: bool) -> np.ndarray:
        return _support_of(sims, near, rows, against, near_duplicate if drop_near else None, memo)

    everyone = np.arange(labels.shape[0])
    held_below = np.zeros(labels.shape[0], dtype=np.int64)
    held = np.zeros(labels.shape[0], dtype=np.int64)
    false_pos = caught = out_ans = out_unans = 0
    for train, test in folds:
        if not labels[train].any():
            raise ValueError("a training fold has no answerable gold question")
        answerable = train[labels[train]]
        cutoff = robust_cutoff(support(answerable, train, drop_near=False), trim)[0]
        below = support(test, train, drop_near=True) < cutoff - SUPPORT_TOLERANCE
        held_below[test[below]] += 1
        held[test] += 1
        false_pos += int(np.sum(below & labels[test]))
        caught += int(np.sum(below & ~labels[test]))
        out_ans += int(labels[test].sum())
        out_unans += int((~labels[test]).sum())
    n_ans, n_unans = int(labels.sum()), int((~labels).sum())
    rows = everyone[labels]
    values = support(rows, everyone, drop_near=False)
    cutoff, at = robust_cutoff(values, trim)
    set_by, below_ids = _setters_of(values, rows, cutoff, at, ids)
    check = SupportCheck(
        cutoff=cutoff,
        held_out_fpr=false_pos / out_ans if out_ans else 0.0,
        held_out_tpr=caught / out_unans if out_unans else 0.0,
        n_answerable=n_ans,
        n_unanswerable=n_unans,
        trim=trim,
        least=float(values.min()),
        set_by=set_by,
        below=below_ids,
        band=cutoff_band(values, trim),
    )
    return check, held_below / np.maximum(held, 1)


def _cv_folds(labels: np.ndarray, max_folds: int = 5) -> int:
    """Folds of a stratified cross-validation: up to ``max_folds``, at most the smaller class."""
    return int(min(max_folds, np.bincount(labels.astype(int), minlength=2).min()))


def expit(scores: np.ndarray) -> np.ndarray:
    """The logistic sigmoid ``1 / (1 + exp(-s))`` of each score, shape ``(n,)`` float64, the
    same bits as ``scipy.special.expit`` (which scikit-learn's ``predict_proba`` applies): its
    double kernel is ``1 / (1 + std::exp(-x))`` on the C library's ``exp``, which is what
    :func:`math.exp` calls, in the same order of operations. numpy's ``exp`` is not that
    function (its own SIMD kernels: 48,394 of 2.5 million scores gave other last bits), and
    importing scipy's special functions costs a start ~0.2-0.3 s, so it is a Python loop
    (~0.1 µs a score). An ``exp`` that overflows (``-s`` above ~709.78) gives 0.0, as the C
    expression does (``1 / inf``); NaN stays NaN.
    """
    exp = math.exp
    values = scores.tolist()
    try:
        return np.array([1.0 / (1.0 + exp(-s)) for s in values], dtype=np.float64)
    except OverflowError:
        return np.array([_expit_one(s) for s in values], dtype=np.float64)


def _expit_one(score: float) -> float:
    """:func:`expit` of one score (0.0 where ``exp(-score)`` overflows)."""
    try:
        return 1.0 / (1.0 + math.exp(-score))
    except OverflowError:
        return 0.0


#: Format of :class:`LinearScope`'s arrays in a fitted state (:meth:`EmbeddingScope.
#: fitted_state`): part of the fit cache's inputs (a change of it is another key, so an entry
#: of another format is fitted again), and checked again when a state is restored.
LINEAR_FORMAT = "standard-scaler+logistic-regression/1"


class LinearScope(NamedTuple):
    """The arrays of a fitted ``make_pipeline(StandardScaler(), LogisticRegression())`` on two
    classes that its ``predict_proba(x)[:, 1]`` reads, so a start that reads the detector from
    the fit cache scores with numpy alone (scikit-learn is imported only for a fit).

    Attributes:
        mean, scale: ``StandardScaler.mean_`` and ``.scale_``, shape ``(k,)`` float64.
        coef: ``LogisticRegression.coef_``, shape ``(1, k)`` float64.
        intercept: ``LogisticRegression.intercept_``, shape ``(1,)`` float64.
    """

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray

    @classmethod
    def of(cls, model: Any) -> LinearScope | None:
        """The arrays of ``model`` when it is a two-step pipeline of a ``StandardScaler``
        (centring and scaling) and a ``LogisticRegression`` on two classes (copies); else
        ``None`` (the model is applied through its own ``predict_proba``)."""
        steps = getattr(model, "steps", None)
        if steps is None or len(steps) != 2:
            return None
        scaler, regression = steps[0][1], steps[1][1]
        if (type(scaler).__name__ == "StandardScaler" and scaler.with_mean and scaler.with_std
                and type(regression).__name__ == "LogisticRegression"
                and len(regression.classes_) == 2):  # fmt: skip
            return cls(*(np.array(a, dtype=np.float64) for a in (
                scaler.mean_, scaler.scale_, regression.coef_, regression.intercept_)))  # fmt: skip
        return None

    def as_state(self) -> dict[str, Any]:
        """Plain data for a fitted state: :data:`LINEAR_FORMAT` and the four arrays."""
        return {"format": LINEAR_FORMAT, **self._asdict()}

    @classmethod
    def from_state(cls, state: Any) -> LinearScope | None:
        """The arrays :meth:`as_state` gave, or ``None`` when ``state`` is not of
        :data:`LINEAR_FORMAT` with four finite float64 arrays of consistent shapes and a positive
        scale (then the caller falls back on the pickled pipeline, never misreading another
        format or a damaged entry)."""
        if not isinstance(state, Mapping) or state.get("format") != LINEAR_FORMAT:
            return None
        arrays = [state.get(name) for name in cls._fields]
        if not all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in arrays):
            return None
        mean, scale, coef, intercept = (np.asarray(a) for a in arrays)
        k = mean.shape[0] if mean.ndim == 1 else -1
        if scale.shape != (k,) or coef.shape != (1, k) or intercept.shape != (1,):
            return None
        if (
            not all(np.isfinite(a).all() for a in (mean, scale, coef, intercept))
            or (scale <= 0).any()
        ):
            return None  # a fitted StandardScaler/LogisticRegression never stores these
        return cls(mean, scale, coef, intercept)

    def probability(self, features: np.ndarray) -> np.ndarray:
        """``predict_proba(features)[:, 1]`` of the pipeline these arrays came from, shape
        ``(n,)`` float64, the same bits: scikit-learn's own operations in its order, without
        its per-call input validation (~0.8 ms a batch, 35× the arithmetic): ``z = (x -
        mean_) / scale_`` (``StandardScaler.transform``), ``s = z @ coef_.T + intercept_``
        (``LinearClassifierMixin.decision_function``), ``p = expit(s)``
        (``_predict_proba_lr``; :func:`expit`). ``features``: float64, shape ``(n, k)``."""
        z = features - self.mean
        z /= self.scale
        scores = z @ self.coef.T + self.intercept
        return expit(scores.reshape(-1))


def probability_in_scope(model: Any, features: np.ndarray) -> np.ndarray:
    """``model.predict_proba(features)[:, 1]`` as float64, shape ``(n,)``, in [0, 1].

    The detector's own model — a fitted ``make_pipeline(StandardScaler(),
    LogisticRegression())`` on two classes — is applied by :meth:`LinearScope.probability`
    (the same bits); any other model (or input not float64) through its ``predict_proba``.
    """
    if features.dtype == np.float64:
        linear = LinearScope.of(model)
        if linear is not None:
            return linear.probability(features)
    return np.asarray(model.predict_proba(features)[:, 1], dtype=np.float64)


class PickledEstimator:
    """A fitted scikit-learn estimator kept pickled, so a start that reads the out-of-scope
    detector from the fit cache does not import scikit-learn (~0.8-2 s with pandas and
    ``scipy.stats``, which it pulls in). With ``linear`` (its :class:`LinearScope` arrays,
    kept beside the pickle in the fit cache) it is scored with numpy alone and never
    unpickled; without (a state written before them) it is unpickled at its first score,
    which imports scikit-learn then. Either gives the same probabilities.

    Args:
        blob: ``pickle.dumps`` of the estimator (goldwatch's own fit cache: see
            :mod:`service.files.fit_cache` on trust); its bytes also key the detector's
            verdicts (:meth:`EmbeddingScope.verdict_key`).
        linear: the estimator's arrays, or ``None``.
    """

    def __init__(self, blob: bytes, linear: LinearScope | None = None) -> None:
        self.blob = blob
        self.linear = linear
        self._estimator: Any = None

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """The estimator's ``predict_proba(features)``, shape ``(n, 2)`` (unpickles it)."""
        if self._estimator is None:
            self._estimator = pickle.loads(self.blob)  # noqa: S301 - see the class docstring
        return np.asarray(self._estimator.predict_proba(features))

    def probability_in_scope(self, features: np.ndarray) -> np.ndarray:
        """:func:`probability_in_scope` of the estimator, shape ``(n,)``: from its arrays
        when it has them (and ``features`` are float64), else from the unpickled
        estimator."""
        if self.linear is not None and features.dtype == np.float64:
            return self.linear.probability(features)
        if self._estimator is None:
            self._estimator = pickle.loads(self.blob)  # noqa: S301 - see the class docstring
        return probability_in_scope(self._estimator, features)


def corpus_sample(ids: Sequence[str], limit: int | None) -> list[int]:
    """The positions, in corpus order, of the passages the corpus feature reads: all of them
    when there are at most ``limit`` (or ``limit`` is ``None``), else the ``limit`` passages
    whose ids have the smallest 64-bit BLAKE2b digests.

    The nearest passage of a question is a matrix product with every passage read, so its
    cost grows with the corpus (~27 µs a distinct question at 1,024 passages of the default
    768-dimensional vectors, ~0.5 ms at 20,000, on one core) and so does the start-up (each
    passage embedded). A fixed sample bounds both. The digest makes it a sample of the
    corpus's ids alone: the same passages whatever their order in the file, and a passage
    added or removed changes at most one place in it. The gold rows' features and the live
    questions' read the same sample, so the fitted model, its cross-validated quality and
    its off-corpus cutoffs are measured on what is applied.

    Raises:
        ValueError: ``limit`` below 1.

    >>> corpus_sample(["a", "b", "c"], None), corpus_sample(["a", "b", "c"], 5)
    ([0, 1, 2], [0, 1, 2])
    >>> len(corpus_sample([f"p{i}" for i in range(100)], 10))
    10
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if limit is None or len(ids) <= limit:
        return list(range(len(ids)))
    digests = [hashlib.blake2b(pid.encode("utf-8"), digest_size=8).digest() for pid in ids]
    return sorted(sorted(range(len(ids)), key=lambda i: (digests[i], i))[:limit])


class GoldGroups(NamedTuple):
    """Which gold rows ask about one part of the corpus (:func:`coverage_groups`): the
    out-of-scope detector's fit hides the rows of a group from each other
    (:class:`EmbeddingScope`).

    Attributes:
        labels: group of each gold row (gold order), shape ``(n,)``, ints from 0.
        unit: what a group is: ``"document"`` (the corpus passages' ``doc``) or
            ``"passage"`` (the qrels' passage ids: no passage the rows name has a ``doc``,
            or the documents hold every answerable row in one group).
            ``"row"``: each row its own group, the fit as without groups (leave-one-out,
            folds not grouped), because neither documents nor passages split the answerable
            rows usably (``why``).
        n_answerable: groups holding answerable rows (at least 2).
        passages: group of each passage of ``passage_ids`` (:func:`coverage_groups`): that
            of the answerable rows asking about its document (passage), ``-1`` when none
            does; read by :func:`asked_groups`.
        why: why a coarser unit was not used (``""`` when none was declined), e.g. ``"not
            by document: 30 of the 32 answerable rows ask about one (more than half)"``.
    """

    labels: tuple[int, ...]
    unit: str
    n_answerable: int
    passages: tuple[int, ...] = ()
    why: str = ""


#: Most of the answerable gold rows one group may hold for the out-of-scope fit to group by
#: that unit (:func:`coverage_groups`). A group holding more leaves the folds that hold it out
#: training on the few other rows, and hides from each of its rows most of the answerable
#: ones: a gold set of 30 rows on one article and 2 on another fell from AUC 0.965
#: (trusted) to 0.548 (uncalibrated, the detector off) when grouped by document. At half,
#: every training fold keeps at least half of the answerable rows.
MAX_GROUP_SHARE = 0.5


def coverage_groups(
    questions: Sequence[GoldQuestion],
    document_of: Mapping[str, str | None],
    passage_ids: Sequence[str] = (),
    max_share: float = MAX_GROUP_SHARE,
) -> GoldGroups | None:
    """Group the gold rows by the part of the corpus they ask about: two answerable rows
    are in one group when their relevant passages (``gold``, the qrels) share a document
    (``document_of``: passage id → its ``doc``; a passage without one, or not in the
    mapping, is a document of its own), transitively; each unanswerable row is a group of
    its own. Documents are tried first, then passages, and the first with at least two
    groups of answerable rows, none holding more than :data:`MAX_GROUP_SHARE` of them, is
    returned (its ``why`` names the unit declined before it and why); ``None`` when neither
    has two groups (every answerable row asks about one passage: nothing to hold out); a
    ``"row"`` grouping (each row alone, the fit as without groups) when a unit had two but one
    held too many (the lopsided gold set: 30 rows on one article, 2 on another, with every
    passage of that article asked about by more than half of them). ``passage_ids``: the
    passages the detector reads (its corpus feature), in its order, whose groups
    :func:`asked_groups` reads.

    Why: a live question about a document no gold row asks about has no gold question near
    it, while every answerable gold row has the other gold rows on its own document — so a
    detector fitted and cross-validated with the rows seeing each other learns "near a gold
    question" as "answerable" and reports a quality that never met the uncovered part of the
    corpus (trial 12, finding F1: 96 of 400 answerable XQuAD-en questions on uncovered
    articles were "out of scope" while the cross-validated AUC read 1.000).

    >>> q = [GoldQuestion("a", "x", ("p1",)), GoldQuestion("b", "y", ("p2",)),
    ...      GoldQuestion("c", "z", ("p3",)), GoldQuestion("d", "v", ("p4",)),
    ...      GoldQuestion("u", "w", ())]
    >>> docs = {"p1": "A.html", "p2": "A.html", "p3": "B.html", "p4": "B.html"}
    >>> coverage_groups(q, docs, ["p3", "p9"])
    GoldGroups(labels=(0, 0, 1, 1, 2), unit='document', n_answerable=2, passages=(1, -1), why='')
    >>> coverage_groups(q, dict.fromkeys(docs, "A.html"))  # doctest: +NORMALIZE_WHITESPACE
    GoldGroups(labels=(0, 1, 2, 3, 4), unit='passage', n_answerable=4, passages=(),
               why='not by document: all 4 answerable rows ask about one')
    >>> coverage_groups(q, {}).why
    'the corpus names no document (`doc`) of the gold passages'

    >>> coverage_groups(q[:1] + q[4:], {}) is None
    True

    Lopsided: 3 of the 4 answerable rows on A.html is more than half, so by passage:

    >>> coverage_groups(q, {**docs, "p3": "A.html"}).why
    'not by document: 3 of the 4 answerable rows ask about one (more than 50%)'
    """
    with_doc = any(document_of.get(pid) for q in questions for pid in q.gold)
    declined: list[str] = []  # units refused as lopsided (row by row if none is left)
    noted = ""  # why the unit used is not the document, said only when a unit is used
    for unit in ("document", "passage"):
        parent: dict[str, str] = {}
        find = functools.partial(_find, parent)
        keys: list[str] = []
        for i, question in enumerate(questions):
            own = [f"d\t{document_of[pid]}" if unit == "document" and document_of.get(pid)
                   else f"p\t{pid}" for pid in question.gold] or [f"r\t{i}"]  # fmt: skip
            for key in own[1:]:
                parent[find(key)] = find(own[0])
            keys.append(own[0])
        roots: dict[str, int] = {}
        labels = tuple(roots.setdefault(find(key), len(roots)) for key in keys)
        sizes = Counter(g for g, q in zip(labels, questions, strict=True) if q.answerable)
        n, rows = len(sizes), sum(sizes.values())
        name = unit if with_doc else "passage"
        if n == 1 and unit == "document" and with_doc:  # one document: passages may split it
            noted = f"not by document: all {rows} answerable rows ask about one"
            continue
        if n >= 2 and max(sizes.values()) > max_share * rows:
            declined.append(f"not by {name}: {max(sizes.values())} of the {rows} answerable "
                            f"rows ask about one (more than {max_share:.0%})")  # fmt: skip
        elif n >= 2:
            asked = {find(key) for key, q in zip(keys, questions, strict=True) if q.answerable}
            own = [f"d\t{document_of[pid]}" if unit == "document" and document_of.get(pid)
                   else f"p\t{pid}" for pid in passage_ids]  # fmt: skip
            passages = tuple(roots[find(k)] if k in parent and find(k) in asked else -1
                             for k in own)  # fmt: skip
            if not with_doc:
                noted = "the corpus names no document (`doc`) of the gold passages"
            why = "; ".join([*declined, *([noted] if noted else [])])
            return GoldGroups(labels, name, n, passages, why)
        if not with_doc:  # the documents were the passages: nothing else to try
            break
    if not declined:
        return None
    rows = sum(q.answerable for q in questions)
    return GoldGroups(tuple(range(len(questions))), "row", rows, (), "; ".join(declined))


def _find(parent: dict[str, str], key: str) -> str:
    """The root of ``key`` in the union-find forest ``parent`` (added as its own root when
    new), halving the path on the way."""
    while parent.setdefault(key, key) != key:
        parent[key] = parent[parent[key]]
        key = parent[key]
    return key


def asked_groups(
    groups: GoldGroups, answerable: np.ndarray, nearest: np.ndarray | None
) -> tuple[int, ...]:
    """The group each gold row is fitted as asking about: an answerable row's own
    (``groups.labels``); an unanswerable row — which names no passage — that of its nearest
    passage (``nearest``: index into ``groups.passages`` per gold row, shape ``(n,)``; ``None``
    without passages) when answerable rows ask about that passage's document, else its own
    (it hides nothing but itself). So an in-domain unanswerable row ("the fee for a
    hostel on Mars?") does not see the answerable rows on the document it is about either,
    as a live question on an uncovered document sees no gold row on it, answerable or not:
    hiding them from the answerable rows alone taught the demo's detector that nearness to an
    unanswerable gold question means "in scope" (coefficient +1.12, 33 % of the answerable
    live questions out of scope).

    >>> g = GoldGroups((0, 0, 1, 2, 3), "document", 2, passages=(0, 1, -1))
    >>> asked_groups(g, np.array([True, True, True, False, False]), np.array([0, 0, 1, 1, 2]))
    (0, 0, 1, 1, 3)
    """
    labels = list(groups.labels)
    if nearest is None or not groups.passages:
        return tuple(labels)
    for i in np.flatnonzero(~answerable):
        own = groups.passages[int(nearest[i])]
        if own >= 0:
            labels[i] = own
    return tuple(labels)


def hidden_pairs(labels: Sequence[int]) -> np.ndarray:
    """Which gold rows do not see each other in the detector's fit, shape ``(n, n)`` bool:
    a row and itself (leave-one-out) and two rows of one group (``labels``, one per row).

    >>> hidden_pairs([0, 0, 1]).astype(int).tolist()
    [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    """
    groups = np.asarray(labels)
    hidden: np.ndarray = groups[:, None] == groups[None, :]
    return hidden


def describe_hiding(groups: GoldGroups | None, grouped: bool) -> str:
    """How the detector's fit hid gold rows from each other, as its quality's ``method``
    says it (:func:`coverage_groups`, :func:`grouped_folds`).

    >>> describe_hiding(None, False)
    'gold similarities leave-one-out'
    >>> describe_hiding(GoldGroups((0, 0, 1, 2), "document", 2), True)
    'gold similarities and folds by document: the answerable rows ask about 2'
    >>> describe_hiding(GoldGroups((0, 0, 1, 2), "passage", 2), False)
    'gold similarities by passage, the answerable rows ask about 2; folds not grouped'
    """
    if groups is None:
        return "gold similarities leave-one-out"
    if groups.unit == "row":
        return f"gold similarities leave-one-out, folds not grouped: {groups.why}"
    why = f"; {groups.why}" if groups.why else ""
    if grouped:
        return (f"gold similarities and folds by {groups.unit}: the answerable rows ask "
                f"about {groups.n_answerable}{why}")  # fmt: skip
    return (f"gold similarities by {groups.unit}, the answerable rows ask about "
            f"{groups.n_answerable}; folds not grouped{why}")  # fmt: skip


def grouped_folds(
    labels: np.ndarray, groups: GoldGroups | None, seed: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], bool]:
    """The detector's cross-validation folds (``(train, test)`` index pairs) and whether they
    are grouped: ``StratifiedGroupKFold`` over ``groups`` (a group's rows held out together)
    with ``min(5, smaller class, answerable groups)`` folds, fewer down to 2 until every
    training fold holds both classes; else (no groups, or no such split) the stratified
    ``StratifiedKFold`` of :func:`_cv_folds` folds. Shuffled with ``seed``: deterministic.

    Raises:
        ValueError: a class has fewer than 2 rows (from scikit-learn).
    """
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    x = np.zeros((labels.shape[0], 1))
    if groups is not None and groups.unit != "row":
        for folds in range(min(_cv_folds(labels), groups.n_answerable), 1, -1):
            cv = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
            split = list(cv.split(x, labels, groups.labels))
            if all(labels[train].any() and not labels[train].all() for train, _ in split):
                return split, True
    cv = StratifiedKFold(n_splits=_cv_folds(labels), shuffle=True, random_state=seed)
    return list(cv.split(x, labels)), False


#: Fold draws of the out-of-scope detector's repeated cross-validation (:func:`repeated_folds`).
#: Chosen by measurement (CHANGELOG, forty-ninth session): on the t48 user's 54-row gold set
#: the threshold spanned 0.265-0.449 over fold seeds 0-9 with one draw, 0.029 wide with 10.
CV_REPEATS = 10


def fold_seeds(seed: int, repeats: int) -> list[int]:
    """The seeds of the ``repeats`` fold draws of base seed ``seed``: the first ``repeats``
    32-bit words of ``numpy.random.SeedSequence(seed)`` (NEP 19: its output is fixed across
    numpy versions), so two base seeds share no draw as ``seed + r`` would.

    Raises:
        ValueError: ``repeats`` below 1 or ``seed`` negative.

    >>> fold_seeds(0, 2) == fold_seeds(0, 3)[:2], len(set(fold_seeds(0, 5) + fold_seeds(1, 5)))
    (True, 10)
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    words = np.random.SeedSequence(seed).generate_state(repeats, dtype=np.uint32)
    return [int(w) for w in words]


def repeated_folds(
    labels: np.ndarray, groups: GoldGroups | None, seed: int, repeats: int
) -> tuple[list[list[tuple[np.ndarray, np.ndarray]]], list[bool]]:
    """The detector's repeated cross-validation: ``repeats`` fold draws of
    :func:`grouped_folds`, each a partition of the rows (every row held out once), with the
    seeds :func:`fold_seeds` of ``seed``; and whether each is grouped. The held-out
    probability of a row is then averaged over the draws (:class:`EmbeddingScope`): one draw
    of 5 folds on ~50 rows chose a threshold that moved by 0.08 with the seed.

    Source: repeated k-fold cross-validation, Kuhn & Johnson 2013, *Applied Predictive
    Modeling* §4.4; Kim 2009, "Estimating classification error rate: repeated
    cross-validation, repeated hold-out and bootstrap" (Comput. Stat. Data Anal. 53).

    Raises:
        ValueError: as :func:`grouped_folds` and :func:`fold_seeds`.
    """
    draws = [grouped_folds(labels, groups, s) for s in fold_seeds(seed, repeats)]
    return [split for split, _ in draws], [grouped for _, grouped in draws]


def averaged_held_out(
    model: Callable[[], Any],
    features: np.ndarray,
    labels: np.ndarray,
    draws: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]],
) -> np.ndarray:
    """Each row's held-out probability in scope averaged over the fold ``draws``
    (:func:`repeated_folds`; each a partition of the rows): in each fold a fresh ``model()``
    is fitted on the training rows of ``features`` (shape ``(n, d)``) and ``labels`` (bool,
    shape ``(n,)``) and gives the held-out rows' :func:`probability_in_scope` —
    ``cross_val_predict(..., method="predict_proba")[:, 1]``'s values, the same bits, per
    draw; the mean is over draws, shape ``(n,)``, in [0, 1]. scikit-learn's input and
    parameter checks are skipped (the inputs are the fit's own finite arrays; the results
    are the same bits): they were a fifth of each fold's fit.

    >>> from sklearn.dummy import DummyClassifier
    >>> y = np.array([True, True, True, True, False, False])
    >>> a = [(np.array([2, 3, 5]), np.array([0, 1, 4])), (np.array([0, 1, 4]), np.array([2, 3, 5]))]
    >>> b = [(np.array([1, 2, 3, 4]), np.array([0, 5])), (np.array([0, 5]), np.array([1, 2, 3, 4]))]
    >>> prior = lambda: DummyClassifier(strategy="prior")  # p = the training rows' share in scope
    >>> (averaged_held_out(prior, np.zeros((6, 1)), y, [a, b]) * 24).round(9).tolist()
    [17.0, 14.0, 14.0, 14.0, 14.0, 17.0]

    (Row 0: 2/3 in draw ``a``, trained on rows 2, 3, 5; 3/4 in ``b``, on rows 1-4: 17/24.)
    """
    import sklearn

    total = np.zeros(labels.shape[0])
    with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
        for draw in draws:
            for train, test in draw:
                fitted = model().fit(features[train], labels[train])
                total[test] += probability_in_scope(fitted, features[test])
    averaged: np.ndarray = total / len(draws)
    return averaged


def describe_cv(folds: Sequence[int], repeats: int) -> str:
    """The detector's cross-validation as its quality's ``method`` names it: ``folds``, the
    fold counts of its draws (most first; a draw may have fewer: :func:`grouped_folds`).

    >>> describe_cv([5], 1)
    '5-fold cross-validated'
    >>> describe_cv([5], 10)
    '5-fold cross-validated (repeated 10 times, held-out probabilities averaged)'
    >>> describe_cv([5, 4], 10)
    '5/4-fold cross-validated (repeated 10 times, held-out probabilities averaged)'
    """
    base = "/".join(str(k) for k in folds) + "-fold cross-validated"
    if repeats == 1:
        return base
    return f"{base} (repeated {repeats} times, held-out probabilities averaged)"


def gold_order_key(question: GoldQuestion) -> tuple[str, tuple[str, ...], str, str, str]:
    """The canonical order of the out-of-scope detector's gold rows: by question text, then
    relevant passages, kind, language and id (unique in a gold set:
    :class:`~service.data.goldset.GoldSet`), so a total order on a set's rows whatever the
    file's order, and one that an id renumbering does not change. The fit runs on the rows
    in this order (:func:`canonical_rows`): its folds, groups, bootstrap and float sums are
    then those of the set of rows, not of the file.

    >>> gold_order_key(GoldQuestion("q-2", "Who?", ("p1",), language="en"))
    ('Who?', ('p1',), 'plain', 'en', 'q-2')
    """
    return (question.question, tuple(question.gold), question.kind,
            question.language or "", question.id)  # fmt: skip


def canonical_rows(questions: Iterable[GoldQuestion]) -> list[GoldQuestion]:
    """``questions`` in canonical order (:func:`gold_order_key`).

    >>> rows = [GoldQuestion("b", "Why?", ()), GoldQuestion("a", "How?", ("p",))]
    >>> [q.id for q in canonical_rows(rows)] == [q.id for q in canonical_rows(rows[::-1])]
    True
    """
    return sorted(questions, key=gold_order_key)


class EmbeddingScope:
    """Out-of-scope detector on the embedding layer, calibrated on the gold set.

    Features of a question (cosine similarities of L2-normalised embeddings):

    1. its nearest *answerable* gold question;
    2. its nearest *unanswerable* gold question;
    3. its nearest corpus passage (the corpus is embedded once, at start);
    4. the best score of a retriever run on it (optional; ``None``: nothing retrieved, taken
       as the lowest calibration score minus 1).

    A logistic regression on the standardised features (balanced class weights) gives the
    probability of *in scope*, except outside the detector's support (:class:`SupportCheck`): a
    question farther from the corpus and from every gold question than the answerable gold
    questions that set the off-corpus cutoff (all but the lowest few: :func:`choose_trim`) is
    off-corpus, probability 0. It is calibrated on the gold set, answerable rows
    positive and unanswerable rows negative, with the gold features computed leave-one-out (a
    gold question never matches itself, as a live question is not in the gold set) — with
    ``groups``, leave-one-document-out (a gold row sees no gold row asking about its own
    document, as a live question on an uncovered document sees none). Its quality
    is the ROC AUC of **cross-validated** probabilities (stratified k-fold, k ≤ 5, repeated
    ``repeats`` times: each row's held-out probability averaged over the fold draws,
    :func:`repeated_folds`), with a stratified percentile-bootstrap interval
    (:func:`service.evaluation.detector_quality.measure_auc`), never the training fit; the
    threshold maximises Youden's J on those same probabilities among the thresholds keeping at
    least ``min_tpr`` of the answerable rows in scope
    (:func:`calibrate_threshold`). The final model is then fitted on all gold rows. The quality
    shown — the AUC and the rates at the threshold — is that of the detector as applied: a
    held-out row below its fold's off-corpus cutoff counts with probability 0 (trial 11,
    finding F3: the regression's figures alone did not move while one odd answerable row
    moved the cutoff 0.352 → 0.208). The off-corpus trim is the most rows that keep that
    held-out in-scope recall at ``min_tpr`` (:func:`choose_trim`).

    Cost: the corpus passages given are embedded once at start (WordLlama: ~40 µs a
    passage; memory ``n_passages × dim × 4`` bytes) and a live batch costs one embedding call
    and matrix products with the gold set and those passages: the caller bounds them with a
    fixed sample (:func:`corpus_sample`, ``analytics.scope_corpus_passages``), named in the
    quality's ``method`` with ``corpus_total``.

    Args:
        embedder: any :class:`service.embeddings.model.Embedder`.
        questions: the gold set (needs ≥ 2 answerable and ≥ 2 unanswerable rows).
        passages: corpus passage texts (may be empty: the corpus feature is then left out).
        corpus_total: passages in the whole corpus when ``passages`` is a sample of it
            (:func:`corpus_sample`); ``None``: they are the whole corpus.
        retriever_scores: best retriever score per gold question (same order), or ``None``
            to leave the retriever feature out.
        retriever: name of that retriever (live scores must come from the same one).
        min_tpr: see :func:`calibrate_threshold`.
        n_boot, seed: bootstrap replicates and seed of the quality interval (deterministic).
        languages: each gold row's language (its ``language`` or the language stage's
            label), or ``None``: one pooled off-corpus cutoff. Given, the off-corpus rule is
            per language (:func:`support_by_language`) and a live question is judged by its
            language's cutoff (:meth:`cutoffs`).
        min_rows: answerable rows a language needs for its own cutoff
            (``analytics.quality_min_class``).
        groups: which gold rows ask about one document (:func:`coverage_groups`, its
            ``passages`` those of ``passages``), or ``None``: each row hides itself only
            (leave-one-out) and the folds are stratified. Given, each gold row's features
            and off-corpus support hide the rows of its group (an unanswerable row's group is
            its nearest passage's: :func:`asked_groups`) and the folds hold a group's rows
            out together (:func:`grouped_folds`), so the fit and its quality are those of a
            question on a document no gold row asks about (trial 12, finding F1).
        negatives: what the non-answerable ``questions`` are, named in the quality's
            ``method``: ``"unanswerable"`` (every ``gold: []`` row), or ``"off-topic"`` when
            the caller gives only the ``kind: off-topic`` ones (:func:`scope_rows`).
        repeats: fold draws of the repeated cross-validation (:data:`CV_REPEATS`; 1: one
            draw, the fit before the forty-ninth session but for its seed). The fit is a
            function of the rows in the order given: give them in canonical order
            (:func:`canonical_rows`) for a detector of the set of rows, as the service does.

    Raises:
        ValueError: fewer than 2 answerable or 2 unanswerable gold questions, lengths differ,
            or a threshold is out of range.

    Source: Youden 1950; Hanley & McNeil 1982 (AUC); Efron & Tibshirani 1993 (bootstrap).
    """

    def __init__(
        self,
        embedder: Any,
        questions: Sequence[GoldQuestion],
        passages: Sequence[str] = (),
        *,
        retriever_scores: Sequence[float | None] | None = None,
        retriever: str | None = None,
        min_tpr: float = 0.0,
        n_boot: int = 1000,
        seed: int = 0,
        languages: Sequence[str | None] | None = None,
        min_rows: int = 10,
        corpus_total: int | None = None,
        groups: GoldGroups | None = None,
        negatives: str = "unanswerable",
        repeats: int = CV_REPEATS,
    ) -> None:
        import sklearn.linear_model  # noqa: F401 - loads scipy's OpenBLAS before the limit below
        from threadpoolctl import ThreadpoolController  # a dependency of scikit-learn

        labels = np.array([q.answerable for q in questions], dtype=bool)
        if labels.sum() < 2 or (~labels).sum() < 2:
            raise ValueError("the embedding out-of-scope detector needs at least 2 answerable "
                             "and 2 unanswerable gold questions")  # fmt: skip
        if retriever_scores is not None and len(retriever_scores) != len(questions):
            raise ValueError(f"{len(retriever_scores)} retriever scores for "
                             f"{len(questions)} gold questions")  # fmt: skip
        if groups is not None and len(groups.labels) != len(questions):
            raise ValueError(f"{len(groups.labels)} groups for {len(questions)} gold questions")
        self.embedder = embedder
        self.retriever = retriever
        self.gold_vectors = embedder.embed([q.question for q in questions])
        self.gold_answerable = labels
        self.passage_vectors = embedder.embed(list(passages))
        # One BLAS thread from the embeddings on, for the fit and its calibration (the
        # matrix products of the features, the off-corpus rule's gold similarities, the
        # logistic regressions; scikit-learn's import above loaded scipy's OpenBLAS, so the
        # limit reaches it as well as numpy's). A float32 product's last bits depend on how
        # OpenBLAS splits it between threads: the production-shaped gold set's Devanagari
        # cutoff read 0.6144985556602478 on one thread, 0.6144986748695374 on two, and the
        # threshold 0.4169020000563417 and 0.41690199126004923 — one thread gives the same
        # fitted values whatever the machine's thread count (not across CPU models, whose
        # OpenBLAS kernels differ). It costs nothing: L-BFGS-B's tiny vector operations gain
        # nothing from threads, and OpenBLAS's wake-ups cost 2-90 ms a fit on a shared
        # 2-core machine (the demo's 16 fits took 0.47 s at load 2.5, 0.015 s on one
        # thread). The embeddings are left to the backend's threads (a torch backend's
        # would be slower on one).
        with ThreadpoolController().limit(limits=1, user_api="blas"):
            self._fit(questions, labels, retriever_scores, min_tpr=min_tpr, n_boot=n_boot,
                      seed=seed, languages=languages, min_rows=min_rows,
                      corpus_total=corpus_total, groups=groups,
                      negatives=negatives, repeats=repeats)  # fmt: skip

    def _fit(
        self,
        questions: Sequence[GoldQuestion],
        labels: np.ndarray,
        retriever_scores: Sequence[float | None] | None,
        *,
        min_tpr: float,
        n_boot: int,
        seed: int,
        languages: Sequence[str | None] | None,
        min_rows: int,
        corpus_total: int | None,
        groups: GoldGroups | None,
        negatives: str = "unanswerable",
        repeats: int = CV_REPEATS,
    ) -> None:
        """The fit and calibration from the embeddings on (the class docstring; arguments
        as there, ``labels`` the gold rows' answerability): the caller holds BLAS to one
        thread."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        from service.evaluation.detector_quality import measure_auc, roc_auc

        self.use_corpus = self.passage_vectors.shape[0] > 0
        self.use_retriever = retriever_scores is not None
        finite = [s for s in retriever_scores or () if s is not None]
        self.missing_score = (min(finite) - 1.0) if finite else 0.0
        # gold rows that do not see each other: each row itself, and the rows asking about
        # one document (coverage_groups; an unanswerable row the document of its nearest
        # passage: asked_groups)
        if groups is None:
            hidden = hidden_pairs(range(len(labels)))
        else:
            nearest = (np.argmax(self.gold_vectors @ self.passage_vectors.T, axis=1)
                       if self.passage_vectors.shape[0] else None)  # fmt: skip
            hidden = hidden_pairs(asked_groups(groups, labels, nearest))
        features = self._features(self.gold_vectors, retriever_scores, hidden=hidden)
        names = [
            name
            for name, used in zip(
                FEATURES, (True, True, self.use_corpus, self.use_retriever), strict=True
            )
            if used
        ]
        draws, grouped_draws = repeated_folds(labels, groups, seed, repeats)
        split = [pair for draw in draws for pair in draw]  # every draw's folds, in turn
        grouped = all(grouped_draws)

        def model() -> Any:
            return make_pipeline(
                StandardScaler(), LogisticRegression(class_weight="balanced", max_iter=1000)
            )

        def held_out(columns: list[int]) -> np.ndarray:
            return averaged_held_out(model, features[:, columns], labels, draws)

        # Candidate feature sets, simplest first; the best cross-validated AUC wins (ties:
        # the simpler). The retriever alone is today's detector, so the embedding features
        # are kept only where they separate the gold set better.
        embedding = [i for i, n in enumerate(names) if n != "retriever"]
        candidates = [list(range(len(names)))]
        if self.use_retriever:
            candidates = [[len(names) - 1], embedding, *candidates]
        best_auc, self.columns, cv_scores = -1.0, candidates[-1], np.zeros(len(labels))
        for columns in candidates:
            scores = held_out(columns)
            auc = roc_auc(scores[labels], scores[~labels])
            if auc > best_auc + 1e-9:
                best_auc, self.columns, cv_scores = auc, columns, scores
        self.model = model().fit(features[:, self.columns], labels)
        self.feature_names = tuple(names[i] for i in self.columns)
        chosen = ", ".join(self.feature_names)
        n_passages = self.passage_vectors.shape[0]
        sampled = ""  # the corpus feature and the off-corpus rule read the passages given
        if corpus_total and corpus_total > n_passages:
            sampled = (f"; nearest passage over a fixed sample of {n_passages:,} of the "
                       f"corpus's {corpus_total:,} passages")  # fmt: skip
        #: the off-corpus rule, its held-out rates measured on the same folds as the
        #: regression's, its support similarities with the same rows hidden
        gold_sims = np.where(hidden, -np.inf, self.gold_vectors @ self.gold_vectors.T)
        corpus = features[:, 2] if self.use_corpus else None
        ids = [q.id for q in questions]
        by_lang: tuple[list[str], list[str | None]] | None = None
        if languages is not None:
            from service.language.scripts import dominant_script
            from service.language.tags import language_key

            by_lang = ([language_key(lang or UNDETERMINED) for lang in languages],
                       [dominant_script(q.question) for q in questions])  # fmt: skip

        # the rule's support similarities, the same at every trim (only the cutoffs move)
        support_memo: SupportMemo = {}

        def rule_at(trim: float) -> tuple[SupportCheck, np.ndarray]:
            """The off-corpus rule at ``trim`` and its held-out verdicts (the pooled rule, or
            by script when the gold rows' languages are given): a row is off-corpus when
            held out when its fold's cutoff flagged it in more than half of the fold draws
            (bool, shape ``(n,)``; with one draw, when it flagged it)."""
            support, off = _pooled_support(gold_sims, corpus, labels, split,
                                           DEFAULT_KNOWN_THRESHOLD, trim, ids,
                                           support_memo)  # fmt: skip
            if by_lang is not None:
                keys, scripts = by_lang
                by_language, by_script = support_by_language(gold_sims, corpus, labels, split,
                                                             keys, scripts, min_rows,
                                                             trim=trim,
                                                             memo=support_memo)  # fmt: skip
                bands = {row["script"]: row["band"] for row in by_language.values()
                         if row["band"] is not None}  # fmt: skip
                support = support._replace(by_language=by_language, by_script=by_script,
                                           min_rows=min_rows, band_by_script=bands)  # fmt: skip
                off = _held_out_by_script(gold_sims, corpus, labels, split, keys, scripts,
                                          by_language, by_script, trim=trim,
                                          memo=support_memo)  # fmt: skip
            return support, off > 0.5

        # The threshold is chosen on the regression's cross-validated probabilities
        # (averaged over the fold draws: repeated_folds); the
        # quality shown (AUC, and the TPR and FPR at that threshold) is that of the detector
        # as applied live — a held-out row its fold's off-corpus cutoff flags has probability
        # 0 and is out of scope — so a cutoff that moves moves the figures (trial 11, F3:
        # they were the regression's alone and stayed put while the cutoff fell 0.352 → 0.208).
        regression = calibrate_threshold(
            cv_scores[labels].tolist(), cv_scores[~labels].tolist(), self.retriever, min_tpr
        )
        kept = cv_scores >= regression.threshold

        rules: dict[float, tuple[SupportCheck, np.ndarray]] = {}

        def recall(trim: float) -> float:
            rules[trim] = rule_at(trim)
            return float((kept & ~rules[trim][1])[labels].mean())

        trim = choose_trim(int(labels.sum()), off_corpus_trim(min_tpr), recall, min_tpr)
        self.support, off = rules[trim] if trim in rules else rule_at(trim)
        self.support = self.support._replace(trim_limit=off_corpus_trim(min_tpr))
        applied = np.where(off, 0.0, cv_scores)
        hiding = describe_hiding(groups, grouped)
        cv_text = describe_cv(sorted({len(draw) for draw in draws}, reverse=True), len(draws))
        rule = ("the off-corpus rule applied per fold" if not self.support.by_language
                else "the off-corpus rule by script applied per fold")  # fmt: skip
        self.quality = measure_auc(
            applied[labels], applied[~labels], n_boot=n_boot, seed=seed,
            method=(f"{cv_text} logistic regression on {chosen} "
                    f"(best of {len(candidates)} feature sets; {hiding}) "
                    f"with {rule}, "
                    f"{int(labels.sum())} answerable vs {int((~labels).sum())} {negatives} "
                    f"gold questions{sampled}"),
        )  # fmt: skip
        #: cross-validated probability in scope of each gold row (gold order; averaged over
        #: the fold draws; 0 where the held-out row is off-corpus in most of them), whose
        #: rates at the threshold are the operating point reported next to the AUC
        self.cv_scores = applied
        inside = ~off & kept
        tpr, fpr = float(inside[labels].mean()), float(inside[~labels].mean())
        self.calibration = regression._replace(
            tpr=tpr, fpr=fpr, balanced_accuracy=(tpr + 1.0 - fpr) / 2, auc=self.quality.auc
        )

    def fitted_state(self) -> dict[str, Any]:
        """What the fit computed — the gold and corpus embeddings, the chosen features, the
        fitted pipeline (pickled: see :class:`PickledEstimator`), its quality,
        cross-validated scores and calibration — as plain data (everything but the
        embedder, and the live scoring's copies of the gold groups) for :meth:`restore`."""
        state = {name: value for name, value in vars(self).items()
                 if name not in ("embedder", "_groups")}  # fmt: skip
        model = state["model"]
        if isinstance(model, PickledEstimator):
            state["model"], linear = model.blob, model.linear
        else:
            state["model"], linear = pickle.dumps(model), LinearScope.of(model)
        state["linear"] = None if linear is None else linear.as_state()
        return state

    def verdict_key(self) -> str:
        """What this detector's verdicts depend on, as 16 hex chars of sha256: the fitted
        regression (its pickle, as the fit cache keeps it), the gold and corpus vectors it
        measures a question against, the gold rows' answerability, the chosen features, the
        retriever and its missing score, the threshold and the off-corpus rule (cutoffs,
        their ranges, by language and script; not the notice of its last move, nor the
        ids naming the rows that set or fall below the cutoff: their vectors and
        answerability are hashed, so renumbering the gold ids keeps the key). Two
        detectors with the same key give every question the same probability and verdict; a
        refit on a changed gold set gives another key unless its fit is the same bits (the
        drift stage then keeps the ``out_of_scope`` windows:
        :meth:`~service.drift.stage.DriftStage.set_labeller`). Bits: the fit runs on one
        BLAS thread and a restart reads it from the fit cache, so a restart on one machine
        keeps the key; a refit on another CPU model may not."""
        model = self.model
        blob = model.blob if isinstance(model, PickledEstimator) else pickle.dumps(model)
        support = {k: v for k, v in self.support._asdict().items()
                   if k not in ("change", "set_by", "below")}  # fmt: skip
        digest = hashlib.sha256()
        for array in (self.gold_vectors, self.gold_answerable, self.passage_vectors):
            digest.update(hashlib.sha256(np.ascontiguousarray(array).tobytes()).digest())
        digest.update(hashlib.sha256(blob).digest())
        rest = [list(map(int, self.columns)), float(self.missing_score), bool(self.use_corpus),
                bool(self.use_retriever), self.retriever,
                float(self.calibration.threshold), support]  # fmt: skip
        digest.update(json.dumps(rest, sort_keys=True, default=repr).encode("utf-8"))
        return digest.hexdigest()[:16]

    @classmethod
    def restore(cls, embedder: Any, state: Mapping[str, Any]) -> EmbeddingScope:
        """The detector :meth:`fitted_state` was taken from, applying ``embedder`` (the one
        it was fitted with: the same name), without fitting again; its pipeline is
        scored from its arrays (``state["linear"]``: :class:`LinearScope`) without importing
        scikit-learn, or, from a state without them (written before them) or with arrays of
        another format, unpickled at the first :meth:`score` (:class:`PickledEstimator`)."""
        detector = cls.__new__(cls)
        detector.__dict__.update({k: v for k, v in state.items() if k != "linear"})
        detector.model = PickledEstimator(
            state["model"], LinearScope.from_state(state.get("linear"))
        )
        detector.embedder = embedder
        return detector

    def _features(
        self,
        vectors: np.ndarray,
        retriever_scores: Sequence[float | None] | None,
        hidden: np.ndarray | None = None,
        nearest_out: list[np.ndarray] | None = None,
    ) -> np.ndarray:
        """Feature matrix, shape ``(n, len(feature_names))`` (see the class docstring).
        ``hidden`` (shape ``(n, n_gold)`` bool): the queries are the gold rows, and a row's
        nearest gold questions leave out those it marks (itself, and the rows of its group:
        :func:`hidden_pairs`); -1 when it hides every row of a class. ``nearest_out``: a list
        the position of each query's nearest passage (shape ``(n,)``, -1 without the corpus
        feature) is appended to (:func:`nearest_with_index`: the same similarities)."""
        if hidden is not None:  # the queries are the gold rows: none sees what it hides
            sims = np.where(hidden, -np.inf, vectors @ self.gold_vectors.T)
            cols = [np.maximum(sims[:, self.gold_answerable].max(axis=1), -1.0),
                    np.maximum(sims[:, ~self.gold_answerable].max(axis=1), -1.0)]  # fmt: skip
        else:
            # three float32 products, each against its own rows as they are: one product
            # against the stacked rows, or against C-contiguous transposed copies (~5-10 %
            # less time), gives other last bits at some batch sizes, as OpenBLAS picks its
            # kernels by shape (of 527 batches of 1-500 production-shaped questions, stacked:
            # 77 differed on two threads, and some from 2 questions on one; transposed: 91
            # on one thread), so the verdicts would no longer be the same bits
            answerable, unanswerable = self._gold_groups()
            cols = [nearest_similarity(vectors, answerable),
                    nearest_similarity(vectors, unanswerable)]  # fmt: skip
        if self.use_corpus and nearest_out is not None:
            sims, at = nearest_with_index(vectors, self.passage_vectors)
            cols.append(sims)
            nearest_out.append(at)
        elif self.use_corpus:
            cols.append(nearest_similarity(vectors, self.passage_vectors))
        elif nearest_out is not None:
            nearest_out.append(np.full(vectors.shape[0], -1, dtype=np.int64))
        if self.use_retriever:
            scores = retriever_scores or [None] * vectors.shape[0]
            cols.append(np.array([self.missing_score if s is None else s for s in scores]))
        return np.column_stack(cols).astype(np.float64)

    def _gold_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """The answerable and the unanswerable gold vectors (C-contiguous copies, the rows
        in gold order), made once: every live batch multiplies by them (copying them per
        batch was ~1.4 MB, up to ~2 µs a distinct question where glibc maps each copy)."""
        groups: tuple[np.ndarray, np.ndarray] | None = getattr(self, "_groups", None)
        if groups is None:
            groups = (self.gold_vectors[self.gold_answerable],
                      self.gold_vectors[~self.gold_answerable])  # fmt: skip
            self._groups = groups
        return groups

    @property
    def reads_retriever(self) -> bool:
        """Whether the fitted model reads the retriever's best score: the retriever feature
        was computed (``use_retriever``) and won a place in the chosen feature set. When it
        did not, :meth:`score` needs no retriever scores, and the stage runs no retriever."""
        return "retriever" in self.feature_names

    def score(
        self, questions: Sequence[str], retriever_scores: Sequence[float | None] | None = None
    ) -> np.ndarray:
        """Probability of *in scope* per question, shape ``(n,)``, in [0, 1]; 0 for an
        off-corpus question (outside the detector's support: :class:`SupportCheck`).

        ``retriever_scores`` may be ``None`` when the model does not read them
        (:attr:`reads_retriever` false): the column is then filled and left unread.

        Raises:
            ValueError: the model reads the retriever's score and ``retriever_scores`` is
                missing or of another length.
        """
        return self.score_support(questions, retriever_scores)[0]

    def score_support(
        self,
        questions: Sequence[str],
        retriever_scores: Sequence[float | None] | None = None,
        languages: Sequence[str | None] | None = None,
        cutoffs: np.ndarray | None = None,
        *,
        retrieve: Callable[[list[str]], Sequence[float | None]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(probability in scope, off-corpus)`` per question: :meth:`score_with_support`
        without the support similarities (the arguments and errors are its)."""
        proba, off, _ = self.score_with_support(questions, retriever_scores, languages, cutoffs,
                                                retrieve=retrieve)  # fmt: skip
        return proba, off

    def score_with_support(
        self,
        questions: Sequence[str],
        retriever_scores: Sequence[float | None] | None = None,
        languages: Sequence[str | None] | None = None,
        cutoffs: np.ndarray | None = None,
        *,
        retrieve: Callable[[list[str]], Sequence[float | None]] | None = None,
        nearest_out: list[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(probability in scope, off-corpus, support similarity)`` per question, shapes
        ``(n,)``: the support similarity (:func:`support_similarity`, what the off-corpus rule
        compares with the cutoff; :meth:`bands` says which lie in its range), and the
        probability (:meth:`score`, 0 where off-corpus) and whether the question is outside
        the detector's support (bool; :class:`SupportCheck`), each judged by the cutoff of
        its language ``languages`` (:meth:`cutoffs`; ``None``: by its script). ``cutoffs``:
        :meth:`cutoffs` of these questions and languages when the caller has them already.

        ``nearest_out``: a list the position of each question's nearest corpus passage (in the
        passages the detector was given; -1 without them) is appended to (one array, shape
        ``(n,)``), what :class:`~service.refusals.families.ScopeFamilies` reads.

        ``retrieve`` (in place of ``retriever_scores``): gives the retriever's best score of
        each question it is given (one per question, in order), and is given only the
        questions inside the support, in order (none, or a model that does not read the
        retriever's score (:attr:`reads_retriever`): not called). An off-corpus question's
        probability is 0 whatever its score, so its retrieval is skipped (about a third of
        the production-shaped benchmark's distinct questions); the others' probabilities are
        the same bits as with every score given, as each row's probability is computed from
        its own features alone (elementwise, and a row's product with the coefficients).

        Raises:
            ValueError: as :meth:`score`, or ``cutoffs`` is not one per question, or both
                ``retriever_scores`` and ``retrieve`` are given, or ``retrieve`` returned
                another number of scores than questions.
        """
        if cutoffs is not None and len(cutoffs) != len(questions):
            raise ValueError(f"{len(cutoffs)} cutoffs for {len(questions)} questions")
        if retrieve is not None and retriever_scores is not None:
            raise ValueError("give either retriever_scores or retrieve, not both")
        given = retrieve is not None or (
            retriever_scores is not None and len(retriever_scores) == len(questions)
        )
        if self.reads_retriever and not given:
            raise ValueError("this detector needs one retriever score per question")
        if not questions:
            if nearest_out is not None:
                nearest_out.append(np.zeros(0, dtype=np.int64))
            return np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0)
        texts = list(questions)
        vectors = self.embedder.embed(texts)
        # retrieve: ``missing_score`` first
        every = self._features(vectors, retriever_scores, nearest_out=nearest_out)
        memo = getattr(self.embedder, "nearest", None)
        if isinstance(memo, NearestMemo):  # the topic stage's novelty check reads them
            memo.remember(self.gold_vectors, texts, np.maximum(every[:, 0], every[:, 1]))
        if cutoffs is None:
            cutoffs = self.cutoffs(questions, languages)
        support = support_similarity(every, self.use_corpus)
        off = support < cutoffs - SUPPORT_TOLERANCE
        if retrieve is not None and self.reads_retriever:  # its column is the last
            inside = np.flatnonzero(~off).tolist()
            if inside:
                found = retrieve([texts[i] for i in inside])
                if len(found) != len(inside):
                    raise ValueError(f"{len(found)} retriever scores for {len(inside)} questions")
                every[inside, -1] = [self.missing_score if s is None else s for s in found]
        features = every[:, self.columns]
        model = self.model
        if isinstance(model, PickledEstimator):
            proba = model.probability_in_scope(features)
        else:
            proba = probability_in_scope(model, features)
        proba[off] = 0.0
        return proba, off, support

    def bands(self, cutoffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``: the range of each question's off-corpus cutoff (``cutoffs``, from
        :meth:`cutoffs`) over draws of the answerable gold rows that set it
        (:attr:`SupportCheck.band`, by script :attr:`SupportCheck.band_by_script`;
        :func:`band_edges`), shapes ``(n,)``; a cutoff without a measured range (a fit kept
        before it, or ``-inf``: not judged) is its own range."""
        support = self.support
        if getattr(support, "by_language", None):
            ranges = getattr(support, "band_by_script", None) or {}
            pairs = [(cut, ranges.get(script)) for script, cut in support.by_script.items()]
        else:
            pairs = [(support.cutoff, getattr(support, "band", None))]
        return band_edges(cutoffs, pairs)

    def gold_languages(self) -> frozenset[str] | None:
        """The live language keys the gold set's rows judge, answerable or not
        (:func:`~service.language.gold.gold_language_keys`: the rows' keys, and a key the
        language stage never labels a question with, e.g. ``zh-Hans``, also under the label
        it gives, ``zh``; the topic stage's rule); ``None`` when the detector was calibrated
        without languages (a pooled off-corpus rule): then every question is judged.

        A live question in another language is judged by neither the regression nor the
        off-corpus rule (:class:`~service.refusals.stage.EmbeddingScopeStage`): no gold row
        measured how its similarities look when the corpus answers it.
        """
        from service.language.gold import gold_language_keys

        by_language = getattr(self.support, "by_language", None)
        return gold_language_keys(by_language) if by_language else None

    def cutoffs(
        self, questions: Sequence[str], languages: Sequence[str | None] | None = None
    ) -> np.ndarray:
        """The off-corpus cutoff each question is judged by, shape ``(n,)``: the pooled
        :attr:`SupportCheck.cutoff` when the rule is not per language; else the cutoff of its
        script (:func:`support_by_language`) — its language's (``languages``: the languages
        the stage judges the questions in, :func:`~service.language.gold.judged_language`,
        folded by :func:`~service.language.tags.language_key`) when the gold set's rows judge
        that language (:meth:`gold_languages`; a live ``zh`` is judged by ``zh-Hans`` rows'
        script, the least cutoff when several such rows' scripts have one) — or ``-inf``
        (not judged by the off-corpus rule) when that script has no cutoff or the question's
        language is one the gold set lacks: the
        support similarity of a language no gold row is written in is not measured (a
        German question to an English gold set is far from every English row whether or not
        the corpus answers it; trial finding 2 of the sixteenth session: 240 German
        questions, most of them answerable translations, were counted off-corpus by the
        Latin cutoff). ``und`` (no language, or ``languages`` not given) is no language: its
        question's own script decides, never the script of the gold rows labelled ``und`` (a
        Cyrillic question the detector could not name would otherwise be judged by the Latin
        cutoff of Latin ``und`` gold rows).
        """
        support = self.support
        by_language = getattr(support, "by_language", None) or {}
        if not by_language:
            return np.full(len(questions), support.cutoff)
        from service.language.gold import gold_keys_by_label
        from service.language.scripts import dominant_script

        by_script = support.by_script
        keys_of = gold_keys_by_label(by_language)  # a few keys: per call
        # a named language's cutoff, once per distinct label of the call (a batch holds a
        # few; the per-question look-ups cost ~1 µs a distinct question)
        named: dict[str | None, float | None] = {}
        out = np.full(len(questions), -np.inf)
        for i, question in enumerate(questions):
            label = None if languages is None else languages[i]
            if label in named:
                cutoff = named[label]
            else:
                cutoff = named[label] = _named_cutoff(label, keys_of, by_language, by_script)
            if cutoff is not None:
                out[i] = cutoff
            elif (script := dominant_script(question)) in by_script:
                out[i] = by_script[script]
        return out


def _named_cutoff(
    label: str | None,
    keys_of: dict[str, tuple[str, ...]],
    by_language: dict[str, dict[str, Any]],
    by_script: dict[str, float],
) -> float | None:
    """The off-corpus cutoff :meth:`EmbeddingScope.cutoffs` gives a question in language
    ``label``: the least cutoff of the scripts of the gold rows that judge it (``keys_of``:
    :func:`~service.language.gold.gold_keys_by_label`; ``-inf``: none of them has one), or
    ``None`` when ``label`` names no language (``None``, ``""``, ``und``: the question's own
    script decides)."""
    from service.language.tags import language_key

    key = language_key(label or UNDETERMINED)
    if key == UNDETERMINED:
        return None
    found = [by_script[script] for gold_key in keys_of.get(key, ())
             if (script := by_language[gold_key]["script"]) in by_script]  # fmt: skip
    return min(found) if found else -math.inf


def band_edges(
    cutoffs: np.ndarray, pairs: Iterable[tuple[float, tuple[float, float] | None]]
) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` per question, shapes ``(n,)``: the range of the off-corpus cutoff each
    question is judged by (``cutoffs``, :meth:`EmbeddingScope.cutoffs`), from ``pairs`` of
    ``(cutoff, its range)`` (:attr:`SupportCheck.band`; ``None``: not measured, the cutoff
    itself); a cutoff no pair names (``-inf``: not judged) is its own range.

    >>> low, high = band_edges(np.array([0.3, -np.inf, 0.5]), [(0.3, (0.25, 0.4)), (0.5, None)])
    >>> low.tolist(), high.tolist()
    ([0.25, -inf, 0.5], [0.4, -inf, 0.5])
    """
    low, high = cutoffs.astype(np.float64), cutoffs.astype(np.float64)
    for cutoff, band in pairs:
        if band is not None:
            at = cutoffs == cutoff
            low[at], high[at] = band
    return low, high


def unstable_verdicts(
    support: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    off: np.ndarray,
    proba: np.ndarray,
    threshold: float,
) -> np.ndarray:
    """Which verdicts depend on the draw of the answerable gold rows that set the off-corpus
    cutoff (bool, shape ``(n,)``; all arrays shape ``(n,)``): a question whose ``support``
    similarity lies in its cutoff's range ``[low, high)`` (:func:`band_edges`; within
    :data:`SUPPORT_TOLERANCE`, as the rule compares) and whose verdict that range moves —
    off-corpus now (``off``: out of scope; at the range's low end the regression would judge
    it, which may keep it out), or in scope now (probability ``proba`` at or above
    ``threshold``) and off-corpus at its high end. A question the regression puts out of scope
    inside the support is out of scope at any cutoff: stable.

    >>> unstable_verdicts(np.array([0.30, 0.36, 0.36, 0.50, 0.36]), np.full(5, 0.29),
    ...                   np.full(5, 0.40), np.array([True, False, False, False, False]),
    ...                   np.array([0.0, 0.9, 0.1, 0.9, 0.9]), 0.5).tolist()
    [True, True, False, False, True]
    """
    inside = (support >= low - SUPPORT_TOLERANCE) & (support < high - SUPPORT_TOLERANCE)
    flagged: np.ndarray = inside & (off | (proba >= threshold))
    return flagged


class KnownScope:
    """Known questions decide their own scope: a live question that near-duplicates a gold
    question (:class:`service.quality.known.KnownQuestionIndex`: character n-gram cosine ≥ its
    threshold, and the same question by harvest's wording rule, :mod:`service.text.wording`:
    numbers, negation, content words, question word) takes that row's answerability — a
    near-duplicate of an unanswerable row is out of scope, of an answerable row in scope —
    whatever a score says.

    So a refusal of an in-scope-looking question the gold set marks unanswerable (SQuAD 2.0's
    adversarial questions, whose words match their paragraph) is a correct refusal, not an
    over-refusal, and an answer to it is an under-refusal. An unanswerable twin of an
    answerable row ("... did Khanbaliq not become?") is not that row's near-duplicate.

    >>> from service.data.goldset import GoldSet
    >>> gold = GoldSet((GoldQuestion("q-1", "Who founded the college?", ("p-1",)),
    ...                 GoldQuestion("q-2", "Who founded the college on Mars?", ())))
    >>> KnownScope(gold).verdicts(["who founded the college on mars", "Hello there"])
    [('q-2', False), (None, None)]
    """

    def __init__(
        self, gold: Any, threshold: float = DEFAULT_KNOWN_THRESHOLD, cache_size: int = 65_536
    ) -> None:
        from service.quality.known import KnownQuestionIndex

        self.index = KnownQuestionIndex(gold, threshold=threshold, cache_size=cache_size)
        self.answerable = {q.id: q.answerable for q in gold}
        self.threshold = threshold
        self._gold = tuple(gold)

    @functools.cached_property
    def key(self) -> str:
        """What the known questions' verdicts depend on, as 16 hex chars of sha256: each gold
        row's question (as indexed) and answerability, and the match threshold. Not the ids:
        a verdict is the matched row's answerability, and a tie between equally similar rows
        goes to the first in canonical order (question, passages, ...; the id only between
        rows alike in all of those, so of one answerability), so renumbering or reordering
        the gold rows keeps every verdict and the key (trial 50, M2).

        >>> from service.data.goldset import GoldSet
        >>> rows = (GoldQuestion("q-1", "Who founded it?", ("p-1",)),
        ...         GoldQuestion("q-2", "Who founded it on Mars?", ()))
        >>> renumbered = (GoldQuestion("n-002", "Who founded it?", ("p-1",)),
        ...               GoldQuestion("n-001", "Who founded it on Mars?", ()))
        >>> KnownScope(GoldSet(rows)).key == KnownScope(GoldSet(renumbered)).key
        True
        """
        rows = sorted([q.question, bool(q.answerable)] for q in self._gold)
        blob = json.dumps([rows, self.threshold], sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def verdicts(self, questions: Sequence[str]) -> list[tuple[str | None, bool | None]]:
        """Per question ``(gold id, in scope?)``, or ``(None, None)`` when it is not known."""
        return [(None, None) if m is None else (m.gold_id, self.answerable[m.gold_id])
                for m in self.index.match_many(questions)]  # fmt: skip
