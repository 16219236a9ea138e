"""Acceptance of the evaluation gate on real data sets, through the same path as the CLI.

XQuAD: 1,190 questions, one gold paragraph each among 240 English paragraphs. The measured
values (commit note of the evaluation issue) are bm25 recall@10 0.992 (en), 0.438 (es),
0.146 (hi), 0.163 (zh); tfidf 0.996 / 0.852 / 0.151 / 0.167. The bounds below leave room for
tokeniser changes but fail on any real regression.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.goldsets import write_squad2, write_xquad
from service.evaluation.job import EvalRequest, run_eval
from service.settings import load_settings

pytestmark = pytest.mark.slow

SETTINGS = load_settings(eval={"history": None, "misses": None})


def _overall(gold: Path, corpus: Path, retrievers: tuple[str, ...]) -> dict[str, dict[str, float]]:
    request = EvalRequest(gold=gold, corpus=corpus, retrievers=retrievers, ks=(1, 5, 10, 20),
                          progress=False)  # fmt: skip
    outcome = run_eval(request, SETTINGS)
    for report in outcome.reports:
        assert report.n_questions == 1190
    return {r.retriever: r.overall for r in outcome.reports}


def test_xquad_english_recall(tmp_path: Path, shared_data: Path) -> None:
    gold, corpus = write_xquad(tmp_path, "en")
    overall = _overall(gold, corpus, ("bm25", "tfidf", "hybrid"))
    for name in ("bm25", "tfidf", "hybrid"):
        assert overall[name]["recall@10"] >= 0.98
        assert overall[name]["recall@1"] >= 0.88
        assert overall[name]["recall@1"] <= overall[name]["recall@5"] <= overall[name]["recall@20"]
        # one gold passage per question: recall@k and hit rate@k coincide
        assert overall[name]["recall@10"] == overall[name]["hit_rate@10"]


def test_xquad_cross_lingual_recall_falls(tmp_path: Path, shared_data: Path) -> None:
    english = _overall(*write_xquad(tmp_path / "en", "en"), ("bm25", "tfidf"))
    spanish = _overall(*write_xquad(tmp_path / "es", "es"), ("bm25", "tfidf"))
    hindi = _overall(*write_xquad(tmp_path / "hi", "hi"), ("bm25",))
    chinese = _overall(*write_xquad(tmp_path / "zh", "zh"), ("bm25",))
    # Spanish shares names, numbers and cognates with English: character n-grams recover
    # far more than word BM25 does.
    assert spanish["tfidf"]["recall@10"] >= spanish["bm25"]["recall@10"] + 0.25
    assert spanish["tfidf"]["recall@10"] <= english["tfidf"]["recall@10"] - 0.05
    # Devanagari and Han questions only match on digits and Latin names.
    for other in (hindi, chinese):
        assert other["bm25"]["recall@10"] <= 0.3
        assert other["bm25"]["recall@10"] <= english["bm25"]["recall@10"] - 0.6


def test_squad2_unanswerable_reported_apart(tmp_path: Path, shared_data: Path) -> None:
    gold, corpus = write_squad2(tmp_path)
    request = EvalRequest(gold=gold, corpus=corpus, retrievers=("bm25",), ks=(1, 10),
                          progress=False)  # fmt: skip
    outcome = run_eval(request, SETTINGS)
    (report,) = outcome.reports
    # squad2-dev-sample500/SOURCE.md: 500 questions, 258 unanswerable, 242 answerable
    assert (report.n_questions, report.n_unanswerable) == (242, 258)
    assert set(report.per_query).isdisjoint(q.id for q in outcome.gold_set.unanswerable())
    # every scored row is of one kind (the 258 unanswerable are scored apart), so there is
    # no kind breakdown: it would repeat the overall means under the loader's default label
    assert "kind" not in report.by
    assert report.overall["recall@10"] >= 0.8
    assert report.unanswerable["n"] == 258
