"""The drift sizing table (benchmarks/drift_sizing.py, docs/drift.md) against a hand computation.

Row "a language's share 1.5 % → 11 %", `previous` baseline (two windows of n events), the
``analytics.drift`` defaults: the table says 269. By hand, with scipy: a window of n events
holds round(0.11 n) Russian questions, the one before round(0.015 n); an alarm needs
n ≥ min_count (200), the two-proportion z-test's p below alpha = 0.001 / (2 comparisons ×
4 dimensions × 24 one-hour windows a day) = 5.208e-6, and the lower end of the Newcombe
hybrid score interval (from scipy's Wilson intervals, 95 %) ≥ 0.05 (the JSD, the other
effect route, stays below 0.05 here).
"""

from __future__ import annotations

import math

import pytest
from scipy import stats
from scipy.spatial.distance import jensenshannon

from benchmarks import drift_sizing
from service.drift.detectors import CategoricalDriftDetector, RateDriftDetector, WindowConfig
from tests.conftest import REPO_ROOT

ALPHA = 0.001 / (2 * 4 * 24)


def _hand(n: int) -> tuple[bool, float, float, float]:
    """(alarm, p, Newcombe lower end, JSD) of 1.5 % → 11 % over two windows of n events."""
    x1, x0 = round(0.11 * n), round(0.015 * n)
    p1, p0 = x1 / n, x0 / n
    pooled = (x1 + x0) / (2 * n)
    z = (p1 - p0) / math.sqrt(pooled * (1 - pooled) * 2 / n)
    p = 2 * stats.norm.sf(abs(z))
    l1, _ = stats.binomtest(x1, n).proportion_ci(0.95, method="wilson")
    _, u0 = stats.binomtest(x0, n).proportion_ci(0.95, method="wilson")
    low = (p1 - p0) - math.sqrt((p1 - l1) ** 2 + (u0 - p0) ** 2)
    jsd = jensenshannon([p0, 1 - p0], [p1, 1 - p1], base=2) ** 2
    return n >= 200 and p < ALPHA and low >= 0.05, p, low, jsd


def test_alarm_at_269_not_before() -> None:
    alarm, p, low, jsd = _hand(269)  # 30 of 269 against 4 of 269
    assert alarm and p < ALPHA and low >= 0.05 and jsd < 0.05
    alarm, p, low, jsd = _hand(268)  # 29 of 268 against 4 of 268: not significant enough
    assert not alarm and p >= ALPHA and low >= 0.05 and jsd < 0.05
    assert not any(_hand(n)[0] for n in range(200, 268))
    case = drift_sizing.CASES[0]
    previous = drift_sizing.windows(baseline="previous")
    first, steady = drift_sizing.smallest_n(
        lambda n: drift_sizing.decide(case, previous, "baseline", n, n).alarm
    )
    assert (first, steady) == (269, 269)


@pytest.mark.parametrize(
    ("window_s", "expected"),
    [(3600.0, 0.001 / (2 * 4 * 24)), (14_400.0, 0.001 / (2 * 4 * 6))],  # default, demo
)
def test_alpha_per_test(window_s: float, expected: float) -> None:
    config = WindowConfig(window_s=window_s)
    language = CategoricalDriftDetector({"en": 1}, windows=config, n_dimensions=4)
    refusal = RateDriftDetector(None, windows=config, n_dimensions=4)
    assert language.alpha_per_test("baseline") == pytest.approx(expected, rel=1e-12)
    assert language.alpha_per_test("reference") == pytest.approx(0.001 / 8, rel=1e-12)
    assert refusal.alpha_per_test("baseline") == pytest.approx(2 * expected, rel=1e-12)


@pytest.mark.slow
def test_docs_table_is_the_scripts_output() -> None:
    """docs/drift.md shows what `python -m benchmarks.drift_sizing` prints (~5 s)."""
    page = (REPO_ROOT / "docs" / "drift.md").read_text(encoding="utf-8")
    for line in [*drift_sizing.table()[2:], *drift_sizing.trial()]:
        assert line in page
