"""A novelty detector below its quality floor labels nothing (trial 49 L4: novelty ROC AUC
0.702 < 0.75, and still "novel" was a topic share of 5.0 % in the reports, a
``goldwatch_questions_by_topic_total{topic="novel"}`` series and a row of the status page,
while the README said the shares were then each question's nearest gold topic).

The rule: while the novelty detector is uncalibrated no live question and no gold row is
``novel`` — each is counted under its nearest gold topic — no ``novel`` label is exported,
and the reports say why the detector is quiet. Checked on a stand-in model (values by hand)
and through the real CLI on the three-topic gold set of :mod:`test_kappa_gate`, whose
novelty detector reads 0.677 at its Wilson bound (:mod:`test_novelty_gate`): uncalibrated at
the default floor 0.68, calibrated at 0.6 — the same model, the same questions.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from prometheus_client import CollectorRegistry

from service.cli import main
from service.events import QueryLogEvent
from service.pipeline import Batch
from service.telemetry import build_analytics_metrics
from service.topics.model import NOVEL, TopicAssignment
from service.topics.stage import TopicStage
from tests.service.topics.test_kappa_gate import BANKING, COOKING, WEATHER, _write

#: Questions on none of the gold set's topics (weather, banking, cooking).
ELSEWHERE = ("Who won the football world cup in 1998?", "Who painted the Mona Lisa?",
             "Which planet in the solar system has the most moons?",
             "How do I install Python packages on Linux?",
             "What is the plot of Shakespeare's Hamlet?")  # fmt: skip


class _Model:
    """Stand-in topic model: each question's fixed assignment."""

    def __init__(self, table: dict[str, TopicAssignment]) -> None:
        self.table = table

    def assign_many(self, texts: list[str], languages: Any = None) -> list[TopicAssignment]:
        return [self.table[t] for t in texts]


def _events(questions: list[str]) -> list[QueryLogEvent]:
    return [QueryLogEvent.model_validate({"event_id": f"e-{i}", "question": q,
                                          "timestamp": "2026-11-20T00:00:00Z"})
            for i, q in enumerate(questions)]  # fmt: skip


def test_the_stage_writes_the_nearest_topic_while_novelty_is_uncalibrated() -> None:
    # q1, q2 novel (nearest banking, cooking), q3 banking: 3 questions, 4 events
    table = {"q1": TopicAssignment(NOVEL, "banking", 0.2, 0.1),
             "q2": TopicAssignment(NOVEL, "cooking", 0.3, 0.2),
             "q3": TopicAssignment("banking", "banking", 0.9, 0.9)}  # fmt: skip
    questions = ["q1", "q2", "q3", "q1"]
    counts = {}
    for calibrated in (True, False):
        stage = TopicStage(_Model(table))  # type: ignore[arg-type]
        stage.novelty_calibrated = calibrated
        batch = Batch("file", _events(questions), [{} for _ in questions])
        stage.process(batch)
        counts[calibrated] = Counter(notes["topic"] for notes in batch.annotations)
    assert counts[True] == {NOVEL: 3, "banking": 1}
    # uncalibrated: q1 twice and q3 under banking, q2 under cooking; no novel at all
    assert counts[False] == {"banking": 3, "cooking": 1}


def _replay(tmp_path: Path, floor: float | None) -> tuple[str, dict[str, Any]]:
    """Replay 30 gold questions and 5 questions on other topics, 10 times each (350 events,
    one a minute), at ``analytics.scope_min_balanced_accuracy`` ``floor`` (None: 0.68)."""
    tmp_path.mkdir()
    config = _write(tmp_path, rotated=False, min_balanced_accuracy=floor)
    questions = [*WEATHER, *BANKING, *COOKING, *ELSEWHERE] * 10
    log = tmp_path / "log.jsonl"
    log.write_text("".join(
        json.dumps({"event_id": f"e-{i:04d}", "question": q, "answer": {"text": "Here."},
                    "timestamp": f"2026-11-20T{i // 60:02d}:{i % 60:02d}:00Z"}) + "\n"
        for i, q in enumerate(questions)))  # fmt: skip
    runner = CliRunner()
    text = runner.invoke(main, ["replay", str(log), "--config", str(config)],
                         catch_exceptions=False)  # fmt: skip
    doc = runner.invoke(main, ["replay", str(log), "--config", str(config), "--format", "json"],
                        catch_exceptions=False)  # fmt: skip
    assert text.exit_code == 0 and doc.exit_code == 0, text.output
    return text.stdout, json.loads(doc.stdout)


