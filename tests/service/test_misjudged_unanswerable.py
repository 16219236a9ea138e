"""The out-of-scope detector's own error bounds the over-refusals it can explain (trial 10: a
bot whose 298 refusals were all of out-of-scope or unanswerable questions had 182
"over-refusals", every one a question the detector let pass as in scope; FPR 7 of 12).

Expected values are worked out independently: the Wilson upper bounds with
``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` and by hand below.
"""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry
from scipy.stats import binomtest

from service.evaluation.detector_quality import (
    misjudged_unanswerable,
    over_refusals_explained_text,
)
from service.telemetry import build_analytics_metrics


def _wilson_high(k: int, n: int) -> float:
    return float(binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson").high)


def test_trial_10_fpr_7_of_12_explains_its_182_over_refusals() -> None:
    # trial 10's detector: unanswerable judged in scope 7 of 12 (FPR 0.583)
    m = misjudged_unanswerable({"fpr": 7 / 12, "n_neg": 12, "tpr": 40 / 41, "n_pos": 41})
    assert m is not None
    assert (m.count, m.n) == (7, 12)
    assert m.upper == pytest.approx(_wilson_high(7, 12), abs=1e-12)
    # by hand: p = 7/12, z = 1.959964, z²/12 = 0.320122; centre (p + z²/24) / 1.320122 =
    # 0.563125, half z √(p(1−p)/12 + z²/576) / 1.320122 = 0.243614: 0.806740
    assert m.upper == pytest.approx(0.806740, abs=1e-6)
    # 298 scored refusals: at most ⌊0.806740 × 298⌋ = ⌊240.41⌋ = 240 explained; 182 ≤ 240
    assert m.explains(298) == 240
    assert m.as_dict() == {"count": 7, "of": 12, "upper": m.upper}


def test_the_count_rounds_the_rate_to_whole_rows_and_is_capped() -> None:
    m = misjudged_unanswerable({"fpr": 0.25, "n_neg": 40})  # 10 of 40
    assert m is not None and (m.count, m.n) == (10, 40)
    assert m.upper == pytest.approx(_wilson_high(10, 40), abs=1e-12)
    m = misjudged_unanswerable({"fpr": 1.0, "n_neg": 10})
    assert m is not None and (m.count, m.n) == (10, 10)
    assert m.upper == pytest.approx(1.0)  # Wilson upper of n of n is 1


def test_no_misjudgement_still_has_an_upper_bound() -> None:
    m = misjudged_unanswerable({"fpr": 0.0, "n_neg": 12})
    assert m is not None and m.count == 0
    # Wilson upper of 0 of n is z² / (n + z²): 3.841459 / 15.841459 = 0.242494
    assert m.upper == pytest.approx(3.841459 / 15.841459, abs=1e-6)
    assert m.explains(298) == 72  # ⌊0.242494 × 298⌋ = ⌊72.26⌋


@pytest.mark.parametrize(
    "quality",
    [None, {}, {"fpr": None, "n_neg": 12}, {"fpr": math.nan, "n_neg": 12}, {"fpr": 0.5},
     {"fpr": 0.5, "n_neg": 0}],
)  # fmt: skip
def test_unknown_without_an_operating_point(quality: dict[str, object] | None) -> None:
    assert misjudged_unanswerable(quality) is None


def test_text_says_how_many_go_beyond_the_bound() -> None:
    scope = {"over_refusals": 250, "over_refusals_explained": 240,
             "misjudged_unanswerable": {"count": 7, "of": 12, "upper": 0.806740}}  # fmt: skip
    text = over_refusals_explained_text(scope)
    assert "up to 240 explained" in text and "7 of 12 unanswerable gold questions" in text
    assert "80.7% of the scored refusals" in text and text.endswith("; 10 beyond it)")
    scope["over_refusals"] = 240  # at the bound: explained
    assert over_refusals_explained_text(scope).endswith(
        "; within its error: this count alone is no evidence of over-refusal, nor of none "
        "(refusals of known answerable gold questions measure it without the detector))"
    )
    assert over_refusals_explained_text({"over_refusals": 3}) == ""


def test_gauge_is_set_and_removed() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    name = "goldwatch_detector_misjudged_unanswerable_upper_ratio"
    labels = {"detector": "out_of_scope"}
    assert registry.get_sample_value(name, labels) is None  # unknown: absent, not 0
    metrics.set_misjudged_unanswerable(0.806740)
    assert registry.get_sample_value(name, labels) == pytest.approx(0.806740)
    metrics.set_misjudged_unanswerable(None)
    assert registry.get_sample_value(name, labels) is None
