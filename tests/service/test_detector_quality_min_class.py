"""A detector's quality measured on a handful of gold rows is no calibration (trial user4,
high severity): the out-of-scope detector read "calibrated" at ROC AUC 0.991 [0.960, 1.000]
measured on 5 unanswerable gold questions, while on the trial's traffic it was at chance
(3.3 % of 300 BANKING77 questions against a news corpus flagged out of scope, 9.3 % of 300
answerable MultiHop questions). Below ``analytics.quality_min_class`` questions in a class a
detector is uncalibrated, with the reason in the user's words, and every AUC is shown with
the gold questions it is measured on.

The unit tests build the quality by hand; the real-data ones (slow) build the service on the
MultiHop-RAG sample (``benchmarks.goldsets.write_multihop``: 429 answerable, 71 unanswerable
rows) with 45 answerable and 5 or 12 unanswerable gold rows, as the trial's gold set had.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from prometheus_client import CollectorRegistry

from service.evaluation.detector_quality import DetectorQuality, measured_on, too_few
from service.html import render_replay_html
from service.jobs.replay import quality_text, render_text
from service.refusals.scope import CALIBRATION_LIMIT
from service.runtime.analytics import Analytics, apply_quality_floor
from service.runtime.reports import detector_quality_report
from service.settings import load_settings
from service.telemetry import build_analytics_metrics
from tests.service.html.samples import replay_report

#: The trial's out-of-scope quality: 45 answerable (positives) vs 5 unanswerable gold rows.
TRIAL = DetectorQuality(0.9911, 0.96, 1.0, 0.95, 45, 5, "5-fold cross-validated")
TRIAL_REASON = ("out_of_scope ROC AUC 0.991 [0.960, 1.000] is measured on only 5 unanswerable "
                "gold questions; needs at least 10 (analytics.quality_min_class)")  # fmt: skip


def _analytics(quality: DetectorQuality, detector: str = "out_of_scope") -> Analytics:
    """Analytics as ``build_analytics`` leaves them with the default settings."""
    settings = load_settings(None).analytics
    analytics = Analytics(stages=[], quality_floor=settings.quality_floor,
                          min_balanced_accuracy=settings.scope_min_balanced_accuracy,
                          quality_min_class=settings.quality_min_class)  # fmt: skip
    analytics.detector_quality[detector] = quality
    return analytics


def test_the_default_minimum_class_is_10() -> None:
    assert load_settings(None).analytics.quality_min_class == 10
    with pytest.raises(ValueError, match="quality_min_class"):
        load_settings(None, analytics={"quality_min_class": 1})


def test_five_unanswerable_gold_questions_make_the_detector_uncalibrated_saying_so() -> None:
    analytics = _analytics(TRIAL)
    assert analytics.uncalibrated("out_of_scope") == TRIAL_REASON
    assert detector_quality_report(analytics)["out_of_scope"]["trusted"] is False
    assert not TRIAL.trusted(0.75, 0.68, min_class=10) and TRIAL.trusted(0.75, 0.68)


@pytest.mark.parametrize("unanswerable", [10, 100])
def test_ten_or_more_unanswerable_gold_questions_judge_as_before(unanswerable: int) -> None:
    good = DetectorQuality(0.9911, 0.96, 1.0, 0.95, 45, unanswerable)
    assert _analytics(good).uncalibrated("out_of_scope") is None
    poor = DetectorQuality(0.596, 0.52, 0.67, 0.95, 45, unanswerable)
    assert _analytics(poor).uncalibrated("out_of_scope") == (
        "out_of_scope ROC AUC 0.596 [0.520, 0.670] is below the quality floor 0.75"
    )


def test_the_smaller_class_is_named_whichever_it_is() -> None:
    few_answerable = DetectorQuality(0.9, 0.8, 1.0, 0.95, 7, 40)
    assert too_few("out_of_scope", few_answerable, 10) == (
        "measured on only 7 answerable gold questions; needs at least 10"
    )
    novelty = DetectorQuality(0.9, 0.8, 1.0, 0.95, 8, 8)  # 8 gold questions scored twice
    assert _analytics(novelty, "novelty").uncalibrated("novelty") == (
        "novelty ROC AUC 0.900 [0.800, 1.000] is measured on only 8 gold questions; needs at "
        "least 10 (analytics.quality_min_class)")  # fmt: skip
    assert measured_on("novelty", novelty) == "8 gold questions, each topic held out in turn"


def test_a_too_small_measurement_silences_the_out_of_scope_drift() -> None:
    from service.drift.stage import DriftStage

    analytics = _analytics(TRIAL)
    analytics.drift = DriftStage({"language": {"en": 1}, "topic": {"fees": 1}})
    assert apply_quality_floor(analytics) == {"out_of_scope": f"uncalibrated: {TRIAL_REASON}"}


def test_the_trusted_gauge_needs_the_minimum_class() -> None:
    from service.evaluation.detector_quality import quality_gauges

    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    enough = DetectorQuality(0.9911, 0.96, 1.0, 0.95, 45, 10)
    for quality, trusted in ((TRIAL, 0.0), (enough, 1.0)):
        metrics.set_detector_quality({"out_of_scope": quality_gauges(quality)}, 0.75, 0.68, 10)
        assert registry.get_sample_value("goldwatch_detector_trusted",
                                         {"detector": "out_of_scope"}) == trusted  # fmt: skip


def _report(quality: DetectorQuality, reason: str | None) -> dict[str, Any]:
    """The sample replay report with this out-of-scope quality, as the report builds it."""
    report = copy.deepcopy(replay_report(extras=False))
    entry = {**quality.as_dict(), "measured_on": measured_on("out_of_scope", quality),
             "trusted": reason is None, "uncalibrated": reason}  # fmt: skip
    analytics = report["analytics"]
    analytics["out_of_scope"] |= {"quality": entry, "uncalibrated": reason}
    analytics["detector_quality"] = {"out_of_scope": entry}
    analytics["quality_min_class"] = 10
    if reason:
        analytics["drift"]["suppressed_dimensions"] = {"out_of_scope": f"uncalibrated: {reason}"}
    return report


def test_the_text_report_shows_n_next_to_the_auc_and_the_calibration_limit() -> None:
    calibrated = DetectorQuality(0.9911, 0.96, 1.0, 0.95, 45, 12)
    lines = render_text(_report(calibrated, None)).splitlines()
    line = next(x for x in lines if x.startswith("out of scope"))
    assert line.endswith("; detector ROC AUC 0.991 [0.960, 1.000] on 12 unanswerable / 45 "
                         "answerable gold questions")  # fmt: skip
    assert lines[lines.index(line) + 1] == f"  out-of-scope calibration: {CALIBRATION_LIMIT}"
    lines = render_text(_report(TRIAL, TRIAL_REASON)).splitlines()
    line = next(x for x in lines if x.startswith("out of scope"))
    assert line == (f"out of scope (UNCALIBRATED, not facts: {TRIAL_REASON}; no alarm): 1/8 "
                    "(12.5%); over-refusals 1, under-refusals 0")  # fmt: skip
    assert quality_text({"auc": 0.9, "measured_on": "12 unanswerable / 45 answerable gold "
                         "questions"}) == ("ROC AUC 0.900 on 12 unanswerable / 45 answerable "
                                           "gold questions")  # fmt: skip


@pytest.mark.slow
def test_the_html_report_shows_n_next_to_the_auc_and_the_calibration_limit() -> None:
    calibrated = DetectorQuality(0.9911, 0.96, 1.0, 0.95, 45, 12)
    page = render_replay_html(_report(calibrated, None))
    assert "0.991 (0.960 … 1.000) on 12 unanswerable / 45 answerable gold questions" in page
    assert "each class holds at least 10 gold questions" in page
    assert CALIBRATION_LIMIT.replace("'", "&#x27;") in page
    page = render_replay_html(_report(TRIAL, TRIAL_REASON))
    assert "0.991 (0.960 … 1.000) on 5 unanswerable / 45 answerable gold questions" in page
    assert "over-refusals (refused while in scope) (uncalibrated)" in page


# -- on real data: the service built on a MultiHop-RAG gold set ------------------------------


def _multihop(tmp_path: Path, unanswerable: int, answerable: int = 45) -> Path:
    """A configuration whose gold set is the sample's first ``answerable`` answerable and
    first ``unanswerable`` unanswerable rows, over the whole 326-passage corpus."""
    from benchmarks.goldsets import write_multihop

    gold, corpus = write_multihop(tmp_path / "all")
    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines()]
    picked = ([r for r in rows if r["gold"]][:answerable]
              + [r for r in rows if not r["gold"]][:unanswerable])  # fmt: skip
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in picked),
                                         encoding="utf-8")  # fmt: skip
    events = [{"event_id": f"e{i}", "timestamp": 1795900000 + 60 * i, "question": r["question"],
               "answer": {"text": "x", "refused": i % 2 == 0}}
              for i, r in enumerate(picked[::5])]  # fmt: skip
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events),
                                      encoding="utf-8")  # fmt: skip
    config = tmp_path / "goldwatch.yaml"
    config.write_text(f"gold_set: gold.jsonl\ncorpus: {corpus}\n"
                      "source: {kind: file, path: q.jsonl}\n", encoding="utf-8")  # fmt: skip
    return config


@pytest.mark.slow
def test_a_multihop_gold_set_with_5_unanswerables_is_uncalibrated_everywhere(
    tmp_path: Path,
) -> None:
    from service.jobs.replay import run_replay
    from service.runtime.live import build_live

    config = _multihop(tmp_path, unanswerable=5)
    settings = load_settings(config)
    registry = CollectorRegistry()
    live = build_live(settings, registry)
    try:
        quality = live.analytics.detector_quality["out_of_scope"]
        assert (quality.n_pos, quality.n_neg) == (45, 5)
        reason = (f"out_of_scope ROC AUC {quality.auc:.3f} [{quality.low:.3f}, "
                  f"{quality.high:.3f}] is measured on only 5 unanswerable gold questions; "
                  "needs at least 10 (analytics.quality_min_class)")  # fmt: skip
        assert live.analytics.uncalibrated("out_of_scope") == reason
        assert registry.get_sample_value("goldwatch_detector_trusted",
                                         {"detector": "out_of_scope"}) == 0.0  # fmt: skip
    finally:
        live.close()
    report = run_replay(settings, tmp_path / "q.jsonl", None, tmp_path / "dlq.jsonl")
    scope = report["analytics"]["out_of_scope"]
    assert scope["uncalibrated"] == reason and scope["quality"]["trusted"] is False
    assert scope["quality"]["measured_on"] == "5 unanswerable / 45 answerable gold questions"
    assert report["analytics"]["drift"]["out_of_scope"]["state"] == "uncalibrated"
    assert "UNCALIBRATED, not facts: " + reason in render_text(report)
    result = CliRunner().invoke(main_cli(), ["config", "check", "--config", str(config)])
    assert result.exit_code == 0, result.stderr
    assert ("#   out_of_scope detector UNCALIBRATED (its counts are not facts and raise no "
            f"drift alarm): {reason}") in result.stderr.splitlines()  # fmt: skip


@pytest.mark.slow
def test_a_multihop_gold_set_with_12_unanswerables_is_judged_as_before(tmp_path: Path) -> None:
    from service.runtime.live import build_live

    config = _multihop(tmp_path, unanswerable=12)
    live = build_live(load_settings(config), CollectorRegistry())
    try:
        analytics = live.analytics
        quality = analytics.detector_quality["out_of_scope"]
        assert (quality.n_pos, quality.n_neg) == (45, 12)
        before = copy.copy(analytics)
        before.quality_min_class = 0  # the judgement without a minimum class
        assert analytics.uncalibrated("out_of_scope") == before.uncalibrated("out_of_scope")
    finally:
        live.close()
    result = CliRunner().invoke(main_cli(), ["config", "check", "--config", str(config)])
    assert result.exit_code == 0, result.stderr
    line = next(x for x in result.stderr.splitlines() if "out_of_scope detector" in x)
    assert "12 unanswerable / 45 answerable gold questions" in line


def main_cli() -> Any:
    from service.cli import main

    return main
