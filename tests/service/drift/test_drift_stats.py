"""Chi-square homogeneity, Wilson/Newcombe CIs, two proportions, coverage gaps."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from service.drift.stats_tests import (
    chi2_homogeneity,
    coverage_gaps,
    newcombe_interval,
    share_differences,
    two_proportion_test,
    wilson_interval,
)

positive_rows = st.integers(2, 8).flatmap(
    lambda k: st.tuples(
        st.lists(st.integers(1, 5000), min_size=k, max_size=k),
        st.lists(st.integers(1, 5000), min_size=k, max_size=k),
    )
)


@settings(max_examples=200, deadline=None)
@given(positive_rows)
def test_chi2_equals_scipy_on_tables_without_zero_columns(rows: tuple) -> None:
    ref, cur = rows
    names = [f"c{i}" for i in range(len(ref))]
    result = chi2_homogeneity(
        dict(zip(names, ref, strict=True)), dict(zip(names, cur, strict=True)), method="asymptotic"
    )
    expected = stats.chi2_contingency(np.array([ref, cur]), correction=False)
    assert result.statistic == pytest.approx(expected.statistic, rel=1e-9, abs=1e-9)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-6, abs=1e-12)
    assert result.dof == expected.dof
    assert not result.degenerate


def test_auto_pools_rare_categories_when_expected_counts_are_small() -> None:
    ref = {"en": 30, "hi": 8, "fr": 2, "de": 1}
    cur = {"en": 300, "hi": 150, "fr": 40, "zh": 30}
    auto = chi2_homogeneity(ref, cur)
    assert auto.method == "pooled" and auto.low_expected
    # expected gold counts (41 rows of 561): en 24.1, hi 11.5, fr 3.07, de 0.07, zh 2.19 —
    # de < 1 breaks Cochran's rule; de+fr pooled still leaves 2 of 8 cells below 5 (25 %);
    # de+fr+hi pooled leaves only zh's gold cell (2.19) below 5: 1 of 6 cells, none < 1.
    # zh, absent from the reference, keeps its own column (never pooled into de/fr).
    assert auto.pooled == ("de", "fr", "hi") and auto.new_categories == ("zh",)
    table = np.array([[30, 11, 0], [300, 190, 30]])  # en, de+fr+hi, zh
    expected = stats.chi2_contingency(table, correction=False)
    assert auto.statistic == pytest.approx(expected.statistic)
    assert auto.p_value == pytest.approx(expected.pvalue)
    cells = stats.contingency.expected_freq(table)
    assert cells.min() >= 1 and (cells < 5).sum() == 1


def test_a_language_the_gold_set_lacks_is_not_pooled_into_one_it_has() -> None:
    # trial user5 (s14 finding 2): gold en 45, es 10; the 24 h window en 809, es 68,
    # hi-Latn 123. Expected gold counts 44.5, 4.07, 6.41: one cell of 6 below 5, none
    # below 1, so Cochran's rule holds and the full 2 x 3 table is tested (chi2 15.905,
    # 2 dof: p = exp(-15.905 / 2) = 3.518e-4). Pooling hi-Latn into es gave
    # [[45, 10], [809, 191]]: p = 0.866, and a missing language could never alarm.
    result = chi2_homogeneity({"en": 45, "es": 10}, {"en": 809, "es": 68, "hi-Latn": 123})
    assert result.method == "asymptotic" and result.pooled == ()
    assert result.new_categories == ("hi-Latn",)
    assert result.statistic == pytest.approx(15.905068, rel=1e-6)
    assert result.p_value == pytest.approx(math.exp(-15.905068 / 2), rel=1e-5)
    assert result.p_value == pytest.approx(3.5177e-4, rel=1e-4)


def test_categories_the_reference_lacks_are_pooled_only_with_each_other() -> None:
    ref = {"en": 45, "es": 10, "fr": 2}
    cur = {"en": 809, "es": 68, "fr": 5, "hi-Latn": 100, "ta": 20}
    # expected gold counts (57 of 1059 rows): en 46.0, es 4.20, fr 0.38, hi-Latn 5.38,
    # ta 1.08: fr < 1. hi-Latn + ta become "not in the gold set" (120; expected 6.46), then
    # the rarest gold categories fr + es become "other" (85; expected 4.58): 1 cell of 6
    # below 5, none below 1.
    result = chi2_homogeneity(ref, cur)
    assert result.method == "pooled" and result.pooled == ("es", "fr", "hi-Latn", "ta")
    table = np.array([[45, 12, 0], [809, 73, 120]])  # en, es+fr, hi-Latn+ta
    expected = stats.chi2_contingency(table, correction=False)
    assert result.statistic == pytest.approx(expected.statistic)
    assert result.p_value == pytest.approx(expected.pvalue)
    assert result.dof == 2


def test_a_handful_of_rows_falls_back_to_monte_carlo() -> None:
    # 4 gold rows: even en+hi against fr+zh leaves a gold cell of 4 x 70 / 524 = 0.53 < 1,
    # so no pooling meets Cochran's rule: the exact-conditional test runs on the full table
    ref, cur = {"en": 3, "hi": 1}, {"en": 300, "hi": 150, "fr": 40, "zh": 30}
    result = chi2_homogeneity(ref, cur)
    assert result.method == "monte_carlo" and result.pooled == () and result.dof == 3
    assert result == chi2_homogeneity(ref, cur)  # seeded: reproducible
    assert 0.0 < result.p_value <= 1.0


def test_monte_carlo_agrees_with_asymptotic_on_large_tables() -> None:
    ref, cur = {"a": 400, "b": 300, "c": 300}, {"a": 450, "b": 280, "c": 270}
    mc = chi2_homogeneity(ref, cur, method="monte_carlo", n_resamples=20_000)
    assert mc.p_value == pytest.approx(chi2_homogeneity(ref, cur).p_value, abs=0.01)


def test_monte_carlo_and_pooling_hold_their_level_under_the_null() -> None:
    rng = np.random.default_rng(3)
    shares = [0.6, 0.3, 0.07, 0.03]
    rejections = pooled_rejections = 0
    for i in range(200):
        a, b = rng.multinomial(40, shares), rng.multinomial(400, shares)
        cats = ["en", "hi", "fr", "zh"]
        ref, cur = dict(zip(cats, a, strict=True)), dict(zip(cats, b, strict=True))
        result = chi2_homogeneity(ref, cur, method="monte_carlo", seed=i)
        rejections += result.p_value < 0.05
        pooled_rejections += chi2_homogeneity(ref, cur).p_value < 0.05
    assert rejections <= 20 and pooled_rejections <= 20  # 5 % of 200 is 10


def test_new_categories_flagged_and_zero_columns_dropped() -> None:
    result = chi2_homogeneity({"en": 50, "hi": 50, "zz": 0}, {"en": 50, "hi": 40, "zh": 10})
    assert result.new_categories == ("zh",)
    assert result.dof == 2  # zz (0 on both sides) is dropped
    same = chi2_homogeneity({"en": 50, "hi": 50}, {"en": 50, "hi": 40, "zh": 10})
    assert same.statistic == pytest.approx(result.statistic)


@pytest.mark.parametrize(
    "ref, cur",
    [({}, {}), ({}, {"en": 5}), ({"en": 5}, {}), ({"en": 5}, {"en": 50}), ({"en": 0}, {"hi": 0})],
)
def test_degenerate_tables_give_p_one_and_a_flag(ref: dict, cur: dict) -> None:
    result = chi2_homogeneity(ref, cur)
    assert result.degenerate and result.p_value == 1.0 and result.statistic == 0.0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_scipy(kn: tuple) -> None:
    k, n = kn
    lo, hi = wilson_interval(k, n)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert float(lo) == pytest.approx(ci.low, abs=1e-9)
    assert float(hi) == pytest.approx(ci.high, abs=1e-9)


@pytest.mark.parametrize(
    "x1, n1, x2, n2, low, high",
    [  # Newcombe (1998), Stat. Med. 17:873-890, Table II, method 10
        (56, 70, 48, 80, 0.0524, 0.3339),
        (9, 10, 3, 10, 0.1705, 0.8090),
        (6, 7, 2, 7, 0.0582, 0.8062),
        (5, 56, 0, 29, -0.0381, 0.1926),
        (0, 10, 0, 20, -0.1611, 0.2775),
        (0, 10, 0, 10, -0.2775, 0.2775),
        (10, 10, 0, 20, 0.6791, 1.0),
        (10, 10, 0, 10, 0.6075, 1.0),
    ],
)
def test_newcombe_matches_the_paper(x1, n1, x2, n2, low, high) -> None:  # noqa: ANN001
    lo, hi = newcombe_interval(x1, n1, x2, n2)
    assert (round(float(lo), 4), round(float(hi), 4)) == (low, high)


def test_empty_samples_give_the_widest_intervals() -> None:
    assert [float(v) for v in wilson_interval(0, 0)] == [0.0, 1.0]
    lo, hi = newcombe_interval(0, 0, 0, 0)
    assert -1.0 <= float(lo) < 0 < float(hi) <= 1.0


def test_share_differences() -> None:
    rows = share_differences({"en": 80, "hi": 20}, {"en": 50, "hi": 30, "zh": 20})
    assert [r.category for r in rows] == ["en", "zh", "hi"]
    assert sum(r.change for r in rows) == pytest.approx(0.0, abs=1e-12)
    for r in rows:
        assert r.ci_low <= r.change <= r.ci_high
    assert rows[0].conservative_change == rows[0].ci_high < 0
    assert rows[1].conservative_change == rows[1].ci_low > 0
    assert share_differences({}, {}) == []


@settings(max_examples=100, deadline=None)
@given(st.integers(5, 60), st.integers(100, 400), st.integers(5, 60), st.integers(100, 400))
def test_two_proportion_z_equals_uncorrected_chi_square(x1, n1, x2, n2) -> None:  # noqa: ANN001
    result = two_proportion_test(x1, n1, x2, n2)
    table = np.array([[x1, n1 - x1], [x2, n2 - x2]])
    expected = stats.chi2_contingency(table, correction=False)
    if result.method == "z":
        assert result.p_value == pytest.approx(expected.pvalue, rel=1e-6)
    else:
        assert result.p_value == pytest.approx(stats.fisher_exact(table).pvalue)
    assert result.ci_low <= result.difference <= result.ci_high


def test_two_proportion_small_counts_use_fisher_and_empty_is_degenerate() -> None:
    small = two_proportion_test(3, 8, 1, 10)
    assert small.method == "fisher"
    assert small.p_value == pytest.approx(stats.fisher_exact([[3, 5], [1, 9]]).pvalue)
    empty = two_proportion_test(0, 0, 5, 100)
    assert empty.method == "degenerate" and empty.p_value == 1.0
    with pytest.raises(ValueError):
        two_proportion_test(5, 3, 1, 10)


def test_coverage_gaps() -> None:
    live = {"en": 500, "hi": 300, "fr": 20, "zh": 60}
    gold = {"en": 170, "hi": 20, "fr": 10}
    gaps = coverage_gaps(live, gold)
    assert [g.category for g in gaps] == ["hi", "zh"]
    assert math.isinf(gaps[1].ratio) and gaps[1].gold_share == 0.0
    assert all(g.ci_low >= 0.02 for g in gaps)
    assert coverage_gaps({}, gold) == []
    assert coverage_gaps({"en": 100}, {}) == []  # nothing can be shown against 0 rows
    with pytest.raises(ValueError):
        coverage_gaps(live, gold, min_ratio=0.5)


def test_coverage_gaps_take_the_gold_share_as_exact() -> None:
    # A trial: 42 English gold rows; live de 111, es 101 of 1,000 from the first event. The
    # gold share 0 is exact, so the bound is the live share's Wilson lower bound
    # (p + z²/2n − z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964, z² = 3.841459:
    # es, p = .101: (.101 + .0019207 − 1.959964 · √(9.0799e-5 + 9.6036e-7)) / 1.0038415
    #   = (.1029207 − .0187747) / 1.0038415 = .083824; upper (.1029207 + .0187747) / … = .121230
    # de, p = .111: (.111 + .0019207 − 1.959964 · √(9.8679e-5 + 9.6036e-7)) / 1.0038415
    #   = (.1129207 − .0195643) / 1.0038415 = .092999
    # (the two-sample Newcombe bound, which also counts 0 of 42's Wilson upper end .0838,
    # gave es .101 − √(.0172² + .0838²) = .0155 < .02: no gap)
    live = {"en": 758, "de": 111, "es": 101, "und": 30}
    gaps = coverage_gaps(live, {"en": 42})
    assert [g.category for g in gaps] == ["de", "es"]  # und is never a gap
    de, es = gaps
    assert de.ci_low == pytest.approx(0.092999, abs=2e-6)
    assert (es.ci_low, es.ci_high) == pytest.approx((0.083824, 0.121230), abs=2e-6)
    assert es.live_share == 0.101 and es.gold_share == 0.0 and math.isinf(es.ratio)
    assert es.difference == pytest.approx(0.101)


def test_coverage_gap_floor_and_ratio() -> None:
    # 29 of 1,000 against no gold row: bound .020266 ≥ .02, a gap; 28: .019442, none
    assert [g.category for g in coverage_gaps({"x": 29, "en": 971}, {"en": 10})] == ["x"]
    assert coverage_gaps({"x": 28, "en": 972}, {"en": 10}) == []
    # gold hi 1 of 4 (.25): live .5 = 2 × .25 is a gap; bound of 500/1,000:
    # (.5019207 − 1.959964 · √(2.5e-4 + 9.6036e-7)) / 1.0038415 = .469070, minus .25;
    # .49 is not, however large the difference
    (hi,) = coverage_gaps({"hi": 500, "en": 500}, {"hi": 1, "en": 3})
    assert hi.ci_low == pytest.approx(0.469070 - 0.25, abs=2e-6)
    assert coverage_gaps({"hi": 490, "en": 510}, {"hi": 1, "en": 3}) == []


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300), st.integers(0, 300), st.integers(0, 300))
def test_two_proportion_ci_is_the_vectorised_newcombe_interval(a, b, c, d) -> None:  # noqa: ANN001
    x1, n1, x2, n2 = min(a, b), max(a, b), min(c, d), max(c, d)
    result = two_proportion_test(x1, n1, x2, n2)
    lo, hi = newcombe_interval(x1, n1, x2, n2)
    assert result.ci_low == pytest.approx(float(lo), abs=1e-12)
    assert result.ci_high == pytest.approx(float(hi), abs=1e-12)
