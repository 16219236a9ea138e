"""Statistical tests for drift: two-sample homogeneity, share CIs, two proportions, gaps.

All functions are pure, vectorised with numpy, and never raise on empty or degenerate data:
they return a documented neutral result (``p_value = 1.0`` and a ``degenerate`` flag, or an
interval of ``(0, 1)``). They raise ``ValueError`` only on invalid arguments.

Small expected counts: the chi-square approximation is adequate when no expected count is
below 1 and at most 20 % of them are below 5 (Cochran 1954, "Some methods for strengthening
the common χ² tests", Biometrics 10:417–451, p. 420; Agresti, *Categorical Data Analysis*,
3rd ed., §3.2.3) — *Cochran's rule*, checked on the expected counts, never on the observed
ones. When the full table breaks it, :func:`chi2_homogeneity` (``method="auto"``) POOLS
sparse categories (Cochran's advice) and uses the chi-square distribution on the pooled table
(``method="pooled"``; ``pooled`` lists the categories merged into a column), in this order:

1. the categories the reference lacks (count 0 there, > 0 in the current sample — a language
   the gold set has no question in) become one column, "not in the reference": such a
   category is the strongest evidence of drift, not noise, so it is NEVER merged into a
   category the reference has (that would hide it: gold en 45, es 10 against live en 809,
   es 68, hi-Latn 123 gives p = 0.87 with hi-Latn pooled into es, p = 3.5e-4 without);
2. then the rarest categories the reference has (smallest column total first) become one
   "other" column, until the rule holds or the reference's categories are all in one column;
3. when even that fails because the "not in the reference" column itself is too thin (its
   expected counts break the rule — below 1, or too many below 5: a few live questions in a
   language the gold set lacks), the test is CONDITIONAL on the reference's categories
   (``method="conditional"``): the absent columns are left out, the current row is
   restricted to the categories the reference has, and step 2 and the chi-square run on
   that 2 × K' table (a test of the conditional distribution given "category in the
   reference", Agresti 3rd ed. §1.2.5 on conditional distributions and §3.2.3 on sparse
   tables). The absent categories stay in ``new_categories`` (and in the share changes:
   rising, coverage gaps). Nothing is lost by leaving them out of the p-value: conditional
   on both margins the reference's count in that column is hypergeometric with a small mean
   ``e``, so even the most extreme outcome (all of it in the current row) has probability
   ``≈ (1 − n_ref / N)^c ≈ exp(−e)``: above 0.37 for ``e < 1``, above 0.0067 for ``e < 5``
   — far above a detector's level; yet resampling the full table instead cannot resolve a
   detector's level (gold en 45, es 10 against live en 200, es 797, hi-Latn 3: Monte-Carlo
   p = 5e-5 after 20,000 draws, its floor, against alpha 4e-6 — no alarm; the conditional
   test's p = 5e-26 — drift).

Pooling keeps the test valid (if the coarsened distributions differ, so do the full ones),
loses power only on shifts among rare categories — which an effect-size threshold would
ignore anyway — and, unlike resampling, resolves the tiny per-test levels a detector needs
after its repeated-testing correction (1e-5 and below), at no cost. When no pooling satisfies
the rule (a handful of rows), "auto" uses, on the full table, a Monte-Carlo test that is exact
conditional on both margins — the approach of R's
``chisq.test(simulate.p.value=TRUE)`` (Hope 1968): the reference row is redrawn from the
multivariate hypergeometric distribution of the column totals, up to ``n_resamples`` times,
with Besag & Clifford's (1991) sequential stopping: once ``h = 10`` resampled statistics
reach the observed one, after ``L`` draws, ``p = h / L``; otherwise ``p = (1 + #{T_b ≥
T_obs}) / (n_resamples + 1)``. Clearly non-significant tables thus cost a few hundred draws.
A Monte-Carlo p-value is never below its floor ``1 / (n_resamples + 1)``
(:attr:`Chi2Result.p_floor`; Besag & Clifford 1991; Davison & Hinkley 1997 §4.2.1): a
caller whose level is below the floor must say the test cannot reject, not report "no
change".
A G-test was rejected: it shares the chi-square's small-sample problem. Seeded, so results
are reproducible; the smallest possible p-value is ``1 / (n_resamples + 1)``, so choose
``n_resamples ≫ 1 / alpha``.

>>> r = chi2_homogeneity({"en": 40, "hi": 10}, {"en": 400, "hi": 100})
>>> round(r.p_value, 6), r.method
(1.0, 'asymptotic')
>>> [round(float(b), 4) for b in newcombe_interval(56, 70, 48, 80)]  # Newcombe 1998 (a)
[0.0524, 0.3339]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from service.coverage import gap_lower_bound, wilson_bounds
from service.drift.distances import Counts, union_categories

__all__ = [
    "Chi2Result",
    "CoverageGap",
    "ProportionTest",
    "ShareChange",
    "auto_is_asymptotic",
    "chi2_from_table",
    "chi2_homogeneity",
    "contingency_table",
    "coverage_gaps",
    "newcombe_interval",
    "share_changes_from_table",
    "share_differences",
    "two_proportion_test",
    "wilson_interval",
]

FloatArray = NDArray[np.float64]


class Chi2Result(NamedTuple):
    """Outcome of :func:`chi2_homogeneity` (2 × K table: reference row, current row)."""

    statistic: float
    p_value: float
    dof: int
    method: Literal["asymptotic", "pooled", "conditional", "monte_carlo", "degenerate"]
    n_reference: int
    n_current: int
    new_categories: tuple[str, ...]  # count 0 in reference, > 0 in current
    low_expected: bool  # some expected count < min_expected (before pooling)
    degenerate: bool  # < 2 non-empty categories or an empty side: p = 1
    pooled: tuple[str, ...] = ()  # categories merged into a pooled column (method "pooled")
    # the smallest p the method can give: 1 / (n_resamples + 1) for "monte_carlo", else 0
    p_floor: float = 0.0


#: ``scipy.special.ndtri(0.5 + confidence / 2)`` of the confidence every default uses (0.95),
#: the same float (``tests/service/drift/test_stats_tests_z.py`` checks it against scipy), so a
#: start that builds a Wilson interval (the language quality's) does not import
#: ``scipy.special`` (~0.1-0.3 s) for it.
KNOWN_Z: dict[float, float] = {0.95: 1.959963984540054}


@functools.lru_cache(maxsize=16)
def _z(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence``: ``ndtri(0.5 + confidence / 2)``
    (:data:`KNOWN_Z`, else scipy's).

    Raises:
        ValueError: ``confidence`` is not in (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if confidence in KNOWN_Z:
        return KNOWN_Z[confidence]
    from scipy import special  # here, not at start: scipy.special's import is ~0.1-0.3 s

    return float(special.ndtri(0.5 + confidence / 2))


def wilson_interval(
    successes: ArrayLike, n: ArrayLike, confidence: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    """Wilson score interval for a proportion ``successes / n`` (Wilson 1927; Newcombe 1998
    method 3): ``(p̂ + z²/2n ± z √(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``.

    Vectorised over broadcastable ``successes`` and ``n``; ``n = 0`` gives ``(0, 1)``.
    Matches ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``.
    """
    z2 = _z(confidence) ** 2
    x, m = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    empty = m <= 0
    safe = np.where(empty, 1.0, m)
    p = x / safe
    centre = (p + z2 / (2 * safe)) / (1 + z2 / safe)
    half = np.sqrt(z2 * p * (1 - p) / safe + z2 * z2 / (4 * safe * safe)) / (1 + z2 / safe)
    lo = np.where(empty, 0.0, np.maximum(centre - half, 0.0))
    hi = np.where(empty, 1.0, np.minimum(centre + half, 1.0))
    return lo, hi


def newcombe_interval(
    x1: ArrayLike, n1: ArrayLike, x2: ArrayLike, n2: ArrayLike, confidence: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    """Hybrid score interval for ``x1/n1 − x2/n2`` (Newcombe 1998, "Interval estimation for
    the difference between independent proportions", Stat. Med. 17, method 10):
    ``(d − √((p1−l1)² + (u2−p2)²), d + √((u1−p1)² + (p2−l2)²))`` from the Wilson intervals
    ``(l, u)`` of each proportion. Vectorised; in [−1, 1].
    """
    return _hybrid(_side(x1, n1, confidence), _side(x2, n2, confidence))


#: One proportion's ``(share, Wilson low, Wilson high)``, the input of :func:`_hybrid`.
Side = tuple[FloatArray, FloatArray, FloatArray]


def _side(x: ArrayLike, n: ArrayLike, confidence: float) -> Side:
    """``(x / n, *wilson_interval(x, n))``, the share 0 where ``n`` is 0."""
    a, m = np.asarray(x, dtype=float), np.asarray(n, dtype=float)
    return (a / np.where(m > 0, m, np.inf), *wilson_interval(a, m, confidence))


def _hybrid(first: Side, second: Side) -> tuple[FloatArray, FloatArray]:
    """Newcombe's hybrid score interval of ``share1 − share2`` from both sides
    (:func:`newcombe_interval`), clipped to [−1, 1]."""
    (p1, l1, u1), (p2, l2, u2) = first, second
    d = p1 - p2
    lo = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return np.maximum(lo, -1.0), np.minimum(hi, 1.0)


#: The reference sides :func:`_newcombe_against` worked out last (newest last): a detector's
#: fixed reference (the gold set) or frozen baseline is the same row at every test.
_REFERENCE_SIDES: dict[tuple[bytes, float, float], Side] = {}
_REFERENCE_SIDES_KEPT = 16


def _newcombe_against(
    x1: FloatArray, n1: float, x2: FloatArray, n2: float, confidence: float
) -> tuple[FloatArray, FloatArray]:
    """:func:`newcombe_interval` of ``x1 / n1 − x2 / n2`` (float rows, float totals) with the
    second side's share and Wilson interval remembered for the latest
    :data:`_REFERENCE_SIDES_KEPT` rows: the same operations on the same values, so the same
    floats, with one Wilson interval per test instead of two."""
    key = (x2.tobytes(), float(n2), confidence)
    side = _REFERENCE_SIDES.get(key)
    if side is None:
        side = _REFERENCE_SIDES[key] = _side(x2, n2, confidence)
        for old in list(_REFERENCE_SIDES)[:-_REFERENCE_SIDES_KEPT]:  # the oldest beyond
            _REFERENCE_SIDES.pop(old, None)  # (pop: another thread may have taken it)
    return _hybrid(_side(x1, n1, confidence), side)


def _wilson_scalar(x: float, n: float, z: float) -> tuple[float, float]:
    if n <= 0:
        return 0.0, 1.0
    p, z2 = x / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = math.sqrt(z2 * p * (1 - p) / n + z2 * z2 / (4 * n * n)) / (1 + z2 / n)
    return max(centre - half, 0.0), min(centre + half, 1.0)


def _newcombe_scalar(x1: float, n1: float, x2: float, n2: float, z: float) -> tuple[float, float]:
    """:func:`newcombe_interval` for one pair, in plain floats (30× faster than numpy)."""
    p1, p2 = (x1 / n1 if n1 > 0 else 0.0), (x2 / n2 if n2 > 0 else 0.0)
    (l1, u1), (l2, u2) = _wilson_scalar(x1, n1, z), _wilson_scalar(x2, n2, z)
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    return max(lo, -1.0), min(d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2), 1.0)


def contingency_table(reference: Counts, current: Counts) -> tuple[list[str], FloatArray]:
    """Return ``(categories, table)``: the sorted union of categories and the 2 × K table
    (row 0: reference, row 1: current) used by the ``*_from_table`` functions.

    Raises:
        ValueError: a count is negative or not finite.
    """
    cats = union_categories(reference, current)
    table = np.array(
        [[float(reference.get(c, 0)) for c in cats], [float(current.get(c, 0)) for c in cats]]
    ).reshape(2, len(cats))
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise ValueError("counts must be finite and non-negative")
    return cats, table


def _chi2_stat(observed: FloatArray, expected: FloatArray) -> FloatArray:
    return np.asarray(((observed - expected) ** 2 / expected).sum(axis=(-2, -1)))


def _monte_carlo_p(
    cols: FloatArray, n_ref: int, expected: FloatArray, observed: float, n_max: int, seed: int
) -> float:
    """Sequential Monte-Carlo p-value (Besag & Clifford 1991, h = 10); see the module doc."""
    rng, h, drawn, hits = np.random.default_rng(seed), 10, 0, 0
    colors = cols.round().astype(np.int64)
    while drawn < n_max:
        size = min(2000, n_max - drawn)
        draws = rng.multivariate_hypergeometric(colors, n_ref, size).astype(float)
        t = _chi2_stat(np.stack([draws, colors - draws], axis=1), expected)
        exceed = np.cumsum(t >= observed * (1 - 1e-9))
        if hits + exceed[-1] >= h:
            return h / (drawn + 1 + int(np.searchsorted(exceed, h - hits)))
        drawn, hits = drawn + size, hits + int(exceed[-1])
    return (1 + hits) / (n_max + 1)


_MIN_ANY_EXPECTED = 1.0  # Cochran's rule: no expected count below 1


def _cochran_ok(table: FloatArray, min_expected: float) -> bool:
    """Cochran's rule on a 2 × K table: every expected count ≥ 1 and at most 20 % of them
    below ``min_expected`` (module docstring)."""
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    expected = np.outer(rows, cols) / rows.sum()
    low = int(np.sum(expected < min_expected))
    return bool(expected.min() >= _MIN_ANY_EXPECTED) and 5 * low <= expected.size


def _pool(
    names: list[str], table: FloatArray, min_expected: float
) -> tuple[tuple[str, ...], FloatArray] | None:
    """Pool sparse columns (module docstring: absent-from-reference ones together, then the
    rarest of the reference's into "other") until Cochran's rule holds; return (merged names,
    new table), ``((), table)`` when the full table already meets the rule, or ``None`` when
    no such pooling meets it. Every column total is > 0 and both rows are non-empty."""
    if _cochran_ok(table, min_expected):
        return (), table
    absent = [i for i in range(len(names)) if table[0, i] == 0]
    present = sorted((i for i in range(len(names)) if table[0, i] > 0),
                     key=lambda i: (table[:, i].sum(), names[i]))  # fmt: skip
    fixed = [table[:, absent].sum(axis=1, keepdims=True)] if absent else []
    merged = [names[i] for i in absent] if len(absent) > 1 else []
    for k in range(len(present) + 1):
        if k == 1:
            continue  # a pool of one category is that category
        pool, rest = present[:k], present[k:]
        parts = [table[:, pool].sum(axis=1, keepdims=True)] if pool else []
        pooled = np.concatenate([*parts, table[:, rest], *fixed], axis=1)
        if pooled.shape[1] < 2:
            break
        if _cochran_ok(pooled, min_expected):  # k = 0 without a merge: the failed full table
            return tuple(sorted(merged + [names[i] for i in pool])), pooled
    return None


def _conditional(
    names: list[str], table: FloatArray, min_expected: float
) -> tuple[tuple[str, ...], FloatArray] | None:
    """Step 3 of the module docstring: the table restricted to the categories the reference
    has (both rows), pooled by :func:`_pool` as needed; ``(merged names, table)`` or ``None``
    when fewer than 2 such categories hold a current count or no pooling meets the rule."""
    present = [i for i in range(len(names)) if table[0, i] > 0]
    sub = table[:, present]
    if len(present) < 2 or sub[1].sum() <= 0:
        return None
    return _pool([names[i] for i in present], sub, min_expected)


def chi2_homogeneity(
    reference: Counts,
    current: Counts,
    *,
    method: Literal["auto", "asymptotic", "monte_carlo"] = "auto",
    min_expected: float = 5.0,
    n_resamples: int = 1999,
    seed: int = 0,
) -> Chi2Result:
    """Chi-square test that two samples of categories come from one distribution.

    A test of homogeneity on the 2 × K table over the union of categories — both samples'
    sizes count, unlike a goodness-of-fit test against fixed shares, so a 200-row gold set
    is not treated as exact. Categories with 0 on both sides are dropped. Statistic
    ``Σ (O − E)² / E`` with ``E = row total × column total / N``, ``dof = K − 1``, no Yates
    correction: equals ``scipy.stats.chi2_contingency(table, correction=False)``.
    ``method="auto"``, when the table breaks Cochran's rule (``min_expected`` is its 5),
    pools sparse categories — never a category the reference lacks into one it has — or, when
    only the reference-absent column is too thin, tests conditionally on the reference's
    categories (``method="conditional"``), or else uses the Monte-Carlo test on the full
    table, whose ``p_floor`` is ``1 / (n_resamples + 1)`` (module docstring). Degenerate
    tables (an empty side, or < 2 non-empty categories) give ``statistic = 0, p_value = 1,
    degenerate = True``.

    Raises:
        ValueError: negative or non-finite counts, ``n_resamples < 1``.
    """
    cats, table = contingency_table(reference, current)
    return chi2_from_table(cats, table, method, min_expected, n_resamples, seed)


def auto_is_asymptotic(table: FloatArray, min_expected: float = 5.0) -> bool:
    """Whether :func:`chi2_from_table` with ``method="auto"`` gives on ``table`` (2 × K)
    what ``method="asymptotic"`` gives: the table without its empty columns meets Cochran's
    rule (no pooling, no conditional or Monte-Carlo test), or it is degenerate (fewer than 2
    columns or an empty row: ``degenerate`` either way)."""
    kept = table[:, table.sum(axis=0) > 0]
    if kept.shape[1] < 2 or kept.sum(axis=1).min() <= 0:
        return True
    return _cochran_ok(kept, min_expected)


def chi2_from_table(
    categories: Sequence[str],
    table: FloatArray,
    method: Literal["auto", "asymptotic", "monte_carlo"] = "auto",
    min_expected: float = 5.0,
    n_resamples: int = 1999,
    seed: int = 0,
) -> Chi2Result:
    """:func:`chi2_homogeneity` on a :func:`contingency_table` (2 × K)."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    new = tuple(c for c, r, q in zip(categories, table[0], table[1], strict=True) if r == 0 < q)
    keep = table.sum(axis=0) > 0
    names, table = [c for c, k in zip(categories, keep, strict=True) if k], table[:, keep]
    rows = table.sum(axis=1)
    if method == "auto" and table.shape[1] > 2 and rows.min() > 0:
        pooling = _pool(names, table, min_expected)
        if pooling is not None and pooling[0]:
            pooled, coarse = pooling
            result = chi2_from_table([f"c{i}" for i in range(coarse.shape[1])], coarse,
                                     "asymptotic", min_expected, n_resamples, seed)  # fmt: skip
            return result._replace(new_categories=new, low_expected=True, pooled=pooled,
                                   method="pooled")  # fmt: skip
        if pooling is None and new:
            conditional = _conditional(names, table, min_expected)
            if conditional is not None:
                pooled, coarse = conditional
                result = chi2_from_table([f"c{i}" for i in range(coarse.shape[1])], coarse,
                                         "asymptotic", min_expected, n_resamples, seed)  # fmt: skip
                return result._replace(new_categories=new, low_expected=True, pooled=pooled,
                                       method="conditional", n_reference=int(round(rows[0])),
                                       n_current=int(round(rows[1])))  # fmt: skip
    n_ref, n_cur = int(round(rows[0])), int(round(rows[1]))
    if table.shape[1] < 2 or rows.min() <= 0:
        return Chi2Result(0.0, 1.0, 0, "degenerate", n_ref, n_cur, new, False, True)
    cols = table.sum(axis=0)
    expected = np.outer(rows, cols) / rows.sum()
    statistic = float(_chi2_stat(table, expected))
    dof = table.shape[1] - 1
    low = bool(expected.min() < min_expected)
    if method == "monte_carlo" or (method == "auto" and not _cochran_ok(table, min_expected)):
        p = _monte_carlo_p(cols, n_ref, expected, statistic, n_resamples, seed)
        return Chi2Result(statistic, p, dof, "monte_carlo", n_ref, n_cur, new, low, False,
                          p_floor=1 / (n_resamples + 1))  # fmt: skip
    from scipy import special  # here, not at start (see _z)

    p = float(special.chdtrc(dof, statistic))  # = scipy.stats.chi2.sf
    return Chi2Result(statistic, p, dof, "asymptotic", n_ref, n_cur, new, low, False)


class ShareChange(NamedTuple):
    """One category's share in both samples and the Newcombe CI of ``current − reference``."""

    category: str
    reference_count: float
    current_count: float
    reference_share: float
    current_share: float
    change: float  # current_share − reference_share, in [−1, 1]
    ci_low: float
    ci_high: float

    @property
    def conservative_change(self) -> float:
        """The CI bound nearest 0 (signed), or 0 when the CI contains 0."""
        if self.ci_low > 0:
            return self.ci_low
        return self.ci_high if self.ci_high < 0 else 0.0


def share_differences(
    reference: Counts, current: Counts, confidence: float = 0.95
) -> list[ShareChange]:
    """Per-category share change with its Newcombe (method 10) confidence interval.

    Over the union of categories; sorted by ``|change|``, largest first, then by name. Each
    interval is marginal (not adjusted for K categories). Empty input gives ``[]``; an empty
    side has shares 0 and CIs from ``n = 0`` (i.e. ±1-wide).
    """
    cats, table = contingency_table(reference, current)
    return share_changes_from_table(cats, table, confidence)


def share_changes_from_table(
    categories: Sequence[str], table: FloatArray, confidence: float = 0.95
) -> list[ShareChange]:
    """:func:`share_differences` on a :func:`contingency_table` (2 × K)."""
    n_ref, n_cur = table.sum(axis=1) if len(categories) else (0.0, 0.0)
    p = table[0] / (n_ref if n_ref > 0 else np.inf)
    q = table[1] / (n_cur if n_cur > 0 else np.inf)
    lo, hi = _newcombe_against(table[1], n_cur, table[0], n_ref, confidence)
    # (``tolist`` gives the floats ``float()`` of each element would, ~4x faster; ``b - a``
    # of two floats is the float64 difference NumPy would give)
    rows = [
        ShareChange(c, r, k, a, b, b - a, x, y)
        for c, r, k, a, b, x, y in zip(
            categories,
            table[0].tolist(),
            table[1].tolist(),
            p.tolist(),
            q.tolist(),
            lo.tolist(),
            hi.tolist(),
            strict=True,
        )  # fmt: skip
    ]
    return sorted(rows, key=lambda s: (-abs(s.change), s.category))


class ProportionTest(NamedTuple):
    """Outcome of :func:`two_proportion_test`."""

    rate_reference: float
    rate_current: float
    difference: float  # rate_current − rate_reference
    ci_low: float  # Newcombe hybrid score interval of the difference
    ci_high: float
    p_value: float
    method: Literal["z", "fisher", "degenerate"]


def two_proportion_test(
    x_current: int,
    n_current: int,
    x_reference: int,
    n_reference: int,
    confidence: float = 0.95,
    min_expected: float = 5.0,
) -> ProportionTest:
    """Two-sided test that two binomial rates are equal (e.g. refusals / questions).

    Pooled z-test, ``z = (p1 − p2) / √(p̄(1 − p̄)(1/n1 + 1/n2))`` (its z² equals the
    uncorrected chi-square of the 2 × 2 table), or Fisher's exact test
    (``scipy.stats.fisher_exact``) when an expected cell is below ``min_expected``. An empty
    side gives ``p_value = 1, method = "degenerate"``.

    Raises:
        ValueError: a count is negative or ``x > n``.
    """
    if min(x_current, x_reference) < 0 or x_current > n_current or x_reference > n_reference:
        raise ValueError("need 0 <= x <= n for both samples")
    lo, hi = _newcombe_scalar(x_current, n_current, x_reference, n_reference, _z(confidence))
    r_cur = x_current / n_current if n_current else 0.0
    r_ref = x_reference / n_reference if n_reference else 0.0
    base = (r_ref, r_cur, r_cur - r_ref, float(lo), float(hi))
    if n_current == 0 or n_reference == 0:
        return ProportionTest(*base, 1.0, "degenerate")
    table = np.array([[x_current, n_current - x_current], [x_reference, n_reference - x_reference]])
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    if expected.min() < min_expected:
        from scipy import stats  # here: importing scipy.stats costs ~0.5 s of start-up

        return ProportionTest(*base, float(stats.fisher_exact(table).pvalue), "fisher")
    pooled = (x_current + x_reference) / (n_current + n_reference)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_current + 1 / n_reference))
    from scipy import special  # here, not at start (see _z)

    p = float(2 * special.ndtr(-abs(r_cur - r_ref) / se))  # = 2 · scipy.stats.norm.sf
    return ProportionTest(*base, p, "z")


class CoverageGap(NamedTuple):
    """A category much more common in live traffic than in the gold set
    (:func:`coverage_gaps`); shares are fractions in [0, 1]."""

    category: str
    live_share: float
    gold_share: float
    ratio: float  # live_share / gold_share; inf when the gold set lacks the category
    difference: float  # live_share − gold_share
    ci_low: float  # the live share's Wilson interval minus the (exact) gold share: L − g
    ci_high: float  # U − g


def coverage_gaps(
    live_counts: Counts,
    gold_counts: Counts,
    *,
    min_ratio: float = 2.0,
    min_difference: float = 0.02,
    confidence: float = 0.95,
) -> list[CoverageGap]:
    """Categories the gold set under-covers, for harvesting gold questions.

    The harvest's rule (:func:`service.coverage.gap_lower_bound`, also behind its
    ``coverage_gap`` reason), with ``p`` a category's live share over all ``live_counts``
    and ``g`` its gold share: a gap when ``p ≥ min_ratio × g`` AND ``L − g ≥ min_difference``
    (and ``> 0``), ``L`` the Wilson lower bound of ``p`` at ``confidence``. The gold share
    is exact (the gold set is the set being completed, not a sample of one): Newcombe's
    (1998, method 10) bound of ``p − g`` with a point ``g`` is ``L − g``, and the interval
    reported is ``(L − g, U − g)``. ``und`` (undetermined language or topic) is never a gap.
    Sorted by the lower bound, largest first, then by name. Empty live counts give ``[]``;
    so does an empty gold set (no share to compare with).

    Raises:
        ValueError: ``min_ratio < 1`` or ``min_difference`` not in [0, 1).
    """
    if min_ratio < 1:
        raise ValueError(f"min_ratio must be >= 1, got {min_ratio}")
    if not 0 <= min_difference < 1:
        raise ValueError(f"min_difference must be in [0, 1), got {min_difference}")
    cats, table = contingency_table(gold_counts, live_counts)
    if not cats:
        return []
    gold_total, live_total = (float(t) for t in table.sum(axis=1))
    z = _z(confidence)
    gaps = []
    for category, gold, live in zip(cats, table[0].tolist(), table[1].tolist(), strict=True):
        bound = gap_lower_bound(live, live_total, gold, gold_total, min_ratio, z, category)
        if bound <= 0 or bound < min_difference:
            continue
        p, g = live / live_total, gold / gold_total
        high = wilson_bounds(live, live_total, z)[1] - g
        ratio = p / g if g > 0 else math.inf
        gaps.append(CoverageGap(category, p, g, ratio, p - g, bound, high))
    return sorted(gaps, key=lambda g: (-g.ci_low, g.category))
