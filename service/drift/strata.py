"""Direct standardisation of a categorical comparison by a second dimension's mix.

The topic comparison's reference (the gold set's topic counts, or the baseline window's) is
replaced by the distribution the reference would have had under the *current* window's
language mix (direct standardisation; Kitagawa 1964, Fleiss, Levin & Paik 2003 §19.3)::

    expected(t) = Σ_l w_l · P̃_ref(t | l),     w_l = n_cur(l) / n_cur

``P̃_ref(t | l)`` is the reference's topic distribution within language ``l``, shrunk toward
the reference's pooled distribution ``P_ref(t)`` by :data:`SHRINK_ROWS` pseudo-rows::

    P̃_ref(t | l) = (c_ref(t, l) + k · P_ref(t)) / (n_ref(l) + k),   k = SHRINK_ROWS

so a language with few reference rows leans on the pooled distribution (a language with
``k`` rows is half its own, half pooled) and a language the reference lacks (``n_ref(l) =
0``) uses the pooled distribution. The reference row of the test is ``expected`` scaled to
the *effective* size of this weighted estimate (Kish 1965): it is a weighted mean of the
reference rows, row ``i`` of language ``j`` weighted ``β_j / n_ref(j)`` with

    β_j = Σ_l w_l · ((1 − a_l) · n_ref(j) / N + [j = l] · a_l),   a_l = n_ref(l) / (n_ref(l) + k)

(``N`` the reference's rows; ``Σ_j β_j = 1``), so ``n_eff = 1 / Σ_j β_j² / n_ref(j)``: a
reference re-weighted far from its own mix counts as fewer rows, and the test's p-value and
confidence intervals widen accordingly. Rounded to whole rows (largest remainders), so the
test runs on counts as before. The test statistic, level, effect size and hysteresis are
the comparison's own; only the reference row changes.

When the reference has rows in one language only, ``P̃_ref(t | l) = P_ref(t)`` for every
``l``: the reference is returned unchanged (``None``), the comparison is exactly the
unadjusted one. A *pooled* stratum (``und``, the questions whose language was not told) is
no language of its own: its reference rows count only in ``P_ref``, its current events use
``P_ref`` (``a = 0``), and it does not count toward the two languages an adjustment needs
(an English-only gold set with ``und`` traffic is compared as it is). So does a language of
the current window the reference lacks (``hi-Latn`` against a gold set without it).

Joint counts are kept in one window as ``"topic" + SEP + "language"`` keys
(:func:`joint_key`), so the windows' own machinery (lateness, held events, the frozen
baseline, snapshots) keeps them; :func:`split_joint` reads them back.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

#: Pseudo-rows of the pooled distribution each language's reference distribution is shrunk
#: with (the module docstring's ``k``): ``analytics.quality_min_class``'s default, the rows a
#: language needs before its own topic agreement is measured (docs/topics.md).
SHRINK_ROWS = 10.0
#: Separates the topic from the language in a joint window key (a control character no
#: topic name or language code holds).
SEP = "\x1f"


def joint_key(category: str, stratum: str) -> str:
    """The window key of ``category`` in ``stratum`` (``"sports\\x1fen"``)."""
    return f"{category}{SEP}{stratum}"


def split_joint(counts: Mapping[str, int]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """``(marginal, by_stratum)`` of joint window counts: ``{category: n}`` summed over the
    strata, and ``{stratum: {category: n}}``. A key without :data:`SEP` (a window kept before
    joint keys) is in stratum ``""``. Categories in first-seen order."""
    marginal: dict[str, int] = {}
    strata: dict[str, dict[str, int]] = {}
    for key, n in counts.items():
        category, _, stratum = key.partition(SEP)
        marginal[category] = marginal.get(category, 0) + n
        cell = strata.setdefault(stratum, {})
        cell[category] = cell.get(category, 0) + n
    return marginal, strata


def standardised_reference(
    reference: Mapping[str, Mapping[str, int]],
    current: Mapping[str, int],
    shrink: float = SHRINK_ROWS,
    pooled: Collection[str] = (),
) -> dict[str, int] | None:
    """The reference counts under the current window's mix (the module docstring).

    Args:
        reference: ``{stratum: {category: rows}}`` of the reference (counts ≥ 0).
        current: ``{stratum: events}`` of the current window (its language mix).
        shrink: pseudo-rows of the pooled distribution per stratum (``k``, ≥ 0).
        pooled: strata kept out of the split (``"und"``: a language the detector could not
            tell is no language of its own): their reference rows count in the pooled
            distribution only, their current events use it (``a_l = 0``), and they do not
            count toward the two strata an adjustment needs.

    Returns:
        ``{category: rows}`` summing to the effective size ``n_eff`` (rounded, at least 1;
        each category the reference has at least 1 row, :func:`_whole`),
        or ``None`` when no adjustment applies: the reference has rows in fewer than two
        strata besides ``pooled``, or the current window has no events (the unadjusted
        reference stands).

    Raises:
        ValueError: ``shrink`` is negative or not finite.

    >>> ref = {"en": {"a": 8, "b": 2}, "hi": {"a": 2, "b": 8}}
    >>> standardised_reference(ref, {"en": 1, "hi": 3}, shrink=0.0)  # 16 × (0.35, 0.65)
    {'a': 6, 'b': 10}
    """
    if not (shrink >= 0 and math.isfinite(shrink)):
        raise ValueError(f"shrink must be finite and >= 0, got {shrink}")
    sizes = {s: sum(cells.values()) for s, cells in reference.items()}
    sizes = {s: n for s, n in sizes.items() if n > 0}
    n_cur = sum(current.values())
    if len(sizes.keys() - set(pooled)) < 2 or n_cur <= 0:
        return None
    total = sum(sizes.values())
    # β_j: the weight of reference stratum j's distribution in the expected one
    beta = dict.fromkeys(sizes, 0.0)
    for stratum, n in current.items():
        if n <= 0:
            continue
        w = n / n_cur
        own = 0 if stratum in pooled else sizes.get(stratum, 0)
        a = own / (own + shrink) if own else 0.0
        for j, n_j in sizes.items():
            beta[j] += w * (1.0 - a) * n_j / total
        if own:
            beta[stratum] += w * a
    expected: dict[str, float] = {}
    for j, n_j in sizes.items():
        for category, c in reference[j].items():
            if c > 0:
                expected[category] = expected.get(category, 0.0) + beta[j] * c / n_j
    n_eff = 1.0 / sum(b * b / sizes[j] for j, b in beta.items() if b > 0)
    return _whole(expected, max(1, round(n_eff)))


def _whole(shares: Mapping[str, float], size: int) -> dict[str, int]:
    """``shares`` (summing to 1) as whole counts summing to ``size`` (largest remainders,
    ties in the order given), a category of a positive share at least 1 (a topic the
    reference has, expected below half a row, is not reported as new; the total then
    exceeds ``size`` by those rows)."""
    raw = {c: s * size for c, s in shares.items()}
    counts = {c: math.floor(v) for c, v in raw.items()}
    short = size - sum(counts.values())
    order = sorted(raw, key=lambda c: counts[c] - raw[c])  # largest remainder first
    for c in order[:short]:
        counts[c] += 1
    return {c: max(n, 1) for c, n in counts.items() if raw[c] > 0}
