"""File I/O over the real data sets in ../shared/data (counts from each folder's SOURCE.md)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from service.data.corpus import load_corpus
from service.data.goldset import load_gold_set, load_trec_gold_set, validate_against_corpus
from service.evaluation.trec import read_qrels, read_run, trec_order, write_qrels, write_run


def test_trec_eval_qrels_counts(shared_data: Path) -> None:
    path = shared_data / "trec_eval-tests" / "qrels.test"
    qrels = read_qrels(path)
    # SOURCE.md: 3 topics (301: 1708, 302: 1061, 303: 912 judgements, 3681 lines), 561 relevant.
    assert sorted(qrels) == ["301", "302", "303"]
    assert {qid: len(docs) for qid, docs in qrels.items()} == {"301": 1708, "302": 1061, "303": 912}
    assert sum(len(docs) for docs in qrels.values()) == 3681
    assert sum(rel > 0 for docs in qrels.values() for rel in docs.values()) == 561
    assert {rel for docs in qrels.values() for rel in docs.values()} == {0, 1}


def test_trec_eval_qrels_round_trip(shared_data: Path, tmp_path: Path) -> None:
    qrels = read_qrels(shared_data / "trec_eval-tests" / "qrels.rel_level")
    write_qrels(qrels, tmp_path / "qrels")
    assert read_qrels(tmp_path / "qrels") == qrels


def test_trec_eval_results_test(shared_data: Path) -> None:
    run = read_run(shared_data / "trec_eval-tests" / "results.test")
    # SOURCE.md: 500 docs per topic, 1500 lines.
    assert {qid: len(docs) for qid, docs in run.items()} == {"301": 500, "302": 500, "303": 500}
    first = run["301"][0]
    assert first.doc_id == "FR940202-2-00150" and first.score == 2.129133


def test_trec_eval_results_trunc_with_junk_columns(shared_data: Path, tmp_path: Path) -> None:
    path = shared_data / "trec_eval-tests" / "results.trunc"
    lines = [line.split() for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 584 and any(len(cols) > 6 for cols in lines)
    run = read_run(path)
    assert sum(len(docs) for docs in run.values()) == 584
    assert run["301"][0].doc_id == "FBIS3-27619"
    write_run(run, tmp_path / "run", tag="STANDARD")
    back = read_run(tmp_path / "run")
    assert back == {qid: trec_order(docs) for qid, docs in run.items()}


def test_trec_gold_set_from_trec_eval_graded_qrels(shared_data: Path, tmp_path: Path) -> None:
    topics = tmp_path / "topics.tsv"
    topics.write_text("301\torganized crime\n302\tpolio\n303\thubble\n", encoding="utf-8")
    gold = load_trec_gold_set(shared_data / "trec_eval-tests" / "qrels.rel_level", topics)
    # Graded levels 1..4 survive; -1 and 0 judgments are not gold.
    relevance = [rel for q in gold for rel in q.qrels_row().values()]
    assert sorted(set(relevance)) == [1, 2, 3, 4]
    assert len(relevance) == 462 + 14 + 77 + 6
    assert gold.unanswerable() == ()
    binary = load_trec_gold_set(shared_data / "trec_eval-tests" / "qrels.test", topics)
    assert sum(len(q.gold) for q in binary) == 561


def _context_id(context: str) -> str:
    return "ctx-" + hashlib.sha256(context.encode("utf-8")).hexdigest()[:12]


def squad_to_jsonl(folder: Path, gold_path: Path, corpus_path: Path) -> None:
    """Convert the SQuAD 2 sample to gold-set and corpus JSONL (one passage per context)."""
    queries = json.loads((folder / "queries.json").read_text(encoding="utf-8"))["queries"]
    truth = json.loads((folder / "ground_truth.json").read_text(encoding="utf-8"))
    gold_rows, passages = [], {}
    for query in queries:
        answer = truth[query["id"]]
        ctx = _context_id(query["context"])
        passages[ctx] = {"id": ctx, "text": query["context"], "doc_type": "wikipedia"}
        impossible = answer["is_impossible"]
        needles = sorted({a for a in answer["answers"] if a})
        gold_rows.append(
            {"id": query["id"], "question": query["question"], "source": "written"}
            | {
                "gold": [] if impossible else [ctx],
                "answer_contains": [] if impossible else needles,
            }
        )
    for path, rows in ((gold_path, gold_rows), (corpus_path, list(passages.values()))):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_squad2_sample_unanswerable_rows(shared_data: Path, tmp_path: Path) -> None:
    squad = shared_data / "squad2-dev-sample500"
    squad_to_jsonl(squad, tmp_path / "gold.jsonl", tmp_path / "corpus.jsonl")
    gold = load_gold_set(tmp_path / "gold.jsonl")
    corpus = load_corpus(tmp_path / "corpus.jsonl")
    # SOURCE.md: 500 questions, 411 distinct contexts, 258 unanswerable, 242 answerable.
    assert len(gold) == 500 and len(corpus) == 411
    assert len(gold.unanswerable()) == 258
    assert all(q.kind == "unanswerable" and q.gold == () for q in gold.unanswerable())
    assert len(gold.answerable()) == 242 and len(gold.qrels()) == 242
    assert all(q.answer_contains for q in gold.answerable())
    assert validate_against_corpus(gold, corpus) == []
