"""``roc_auc`` counts pairs (Mann-Whitney U / n_pos n_neg), ties as halves (issue 22 replaced
the pooled ranking by binary searches; the values below are counted by hand)."""

from __future__ import annotations

import math

from service.evaluation.detector_quality import measure_auc, roc_auc


def test_auc_counts_tied_pairs_as_halves() -> None:
    # pairs (pos, neg): (1,2) 0, (1,0) 1, (2,2) 1/2, (2,0) 1, (2,2) 1/2, (2,0) 1 -> U = 4 of 6
    assert roc_auc([1.0, 2.0, 2.0], [2.0, 0.0]) == 4 / 6


def test_auc_of_separated_reversed_and_all_tied_scores() -> None:
    assert roc_auc([3.0, 4.0], [1.0, 2.0]) == 1.0
    assert roc_auc([1.0, 2.0], [3.0, 4.0]) == 0.0
    assert roc_auc([5.0, 5.0], [5.0, 5.0, 5.0]) == 0.5
    # infinite scores rank like any other: -inf below everything, +inf above
    assert roc_auc([math.inf, 0.0], [-math.inf, 0.0]) == (1 + 1 + 1 + 0.5) / 4


def test_auc_is_nan_without_a_class() -> None:
    assert math.isnan(roc_auc([], [1.0]))
    assert math.isnan(roc_auc([1.0], []))
    assert math.isnan(measure_auc([], [1.0]).auc)


def test_bootstrap_interval_holds_the_estimate() -> None:
    quality = measure_auc([1.0, 2.0, 2.0, 3.0], [2.0, 0.0, 1.0], n_boot=200, seed=3)
    # by hand: 3 negatives per positive: 1 -> 1.5, 2 -> 2.5, 2 -> 2.5, 3 -> 3 = 9.5 of 12
    assert quality.auc == 9.5 / 12
    assert quality.low <= quality.auc <= quality.high
