"""The out-of-scope detector read back from the fit cache scores with numpy alone (issue 22,
item 4: a warm start imports no scikit-learn, also at its first batch) and gives the very
probabilities scikit-learn's ``predict_proba`` gives, to the bit, on a real gold set; an entry
of another format is fitted again or read through its pickle, never misread.

The reference throughout is scikit-learn's own ``predict_proba`` on the fitted pipeline the
cold start made (its pickle, unpickled: a ``Pipeline``).
"""

from __future__ import annotations

import json
import math
import pickle
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from service.data.corpus import Corpus
from service.data.goldset import GoldSet
from service.files.fit_cache import FitCache
from service.records import GoldQuestion, Passage
from service.refusals.scope import (
    LINEAR_FORMAT,
    EmbeddingScope,
    LinearScope,
    PickledEstimator,
    best_score,
    expit,
)


def test_expit_is_scipys_to_the_bit() -> None:
    from scipy.special import expit as scipy_expit

    rng = np.random.default_rng(3)
    edges = [0.0, -0.0, 36.0, 37.0, -36.0, 709.0, -709.0, -709.78, -709.79, -745.0, -746.0,
             -1e308, 1e-300, math.inf, -math.inf]  # fmt: skip
    x = np.concatenate([rng.normal(size=200_000) * 6.0, rng.normal(size=20_000) * 400.0, edges])
    assert np.array_equal(expit(x), scipy_expit(x))
    assert expit(np.array([-800.0])).tolist() == [0.0]  # exp(800) overflows: 1 / inf
    assert math.isnan(expit(np.array([math.nan]))[0])


def _real_gold(shared_data: Path) -> tuple[GoldSet, Corpus, list[str]]:
    """40 XQuAD-en questions on their paragraphs and 20 CLINC150 ``oos_val`` questions (the
    gold set; the corpus: XQuAD-en's 240 paragraphs), and live questions the gold set does
    not hold: 60 other XQuAD-en questions, 40 CLINC150 ``oos_test`` and 40 in-domain
    CLINC150 ``test`` questions."""
    from benchmarks.datasets import load_xquad

    passages, questions = load_xquad("en", shared_data)
    corpus = Corpus(tuple(Passage(p.id, p.text, doc=p.doc) for p in passages))
    rng = random.Random(49)
    picked = rng.sample(list(questions), 100)
    clinc = json.loads((shared_data / "clinc150" / "data_full.json").read_text("utf-8"))
    gold = [GoldQuestion(f"x-{qid}", text, (pid,), language="en") for qid, text, pid in picked[:40]]
    gold += [GoldQuestion(f"oos-{k}", clinc["oos_val"][k][0], (), kind="unanswerable",
                          language="en") for k in range(20)]  # fmt: skip
    live = [text for _, text, _ in picked[40:]]
    live += [row[0] for row in clinc["oos_test"][:40]] + [row[0] for row in clinc["test"][:40]]
    return GoldSet(tuple(gold)), corpus, live


def _build(gold: GoldSet, corpus: Corpus, cache: FitCache) -> Any:
    from service.runtime.analytics import _scope_stage
    from service.settings import AnalyticsConfig

    stage, _, _ = _scope_stage(AnalyticsConfig(), gold, corpus, memo=cache)
    assert stage is not None
    return stage


def _features(detector: EmbeddingScope, stage: Any, live: list[str]) -> np.ndarray:
    """The chosen feature columns of ``live`` (float64), retriever score included."""
    scores = [best_score(found) for found in stage.retriever.search_batch(live, 1)]
    vectors = detector.embedder.embed(live)
    return detector._features(vectors, scores)[:, detector.columns]


def test_a_warm_detector_scores_as_sklearns_predict_proba_on_a_real_gold_set(
    shared_data: Path, tmp_path: Path
) -> None:
    gold, corpus, live = _real_gold(shared_data)
    cache = FitCache(tmp_path / "model-cache")
    cold = _build(gold, corpus, cache).detector
    assert cache.misses >= 1  # fitted here
    # scikit-learn's own fitted pipeline (a start keeps it pickled beside its arrays)
    reference = pickle.loads(cold.model.blob)
    assert type(reference).__name__ == "Pipeline"
    warm_cache = FitCache(tmp_path / "model-cache")
    warm_stage = _build(gold, corpus, warm_cache)
    warm = warm_stage.detector
    assert warm_cache.misses == 0 and warm_cache.hits >= 1  # read back, not fitted
    assert isinstance(warm.model, PickledEstimator) and warm.model.linear is not None

    gold_texts = [q.question for q in gold]
    for texts in (live, gold_texts):
        features = _features(warm, warm_stage, texts)
        expected = reference.predict_proba(features)[:, 1]
        got = warm.model.probability_in_scope(features)
        assert got.dtype == np.float64 and np.array_equal(got, expected)
        # both in and out of scope among them: the comparison is not of one constant
        assert (expected >= 0.5).any() and (expected < 0.5).any()
    assert warm.model._estimator is None  # never unpickled: no scikit-learn needed
    assert np.array_equal(warm.score_support(live, retrieve=lambda t: [
        best_score(r) for r in warm_stage.retriever.search_batch(t, 1)])[0],
        cold.score_support(live, retrieve=lambda t: [
        best_score(r) for r in warm_stage.retriever.search_batch(t, 1)])[0])  # fmt: skip
    # the verdicts' key is the pickle's, as before the arrays were kept beside it
    assert warm.verdict_key() == cold.verdict_key()


