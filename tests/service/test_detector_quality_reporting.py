"""Every detector reports its measured quality next to its counts, and below
``analytics.quality_floor`` its counts are labelled uncalibrated and its drift raises no alarm
(issue 17): drift suppression, the Prometheus gauges, the text and HTML reports, settings."""

from __future__ import annotations

import copy
import html
import json
import types
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from service.drift.stage import DriftStage
from service.evaluation.detector_quality import DetectorQuality
from service.html import render_replay_html
from service.jobs.replay import quality_text, render_text
from service.runtime.analytics import Analytics, apply_quality_floor
from service.runtime.reports import detector_quality_report, novelty_report
from service.settings import load_settings
from service.telemetry import build_analytics_metrics
from service.topics.stage import TopicStage
from tests.service.html.samples import replay_report

START = datetime(2026, 1, 1, tzinfo=UTC)


def _rate_stream(drift: DriftStage, seed: int = 5) -> None:
    """3,000 events with 5 % out of scope, then 3,000 with 30 %, one every 10 s."""
    rng = np.random.default_rng(seed)
    for start in range(0, 6000, 100):
        events, notes = [], []
        for i in range(start, start + 100):
            share = 0.05 if i < 3000 else 0.30
            events.append(types.SimpleNamespace(timestamp=START + timedelta(seconds=10 * i)))
            out = bool(rng.random() < share)  # (every verdict stable: the drift dimension's)
            notes.append({"language": "en", "topic": "fees", "out_of_scope": out,
                          "out_of_scope_stable": out})  # fmt: skip
        drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))


def _drift() -> DriftStage:
    return DriftStage({"language": {"en": 1}, "topic": {"fees": 1}},
                      clock=lambda: (START + timedelta(days=30)).timestamp())  # fmt: skip


def test_an_out_of_scope_rise_alarms_when_calibrated() -> None:
    drift = _drift()
    _rate_stream(drift)
    found = [a for a in drift.alarms if a["dimension"] == "out_of_scope"]
    assert found and found[0]["state"] == "drift" and found[0]["after_events"] > 3000
    assert drift.report()["out_of_scope"]["state"] == "drift"


def test_a_suppressed_dimension_is_tested_but_raises_no_alarm_and_says_why() -> None:
    drift = _drift()
    drift.suppress("out_of_scope", "uncalibrated: out_of_scope ROC AUC 0.600")
    _rate_stream(drift)
    assert [a for a in drift.alarms if a["dimension"] == "out_of_scope"] == []
    report = drift.report()
    body = report["out_of_scope"]
    assert body["state"] == "uncalibrated" and body["tested_state"] == "drift"
    assert body["suppressed"] == "uncalibrated: out_of_scope ROC AUC 0.600"
    assert {t["state"] for t in body["comparisons"].values()} == {"uncalibrated"}
    assert report["suppressed_dimensions"] == {"out_of_scope": body["suppressed"]}
    assert drift.states()["out_of_scope"] == "uncalibrated"
    drift.suppress("out_of_scope", None)  # calibrated again: the test's own state shows
    assert drift.report()["out_of_scope"]["state"] == "drift"
    with pytest.raises(ValueError, match="unknown drift dimension"):
        drift.suppress("novelty", "x")


def _quality(auc: float, low: float, high: float) -> DetectorQuality:
    return DetectorQuality(auc, low, high, 0.95, 60, 20, "5-fold cross-validated")


def test_quality_floor_suppresses_only_uncalibrated_detectors() -> None:
    analytics = Analytics(stages=[], drift=_drift(), quality_floor=0.75)
    analytics.detector_quality["out_of_scope"] = _quality(0.596, 0.52, 0.67)
    assert analytics.uncalibrated("out_of_scope") == (
        "out_of_scope ROC AUC 0.596 [0.520, 0.670] is below the quality floor 0.75"
    )
    assert analytics.uncalibrated("novelty") == "novelty has no quality measurement"
    assert apply_quality_floor(analytics) == {"out_of_scope": "uncalibrated: out_of_scope ROC "
                                              "AUC 0.596 [0.520, 0.670] is below the quality "
                                              "floor 0.75"}  # fmt: skip
    analytics.detector_quality["out_of_scope"] = _quality(0.75, 0.7, 0.8)  # at the floor: ok
    assert analytics.uncalibrated("out_of_scope") is None
    assert apply_quality_floor(analytics) == {}
    rows = detector_quality_report(analytics)
    assert rows["out_of_scope"]["trusted"] is True and rows["out_of_scope"]["auc"] == 0.75


