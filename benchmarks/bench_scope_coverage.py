"""Benchmark: the out-of-scope detector on answerable questions about corpus articles the gold
set has no question on (trial 12, finding F1, English part).

Set-up (deterministic per seed): the corpus is XQuAD's 240 English paragraphs (48 Wikipedia
articles; ``xquad/SOURCE.md``), each passage's ``doc`` its article, as
:func:`benchmarks.bench_production.write_gold_and_corpus` builds its Wikipedia part. A draw's
gold set has the sizes users keep (30–60 rows): ``n_answerable`` XQuAD-en questions on
``n_articles`` *covered* articles (gold = the question's paragraph) and ``n_unanswerable``
CLINC150 ``oos_val`` questions (``gold: []``; ``clinc150/SOURCE.md``). Live sets, disjoint from
the gold set:

* ``a_covered``: XQuAD-en questions on the covered articles not in the gold set (answerable);
* ``b_uncovered``: XQuAD-en questions on the other articles (answerable: their paragraph is in
  the corpus; at most :data:`LIVE_MAX`);
* ``c_oos``: CLINC150 ``oos_test`` questions (out of scope; at most :data:`LIVE_MAX`).

The detector is built as the service builds it (:func:`service.runtime.analytics._scope_stage`,
default ``analytics`` settings: ``scope_method: embedding``, BM25, ``scope_min_tpr`` 0.95), and
each live question is judged as :class:`service.refusals.stage.EmbeddingScopeStage` judges an
English one: a near-duplicate of a gold row takes its answerability, else out of scope when
off-corpus or below the calibrated threshold. Reported per draw: the out-of-scope share of
(a), (b) and (c) (and the off-corpus share of each), and the detector's own reported quality
(cross-validated ROC AUC with its interval, TPR / FPR / balanced accuracy at the threshold,
and whether it is trusted: ``DetectorQuality.trusted`` with ``quality_floor``,
``scope_min_balanced_accuracy`` — on the balanced accuracy with the FPR at its Wilson upper
bound — and ``quality_min_class``).

``--reference`` fits each draw a second time as before the fix (every gold row sees every
other, folds not grouped), for the figures next to it from the same run; the last line of
each block puts the reported TPR / FPR next to the live shares of (b) kept in scope and (c)
let in.

Usage: ``python -m benchmarks.bench_scope_coverage [--draws N] [--reference] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.datasets import SHARED_DATA, load_xquad
from service.data.corpus import Corpus
from service.data.goldset import GoldSet
from service.embeddings.model import default_embedder
from service.embeddings.protocol import Embedder
from service.evaluation.detector_quality import roc_auc
from service.records import GoldQuestion, Passage
from service.settings import AnalyticsConfig

#: Most questions of a live set (b) or (c) judged per draw.
LIVE_MAX = 400


def draw(seed: int, root: Path = SHARED_DATA) -> dict[str, Any]:
    """One gold set and its live sets (see the module docstring): ``{"gold": GoldSet,
    "corpus": Corpus, "a_covered", "b_uncovered", "c_oos": list[str], "articles": int,
    "covered": int}``. Sizes are drawn from ``random.Random(f"scope-coverage-{seed}")``:
    4–8 covered articles, 24–46 answerable and 10–14 unanswerable rows."""
    rng = random.Random(f"scope-coverage-{seed}")
    passages, questions = load_xquad("en", root)
    corpus = Corpus(tuple(Passage(p.id, p.text, doc=p.doc) for p in passages))
    article = {p.id: p.doc for p in passages}
    articles = sorted({p.doc for p in passages if p.doc is not None})
    covered = set(rng.sample(articles, rng.randint(4, 8)))
    on_covered = [q for q in questions if article[q[2]] in covered]
    n_answerable = min(rng.randint(24, 46), len(on_covered))
    picked = set(rng.sample(range(len(on_covered)), n_answerable))
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    oos_val = [text for text, _ in clinc["oos_val"]]
    n_unanswerable = rng.randint(10, 14)
    gold = [GoldQuestion(f"xquad-en-{qid}", text, (pid,), language="en")
            for i, (qid, text, pid) in enumerate(on_covered) if i in picked]  # fmt: skip
    gold += [GoldQuestion(f"oos-{k}", oos_val[k], (), kind="unanswerable", language="en")
             for k in sorted(rng.sample(range(len(oos_val)), n_unanswerable))]  # fmt: skip
    uncovered = [q[1] for q in questions if article[q[2]] not in covered]
    oos_test = [text for text, _ in clinc["oos_test"]]
    return {
        "gold": GoldSet(tuple(gold)),
        "corpus": corpus,
        "a_covered": [q[1] for i, q in enumerate(on_covered) if i not in picked],
        "b_uncovered": rng.sample(uncovered, min(LIVE_MAX, len(uncovered))),
        "c_oos": rng.sample(oos_test, min(LIVE_MAX, len(oos_test))),
        "articles": len(articles),
        "covered": len(covered),
    }


def judge(stage: Any, questions: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(out of scope, off-corpus, probability in scope)`` per English live question (bool,
    bool and float arrays, shape ``(n,)``), as
    :class:`service.refusals.stage.EmbeddingScopeStage` judges them (a known question's
    probability is 1 or 0 by its gold row's answerability)."""
    from service.text.subject import subject

    texts = [subject(q) for q in questions]
    detector = stage.detector
    scores = stage._retriever_scores(texts)
    proba, off = detector.score_support(texts, scores, ["en"] * len(texts))
    out = off | (proba < detector.calibration.threshold)
    if stage.known is not None:
        for i, (_, inside) in enumerate(stage.known.verdicts(texts)):
            if inside is not None:
                out[i], off[i], proba[i] = not inside, False, float(inside)
    return out, off, proba