def test_a_state_without_the_arrays_or_of_another_format_is_read_through_its_pickle(
    shared_data: Path, tmp_path: Path
) -> None:
    gold, corpus, live = _real_gold(shared_data)
    stage = _build(gold, corpus, FitCache(tmp_path / "model-cache"))
    fitted = stage.detector
    state = fitted.fitted_state()
    assert state["linear"]["format"] == LINEAR_FORMAT
    features = _features(fitted, stage, live)
    expected = pickle.loads(fitted.model.blob).predict_proba(features)[:, 1]
    old = {k: v for k, v in state.items() if k != "linear"}  # written before the arrays
    other = {**state, "linear": {**state["linear"], "format": "something-else/9"}}
    # arrays of the right format but the wrong shape are not read either
    torn = {**state, "linear": {**state["linear"], "coef": np.zeros((2, 2))}}
    for kept in (old, other, torn):
        restored = EmbeddingScope.restore(fitted.embedder, kept)
        assert isinstance(restored.model, PickledEstimator) and restored.model.linear is None
        assert np.array_equal(restored.model.probability_in_scope(features), expected)
        assert restored.model._estimator is not None  # read through the pickle
        assert "linear" not in vars(restored)


def test_a_change_of_the_format_is_another_cache_key(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold, corpus, _ = _real_gold(shared_data)
    _build(gold, corpus, FitCache(tmp_path / "model-cache"))
    same = FitCache(tmp_path / "model-cache")
    _build(gold, corpus, same)
    assert (same.hits, same.misses) >= (1, 0) and same.misses == 0
    hits = same.hits
    monkeypatch.setattr("service.runtime.analytics.LINEAR_FORMAT", "another-format/2")
    changed = FitCache(tmp_path / "model-cache")
    _build(gold, corpus, changed)
    # only the out-of-scope detector's entry is keyed on it: it alone is fitted again
    assert changed.misses == 1 and changed.hits == hits - 1


def test_linear_scope_of_a_pipeline_and_of_anything_else() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    y = x @ [1.0, -2.0, 0.5] + rng.normal(size=200) > 0
    model = make_pipeline(StandardScaler(), LogisticRegression(class_weight="balanced")).fit(x, y)
    linear = LinearScope.of(model)
    assert linear is not None
    assert linear.mean.tolist() == model.steps[0][1].mean_.tolist()
    assert linear.coef.shape == (1, 3) and linear.intercept.shape == (1,)
    back = LinearScope.from_state(pickle.loads(pickle.dumps(linear.as_state())))
    assert back is not None and np.array_equal(back.probability(x), model.predict_proba(x)[:, 1])
    assert LinearScope.of(LogisticRegression().fit(x, y)) is None
    unscaled = make_pipeline(StandardScaler(with_mean=False), LogisticRegression()).fit(x, y)
    assert LinearScope.of(unscaled) is None
    assert LinearScope.from_state(None) is None


def test_damaged_arrays_are_not_scored_from() -> None:
    """A cache entry whose arrays hold a NaN, an infinity or a scale ≤ 0 (no fitted
    ``StandardScaler``/``LogisticRegression`` stores one) is not read: the caller falls back
    on the pickle, instead of scoring every question NaN (read as out of scope)."""
    good = {"format": LINEAR_FORMAT, "mean": np.zeros(2), "scale": np.ones(2),
            "coef": np.ones((1, 2)), "intercept": np.zeros(1)}  # fmt: skip
    assert LinearScope.from_state(good) is not None
    damaged = [("coef", np.array([[np.nan, 1.0]])), ("mean", np.array([np.inf, 0.0])),
               ("scale", np.array([1.0, 0.0])), ("intercept", np.array([-np.inf]))]  # fmt: skip
    for name, value in damaged:
        assert LinearScope.from_state({**good, name: value}) is None, name
