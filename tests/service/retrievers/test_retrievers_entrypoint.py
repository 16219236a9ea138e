"""EntrypointRetriever: a module written to tmp_path, imported through sys.path."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.evaluation.evaluate import evaluate_run, retrieve_run
from service.evaluation.trec import read_run, write_run
from service.records import GoldQuestion, ScoredDoc
from service.retrievers.base import RetrieverError
from service.retrievers.entrypoint import EntrypointRetriever

MODULE = """
from service.records import ScoredDoc

def tuples(question, k):
    return [("a", 1.0), ("b", 3.0), ("c", 2)]  # ignores k: the wrapper cuts

def dicts(question, k):
    return [{"id": "a", "score": 2}, {"id": 9, "score": 1.5, "extra": True}]

def scored(question, k):
    return [ScoredDoc("z", 0.25), ScoredDoc("y", 0.75)]

def boom(question, k):
    raise RuntimeError("cannot answer " + question)

def bad_score(question, k):
    return [("a", "high")]

def twice(question, k):
    return [("p2", 0.5), ("p1", 1.0), ("p1", 1.0), ("p2", 0.2)]  # every id twice

def not_a_list(question, k):
    return {"a": 1.0}

def distances(question, k):
    return [("g", 0.1), ("x", 0.2), ("y", 0.3)]  # FAISS L2: lower is better, best first

class Searcher:
    def __init__(self, bonus=0.0):
        self.bonus = bonus
        self.batches = 0

    def search(self, question, k):
        return [("s", 1.0 + self.bonus)]

    def search_batch(self, questions, k):
        self.batches += 1
        return [[("b", float(len(q)))] for q in questions]

searcher = Searcher()
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "gw_entry_fixture.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "gw_entry_fixture"


def test_tuples_are_sorted_and_cut(module: str) -> None:
    retriever = EntrypointRetriever(f"{module}:tuples", name="mine")
    assert retriever.search("q", 2) == [ScoredDoc("b", 3.0), ScoredDoc("c", 2.0)]
    assert retriever.search("q", 5) == [("b", 3.0), ("c", 2.0), ("a", 1.0)]
    assert retriever.search_batch(["q1", "q2"], 1) == [[("b", 3.0)], [("b", 3.0)]]


def test_repeated_ids_are_reported_and_scored_as_a_run_file_would_be(
    module: str, tmp_path: Path
) -> None:
    """Trial 11: a retriever returning every id twice had reported n_duplicates 0 (the wrapper
    dropped the repeats). The repeats are kept, so eval counts them as it does a TREC run's:
    by hand, p1 1.0, p1 1.0, p2 0.5, p2 0.2 → ranking p1, p2 (best rank kept, p2 moves up to
    2), 2 duplicates; gold p2: recall@1 0, recall@2 1, MRR 1/2 — as the same rows read from a
    run file."""
    retriever = EntrypointRetriever(f"{module}:twice", name="twice")
    assert retriever.search("q", 1) == [("p1", 1.0), ("p1", 1.0)]  # one distinct id, twice
    run = retrieve_run(retriever, [GoldQuestion("q1", "?", ("p2",))], depth=5)
    assert run == {"q1": [("p1", 1.0), ("p1", 1.0), ("p2", 0.5), ("p2", 0.2)]}
    questions = [GoldQuestion("q1", "?", ("p2",))]
    report = evaluate_run("twice", questions, run, ks=[1, 2])
    assert report.n_duplicates == 2
    assert report.overall["recall@1"] == 0.0
    assert report.overall["recall@2"] == 1.0
    assert report.overall["mrr"] == 0.5
    write_run(run, tmp_path / "twice.run", "twice")
    from_file = evaluate_run("twice", questions, read_run(tmp_path / "twice.run"), ks=[1, 2])
    assert (from_file.n_duplicates, from_file.overall) == (2, report.overall)


def test_dicts_and_scored_docs(module: str) -> None:
    assert EntrypointRetriever(f"{module}:dicts").search("q", 5) == [("a", 2.0), ("9", 1.5)]
    assert EntrypointRetriever(f"{module}:scored").search("q", 5) == [("y", 0.75), ("z", 0.25)]


def test_an_object_with_search_batch_is_used_for_batches(module: str) -> None:
    retriever = EntrypointRetriever(f"{module}:searcher")
    assert retriever.search("q", 3) == [ScoredDoc("s", 1.0)]
    assert retriever.search_batch(["ab", "abcd"], 3) == [[("b", 2.0)], [("b", 4.0)]]
    import gw_entry_fixture  # type: ignore[import-not-found]

    assert gw_entry_fixture.searcher.batches == 1


def test_a_class_is_built_with_params(module: str) -> None:
    retriever = EntrypointRetriever(f"{module}:Searcher", bonus=1.5)
    assert retriever.search("q", 1) == [ScoredDoc("s", 2.5)]
    with pytest.raises(ValueError, match="not a class"):
        EntrypointRetriever(f"{module}:tuples", bonus=1.0)


@pytest.mark.parametrize(
    "path",
    ["gw_no_such_module_xyz:f", "json:no_such_callable", "no_colon_here", ":f", "json:"],
)
def test_bad_paths_raise_value_error_naming_the_entrypoint(path: str) -> None:
    with pytest.raises(ValueError) as caught:
        EntrypointRetriever(path)
    assert repr(path) in str(caught.value)


def test_errors_from_the_callable_never_echo_the_question(module: str) -> None:
    question = "salary of Jane Doe"
    for attribute, match in [("boom", "raised RuntimeError"), ("bad_score", "not a number"),
                             ("not_a_list", "expected a list")]:  # fmt: skip
        with pytest.raises(RetrieverError, match=match) as caught:
            EntrypointRetriever(f"{module}:{attribute}").search(question, 3)
        assert question not in str(caught.value)


def test_distances_returned_best_first_are_counted_before_sorting(module: str) -> None:
    """Trial 12 F12: the wrapper sorts by score descending before eval sees the lists, so
    eval must learn their returned order from the wrapper. Six questions, gold ``g``
    returned first at distance 0.1: ranked by score it is third (RR 1/3 by hand), and all 6
    lists came ascending: the report warns."""
    retriever = EntrypointRetriever(f"{module}:distances", name="faiss")
    questions = [GoldQuestion(f"q{i}", "?", ("g",)) for i in range(6)]
    run = retrieve_run(retriever, questions, depth=3)
    assert run["q0"] == [("y", 0.3), ("x", 0.2), ("g", 0.1)]  # sorted: the order eval sees
    assert (retriever.returned_order.rising, retriever.returned_order.ordered) == (6, 6)
    unwarned = evaluate_run("faiss", questions, run, ks=[1])
    assert unwarned.ascending == (0, 6) and unwarned.order_warning() is None
    report = evaluate_run("faiss", questions, run, ks=[1], ascending=(6, 6))
    assert report.overall["mrr"] == pytest.approx(1 / 3)
    assert (report.order_warning() or "").startswith("faiss: 6 of 6 result lists came in "
                                                     "ascending score order")  # fmt: skip