def run_draw(
    seed: int, embedder: Embedder, config: AnalyticsConfig, reference: bool = False
) -> dict[str, Any]:
    """The figures of one draw (see the module docstring); ``reference``: the detector fitted
    as before the thirtieth session, the gold rows seeing every other row but themselves
    and the folds not grouped (:func:`service.refusals.scope.coverage_groups` not applied)."""
    from unittest import mock

    from service.runtime import analytics

    data = draw(seed)
    gold: GoldSet = data["gold"]
    started = time.perf_counter()
    with mock.patch.object(
        analytics, "coverage_groups", (lambda *_: None) if reference else analytics.coverage_groups
    ):
        stage, cal, quality = analytics._scope_stage(config, gold, data["corpus"],
                                                     embedder=embedder)  # fmt: skip
    fit_s = time.perf_counter() - started
    assert stage is not None and cal is not None and quality is not None
    n_ans = sum(q.answerable for q in gold)
    n_unans = len(gold) - n_ans
    trusted = quality.trusted(config.quality_floor, config.scope_min_balanced_accuracy,
                              config.quality_min_class)  # fmt: skip
    row: dict[str, Any] = {
        "seed": seed,
        "fit": "reference" if reference else "grouped",
        "gold": {"rows": len(gold), "answerable": n_ans, "unanswerable": n_unans,
                 "covered_articles": data["covered"], "articles": data["articles"]},
        "reported": {"auc": round(quality.auc, 3),
                     "interval": [round(quality.low, 3), round(quality.high, 3)],
                     "tpr": round(cal.tpr, 3), "fpr": round(cal.fpr, 3),
                     "balanced_accuracy": round(cal.balanced_accuracy, 3),
                     "bounded_balanced_accuracy": round(quality.bounded_balanced_accuracy, 3),
                     "trusted": trusted,
                     "features": list(stage.detector.feature_names),
                     "method": quality.method},
        "fit_s": round(fit_s, 2),
    }  # fmt: skip
    proba = {}
    for name in ("a_covered", "b_uncovered", "c_oos"):
        out, off, proba[name] = judge(stage, data[name])
        row[name] = {"n": len(out), "out_of_scope": int(out.sum()),
                     "rate": round(float(out.mean()), 3), "off_corpus": int(off.sum())}  # fmt: skip
    # the ranking on live questions, whatever the threshold: (b) answerable vs (c) oos
    row["live_auc_b_vs_c"] = round(roc_auc(proba["b_uncovered"], proba["c_oos"]), 3)
    return row


