"""build_retriever / build_retrievers from RetrieverConfig."""

from __future__ import annotations

import pytest

from service.records import Passage
from service.retrievers.bm25 import BM25Retriever
from service.retrievers.http import HttpRetriever
from service.retrievers.hybrid import HybridRetriever
from service.retrievers.registry import build_retriever, build_retrievers
from service.retrievers.tfidf import TfidfRetriever
from service.settings import RetrieverConfig, Settings


def test_builtins_get_name_and_params(hand_corpus: list[Passage]) -> None:
    config = RetrieverConfig(name="bm25-strict", kind="bm25", params={"k1": 1.2, "b": 0.5})
    retriever = build_retriever(config, hand_corpus)
    assert isinstance(retriever, BM25Retriever) and retriever.name == "bm25-strict"
    tfidf = build_retriever(RetrieverConfig(name="t", kind="tfidf"), hand_corpus)
    assert isinstance(tfidf, TfidfRetriever)


def test_builtin_without_corpus_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no corpus"):
        build_retriever(RetrieverConfig(name="bm25", kind="bm25"), None)
    with pytest.raises(ValueError, match="no corpus"):
        build_retrievers(["hybrid"], Settings(), None)


def test_unknown_params_are_a_value_error(hand_corpus: list[Passage]) -> None:
    config = RetrieverConfig(name="bm25", kind="bm25", params={"k3": 1})
    with pytest.raises(ValueError, match="bad params"):
        build_retriever(config, hand_corpus)


def test_hybrid_without_resolver_builds_default_members(hand_corpus: list[Passage]) -> None:
    config = RetrieverConfig(name="hy", kind="hybrid", rrf_k=10)
    hybrid = build_retriever(config, hand_corpus)
    assert isinstance(hybrid, HybridRetriever) and hybrid.rrf_k == 10
    assert [member.name for member in hybrid.members] == ["bm25", "dense"]  # issue 17


def test_build_retrievers_shares_indexes(hand_corpus: list[Passage]) -> None:
    settings = Settings(
        retrievers=(RetrieverConfig(name="fused", kind="hybrid", members=("bm25", "hybrid")),)
    )
    built = build_retrievers(["bm25", "fused", "hybrid"], settings, hand_corpus)
    assert list(built) == ["bm25", "fused", "hybrid"]
    fused, hybrid = built["fused"], built["hybrid"]
    assert isinstance(fused, HybridRetriever) and isinstance(hybrid, HybridRetriever)
    assert fused.members[0] is built["bm25"] is hybrid.members[0]
    assert fused.members[1] is hybrid
    assert fused.search("scholarship", 1)[0].doc_id == "p1"


def test_member_cycles_are_reported(hand_corpus: list[Passage]) -> None:
    configs = {
        "a": RetrieverConfig(name="a", kind="hybrid", members=("bm25", "b")),
        "b": RetrieverConfig(name="b", kind="hybrid", members=("a",)),
        "bm25": RetrieverConfig(name="bm25", kind="bm25"),
    }
    with pytest.raises(ValueError, match="cycle: a -> b -> a"):
        build_retrievers(["a"], configs.__getitem__, hand_corpus)


def test_http_and_entrypoint_need_no_corpus() -> None:
    config = RetrieverConfig(
        name="remote", kind="http", url="http://127.0.0.1:9/", timeout_s=1.5, retries=0,
        headers={"X-Key": "k"}, params={"concurrency": 2},
    )  # fmt: skip
    remote = build_retriever(config, None)
    assert isinstance(remote, HttpRetriever)
    assert (remote.retries, remote.concurrency) == (0, 2)
    remote.close()
    entry = build_retriever(
        RetrieverConfig(name="e", kind="entrypoint", entrypoint="math:hypot"), None
    )
    assert entry.name == "e"
    with pytest.raises(KeyError, match="unknown retriever"):
        build_retrievers(["nope"], Settings(), None)
