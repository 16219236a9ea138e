"""Hand-built inputs for the HTML tests, small enough to work the expected values out by hand.

Eval: two answerable questions (one of them a planted ``<script>``) and one unanswerable,
cut-offs 1 and 2. ``bm25`` ranks q-1's gold passage first and misses q-2's entirely
(recall@1 = recall@2 = (1 + 0) / 2 = 0.5); ``tfidf`` finds both at rank 1 (recall@1 = 1.0).

Replay: 10 live events, 6 ``en`` and 4 ``hi-Latn`` (60 % / 40 %) against a gold set of 3 ``en``
and 1 ``hi-Latn`` (75 % / 25 %); 2 refusals in 8 answers (25 %).
"""

from __future__ import annotations

from typing import Any

from service.data.goldset import GoldSet
from service.evaluation.compare import compare_all
from service.evaluation.evaluate import evaluate_run
from service.evaluation.job import EvalOutcome
from service.records import GoldQuestion, ScoredDoc
from service.refusals.detector import refusal_rate_method

#: Planted markup: if a page ever let it through, Chromium would log "planted" to its console.
PLANTED = '<script>console.error("planted")</script> hostel fee?'
PLANTED_ESCAPED = "&lt;script&gt;console.error(&quot;planted&quot;)&lt;/script&gt; hostel fee?"
HARVESTED = "<script>console.error('harvest')</script>"
T0 = 1795000000.0  # 2026-11-18 11:06:40 UTC


def eval_outcome(compare: bool = True) -> EvalOutcome:
    """The eval sample (see the module docstring)."""
    questions = (
        GoldQuestion("q-1", "When are fees due?", ("p-1",), source="real", language="en"),
        GoldQuestion("q-2", PLANTED, ("p-2",), kind="expert", source="written", language="en"),
        GoldQuestion("q-3", "Who won in 1990?", (), kind="unanswerable", source="real"),
    )
    runs = {
        "bm25": {"q-1": [ScoredDoc("p-1", 3.0), ScoredDoc("p-9", 1.0)],
                 "q-2": [ScoredDoc("p-9", 2.0), ScoredDoc("p-8", 1.0)],
                 "q-3": [ScoredDoc("p-7", 0.5)]},
        "tfidf": {"q-1": [ScoredDoc("p-1", 1.0)], "q-2": [ScoredDoc("p-2", 1.0)], "q-3": []},
    }  # fmt: skip
    reports = tuple(evaluate_run(name, list(questions), run, (1, 2)) for name, run in runs.items())
    comparisons = ()
    if compare:
        comparisons = tuple(
            compare_all(
                "bm25", reports[0].per_query, "tfidf", reports[1].per_query, ["recall@1", "mrr"]
            )  # fmt: skip
        )
    gate = {"retriever": "bm25", "metric": "recall@1", "value": 0.5, "threshold": 0.8}
    return EvalOutcome(
        gold_set=GoldSet(questions),
        ks=(1, 2),
        reports=reports,
        comparisons=comparisons,
        answers=None,
        failed_gates=(gate,),
        warnings=("<b>q-9</b> names an unknown passage",),
    )


def _drift() -> dict[str, Any]:
    language_test = {
        "comparison": "reference", "state": "drift", "timestamp": T0 + 3600, "n_reference": 4,
        "n_current": 10, "js_divergence": 0.0123, "psi": 0.1, "p_value": 0.001, "alpha": 0.01,
        "new_categories": [],
        "rising": [{"category": "hi-Latn", "reference_share": 0.25, "current_share": 0.4}],
        "falling": [{"category": "en", "reference_share": 0.75, "current_share": 0.6}],
    }  # fmt: skip
    refusal_test = {
        "comparison": "baseline", "state": "drift", "timestamp": T0 + 3600, "n_reference": 100,
        "n_current": 50, "rate_reference": 0.1, "rate_current": 0.4, "ci_low": 0.1,
        "ci_high": 0.5, "p_value": 0.001, "alpha": 0.01,
    }  # fmt: skip
    return {
        "language": {"state": "drift", "comparisons": {"reference": language_test},
                     "live_counts": {"en": 6, "hi-Latn": 4},
                     "gold_counts": {"en": 3, "hi-Latn": 1}, "coverage_gaps": []},
        "topic": {"state": "ok", "comparisons": {}, "live_counts": {"fees": 5, "exams": 5},
                  "gold_counts": {"fees": 1, "exams": 1}, "coverage_gaps": []},
        "refusal": {"state": "drift", "comparisons": {"baseline": refusal_test}},
        "out_of_scope": {"state": "insufficient_data", "comparisons": {}},
        "alarms": [
            {"dimension": "language", "comparison": "reference", "state": "drift",
             "after_events": 5, "timestamp": T0, "rising": ["hi-Latn"], "falling": ["en"],
             "js_divergence": 0.0123, "p_value": 0.001},
            {"dimension": "refusal", "comparison": "baseline", "state": "drift",
             "after_events": 8, "timestamp": T0 + 1800, "rate_current": 0.4,
             "rate_compared": 0.1, "p_value": 0.001},
        ],
        "events_seen": 10,
        "event_time": {"late": 1, "future": 0, "watermark": T0 + 3600},
    }  # fmt: skip


