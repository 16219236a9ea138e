"""Benchmark: goldwatch ``evaluate`` vs ranx and pytrec_eval on the same data, same process.

10,000 questions × 100 retrieved passages from a corpus of 1,000; 1-5 gold passages per question
(gold passages score higher on average, so metrics are neither all 0 nor all 1). Measures:
recall@{1,5,10,20}, hit_rate@{1,5,10,20}, mrr, ndcg@10, map (11 in all).

Each library gets the data in its native input format, built outside the timed region:
goldwatch ``Run`` (``ScoredDoc`` lists, in retriever order or shuffled), pytrec_eval nested
dicts, ranx ``Qrels``/``Run`` objects (their construction from dicts is timed separately). ranx
is timed after a warm-up call that compiles its numba kernels; the cold first call is reported
too. Usage: ``python -m benchmarks.bench_metrics``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from service.evaluation.ir_metrics import evaluate
from service.records import Qrels, Run, ScoredDoc

N_QUERIES = 10_000
N_RESULTS = 100
N_DOCS = 1_000
KS = (1, 5, 10, 20)
MEASURES = [
    *(f"recall@{k}" for k in KS),
    *(f"hit_rate@{k}" for k in KS),
    "mrr",
    "ndcg@10",
    "map",
]
PYTREC_MEASURES = {"recall.1,5,10,20", "success.1,5,10,20", "recip_rank", "ndcg_cut.10", "map"}
PYTREC_LABELS = {"recall": "recall", "success": "hit_rate", "ndcg_cut": "ndcg"}


def make_data(seed: int = 0, n_queries: int = N_QUERIES) -> tuple[Qrels, Run]:
    """Random qrels and a run sorted by score (as a retriever returns it)."""
    rng = random.Random(seed)
    corpus = [f"p-{i:04d}" for i in range(N_DOCS)]
    qrels: Qrels = {}
    run: Run = {}
    for q in range(n_queries):
        qid = f"q-{q:05d}"
        gold = rng.sample(corpus, rng.randint(1, 5))
        qrels[qid] = {doc_id: rng.choice((1, 1, 2)) for doc_id in gold}
        found = [d for d in gold if rng.random() < 0.7]
        others = rng.sample(corpus, N_RESULTS + len(gold))
        retrieved = found + [d for d in others if d not in qrels[qid]][: N_RESULTS - len(found)]
        scored = [ScoredDoc(d, rng.random() + (0.5 if d in qrels[qid] else 0.0)) for d in retrieved]
        run[qid] = sorted(scored, key=lambda d: d.score, reverse=True)
    return qrels, run


def _best_of(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall time of ``repeat`` calls, in seconds (the minimum is the least noisy)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _pytrec_label(name: str) -> str:
    base, _, k = name.rpartition("_")
    if base in PYTREC_LABELS and k.isdigit():
        return f"{PYTREC_LABELS[base]}@{k}"
    return {"recip_rank": "mrr"}.get(name, name)


def run(seed: int = 0, repeat: int = 5, n_queries: int = N_QUERIES) -> list[dict[str, Any]]:
    """Time each library; one row per tool and variant.

    Rows: ``{"tool", "seconds", "ours_over_theirs", "shuffled_over_theirs", "max_abs_diff"}``;
    the ratios divide goldwatch's time (retriever-ordered, resp. shuffled input) by the row's
    (``None`` on goldwatch's own rows); ``max_abs_diff`` is the largest difference from
    goldwatch's means over the 11 measures.
    """
    import pytrec_eval
    import ranx

    qrels, sorted_run = make_data(seed, n_queries)
    shuffle = random.Random(seed + 1)
    shuffled_run = {q: shuffle.sample(docs, len(docs)) for q, docs in sorted_run.items()}
    dict_run = {q: {d.doc_id: d.score for d in docs} for q, docs in sorted_run.items()}

    ours = evaluate(qrels, sorted_run, MEASURES)
    t_ours = _best_of(lambda: evaluate(qrels, sorted_run, MEASURES), repeat)
    t_ours_shuffled = _best_of(lambda: evaluate(qrels, shuffled_run, MEASURES), repeat)

    start = time.perf_counter()
    ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(dict_run)
    t_ranx_build = time.perf_counter() - start
    start = time.perf_counter()
    ranx_means = ranx.evaluate(ranx_qrels, ranx_run, MEASURES, make_comparable=True)
    t_ranx_cold = time.perf_counter() - start  # first call: numba compile or cache load
    t_ranx = _best_of(lambda: ranx.evaluate(ranx_qrels, ranx_run, MEASURES), repeat)

    def pytrec() -> dict[str, dict[str, float]]:
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
        return evaluator.evaluate(dict_run)

    pytrec_rows = pytrec()
    t_pytrec = _best_of(pytrec, repeat)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
    t_pytrec_eval_only = _best_of(lambda: evaluator.evaluate(dict_run), repeat)

    pytrec_means = {
        _pytrec_label(name): sum(row[name] for row in pytrec_rows.values()) / len(pytrec_rows)
        for name in next(iter(pytrec_rows.values()))
    }

    def diff(means: dict[str, float]) -> float:
        return max(abs(float(means[m]) - ours.mean[m]) for m in MEASURES)

    rows = [
        ("goldwatch evaluate (retriever order)", t_ours, 0.0),
        ("goldwatch evaluate (shuffled input)", t_ours_shuffled, 0.0),
        ("ranx.evaluate (JIT warm)", t_ranx, diff(ranx_means)),
        ("ranx.evaluate (first call, JIT)", t_ranx_cold, diff(ranx_means)),
        ("ranx.evaluate warm + Qrels/Run build", t_ranx + t_ranx_build, diff(ranx_means)),
        ("pytrec_eval (evaluator + evaluate)", t_pytrec, diff(pytrec_means)),
        ("pytrec_eval (evaluate only)", t_pytrec_eval_only, diff(pytrec_means)),
    ]
    return [
        {
            "tool": tool,
            "seconds": seconds,
            "ours_over_theirs": None if tool.startswith("goldwatch") else t_ours / seconds,
            "shuffled_over_theirs": (
                None if tool.startswith("goldwatch") else t_ours_shuffled / seconds
            ),
            "max_abs_diff": max_diff,
        }
        for tool, seconds, max_diff in rows
    ]


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{N_QUERIES:,} questions x {N_RESULTS} results, {len(MEASURES)} measures")
    header = f"{'tool':<40} {'seconds':>8} {'ours/theirs':>12} {'shuffled/theirs':>16}"
    print(f"{header} {'max |Δmean|':>12}")
    for row in rows:
        print(
            f"{row['tool']:<40} {row['seconds']:>8.3f} {_ratio(row['ours_over_theirs']):>12}"
            f" {_ratio(row['shuffled_over_theirs']):>16} {row['max_abs_diff']:>12.2g}"
        )
    print(
        "ours/theirs: goldwatch on retriever-ordered input; shuffled/theirs: on shuffled input."
        "\n'first call, JIT': ranx's first evaluate in this process (numba compile, or load"
        " from its on-disk cache); other ranx rows are after that warm-up."
    )


def main() -> None:
    """Run the scoring benchmark and print its table."""
    _print_table(run())


if __name__ == "__main__":
    main()
