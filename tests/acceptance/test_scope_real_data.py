"""Out-of-scope acceptance on real data (issue 17), through the real replay pipeline.

* CLINC150, gold set = 3 in-scope training questions per intent (450) + the 100 out-of-scope
  training rows as unanswerable: the embedding detector's ROC AUC (cross-validated on the gold
  set, and on the 5,500 held-out test questions) next to today's BM25 estimate from the same
  run (``benchmarks.bench_scope.run``), and the ``goldwatch_detector_auc`` gauge of a service
  built on that gold set shows the reported AUC.
* A rise of out-of-gold-domain questions from 5 % to 30 % (60-question gold set from 3
  CLINC150 domains + 20 unanswerable rows) raises a topic or out-of-scope alarm within 1,000
  events of the change with the default windows, none before it; 50,000 events of the fixed
  5 % mixture raise none but the one gold-set topic alarm this gold set earns, held.
* SQuAD 2.0's adversarial set: the detector's AUC is below the floor, so the replay labels its
  counts uncalibrated, its drift ``uncalibrated``, and the gauge says untrusted.

Figures (``python -m benchmarks.bench_scope`` / ``--drift``) are in the commit messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from benchmarks.bench_scope import clinc_scope_data, drift_alarms, replay_scenario, run
from benchmarks.drift_streams import out_of_domain_shift, stationary_out_of_domain, write_jsonl
from benchmarks.goldsets import write_squad2
from service.jobs.replay import render_text, run_replay
from service.runtime.live import build_live
from service.settings import load_settings

pytestmark = pytest.mark.slow


def test_clinc150_embedding_detector_beats_todays_bm25_and_the_gauge_shows_it(
    tmp_path: Path,
) -> None:
    figures = run(per_intent=3)
    print(json.dumps(figures, indent=1))
    bm25, emb = figures["bm25"], figures["embedding"]
    assert emb["calibration_auc"]["auc"] >= 0.9
    assert emb["calibration_auc"]["auc_low"] > bm25["calibration_auc"]
    assert emb["held_out_auc"]["auc_low"] > bm25["held_out_auc"]["auc_high"]
    # The service built on the same gold set and corpus exports the AUC it reports.
    gold, corpus, _, _ = clinc_scope_data(per_intent=3)
    gold_path = write_jsonl(tmp_path / "gold.jsonl", [
        {"id": q.id, "question": q.question, "gold": list(q.gold), "kind": q.kind}
        for q in gold])  # fmt: skip
    corpus_path = write_jsonl(tmp_path / "corpus.jsonl",
                              [{"id": p.id, "text": p.text} for p in corpus])  # fmt: skip
    registry = CollectorRegistry()
    live = build_live(load_settings(None, gold_set=gold_path, corpus=corpus_path), registry)
    try:
        quality = live.analytics.detector_quality["out_of_scope"]
        gauge = registry.get_sample_value("goldwatch_detector_auc", {"detector": "out_of_scope"})
        assert gauge == pytest.approx(emb["calibration_auc"]["auc"], abs=5e-5)
        assert gauge == quality.auc
        trusted = registry.get_sample_value("goldwatch_detector_trusted",
                                            {"detector": "out_of_scope"})  # fmt: skip
        assert trusted == 1.0
    finally:
        live.close()


def test_out_of_domain_rise_alarms_within_1000_events(tmp_path: Path) -> None:
    scenario = out_of_domain_shift()
    report = replay_scenario(scenario, tmp_path, "embedding")
    assert report["analytics"]["out_of_scope"]["uncalibrated"] is None
    found = drift_alarms(report)
    change = scenario.change_at
    assert change == 3000
    before = [a for a in found if a["after_events"] <= change]
    after = [a for a in found if a["after_events"] > change]
    print(f"first alarm: {after[:1]}")
    assert before == []
    assert after and after[0]["after_events"] - change <= 1000


def test_no_alarm_on_50k_events_of_one_mixture(tmp_path: Path) -> None:
    # 50,000 events (5.8 days) rather than the 100,000 it ran before (session 42): the
    # detectors' false-alarm rate over thousands of tests is asserted on 100,000-event
    # stationary streams (tests/service/drift/test_drift_acceptance.py); here the pipeline,
    # embedding out-of-scope verdicts included, must keep a fixed mixture's labels fixed
    # over days of event time. A change of verdicts from some event on is caught ~250
    # events later (checked: 1 in-scope verdict in 10 turned out of scope from event 20,000
    # raised an out-of-scope baseline alarm at 20,251), and nothing in the pipeline starts
    # behaving differently between 50,000 and 100,000 events: its per-question caches (>= 8,192)
    # never fill with this stream's <= 5,748 distinct questions, the dedup window (100,000)
    # never evicts, and the 24 h gold-set window has slid through ~5 days. The one gold-set
    # topic alarm comes 34,441 events in (the stream is the 100,000 one's prefix) and is held.
    report = replay_scenario(stationary_out_of_domain(50_000), tmp_path, "embedding")
    assert report["processed"] == 50_000
    assert report["analytics"]["out_of_scope"]["uncalibrated"] is None
    found = drift_alarms(report, ("language", "topic", "refusal", "out_of_scope"))
    # A fixed mixture never alarms against its own past (baseline comparisons), and nothing
    # about language, refusals or out-of-scope alarms against the gold set. The topic mix does
    # differ from this gold set's once, for good: its 60 labelled rows are a third per domain
    # (its 20 unanswerable rows, unlabelled, counted by the model's prediction) while the
    # traffic is half banking (gold 25/80 vs 51 % live, measured). That one reference alarm is
    # a true statement about this gold set, raised once and held — never a flapping series.
    assert [a for a in found if a["comparison"] == "baseline"] == []
    reference = [a for a in found if a["comparison"] == "reference"]
    assert all(a["dimension"] == "topic" for a in reference), reference
    assert len(reference) <= 1, reference


def test_squad2_detector_below_the_floor_is_labelled_uncalibrated(
    shared_data: Path, tmp_path: Path
) -> None:
    gold_path, corpus_path = write_squad2(tmp_path, shared_data)
    rows = [json.loads(line) for line in gold_path.read_text(encoding="utf-8").splitlines()]
    events = [{"event_id": f"e-{i}", "timestamp": 1_767_225_600 + 10 * i,
               "question": row["question"],
               "answer": {"text": "I don't know.", "refused": True}}
              for i, row in enumerate(rows[:50])]  # fmt: skip
    log = write_jsonl(tmp_path / "log.jsonl", events)
    settings = load_settings(None, gold_set=gold_path, corpus=corpus_path)
    report: dict[str, Any] = run_replay(settings, log, None, tmp_path / "dlq.jsonl")
    scope = report["analytics"]["out_of_scope"]
    assert scope["quality"]["auc"] < 0.75 and scope["quality"]["trusted"] is False
    assert scope["uncalibrated"].startswith("out_of_scope ROC AUC 0.")
    assert scope["uncalibrated"].endswith("is below the quality floor 0.75")
    assert report["analytics"]["drift"]["out_of_scope"]["state"] == "uncalibrated"
    text = render_text(report)
    assert "out of scope (UNCALIBRATED, not facts: out_of_scope ROC AUC" in text
    assert "out_of_scope raises no alarm: uncalibrated: out_of_scope ROC AUC" in text
