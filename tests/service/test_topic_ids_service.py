"""Topic ids and labels inside the service: a restart (ids read back from the state store) and
an accepted gold question (the refit) keep every topic's id; labels reach the replay report
(JSON, text, HTML) and the ``questions_by_topic`` help text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.data.goldset import load_gold_set
from service.html.replay_page import render_replay_html
from service.jobs.replay import render_text, run_replay
from service.runtime.analytics import (
    TOPIC_IDENTITY_KEY,
    apply_gold_references,
    gold_references,
)
from service.runtime.live import build_live
from service.settings import load_settings
from service.state import StateStore
from service.telemetry import build_analytics_metrics
from tests.service.test_topics import BUSES, EXAMS, FEES

PROBES = ["hostel fee refund", "exam results date", "bus to the campus", "tuition fee"]


def _gold(path: Path, questions: list[str], accepted: tuple[str, ...] | list[str] = ()) -> Path:
    """Write the gold set: ``questions`` as the user wrote them, then ``accepted`` as an accept
    appends them (with a ``harvest_id``)."""
    with path.open("w", encoding="utf-8") as handle:
        for i, question in enumerate([*questions, *accepted]):
            row = {"id": f"q-{i}", "question": question, "gold": [f"p-{i}"], "language": "en"}
            if i >= len(questions):
                row["harvest_id"] = f"c-{i}"
            handle.write(json.dumps(row) + "\n")
    return path


def _settings(gold: Path, **analytics: Any) -> Any:
    return load_settings(None, gold_set=gold, analytics={"scope_retriever": None, **analytics})


def _topics_of(live: Any, texts: list[str]) -> list[str]:
    stage = next(st for st in live.analytics.stages if st.name == "topic")
    return [a.nearest for a in stage.model.assign_many(texts)]


def test_a_restart_with_a_changed_gold_set_keeps_the_topic_ids(tmp_path: Path) -> None:
    """Start 1 fits and stores the ids; start 2 reads a gold set in another order with one
    more question, and gives every probe the topic name it had."""
    state = StateStore.in_memory()
    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS + BUSES)
    first = build_live(_settings(gold), CollectorRegistry(), state)
    stored = state.get(TOPIC_IDENTITY_KEY)
    assert stored is not None and stored["ids"] == [t.id for t in _model(first).topics]
    before = _topics_of(first, PROBES)
    _gold(gold, ["hostel fee receipt", *(FEES + EXAMS + BUSES)[::-1]])
    second = build_live(_settings(gold), CollectorRegistry(), state)
    assert _topics_of(second, PROBES) == before
    assert set(_model(first).names) <= set(_model(second).names)


def _model(live: Any) -> Any:
    return next(st for st in live.analytics.stages if st.name == "topic").model


def test_an_accepted_gold_question_keeps_every_topic_id(tmp_path: Path) -> None:
    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS + BUSES)
    settings = _settings(gold)
    live = build_live(settings, CollectorRegistry(), None)
    before = _model(live)
    _gold(gold, [*FEES, *EXAMS, *BUSES], ["can the exam fee be paid online"])
    model, counts, detector = gold_references(
        live.analytics, settings.analytics, load_gold_set(gold)
    )
    apply_gold_references(live.analytics, model, counts, detector)
    after = _model(live)
    assert after is not before and after.names == before.names
    assert _topics_of(live, PROBES) == [a.nearest for a in before.assign_many(PROBES)]
    assert sum(counts["topic"].values()) == 19
    # the same topics and centroids: the drift windows keep counting (no restart)
    assert after.assignment_key() == before.assignment_key()
    assert "topic" not in live.analytics.drift.restarts
    # windows kept by a version before content ids (no topic labeller) would not restore
    assert live.analytics.drift.labellers["topic"].older_differs


def test_accepted_questions_of_a_new_subject_make_a_topic_and_restart_the_topic_windows(
    tmp_path: Path,
) -> None:
    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS)
    settings = _settings(gold, topics={"n_topics": 2})
    live = build_live(settings, CollectorRegistry(), None)
    before = _model(live)
    _gold(gold, [*FEES, *EXAMS], BUSES)
    model, counts, detector = gold_references(
        live.analytics, settings.analytics, load_gold_set(gold)
    )
    apply_gold_references(live.analytics, model, counts, detector)
    after = _model(live)
    assert set(before.names) < set(after.names) and len(after.names) == 3
    new = (set(after.names) - set(before.names)).pop()
    assert _topics_of(live, ["bus to the campus"]) == [new]
    restart = live.analytics.drift.restarts.get("topic")
    assert restart is not None and restart["why"].startswith("the topic model changed (3 topics)")
    assert live.analytics.topic_descriptions == after.labels()
    assert live.analytics.detector_quality["novelty"] == after.novelty_quality


def test_topic_help_text_lists_the_labels_in_natural_order() -> None:
    registry = CollectorRegistry()
    build_analytics_metrics(
        registry,
        topic_labels=("topic-10", "topic-2", "novel"),
        topic_descriptions={
            "topic-10": "topic-10: bus, route",
            "topic-2": "topic-2: fee",
            "fees": "fees",
        },  # fmt: skip
    )
    (family,) = [m for m in registry.collect() if m.name == "goldwatch_questions_by_topic"]
    # session 41: the help says what the topics are while novelty is untrusted
    assert family.documentation == (
        "Questions by topic. While the novelty detector is untrusted (goldwatch_detector_trusted"
        '{detector="novelty"} 0), no question is labelled novel (there is no novel series): '
        "a question on a topic the gold set lacks is counted under its NEAREST gold topic, so "
        "the topics are then each question's nearest gold topic, not facts. A topic a gold-set "
        "refresh's refitted model gained after the start (the status page names it, e.g. "
        "topic-7) has its own label, at most 32 such topics a process; a later one, until a "
        "restart, is counted under other. Topics: topic-2: fee; topic-10: bus, route."
    )


@pytest.mark.slow
def test_replay_report_shows_topic_labels_in_json_text_and_html(tmp_path: Path) -> None:
    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS + BUSES)
    events = tmp_path / "events.jsonl"
    with events.open("w", encoding="utf-8") as handle:
        for i, question in enumerate((FEES + EXAMS + BUSES) * 3):
            handle.write(json.dumps({"event_id": f"e-{i}", "question": question,
                                     "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
                                     }) + "\n")  # fmt: skip
    report = run_replay(_settings(gold), events, None, tmp_path / "dlq.jsonl")
    labels = report["analytics"]["topic_labels"]
    assert labels and all(label.startswith(f"{name}: ") for name, label in labels.items())
    fee_topic = next(name for name, label in labels.items() if "fee" in label)
    text = render_text(report)
    assert labels[fee_topic] in text
    page = render_replay_html(report)
    assert labels[fee_topic] in page


def test_an_accepted_question_in_a_new_language_makes_it_expected(tmp_path: Path) -> None:
    """The language detector is rebuilt with the refit: its expected languages are the gold
    set's languages weighed by their rows (18 en, then 18 en + 2 hi-Latn), and the gold
    set's language counts for drift are recounted with it."""
    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS + BUSES)
    settings = _settings(gold)
    live = build_live(settings, CollectorRegistry(), None)
    stage = next(st for st in live.analytics.stages if st.name == "language")
    assert stage.detector.config.preferred == ("en",)
    with gold.open("a", encoding="utf-8") as handle:
        for i, question in enumerate(["exam ki date kab hai", "fees kitni hai is saal"]):
            row = {"id": f"h-{i}", "question": question, "gold": ["p-0"], "language": "hi-Latn"}
            handle.write(json.dumps(row) + "\n")
    model, counts, detector = gold_references(
        live.analytics, settings.analytics, load_gold_set(gold)
    )
    apply_gold_references(live.analytics, model, counts, detector)
    assert stage.detector is detector
    assert stage.detector.config.preferred == ("en", "hi-Latn")
    n_en = len(FEES + EXAMS + BUSES)
    assert stage.detector.config.preferred_shares == (float(n_en), 2.0)
    assert sum(counts["language"].values()) == n_en + 2


def test_replay_reports_say_a_topic_restart_in_text_and_html(tmp_path: Path) -> None:
    """A restart of the topic windows (``windows_restarted``) is a line of the text report and
    of the HTML drift section, as the out-of-scope one (review s48-f2: JSON only)."""
    from service.drift.stage import restart_text

    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS + BUSES)
    events = tmp_path / "events.jsonl"
    with events.open("w", encoding="utf-8") as handle:
        for i, question in enumerate(FEES + EXAMS + BUSES):
            row = {"event_id": f"e-{i}", "question": question,
                   "timestamp": f"2026-01-01T00:00:{i:02d}Z"}  # fmt: skip
            handle.write(json.dumps(row) + "\n")
    report = run_replay(_settings(gold), events, None, tmp_path / "dlq.jsonl")
    restarted = {"after_events": 18, "timestamp": 1767225617.0, "why": "the gold set changed"}
    report["analytics"]["drift"]["topic"]["windows_restarted"] = restarted
    said = restart_text("topic", restarted)
    assert said.startswith("topic windows started afresh at 2026-01-01 00:00 UTC (after 18 ")
    assert f"  {said}" in render_text(report).splitlines()
    assert said in render_replay_html(report)
