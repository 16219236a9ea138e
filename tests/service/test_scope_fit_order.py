"""The out-of-scope detector is a function of the set of gold rows, and its threshold does not
hang on one fold draw (forty-ninth session).

The t48 user's 54-row gold set gave threshold 0.3458 in file order, 0.3761 reversed and
0.3783-0.4116 in shuffles: the fit read the rows in file order (fold positions, group
labels numbered by first appearance, the bootstrap's resamples, float sums). The fit now reads
them in canonical order (:func:`~service.refusals.scope.gold_order_key`), and each row's
held-out probability is averaged over :data:`~service.refusals.scope.CV_REPEATS` fold draws
(repeated cross-validation: Kuhn & Johnson 2013 §4.4; Kim 2009).

The gold set here is built from ../shared/data like a user's first one: 42 answerable SQuAD
2.0 questions and 12 CLINC150 out-of-scope queries marked ``kind: off-topic``, over the SQuAD
sample's 411 contexts (:func:`benchmarks.goldsets.write_squad2_off_topic`).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.goldsets import write_squad2_off_topic
from service.data.corpus import load_corpus
from service.data.goldset import GoldSet, load_gold_set
from service.refusals import scope as scope_mod
from service.refusals.scope import CV_REPEATS, EmbeddingScope, fold_seeds, repeated_folds
from service.refusals.stage import EmbeddingScopeStage
from service.runtime import analytics
from service.runtime.analytics import _scope_stage
from service.settings import load_settings

pytestmark = pytest.mark.slow


def _detector(gold: GoldSet, corpus: Any, settings: Any) -> dict[str, Any]:
    stage, cal, quality = _scope_stage(settings, gold, corpus)
    assert isinstance(stage, EmbeddingScopeStage) and cal is not None and quality is not None
    det = stage.detector
    return {
        "key": det.verdict_key(),
        # the drift stage's out_of_scope key: the verdict key and the known questions'
        "labeller_key": stage.labeller_key(),
        "threshold": cal.threshold,
        "features": det.feature_names,
        "support": {k: v for k, v in det.support._asdict().items() if k != "change"},
        "quality": quality.as_dict(),
        "cv_scores": np.asarray(det.cv_scores).tobytes(),
        "coef": det.model.blob if hasattr(det.model, "blob") else None,
    }


def test_a_reordered_gold_file_gives_a_bit_identical_detector(
    shared_data: Path, tmp_path: Path
) -> None:
    gold_path, corpus_path = write_squad2_off_topic(tmp_path, root=shared_data)
    gold, corpus = load_gold_set(gold_path), load_corpus(corpus_path)
    settings = load_settings(gold_set=gold_path, corpus=corpus_path).analytics
    rows = list(gold.questions)
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != rows
    fits = [_detector(GoldSet(tuple(order), gold.path), corpus, settings)
            for order in (rows, rows[::-1], shuffled)]  # fmt: skip
    assert fits[0]["quality"]["n_neg"] == 12  # the off-topic rows are the negatives
    assert fits[1] == fits[0]
    assert fits[2] == fits[0]


def test_renumbered_gold_ids_give_the_same_detector_and_verdict_key(
    shared_data: Path, tmp_path: Path
) -> None:
    """Only the ids naming the rows that set the cutoff or fall below it change (the verdict
    key hashes their vectors, not their names). The stage's drift key stays too: the known
    questions' key no longer names rows by id (trial 50, M2: a renumbering restarted
    ``out_of_scope`` drift)."""
    gold_path, corpus_path = write_squad2_off_topic(tmp_path, root=shared_data)
    gold, corpus = load_gold_set(gold_path), load_corpus(corpus_path)
    settings = load_settings(gold_set=gold_path, corpus=corpus_path).analytics
    rows = list(gold.questions)
    renamed = {q.id: f"r-{len(rows) - i:03d}" for i, q in enumerate(rows)}  # reversed numbers
    renumbered = [dataclasses.replace(q, id=renamed[q.id]) for q in rows]
    before, after = (_detector(GoldSet(tuple(order), gold.path), corpus, settings)
                     for order in (rows, renumbered))  # fmt: skip
    for fit in (before, after):
        fit["support"].pop("set_by")
        fit["support"]["below"] = len(fit["support"]["below"])
    assert after == before


def test_fold_seeds_of_two_base_seeds_share_no_draw() -> None:
    # seed + r would give base seeds 0 and 1 nine of their ten draws in common, and the
    # spread over base seeds below would understate the spread of a fit
    seeds = [fold_seeds(base, CV_REPEATS) for base in range(10)]
    assert len({s for draw in seeds for s in draw}) == 10 * CV_REPEATS
    assert fold_seeds(3, 4) == fold_seeds(3, CV_REPEATS)[:4]


def test_repeated_folds_are_partitions_each() -> None:
    labels = np.array([True] * 20 + [False] * 6)
    draws, grouped = repeated_folds(labels, None, seed=0, repeats=3)
    assert grouped == [False, False, False] and len(draws) == 3
    for draw in draws:
        held = np.sort(np.concatenate([test for _, test in draw]))
        assert held.tolist() == list(range(26))  # every row held out exactly once per draw
    assert any(not np.array_equal(a[0][1], b[0][1]) for a, b in zip(draws, draws[1:], strict=False))


def test_the_threshold_moves_less_with_the_fold_draw(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The threshold over base seeds 0-9, one fold draw against :data:`CV_REPEATS`.

    Bound: averaging R draws shrinks the spread of a row's held-out probability by at most
    √R (independent draws: 1/√10 = 0.32 of it); draws of one gold set share its rows, and
    Youden's J on 12 negatives has near-tied optima (here ~0.33 and ~0.40: one off-topic row
    more or less in scope), so less is reached. Measured (this set, this machine): standard
    deviation 0.061 → 0.036, span 0.204 → 0.097. The test asks for at least a third off both
    (a bound a return to one draw fails) and for the span to stay below 0.12, the gap
    between those two optima (0.08) plus the spread within one (0.03)."""
    gold_path, corpus_path = write_squad2_off_topic(tmp_path, root=shared_data)
    gold, corpus = load_gold_set(gold_path), load_corpus(corpus_path)
    settings = load_settings(gold_set=gold_path, corpus=corpus_path).analytics
    seen: dict[str, Any] = {}
    real = scope_mod.EmbeddingScope

    class Capture(real):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            seen.update(args=args, kwargs=kwargs)
            super().__init__(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(analytics, "EmbeddingScope", Capture)
        _scope_stage(settings, gold, corpus)

    def thresholds(repeats: int) -> np.ndarray:
        return np.array([
            EmbeddingScope(*seen["args"], **{**seen["kwargs"], "seed": seed, "n_boot": 0,
                                             "repeats": repeats}).calibration.threshold
            for seed in range(10)
        ])  # fmt: skip

    one, many = thresholds(1), thresholds(CV_REPEATS)
    assert np.std(many) <= np.std(one) * 2 / 3
    assert np.ptp(many) <= np.ptp(one) * 2 / 3
    assert np.ptp(many) < 0.12
