"""Topic novelty is trusted only at a usable operating point, and below it the topic shares
say what they are (trial t40 HIGH 1: 30 gold rows on 7 SQuAD articles read "calibrated" at
ROC AUC 0.782 while at its threshold the detector caught 5 of 30 gold questions with their
topic held out, FPR 2 of 30, balanced accuracy 0.550; 63 % of pure off-topic questions were
counted under a Wikipedia article, a false topic coverage gap was exported and given to 135
suggestions).

Hand-worked: the Wilson 95 % upper bound of 2 of 30 (z = 1.959964, z² = 3.841459): centre
(p + z²/2n) / (1 + z²/n) = (0.066667 + 0.064024) / 1.128049 = 0.115856; half-width
z·√(p(1−p)/n + z²/4n²) / (1 + z²/n) = 1.959964 · √(0.0020741 + 0.0010671) / 1.128049 =
0.097379; bound 0.213235.
So the trial's operating point, TPR 5/30, reads (0.166667 + 1 − 0.213235) / 2 = 0.476716
at the bound, and the three-topic gold set of :mod:`test_kappa_gate` (weather, banking,
cooking: TPR 17/30 at the same FPR 2/30, balanced accuracy 0.750) reads (0.566667 + 1 −
0.213235) / 2 = 0.676716: under the default floor 0.68, over a floor of 0.6.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from service.cli import main
from service.drift.stage import DriftStage
from service.evaluation.detector_quality import DetectorQuality, bounded_balanced_accuracy
from service.runtime.analytics import NEAREST_TOPICS, Analytics
from service.topics.model import NOVEL
from tests.service.topics.test_kappa_gate import _replay as replay_kappa_log
from tests.service.topics.test_kappa_gate import _write

WILSON_2_OF_30 = 0.213235


def _novelty(tpr_of_30: int, fpr_of_30: int) -> DetectorQuality:
    """A novelty quality on 30 gold questions (8 topics), its operating point as given."""
    quality = DetectorQuality(0.782, 0.670, 0.884, 0.95, 30, 30, "leave-one-topic-out",
                              n_groups=8)  # fmt: skip
    return quality.at_threshold(0.12, tpr_of_30 / 30, fpr_of_30 / 30)


def test_the_trial_operating_point_is_uncalibrated_by_hand() -> None:
    trial = _novelty(5, 2)
    assert trial.balanced_accuracy == pytest.approx(0.55)
    assert trial.bounded_balanced_accuracy == pytest.approx(
        (5 / 30 + 1 - WILSON_2_OF_30) / 2, abs=1e-6
    )
    assert trial.bounded_balanced_accuracy == pytest.approx(0.476716, abs=1e-6)
    # its AUC clears the floor 0.75: before the fortieth session that made it "calibrated"
    assert trial.trusted(0.75) and not trial.trusted(0.75, 0.68)
    analytics = Analytics(stages=[], detector_quality={"novelty": trial}, quality_floor=0.75,
                          min_balanced_accuracy=0.68)  # fmt: skip
    why = analytics.uncalibrated("novelty")
    assert why == (
        "novelty balanced accuracy 0.550 at its threshold (gold questions read novel with "
        "their topic held out 5 of 30 (TPR 0.167); read novel with every topic kept 2 of 30 "
        "(FPR 0.067); ROC AUC 0.782), 0.477 with its false-positive rate at its Wilson 95 % "
        "upper bound over 30 questions, is below analytics.scope_min_balanced_accuracy 0.68"
    )
    assert analytics.topics_nearest() == NEAREST_TOPICS.format(why=why)
    # a detector catching 17 of 30 at the same FPR: 0.6767 at the bound, trusted over 0.6 only
    better = Analytics(stages=[], detector_quality={"novelty": _novelty(17, 2)},
                       min_balanced_accuracy=0.6)  # fmt: skip
    assert bounded_balanced_accuracy(17 / 30, 2 / 30, 30) == pytest.approx(0.676716, abs=1e-6)
    assert better.uncalibrated("novelty") is None and better.topics_nearest() is None
    # novelty off or not measured: nothing to say about the shares
    assert Analytics(stages=[], detector_quality={"novelty": trial}, min_balanced_accuracy=0.68,
                     novelty_off="off").topics_nearest() is None  # fmt: skip
    assert Analytics(stages=[]).topics_nearest() is None


def test_withheld_gaps_are_left_out_with_the_reason_and_the_alarms_stand() -> None:
    # gold 10 / 10; live a 80, b 20: a's share 0.8, its Wilson lower bound ~0.71 ≥ 2 × 0.5?
    # no (a gap needs live ≥ 2 × gold): gold a 5 of 20 (0.25), live 0.8 → a gap
    stage = DriftStage({"topic": {"a": 5, "b": 15}, "language": {"en": 20}})
    stage.live_counts["topic"].update({"a": 80, "b": 20})
    stage.live_counts["language"].update({"en": 100})
    assert [g["category"] for g in stage.report()["topic"]["coverage_gaps"]] == ["a"]
    stage.withhold_gaps("topic", "nearest topics")
    report = stage.report()
    assert report["topic"]["coverage_gaps"] == []
    assert report["topic"]["coverage_gaps_left_out"] == {"a": "nearest topics"}
    assert report["topic"]["categories_are"] == "nearest topics"
    assert "topic" not in report["suppressed_dimensions"]  # its alarms stand
    assert "categories_are" not in report["language"]
    stage.withhold_gaps("topic", None)
    assert [g["category"] for g in stage.report()["topic"]["coverage_gaps"]] == ["a"]
    with pytest.raises(ValueError, match="not a categorical"):
        stage.withhold_gaps("refusal", "x")


def _replay(tmp_path: Path, floor: float | None) -> tuple[str, dict]:
    return replay_kappa_log(tmp_path, rotated=False, min_balanced_accuracy=floor)


def test_below_the_floor_the_topics_are_nearest_topics_on_every_surface(tmp_path: Path) -> None:
    text, doc = _replay(tmp_path, None)  # the default floor 0.68
    quality = doc["analytics"]["novelty"]["quality"]
    # the operating point this gold set gives (17 of 30 held out, 2 of 30 kept), by hand above
    assert (quality["n_pos"], quality["n_neg"]) == (30, 30)
    assert round(quality["tpr"] * 30) == 17 and round(quality["fpr"] * 30) == 2
    why = doc["analytics"]["novelty"]["uncalibrated"]
    assert why is not None and "0.677 with its false-positive rate at its Wilson 95 %" in why
    nearest = NEAREST_TOPICS.format(why=why)
    topic = doc["analytics"]["drift"]["topic"]
    assert topic["categories_are"] == nearest
    # no topic coverage gap: weather 66.7 % live / 30.0 % gold is left out, with why
    assert topic["coverage_gaps"] == [] and topic["coverage_gaps_left_out"] == {"weather": nearest}
    assert (f"topics (NEAREST gold topic, not facts: {nearest}): weather 67%; banking 17%; "
            "cooking 17%") in text.splitlines()  # fmt: skip
    assert "topic weather left out (its share is not a fact: above)" in text
    # the change of the distribution still alarms, worded as nearest topics
    assert ("  DRIFT  topic vs reference at 2026-11-20 06:20 UTC (after 381 events) (by nearest "
            "gold topic): rising weather") in text  # fmt: skip
    assert "  DRIFT  topic vs baseline at 2026-11-20 05:40 UTC" in text
    # harvest: no suggestion flagged for a topic's coverage gap
    candidates = doc["gold_candidates"]
    assert not any(g.get("dimension") == "topic" for g in candidates.get("in_gaps") or [])
    assert not any(s.get("gap_dimension") == "topic" for s in candidates.get("top") or [])
    check = CliRunner().invoke(
        main, ["config", "check", "--config", str(tmp_path / "goldwatch.yaml")]
    )
    assert check.exit_code == 0, check.output
    assert (f"topic shares are by NEAREST gold topic (not facts; no topic coverage gap; topic "
            f"drift still alarms on a change of the distribution): {nearest}"
            in check.output)  # fmt: skip


def test_above_the_floor_the_topics_and_their_gap_are_facts(tmp_path: Path) -> None:
    text, doc = _replay(tmp_path, 0.6)  # 0.677 at the bound clears 0.6
    assert doc["analytics"]["novelty"]["uncalibrated"] is None
    topic = doc["analytics"]["drift"]["topic"]
    assert "categories_are" not in topic
    assert [g["category"] for g in topic["coverage_gaps"]] == ["weather"]
    assert "topics: weather 67%; banking 17%; cooking 17%" in text.splitlines()
    assert "topic weather 66.7% live / 30.0% gold" in text
    assert "(by nearest gold topic)" not in text


def test_a_gold_refresh_that_makes_novelty_uncalibrated_zeroes_the_topic_gap_gauge(
    tmp_path: Path,
) -> None:
    """Serve: a hand-edited gold file refits the topic model; when the refit's novelty falls
    under the floor, the exported topic coverage gap goes to 0 at once, not at the next batch
    (an idle service kept ``goldwatch_coverage_gap_ratio{dimension="topic"}`` at its old
    value, which the CoverageGap alert reads). The three-topic gold set of
    :mod:`test_kappa_gate` at a floor of 0.6: all 30 rows read 0.677 at the bound
    (calibrated); its first 6 rows of each topic (18 rows) read TPR 8 of 18 at FPR 1 of 18,
    0.593 at the bound (uncalibrated), the topic names and the kappa gate unchanged."""
    import threading

    from prometheus_client import CollectorRegistry

    from service.runtime.process import Runtime
    from service.settings import load_settings

    _write(tmp_path, rotated=False)
    gold = tmp_path / "gold.jsonl"
    rows = gold.read_text(encoding="utf-8").splitlines()
    events = tmp_path / "events.jsonl"
    events.write_text("", encoding="utf-8")
    settings = load_settings(gold_set=gold, corpus=tmp_path / "corpus.jsonl",
                             source={"kind": "file", "path": events},
                             analytics={"scope_min_balanced_accuracy": 0.6})  # fmt: skip
    runtime = Runtime(settings, registry=CollectorRegistry())
    labels = {"dimension": "topic", "category": "weather"}
    try:
        analytics = runtime.live.analytics
        assert analytics.topics_nearest() is None
        assert analytics.drift is not None
        analytics.drift.live_counts["topic"].update({"weather": 80, "banking": 10, "cooking": 10})
        runtime.live.export_drift()
        assert (runtime.registry.get_sample_value("goldwatch_coverage_gap_ratio", labels) or 0) > 0
        kept = [r for r in rows if int(json.loads(r)["id"][3:]) < 6]
        gold.write_text("".join(r + "\n" for r in kept), encoding="utf-8")
        runtime.gold_accepted(None)
        for thread in [t for t in threading.enumerate() if t.name == "goldwatch-gold-refresh"]:
            thread.join(120)
        assert runtime.gold_refresh_error is None and runtime.gold_refreshes == 1
        assert analytics.topics_nearest() is not None and analytics.topic_uncalibrated() is None
        # no batch since the refresh: the gauge follows the refit all the same
        assert runtime.registry.get_sample_value("goldwatch_coverage_gap_ratio", labels) == 0.0
    finally:
        runtime.stop()


def test_a_gold_refresh_that_makes_novelty_uncalibrated_removes_the_novel_shadow_series(
    tmp_path: Path,
) -> None:
    """Serve: the refresh of the test above (novelty calibrated at the start, uncalibrated
    after) removes ``goldwatch_shadow_agreement_by_topic{topic="novel"}`` with the other
    ``novel`` series: it kept its old observations, flat (session 51 brief N item 2). A
    question observed under ``novel`` afterwards is bounded to ``other``."""
    import threading

    from prometheus_client import CollectorRegistry

    from service.runtime.process import Runtime
    from service.settings import load_settings

    _write(tmp_path, rotated=False)
    gold = tmp_path / "gold.jsonl"
    rows = gold.read_text(encoding="utf-8").splitlines()
    events = tmp_path / "events.jsonl"
    events.write_text("", encoding="utf-8")
    # its own state file: the default path is shared with any other runtime the run starts
    settings = load_settings(gold_set=gold, corpus=tmp_path / "corpus.jsonl",
                             source={"kind": "file", "path": events},
                             state={"path": tmp_path / "state.sqlite"},
                             analytics={"scope_min_balanced_accuracy": 0.6})  # fmt: skip
    runtime = Runtime(settings, registry=CollectorRegistry())
    name = "goldwatch_shadow_agreement_by_topic"
    novel = {"retriever": "production", "topic": NOVEL, "measure": "rbo"}
    other = {**novel, "topic": "other"}
    try:
        shadow = runtime.live.shadow_metrics
        assert shadow is not None and NOVEL in shadow.topic_labels
        row = {"candidate": "production", "measure": "rbo", "label": NOVEL, "value": 0.25}
        shadow.observe_shadow({"by_topic": [row, {**row, "value": 0.5}]})
        get = runtime.registry.get_sample_value
        assert (get(f"{name}_count", novel), get(f"{name}_sum", novel)) == (2.0, 0.75)
        kept = [r for r in rows if int(json.loads(r)["id"][3:]) < 6]
        gold.write_text("".join(r + "\n" for r in kept), encoding="utf-8")
        runtime.gold_accepted(None)
        for thread in [t for t in threading.enumerate() if t.name == "goldwatch-gold-refresh"]:
            thread.join(120)
        assert runtime.gold_refresh_error is None and runtime.gold_refreshes == 1
        assert runtime.live.analytics.topics_nearest() is not None
        assert NOVEL not in shadow.topic_labels
        assert get(f"{name}_count", novel) is None and get(f"{name}_sum", novel) is None
        shadow.observe_shadow({"by_topic": [{**row, "value": 1.0}]})
        assert (get(f"{name}_count", other), get(f"{name}_sum", other)) == (1.0, 1.0)
        assert get(f"{name}_count", novel) is None
    finally:
        runtime.stop()
