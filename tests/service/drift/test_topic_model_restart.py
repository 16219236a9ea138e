"""The topic windows start afresh when the topic model changes (trial 46 F2, review s47-f2: a
topic born from accepted rows took a share of unchanged traffic and windows holding counts of
the model before alarmed), live and across a restart, by the drift stage's labellers
(:meth:`DriftStage.set_labeller`, as the out-of-scope detector's); an unchanged model keeps
them. A snapshot of a version before content ids (no topic labeller) restores no topic
windows under an unsupervised model (review s48-f2), and all of them under a supervised one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from service.drift.stage import DriftStage, Labeller
from service.events import QueryLogEvent
from service.pipeline import Batch

AT = datetime(2026, 12, 5, tzinfo=UTC)


def _stage(key: str | None, unsupervised: bool = False) -> DriftStage:
    told = {} if key is None else {"topic": Labeller(key, "", older_differs=unsupervised)}
    return DriftStage({"language": {"en": 10}, "topic": {"a": 5, "b": 5}}, min_count=5,
                      labellers=told)  # fmt: skip


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


#: the event-time watermark after 40 events a minute apart (the restart's ``timestamp``)
LAST = (AT + timedelta(minutes=39)).timestamp()


def test_a_new_topic_model_restarts_the_topic_windows_only() -> None:
    stage = _stage("model-1")
    _feed(stage, ["a", "b"] * 20)
    fresh = _counted(_stage("model-1"))
    language = stage.categorical["language"]
    assert _counted(stage) != fresh  # the windows hold the 40 events
    assert stage.set_labeller("topic", Labeller("model-1"), "unchanged") is False
    assert _counted(stage) != fresh and "windows_restarted" not in stage.report()["topic"]
    assert stage.set_labeller("topic", Labeller("model-2"), "the gold set changed") is True
    assert _counted(stage) == fresh  # as a first start's
    assert stage.categorical["language"] is language  # other dimensions keep theirs
    assert stage.report()["topic"]["windows_restarted"] == {
        "after_events": 40, "timestamp": LAST, "why": "the gold set changed"}  # fmt: skip
    assert stage.labellers["topic"].key == "model-2"


def test_a_stage_not_told_its_model_restarts_nothing() -> None:
    stage = _stage(None)
    _feed(stage, ["a", "b"] * 20)
    before = _counted(stage)
    assert stage.set_labeller("topic", Labeller("model-2"), "first told") is False
    assert _counted(stage) == before and stage.labellers["topic"].key == "model-2"


def test_a_snapshot_of_another_topic_model_restores_no_topic_windows() -> None:
    first = _stage("model-1")
    _feed(first, ["a", "b"] * 20)
    snapshot = first.state_snapshot()
    same = _stage("model-1")
    same.restore(snapshot)
    assert _counted(same) == _counted(first) and "topic" not in same.restarts
    other = _stage("model-2")
    other.restore(snapshot)
    assert _counted(other) == _counted(_stage("model-2"))
    assert other.categorical["language"].snapshot() == first.categorical["language"].snapshot()
    assert other.report()["topic"]["windows_restarted"] == {
        "after_events": 40,
        "timestamp": LAST,
        "why": "the topic model changed while the service was stopped: counts made under the "
        "two are not comparable",
    }
    # kept before topic labellers were saved (main: topics of all rows, numbered by history)
    older = {k: v for k, v in snapshot.items() if k not in ("labellers", "restarts")}
    upgraded = _stage("model-2", unsupervised=True)  # content ids: other topics
    upgraded.restore(older)
    assert _counted(upgraded) == _counted(_stage("model-2"))
    assert upgraded.restarts["topic"]["why"].startswith("the topic model changed with the upgrade")
    assert upgraded.categorical["language"].snapshot() == first.categorical["language"].snapshot()
    labelled = _stage("model-2")  # supervised: the labels are the topics, as before
    labelled.restore(older)
    assert _counted(labelled) == _counted(first) and "topic" not in labelled.restarts


def test_the_reports_say_the_topic_restart_where_users_look() -> None:
    """The status page's drift section and *What moved* row say a topic restart (review
    s48-f2: it was in the JSON only; the text report: tests/service/test_topic_ids_service.py)."""
    from service.drift.stage import restart_text
    from service.html.drift_section import drift_section
    from service.html.status import moved_section

    stage = _stage("model-1")
    _feed(stage, ["a", "b"] * 20)
    stage.set_labeller("topic", Labeller("model-2"), "the gold set changed")
    report = stage.report()
    said = restart_text("topic", report["topic"]["windows_restarted"])
    assert said.startswith("topic windows started afresh at 2026-12-05 00:39 UTC (after 40 "
                           "events): the gold set changed")  # fmt: skip
    assert said in str(drift_section(report))
    assert said in str(moved_section({"drift": report}))
