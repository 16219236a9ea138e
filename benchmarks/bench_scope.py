"""Benchmark: out-of-scope detection on CLINC150, the embedding detector next to today's BM25.

Set-up (deterministic, seed 0): the gold set is ``per_intent`` in-scope TRAINING questions per
intent (answerable, gold = the intent's passage) plus CLINC150's 100 out-of-scope (``oos``)
TRAINING questions (unanswerable, ``gold: []``); the corpus is one passage per intent (its name
and five other training questions, as :mod:`benchmarks.drift_streams` builds it). Held out:
the 4,500 in-scope TEST questions (positives) and the 1,000 ``oos`` TEST questions
(negatives).

Reported, from one run:

* ``bm25`` — today's path (``service.refusals.scope.calibrate_with_retriever``): ROC AUC of the
BM25 best
  score on the gold set (what the service reports as ``calibration.auc``), and on the held-out
  test questions;
* ``embedding`` — :class:`service.refusals.scope.EmbeddingScope` (nearest answerable / unanswerable
gold
  question, nearest passage and the BM25 best score, logistic regression): its cross-validated
  AUC with the bootstrap interval (what the service reports and exports as
  ``goldwatch_detector_auc{detector="out_of_scope"}``), and its AUC on the held-out questions;
* for both, the held-out share of ``oos`` / in-scope questions judged out of scope at the
  calibrated threshold (``min_tpr`` 0.95, the service's default); for ``embedding`` also its
  off-corpus rule (:class:`service.refusals.scope.SupportCheck`: cutoff, held-out gold rates)
  and the held-out shares it flagged off-corpus;
* ``rules`` — threshold rules on the embedding detector's cross-validated gold-set scores
  (:data:`RULES`: Youden's J among thresholds keeping ``min_tpr`` of the answerable rows in
  scope, for several ``min_tpr``, 0 being plain Youden / best balanced accuracy): the
  operating point on the gold set (TPR, FPR, balanced accuracy: what the service reports and
  gates on with ``analytics.scope_min_balanced_accuracy``) and on the held-out questions.

Second part (``--drift``), the issue's alarm acceptance through the real replay pipeline
(:func:`service.jobs.replay.run_replay`, default settings and windows, one question every
~10 s): :func:`benchmarks.drift_streams.out_of_domain_shift` (60-question gold set from 3
CLINC150 domains plus 20 unanswerable rows; out-of-gold-domain questions 5 % for 3,000
events, then 30 % for 3,000) — the first topic or out-of-scope alarm after the change, and
alarms before it — and :func:`~benchmarks.drift_streams.stationary_out_of_domain` (100,000
events at 5 %) — every alarm; for ``scope_method`` ``embedding`` and ``retriever`` (today's
BM25 threshold) in the same run.

Usage: ``python -m benchmarks.bench_scope [--per-intent N] [--drift [--events N]]``.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.datasets import SHARED_DATA
from benchmarks.drift_streams import Scenario, out_of_domain_shift, stationary_out_of_domain
from service.embeddings.model import default_embedder
from service.embeddings.protocol import Embedder
from service.evaluation.detector_quality import measure_auc
from service.jobs.replay import run_replay
from service.records import GoldQuestion, Passage
from service.refusals.scope import (
    EmbeddingScope,
    best_score,
    calibrate_threshold,
    calibrate_with_retriever,
    canonical_rows,
    coverage_groups,
)
from service.retrievers.registry import build_retrievers
from service.settings import RetrieverConfig, load_settings


def clinc_scope_data(
    per_intent: int = 3, seed: int = 0, root: Path = SHARED_DATA
) -> tuple[list[GoldQuestion], list[Passage], list[str], list[str]]:
    """``(gold questions, corpus passages, in-scope test questions, oos test questions)``."""
    data = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    rng = random.Random(f"clinc-scope-{seed}")
    by_intent: dict[str, list[str]] = {}
    for text, intent in data["train"]:
        by_intent.setdefault(intent, []).append(text)
    gold: list[GoldQuestion] = []
    corpus: list[Passage] = []
    for intent in sorted(by_intent):
        texts = by_intent[intent]
        order = rng.sample(range(len(texts)), len(texts))
        gold += [GoldQuestion(f"in-{intent}-{i}", texts[i], (f"intent-{intent}",))
                 for i in sorted(order[:per_intent])]  # fmt: skip
        rest = [texts[i] for i in order[per_intent : per_intent + 5]]
        text = intent.replace("_", " ") + ": " + "; ".join(rest)
        corpus.append(Passage(f"intent-{intent}", text))
    gold += [GoldQuestion(f"oos-{i}", text, (), kind="unanswerable")
             for i, (text, _) in enumerate(data["oos_train"])]  # fmt: skip
    inscope = [text for text, _ in data["test"]]
    oos = [text for text, _ in data["oos_test"]]
    return gold, corpus, inscope, oos


#: ``min_tpr`` values of the threshold rules compared (0: unconstrained Youden's J).
RULES: tuple[float, ...] = (0.95, 0.9, 0.8, 0.0)


def threshold_rules(
    detector: EmbeddingScope, p_in: np.ndarray, p_oos: np.ndarray
) -> dict[str, dict[str, float]]:
    """Per rule of :data:`RULES`: the threshold, the gold set's cross-validated TPR / FPR /
    balanced accuracy there, and the held-out ones (in-scope test questions kept in scope,
    ``oos`` test questions let through)."""
    labels, cv = detector.gold_answerable, detector.cv_scores
    out: dict[str, dict[str, float]] = {}
    for min_tpr in RULES:
        cal = calibrate_threshold(cv[labels].tolist(), cv[~labels].tolist(), min_tpr=min_tpr)
        tpr, fpr = float(np.mean(p_in >= cal.threshold)), float(np.mean(p_oos >= cal.threshold))
        out[f"min_tpr {min_tpr}"] = {
            "threshold": round(cal.threshold, 4), "gold_tpr": round(cal.tpr, 4),
            "gold_fpr": round(cal.fpr, 4),
            "gold_balanced_accuracy": round(cal.balanced_accuracy, 4),
            "held_out_tpr": round(tpr, 4), "held_out_fpr": round(fpr, 4),
            "held_out_balanced_accuracy": round((tpr + 1 - fpr) / 2, 4),
        }  # fmt: skip
    return out


def run(per_intent: int = 3, min_tpr: float = 0.95, seed: int = 0,
        embedder: Embedder | None = None) -> dict[str, Any]:  # fmt: skip
    """Both detectors on the same gold set, corpus and held-out questions (the embedding
    detector through ``embedder``, default :func:`default_embedder`)."""
    gold, corpus, inscope, oos = clinc_scope_data(per_intent, seed)
    gold = canonical_rows(gold)  # the rows in the order the service fits them
    bm25 = build_retrievers(["bm25"], lambda n: RetrieverConfig(name=n, kind=n), corpus)["bm25"]
    today = calibrate_with_retriever(gold, bm25, min_tpr=min_tpr)
    held_in = [best_score(r) for r in bm25.search_batch(inscope, 1)]
    held_oos = [best_score(r) for r in bm25.search_batch(oos, 1)]
    floor = min(s for s in held_in + held_oos if s is not None) - 1.0

    def fill(xs: list[float | None]) -> np.ndarray:
        return np.array([floor if x is None else x for x in xs])

    bm25_held = measure_auc(fill(held_in), fill(held_oos), n_boot=200, seed=seed)
    gold_scores = [best_score(r) for r in bm25.search_batch([q.question for q in gold], 1)]
    started = time.perf_counter()
    # the gold rows asking about one passage (an intent) hidden from each other, as the service
    # fits it (coverage_groups: the corpus has no documents, so by passage)
    groups = coverage_groups(gold, {p.id: p.doc for p in corpus}, [p.id for p in corpus])
    detector = EmbeddingScope(
        embedder or default_embedder(), gold, [p.text for p in corpus],
        retriever_scores=gold_scores, retriever="bm25", min_tpr=min_tpr, seed=seed,
        groups=groups,
    )  # fmt: skip
    calibrate_s = time.perf_counter() - started
    p_in, off_in = detector.score_support(inscope, held_in)
    p_oos, off_oos = detector.score_support(oos, held_oos)
    emb_held = measure_auc(p_in, p_oos, n_boot=200, seed=seed)
    th_bm25, th_emb = today.threshold, detector.calibration.threshold
    q = detector.quality
    return {
        "gold": {"answerable": sum(g.answerable for g in gold),
                 "unanswerable": sum(not g.answerable for g in gold), "passages": len(corpus)},
        "held_out": {"in_scope": len(inscope), "oos": len(oos)},
        "bm25": {
            "calibration_auc": round(today.auc, 4),
            "held_out_auc": bm25_held.as_dict(),
            "oos_flagged": float(np.mean(fill(held_oos) < th_bm25)),
            "in_scope_flagged": float(np.mean(fill(held_in) < th_bm25)),
        },
        "embedding": {
            "calibration_auc": q.as_dict(),
            "held_out_auc": emb_held.as_dict(),
            "oos_flagged": float(np.mean(p_oos < th_emb)),
            "in_scope_flagged": float(np.mean(p_in < th_emb)),
            "calibrate_s": round(calibrate_s, 2),
            # the off-corpus rule (SupportCheck) and the held-out shares it decided
            "support": detector.support._asdict(),
            "oos_off_corpus": float(np.mean(off_oos)),
            "in_scope_off_corpus": float(np.mean(off_in)),
        },
        "rules": threshold_rules(detector, p_in, p_oos),
    }  # fmt: skip


def replay_scenario(scenario: Scenario, out: Path, method: str) -> dict[str, Any]:
    """Replay ``scenario`` with default settings but ``analytics.scope_method`` = ``method``
    (fresh state) and return :func:`service.jobs.replay.run_replay`'s report."""
    files = scenario.write(out)
    settings = load_settings(None, gold_set=files.gold, corpus=files.corpus,
                             analytics={"scope_method": method})  # fmt: skip
    return run_replay(settings, files.events, None, out / "dlq.jsonl")


