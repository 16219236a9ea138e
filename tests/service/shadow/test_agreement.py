"""Agreement measures on hand-worked examples, a brute-force RBO and the ``rbo`` package."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import kendalltau

from service.shadow.agreement import (
    citation_recall,
    compare,
    jaccard_at_k,
    kendall_tau_shared,
    overlap_at_k,
    rbo_ext,
    top1_agreement,
)

LETTERS = "abcdefghijklmnop"


def brute_rbo_ext(a: list[str], b: list[str], p: float) -> float:
    """Eq. 32 of Webber et al. (2010), each X_d recomputed from sets (no incremental state)."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, n = len(short), len(long_)

    def x(d: int) -> int:
        return len(set(short[:d]) & set(long_[:d]))

    seen = sum(x(d) / d * p**d for d in range(1, n + 1))
    tail = sum(x(s) * (d - s) / (s * d) * p**d for d in range(s + 1, n + 1))
    return (1 - p) / p * (seen + tail) + ((x(n) - x(s)) / n + x(s) / s) * p**n


# (S, T, p, RBO_ext) computed with the `rbo` package 0.1.3 (github.com/changyaochen/rbo,
# RankingSimilarity(S, T).rbo_ext(p)), which implements the same eq. 32.
RBO_PACKAGE_VALUES = [
    ("abcdefghij", "cbaxyz", 0.9, 0.515286),
    ("abcdefghij", "jihgfedcba", 0.9, 0.5116075656428573),
    ("abcdefg", "xaybzc", 0.98, 0.4849539303466667),
    ("abcdefghijklmnop", "badcfehgjilknmpo", 0.5, 0.4506944342820807),
    ("a", "ba", 0.9, 0.45),
]


def test_identical_lists_agree_fully() -> None:
    ranking = list("abcdefg")
    assert rbo_ext(ranking, ranking) == pytest.approx(1.0)
    assert overlap_at_k(ranking, ranking, 7) == 1.0
    assert jaccard_at_k(ranking, ranking, 5) == 1.0
    assert kendall_tau_shared(ranking, ranking, 7) == pytest.approx(1.0)
    assert top1_agreement(ranking, ranking) is True


def test_disjoint_lists_agree_nowhere() -> None:
    a, b = list("abcde"), list("vwxyz")
    assert rbo_ext(a, b) == 0.0
    assert overlap_at_k(a, b, 5) == 0.0
    assert jaccard_at_k(a, b, 5) == 0.0
    assert kendall_tau_shared(a, b, 5) is None  # no shared items: undefined, not NaN
    assert top1_agreement(a, b) is False


def test_one_swap_at_the_top() -> None:
    # X_1 = 0, X_d = d for d >= 2: (1-p)/p · Σ_{d=2..7} p^d + p^7 = p - p^7 + p^7 = p.
    a, b = list("abcdefg"), list("bacdefg")
    assert rbo_ext(a, b, 0.9) == pytest.approx(0.9)
    assert rbo_ext(a, b, 0.5) == pytest.approx(0.5)
    # 21 pairs, one discordant: (20 - 1) / 21.
    assert kendall_tau_shared(a, b, 7) == pytest.approx(19 / 21)
    assert overlap_at_k(a, b, 1) == 0.0 and overlap_at_k(a, b, 2) == 1.0


def test_different_lengths() -> None:
    # A prefix of the long list agrees fully under extrapolation (section 4.2).
    assert rbo_ext(list("abc"), list("abcdefgh")) == pytest.approx(1.0)
    # Hand-worked: S = [a], L = [b, a], p = 0.9. X_1 = 0, X_2 = 1, X_s = 0 →
    # (1-p)/p · (0 + 1/2 · p²) + ((1 - 0)/2 + 0) · p² = 0.1·0.45 + 0.405 = 0.45.
    assert rbo_ext(["a"], ["b", "a"], 0.9) == pytest.approx(0.45)
    assert rbo_ext(["b", "a"], ["a"], 0.9) == pytest.approx(0.45)  # symmetric
    assert overlap_at_k(list("ab"), list("abcd"), 4) == 0.5  # the short list caps it


@pytest.mark.parametrize(("s", "t", "p", "expected"), RBO_PACKAGE_VALUES)
def test_rbo_matches_the_rbo_package(s: str, t: str, p: float, expected: float) -> None:
    assert rbo_ext(list(s), list(t), p) == pytest.approx(expected, abs=1e-12)


def test_rbo_matches_brute_force_on_random_rankings() -> None:
    rng = random.Random(7)
    pool = [f"p{i}" for i in range(25)]
    for _ in range(500):
        a = rng.sample(pool, rng.randint(1, 15))
        b = rng.sample(pool, rng.randint(1, 15))
        p = rng.choice([0.5, 0.8, 0.9, 0.98])
        value = rbo_ext(a, b, p)
        assert value == pytest.approx(brute_rbo_ext(a, b, p), abs=1e-12)
        assert value == pytest.approx(rbo_ext(b, a, p), abs=1e-12)
        assert 0.0 <= value <= 1.0


def test_kendall_tau_matches_scipy() -> None:
    rng = random.Random(3)
    pool = list(LETTERS)
    for _ in range(300):
        a, b = rng.sample(pool, 10), rng.sample(pool, 10)
        ours = kendall_tau_shared(a, b, 10)
        shared = [x for x in a if x in b]
        if len(shared) < 2:
            assert ours is None
            continue
        reference = kendalltau([a.index(x) for x in shared], [b.index(x) for x in shared])
        assert ours == pytest.approx(reference.statistic, abs=1e-12)


def test_empty_rankings_are_undefined_not_nan() -> None:
    assert rbo_ext([], []) is None
    assert overlap_at_k([], [], 10) is None and jaccard_at_k([], [], 10) is None
    assert top1_agreement([], []) is None
    assert rbo_ext(["a"], []) == 0.0 and overlap_at_k([], ["a"], 3) == 0.0
    assert top1_agreement(["a"], []) is False
    values = compare([], [], 10).as_dict().values()
    assert not any(isinstance(v, float) and math.isnan(v) for v in values)


def test_duplicates_keep_their_best_rank() -> None:
    assert overlap_at_k(["a", "a", "b"], ["a", "b"], 2) == 1.0
    assert rbo_ext(["a", "a", "b"], ["a", "b"]) == pytest.approx(1.0)


def test_citation_recall() -> None:
    assert citation_recall(["p1", "p2"], ["p2", "p3", "p1"], 2) == 0.5
    assert citation_recall(["p1", "p1"], ["p1"], 10) == 1.0
    assert citation_recall([], ["p1"], 10) is None
    assert citation_recall(["p1"], [], 10) == 0.0


def test_compare_bundles_every_measure_at_depth_k() -> None:
    result = compare(list("abcdef"), list("bacxyz"), 3, cited=["c", "q"])
    assert result.depth == 3 and result.shared == 3
    assert result.overlap == 1.0 and result.jaccard == 1.0
    assert result.kendall_tau == pytest.approx(1 / 3)
    assert result.top1 is False and result.citation_recall == 0.5
    assert result.rbo == pytest.approx(rbo_ext(list("abc"), list("bac")))


@pytest.mark.parametrize("k", [0, -1])
def test_bad_k_and_p_raise(k: int) -> None:
    with pytest.raises(ValueError):
        overlap_at_k(["a"], ["a"], k)
    with pytest.raises(ValueError):
        compare(["a"], ["a"], k)
    for p in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError):
            rbo_ext(["a"], ["a"], p)
