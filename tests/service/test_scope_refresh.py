"""The out-of-scope detector follows an accepted gold question without a restart (issue 17):
after a gold-set refresh the running stage answers exactly as a stage built from scratch on
the new gold set would (the restart is the oracle), and the accepted unanswerable question is
known out of scope from then on."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
from scipy.stats import binomtest

from service.data.corpus import load_corpus
from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.refusals.stage import EmbeddingScopeStage, ScopeStage
from service.runtime.analytics import (
    apply_scope_references,
    build_analytics,
    scope_references,
)
from service.settings import AnalyticsConfig

#: Nothing like it is in the demo gold set or corpus (a college's fees, hostel, exams...).
NEW_QUESTION = "Can I bring my pet iguana to the convocation ceremony?"
PROBES = [NEW_QUESTION, "What is the annual tuition fee for the MCA programme?",
          "is there a bus from the railway station to campus"]  # fmt: skip


def _wilson_high(k: int, n: int) -> float:
    return float(binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson").high)


def _scope(analytics: object) -> ScopeStage | EmbeddingScopeStage:
    return next(st for st in analytics.stages  # type: ignore[attr-defined]
                if isinstance(st, ScopeStage | EmbeddingScopeStage))  # fmt: skip


def _verdicts(stage: ScopeStage | EmbeddingScopeStage) -> list[tuple[object, ...]]:
    notes: list[dict[str, object]] = [{"refused": True} for _ in PROBES]
    events = [types.SimpleNamespace(question=q, retrieval=None) for q in PROBES]
    stage.process(types.SimpleNamespace(events=events, annotations=notes))  # type: ignore[arg-type]
    return [(n["scope_known"], n["out_of_scope"], round(float(n["scope_score"]), 9))  # type: ignore[arg-type]
            for n in notes]  # fmt: skip


@pytest.mark.parametrize("method", ["embedding", "retriever"])
def test_an_accepted_unanswerable_question_recalibrates_the_running_detector(
    tmp_path: Path, method: str
) -> None:
    config = AnalyticsConfig(scope_method=method)
    corpus = load_corpus(demo_path("corpus.jsonl"))
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_bytes(demo_path("gold.jsonl").read_bytes())
    analytics = build_analytics(config, load_gold_set(gold_path), corpus)
    running = _scope(analytics)
    before = _verdicts(running)
    assert before[0][0] is None  # the new question is not known yet

    row = {"id": "q-accepted", "question": NEW_QUESTION, "gold": [], "kind": "unanswerable"}
    with gold_path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
    gold = load_gold_set(gold_path)
    refresh = scope_references(analytics, config, gold, corpus)
    assert refresh is not None
    apply_scope_references(analytics, refresh)

    assert _scope(analytics) is running  # the pipeline's stage object, changed in place
    after = _verdicts(running)
    # known out of scope now: the gold row decides (service.refusals.scope.KnownScope)
    assert after[0][:2] == ("q-accepted", True)
    # the oracle: a restart on the new gold set
    restarted = build_analytics(config, gold, corpus)
    assert after == _verdicts(_scope(restarted))
    assert analytics.scope == restarted.scope
    assert (analytics.detector_quality["out_of_scope"].auc
            == restarted.detector_quality["out_of_scope"].auc)  # fmt: skip
    assert running.calibrated == _scope(restarted).calibrated


def test_no_running_scope_stage_means_no_refresh(tmp_path: Path) -> None:
    config = AnalyticsConfig(scope_method="off")
    corpus = load_corpus(demo_path("corpus.jsonl"))
    gold = load_gold_set(demo_path("gold.jsonl"))
    analytics = build_analytics(config, gold, corpus)
    assert scope_references(analytics, config, gold, corpus) is None


def test_adopting_another_method_is_refused(tmp_path: Path) -> None:
    corpus = load_corpus(demo_path("corpus.jsonl"))
    gold = load_gold_set(demo_path("gold.jsonl"))
    embedding = _scope(build_analytics(AnalyticsConfig(scope_method="embedding"), gold, corpus))
    retriever = _scope(build_analytics(AnalyticsConfig(scope_method="retriever"), gold, corpus))
    with pytest.raises(TypeError):
        embedding.adopt(retriever)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        retriever.adopt(embedding)  # type: ignore[arg-type]


def test_the_service_recalibrates_out_of_scope_after_an_accept(tmp_path: Path) -> None:
    """Through the runtime's gold-set refresh (what an accept over the API starts): the
    running scope stage knows the appended unanswerable row, and the exported detector
    quality equals the restarted detector's."""
    import threading

    from prometheus_client import CollectorRegistry

    from service.runtime.process import Runtime
    from service.settings import load_settings

    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_bytes(demo_path("gold.jsonl").read_bytes())
    events = tmp_path / "events.jsonl"
    events.write_text("", encoding="utf-8")
    settings = load_settings(gold_set=gold_path, corpus=demo_path("corpus.jsonl"),
                             source={"kind": "file", "path": events})  # fmt: skip
    runtime = Runtime(settings, registry=CollectorRegistry())
    let_in = "goldwatch_detector_misjudged_unanswerable_upper_ratio"
    try:
        stage = _scope(runtime.live.analytics)
        assert _verdicts(stage)[0][0] is None
        # at start: the Wilson upper bound of the unanswerable gold rows judged in scope
        # (fpr · n_neg of the demo's 12), the over-refusal bound the OverRefusal alert reads
        quality = runtime.live.analytics.detector_quality["out_of_scope"]
        judged_in = round(quality.fpr * quality.n_neg)
        assert runtime.registry.get_sample_value(let_in, {"detector": "out_of_scope"}) == (
            pytest.approx(_wilson_high(judged_in, quality.n_neg), abs=1e-12)
        )
        row = {"id": "q-accepted", "question": NEW_QUESTION, "gold": [], "kind": "unanswerable"}
        with gold_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        runtime.gold_accepted(None)
        for thread in [t for t in threading.enumerate() if t.name == "goldwatch-gold-refresh"]:
            thread.join(120)
        assert runtime.gold_refresh_error is None and runtime.gold_refreshes == 1
        assert _verdicts(stage)[0][:2] == ("q-accepted", True)
        restarted = build_analytics(settings.analytics, load_gold_set(gold_path),
                                    load_corpus(demo_path("corpus.jsonl")))  # fmt: skip
        auc = restarted.detector_quality["out_of_scope"].auc
        assert runtime.live.analytics.detector_quality["out_of_scope"].auc == auc
        exported = runtime.registry.get_sample_value(
            "goldwatch_detector_auc", {"detector": "out_of_scope"})  # fmt: skip
        assert exported == pytest.approx(auc)
        # and the over-refusal bound follows the refitted detector (13 unanswerable rows)
        fitted = restarted.detector_quality["out_of_scope"]
        assert fitted.n_neg == quality.n_neg + 1
        bound = _wilson_high(round(fitted.fpr * fitted.n_neg), fitted.n_neg)
        assert runtime.registry.get_sample_value(let_in, {"detector": "out_of_scope"}) == (
            pytest.approx(bound, abs=1e-12)
        )
    finally:
        runtime.stop()