def test_gauges_export_auc_interval_and_trust() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    metrics.set_detector_quality(
        {"out_of_scope": _quality(0.6, 0.5, 0.7).as_dict(),
         "novelty": _quality(0.93, 0.9, 0.96).as_dict(),
         "made_up": _quality(0.9, 0.8, 1.0).as_dict()}, floor=0.75,
    )  # fmt: skip

    def get(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(f"goldwatch_{name}", labels)

    assert get("detector_auc", detector="out_of_scope") == 0.6
    assert get("detector_auc_bound", detector="out_of_scope", bound="low") == 0.5
    assert get("detector_auc_bound", detector="out_of_scope", bound="high") == 0.7
    assert get("detector_trusted", detector="out_of_scope") == 0.0
    assert get("detector_trusted", detector="novelty") == 1.0
    assert get("detector_auc", detector="made_up") is None  # bounded label set


def test_drift_gauge_shows_uncalibrated_not_drift() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    drift = _drift()
    drift.suppress("out_of_scope", "uncalibrated: test")
    _rate_stream(drift)
    metrics.observe_drift(drift.report())
    labels = {"dimension": "out_of_scope", "comparison": "baseline"}
    assert registry.get_sample_value("goldwatch_drift_state", {**labels, "state": "drift"}) == 0
    assert registry.get_sample_value(
        "goldwatch_drift_state", {**labels, "state": "uncalibrated"}) == 1  # fmt: skip


def _with_quality(auc: float, reason: str | None) -> dict[str, Any]:
    report = copy.deepcopy(replay_report(extras=False))
    quality = {**_quality(auc, auc - 0.05, auc + 0.05).as_dict(), "trusted": reason is None,
               "uncalibrated": reason}  # fmt: skip
    analytics = report["analytics"]
    analytics["out_of_scope"] |= {"quality": quality, "uncalibrated": reason}
    analytics["detector_quality"] = {"out_of_scope": quality}
    if reason:
        analytics["drift"]["suppressed_dimensions"] = {"out_of_scope": f"uncalibrated: {reason}"}
    return report


def test_text_report_labels_uncalibrated_counts_and_the_silenced_alarm() -> None:
    reason = "out_of_scope ROC AUC 0.596 [0.546, 0.646] is below the quality floor 0.75"
    text = render_text(_with_quality(0.596, reason))
    line = next(x for x in text.splitlines() if x.startswith("out of scope"))
    assert line == ("out of scope (UNCALIBRATED, not facts: " + reason + "; no alarm): "
                    "1/8 (12.5%); over-refusals 1, under-refusals 0")  # fmt: skip
    assert f"  out_of_scope raises no alarm: uncalibrated: {reason}" in text.splitlines()
    good = render_text(_with_quality(0.9, None))
    assert "out of scope: 1/8 (12.5%); over-refusals 1, under-refusals 0; detector ROC AUC " \
           "0.900 [0.850, 0.950]" in good  # fmt: skip
    assert "UNCALIBRATED" not in good
    assert quality_text(None) == "ROC AUC not measured"


@pytest.mark.slow
def test_html_report_labels_uncalibrated_counts() -> None:
    reason = "out_of_scope ROC AUC 0.596 [0.546, 0.646] is below the quality floor 0.75"
    page = render_replay_html(_with_quality(0.596, reason))
    assert "over-refusals (refused while in scope) (uncalibrated)" in page
    assert "out-of-scope questions (uncalibrated)" in page
    assert "UNCALIBRATED and not facts" in page
    assert "0.596 (0.546 … 0.646)" in page
    assert "out_of_scope: raises no alarm — uncalibrated" in page
    good = render_replay_html(_with_quality(0.9, None))
    assert "(uncalibrated)" not in good and "0.900 (0.850 … 0.950)" in good


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("quality_floor", 0.4, "quality_floor"), ("quality_floor", 1.2, "quality_floor"),
     ("scope_method", "magic", "scope_method"), ("scope_known_threshold", 0, "scope_known")],
)  # fmt: skip
def test_settings_reject_bad_values_naming_the_field(field: str, value: object,
                                                     message: str) -> None:  # fmt: skip
    with pytest.raises(ValueError, match=message):
        load_settings(None, analytics={field: value})


