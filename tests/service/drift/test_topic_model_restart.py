"""The topic windows start afresh when the topic model changes (trial 46 F2, review s47-f2: a
topic born from accepted rows took a share of unchanged traffic and windows holding counts of
the model before alarmed), live and across a restart; an unchanged model keeps them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from service.drift.stage import DriftStage
from service.events import QueryLogEvent
from service.pipeline import Batch

AT = datetime(2026, 12, 5, tzinfo=UTC)


def _stage(key: str | None) -> DriftStage:
    return DriftStage({"language": {"en": 10}, "topic": {"a": 5, "b": 5}}, min_count=5,
                      topic_model=key)  # fmt: skip


def _feed(stage: DriftStage, topics: list[str], start: int = 0) -> None:
    events = [QueryLogEvent(event_id=f"e-{start + i}", timestamp=AT + timedelta(minutes=start + i),
                            question=f"q {i}") for i in range(len(topics))]  # fmt: skip
    batch = Batch.of(events, "file")
    for notes, topic in zip(batch.annotations, topics, strict=True):
        notes["language"] = "en"
        notes["topic"] = topic
    stage.process(batch)


def _counted(stage: DriftStage) -> Any:
    return stage.categorical["topic"].snapshot()["windows"]


def test_a_new_topic_model_restarts_the_topic_windows_only() -> None:
    stage = _stage("model-1")
    _feed(stage, ["a", "b"] * 20)
    fresh = _counted(_stage("model-1"))
    language = stage.categorical["language"]
    assert _counted(stage) != fresh  # the windows hold the 40 events
    assert stage.set_topic_model("model-1", "unchanged") is False
    assert _counted(stage) != fresh and "windows_restarted" not in stage.report()["topic"]
    assert stage.set_topic_model("model-2", "the gold set changed") is True
    assert _counted(stage) == fresh  # as a first start's
    assert stage.categorical["language"] is language  # other dimensions keep theirs
    assert stage.report()["topic"]["windows_restarted"] == {
        "after_events": 40, "why": "the gold set changed"}  # fmt: skip
    assert stage.topic_model == "model-2"


def test_a_stage_not_told_its_model_restarts_nothing() -> None:
    stage = _stage(None)
    _feed(stage, ["a", "b"] * 20)
    before = _counted(stage)
    assert stage.set_topic_model("model-2", "first told") is False
    assert _counted(stage) == before and stage.topic_model == "model-2"


def test_a_snapshot_of_another_topic_model_restores_no_topic_windows() -> None:
    first = _stage("model-1")
    _feed(first, ["a", "b"] * 20)
    snapshot = first.state_snapshot()
    same = _stage("model-1")
    same.restore(snapshot)
    assert _counted(same) == _counted(first) and same.topic_restart is None
    other = _stage("model-2")
    other.restore(snapshot)
    assert _counted(other) == _counted(_stage("model-2"))
    assert other.categorical["language"].snapshot() == first.categorical["language"].snapshot()
    assert other.report()["topic"]["windows_restarted"] == {
        "after_events": 40,
        "why": "the topic model changed while the service was stopped",
    }
    older = {k: v for k, v in snapshot.items() if k != "topic_model"}  # kept before this
    upgraded = _stage("model-2")
    upgraded.restore(older)
    assert _counted(upgraded) == _counted(first) and upgraded.topic_restart is None
