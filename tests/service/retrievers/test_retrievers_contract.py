"""The Retriever contract, the same checks over every kind (river-style estimator suite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from service.records import Passage, ScoredDoc
from service.retrievers.base import Retriever
from service.retrievers.registry import build_retriever
from service.settings import RetrieverConfig
from tests.service.retrievers.retriever_fakes import HAND_CORPUS, serve

KINDS = ["bm25", "tfidf", "dense", "hybrid", "http", "entrypoint"]
QUESTIONS = ["scholarship for students", "term fee", "", "zzzz", "library midnight"]

ENTRY_MODULE = """
def search(question, k):
    return [("e%d" % i, float(len(question) % 7) / (i + 1)) for i in range(6)][::-1]
"""


@pytest.fixture(params=KINDS)
def retriever(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Retriever]:
    kind: str = request.param
    corpus: list[Passage] = list(HAND_CORPUS)
    if kind == "http":
        with serve() as server:
            remote = build_retriever(
                RetrieverConfig(name="remote", kind="http", url=server.url), None
            )
            yield remote
            remote.close()  # type: ignore[attr-defined]
        return
    if kind == "entrypoint":
        (tmp_path / "gw_contract_entry.py").write_text(ENTRY_MODULE, encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        config = RetrieverConfig(
            name="ep", kind="entrypoint", entrypoint="gw_contract_entry:search"
        )
        yield build_retriever(config, None)
        return
    yield build_retriever(RetrieverConfig(name=kind, kind=kind), corpus)  # type: ignore[arg-type]


def check_ranking(results: list[ScoredDoc], k: int) -> None:
    assert isinstance(results, list)
    assert len(results) <= k
    assert all(type(doc) is ScoredDoc for doc in results)
    assert all(isinstance(doc.doc_id, str) and isinstance(doc.score, float) for doc in results)
    scores = [doc.score for doc in results]
    assert scores == sorted(scores, reverse=True)
    assert len({doc.doc_id for doc in results}) == len(results)


def test_is_a_retriever_with_a_name(retriever: Retriever) -> None:
    assert isinstance(retriever, Retriever)
    assert isinstance(retriever.name, str) and retriever.name


@pytest.mark.parametrize("k", [1, 2, 3, 100])
def test_search_returns_at_most_k_sorted_scored_docs(retriever: Retriever, k: int) -> None:
    for question in QUESTIONS:
        check_ranking(retriever.search(question, k), k)


def test_search_batch_is_one_list_per_question_in_order(retriever: Retriever) -> None:
    batch = retriever.search_batch(QUESTIONS, 3)
    assert len(batch) == len(QUESTIONS)
    for question, results in zip(QUESTIONS, batch, strict=True):
        check_ranking(results, 3)
        assert results == retriever.search(question, 3)


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_raises(retriever: Retriever, k: int) -> None:
    with pytest.raises(ValueError):
        retriever.search("scholarship", k)
    with pytest.raises(ValueError):
        retriever.search_batch(["scholarship"], k)