def print_rows(rows: list[dict[str, Any]]) -> None:
    """One line per draw and the pooled shares (all draws, and the trusted ones only)."""
    print(
        "seed rows ans/unans arts | AUC [interval] TPR FPR BA trusted | "
        "(a) covered | (b) uncovered | (c) CLINC oos   (out of scope / n, off-corpus)"
    )
    sets = ("a_covered", "b_uncovered", "c_oos")
    for r in rows:
        g, q = r["gold"], r["reported"]
        cells = [f"{r[k]['out_of_scope']:>3}/{r[k]['n']:<3} {r[k]['rate']:6.1%} "
                 f"off {r[k]['off_corpus']:>3}" for k in sets]  # fmt: skip
        print(
            f"{r['seed']:>4} {g['rows']:>4} {g['answerable']:>3}/{g['unanswerable']:<3} "
            f"{g['covered_articles']:>2}/{g['articles']} | {q['auc']:.3f} "
            f"[{q['interval'][0]:.3f}, {q['interval'][1]:.3f}] {q['tpr']:.3f} {q['fpr']:.3f} "
            f"{q['balanced_accuracy']:.3f} {q['trusted']!s:5} | " + " | ".join(cells)
        )
    for label, chosen in (
        ("all", rows),
        ("trusted", [r for r in rows if r["reported"]["trusted"]]),
    ):
        shares = []
        for k in sets:
            out, n = sum(r[k]["out_of_scope"] for r in chosen), sum(r[k]["n"] for r in chosen)
            shares.append(f"{k} {out}/{n} = {out / n:.1%}" if n else f"{k} -")
        print(f"pooled, {label} draws ({len(chosen)}): " + "; ".join(shares))
    # the reported rates next to the live ones: TPR vs (b) kept in scope, FPR vs (c) let in
    tpr = np.mean([r["reported"]["tpr"] for r in rows])
    fpr = np.mean([r["reported"]["fpr"] for r in rows])
    kept = np.mean([1 - r["b_uncovered"]["rate"] for r in rows])
    let_in = np.mean([1 - r["c_oos"]["rate"] for r in rows])
    auc = np.mean([r["live_auc_b_vs_c"] for r in rows])
    print(
        f"mean over draws: reported TPR {tpr:.3f} vs (b) kept in scope {kept:.3f}; "
        f"reported FPR {fpr:.3f} vs (c) let in scope {let_in:.3f}; "
        f"live ROC AUC (b) vs (c) {auc:.3f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=16, help="seeded draws 0..N-1")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also fit each draw as before the fix (rows not grouped)",
    )
    parser.add_argument(
        "--min-tpr",
        type=float,
        default=None,
        help="analytics.scope_min_tpr (default: the setting's default, 0.95)",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    embedder = default_embedder()
    config = (AnalyticsConfig() if args.min_tpr is None
              else AnalyticsConfig(scope_min_tpr=args.min_tpr))  # fmt: skip
    fits = (False, True) if args.reference else (False,)
    rows = {ref: [run_draw(seed, embedder, config, ref) for seed in range(args.draws)]
            for ref in fits}  # fmt: skip
    if args.json:
        print(json.dumps([r for ref in fits for r in rows[ref]], indent=1))
        return
    for ref in fits:
        print(
            "== reference: rows not grouped (before the fix)"
            if ref
            else "== grouped by document (the fit as shipped)"
        )
        print_rows(rows[ref])


if __name__ == "__main__":
    main()