def test_settings_defaults() -> None:
    analytics = load_settings(None).analytics
    assert (analytics.quality_floor, analytics.scope_method, analytics.scope_known_threshold) \
        == (0.75, "embedding", 0.9)  # fmt: skip


def _topic_stream(drift: DriftStage, rising: str, seed: int = 9) -> None:
    """3,000 events of fees/exams (half each) with 5 % ``novel``, then 3,000 where ``rising``
    takes 30 %, one every 10 s."""
    rng = np.random.default_rng(seed)
    for start in range(0, 6000, 100):
        events, notes = [], []
        for i in range(start, start + 100):
            u = rng.random()
            if i >= 3000 and u < 0.30:
                topic = rising
            elif i < 3000 and u < 0.05:
                topic = "novel"
            else:
                topic = "fees" if rng.random() < 0.5 else "exams"
            events.append(types.SimpleNamespace(timestamp=START + timedelta(seconds=10 * i)))
            notes.append({"language": "en", "topic": topic})
        drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))


def _topic_drift() -> DriftStage:
    return DriftStage({"language": {"en": 1}},  # no gold topics: the baseline comparison only
                      clock=lambda: (START + timedelta(days=30)).timestamp())  # fmt: skip


@pytest.mark.parametrize(("rising", "silenced"), [("novel", True), ("visa", False)])
def test_an_uncalibrated_novelty_detector_silences_a_novel_share_rise_only(
    rising: str, silenced: bool
) -> None:
    loud = _topic_drift()
    _topic_stream(loud, rising)
    assert [a["rising"] for a in loud.alarms if a["state"] == "drift"][:1] == [[rising]]
    quiet = _topic_drift()
    quiet.suppress_category("topic", "novel", "uncalibrated: novelty ROC AUC 0.600")
    _topic_stream(quiet, rising)
    drifts = [a for a in quiet.alarms if a["state"] == "drift"]
    report = quiet.report()
    if silenced:
        assert drifts == []
        assert report["topic"]["state"] == "uncalibrated"
        assert report["topic"]["comparisons"]["baseline"]["tested_state"] == "drift"
        assert report["suppressed_dimensions"] == {
            "topic (novel share)": "uncalibrated: novelty ROC AUC 0.600"}  # fmt: skip
    else:  # another topic's rise is not the novelty detector's verdict: it still alarms
        assert drifts and drifts[0]["rising"] == ["visa"]
        assert report["topic"]["state"] == "drift"


def test_a_restart_that_reads_nothing_new_keeps_the_silenced_novel_rise_uncalibrated() -> None:
    """A ``--state`` rerun restores the drift stage and reads no new event: the topic stays
    ``uncalibrated`` (not ``drift`` with no comparisons and no alarm), the same report."""
    reason = "uncalibrated: novelty ROC AUC 0.600"
    first = _topic_drift()
    first.suppress_category("topic", "novel", reason)
    _topic_stream(first, "novel")
    before = first.report()
    assert before["topic"]["state"] == "uncalibrated"
    rerun = _topic_drift()
    rerun.suppress_category("topic", "novel", reason)  # the floor is applied at build time
    rerun.restore(json.loads(json.dumps(first.state_snapshot())))  # through the state store
    after = rerun.report()
    assert rerun.states() == first.states() == {
        "language": "ok", "topic": "uncalibrated", "refusal": "insufficient_data",
        "out_of_scope": "insufficient_data", "known_refusal": "insufficient_data",
        "known_miss": "insufficient_data", "terms": "ok"}  # fmt: skip
    assert after["topic"]["comparisons"]["baseline"]["tested_state"] == "drift"
    assert json.dumps(after, sort_keys=True) == json.dumps(before, sort_keys=True)


def test_apply_quality_floor_leaves_no_novel_share_to_suppress() -> None:
    """Below the floor the novelty detector labels nothing (trial 49 L4): the topic stage
    writes nearest topics, so there is no ``novel`` share to suppress, and the floor
    suppresses nothing either way; the stage's flag follows the detector."""
    stage = TopicStage(object())  # type: ignore[arg-type]
    analytics = Analytics(stages=[stage], drift=_topic_drift(), quality_floor=0.75)
    analytics.detector_quality["novelty"] = _quality(0.6, 0.55, 0.65)
    assert apply_quality_floor(analytics) == {} and stage.novelty_calibrated is False
    analytics.detector_quality["novelty"] = _quality(0.9, 0.85, 0.95)
    assert apply_quality_floor(analytics) == {} and stage.novelty_calibrated is True


