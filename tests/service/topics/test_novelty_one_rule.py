"""Whether the novelty detector labels questions ``novel`` (:func:`novelty_labels`, read from
the settings before the analytics exist) and whether it is calibrated
(:meth:`Analytics.uncalibrated`, what every report and gauge says) are one rule
(:func:`detector_uncalibrated`): were they two, a detector could label ``novel`` while the
reports call it uncalibrated, or the reverse (session 51 brief N item 3).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from service.evaluation.detector_quality import DetectorQuality
from service.runtime.analytics import Analytics, detector_uncalibrated, novelty_labels
from service.settings.sections import AnalyticsConfig
from service.topics.model import TopicModel
from service.topics.stage import TopicStage
from tests.service.topics.test_uncalibrated_novelty_labels_nothing import _runtime


def _quality(auc: float, n: int, tpr: int, fpr: int) -> DetectorQuality:
    """A novelty quality on ``n`` gold questions per class, ``tpr``/``fpr`` of ``n`` at its
    threshold."""
    quality = DetectorQuality(auc, auc - 0.1, min(1.0, auc + 0.1), 0.95, n, n,
                              "leave-one-topic-out", n_groups=8)  # fmt: skip
    return quality.at_threshold(0.12, tpr / n, fpr / n)


def _model(quality: DetectorQuality | None) -> TopicModel:
    return cast(TopicModel, SimpleNamespace(novelty_quality=quality))


def _analytics(quality: DetectorQuality, config: AnalyticsConfig) -> Analytics:
    """The analytics with ``config``'s floors, as :func:`build_analytics` sets them."""
    return Analytics(stages=[], detector_quality={"novelty": quality},
                     quality_floor=config.quality_floor,
                     min_balanced_accuracy=config.scope_min_balanced_accuracy,
                     quality_min_class=config.quality_min_class)  # fmt: skip


def test_novelty_labels_and_uncalibrated_agree_over_a_grid() -> None:
    outcomes = set()
    grid = itertools.product((0.6, 0.782, 0.95), (5, 30), (0.2, 0.6, 1.0), (0.0, 0.1, 0.4))
    qualities = [_quality(auc, n, round(t * n), round(f * n)) for auc, n, t, f in grid]
    for quality, floor, ba, min_class in itertools.product(
        qualities, (0.5, 0.75), (0.5, 0.6, 0.68), (2, 10)
    ):
        config = AnalyticsConfig(quality_floor=floor, scope_min_balanced_accuracy=ba,
                                 quality_min_class=min_class)  # fmt: skip
        labels = novelty_labels(_model(quality), config)
        why = _analytics(quality, config).uncalibrated("novelty")
        assert labels == (why is None), (quality, floor, ba, min_class, why)
        outcomes.add(labels)
    assert outcomes == {True, False}  # the grid holds both verdicts


def test_the_rule_by_hand() -> None:
    # 17 of 30 caught at 2 of 30 false positives: balanced accuracy (17/30 + 28/30) / 2 =
    # 0.75; with the FPR at its Wilson upper bound 0.213235, (0.566667 + 0.786765) / 2 =
    # 0.676716: over a floor of 0.6, under 0.68
    quality = _quality(0.782, 30, 17, 2)
    assert quality.bounded_balanced_accuracy == pytest.approx(0.676716, abs=1e-6)
    assert detector_uncalibrated("novelty", quality, 0.75, 0.6, 10) is None
    assert novelty_labels(_model(quality), AnalyticsConfig(scope_min_balanced_accuracy=0.6,
                                                           quality_floor=0.75))  # fmt: skip
    why = detector_uncalibrated("novelty", quality, 0.75, 0.68, 10)
    assert why is not None and why.endswith("is below analytics.scope_min_balanced_accuracy 0.68")
    # the same point measured on 5 per class: no measurement at a fewest class of 10
    small = _quality(0.782, 5, 3, 0)
    assert "(analytics.quality_min_class)" in (
        detector_uncalibrated("novelty", small, 0.75, 0.5, 10) or ""
    )
    config = AnalyticsConfig(quality_min_class=10, scope_min_balanced_accuracy=0.5)
    assert not novelty_labels(_model(small), config)
    # no measurement: novelty_labels has nothing to gate (fewer than 2 topics, novelty off),
    # and Analytics.topics_nearest asks only of a measured detector
    assert novelty_labels(_model(None), AnalyticsConfig())
    assert detector_uncalibrated("novelty", None, 0.75, 0.68, 10) == (
        "novelty has no quality measurement"
    )


@pytest.mark.slow
def test_a_running_service_labels_novel_exactly_when_it_reports_novelty_calibrated(
    tmp_path: Path,
) -> None:
    """The three-topic gold set of :mod:`test_kappa_gate` (its detector reads 0.677 at its
    Wilson bound): calibrated at a floor of 0.6, not at the default 0.68."""
    for floor, expected in ((0.6, True), (None, False)):
        runtime = _runtime(tmp_path / str(floor), floor)
        try:
            analytics = runtime.live.analytics
            stage = next(s for s in analytics.stages if isinstance(s, TopicStage))
            labels = novelty_labels(stage.model, runtime.settings.analytics)
            assert labels is expected, floor
            assert (analytics.uncalibrated("novelty") is None) is expected, floor
            assert stage.novelty_calibrated is expected, floor
        finally:
            runtime.stop()
