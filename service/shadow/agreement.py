"""Ranking agreement between production and a candidate retriever (pure maths, no I/O).

Inputs are rankings: sequences of passage ids, best first (rank 1 = index 0). A repeated id
keeps its first (best) position and later copies are ignored (:func:`unique`).

Conventions (the same for every function here):

* **Undefined is None, never NaN.** When both rankings are empty there is nothing to agree
  on and every measure is ``None`` (the ``rbo`` package returns 1 there; we do not, so empty
  pairs cannot inflate a mean). When exactly one is empty, set measures are 0.
* ``k`` is a cut-off ≥ 1; each ranking is cut to its top ``k`` before a set measure.
  ``RBO_ext`` takes no cut-off: it is defined for rankings of different lengths and is
  measured on the two rankings whole.

What :func:`compare` (the shadow runner's call) measures, for production's ranking ``A`` as
logged (depth ``a``) and the candidate's ``B`` as returned (at most its ``k`` passages):

* ``RBO_ext`` on ``A`` and ``B`` whole — with ``a ≠ len(B)`` by eq. 32 below, so a
  candidate asked for more passages than production logged is credited for production's
  passages it ranks below depth ``a`` (and a shorter candidate is not cut from production's
  deeper ranks);
* overlap, Jaccard, Kendall's τ, top-1 and citation recall at the common depth
  ``d = min(k, a)`` (the runner's ``depth``): the two top-``d`` lists, equal passage budgets.

Measures, with ``A_k``/``B_k`` the top-``k`` sets:

* ``overlap@k = |A_k ∩ B_k| / k`` (Fagin, Kumar & Sivakumar 2003, "Comparing top k lists";
  the "agreement at depth k" ``A_k`` of Webber et al. 2010, eq. 2). A list shorter than
  ``k`` caps it at ``len / k``.
* ``jaccard@k = |A_k ∩ B_k| / |A_k ∪ B_k|``.
* ``RBO_ext`` (Webber, Moffat & Zobel 2010, "A similarity measure for indefinite rankings",
  ACM TOIS 28(4), eq. 32) for a short list ``S`` (length ``s``) and a long list ``L``
  (length ``l ≥ s``), with ``X_d = |S_{:d} ∩ L_{:d}|`` (for ``d > s``, ``S_{:d} = S``)::

      RBO_ext = (1-p)/p · [ Σ_{d=1..l} X_d/d · p^d + Σ_{d=s+1..l} X_s·(d-s)/(s·d) · p^d ]
                + [ (X_l - X_s)/l + X_s/s ] · p^l

  It extrapolates the agreement seen up to depth ``l`` to infinite depth, assuming the short
  list would keep agreeing at rate ``X_s/s`` (section 4.2). With ``s = l`` it is eq. 30.
  Example: production ``S`` of 5 passages, a candidate ``L`` of 10 ranking 3 of them 6th to
  8th and nothing else in common: ``X_d`` = 0 (d ≤ 5), 1, 2, 3, 3, 3 (d = 6..10), ``X_s = 0``,
  so at ``p = 0.9`` RBO_ext = 1/9 · (p⁶/6 + 2p⁷/7 + 3p⁸/8 + 3p⁹/9 + 3p¹⁰/10) + 3/10 · p¹⁰
  ≈ 0.0689 + 0.1046 ≈ 0.174 (cut both to 5, it would read 0).
  ``p`` in (0, 1) sets top-weightness: the first ``d`` ranks carry a share
  ``1 - p^{d-1} + (1-p)/p · d · (ln(1/(1-p)) - Σ_{i<d} p^i/i)`` of the weight (eq. 21); at
  ``p = 0.9`` the top 10 carry about 86 %. Identical lists give 1, disjoint lists 0.
* Kendall's ``τ`` on the shared items of ``A_k`` and ``B_k``: with ``n ≥ 2`` shared items,
  ``C`` concordant and ``D`` discordant pairs of their ranks, ``τ = (C - D) / (n(n-1)/2)``.
  Ranks are distinct, so this τ-a equals scipy's τ-b (``scipy.stats.kendalltau``; tested).
  It is computed directly because scipy's call costs ~300 µs (p-value included), more than a
  BM25 query. ``None`` below 2 shared items.
* ``top1`` = whether both rankings put the same passage first.
* Citation recall = ``|C ∩ B_k| / |C|`` for the passages ``C`` cited in production's answer;
  ``None`` when nothing was cited.

>>> a, b = ["p1", "p2", "p3"], ["p2", "p1", "p3"]
>>> overlap_at_k(a, b, 2), jaccard_at_k(a, b, 2), round(kendall_tau_shared(a, b, 3), 4)
(1.0, 1.0, 0.3333)
>>> round(rbo_ext(a, a), 12), rbo_ext(a, ["x", "y"])
(1.0, 0.0)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = [
    "Agreement",
    "citation_recall",
    "compare",
    "jaccard_at_k",
    "kendall_tau_shared",
    "overlap_at_k",
    "rbo_ext",
    "top1_agreement",
    "unique",
]

DEFAULT_P = 0.9


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def unique(ranking: Sequence[str]) -> list[str]:
    """Return ``ranking`` with repeated ids dropped (first occurrence kept), order unchanged.

    >>> unique(["a", "b", "a", "c"])
    ['a', 'b', 'c']
    """
    return list(dict.fromkeys(ranking))


def overlap_at_k(a: Sequence[str], b: Sequence[str], k: int) -> float | None:
    """Return ``|A_k ∩ B_k| / k`` in [0, 1]; ``None`` when both rankings are empty.

    Raises:
        ValueError: ``k < 1``.
    """
    _check_k(k)
    if not a and not b:
        return None
    return len(set(unique(a)[:k]) & set(unique(b)[:k])) / k


def jaccard_at_k(a: Sequence[str], b: Sequence[str], k: int) -> float | None:
    """Return ``|A_k ∩ B_k| / |A_k ∪ B_k|`` in [0, 1]; ``None`` when both are empty.

    Raises:
        ValueError: ``k < 1``.
    """
    _check_k(k)
    top_a, top_b = set(unique(a)[:k]), set(unique(b)[:k])
    union = top_a | top_b
    return len(top_a & top_b) / len(union) if union else None


def rbo_ext(a: Sequence[str], b: Sequence[str], p: float = DEFAULT_P) -> float | None:
    """Return the extrapolated rank-biased overlap ``RBO_ext`` (eq. 32, module docstring).

    Args:
        a, b: rankings, best first, of any lengths (the whole lists are used: cut them to
            the depth you compare at).
        p: persistence in (0, 1); default 0.9.

    Returns:
        A value in [0, 1] (clamped against float rounding); 0 when exactly one ranking is
        empty; ``None`` when both are.

    Raises:
        ValueError: ``p`` not in (0, 1).

    >>> round(rbo_ext(["a", "b", "c"], ["a", "b", "c", "d", "e"]), 12)  # prefix: agrees
    1.0
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    a, b = unique(a), unique(b)
    if not a and not b:
        return None
    if not a or not b:
        return 0.0
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, n = len(short), len(long_)
    seen_s: set[str] = set()
    seen_l: set[str] = set()
    x = x_s = 0
    total, weight = 0.0, 1.0
    for d in range(1, n + 1):
        weight *= p  # p^d
        item_l = long_[d - 1]
        if d <= s:
            item_s = short[d - 1]
            if item_s == item_l:
                x += 1
            else:
                x += (item_s in seen_l) + (item_l in seen_s)
            seen_s.add(item_s)
            seen_l.add(item_l)
            if d == s:
                x_s = x
        else:
            x += item_l in seen_s
            total += x_s * (d - s) / (s * d) * weight
        total += x / d * weight
    value = (1.0 - p) / p * total + ((x - x_s) / n + x_s / s) * weight
    return min(1.0, max(0.0, value))