NOVELTY_WHY = "novelty ROC AUC 0.720 [0.694, 0.747] is below the quality floor 0.75"


def _with_novel(uncalibrated: str | None) -> dict[str, Any]:
    """The sample report with 6 of 10 live questions ``novel`` (60 %), the novelty detector
    uncalibrated (``uncalibrated``: why) or trusted (``None``)."""
    report = copy.deepcopy(replay_report(extras=False))
    analytics = report["analytics"]
    analytics["topics"] = {"novel": 6, "fees": 2, "exams": 2}
    analytics["drift"]["topic"]["live_counts"] = dict(analytics["topics"])
    analytics["novelty"] = {"novel": 6, "share": 0.6, "quality": None,
                            "uncalibrated": uncalibrated, "off": None}  # fmt: skip
    return report


def test_novelty_report_labels_the_novel_share_with_the_detector_quality() -> None:
    analytics = Analytics(stages=[], drift=_topic_drift(), quality_floor=0.75)
    analytics.detector_quality["novelty"] = _quality(0.72, 0.694, 0.747)
    qualities = detector_quality_report(analytics)
    # below the floor the detector labels nothing (trial 49 L4): no share was measured
    report = novelty_report(analytics, {"topic-1": 100}, qualities)
    assert report == {"novel": 0, "share": None, "quality": qualities["novelty"],
                      "uncalibrated": NOVELTY_WHY, "off": None}  # fmt: skip
    analytics.detector_quality["novelty"] = _quality(0.9, 0.85, 0.95)
    trusted = novelty_report(analytics, {"novel": 58, "topic-1": 42},
                             detector_quality_report(analytics))  # fmt: skip
    assert trusted["uncalibrated"] is None and trusted["share"] == 0.58


def test_text_report_labels_an_uncalibrated_novel_share_next_to_it() -> None:
    line = next(x for x in render_text(_with_novel(NOVELTY_WHY)).splitlines()
                if x.startswith("topics:"))  # fmt: skip
    assert line == (f"topics: novel 60% (UNCALIBRATED, not facts: {NOVELTY_WHY}); "
                    "fees 20%; exams 20%")  # fmt: skip
    good = next(x for x in render_text(_with_novel(None)).splitlines()
                if x.startswith("topics:"))  # fmt: skip
    assert good == "topics: novel 60%; fees 20%; exams 20%"


@pytest.mark.slow
def test_html_report_labels_an_uncalibrated_novel_share() -> None:
    page = render_replay_html(_with_novel(NOVELTY_WHY))
    assert "<td>novel (uncalibrated)</td>" in page
    assert f"The novel share is UNCALIBRATED and not facts ({NOVELTY_WHY})" in page
    good = render_replay_html(_with_novel(None))
    assert "novel (uncalibrated)" not in good and "<td>novel</td>" in good


def test_the_topic_stage_applies_novel_verdicts_only_while_calibrated() -> None:
    """Below the floor a ``novel`` verdict is not applied: the question gets its nearest
    topic (trial 49 L4); at or above it, ``novel``. Other topics are as assigned."""
    from service.evaluation.detector_quality import DetectorQuality
    from service.pipeline import Batch
    from service.runtime.analytics import Analytics, apply_quality_floor
    from service.topics.model import NOVEL
    from service.topics.stage import TopicStage

    class Model:
        def assign_many(self, texts: list[str]) -> list[object]:
            from types import SimpleNamespace

            return [SimpleNamespace(topic=NOVEL if "x" in t else "fees",
                                    nearest="exams" if "x" in t else "fees", similarity=0.5)
                    for t in texts]  # fmt: skip

    stage = TopicStage(Model())  # type: ignore[arg-type]
    for auc, expected in ((0.70, "exams"), (0.80, NOVEL)):
        quality = DetectorQuality(auc, auc - 0.05, auc + 0.05, 0.95, 40, 40)
        analytics = Analytics(stages=[stage], detector_quality={"novelty": quality})
        apply_quality_floor(analytics)
        events = [SimpleEvent(f"e{i}", q) for i, q in enumerate(["xyz", "fee due"])]
        batch = Batch("file", events, [{}, {}])  # type: ignore[arg-type]
        stage.process(batch)
        assert [notes["topic"] for notes in batch.annotations] == [expected, "fees"]
        assert all("novelty_calibrated" not in notes for notes in batch.annotations)


