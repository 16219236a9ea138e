"""The out-of-scope detector's own error bounds the under-refusals it can explain (trial 9:
a bot that answered 2,400 answerable questions had 203 "under-refusals", all the detector's
misjudgements, and UnderRefusal fired).

Expected values are worked out independently: the Wilson upper bounds with
``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` and by hand below.
"""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry
from scipy.stats import binomtest

from service.evaluation.detector_quality import (
    misjudged_answerable,
    under_refusals_explained_text,
)
from service.telemetry import build_analytics_metrics


def _wilson_high(k: int, n: int) -> float:
    return float(binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson").high)


def test_regression_and_off_corpus_counts_add_up_and_bound_by_wilson() -> None:
    # MultiHop (trial 9): 33 of 34 answerable kept in scope (1 misjudged by the regression),
    # the off-corpus rule 1 of 34 held out: at most 2 of 34 judged out of scope by either.
    m = misjudged_answerable({"tpr": 33 / 34, "n_pos": 34},
                             {"held_out_fpr": 1 / 34, "n_answerable": 34})  # fmt: skip
    assert m is not None
    assert (m.count, m.n) == (2, 34)
    assert m.upper == pytest.approx(_wilson_high(2, 34), abs=1e-12)
    # by hand: p = 2/34, z = 1.959964; centre (p + z²/68) / (1 + z²/34) = 0.103581,
    # half z √(p(1−p)/34 + z²/4624) / (1 + z²/34) = 0.087355: 0.190936
    assert m.upper == pytest.approx(0.190936, abs=1e-6)
    # 2,400 scored questions: at most ⌊0.190936 × 2400⌋ = 458 explained
    assert m.explains(2400) == 458
    assert m.as_dict() == {"count": 2, "of": 34, "upper": m.upper, "by_score": 1,
                           "by_off_corpus": 1}  # fmt: skip


def test_without_off_corpus_rule_only_the_regression_counts() -> None:
    m = misjudged_answerable({"tpr": 0.9, "n_pos": 40})  # 4 of 40
    assert m is not None and (m.count, m.n) == (4, 40)
    assert m.upper == pytest.approx(_wilson_high(4, 40), abs=1e-12)
    # an unknown off-corpus rate (NaN: nothing held out; None) adds nothing
    for rate in (float("nan"), None):
        other = misjudged_answerable({"tpr": 0.9, "n_pos": 40},
                                     {"held_out_fpr": rate, "n_answerable": 40})  # fmt: skip
        assert other == m


def test_no_misjudgement_still_has_an_upper_bound() -> None:
    m = misjudged_answerable({"tpr": 1.0, "n_pos": 50}, {"held_out_fpr": 0.0, "n_answerable": 50})
    assert m is not None and m.count == 0
    # Wilson upper of 0 of n is z² / (n + z²): 3.841459 / 53.841459 = 0.071347
    assert m.upper == pytest.approx(3.841459 / 53.841459, abs=1e-6)


def test_count_is_capped_at_the_answerable_rows() -> None:
    m = misjudged_answerable({"tpr": 0.0, "n_pos": 10}, {"held_out_fpr": 1.0, "n_answerable": 10})
    assert m is not None and (m.count, m.n) == (10, 10)
    assert m.upper == pytest.approx(1.0)  # Wilson upper of n of n is 1


@pytest.mark.parametrize(
    "quality",
    [None, {}, {"tpr": None, "n_pos": 34}, {"tpr": math.nan, "n_pos": 34}, {"tpr": 0.9},
     {"tpr": 0.9, "n_pos": 0}],
)  # fmt: skip
def test_unknown_without_an_operating_point(quality: dict[str, object] | None) -> None:
    assert misjudged_answerable(quality) is None


def test_text_says_how_many_go_beyond_the_bound() -> None:
    scope = {"under_refusals": 500, "under_refusals_explained": 458,
             "misjudged_answerable": {"count": 2, "of": 34, "upper": 0.190936}}  # fmt: skip
    text = under_refusals_explained_text(scope)
    assert "up to 458 explained" in text and "2 of 34 answerable gold questions" in text
    assert "19.1%" in text and text.endswith("; 42 beyond it)")
    scope["under_refusals"] = 458  # at the bound: explained
    assert under_refusals_explained_text(scope).endswith(
        "; within its error: no evidence of made-up answers, nor of none)"
    )
    assert under_refusals_explained_text({"under_refusals": 3}) == ""


def test_text_splits_the_rows_by_rule_so_it_agrees_with_the_quality_line() -> None:
    # trial 13: the quality line said "answerable kept in scope 30 of 32 (TPR 0.938)" and the
    # under-refusal line "3 of 32 answerable gold questions": 2 by the score (32 − 30) and 1 by
    # the off-corpus rule (held-out FPR 1/32 of 32 rows). The text names both parts.
    m = misjudged_answerable({"tpr": 0.9375, "n_pos": 32},
                             {"held_out_fpr": 0.03125, "n_answerable": 32})  # fmt: skip
    assert m is not None and (m.count, m.by_score, m.by_off_corpus) == (3, 2, 1)
    scope = {"under_refusals": 253, "under_refusals_explained": 510,
             "misjudged_answerable": m.as_dict()}  # fmt: skip
    text = under_refusals_explained_text(scope)
    assert ("3 of 32 answerable gold questions on held-out data (2 by its score, 1 by the "
            "off-corpus rule), 95 % upper bound") in text  # fmt: skip
    # without the off-corpus rule there is nothing to split: the count is the score's alone
    alone = misjudged_answerable({"tpr": 0.9375, "n_pos": 32})
    assert alone is not None and (alone.count, alone.by_score, alone.by_off_corpus) == (2, 2, 0)
    scope["misjudged_answerable"] = alone.as_dict()
    assert "2 of 32 answerable gold questions on held-out data, 95 %" in (
        under_refusals_explained_text(scope)
    )


def test_gauge_is_set_and_removed() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    name = "goldwatch_detector_misjudged_answerable_upper_ratio"
    labels = {"detector": "out_of_scope"}
    assert registry.get_sample_value(name, labels) is None  # unknown: absent, not 0
    metrics.set_misjudged_answerable(0.190936)
    assert registry.get_sample_value(name, labels) == pytest.approx(0.190936)
    metrics.set_misjudged_answerable(None)
    assert registry.get_sample_value(name, labels) is None
