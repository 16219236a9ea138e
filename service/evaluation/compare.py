"""Paired comparison of two retrievers on the same gold questions.

For one metric, the per-question differences ``d_i = B_i − A_i`` give wins (``d > 0``), losses
(``d < 0``) and ties; the two-sided paired randomization (sign-flip permutation) test of
Fisher, as recommended for IR by Smucker, Allan & Carterette (CIKM 2007), gives the p-value of
"mean difference = 0"; a percentile bootstrap over questions (Efron & Tibshirani 1993) gives the
confidence interval of the mean difference. Both come from :mod:`scipy.stats`.

Ties (``d = 0``) do not move the statistic under a sign flip, so the test flips only the ``m``
non-zero differences (the sum over them is the mean times ``n``: the same test). When
``2**m ≤ n_resamples`` scipy enumerates every flip and the p-value is exact — e.g. 60 questions
of which 3 differ by +1 give exactly 2/8 = 0.25, and one differing question gives exactly 1;
beyond that it is a Monte-Carlo estimate from ``n_resamples`` flips.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 10_000


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """``B − A`` on one metric over the questions both were scored on.

    Attributes:
        metric: the metric label, e.g. ``"recall@10"``.
        n: number of paired questions.
        mean_a, mean_b, mean_diff: means (``mean_diff = mean_b − mean_a``).
        wins, losses, ties: questions where B is better, worse, equal.
        p_value: two-sided paired randomization test, in [0, 1] (1.0 when every d is 0).
        ci_low, ci_high: bootstrap confidence interval of ``mean_diff`` at ``confidence``.
        deltas: question id → ``B − A``.
        disagreement: ``""`` when the interval and the test agree (the interval excludes 0
            exactly when ``p_value < 1 − confidence``), else one sentence saying they do not
            and that the test decides (:func:`disagreement`).
    """

    metric: str
    a: str
    b: str
    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    wins: int
    losses: int
    ties: int
    p_value: float
    ci_low: float
    ci_high: float
    confidence: float
    deltas: dict[str, float]
    disagreement: str = ""

    def to_json(self) -> dict[str, object]:
        """Return the JSON form (deltas included)."""
        return asdict(self)


def _mean_stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
    # numpy's stubs type a reduction over ``axis`` as Any; over 2-D resamples it is 1-D.
    means: np.ndarray = np.mean(x, axis=axis)
    return means


def _sum_stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
    # numpy's stubs type a reduction over ``axis`` as Any; over 2-D resamples it is 1-D.
    sums: np.ndarray = np.sum(x, axis=axis)
    return sums


def paired_comparison(
    a_name: str,
    a: Mapping[str, Mapping[str, float]],
    b_name: str,
    b: Mapping[str, Mapping[str, float]],
    metric: str,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    order: Callable[[str], Any] | None = None,
) -> PairedComparison:
    """Compare per-question scores of two retrievers on ``metric``.

    Args:
        a_name, b_name: retriever names.
        a, b: ``{question_id: {metric: value}}`` (``RetrieverReport.per_query``).
        metric: label present in both, e.g. ``"recall@10"``.
        confidence: level of the bootstrap interval, in (0, 1).
        n_resamples: permutations / bootstrap resamples (≥ 100).
        seed: random seed, so a report is reproducible.
        order: sort key of a question id: the order the questions are resampled (and the
            means summed) in, ties by id (``None``: by id). The seeded resamples draw
            questions by position, so the interval and a Monte-Carlo p-value depend on it: a
            key naming the question's content (not its id) makes them a function of the
            questions' content, the same for a renumbered or reordered gold set.

    Returns:
        A :class:`PairedComparison`.

    Raises:
        ValueError: no question is scored by both, ``metric`` is missing, or an argument is
            out of range.

    >>> r = paired_comparison("a", {"q1": {"m": 0.0}, "q2": {"m": 0.0}},
    ...                       "b", {"q1": {"m": 1.0}, "q2": {"m": 1.0}}, "m")
    >>> (r.wins, r.losses, r.mean_diff, r.p_value)
    (2, 0, 1.0, 0.5)
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    if n_resamples < 100:
        raise ValueError("n_resamples must be >= 100")
    ids = sorted(set(a) & set(b))
    if order is not None:
        ids.sort(key=order)  # stable: ties stay in id order
    if not ids:
        raise ValueError(f"{a_name} and {b_name} share no scored question")
    try:
        xa = np.array([a[i][metric] for i in ids], dtype=float)
        xb = np.array([b[i][metric] for i in ids], dtype=float)
    except KeyError:
        raise ValueError(f"metric {metric!r} is not in both reports") from None
    diff = xb - xa
    p_value, low, high = _significance(diff, confidence, n_resamples, seed)
    differing = int((diff != 0).sum())
    return PairedComparison(
        metric=metric,
        a=a_name,
        b=b_name,
        n=len(ids),
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        mean_diff=float(diff.mean()),
        wins=int((diff > 0).sum()),
        losses=int((diff < 0).sum()),
        ties=int((diff == 0).sum()),
        p_value=p_value,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        deltas={i: float(d) for i, d in zip(ids, diff, strict=True)},
        disagreement=disagreement(metric, p_value, low, high, confidence, differing, len(ids)),
    )