class SimpleEvent:
    def __init__(self, event_id: str, question: str) -> None:
        self.event_id, self.question = event_id, question


# -- trial 2 (fresh user): an uncalibrated 'novel' and an absent out-of-scope detector -----


def test_drift_coverage_gaps_leave_an_uncalibrated_novel_out_with_why() -> None:
    """Gold topics fees 50, exams 50; live: novel 60, fees 20, exams 20 (100 events). novel:
    live 60 %, gold 0 % -> a gap (ratio inf, lower bound far above 2 points) when the share is
    a fact; suppressed, it is listed apart with why. fees and exams (20 % < 50 %) are none."""

    def fed(suppress: bool) -> dict[str, Any]:
        drift = DriftStage({"language": {"en": 1}, "topic": {"fees": 50, "exams": 50}},
                           clock=lambda: START.timestamp())  # fmt: skip
        if suppress:
            drift.suppress_category("topic", "novel", f"uncalibrated: {NOVELTY_WHY}")
        topics = ["novel"] * 60 + ["fees"] * 20 + ["exams"] * 20
        drift.process(types.SimpleNamespace(
            events=[types.SimpleNamespace(timestamp=START) for _ in topics],
            annotations=[{"language": "en", "topic": t} for t in topics], streams=None,
        ))  # fmt: skip
        return dict(drift.report()["topic"])

    fact = fed(False)
    assert [g["category"] for g in fact["coverage_gaps"]] == ["novel"]
    assert "coverage_gaps_left_out" not in fact
    quiet = fed(True)
    assert quiet["coverage_gaps"] == []
    assert quiet["coverage_gaps_left_out"] == {"novel": f"uncalibrated: {NOVELTY_WHY}"}


def _novel_rise(off: str | None = None) -> dict[str, Any]:
    """The novel sample with the drift view's gaps (exams: hand-made numbers), novel left out,
    and one alarm whose rising categories are novel (suppressed) and exams; ``off``: the
    out-of-scope detector is off for that reason (no counts)."""
    report = _with_novel(NOVELTY_WHY)
    why = f"uncalibrated: {NOVELTY_WHY}"
    drift = report["analytics"]["drift"]
    drift["topic"].update(
        suppressed_categories={"novel": why}, coverage_gaps_left_out={"novel": why},
        coverage_gaps=[{"category": "exams", "live_share": 0.2, "gold_share": 0.05,
                        "ratio": 4.0, "difference": 0.15, "ci_low": 0.03, "ci_high": 0.3}],
    )  # fmt: skip
    drift["alarms"] = [{"dimension": "topic", "comparison": "reference", "state": "drift",
                        "after_events": 9, "timestamp": 1795000000.0,
                        "rising": ["novel", "exams"], "falling": ["fees"]}]  # fmt: skip
    if off:
        report["analytics"]["out_of_scope"] = {
            "scored": 0, "out_of_scope": 0, "share": None, "over_refusals": 0,
            "under_refusals": 0, "calibration": None, "quality": None,
            "uncalibrated": "no out-of-scope detector", "off": off}  # fmt: skip
    return report


def test_text_drift_line_lists_an_uncalibrated_novel_rise_as_raising_no_alarm() -> None:
    lines = render_text(_novel_rise()).splitlines()
    # T0 = 1795000000 s = 2026-11-18 11:06:40 UTC
    assert (
        "  DRIFT  topic vs reference at 2026-11-18 11:06 UTC (after 9 events): rising exams, "
        "falling fees; "
        f"novel rising too raises no alarm (uncalibrated: {NOVELTY_WHY})"
    ) in lines


def test_text_report_says_out_of_scope_is_off_not_zero() -> None:
    why = "no gold set (the detector is calibrated on ...); set gold_set: to have it"
    lines = render_text(_novel_rise(off=why)).splitlines()
    assert f"out of scope: off: {why}" in lines
    drift = next(x for x in lines if x.startswith("drift now"))
    assert drift.endswith("refusal drift, out_of_scope off")
    assert not any("under-refusals" in x for x in lines)