def test_an_uncalibrated_novelty_detector_yields_no_novel_share_anywhere(tmp_path: Path) -> None:
    calibrated_text, calibrated = _replay(tmp_path / "a", 0.6)
    text, doc = _replay(tmp_path / "b", None)
    assert calibrated["analytics"]["novelty"]["uncalibrated"] is None
    why = doc["analytics"]["novelty"]["uncalibrated"]
    assert why is not None and "is below analytics.scope_min_balanced_accuracy 0.68" in why
    # calibrated: the detector labels the questions on other topics (some at least) novel
    before = calibrated["analytics"]["topics"]
    assert before.get(NOVEL, 0) >= 10  # one of the five questions, 10 times, at least
    assert f"{NOVEL} " in next(x for x in calibrated_text.splitlines() if x.startswith("topics"))
    # uncalibrated: the same 350 questions, each novel one under its nearest topic instead
    after = doc["analytics"]["topics"]
    assert NOVEL not in after and sum(after.values()) == sum(before.values()) == 350
    moved = {t: after.get(t, 0) - before.get(t, 0) for t in after}
    assert all(n >= 0 for n in moved.values()) and sum(moved.values()) == before[NOVEL]
    topic = doc["analytics"]["drift"]["topic"]
    assert topic["live_counts"] == after
    # the gold side is counted as live traffic is: no gold row novel, all 30 rows counted
    assert NOVEL not in topic["gold_counts"] and sum(topic["gold_counts"].values()) == 30
    assert NOVEL not in topic.get("suppressed_categories", {})
    assert not any(NOVEL in key for key in doc["analytics"]["drift"]["suppressed_dimensions"])
    novelty = doc["analytics"]["novelty"]
    assert (novelty["novel"], novelty["share"]) == (0, None)
    assert all(NOVEL not in (b.get("topics") or {}) for b in doc["analytics"]["series"]["buckets"])
    # the text report: no novel share, and why the detector is quiet
    line = next(x for x in text.splitlines() if x.startswith("topics"))
    assert f"{NOVEL} " not in line.split("):", 1)[1]
    assert "the novelty detector labels no question novel while it is uncalibrated" in line


def _runtime(folder: Path, floor: float | None) -> Any:
    """A runtime on the three-topic gold set of :mod:`test_kappa_gate` (its novelty detector
    reads 0.677 at its Wilson bound: calibrated at ``floor`` 0.6, not at the default 0.68)."""
    from service.runtime.process import Runtime
    from service.settings import load_settings

    folder.mkdir()
    _write(folder, rotated=False)
    events = folder / "events.jsonl"
    events.write_text("", encoding="utf-8")
    analytics = {} if floor is None else {"scope_min_balanced_accuracy": floor}
    settings = load_settings(gold_set=folder / "gold.jsonl", corpus=folder / "corpus.jsonl",
                             source={"kind": "file", "path": events},
                             state={"path": folder / "state.sqlite"},
                             analytics=analytics)  # fmt: skip
    return Runtime(settings, registry=CollectorRegistry())


def test_no_novel_label_is_exported_while_novelty_is_uncalibrated(tmp_path: Path) -> None:
    """``goldwatch_questions_by_topic_total`` has no ``topic="novel"`` series (not even a
    pre-initialised 0) while the detector is uncalibrated, and has one while calibrated."""
    for floor, expected in ((0.6, True), (None, False)):
        runtime = _runtime(tmp_path / str(floor), floor)
        try:
            value = runtime.registry.get_sample_value(
                "goldwatch_questions_by_topic_total", {"topic": NOVEL}
            )
            assert (value is not None) is expected, floor
            assert (NOVEL in runtime.live.analytics.topic_labels) is expected
            gold = runtime.live.analytics.gold_counts["topic"]
            assert NOVEL not in gold or expected
        finally:
            runtime.stop()
    assert build_analytics_metrics is not None  # (imported for the metric's registration)
