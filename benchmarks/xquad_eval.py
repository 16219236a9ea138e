"""XQuAD through ``goldwatch eval``: recall@1/5/10/20 and MRR of the built-in retrievers,
English questions and the same questions in Spanish, Hindi and Chinese, all against the 240
English paragraphs. Run: ``python -m benchmarks.xquad_eval``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.goldsets import write_xquad
from service.evaluation.job import EvalRequest, run_eval
from service.evaluation.report import table
from service.settings import load_settings

LANGUAGES = ("en", "es", "hi", "zh")
RETRIEVERS = ("bm25", "tfidf", "hybrid")
METRICS = ("recall@1", "recall@5", "recall@10", "recall@20", "mrr")


def run() -> list[dict[str, object]]:
    """Return one row per (language, retriever) with the metrics and the drop from English."""
    rows: list[dict[str, object]] = []
    english: dict[str, float] = {}
    settings = load_settings(eval={"history": None, "misses": None})
    with tempfile.TemporaryDirectory() as tmp:
        for lang in LANGUAGES:
            gold, corpus = write_xquad(Path(tmp), lang)
            request = EvalRequest(gold=gold, corpus=corpus, retrievers=RETRIEVERS,
                                  ks=(1, 5, 10, 20), progress=False)  # fmt: skip
            outcome = run_eval(request, settings)
            for report in outcome.reports:
                row: dict[str, object] = {"questions": lang, "retriever": report.retriever}
                row.update({m: report.overall[m] for m in METRICS})
                if lang == "en":
                    english[report.retriever] = report.overall["recall@10"]
                row["recall@10 vs en"] = report.overall["recall@10"] - english[report.retriever]
                rows.append(row)
    return rows


def main() -> None:
    rows = run()
    header = list(rows[0])
    print(table(header, [[row[h] for h in header] for row in rows]))


if __name__ == "__main__":
    main()
