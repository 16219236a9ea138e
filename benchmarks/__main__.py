"""Run every benchmark with one command and print the tables: ``python -m benchmarks``.

Each figure is printed next to its reference measured in the same run (ratios: these
machines are noisy). Sections:

1. gold-set scoring vs ranx and pytrec_eval (10,000 questions x 100 results);
2. built-in retriever speed (bm25s vs rank-bm25, goldwatch bm25/tfidf/hybrid) on XQuAD;
3. XQuAD retrieval quality through ``goldwatch eval`` (English and cross-lingual);
4. the live path without analytics: file source vs a JSON-decode loop, Kafka vs raw
   kafka-python on the same topic (starts its own Tansu broker);
5. the full analytics pipeline vs the pipeline without analytics, with per-stage costs;
6. language identification vs plain langdetect; 7. PII scrubbing; 8. topic model quality
   and speed on CLINC150.

``python -m benchmarks --quick`` runs smaller sizes (about 3 minutes).
"""

from __future__ import annotations

import sys
import time

from benchmarks import (
    bench_analytics,
    bench_language,
    bench_metrics,
    bench_pii,
    bench_pipeline,
    bench_retrievers,
    bench_topics,
    xquad_eval,
)


def main(argv: list[str] | None = None) -> None:
    quick = "--quick" in (argv if argv is not None else sys.argv[1:])
    events = "20000" if quick else "100000"
    started = time.perf_counter()
    sections = [
        ("1. gold-set scoring (ratio = ours / theirs; lower time is better)", bench_metrics.main),
        ("2. built-in retriever speed, XQuAD en (240 paragraphs, 1190 questions, k=10)",
         bench_retrievers.main),
        ("3. XQuAD retrieval quality through goldwatch eval", xquad_eval.main),
        ("4. live path without analytics (file and Kafka)",
         lambda: bench_pipeline.main(["--events", events])),
        ("5. full analytics pipeline", lambda: bench_analytics.main(
            ["--events", "20000" if quick else "50000"])),
        ("6. language identification", bench_language.main),
        ("7. PII scrubbing", bench_pii.main),
        ("8. topics on CLINC150", bench_topics.main),
    ]  # fmt: skip
    for title, section in sections:
        print(f"\n== {title} ==", flush=True)
        section()
    print(f"\ntotal benchmark time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
