"""Run every benchmark with one command and print the tables: ``python -m benchmarks``.

1. Gold-set scoring: goldwatch's trec_eval-exact metrics against ranx and pytrec_eval on the
   same 10,000 questions × 100 results, in the same process (time ratios).
2. Built-in retrievers: bm25s vs rank-bm25 and goldwatch's bm25 / tfidf / hybrid, questions
   per second on XQuAD.
3. XQuAD through ``goldwatch eval``: recall@k and MRR, English and cross-lingual.
"""

from __future__ import annotations

import time

from benchmarks import bench_metrics, bench_retrievers, xquad_eval


def main() -> None:
    started = time.perf_counter()
    print("== 1. gold-set scoring (lower time is better; ratio = ours / theirs) ==")
    bench_metrics.main()
    print("\n== 2. built-in retriever speed, XQuAD en (240 paragraphs, 1190 questions, k=10) ==")
    bench_retrievers.main()
    print("\n== 3. XQuAD retrieval quality through goldwatch eval (English paragraphs) ==")
    xquad_eval.main()
    print(f"\ntotal benchmark time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
