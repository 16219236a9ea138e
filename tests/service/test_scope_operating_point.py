"""The out-of-scope detector is trusted on its operating point, not on its ROC AUC alone
(fresh-user trial, finding 3): the trial's detector had AUC 0.845 (above the floor 0.75) but
at its threshold (keep 95 % of the answerable gold questions in scope) TPR 0.952 and FPR
0.783, balanced accuracy 0.584 — 78 % of the unanswerable gold questions passed as in scope —
and its counts were printed as facts. Now the rates at the threshold are reported next to the
AUC (text, JSON, HTML, /v1/refusals, gauges) and the detector is calibrated only when the
balanced accuracy there also reaches ``analytics.scope_min_balanced_accuracy`` — since the
thirtieth session with the FPR at its Wilson 95 % upper bound over the unanswerable rows
(three of 16 seeded gold sets of ``benchmarks/bench_scope_coverage.py`` caught under half of
CLINC150's out-of-scope questions with a balanced accuracy of 0.68–0.74 on 10–13 rows)."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry
from sklearn.metrics import roc_auc_score

from benchmarks.datasets import load_xquad
from benchmarks.goldsets import write_squad2
from service.data.corpus import load_corpus
from service.data.goldset import load_gold_set
from service.evaluation.detector_quality import DetectorQuality, measure_auc, quality_gauges
from service.html import render_replay_html
from service.jobs.replay import quality_text, render_text
from service.refusals.scope import calibrate_threshold
from service.refusals.stage import EmbeddingScopeStage
from service.runtime.analytics import Analytics, apply_quality_floor, build_analytics
from service.runtime.reports import detector_quality_report
from service.settings import load_settings
from service.telemetry import build_analytics_metrics
from tests.service.html.samples import replay_report
from tests.service.test_detector_quality_reporting import _drift, _rate_stream

# Hand-worked calibration: 10 answerable and 4 unanswerable best scores.
ANSWERABLE = [10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 0.5]
UNANSWERABLE = [1.0, 1.5, 2.5, 0.2]
# ROC AUC: pairs (answerable > unanswerable) over 40 = (9 + 9 + 8 + 10) / 40 = 0.9.
# min_tpr 0.95 keeps all 10 answerable rows (9 / 10 = 0.9 < 0.95): threshold 0.5, where
# 3 of the 4 unanswerable rows (1.0, 1.5, 2.5) pass: FPR 0.75, balanced accuracy
# (1 + 0.25) / 2 = 0.625 — an AUC above the floor, an operating point below 0.68.
AUC, THRESHOLD, TPR, FPR, BA = 0.9, 0.5, 1.0, 0.75, 0.625
# What the trust check reads (thirtieth session): the FPR at its Wilson 95 % upper bound over
# the 4 unanswerable rows, p = 3/4, z = 1.96: (0.75 + z²/8 + z √(0.75·0.25/4 + z²/64)) /
# (1 + z²/4) = (1.23020 + 0.64085) / 1.96040 = 0.95441, so (1 + 1 − 0.95441) / 2 = 0.5228.
BOUNDED_BA = 0.5228


def _calibrated_quality() -> Any:
    cal = calibrate_threshold(ANSWERABLE, UNANSWERABLE, min_tpr=0.95)
    quality = measure_auc(ANSWERABLE, UNANSWERABLE, n_boot=200, seed=0)
    return cal, quality.at_threshold(cal.threshold, cal.tpr, cal.fpr)


def test_operating_point_by_hand() -> None:
    cal, quality = _calibrated_quality()
    assert (cal.threshold, cal.tpr, cal.fpr) == (THRESHOLD, TPR, FPR)
    assert quality.auc == pytest.approx(AUC) and cal.auc == pytest.approx(AUC)
    assert quality.balanced_accuracy == pytest.approx(BA)
    assert quality.trusted(0.75)  # the AUC alone: what was checked before
    assert quality.bounded_balanced_accuracy == pytest.approx(BOUNDED_BA, abs=5e-5)
    assert not quality.trusted(0.75, min_balanced_accuracy=0.68)
    assert not quality.trusted(0.75, min_balanced_accuracy=0.6)  # 0.625, but 4 rows: 0.523
    assert quality.trusted(0.75, min_balanced_accuracy=0.52)
    row = quality.as_dict()
    assert (row["threshold"], row["tpr"], row["fpr"], row["balanced_accuracy"]) == (
        THRESHOLD, TPR, FPR, BA)  # fmt: skip


def test_a_high_auc_with_a_poor_operating_point_is_uncalibrated_and_raises_no_alarm() -> None:
    _, quality = _calibrated_quality()
    analytics = Analytics(stages=[], drift=_drift(), quality_floor=0.75,
                          min_balanced_accuracy=0.68)  # fmt: skip
    analytics.detector_quality["out_of_scope"] = quality
    why = ("out_of_scope balanced accuracy 0.625 at its threshold (answerable kept in scope "
           "10 of 10 (TPR 1.000); unanswerable judged in scope 3 of 4 (FPR 0.750); "
           "ROC AUC 0.900), 0.523 with its false-positive rate at its Wilson 95 % upper "
           "bound over 4 questions, is below analytics.scope_min_balanced_accuracy "
           "0.68")  # fmt: skip
    assert analytics.uncalibrated("out_of_scope") == why
    assert apply_quality_floor(analytics) == {"out_of_scope": f"uncalibrated: {why}"}
    _rate_stream(analytics.drift)  # 5 % -> 30 % out of scope: tested, but no alarm
    assert [a for a in analytics.drift.alarms if a["dimension"] == "out_of_scope"] == []
    row = detector_quality_report(analytics)["out_of_scope"]
    assert row["trusted"] is False and row["uncalibrated"] == why
    assert row["balanced_accuracy"] == BA and row["auc"] == AUC
    analytics.min_balanced_accuracy = 0.52  # the same detector at a floor it reaches
    assert analytics.uncalibrated("out_of_scope") is None
    assert detector_quality_report(analytics)["out_of_scope"]["trusted"] is True


def test_text_shows_the_operating_point_next_to_the_auc() -> None:
    _, quality = _calibrated_quality()
    row = {**quality.as_dict(), "trusted": True, "uncalibrated": None}
    assert quality_text(row, "out_of_scope").endswith(
        "; at its threshold answerable kept in scope 10 of 10 (TPR 1.000); unanswerable judged "
        "in scope 3 of 4 (FPR 0.750); balanced accuracy 0.625"
    )  # the counts by hand above: 10 answerable rows all kept, 3 of the 4 unanswerable pass
    report = copy.deepcopy(replay_report(extras=False))
    report["analytics"]["out_of_scope"] |= {"quality": row, "uncalibrated": None}
    line = next(x for x in render_text(report).splitlines() if x.startswith("out of scope"))
    assert "ROC AUC 0.900" in line and "balanced accuracy 0.625" in line
    # trial 9: "FPR 0.929 (13 of 14)" read as 93 % false alarms; the classes are named
    assert "unanswerable judged in scope 3 of 4 (FPR 0.750)" in line


@pytest.mark.slow
def test_html_shows_one_auc_and_the_operating_point() -> None:
    """The trial's page showed "ROC AUC 0.845" and "scope calibration: auc 0.844": the same
    detector's AUC rounded twice. Now the AUC appears once, the rates at the threshold next
    to it."""
    cal, quality = _calibrated_quality()
    row = {**quality.as_dict(), "trusted": True, "uncalibrated": None}
    report = copy.deepcopy(replay_report(extras=False))
    calibration = {**cal._asdict(), "auc": 0.84449, "retriever": "bm25"}
    report["analytics"]["out_of_scope"] |= {"quality": row, "uncalibrated": None,
                                            "calibration": calibration}  # fmt: skip
    page = render_replay_html(report)
    assert "scope calibration: auc" not in page and "0.844" not in page
    assert (
        "answerable kept in scope 10 of 10 (TPR 1.000); unanswerable judged in scope 3 of 4 "
        "(FPR 0.750); balanced accuracy 0.625"
    ) in page
    assert "scope calibration: threshold" in page


def test_gauges_export_the_operating_point_and_trust_on_both() -> None:
    _, quality = _calibrated_quality()
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    metrics.set_detector_quality({"out_of_scope": quality_gauges(quality)}, floor=0.75,
                                 min_balanced_accuracy=0.68)  # fmt: skip

    def get(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(f"goldwatch_{name}", labels)

    assert get("detector_auc", detector="out_of_scope") == pytest.approx(AUC)
    for rate, value in (("tpr", TPR), ("fpr", FPR), ("balanced_accuracy", BA)):
        assert get("detector_operating_point_ratio", detector="out_of_scope",
                   rate=rate) == value  # fmt: skip
    assert get("detector_trusted", detector="out_of_scope") == 0.0
    metrics.set_detector_quality({"out_of_scope": quality_gauges(quality)}, floor=0.75,
                                 min_balanced_accuracy=0.6)  # fmt: skip
    assert get("detector_trusted", detector="out_of_scope") == 0.0  # bounded: 0.523
    metrics.set_detector_quality({"out_of_scope": quality_gauges(quality)}, floor=0.75,
                                 min_balanced_accuracy=0.52)  # fmt: skip
    assert get("detector_trusted", detector="out_of_scope") == 1.0


def test_setting_default_and_range() -> None:
    assert load_settings(None).analytics.scope_min_balanced_accuracy == 0.68
    with pytest.raises(ValueError, match="scope_min_balanced_accuracy"):
        load_settings(None, analytics={"scope_min_balanced_accuracy": 0.3})


def _write_trial_gold(out: Path, root: Path) -> tuple[Path, Path]:
    """The fresh-user trial's gold set and corpus (its build.py, deterministic part): the
    SQuAD 2.0 dev sample (242 answerable, 258 unanswerable rows, its 411 contexts) plus, for
    en, de, es and hi, XQuAD's 240 paragraphs and its first 120 questions as answerable rows
    (980 rows, 722 answerable; 1,371 passages)."""
    gold_path, corpus_path = write_squad2(out, root)
    gold = [json.loads(line) for line in gold_path.read_text(encoding="utf-8").splitlines()]
    corpus = [json.loads(line) for line in corpus_path.read_text(encoding="utf-8").splitlines()]
    for lang in ("en", "de", "es", "hi"):
        passages, questions = load_xquad(lang, root)
        corpus += [{"id": f"x-{lang}-{p.id}", "text": p.text} for p in passages]
        gold += [{"id": f"xq-{lang}-{qid}", "question": text, "gold": [f"x-{lang}-{pid}"],
                  "language": lang} for qid, text, pid in questions[:120]]  # fmt: skip
    for path, rows in ((gold_path, gold), (corpus_path, corpus)):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                        encoding="utf-8")  # fmt: skip
    return gold_path, corpus_path


@pytest.mark.slow
def test_the_trials_detector_is_uncalibrated_on_its_operating_point(
    shared_data: Path, tmp_path: Path
) -> None:
    """The trial saw AUC 0.845 [0.818, 0.872] and, at the threshold, FPR 0.783 and balanced
    accuracy 0.584 (its replay JSON), with the counts printed as facts and /v1/refusals
    saying trusted: true. Built the same way, the detector is now uncalibrated for its
    operating point (its AUC still reaches the floor), so its drift raises no alarm and
    harvest gets no calibrated out-of-scope verdicts.

    Since trial 11's F3 the figures are those of the detector as applied (the off-corpus rule
    by script counted in each fold): AUC 0.846, TPR 0.949, FPR 0.779, balanced accuracy
    0.585; the regression's threshold keeps 0.9515 of the answerable rows, so no row is left
    below the cutoff (trim 0: one more flagged row would cost recall below 0.95).

    Since the twenty-ninth session the gold rows asking about one passage do not see each
    other in the fit and its folds (:func:`~service.refusals.scope.coverage_groups`: the
    corpus has no ``doc``, so by passage, 281 groups of answerable rows; an adversarial
    unanswerable row goes with its nearest passage's): AUC 0.848, TPR 0.950, FPR 0.771,
    balanced accuracy 0.589 — within the bounds below, still uncalibrated.

    Since the forty-ninth session the fit reads the rows in canonical order and averages each
    row's held-out probability over 10 fold draws (repeated cross-validation): AUC 0.850,
    TPR 0.949, FPR 0.729, balanced accuracy 0.610, trim 0. The figures are not pinned to
    what the code printed: they are worked out again from the detector's cross-validated
    probabilities (scikit-learn's ``roc_auc_score``; the rates by counting rows at the
    threshold), the AUC is held to the trial's 0.845 ± 0.02, and the claim tested is the
    verdict — balanced accuracy, so worked out, under the 0.68 floor (review of
    s49-scope-cv)."""
    gold_path, corpus_path = _write_trial_gold(tmp_path, shared_data)
    gold, corpus = load_gold_set(gold_path), load_corpus(corpus_path)
    assert (len(gold), len(gold.answerable()), len(corpus.passages)) == (980, 722, 1371)
    analytics = build_analytics(load_settings(None).analytics, gold, corpus)
    quality = analytics.detector_quality["out_of_scope"]
    stage = next(s for s in analytics.stages if isinstance(s, EmbeddingScopeStage))
    labels = np.asarray(stage.detector.gold_answerable, dtype=bool)
    scores = np.asarray(stage.detector.cv_scores)  # held-out, 0 where the rule flagged it
    assert (int(labels.sum()), int((~labels).sum())) == (722, 258)
    assert quality.auc == pytest.approx(roc_auc_score(labels, scores), abs=1e-9)
    assert quality.auc == pytest.approx(0.845, abs=0.02) and quality.trusted(0.75)
    inside = scores >= quality.threshold  # (a flagged row's 0 is below any threshold > 0)
    assert quality.threshold > 0
    tpr, fpr = float(inside[labels].mean()), float(inside[~labels].mean())
    assert (quality.tpr, quality.fpr) == pytest.approx((tpr, fpr), abs=1e-12)
    balanced = (tpr + 1 - fpr) / 2
    assert quality.balanced_accuracy == pytest.approx(balanced, abs=1e-12)
    assert balanced < 0.68  # the floor: uncalibrated
    why = analytics.uncalibrated("out_of_scope")
    assert why is not None and why.startswith(f"out_of_scope balanced accuracy {balanced:.3f}")
    assert stage.calibrated is False
    assert analytics.drift is not None
    suppressed = analytics.drift.report()["suppressed_dimensions"]
    assert suppressed["out_of_scope"] == f"uncalibrated: {why}"
    assert detector_quality_report(analytics)["out_of_scope"]["trusted"] is False


def test_the_auc_is_rounded_once_wherever_it_is_shown() -> None:
    """The trial's AUC 0.8444888 was shown as 0.845 (rounded to 0.8445, then to 3 places)
    in one place and 0.844 in another; rounded once it is 0.844 everywhere."""
    from service.evaluation.detector_quality import DetectorQuality

    quality = DetectorQuality(0.8444888230367841, 0.8175, 0.872, 0.95, 722, 258, "cv")
    row = {**quality.at_threshold(0.1766, 0.9515, 0.7829).as_dict(), "trusted": False,
           "uncalibrated": "x"}  # fmt: skip
    assert quality_text(row).startswith("ROC AUC 0.844 [0.818, 0.872]")
    analytics = Analytics(stages=[], quality_floor=0.75, min_balanced_accuracy=0.68)
    analytics.detector_quality["out_of_scope"] = quality.at_threshold(0.1766, 0.9515, 0.7829)
    assert "ROC AUC 0.844)" in (analytics.uncalibrated("out_of_scope") or "")


def test_an_operating_point_on_ten_unanswerable_rows_is_judged_at_its_fpr_bound() -> None:
    """Seed 4 of ``benchmarks/bench_scope_coverage.py`` (thirtieth session): AUC 0.903, TPR
    0.941, 5 of 10 unanswerable rows let through (FPR 0.5): balanced accuracy 0.7205, above
    the 0.68 floor, while it caught 33 % of 400 live CLINC150 out-of-scope questions. By hand,
    the Wilson 95 % upper bound of 5/10 is (0.5 + 0.19208 + 1.96 √(0.025 + 0.009604)) /
    1.38416 = (0.69208 + 0.36460) / 1.38416 = 0.76341, so (0.941 + 1 − 0.76341) / 2 =
    0.58880: below the floor. With 100 unanswerable rows the bound is tighter: 50/100 gives
    (0.519208 + 1.96 √0.00259604) / 1.038416 = 0.59617 and 0.67242 (still below: half let
    through is no operating point), 20/100 gives (0.219208 + 0.080719) / 1.038416 = 0.28883
    and 0.82609 (trusted)."""
    base = DetectorQuality(auc=0.903, low=0.79, high=0.99, level=0.95, n_pos=34, n_neg=10)
    seed4 = base.at_threshold(0.5, tpr=0.941, fpr=0.5)
    assert seed4.balanced_accuracy == pytest.approx(0.7205)
    assert seed4.bounded_balanced_accuracy == pytest.approx(0.58880, abs=5e-5)
    assert not seed4.trusted(0.75, 0.68, 10)
    many = dataclasses.replace(base, n_neg=100)
    assert many.at_threshold(0.5, tpr=0.941, fpr=0.5).bounded_balanced_accuracy == (
        pytest.approx(0.67242, abs=5e-5)
    )
    fewer = many.at_threshold(0.5, tpr=0.941, fpr=0.2)
    assert fewer.bounded_balanced_accuracy == pytest.approx(0.82609, abs=5e-5)
    assert fewer.trusted(0.75, 0.68, 10)
    # the gauge reads the same bound
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    metrics.set_detector_quality({"out_of_scope": quality_gauges(seed4)}, floor=0.75,
                                 min_balanced_accuracy=0.68, min_class=10)  # fmt: skip
    assert registry.get_sample_value("goldwatch_detector_trusted",
                                     {"detector": "out_of_scope"}) == 0.0  # fmt: skip
