"""Review s14-rev2 finding 1: a column the reference lacks too thin for Cochran's rule makes
the chi-square conditional on the reference's categories (not a Monte-Carlo test that can
never reach a detector's alpha), and a Monte-Carlo test whose floor ``1 / (n + 1)`` is not
below alpha says so in the report (JSON, text, HTML) instead of a silent ``ok``."""

from __future__ import annotations

import copy
from html import unescape

from scipy.stats import chi2_contingency, fisher_exact

from service.drift.detectors import CategoricalDriftDetector, WindowConfig
from service.drift.stats_tests import chi2_homogeneity
from service.html.drift_section import drift_section
from service.jobs.replay import render_text
from tests.service.html import samples


def test_a_thin_new_category_makes_the_test_conditional_on_the_reference_categories() -> None:
    # hi-Latn's expected gold count is 55 x 3 / 1,055 = 0.16 < 1: no pooling meets Cochran's
    # rule; the gold set's two categories alone give the 2 x 2 table [[45, 10], [200, 797]]
    r = chi2_homogeneity({"en": 45, "es": 10}, {"en": 200, "es": 797, "hi-Latn": 3})
    scipy_p = chi2_contingency([[45, 10], [200, 797]], correction=False)[1]
    assert r.method == "conditional" and r.pooled == () and r.dof == 1
    assert r.new_categories == ("hi-Latn",)
    assert (r.n_reference, r.n_current) == (55, 1000)  # the whole window, hi-Latn included
    assert abs(r.p_value - scipy_p) <= 1e-9 * scipy_p and r.p_value < 1e-20
    assert r.p_floor == 0.0


def test_a_new_category_that_pooling_can_hold_is_still_pooled_not_dropped() -> None:
    # 40 hi-Latn: expected gold count 55 x 40 / 1,095 = 2.0 >= 1, and it is the only cell
    # below 5 of 6 (17 % <= 20 %): the full table meets the rule, nothing is left out
    r = chi2_homogeneity({"en": 45, "es": 10}, {"en": 200, "es": 800, "hi-Latn": 40})
    assert r.method == "asymptotic"
    scipy_p = chi2_contingency([[45, 10, 0], [200, 800, 40]], correction=False)[1]
    assert abs(r.p_value - scipy_p) <= 1e-9 * scipy_p


def _sparse_report() -> dict:
    """A gold set of 50 en, 2 es against a window of 11 es: 1 of the 4 expected counts
    (es, current: 11 x 13 / 63 = 2.3) is below 5 (25 % > 20 %), 2 columns (no pooling),
    so the Monte-Carlo test runs; Fisher's exact p is 1.3e-10 (scipy), far below alpha."""
    det = CategoricalDriftDetector({"en": 50, "es": 2}, min_count=10,
                                   windows=WindowConfig(window_s=600, test_every_s=60,
                                                        baseline="none"))  # fmt: skip
    det.update_many(["es"] * 10, [float(t) for t in range(10)])
    det.update_many(["es"], [60.0])
    return det.reports["reference"].to_dict()


def test_a_monte_carlo_test_that_cannot_reach_alpha_says_so() -> None:
    test = _sparse_report()
    assert fisher_exact([[50, 2], [0, 11]]).pvalue < test["alpha"]  # the evidence is there
    assert test["method"] == "monte_carlo" and test["state"] == "ok"
    # 20 / alpha > 20,000: the cap of 20,000 resamples, floor 1 / 20,001
    assert test["p_floor"] == 1 / 20_001 and test["p_floor"] >= test["alpha"]
    assert test["p_value"] >= test["p_floor"]
    assert "1 / (20,000 + 1) = 5.0e-05" in test["cannot_alarm"]
    assert f"is not below alpha {test['alpha']:.1e}" in test["cannot_alarm"]


def test_a_test_that_can_alarm_has_no_cannot_alarm_fields() -> None:
    det = CategoricalDriftDetector({"en": 45, "es": 10}, min_count=100,
                                   windows=WindowConfig(window_s=600, test_every_s=60,
                                                        baseline="none"))  # fmt: skip
    det.update_many(["es"] * 150, [float(t) for t in range(150)])
    report = det.reports["reference"].to_dict()
    assert report["state"] == "drift" and report["method"] == "asymptotic"
    assert "cannot_alarm" not in report and "p_floor" not in report


def test_text_and_html_say_a_comparison_cannot_alarm() -> None:
    why = _sparse_report()["cannot_alarm"]
    doc = copy.deepcopy(samples.replay_report())
    doc["analytics"]["drift"]["language"]["comparisons"]["reference"]["cannot_alarm"] = why
    lines = render_text({**doc, "gold_candidates": None}).splitlines()
    assert f"  language vs reference cannot alarm: {why}" in lines
    assert not any("cannot alarm" in line
                   for line in render_text({**samples.replay_report(),
                                            "gold_candidates": None}).splitlines())  # fmt: skip
    html = str(drift_section(doc["analytics"]["drift"]))
    assert f"cannot alarm: {why}" in unescape(html)