def drift_alarms(report: dict[str, Any], dimensions: Sequence[str] = ("topic", "out_of_scope")
                 ) -> list[dict[str, Any]]:  # fmt: skip
    """The report's moves into ``drift`` of ``dimensions``, in order (an open alarm's
    widening, ``widened``, is none)."""
    return [a for a in report["analytics"]["drift"]["alarms"]
            if a["state"] == "drift" and a["dimension"] in dimensions
            and not a.get("widened")]  # fmt: skip


def run_drift(n_stationary: int = 100_000) -> dict[str, Any]:
    """The alarm acceptance for both scope methods (see the module docstring)."""
    results: dict[str, Any] = {}
    shift, still = out_of_domain_shift(), stationary_out_of_domain(n_stationary)
    with tempfile.TemporaryDirectory() as tmp:
        for method in ("embedding", "retriever"):
            started = time.perf_counter()
            report = replay_scenario(shift, Path(tmp) / f"shift-{method}", method)
            found = drift_alarms(report)
            change = shift.change_at or 0
            after = [a for a in found if a["after_events"] > change]
            stationary = replay_scenario(still, Path(tmp) / f"still-{method}", method)
            scope = report["analytics"]["out_of_scope"]
            results[method] = {
                "quality": scope["quality"],
                "alarms_before_change": len(found) - len(after),
                "first_alarm_after_change": (
                    {"dimension": after[0]["dimension"],
                     "events_after_change": after[0]["after_events"] - change,
                     "rate_compared": after[0].get("rate_compared"),
                     "rate_current": after[0].get("rate_current")} if after else None),
                "stationary_events": n_stationary,
                "stationary_alarms": len(drift_alarms(stationary)),
                "stationary_out_of_scope_share": stationary["analytics"]["out_of_scope"]["share"],
                "seconds": round(time.perf_counter() - started, 1),
            }  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-intent", type=int, default=3)
    parser.add_argument("--drift", action="store_true", help="the alarm acceptance instead")
    parser.add_argument("--events", type=int, default=100_000, help="stationary events")
    args = parser.parse_args()
    result = run_drift(args.events) if args.drift else run(args.per_intent)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
