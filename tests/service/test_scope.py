"""Out-of-scope estimate: threshold calibration, the stage, refusal crossing, CLINC150."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.events import QueryLogEvent
from service.pipeline import Pipeline, Stage
from service.records import GoldQuestion, ScoredDoc
from service.refusals.scope import (
    ScopeCalibration,
    best_score,
    calibrate_from_run,
    calibrate_threshold,
    calibrate_with_retriever,
    crossed,
    describe,
)
from service.refusals.stage import RefusalStage, ScopeStage


def test_threshold_maximises_youden_j() -> None:
    cal = calibrate_threshold([0.9, 0.8, 0.7, 0.4], [0.1, 0.5, 0.3], retriever="bm25")
    # Cut 0.7: TPR 3/4, FPR 0 → J 0.75; cut 0.4: TPR 1, FPR 1/3 → J 0.67.
    assert (cal.threshold, cal.tpr, cal.fpr) == (0.7, 0.75, 0.0)
    assert cal.balanced_accuracy == pytest.approx(0.875)
    assert cal.auc == pytest.approx(11 / 12)
    assert (cal.n_answerable, cal.n_unanswerable, cal.retriever) == (4, 3, "bm25")
    assert cal.in_scope(0.7) is True and cal.in_scope(0.69) is False
    assert cal.in_scope(None) is None
    assert describe(cal)["threshold"] == 0.7


def test_perfect_separation_and_errors() -> None:
    cal = calibrate_threshold([5.0, 6.0], [None, 1.0])
    assert cal.tpr == 1.0 and cal.fpr == 0.0 and 1.0 < cal.threshold <= 5.0
    with pytest.raises(ValueError, match="answerable and unanswerable"):
        calibrate_threshold([1.0], [])


def test_calibrate_from_run_uses_best_score_and_missing_as_nothing() -> None:
    questions = [
        GoldQuestion("a1", "fee?", ("p1",)),
        GoldQuestion("a2", "bus?", ("p2",)),
        GoldQuestion("u1", "salary?", ()),
        GoldQuestion("u2", "weather?", ()),
    ]
    run = {
        "a1": [ScoredDoc("p1", 3.0), ScoredDoc("p9", 9.0)],
        "a2": [ScoredDoc("p2", 8.0)],
        "u1": [ScoredDoc("p3", 2.0)],
    }
    cal = calibrate_from_run(questions, run, "prod-v3")
    assert cal.threshold == 8.0 and cal.balanced_accuracy == 1.0
    assert best_score([]) is None and best_score(None) is None


class FakeRetriever:
    name = "fake"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls = 0

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        return self.search_batch([question], k)[0]

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        self.calls += 1
        return [[ScoredDoc("p", self.scores[q])] if q in self.scores else [] for q in questions]


def _event(i: int, question: str = "q", **fields: Any) -> QueryLogEvent:
    at = datetime(2026, 11, 29, tzinfo=UTC)
    return QueryLogEvent(event_id=f"e-{i}", timestamp=at, question=question, **fields)


def _retrieval(score: float, retriever: str = "prod-v3") -> dict[str, Any]:
    return {"retriever": retriever, "results": [{"id": "p", "score": score}]}


CAL = ScopeCalibration(5.0, 0.9, 0.1, 0.9, 0.95, 10, 10, retriever="prod-v3")


def test_stage_reads_event_scores_and_crosses_refusals() -> None:
    events = [
        _event(0, retrieval=_retrieval(7.0), answer={"text": "I don't know."}),  # over-refusal
        _event(1, retrieval=_retrieval(2.0), answer={"text": "It is 42."}),  # under-refusal
        _event(2, retrieval=_retrieval(2.0), answer={"text": "I don't know."}),  # good refusal
        _event(3, retrieval=_retrieval(9.0, "shadow"), answer={"text": "ok"}),  # other retriever
        _event(4, answer={"text": "It is 42."}),  # no retrieval logged
        _event(5, retrieval=_retrieval(6.0)),  # no answer logged
    ]
    stage = ScopeStage(CAL)
    assert isinstance(stage, Stage)
    batch = Pipeline([RefusalStage(), stage]).process(events, "file")
    notes = batch.annotations
    assert [n["out_of_scope"] for n in notes] == [False, True, True, None, None, False]
    assert [n["over_refusal"] for n in notes] == [True, False, False, None, None, None]
    assert [n["under_refusal"] for n in notes] == [False, True, False, None, None, None]
    assert notes[0]["scope_score"] == 7.0 and notes[3]["scope_score"] is None


def test_stage_with_builtin_retriever_batches_one_call() -> None:
    retriever = FakeRetriever({"fee": 9.0, "weather": 1.0})
    cal = CAL._replace(retriever="fake")
    stage = ScopeStage(cal, retriever=retriever, k=3)
    events = [_event(i, q) for i, q in enumerate(["fee", "weather", "unknown"])]
    batch = Pipeline([stage]).process(events, "file")
    assert [n["out_of_scope"] for n in batch.annotations] == [False, True, None]
    assert retriever.calls == 1
    assert batch.annotations[0]["over_refusal"] is None  # no refusal stage ran
    with pytest.raises(ValueError, match="calibrated on 'prod-v3'"):
        ScopeStage(CAL, retriever=retriever)
    with pytest.raises(ValueError, match="k must be"):
        ScopeStage(cal, retriever=retriever, k=0)


def test_crossed_truth_table() -> None:
    assert dict(crossed(True, False)) == {"over_refusal": True, "under_refusal": False}
    assert dict(crossed(False, True)) == {"over_refusal": False, "under_refusal": True}
    assert dict(crossed(False, False)) == {"over_refusal": False, "under_refusal": False}
    assert dict(crossed(True, None)) == {"over_refusal": None, "under_refusal": None}


@pytest.mark.slow
def test_clinc150_out_of_scope_with_bm25(shared_data: Path) -> None:
    """An FAQ bot whose corpus is 3,000 in-scope CLINC150 training questions (BM25, k=5).

    Calibrated on 500 in-scope + 100 oos VALIDATION questions, applied to the 4,500 in-scope
    and 1,000 oos TEST questions. Measured: calibration AUC 0.84, balanced accuracy 0.78
    (threshold 5.39, TPR 0.70, FPR 0.15); on test, 70 % of in-scope kept, 79 % of oos flagged,
    balanced accuracy 0.75.
    """
    from benchmarks.bench_topics import load_clinc
    from service.records import Passage
    from service.retrievers.bm25 import BM25Retriever

    clinc = load_clinc(shared_data)
    data = json.loads((shared_data / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    bm25 = BM25Retriever([Passage(f"p-{i}", t) for i, (t, _) in enumerate(clinc["train"])])
    val = random.Random(0).sample(data["val"], 500)
    gold = [GoldQuestion(f"v{i}", t, ("p-0",)) for i, (t, _) in enumerate(val)]
    gold += [GoldQuestion(f"o{i}", t, ()) for i, (t, _) in enumerate(data["oos_val"])]
    cal = calibrate_with_retriever(gold, bm25, k=5)
    assert cal.auc >= 0.80 and cal.balanced_accuracy >= 0.74

    def share_in_scope(split: str) -> float:
        found = bm25.search_batch([t for t, _ in data[split]], 5)
        return sum(bool(cal.in_scope(best_score(r))) for r in found) / len(found)

    kept, leaked = share_in_scope("test"), share_in_scope("oos_test")
    assert kept >= 0.65 and 1 - leaked >= 0.72
    assert (kept + 1 - leaked) / 2 >= 0.72
