"""Trial 48 L1: accepting an off-topic row made the refreshed model fit a topic new since the
start (``topic-7``); the status page named it, Prometheus exported it as ``category="other"``
(goldwatch_gold_share_ratio 0.0172 = 1/58). A refresh's new topics now get their own label,
at most MAX_ADDED_TOPIC_LABELS over the process's life (the series stay bounded)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from service.telemetry.analytics import MAX_ADDED_TOPIC_LABELS, build_analytics_metrics


def _share(registry: CollectorRegistry, category: str) -> float | None:
    return registry.get_sample_value("goldwatch_gold_share_ratio",
                                     {"dimension": "topic", "category": category})  # fmt: skip


def test_a_topic_new_since_the_start_gets_its_own_label_not_other() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry, language_labels=("en",),
                                      topic_labels=("topic-0", "topic-1", "novel"))  # fmt: skip
    counts = {"topic": {"topic-0": 30, "topic-1": 27, "topic-7": 1}}  # 58 rows
    metrics.set_gold_shares(counts)
    assert _share(registry, "other") == pytest.approx(1 / 58)  # before: the trial's reading
    assert _share(registry, "topic-7") is None
    assert metrics.add_topic_labels(["topic-0", "topic-1", "topic-7", "novel"]) == ("topic-7",)
    metrics.set_gold_shares(counts)
    assert _share(registry, "topic-7") == pytest.approx(1 / 58)
    assert _share(registry, "other") is None  # the series of a label it no longer sets goes
    assert _share(registry, "topic-0") == pytest.approx(30 / 58)
    # live questions on it are counted under it too, from 0
    assert registry.get_sample_value("goldwatch_questions_by_topic_total",
                                     {"topic": "topic-7"}) == 0.0  # fmt: skip
    metrics.observe_annotations([{"language": "en", "topic": "topic-7"}])
    assert registry.get_sample_value("goldwatch_questions_by_topic_total",
                                     {"topic": "topic-7"}) == 1.0  # fmt: skip
    assert metrics.add_topic_labels(["topic-7"]) == ()  # already there


def test_the_labels_added_are_bounded() -> None:
    metrics = build_analytics_metrics(CollectorRegistry(), topic_labels=("topic-0",))
    start = len(metrics.topic_labels)
    first = metrics.add_topic_labels([f"topic-{i}" for i in range(1, 21)])
    second = metrics.add_topic_labels(
        [f"topic-{i}" for i in range(21, 21 + MAX_ADDED_TOPIC_LABELS)]
    )
    assert len(first) == 20 and len(second) == MAX_ADDED_TOPIC_LABELS - 20
    assert len(metrics.topic_labels) == start + MAX_ADDED_TOPIC_LABELS
    assert metrics.add_topic_labels(["topic-999"]) == ()
    metrics.observe_annotations([{"language": "en", "topic": "topic-999"}])
    assert metrics.questions_by_topic.labels(topic="other")._value.get() == 1.0