@pytest.mark.slow
def test_html_lists_under_covered_categories_apart_from_an_uncalibrated_novel() -> None:
    page = render_replay_html(_novel_rise())
    assert "Coverage gaps" not in page
    assert "<h3>Under-covered by the gold set (drift view&#x27;s coverage gaps)</h3>" in page
    assert "harvest.min_gap" in page  # the drift view's rule says it is not harvest's
    # session 41: and what it counts, unlike the document shares
    assert ("Questions judged out of scope count in the language and topic gaps (their language "
            "and topic are their own: gold rows there, unanswerable ones among them, measure the "
            "scope detector and the refusals on them) but in no document share") in html.unescape(
        page)  # fmt: skip
    # exams: live 20.0 %, gold 5.0 %, 4.0×, +15.0 %, interval +3.0 % … +30.0 %
    assert ("<tr><td>exams</td><td>20.0%</td><td>5.0%</td><td>4.0×</td><td>+15.0%</td>"
            "<td>+3.0% … +30.0%</td></tr>") in page  # fmt: skip
    assert f"Left out: novel (uncalibrated: {NOVELTY_WHY}); its share is not a fact." in page
    assert ("rising: exams; falling: fees; rising, raises no alarm: novel (uncalibrated: "
            f"{NOVELTY_WHY})") in page  # fmt: skip


@pytest.mark.slow
def test_html_says_out_of_scope_is_off_not_zero() -> None:
    why = "no gold set; set gold_set: to have it"
    page = render_replay_html(_novel_rise(off=why))
    assert f"<td>out-of-scope, over- and under-refusals</td><td>off: {why}</td>" in page
    assert '<span class="badge off">off</span>' in page
    for zero in ("judged out of scope", "under-refusals (answered", "out-of-scope questions"):
        assert zero not in page, zero


def test_undefined_detector_quality_is_not_exported_as_nan() -> None:
    """A fourth trial's /metrics read ``..._operating_point_ratio{detector="novelty",
    rate="tpr"} NaN``: an undefined rate (or AUC) now has no series, one set earlier is
    removed, and trusted stays exported as 0."""
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)

    def get(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(f"goldwatch_{name}", labels)

    defined = {"auc": 0.9, "auc_low": 0.8, "auc_high": 0.95, "tpr": 0.7, "fpr": 0.1,
               "balanced_accuracy": 0.8}  # fmt: skip
    metrics.set_detector_quality({"novelty": defined}, floor=0.75)
    assert get("detector_operating_point_ratio", detector="novelty", rate="tpr") == 0.7
    undefined = {"auc": None, "auc_low": float("nan"), "auc_high": None, "tpr": float("nan"),
                 "fpr": float("inf"), "balanced_accuracy": None}  # fmt: skip
    metrics.set_detector_quality({"novelty": undefined, "out_of_scope": undefined}, floor=0.75)
    text = generate_latest(registry).decode()
    assert "NaN" not in text
    for detector in ("novelty", "out_of_scope"):
        assert get("detector_auc", detector=detector) is None
        assert get("detector_auc_bound", detector=detector, bound="low") is None
        for rate in ("tpr", "fpr", "balanced_accuracy"):
            assert get("detector_operating_point_ratio", detector=detector, rate=rate) is None
        assert get("detector_trusted", detector=detector) == 0.0


def test_the_trusted_gauge_and_the_report_ask_one_rule() -> None:
    """Over many qualities (AUC around the floor, class sizes around the minimum, operating
    points with a balanced accuracy around its floor, none at all), the gauge says what
    ``DetectorQuality.trusted`` says: one rule (``quality_trusted``), so a dashboard and a
    report cannot disagree."""
    import random

    from service.evaluation.detector_quality import quality_gauges

    rng = random.Random(7)
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    checked = {True: 0, False: 0}
    for _ in range(400):
        auc = rng.choice([float("nan"), rng.uniform(0.6, 0.95)])
        quality = DetectorQuality(auc, auc - 0.1, min(1.0, auc + 0.1), 0.95,
                                  rng.randint(3, 60), rng.randint(3, 20))  # fmt: skip
        if rng.random() < 0.7:
            quality = quality.at_threshold(0.5, rng.uniform(0.5, 1.0), rng.uniform(0.0, 0.5))
        floors = (0.75, rng.choice([0.0, 0.6, 0.68]), rng.choice([0, 10]))
        metrics.set_detector_quality({"out_of_scope": quality_gauges(quality)}, *floors)
        gauge = registry.get_sample_value("goldwatch_detector_trusted",
                                          {"detector": "out_of_scope"})  # fmt: skip
        assert gauge == float(quality.trusted(*floors)), quality
        checked[quality.trusted(*floors)] += 1
    assert min(checked.values()) >= 50  # both verdicts exercised
