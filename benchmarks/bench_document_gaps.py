"""Benchmark: harvest's document coverage gaps on a real corpus (does it flag covered documents?).

Set-up (deterministic per seed): the corpus is XQuAD's 240 English paragraphs (48 Wikipedia
articles, each passage's ``doc`` its article; ``xquad/SOURCE.md``); production is BM25 over
it (top 5). A draw picks 24 *covered* articles; the gold set has, per covered article, 2 of its
questions (``--gold per-article``) or about 9 % of them (``proportional``, at least 1), plus
10 unanswerable rows (``gold: []``). Live traffic:

* ``A``: the other questions of the covered articles, each once, shuffled;
* ``B``: ``A`` with the questions of one uncovered article mixed into its last 60 %.

Each event's document is its first BM25 passage's (:func:`service.harvest.signals.
production_documents`), counted by :class:`~service.harvest.signals.CoverageTracker` as the
harvest stage counts it (window 1,000, 200 events before any gap). Reported per draw and
traffic: how often the first passage is in another article than the question's, the
under-covered documents over all traffic (:meth:`CoverageTracker.document_gaps`, the reports'
list) and how many events the window gives a document gap ≥ 0.02 (harvest's reason), per
document and how many of them on covered articles.

Usage: ``python -m benchmarks.bench_document_gaps [--draws N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from typing import Any

from benchmarks.datasets import Question, load_xquad
from service.coverage import document_counts
from service.data.corpus import Corpus
from service.events import QueryLogEvent
from service.harvest.signals import (
    DOCUMENT,
    CoverageTracker,
    passage_documents,
    production_documents,
)
from service.retrievers.bm25 import BM25Retriever

COVERED = 24
UNANSWERABLE = 10
MIN_GAP = 0.02


def _events(retriever: BM25Retriever, questions: list[Question]) -> list[QueryLogEvent]:
    found = retriever.search_batch([q for _, q, _ in questions], 5)
    return [
        QueryLogEvent.model_validate(
            {
                "event_id": f"e{i}",
                "timestamp": "2026-12-01T00:00:00Z",
                "question": question,
                "retrieval": {
                    "retriever": "bm25",
                    "results": [{"id": h.doc_id, "score": float(h.score)} for h in hits],
                },
            }
        )  # fmt: skip
        for i, ((_, question, _), hits) in enumerate(zip(questions, found, strict=True))
    ]


def draw(seed: int, gold_rule: str, surge: bool) -> dict[str, Any]:
    """One draw (module docstring): its figures as a JSON-able dict."""
    passages, questions = load_xquad("en")
    doc_of = passage_documents((p.id, p.doc) for p in passages)
    articles = sorted(set(doc_of.values()))
    rnd = random.Random(seed)
    covered = set(rnd.sample(articles, COVERED))
    by_article: dict[str, list[Question]] = {}
    for q in questions:
        by_article.setdefault(doc_of[q[2]], []).append(q)
    gold: list[Question] = []
    live: list[Question] = []
    for article in sorted(covered):
        asked = by_article[article][:]
        rnd.shuffle(asked)
        k = max(1, round(len(asked) * 0.09)) if gold_rule == "proportional" else 2
        gold += asked[:k]
        live += asked[k:]
    qrels = [[g] for _, _, g in gold] + [[] for _ in range(UNANSWERABLE)]
    rnd.shuffle(live)
    target = None
    if surge:
        target = sorted(set(articles) - covered)[seed % (len(articles) - COVERED)]
        cut = int(len(live) * 0.4)
        tail = live[cut:] + by_article[target]
        rnd.shuffle(tail)
        live = live[:cut] + tail
    events = _events(BM25Retriever(Corpus(tuple(passages))), live)
    documents = production_documents(events, doc_of)
    tracker = CoverageTracker({DOCUMENT: document_counts(qrels, doc_of)}, 200, 1_000, 2.0)
    gaps = tracker.update_each([{} for _ in events], documents)[DOCUMENT]
    flagged = Counter(d for d, g in zip(documents, gaps, strict=True) if d and g >= MIN_GAP)
    elsewhere = sum(d != doc_of[g] for d, (_, _, g) in zip(documents, live, strict=True))
    return {
        "seed": seed, "gold": gold_rule, "surge": target, "gold_rows": len(gold),
        "live": len(events), "first_passage_elsewhere": elsewhere,
        "listed": [g._asdict() for g in tracker.document_gaps(MIN_GAP)],
        "events_with_gap": dict(flagged),
        "covered_events_with_gap": sum(n for d, n in flagged.items() if d in covered),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = [draw(seed, rule, surge) for seed in range(args.draws)
            for surge in (False, True) for rule in ("per-article", "proportional")]  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        listed = ", ".join(f"{g['label']} {g['live']}/{g['live_total']} vs {g['gold']}/"
                           f"{g['gold_total']} ({g['gap']:.3f})" for g in r["listed"])  # fmt: skip
        print(f"seed {r['seed']} gold {r['gold']} ({r['gold_rows']} rows)"
              + (f", surge {r['surge']}" if r["surge"] else "")
              + f": {r['live']} live, first passage elsewhere {r['first_passage_elsewhere']}; "
              f"listed: {listed or 'none'}; events with a gap {r['events_with_gap'] or 'none'} "
              f"(covered: {r['covered_events_with_gap']})")  # fmt: skip


if __name__ == "__main__":
    main()
