"""Shadow evaluation on real XQuAD traffic (12 languages) through the benchmark's helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_shadow import agreement_rows, batches, build_traffic, settle
from benchmarks.datasets import XQUAD_LANGUAGES, load_xquad
from service.retrievers.bm25 import BM25Retriever
from service.retrievers.tfidf import TfidfRetriever
from service.shadow.runner import CandidateConfig, ShadowConfig, ShadowRunner
from service.shadow.stage import ShadowStage


def test_production_as_its_own_candidate_agrees_and_tfidf_does_not(shared_data: Path) -> None:
    passages, _ = load_xquad("en", shared_data)
    bm25 = BM25Retriever(passages, name="bm25")
    traffic = build_traffic(bm25, per_language=15)
    config = ShadowConfig(
        max_cpu_share=None,  # the CPU budget has its own tests
        candidates=(
            CandidateConfig(name="bm25", queue_size=1_000, timeout_s=30),
            CandidateConfig(name="tfidf", queue_size=1_000, timeout_s=30),
        ),
        max_label_values=64,
    )
    runner = ShadowRunner(config, {"bm25": bm25, "tfidf": TfidfRetriever(passages)})
    stage = ShadowStage(runner)
    for batch in batches(traffic, 1):
        stage.process(batch)
    settle(stage, 60)
    runner.close()
    report = stage.report()
    same, tfidf = report["candidates"]["bm25"], report["candidates"]["tfidf"]
    assert same["queued"] == same["completed"] > 100 and same["errors"] == {}
    assert same["skipped"].get("no_production", 0) + same["queued"] == 15 * 12
    for metric in ("overlap", "rbo", "kendall_tau", "top1", "citation_recall"):
        assert same["agreement"][metric] == pytest.approx(1.0)
    assert 0.3 < tfidf["agreement"]["rbo"] < 0.95
    assert set(tfidf["by_language"]) <= set(XQUAD_LANGUAGES)
    overall, per_language = agreement_rows(report)
    assert [row[0] for row in overall] == ["bm25", "tfidf"] and len(per_language) == 12
