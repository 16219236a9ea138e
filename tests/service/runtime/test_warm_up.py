"""Start-up warm-up (issue 22 item 4): with a warm model cache the service is ready in about
a second, and what the first batch would load — the embedding model, scikit-learn, the
out-of-scope detector unpickled from the cache — is loaded by a background thread instead
(:meth:`service.runtime.live.Live.warm_up`), without annotating, counting or caching
anything."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry
from sklearn.linear_model import LogisticRegression

from service.demo import demo_path
from service.embeddings.config import EmbeddingConfig
from service.embeddings.model import build_embedder, warm_up
from service.pipeline import StatelessStage
from service.refusals.scope import PickledEstimator
from service.runtime.live import Live, build_live
from service.settings import load_settings
from service.state import StateStore


def test_a_pickled_estimator_is_unpickled_once_and_predicts_as_the_original() -> None:
    x = np.array([[0.0, 1.0], [1.0, 0.0], [0.2, 0.9], [0.9, 0.1]])
    fitted = LogisticRegression().fit(x, [0, 1, 0, 1])
    pickled = PickledEstimator(pickle.dumps(fitted))
    assert pickled._estimator is None
    first = pickled.warm_up()
    assert pickled.warm_up() is first  # once
    assert np.array_equal(pickled.predict_proba(x), fitted.predict_proba(x))


def test_warm_up_loads_the_wordllama_model_inside_the_cache_and_the_mix() -> None:
    embedder = build_embedder(EmbeddingConfig())  # not the shared one: nothing loaded yet
    wordllama = embedder.inner.semantic  # type: ignore[attr-defined]
    assert wordllama._model is None
    warm_up(embedder)
    assert wordllama._model is not None
    assert (embedder.hits, embedder.misses, len(embedder._cache)) == (0, 0, 0)  # nothing embedded


class _Breaks(StatelessStage):
    name = "breaks"

    def process(self, batch: object) -> None:  # pragma: no cover - never run here
        raise AssertionError

    def warm_up(self) -> None:
        raise OSError("disk gone")


@pytest.mark.slow
def test_a_restart_from_the_model_cache_warms_topics_and_scope_and_logs_a_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings(None, gold_set=demo_path("gold.jsonl"),
                             corpus=demo_path("corpus.jsonl"))  # fmt: skip

    def build() -> Live:
        return build_live(settings, CollectorRegistry(), StateStore.in_memory(),
                          model_cache=tmp_path / "model-cache")  # fmt: skip

    build()  # fills the cache
    live = build()  # a restart: the detector comes back pickled
    scope = next(s for s in live.pipeline.stages if s.name == "scope")
    model = scope.detector.model  # type: ignore[attr-defined]
    assert isinstance(model, PickledEstimator) and model._estimator is None
    assert live.warm_up() == ["topic", "scope"]
    assert model._estimator is not None
    topic = next(s for s in live.pipeline.stages if s.name == "topic")
    monkeypatch.setattr(topic, "warm_up", _Breaks().warm_up)
    with caplog.at_level(logging.WARNING):
        assert live.warm_up() == ["scope"]  # the others still warmed
    assert "warm-up of stage 'topic' failed (OSError)" in caplog.text
