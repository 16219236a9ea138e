"""benchmarks/gold_noise.py's noise floor and bound against hand computations (the same numbers
as the promtool cases in dashboards/rules/tests/alerts_drift.test.yaml), and its simulation
against the formula where the second-order expansion holds (many rows a category)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2

from benchmarks import gold_noise


def test_noise_floor_and_bound_by_hand() -> None:
    # trial 45's control day 11-21: K = 8, n = 331, n_gold = 45
    # floor = 7 / (8 ln 2) * (1/331 + 1/45) = 1.262365 * 0.0252433
    assert gold_noise.noise_floor(8, 331, 45) == pytest.approx(0.031866, abs=1e-6)
    # 7 * (1 - 2/63 + 3.090 * sqrt(2/63))^3 = 24.5252; / (8 ln 2 * 331 * 45 / 376)
    assert gold_noise.bound(8, 331, 45) == pytest.approx(0.11165, abs=1e-5)
    # the Hinglish surge day: K = 3, n = 374, n_gold = 55: 14.1313 / (8 ln 2 * 47.9487)
    assert gold_noise.bound(3, 374, 55) == pytest.approx(0.05315, abs=1e-5)
    # a big gold set and hour: the quantile term falls under the least effect, 0.05
    assert gold_noise.bound(5, 2000, 200) == 0.05
    assert gold_noise.bound(1, 500, 45) == 0.05


@pytest.mark.parametrize("k", [2, 3, 8, 16])
def test_wilson_hilferty_is_near_the_exact_quantile(k: int) -> None:
    n_eff = 40.0  # n = n_gold = 80: the quantile term is above 0.05 for every k here
    exact = chi2.ppf(1 - 1e-3, k - 1) / (8 * math.log(2) * n_eff)
    got = gold_noise.bound(k, 80, 80)
    assert exact <= got <= exact * 1.035


def test_simulated_mean_matches_the_formula_with_many_rows_a_category() -> None:
    cell = gold_noise.simulate(5, 2000, 2000, reps=2000, rng=np.random.default_rng(7))
    # K = 5, n = n_gold = 2000: 4 / (8 ln 2) * 2 / 2000 = 0.000721
    assert cell["e_formula"] == pytest.approx(0.000721, abs=1e-6)
    assert cell["e_sim"] == pytest.approx(cell["e_formula"], rel=0.05)
    # (the bound is the 0.05 floor here, far above every draw: no false-alarm rate to check)


def test_the_bound_keeps_unchanged_hours_quiet_with_a_45_row_gold_set() -> None:
    """K = 8, n = 200, n_gold = 45 (trial 45's topics): the bound is the chi-square term, not
    the 0.05 floor, so its false-alarm rate can be checked against the old threshold's."""
    cell = gold_noise.simulate(8, 45, 200, reps=2000, rng=np.random.default_rng(7))
    n_eff = 200 * 45 / 245  # 36.73
    exact = chi2.ppf(1 - 1e-3, 7) / (8 * math.log(2) * n_eff)  # 24.322 / 203.69 = 0.1194
    assert exact <= cell["bound"] <= exact * 1.035  # (median K seen on either side: 8)
    # the old flat 0.05: the chi-square approximation alone puts P(chi2_7 >= 0.05 * 203.69 =
    # 10.18) at 0.178 of unchanged hours (the simulation reads more: the expansion runs low)
    assert cell["before"] >= 0.10
    # the bound: designed for 1e-3; at most 10x that here (2,000 draws: 20 hours above it)
    assert cell["after"] <= 0.01
