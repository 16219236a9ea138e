"""Topic novelty reports its operating point and the topics its AUC rests on (trial 15).

Trial 15's gold set had 2 topics; the report said "novelty detector ROC AUC 0.889 ... each
topic held out in turn" while ``novel`` caught a third of the off-corpus traffic. The quality
now says how many topics were held out and, at the detector's threshold, the share of gold
questions read novel with their topic held out (TPR) and with every topic kept (FPR). Since
the fortieth session (trial t40 HIGH 1) novelty's trust also asks the balanced-accuracy floor
of that operating point, as the out-of-scope detector's does (``test_novelty_gate``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from service.evaluation.detector_quality import (
    DetectorQuality,
    balanced_accuracy_floor,
    measured_on,
    operating_point_summary,
    quality_gauges,
)
from service.runtime.analytics import Analytics
from service.telemetry import build_analytics_metrics
from service.topics.config import TopicConfig
from service.topics.model import TopicModel, _novelty_quality, _novelty_threshold

# Two topics of two unit vectors each; the dot products, by hand:
#   a1·a2 = 0.8, a1·b1 = 0, a1·b2 = 0.6, a2·b1 = 0.6, a2·b2 = 0.96, b1·b2 = 0.8
VECTORS = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
TOPICS = np.array([0, 0, 1, 1])


def test_the_operating_point_and_the_topic_count_by_hand() -> None:
    # nearest gold question with every topic kept (negatives): a1 0.8, a2 0.96, b1 0.8, b2 0.96
    # nearest with its own topic held out (positives):        a1 0.6, a2 0.96, b1 0.6, b2 0.96
    # threshold 0.7: positives below it a1, b1 (TPR 2/4), negatives none (FPR 0)
    # AUC of 1 - similarity: positives 0.4, 0.04, 0.4, 0.04 against negatives 0.2, 0.04, 0.2,
    # 0.04: each 0.4 beats all 4 (8 pairs), each 0.04 ties two 0.04s (2 × 2 × 0.5): 10 / 16
    quality = _novelty_quality(VECTORS, TOPICS, seed=0, threshold=0.7)
    assert quality is not None
    assert quality.n_groups == 2 and quality.n_pos == quality.n_neg == 4
    assert math.isclose(quality.auc, 10 / 16, abs_tol=1e-9)
    assert (quality.tpr, quality.fpr, quality.threshold) == (0.5, 0.0, 0.7)
    assert quality.balanced_accuracy == 0.75
    assert measured_on("novelty", quality) == "4 gold questions, each of 2 topics held out in turn"
    assert operating_point_summary(quality.as_dict(), "novelty") == (
        "gold questions read novel with their topic held out 2 of 4 (TPR 0.500); read novel "
        "with every topic kept 0 of 4 (FPR 0.000); balanced accuracy 0.750"
    )


def test_without_a_threshold_no_operating_point_is_claimed() -> None:
    quality = _novelty_quality(VECTORS, TOPICS, seed=0)
    assert quality is not None and quality.n_groups == 2 and math.isnan(quality.tpr)


def test_the_balanced_accuracy_floor_applies_to_novelty_as_to_out_of_scope() -> None:
    # the production-shaped benchmark's novelty: AUC 0.764, 97 of 477 held out read novel at
    # FPR 24 / 477 (balanced accuracy 550 / 954 = 0.577; with the FPR at its Wilson bound over
    # 477, 0.0739, it is (0.2034 + 1 − 0.0739) / 2 = 0.565): under 0.68, uncalibrated since
    # the fortieth session (trial t40 HIGH 1), as the same numbers on out-of-scope are
    weak = DetectorQuality(0.764, 0.738, 0.792, 0.95, 477, 477, n_groups=22).at_threshold(
        0.22, 97 / 477, 24 / 477
    )
    assert weak.bounded_balanced_accuracy == pytest.approx(0.565, abs=5e-4)
    analytics = Analytics(stages=[], detector_quality={"novelty": weak, "out_of_scope": weak},
                          min_balanced_accuracy=0.68, quality_min_class=10)  # fmt: skip
    for detector in ("novelty", "out_of_scope"):
        assert "below analytics.scope_min_balanced_accuracy 0.68" in str(
            analytics.uncalibrated(detector)
        )
    assert balanced_accuracy_floor("novelty", 0.68) == 0.68
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    metrics.set_detector_quality(
        {name: quality_gauges(weak) for name in ("novelty", "out_of_scope")}, 0.75, 0.68, 10
    )

    def trusted(detector: str) -> float | None:
        return registry.get_sample_value("goldwatch_detector_trusted", {"detector": detector})

    assert trusted("novelty") == 0.0 and trusted("out_of_scope") == 0.0
    # a floor of 0.56 (under 0.565) trusts both: the gauge and the reports ask one rule
    metrics.set_detector_quality(
        {name: quality_gauges(weak) for name in ("novelty", "out_of_scope")}, 0.75, 0.56, 10
    )
    assert trusted("novelty") == 1.0 and trusted("out_of_scope") == 1.0


def test_a_sampled_measurement_claims_no_operating_point() -> None:
    # review: the threshold is a percentile of every row's leave-one-out similarity; a
    # sample's rows have fewer, farther neighbours, so its rates are not the threshold's.
    # 600 rows of 6 topics, threshold their own 5th percentile: on all 600 the FPR is
    # 30 / 600 by construction; on 300 of them it is far above (and no longer a claim)
    rng = np.random.default_rng(3)
    topics = np.arange(600) % 6
    x = rng.normal(size=(6, 16))[topics] + 2.0 * rng.normal(size=(600, 16))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    threshold = _novelty_threshold(x, 5.0)
    whole = _novelty_quality(x, topics, seed=0, threshold=threshold)
    assert whole is not None and whole.fpr == 30 / 600
    sampled = _novelty_quality(x, topics, seed=0, threshold=threshold, limit=300)
    assert sampled is not None and sampled.n_pos == 300 and math.isnan(sampled.fpr)


def test_a_threshold_set_on_a_sampled_reference_claims_no_operating_point() -> None:
    # review: with max_reference under the gold set's size the threshold (and the live
    # detector) read a sample's neighbours, the quality every row's: on 2,000 synthetic rows
    # with max_reference 1,000 the rates read FPR 0.005 for the detector's ~0.05
    texts = [f"question {i} about topic {i % 3} number {i * 7 % 11}" for i in range(40)]
    labels = [f"t{i % 3}" for i in range(40)]
    config = TopicConfig(novelty_percentile=5, novelty_hubness=0)
    whole = TopicModel.fit(texts, config, labels=labels).novelty_quality
    assert whole is not None and whole.fpr == 2 / 40  # 5th percentile of 40: 2 below it
    sampled = TopicModel.fit(
        texts, config.model_copy(update={"max_reference": 20}), labels=labels
    ).novelty_quality
    assert sampled is not None and sampled.n_pos == 40 and math.isnan(sampled.tpr)
