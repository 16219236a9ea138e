"""Acceptance of the embedding layer on real data: the character n-gram mix recovers the
scripts WordLlama covers badly, without costing English, and the dense and hybrid retrievers
hold on real gold sets through the same path as ``goldwatch eval``.

Measured values (``python -m benchmarks.bench_embeddings``, the eval figures in the commit
note): XQuAD question → own-language passage top-1, WordLlama alone → with the mix: ar 0.15 →
0.64, hi 0.15 → 0.67, th 0.22 → 0.72, en 0.81 → 0.84; Hinglish-TOP nn@1 0.46 → 0.57; CLINC150
novelty AUC (60 gold) 0.861 → 0.860. MultiHop-RAG recall@10: bm25 0.853, hybrid 0.895. The
bounds leave room for noise but fail on a real regression.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_embeddings import _hinglish, _xquad_row, novelty_auc
from benchmarks.goldsets import write_multihop, write_xquad
from service.embeddings.model import EmbeddingConfig, build_embedder
from service.evaluation.job import EvalRequest, run_eval
from service.settings import load_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def layers() -> tuple[object, object]:
    before = build_embedder(EmbeddingConfig(char_weight=0, cache_size=0))
    after = build_embedder(EmbeddingConfig(cache_size=0))
    return before, after


def test_char_mix_recovers_badly_covered_scripts(layers: tuple, shared_data: Path) -> None:
    before, after = (_xquad_row(layer) for layer in layers)
    for lang in ("ar", "hi", "th", "el"):
        assert before[lang][2] <= 0.3  # WordLlama alone: near-noise
        assert after[lang][2] >= 0.55
    for lang in ("en", "de", "es"):
        assert after[lang][2] >= before[lang][2] - 0.01
    (_, nn_before, _), (_, nn_after, _) = _hinglish(layers[0]), _hinglish(layers[1])
    assert nn_after >= nn_before + 0.05


def test_char_mix_costs_english_nothing(layers: tuple, shared_data: Path) -> None:
    before, after = novelty_auc(layers[0], 60), novelty_auc(layers[1], 60)  # type: ignore[arg-type]
    assert after >= before - 0.01
    assert after >= 0.83


def test_dense_and_hybrid_on_real_gold_sets(tmp_path: Path, shared_data: Path) -> None:
    settings = load_settings(eval={"history": None, "misses": None})

    def overall(gold: Path, corpus: Path) -> dict[str, dict[str, float]]:
        request = EvalRequest(gold=gold, corpus=corpus, retrievers=("bm25", "dense", "hybrid"),
                              ks=(1, 10, 20), progress=False)  # fmt: skip
        return {r.retriever: r.overall for r in run_eval(request, settings).reports}

    xquad = overall(*write_xquad(tmp_path / "xq", "en"))
    assert xquad["dense"]["recall@10"] >= 0.98 and xquad["hybrid"]["recall@10"] >= 0.99
    multihop = overall(*write_multihop(tmp_path / "mh"))
    assert multihop["hybrid"]["recall@10"] >= multihop["bm25"]["recall@10"] + 0.02
    assert multihop["hybrid"]["recall@20"] >= multihop["dense"]["recall@20"]
