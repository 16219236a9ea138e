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
    # Uneven lists as the shadow runner now compares them (production's 5 vs a candidate's
    # 10): the trial's case (test_trial_case_...), a prefix match, a shorter candidate.
    ("abcde", "uvwxycbazq", 0.9, 0.17353671602142862),
    ("abcde", "abxyzcdefg", 0.9, 0.7164267160214286),
    ("abcdefghij", "bacde", 0.9, 0.9000000000000001),
    ("ab", "acbd", 0.5, 0.8229166666666667),
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


def test_uneven_lengths_by_hand_exercise_every_term_of_eq_32() -> None:
    # S = [a, b] (s = 2), L = [a, c, b, d] (l = 4), p = 0.5, so (1-p)/p = 1.
    # X_1 = |{a} ∩ {a}| = 1, X_2 = |{a,b} ∩ {a,c}| = 1, and for d > s the whole of S:
    # X_3 = |{a,b} ∩ {a,c,b}| = 2, X_4 = 2; X_s = X_2 = 1, X_l = X_4 = 2.
    # Σ_{d=1..4} X_d/d · p^d      = 1/2 + 1/8 + (2/3)/8 + (2/4)/16 = 1/2 + 1/8 + 1/12 + 1/32
    # Σ_{d=3..4} X_s(d-s)/(s d) p^d = (1/6)/8 + (2/8)/16          = 1/48 + 1/64
    # ((X_l - X_s)/l + X_s/s) · p^4 = (1/4 + 1/2)/16               = 3/64
    # In 192ths: (96 + 24 + 16 + 6) + (4 + 3) + 9 = 158, so RBO_ext = 158/192 = 79/96.
    assert rbo_ext(list("ab"), list("acbd"), 0.5) == pytest.approx(79 / 96, abs=1e-15)
    assert rbo_ext(list("acbd"), list("ab"), 0.5) == pytest.approx(79 / 96, abs=1e-15)


def test_trial_case_productions_5_at_a_candidates_ranks_6_to_8() -> None:
    """New-user trial, event e-000306: production logged 5 passages; a candidate asked for
    10 ranked 3 of them 6th, 7th and 8th (the other 2 nowhere) and 7 others above and around.
    Cut to production's depth 5, both lists were disjoint and RBO read 0.0."""
    production = ["sq-0065", "sq-0027", "sq-0040", "sq-0011", "xq-Normans#4"]
    candidate = ["c1", "c2", "c3", "c4", "c5", "xq-Normans#4", "sq-0027", "sq-0065", "c9", "c10"]
    # S = production (s = 5), L = candidate (l = 10), p = 0.9: X_1..X_5 = 0 = X_s,
    # X_6 = 1, X_7 = 2, X_8 = X_9 = X_10 = 3 = X_l. With X_s = 0 the extrapolation sum is 0:
    # RBO_ext = (1/9)·(p⁶/6 + 2p⁷/7 + 3p⁸/8 + 3p⁹/9 + 3p¹⁰/10) + (3/10)·p¹⁰
    #         = (1/9)·(0.0885735 + 0.1366563 + 0.1614252 + 0.1291402 + 0.1046035)
    #           + 0.1046035
    #         = (1/9)·0.6203987 + 0.1046035 = 0.0689332 + 0.1046035 = 0.1735367
    expected = 0.1735367
    assert rbo_ext(production, candidate, 0.9) == pytest.approx(expected, abs=1e-7)
    result = compare(production, candidate, 5, p=0.9, cited=["sq-0065"])
    assert result.rbo == pytest.approx(expected, abs=1e-7)  # was 0.0 (both cut to 5)
    # The set measures stay at the common depth 5, where the two lists share nothing.
    assert result.depth == 5 and result.shared == 0
    assert result.overlap == 0.0 and result.jaccard == 0.0 and result.citation_recall == 0.0
    assert result.kendall_tau is None and result.top1 is False
    # A candidate asked for 5 returns the disjoint top 5: RBO 0, so k now matters.
    assert compare(production, candidate[:5], 5, p=0.9).rbo == 0.0


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


def test_a_longer_candidate_never_lowers_rbo_below_the_cut_lists() -> None:
    # S of length s, L of length l > s. Cut to s, RBO_ext credits every depth d > s with
    # A_d = X_s/s; whole, eq. 32 credits s < d ≤ l with X_d/d + X_s(d-s)/(s·d) ≥ X_s/s
    # (X_d ≥ X_s) and beyond l with ((X_l - X_s)/l + X_s/s) ≥ X_s/s: never less (the
    # demo replay: 2,914 results, none lower, 942 equal).
    rng = random.Random(5)
    pool = [f"p{i}" for i in range(20)]
    for _ in range(500):
        s = rng.randint(1, 8)
        short, long_ = rng.sample(pool, s), rng.sample(pool, rng.randint(s, 15))
        p = rng.choice([0.5, 0.9, 0.98])
        assert rbo_ext(short, long_, p) >= rbo_ext(short, long_[:s], p) - 1e-12


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


def test_compare_set_measures_at_depth_k_rbo_on_the_whole_lists() -> None:
    result = compare(list("abcdef"), list("bacxyz"), 3, cited=["c", "q"])
    assert result.depth == 3 and result.shared == 3
    assert result.overlap == 1.0 and result.jaccard == 1.0
    assert result.kendall_tau == pytest.approx(1 / 3)
    assert result.top1 is False and result.citation_recall == 0.5
    # RBO on all 6 ranks, not the top 3 (that would be 0.9: one swap at the top). X_1 = 0,
    # X_2 = 2, X_3..X_6 = 3; s = l = 6, p = 0.9:
    # (1/9)·(p² + p³ + (3/4)p⁴ + (3/5)p⁵ + (1/2)p⁶) + (1/2)p⁶
    # = (1/9)·(0.81 + 0.729 + 0.492075 + 0.354294 + 0.2657205) + 0.2657205
    # = (1/9)·2.6510895 + 0.2657205 = 0.2945655 + 0.2657205 = 0.5602860
    assert result.rbo == pytest.approx(0.5602860, abs=1e-7)


def test_compare_of_equal_length_lists_is_unchanged() -> None:
    # With both lists of length k (the runner's case when the candidate's k equals
    # production's depth) the whole lists are the top-k lists: the value before the change.
    rng = random.Random(11)
    pool = [f"p{i}" for i in range(15)]
    for _ in range(200):
        k = rng.randint(1, 10)
        a, b = rng.sample(pool, k), rng.sample(pool, k)
        assert compare(a, b, k).rbo == rbo_ext(a[:k], b[:k])


@pytest.mark.parametrize("k", [0, -1])
def test_bad_k_and_p_raise(k: int) -> None:
    with pytest.raises(ValueError):
        overlap_at_k(["a"], ["a"], k)
    with pytest.raises(ValueError):
        compare(["a"], ["a"], k)
    for p in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError):
            rbo_ext(["a"], ["a"], p)