def kendall_tau_shared(a: Sequence[str], b: Sequence[str], k: int) -> float | None:
    """Return Kendall's τ of the ranks of the items shared by ``A_k`` and ``B_k``.

    Returns:
        τ in [-1, 1], or ``None`` with fewer than 2 shared items.

    Raises:
        ValueError: ``k < 1``.
    """
    _check_k(k)
    rank_b = {item: rank for rank, item in enumerate(unique(b)[:k])}
    return _tau([rank_b[item] for item in unique(a)[:k] if item in rank_b])


def _tau(ranks: Sequence[int]) -> float | None:
    """Kendall's τ of ``ranks`` (b's ranks of the shared items, listed in a's order)."""
    n = len(ranks)
    if n < 2:
        return None
    score = 0
    for i in range(n - 1):
        first = ranks[i]
        for later in ranks[i + 1 :]:
            score += 1 if later > first else -1
    return score / (n * (n - 1) / 2)


def top1_agreement(a: Sequence[str], b: Sequence[str]) -> bool | None:
    """Return whether both rankings start with the same id; ``None`` when both are empty."""
    if not a and not b:
        return None
    return bool(a) and bool(b) and a[0] == b[0]


def citation_recall(cited: Collection[str], candidate: Sequence[str], k: int) -> float | None:
    """Return the share of ``cited`` passages found in the candidate's top ``k``.

    Returns:
        A value in [0, 1]; ``None`` when nothing was cited.

    Raises:
        ValueError: ``k < 1``.

    >>> citation_recall(["p1", "p9"], ["p1", "p2"], 10), citation_recall([], ["p1"], 10)
    (0.5, None)
    """
    _check_k(k)
    wanted = set(cited)
    if not wanted:
        return None
    return len(wanted & set(unique(candidate)[:k])) / len(wanted)