def shadow() -> dict[str, Any]:
    """A shadow report with one candidate (the shape of ``ShadowStage.report()``)."""
    agreement = {"overlap": 0.8, "jaccard": 0.7, "rbo": 0.75, "kendall_tau": 0.5, "top1": 0.9,
                 "citation_recall": None}  # fmt: skip
    return {
        "rbo_p": 0.9,
        "results_dropped": 0,
        "candidates": {"bm25-v2": {
            "offered": 12, "queued": 10, "skipped": {"queue_full": 2}, "completed": 9,
            "errors": {"timeout": 1}, "in_flight": 0,
            "latency_seconds": {"count": 10, "mean": 0.012, "max": 0.05},
            "agreement": agreement,
            "counts": {"overlap": 9, "jaccard": 9, "rbo": 9, "kendall_tau": 3, "top1": 9,
                       "citation_recall": 0},
            "by_language": {"en": {"n": 5, "rbo": 0.9, "top1": 1.0},
                            "hi-Latn": {"n": 4, "rbo": 0.55, "kendall_tau": 1.0, "overlap": 0.5,
                                        "top1": 0.75,
                                        "counts": {"rbo": 4, "kendall_tau": 1, "overlap": 4,
                                                   "top1": 4}}},
            "by_topic": {},
            "disagreements": [{"event_id": "e-7", "timestamp": "2026-11-19T09:00:00+00:00",
                               "question": "<i>fee</i> kab tak?", "language": "hi-Latn",
                               "topic": "fees", "rbo": 0.1, "overlap": 0.2,
                               "production": ["p-1", "p-2"], "candidate": ["p-5", "p-1"]}],
        }},
    }  # fmt: skip


def replay_report(*, extras: bool = True, series: bool = False) -> dict[str, Any]:
    """The replay sample; ``extras`` adds ``shadow`` and ``gold_candidates``, ``series``
    adds two hourly buckets."""
    analytics: dict[str, Any] = {
        "languages": {"en": 6, "hi-Latn": 4},
        "topics": {"fees": 5, "exams": 5},
        "refusals": {"answers": 8, "refused": 2, "rate": 0.25, "by_flag": 5, "by_patterns": 3,
                     # the sentence as the code writes it (session 39: it was a copy of
                     # an older one, without the languages and the no-answer rule)
                     "method": refusal_rate_method(5, 3)},
        "out_of_scope": {"scored": 8, "out_of_scope": 1, "share": 0.125, "over_refusals": 1,
                         "under_refusals": 0, "calibration": None},
        "pii_scrubbed": {"email": 1, "phone": 0},
        "drift": _drift(),
    }  # fmt: skip
    if series:
        analytics["series"] = {"bucket_s": 3600, "buckets": [
            {"start": T0, "languages": {"en": 5, "hi-Latn": 1}, "topics": {"fees": 4, "exams": 2},
             "answers": 5, "refused": 0},
            {"start": T0 + 3600, "languages": {"en": 1, "hi-Latn": 3},
             "topics": {"fees": 1, "exams": 3}, "answers": 3, "refused": 2},
        ]}  # fmt: skip
    report: dict[str, Any] = {
        "file": "<img src=x onerror=console.error(1)>.jsonl", "consumed": 11, "processed": 10,
        "duplicates": 1, "dead_lettered": {"bad_json": 0}, "dead_lettered_total": 0,
        "dropped": {}, "batches": 1, "dlq_path": "log.dlq.jsonl", "analytics": analytics,
    }  # fmt: skip
    if extras:
        report["shadow"] = shadow()
        report["gold_candidates"] = [
            {"question": HARVESTED, "count": 3, "language": "en", "topic": "fees"},
            {"question": "Hostel ka fee semester wise dena hai ya yearly?", "count": 2,
             "language": "hi-Latn", "topic": "fees"},
        ]  # fmt: skip
    return report
