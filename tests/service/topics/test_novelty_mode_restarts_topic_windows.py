"""The labelling mode of the novelty verdict is part of the topic labeller's key (review of
s49-novel): counts made while ``novel`` was a category and counts made under nearest topics
(the detector uncalibrated: it labels nothing) are not comparable, so the topic windows
restart when the mode changes.

(a) A state written while ``novel`` was counted (by main, or by this version with the
    detector calibrated: the same labels under the same bare key), resumed with the detector
    uncalibrated, kept its ``novel`` counts in the frozen baseline: the ``novel`` share fell
    to 0 and the demo alarmed at event 1,311 (``falling: ["novel"]``) where a fresh replay of
    the same 1,400 events raises nothing.
(b) A flip of the detector's calibration (a gold refresh, a changed floor) with the topics
    unchanged restarted nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.demo import demo_data, demo_path
from service.jobs.replay import run_replay
from service.runtime.analytics import NEAREST_KEY, apply_gold_references, apply_quality_floor
from service.settings import Settings, load_settings
from service.telemetry import build_analytics_metrics
from service.topics.model import NOVEL
from service.topics.stage import TopicStage
from tests.service.topics.test_uncalibrated_novelty_labels_nothing import _runtime


def _demo(calibrated: bool) -> Settings:
    """The demo's settings; ``calibrated``: floors low enough that its novelty detector
    (uncalibrated at the demo's floors) labels questions ``novel``, as main's code did."""
    settings = load_settings(demo_path("goldwatch.yaml")).model_copy(update=demo_data())
    if not calibrated:
        return settings
    relaxed = settings.analytics.model_copy(
        update={"quality_floor": 0.5, "scope_min_balanced_accuracy": 0.5}
    )
    return settings.model_copy(update={"analytics": relaxed})


def _alarms(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(a["dimension"], a["comparison"], a["state"])
            for a in doc["analytics"]["drift"]["alarms"]]  # fmt: skip


@pytest.mark.slow
def test_a_state_counted_with_novel_resumed_under_nearest_topics_restarts(tmp_path: Path) -> None:
    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    first, second, both = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "ab.jsonl"
    first.write_text("".join(lines[:700]), encoding="utf-8")
    second.write_text("".join(lines[700:1400]), encoding="utf-8")
    both.write_text("".join(lines[:1400]), encoding="utf-8")
    state = tmp_path / "state.db"
    # the first 700 events counted with novel (main's labels, main's bare labeller key)
    old = run_replay(_demo(True), first, state, tmp_path / "a.dlq")
    assert old["analytics"]["topics"].get(NOVEL, 0) > 0
    assert old["analytics"]["novelty"]["uncalibrated"] is None
    resumed = run_replay(_demo(False), second, state, tmp_path / "b.dlq")
    fresh = run_replay(_demo(False), both, None, tmp_path / "ab.dlq")
    assert resumed["analytics"]["novelty"]["uncalibrated"] is not None
    topic = resumed["analytics"]["drift"]["topic"]
    restarted = topic["windows_restarted"]
    assert restarted["after_events"] == 700
    assert "nearest topics (novelty uncalibrated)" in restarted["why"]
    # no alarm on the fall of novel, none a fresh replay would not raise (the cumulative
    # live_counts keep the 700 events counted before, novel among them: history, not windows)
    assert topic["live_counts"].get(NOVEL, 0) == old["analytics"]["topics"][NOVEL]
    assert all(NOVEL not in a.get("falling", []) for a in resumed["analytics"]["drift"]["alarms"])
    assert set(_alarms(resumed)) <= set(_alarms(fresh))
    # resumed again under the same mode: kept (no second restart)
    again = run_replay(_demo(False), second, state, tmp_path / "c.dlq")
    assert again["analytics"]["drift"]["topic"]["windows_restarted"] == restarted


def test_a_calibration_flip_restarts_the_topic_windows(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path / "r", 0.6)
    try:
        analytics = runtime.live.analytics
        drift = analytics.drift
        stage = next(s for s in analytics.stages if isinstance(s, TopicStage))
        key = stage.model.assignment_key()
        assert stage.novelty_calibrated and drift.labellers["topic"].key == key
        assert "topic" not in drift.restarts
        # the floor rises above the detector's 0.677: it labels nothing from now on
        analytics.min_balanced_accuracy = 0.68
        apply_quality_floor(analytics)
        assert not stage.novelty_calibrated
        assert drift.labellers["topic"].key == key + NEAREST_KEY
        why = drift.restarts["topic"]["why"]
        assert why.startswith("the novelty detector is uncalibrated now (novelty balanced")
        apply_quality_floor(analytics)  # the same mode again: no second restart
        assert drift.restarts["topic"]["why"] == why
        drift.restarts.pop("topic")
        apply_quality_floor(analytics)
        assert "topic" not in drift.restarts
        # a gold refresh with the same topics that leaves it calibrated again
        analytics.min_balanced_accuracy = 0.6
        apply_gold_references(analytics, stage.model, {})
        assert stage.novelty_calibrated and drift.labellers["topic"].key == key
        assert drift.restarts["topic"]["why"].startswith("the novelty detector is calibrated now")
    finally:
        runtime.stop()


def test_the_novel_label_and_its_series_go_when_novelty_stops_labelling() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(
        registry, language_labels=("en",), topic_labels=("a", "b", NOVEL)
    )
    metrics.questions_by_topic.labels(topic=NOVEL).inc(3)
    metrics.set_gold_shares({"topic": {"a": 2, "b": 1, NOVEL: 1}})
    novel_share = {"dimension": "topic", "category": NOVEL}
    assert registry.get_sample_value("goldwatch_gold_share_ratio", novel_share) == 0.25
    metrics.coverage_gap.labels(dimension="topic", category=NOVEL).set(0.0265)
    metrics.coverage_gap.labels(dimension="topic", category="a").set(0.01)
    assert metrics.remove_topic_label(NOVEL)
    assert metrics.topic_labels == ("a", "b", "und", "other")
    assert not metrics.remove_topic_label(NOVEL)
    assert registry.get_sample_value("goldwatch_questions_by_topic_total", {"topic": NOVEL}) is None
    assert registry.get_sample_value("goldwatch_gold_share_ratio", novel_share) is None
    # a gap gauge no later report sets would keep drawing its last value (review of s50-novel)
    assert registry.get_sample_value("goldwatch_coverage_gap_ratio", novel_share) is None
    gap_a = {"dimension": "topic", "category": "a"}
    assert registry.get_sample_value("goldwatch_coverage_gap_ratio", gap_a) == 0.01
    metrics.set_gold_shares({"topic": {"a": 2, "b": 2}})
    assert registry.get_sample_value("goldwatch_gold_share_ratio", novel_share) is None
    # calibrated again: the label returns, its counter from 0
    assert metrics.add_topic_labels(["a", "b", NOVEL]) == (NOVEL,)
    assert registry.get_sample_value("goldwatch_questions_by_topic_total", {"topic": NOVEL}) == 0
