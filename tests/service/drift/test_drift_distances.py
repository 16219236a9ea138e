"""JSD, JS distance and PSI: cross-checked against scipy, properties, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from service.drift.distances import (
    PSI_EPSILON,
    js_distance,
    js_divergence,
    psi,
    share_vectors,
    union_categories,
)

CATS = list("abcdefgh")
counts = st.dictionaries(st.sampled_from(CATS), st.integers(0, 1000), min_size=1).filter(
    lambda d: sum(d.values()) > 0
)


@settings(max_examples=200, deadline=None)
@given(counts, counts)
def test_jsd_matches_scipy_and_is_symmetric_in_unit_interval(p: dict, q: dict) -> None:
    cats, pv, qv = share_vectors(p, q)
    expected = float(jensenshannon(pv, qv, base=2))
    assert js_distance(p, q) == pytest.approx(expected, abs=1e-7)
    assert js_divergence(p, q) == pytest.approx(expected**2, abs=1e-9)
    assert js_divergence(p, q) == pytest.approx(js_divergence(q, p), abs=1e-12)
    assert 0.0 <= js_divergence(p, q) <= 1.0
    assert cats == union_categories(p, q)


@settings(max_examples=200, deadline=None)
@given(counts, counts)
def test_psi_is_finite_non_negative_symmetric_with_empty_bins(p: dict, q: dict) -> None:
    value = psi(p, q)
    assert math.isfinite(value) and value >= 0
    assert value == pytest.approx(psi(q, p), rel=1e-9, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(counts, st.integers(1, 50))
def test_identical_distributions_give_zero(p: dict, scale: int) -> None:
    scaled = {k: v * scale for k, v in p.items()}
    assert js_divergence(p, scaled) == pytest.approx(0.0, abs=1e-12)
    assert psi(p, scaled) == pytest.approx(0.0, abs=1e-12)
    assert psi(p, p) == 0.0


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 500), st.integers(1, 500))
def test_disjoint_supports_give_jsd_one(a: int, b: int) -> None:
    assert js_divergence({"en": a}, {"hi": b, "zh": a}) == pytest.approx(1.0)
    assert js_distance({"en": a}, {"hi": b}) == pytest.approx(1.0)


def test_psi_by_hand_and_documented_floor() -> None:
    # (0.6 - 0.9) ln(0.6/0.9) + (0.4 - 0.1) ln(0.4/0.1)
    expected = -0.3 * math.log(0.6 / 0.9) + 0.3 * math.log(4.0)
    assert psi({"en": 90, "hi": 10}, {"en": 60, "hi": 40}) == pytest.approx(expected)
    # a category absent from the reference: its share is floored at epsilon
    floored = (0.99 - 1.0) * math.log(0.99) + (0.01 - PSI_EPSILON) * math.log(0.01 / PSI_EPSILON)
    assert psi({"a": 1}, {"a": 99, "b": 1}) == pytest.approx(floored)
    assert psi({"a": 1}, {"a": 99, "b": 1}, epsilon=1e-3) < psi({"a": 1}, {"a": 99, "b": 1})


def test_all_mass_in_one_category() -> None:
    assert js_divergence({"en": 5}, {"en": 3}) == 0.0
    assert psi({"en": 5}, {"en": 3}) == 0.0
    assert js_divergence({"en": 5}, {"en": 5, "hi": 5}) == pytest.approx(
        float(jensenshannon([1, 0], [0.5, 0.5], base=2)) ** 2
    )


@pytest.mark.parametrize("p, q", [({}, {}), ({}, {"en": 1}), ({"en": 0}, {"en": 3})])
def test_empty_sides_give_nan_not_an_exception(p: dict, q: dict) -> None:
    assert math.isnan(js_divergence(p, q))
    assert math.isnan(js_distance(p, q))
    assert math.isnan(psi(p, q))


def test_share_vectors_union_and_zero_totals() -> None:
    cats, p, q = share_vectors({"en": 3, "hi": 1}, {"zh": 2})
    assert cats == ["en", "hi", "zh"]
    np.testing.assert_allclose(p, [0.75, 0.25, 0.0])
    np.testing.assert_allclose(q, [0.0, 0.0, 1.0])
    _, p, _ = share_vectors({}, {"en": 1})
    np.testing.assert_array_equal(p, [0.0])


@pytest.mark.parametrize("bad", [{"en": -1}, {"en": math.inf}, {"en": math.nan}])
def test_invalid_counts_raise(bad: dict) -> None:
    with pytest.raises(ValueError):
        js_divergence(bad, {"en": 1})


@pytest.mark.parametrize("epsilon", [0.0, -1e-4, 1.0])
def test_psi_rejects_bad_epsilon(epsilon: float) -> None:
    with pytest.raises(ValueError):
        psi({"en": 1}, {"en": 1}, epsilon=epsilon)