@dataclass(frozen=True, slots=True)
class Agreement:
    """Every measure for one (production, candidate) pair (:func:`compare`).

    Attributes:
        depth: the common cut-off ``k`` of the set measures (the runner's
            ``min(candidate k, production depth)``).
        shared: ``|A_k ∩ B_k|``.
        overlap, jaccard, kendall_tau, top1, citation_recall: as in the module docstring, on
            the two top-``depth`` lists; ``None`` = undefined.
        rbo: ``RBO_ext`` of the two rankings whole (production's as logged, the candidate's
            as returned; eq. 32 when their lengths differ), not cut to ``depth``.
    """

    depth: int
    shared: int
    overlap: float | None
    jaccard: float | None
    rbo: float | None
    kendall_tau: float | None
    top1: bool | None
    citation_recall: float | None

    def as_dict(self) -> dict[str, float | int | bool | None]:
        """Return the measures as a JSON-able dict."""
        return {name: getattr(self, name) for name in self.__slots__}


def compare(
    production: Sequence[str],
    candidate: Sequence[str],
    k: int,
    *,
    p: float = DEFAULT_P,
    cited: Collection[str] = (),
) -> Agreement:
    """Compare a candidate's ranking with production's (module docstring, "What compare
    measures").

    Args:
        production: production's ranking as logged, best first (duplicates dropped).
        candidate: the candidate's ranking as returned, best first (cut it to the
            candidate's ``k``; duplicates dropped).
        k: the common depth ≥ 1 of overlap, Jaccard, τ, top-1 and citation recall
            (the runner passes ``min(candidate k, len(production))``).
        p: RBO persistence in (0, 1).
        cited: passages production's answer cited (citation recall; empty: ``None``).

    Returns:
        The :class:`Agreement`; its ``rbo`` is ``RBO_ext`` of the whole rankings, whatever
        ``k`` (with equal lengths ``k``, the same as on the top-``k`` lists).

    Raises:
        ValueError: ``k < 1`` or ``p`` not in (0, 1).

    >>> compare(["a", "b", "c"], ["a", "c", "x"], 3, cited=["c"]).as_dict()["citation_recall"]
    1.0
    """
    _check_k(k)
    whole_a, whole_b = unique(production), unique(candidate)
    top_a, top_b = whole_a[:k], whole_b[:k]
    set_a, set_b = set(top_a), set(top_b)
    shared = len(set_a & set_b)
    union = len(set_a | set_b)
    wanted = set(cited)
    rank_b = {item: rank for rank, item in enumerate(top_b)}
    return Agreement(
        depth=k,
        shared=shared,
        overlap=shared / k if union else None,
        jaccard=shared / union if union else None,
        rbo=rbo_ext(whole_a, whole_b, p),
        kendall_tau=_tau([rank_b[item] for item in top_a if item in rank_b]),
        top1=top1_agreement(top_a, top_b),
        citation_recall=len(wanted & set_b) / len(wanted) if wanted else None,
    )
