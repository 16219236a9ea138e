"""Benchmark the built-in retrievers on XQuAD (240 English paragraphs, 1190 questions).

Index time (seconds) and questions per second at k = 10, median of ``repeats``
runs on one process. ``bm25s`` and ``rank-bm25`` are timed as libraries on the same
pre-tokenised input (our tokeniser, no stop words; rank-bm25 top-k by ``np.argpartition``),
then goldwatch's ``bm25``, ``tfidf`` and ``hybrid`` end to end (tokenising included).
Retrieval quality (recall@k, MRR per question language) is measured through ``goldwatch
eval`` itself in :mod:`benchmarks.xquad_eval`.

Run: ``python -m benchmarks.bench_retrievers`` (from the repository root).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import bm25s
import numpy as np
from rank_bm25 import BM25Okapi

from benchmarks.datasets import load_xquad
from service.records import Passage
from service.retrievers.bm25 import BM25Retriever
from service.retrievers.hybrid import HybridRetriever
from service.retrievers.text import tokenize
from service.retrievers.tfidf import TfidfRetriever

CUTOFFS: tuple[int, ...] = (1, 5, 10, 20)
DEPTH = 100
LANGUAGES: tuple[str, ...] = ("en", "es", "hi", "zh")


def _median_time(function: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Return (median seconds over ``repeats`` calls, the last call's result)."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _speed_row(name: str, index_s: float, query_s: float, n_questions: int) -> dict[str, Any]:
    return {
        "table": "speed",
        "retriever": name,
        "index_s": round(index_s, 4),
        "queries_per_s": round(n_questions / query_s),
    }


def library_speed(passages: Sequence[Passage], questions: list[str], repeats: int) -> list[dict]:
    """Time bm25s and rank-bm25 on identical token lists (index, then 1190 queries at k=10)."""
    docs = [tokenize(p.text) for p in passages]
    queries = [tokenize(q) for q in questions]

    def build_bm25s() -> bm25s.BM25:
        index = bm25s.BM25(backend="numpy")
        index.index(docs, show_progress=False)
        return index

    index_s, fast = _median_time(build_bm25s, repeats)
    query_s, _ = _median_time(lambda: fast.retrieve(queries, k=10, show_progress=False), repeats)
    rows = [_speed_row("bm25s (library)", index_s, query_s, len(queries))]

    index_s, okapi = _median_time(lambda: BM25Okapi(docs), repeats)

    def rank_bm25_queries() -> list[np.ndarray]:
        tops = []
        for query in queries:
            scores = okapi.get_scores(query)
            top = np.argpartition(-scores, 10)[:10]
            tops.append(top[np.argsort(-scores[top])])
        return tops

    query_s, _ = _median_time(rank_bm25_queries, repeats)
    rows.append(_speed_row("rank-bm25 (library)", index_s, query_s, len(queries)))
    return rows


def builtin_speed(passages: Sequence[Passage], questions: list[str], repeats: int) -> list[dict]:
    """Time goldwatch's bm25, tfidf and hybrid end to end (index, then search_batch at k=10)."""
    index_bm25, bm25 = _median_time(lambda: BM25Retriever(passages), repeats)
    index_tfidf, tfidf = _median_time(lambda: TfidfRetriever(passages), repeats)
    hybrid = HybridRetriever([bm25, tfidf])
    rows = []
    for retriever, index_s in ((bm25, index_bm25), (tfidf, index_tfidf), (hybrid, 0.0)):
        query_s, _ = _median_time(lambda r=retriever: r.search_batch(questions, 10), repeats)
        rows.append(_speed_row(f"{retriever.name} (goldwatch)", index_s, query_s, len(questions)))
    rows[-1]["index_s"] = round(index_bm25 + index_tfidf, 4)  # hybrid = both indexes
    return rows


def run(repeats: int = 3) -> list[dict[str, Any]]:
    """Time the libraries and the built-ins; return one dict per row."""
    passages, questions = load_xquad("en")
    texts = [q[1] for q in questions]
    return library_speed(passages, texts, repeats) + builtin_speed(passages, texts, repeats)


def _print_table(rows: list[dict[str, Any]]) -> None:
    columns = [key for key in rows[0] if key != "table"]
    widths = [max(len(col), *(len(str(row[col])) for row in rows)) for col in columns]
    print("  ".join(col.ljust(w) for col, w in zip(columns, widths, strict=True)))
    for row in rows:
        print("  ".join(str(row[c]).ljust(w) for c, w in zip(columns, widths, strict=True)))


def main() -> None:
    """Run the speed benchmark and print its table."""
    _print_table(run())


if __name__ == "__main__":
    print("XQuAD en: 240 paragraphs, 1190 questions, k=10\n")
    main()
