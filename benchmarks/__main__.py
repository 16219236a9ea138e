"""Run the benchmarks with one command: ``python -m benchmarks [--quick] [--detail]``.

By default it prints the one summary table of issue 10 (``benchmarks/summary.py``): every
figure next to its reference measured in the same run (ratios: these machines are noisy),
the absolute figures alongside, the target and whether it is met. About 12 minutes on
2 cores; ``--quick`` about 4 (smaller sizes, said in the table's notes).

``--detail`` first runs the detail sections below, each printing its own table, and then
the summary; ``--sections 1,4`` runs only those sections (no summary). Sections:

1. gold-set scoring vs ranx and pytrec_eval (10,000 questions x 100 results);
2. built-in retriever speed (bm25s vs rank-bm25, goldwatch bm25/tfidf/hybrid) on XQuAD;
3. XQuAD retrieval quality through ``goldwatch eval`` (English and cross-lingual);
4. the live path without analytics: file source vs a JSON-decode loop, Kafka vs raw
   kafka-python on the same topic (starts its own Tansu broker);
5. the full analytics pipeline vs the pipeline without analytics, with per-stage costs;
6. language identification vs plain langdetect; 7. PII scrubbing; 8. topic model quality
   and speed on CLINC150;
9. ``goldwatch replay`` with the defaults on a production-shaped log (``bench_production``:
   10 retrieved passages, answers with citations, feedback, the multilingual question mix,
   duplicates, bad lines) next to analytics off and a ``json.loads`` loop, medians of 3 —
   the figure the README quotes — and the same events at ~1,000 a day (20,000 lines over
   ~20 days: drift's cost is per day of event time), with per-stage tables. Section 5's
   stream is the favourable one (text-only answers, no retrieval results).

Other benchmarks with their own command: ``benchmarks.bench_shadow`` (shadow cost, HTTP
candidates, agreement), ``benchmarks.bench_rss``, ``benchmarks.bench_startup``,
``benchmarks.bench_scaleout`` (1, 2 and 4 serve replicas on 4- and 8-partition topics),
``benchmarks.bench_freshness`` (per-event delay from send to counted in ``/v1/status`` and
``/metrics`` at a steady 2,000 events/s on Kafka, default configuration, 120 s),
``benchmarks.bench_kafka_phases`` (where section 4's Kafka row spends its CPU: per phase of
the consumer thread, per thread, and the broker requests of the timed window),
``benchmarks.topic_acceptance`` (issue 17's topic figures: novelty ROC AUC, NMI, stable ids,
like-for-like gold counts, each next to the TF-IDF/LSA path's), ``benchmarks.drift_sizing``
(events a drift window needs to alarm on a given change; the table of docs/drift.md),
``benchmarks.bench_merge_rule`` (harvest's merge rule vs similarity alone: NQ-open merges undone
and kept, precision and recall on labelled pools), ``benchmarks.bench_refusal_patterns`` (the
refusal patterns' precision and recall on NoMIRACL's replies, with and without the
generation-failure pattern, and what it matches among other data sets' texts).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

from benchmarks import (
    bench_analytics,
    bench_language,
    bench_metrics,
    bench_pii,
    bench_pipeline,
    bench_production,
    bench_retrievers,
    bench_topics,
    summary,
    xquad_eval,
)


def sections(quick: bool) -> list[tuple[str, Callable[[], None]]]:
    """The detail sections, numbered 1-9, with their sizes (smaller with ``quick``)."""
    events = "20000" if quick else "100000"
    return [
        ("1. gold-set scoring (ratio = ours / theirs; lower time is better)", bench_metrics.main),
        ("2. built-in retriever speed, XQuAD en (240 paragraphs, 1190 questions, k=10)",
         bench_retrievers.main),
        ("3. XQuAD retrieval quality through goldwatch eval", xquad_eval.main),
        ("4. live path without analytics (file and Kafka)",
         lambda: bench_pipeline.main(["--events", events])),
        ("5. full analytics pipeline (favourable stream: no retrieval results)",
         lambda: bench_analytics.main(
            ["--events", "20000" if quick else "50000"])),
        ("6. language identification", bench_language.main),
        ("7. PII scrubbing", bench_pii.main),
        ("8. topics on CLINC150", bench_topics.main),
        ("9. goldwatch replay with the defaults, production-shaped log",
         lambda: bench_production.main(["--events", events])),
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the flags; run the chosen sections and/or the summary."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description="goldwatch benchmarks (issue 10)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="smaller sizes (~4 minutes)")
    parser.add_argument("--detail", action="store_true",
                        help="run the detail sections 1-9 before the summary")  # fmt: skip
    parser.add_argument(
        "--sections", default="", help="comma-separated section numbers to run instead (no summary)"
    )
    parser.add_argument("--skip", default="", help="summary rows to skip, e.g. scaleout")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    chosen = {int(n) for n in args.sections.split(",") if n.strip()}
    if args.detail or chosen:
        for number, (title, section) in enumerate(sections(args.quick), 1):
            if not chosen or number in chosen:
                print(f"\n== {title} ==", flush=True)
                section()
    if not chosen:
        summary.main([*(["--quick"] if args.quick else []), "--skip", args.skip])
    print(f"\ntotal benchmark time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
