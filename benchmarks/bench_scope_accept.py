"""Measurement: what one accepted suggestion moves in the out-of-scope detector, and how much
of it the off-corpus cutoff's range (``scope_unstable``) covers (session 39).

Set-up: :func:`benchmarks.bench_scope_coverage.draw`'s sets (XQuAD-en gold rows on covered
articles plus CLINC150 ``oos_val`` unanswerable rows; live (a) covered, (b) uncovered, (c)
CLINC150 ``oos_test``). Per draw the detector is fitted as the service fits it
(:func:`service.runtime.analytics._scope_stage`, default settings), each live question is
judged as :class:`service.refusals.stage.EmbeddingScopeStage` judges it (a known question by
its gold row; otherwise off-corpus or below the threshold: out of scope) and marked unstable
as the stage marks it (:func:`service.refusals.scope.unstable_verdicts`). Then ONE suggestion
is accepted — (b)'s first question, answerable, its own paragraph as gold (trial 37b's accept
was such a row) — the detector refitted, and the live questions (that one left out) judged
again. Reported per draw and set: the threshold and cutoff before / after, the verdicts that
flipped, how many the first fit had marked unstable, and whether each flip came from the
off-corpus rule (its off-corpus verdict changed) or from the regression (the same off-corpus
verdict: the refitted weights and threshold moved it). A known question either time is left
out of the counts.

Usage: ``python -m benchmarks.bench_scope_accept [--draws N]`` (one JSON line per draw, then a
summary line).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from benchmarks.bench_scope_coverage import draw
from benchmarks.datasets import SHARED_DATA, load_xquad
from service.data.goldset import GoldSet
from service.embeddings.model import default_embedder
from service.records import GoldQuestion
from service.refusals.scope import unstable_verdicts
from service.runtime import analytics
from service.settings import AnalyticsConfig
from service.text.subject import subject

SETS = ("a_covered", "b_uncovered", "c_oos")


def judge(stage: Any, questions: list[str]) -> dict[str, np.ndarray]:
    """``{"out", "off", "unstable", "known"}`` per English live question (bool arrays, shape
    ``(n,)``), as the scope stage judges and marks them."""
    texts = [subject(q) for q in questions]
    detector = stage.detector
    scores = stage._retriever_scores(texts)
    languages: list[str | None] = ["en"] * len(texts)
    cutoffs = detector.cutoffs(texts, languages)
    proba, off, support = detector.score_with_support(texts, scores, languages, cutoffs)
    threshold = detector.calibration.threshold
    out = off | (proba < threshold)
    unstable = unstable_verdicts(support, *detector.bands(cutoffs), off, proba, threshold)
    known = np.zeros(len(texts), dtype=bool)
    if stage.known is not None:
        for i, (_, inside) in enumerate(stage.known.verdicts(texts)):
            if inside is not None:
                out[i], off[i], unstable[i], known[i] = not inside, False, False, True
    return {"out": out, "off": off, "unstable": unstable, "known": known}


def run_draw(seed: int, embedder: Any, config: AnalyticsConfig,
             pids: dict[str, tuple[str, str]]) -> dict[str, Any]:  # fmt: skip
    """One draw's figures (see the module docstring)."""
    data = draw(seed)
    gold: GoldSet = data["gold"]
    stage, _, _ = analytics._scope_stage(config, gold, data["corpus"], embedder=embedder)
    accepted = data["b_uncovered"][0]
    qid, pid = pids[accepted]
    row = GoldQuestion(f"xquad-en-{qid}", accepted, (pid,), language="en")
    after, _, _ = analytics._scope_stage(config, GoldSet((*gold, row)), data["corpus"],
                                         embedder=embedder)  # fmt: skip
    before_d, after_d = stage.detector, after.detector
    out: dict[str, Any] = {
        "seed": seed,
        "threshold": [round(before_d.calibration.threshold, 3),
                      round(after_d.calibration.threshold, 3)],
        "cutoff": [round(before_d.support.cutoff, 3), round(after_d.support.cutoff, 3)],
    }  # fmt: skip
    for name in SETS:
        live = [text for text in data[name] if text != accepted]
        one, two = judge(stage, live), judge(after, live)
        judged = ~one["known"] & ~two["known"]
        flip = (one["out"] != two["out"]) & judged
        by_off = flip & (one["off"] != two["off"])
        by_regression = flip & (one["off"] == two["off"])
        out[name] = {
            "n": int(judged.sum()), "unstable": int(one["unstable"].sum()),
            "flips": int(flip.sum()),
            "flips_marked_unstable": int((flip & one["unstable"]).sum()),
            "flips_not_marked": int((flip & ~one["unstable"]).sum()),
            "flips_by_off_corpus": int(by_off.sum()),
            "flips_by_regression": int(by_regression.sum()),
            "regression_flips_marked": int((by_regression & one["unstable"]).sum()),
        }  # fmt: skip
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over the draws and sets, the threshold's moves and the draws whose cutoff moved."""
    keys = [k for k in rows[0][SETS[0]] if k != "unstable"]
    total = {k: sum(row[name][k] for row in rows for name in SETS) for k in keys}
    moves = [abs(row["threshold"][1] - row["threshold"][0]) for row in rows]
    moved = sum(row["cutoff"][0] != row["cutoff"][1] for row in rows)
    return {"draws": len(rows), **total,
            "threshold_move": [round(min(moves), 3), round(max(moves), 3),
                               round(sum(moves) / len(moves), 3)],
            "cutoff_moved_in": moved}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=12)
    args = parser.parse_args(argv)
    _, questions = load_xquad("en", SHARED_DATA)
    pids: dict[str, tuple[str, str]] = {}
    for qid, text, pid in questions:
        pids.setdefault(text, (qid, pid))
    embedder, config = default_embedder(), AnalyticsConfig()
    rows = []
    for seed in range(args.draws):
        rows.append(run_draw(seed, embedder, config, pids))
        print(json.dumps(rows[-1]), flush=True)
    print(json.dumps({"summary": summary(rows)}))


if __name__ == "__main__":
    main()