def disagreement(
    metric: str, p_value: float, low: float, high: float, confidence: float, differing: int,
    n: int,
) -> str:  # fmt: skip
    """One sentence when the bootstrap interval and the randomization test disagree about a
    difference at ``confidence`` (the interval excludes 0 and ``p ≥ 1 − confidence``, or the
    reverse), else ``""``.

    The sign-flip test over the ``differing`` questions is exact (or its Monte-Carlo
    estimate); the percentile bootstrap of the mean is an approximation that understates the
    spread when few questions differ (trial 13: 4 of 32 differ, all losses; a resample keeps
    none of the 4 with probability (28/32)^32 ≈ 1.4 %, under the 2.5 % tail, so the 95 %
    interval [−0.146, −0.010] excluded 0 while the exact p was 2/2^4 = 0.125). With
    ``differing`` ≤ log2(2 / (1 − confidence)) (5 at 95 %) no p-value can fall below
    ``1 − confidence`` at all.

    >>> disagreement("recall@5", 0.125, -0.146, -0.010, 0.95, 4, 32)  # doctest: +ELLIPSIS
    'recall@5: the 95% bootstrap interval excludes 0 but the randomization test gives p = 0.125 ...'
    >>> disagreement("recall@5", 0.01, -0.2, -0.05, 0.95, 12, 32)
    ''
    """
    alpha = 1.0 - confidence
    excludes = low > 0.0 or high < 0.0
    if excludes == (p_value < alpha):
        return ""
    if excludes:
        return (f"{metric}: the {confidence:.0%} bootstrap interval excludes 0 but the "
                f"randomization test gives p = {p_value:.3g} (≥ {alpha:.3g}): only {differing} "
                f"of {n} questions differ, and the bootstrap interval runs narrow on few "
                f"differing questions; the test decides (no significant difference at "
                f"{alpha:.3g})")  # fmt: skip
    return (f"{metric}: the randomization test gives p = {p_value:.3g} (< {alpha:.3g}) but "
            f"the {confidence:.0%} bootstrap interval contains 0; the test decides "
            f"({differing} of {n} questions differ)")  # fmt: skip


def _significance(
    diff: np.ndarray, confidence: float, n_resamples: int, seed: int
) -> tuple[float, float, float]:
    if not diff.any():
        return 1.0, 0.0, 0.0
    from scipy import stats  # here: importing scipy.stats costs ~0.5 s of serve's start-up

    rng = np.random.default_rng(seed)
    nonzero = diff[diff != 0]
    if len(nonzero) == 1:
        # Both signs of the one non-zero difference reach |sum| = |d|: p = 2/2.
        p_value = 1.0
    else:
        p_value = stats.permutation_test(
            (nonzero,),
            _sum_stat,
            permutation_type="samples",
            alternative="two-sided",
            n_resamples=n_resamples,
            vectorized=True,
            random_state=rng,
        ).pvalue
    if len(diff) < 2 or np.all(diff == diff[0]):
        # The bootstrap distribution is degenerate: every resample has the same mean.
        value = float(diff.mean())
        return float(min(1.0, p_value)), value, value
    boot = stats.bootstrap(
        (diff,),
        _mean_stat,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        vectorized=True,
        random_state=rng,
    )
    low, high = boot.confidence_interval
    return float(min(1.0, p_value)), float(low), float(high)


def compare_all(
    a_name: str,
    a: Mapping[str, Mapping[str, float]],
    b_name: str,
    b: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str],
    order: Callable[[str], Any] | None = None,
    **kwargs: float | int,
) -> list[PairedComparison]:
    """Run :func:`paired_comparison` for every metric in ``metrics`` (``order``: its sort key
    of a question id)."""
    return [paired_comparison(a_name, a, b_name, b, m, order=order, **kwargs)  # type: ignore[arg-type]
            for m in metrics]  # fmt: skip
