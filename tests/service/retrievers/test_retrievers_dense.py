"""The dense retriever and the new hybrid (BM25 + dense by RRF), with hand-made vectors so
every rank and fused score is worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from service.embeddings.model import CachedEmbedder
from service.records import Passage
from service.retrievers.bm25 import BM25Retriever
from service.retrievers.dense import DenseRetriever, top_k_dense
from service.retrievers.hybrid import HybridRetriever
from service.retrievers.registry import build_retrievers
from service.settings import load_settings

#: 2-d unit vectors (angle in degrees from the x axis) for passages and questions.
ANGLES = {
    "hostel fee per semester": 0, "exam dates for term two": 90, "library hours": 45,
    "hostel charges": 10, "when are exams": 80, "opposite": 200,
}  # fmt: skip
CORPUS = [Passage("fee", "hostel fee per semester"), Passage("exam", "exam dates for term two"),
          Passage("lib", "library hours")]  # fmt: skip


class AngleEmbedder:
    """Embeds a known text as ``(cos θ, sin θ)``; counts the texts it was asked for."""

    name = "angles"
    dim = 2

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        radians = np.radians([ANGLES[t] for t in texts])
        return np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32)


def test_dense_ranks_by_cosine() -> None:
    # "hostel charges" (10°): cos to fee (0°) = cos 10° = 0.98481, lib (45°) = cos 35° =
    # 0.81915, exam (90°) = cos 80° = 0.17365.
    dense = DenseRetriever(CORPUS, embedder=AngleEmbedder())
    ranked = dense.search("hostel charges", 3)
    assert [d.doc_id for d in ranked] == ["fee", "lib", "exam"]
    assert [d.score for d in ranked] == pytest.approx([0.98481, 0.81915, 0.17365], abs=1e-5)
    assert [d.doc_id for d in dense.search("when are exams", 1)] == ["exam"]
    # 200°: cos to fee = cos 200° = -0.940, lib = cos 155° = -0.906, exam = cos 110° = -0.342
    assert dense.search("opposite", 3) == []
    assert dense.search_batch(["hostel charges", "when are exams"], 2) == [
        dense.search("hostel charges", 2), dense.search("when are exams", 2)]  # fmt: skip
    with pytest.raises(ValueError, match="k must be"):
        dense.search("hostel charges", 0)


def test_corpus_is_embedded_once_and_bypasses_the_question_cache() -> None:
    inner = AngleEmbedder()
    cached = CachedEmbedder(inner, capacity=100)
    dense = DenseRetriever(CORPUS, embedder=cached)
    assert inner.seen == [p.text for p in CORPUS] and cached.misses == 0
    dense.search("hostel charges", 2)
    dense.search("hostel charges", 2)
    assert inner.seen[3:] == ["hostel charges"] and cached.hits == 1


def test_top_k_dense_ties_by_corpus_order() -> None:
    scores = np.array([[0.5, 0.7, 0.5, 0.5, 0.0]], dtype=np.float32)
    ranked = top_k_dense(scores, 3, ["a", "b", "c", "d", "e"])[0]
    assert [d.doc_id for d in ranked] == ["b", "a", "c"]
    assert [d.doc_id for d in top_k_dense(scores, 10, list("abcde"))[0]] == ["b", "a", "c", "d"]


def test_hybrid_of_bm25_and_dense_by_hand() -> None:
    # Question "hostel charges": BM25 matches only "hostel" -> [fee]; dense -> [fee, lib, exam].
    # RRF (k = 60): fee 1/61 + 1/61 = 0.0327869, lib 1/62 = 0.0161290, exam 1/63 = 0.0158730.
    bm25 = BM25Retriever(CORPUS)
    assert [d.doc_id for d in bm25.search("hostel charges", 3)] == ["fee"]
    dense = DenseRetriever(CORPUS, embedder=AngleEmbedder())
    fused = HybridRetriever([bm25, dense]).search("hostel charges", 3)
    assert [d.doc_id for d in fused] == ["fee", "lib", "exam"]
    assert [d.score for d in fused] == pytest.approx([2 / 61, 1 / 62, 1 / 63], rel=1e-12)


def test_built_in_hybrid_is_bm25_plus_dense_and_shares_members() -> None:
    settings = load_settings()
    embedder = AngleEmbedder()
    built = build_retrievers(["hybrid", "dense", "hybrid-lexical"], settings, CORPUS,
                             embedder=embedder)  # fmt: skip
    hybrid = built["hybrid"]
    assert isinstance(hybrid, HybridRetriever)
    assert [m.name for m in hybrid.members] == ["bm25", "dense"]
    assert hybrid.members[1] is built["dense"]  # one corpus matrix
    assert embedder.seen == [p.text for p in CORPUS]  # embedded once
    lexical = built["hybrid-lexical"]
    assert [m.name for m in lexical.members] == ["bm25", "tfidf"]  # type: ignore[attr-defined]
    assert lexical.members[0] is hybrid.members[0]  # type: ignore[attr-defined]


def test_dense_from_settings_uses_the_configured_backend() -> None:
    texts = ["hostel fee per semester", "exam dates for term two", "library opening hours",
             "hostel rooms and mess"]  # fmt: skip
    corpus = [Passage(pid, text) for pid, text in zip("abcd", texts, strict=True)]
    settings = load_settings(analytics={"embeddings": {"backend": "tfidf",
                                                       "tfidf_components": 3}})  # fmt: skip
    dense = build_retrievers(["dense"], settings, corpus)["dense"]
    assert isinstance(dense, DenseRetriever)
    assert dense.embedder.name.startswith("tfidf-lsa:3:4")  # fitted on the 4 passages
    assert dense.search("exam dates", 1)[0].doc_id == "b"
