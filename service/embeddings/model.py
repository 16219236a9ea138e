"""Sentence embeddings: one protocol, batched, cached per question, shipped offline.

Every semantic consumer in goldwatch (topics, novelty, out-of-scope, the ``dense`` and
``hybrid`` retrievers, harvest near-duplicates) reads text through :class:`Embedder`::

    embed(texts: Sequence[str]) -> np.ndarray   # shape (len(texts), dim), float32, rows L2 = 1

so cosine similarity is a dot product. An empty input gives shape ``(0, dim)``; a text with
no token the model knows gives the zero vector (its similarity to everything is 0).

The default backend is WordLlama (``wordllama`` on PyPI, MIT): its 256-dimensional
``l2_supercat`` model (16 MB) ships inside the wheel, so nothing is downloaded at run time.
Version 0.4.0.post1 looks for its tokenizer in the wrong folder and then tries the network
unless it is loaded with ``cache_dir=<the installed package folder>`` and
``disable_download=True``, which :class:`WordLlamaEmbedder` does. Measured on this project's
machines: ~18–40 µs per question in batches on one core; on CLINC150 with a 60-question gold
set, nearest-gold-question similarity separates unseen domains with ROC AUC ~0.93 (word TF-IDF
0.60, character TF-IDF 0.80). It is English-first: its parallel-question similarity on XQuAD
is ~0.3 for es/de and ~0.05 for hi.

Source: Miller, "WordLlama" (2024), https://github.com/dleemiller/WordLlama.

>>> emb = WordLlamaEmbedder()
>>> vectors = emb.embed(["lost my debit card", "my card is missing", "when is the exam"])
>>> vectors.shape, vectors.dtype.name
((3, 256), 'float32')
>>> bool(vectors[0] @ vectors[1] > vectors[0] @ vectors[2])
True
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from service.embeddings.config import EmbeddingConfig
from service.embeddings.protocol import Embedder, EmbeddingModelError, l2_normalise


class CachedEmbedder:
    """Wraps an embedder with a bounded LRU cache keyed by the exact text.

    Live traffic repeats itself (the same FAQ asked many times), and several stages embed the
    same question in one batch; each distinct text is embedded once while it stays among the
    ``capacity`` most recently used. Thread-safe. The wrapped embedder sees only the distinct
    uncached texts of a call, in one batch.

    Args:
        inner: the embedder to call on misses.
        capacity: most cached texts (≥ 0; 0 disables the cache). Memory is about
            ``capacity × (dim × 4 + text bytes)``: 20,000 × 256-d ≈ 21 MB plus the texts.

    Raises:
        ValueError: ``capacity`` below 0.
    """

    def __init__(self, inner: Embedder, capacity: int = 20_000) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.capacity = capacity
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """As :meth:`Embedder.embed`; cached rows are shared read-only copies."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                row = self._cache.get(text)
                if row is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._cache.move_to_end(text)
                    out[i] = row
            self.hits += len(texts) - sum(len(v) for v in missing.values())
            self.misses += len(missing)
        if not missing:
            return out
        fresh = list(missing)
        vectors = self.inner.embed(fresh)
        if len(vectors) != len(fresh):
            raise ValueError(f"the embedder returned {len(vectors)} rows for {len(fresh)} texts")
        # one scatter for the whole batch: a per-text ``out[positions] = vector`` cost ~3 µs
        places = list(missing.values())
        sources = np.repeat(np.arange(len(fresh)), [len(p) for p in places])
        out[list(itertools.chain.from_iterable(places))] = vectors[sources]
        with self._lock:
            for text, vector in zip(fresh, vectors, strict=True):
                if self.capacity:
                    # a copy, never the row view: a view keeps the inner embedder's whole
                    # (fresh × dim) batch matrix alive for as long as any one of its rows is
                    # cached, so the cache held up to ``capacity`` batches, not rows
                    self._cache[text] = vector.copy()
                    self._cache.move_to_end(text)
            while len(self._cache) > self.capacity:
                self._cache.popitem(last=False)
        return out


#: The Hugging Face ``tokenizers`` switch of its thread pool (read at each batch call).
TOKENIZERS_PARALLELISM = "TOKENIZERS_PARALLELISM"


def _wordllama_folder() -> Path:
    import wordllama

    return Path(wordllama.__file__).resolve().parent


class WordLlamaEmbedder:
    """The default backend: WordLlama's shipped model, loaded fully offline.

    Args:
        config: WordLlama model name (``"l2_supercat"``, the one the wheel ships).
        dim: truncation (Matryoshka) dimension: 64, 128, 256 (default), 512 or 1024 where the
            shipped weights allow; larger is more precise and slower.

    Loading sets the environment variable ``TOKENIZERS_PARALLELISM=false`` unless it is set
    already: the tokenizer then runs on the calling thread (the same tokens at ~0.6x the
    CPU time of its thread pool on a shared core; set it to ``true`` to trade CPU for
    latency on idle cores).

    Raises:
        EmbeddingModelError: the ``wordllama`` package or its shipped weights are missing (the
            message says which), never a network call.
    """

    def __init__(self, config: str = "l2_supercat", dim: int = 256) -> None:
        self.dim = dim
        self.name = f"wordllama:{config}:{dim}"
        self._config = config
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # one core per replica: the tokenizer's thread pool tokenised a 500-question
                # batch at ~1.6x the CPU time of one thread here (41 vs 25 µs per question,
                # same tokens); a user's own TOKENIZERS_PARALLELISM wins
                os.environ.setdefault(TOKENIZERS_PARALLELISM, "false")
                try:
                    from wordllama import WordLlama
                except ImportError as exc:  # pragma: no cover - a core dependency
                    raise EmbeddingModelError("the wordllama package is not installed") from exc
                try:
                    self._model = WordLlama.load(
                        config=self._config,
                        dim=self.dim,
                        cache_dir=_wordllama_folder(),
                        disable_download=True,
                    )
                except (FileNotFoundError, ValueError, OSError) as exc:
                    raise EmbeddingModelError(
                        f"WordLlama model {self._config!r} at dim {self.dim} is not shipped "
                        f"in {_wordllama_folder()}: {type(exc).__name__}"
                    ) from exc
                if not self._model.binary:  # _mean_token_vectors: each text's own tokens
                    self._model.tokenizer.no_padding()
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """As :meth:`Embedder.embed` (loads the model on first use, ~0.2 s)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        if model.binary:  # pragma: no cover - the shipped model is not binarised
            vectors = model.embed(list(texts), norm=False, return_np=True)
        else:
            vectors = _mean_token_vectors(model, list(texts))
        return l2_normalise(np.asarray(vectors, dtype=np.float32))


def _mean_token_vectors(model: Any, texts: list[str]) -> np.ndarray:
    """WordLlama's average pooling of ``texts``, shape ``(len(texts), dim)``, float32: the
    same bits as ``model.embed(texts, norm=False)`` (wordllama 0.4: tokens without special
    tokens, ids clipped to the table, the float32 sum of the token rows over the token axis
    divided by the token count; no token: a zero row), at ~0.45x its CPU time.

    WordLlama pads every 64-text chunk to its longest text and gathers, masks and sums the
    padded positions too (their products are zeros, which leave the sum unchanged); here the
    tokenizer pads nothing (``no_padding``, set at load) and texts of equal token count are
    pooled together, so no padded position is gathered; the tokens come without their
    character offsets. Checked bit for bit against
    ``model.embed`` in ``tests/service/test_embeddings.py``.
    """
    table = model.embedding
    # the same ids as ``encode_batch`` without the character offsets (``tokenizers`` >= 0.20;
    # ~0.6x its CPU time), which the pooling never reads
    encode = getattr(model.tokenizer, "encode_batch_fast", model.tokenizer.encode_batch)
    ids = [encoding.ids for encoding in encode(texts, add_special_tokens=False)]
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    # every text's ids in one array, texts by token count (stable: each group's rows in
    # ascending order), so each group's (rows, length) grid is a slice of it, not an array
    # built from its lists: the same grids, rows and sums (3.9 against 5.9 µs a text)
    order = np.argsort(lengths, kind="stable")
    by_length = lengths[order]
    flat = np.fromiter(itertools.chain.from_iterable([ids[i] for i in order.tolist()]),
                       dtype=np.int32, count=int(by_length.sum()))  # fmt: skip
    np.clip(flat, 0, table.shape[0] - 1, out=flat)
    offsets = np.concatenate(([0], np.cumsum(by_length))).tolist()
    found, starts, counts = np.unique(by_length, return_index=True, return_counts=True)
    for length, start, count in zip(found.tolist(), starts.tolist(), counts.tolist(),
                                    strict=True):  # fmt: skip
        if length:
            grid = flat[offsets[start] : offsets[start + count]].reshape(count, length)
            rows = order[start : start + count]
            out[rows] = np.sum(table[grid], axis=1, dtype=np.float32) / np.float32(length)
    return out


def default_embedder() -> CachedEmbedder:
    """The embedder of the default ``analytics.embeddings`` configuration (WordLlama with the
    character n-gram mix), process-wide: the same object as
    ``shared_embedder(EmbeddingConfig())``, so a stage built without a configuration reads
    text exactly as the service's defaults do (and a topic model fitted by one applies in the
    other)."""
    return shared_embedder(EmbeddingConfig())


def build_embedder(
    config: EmbeddingConfig, fit_texts: Sequence[str] | None = None
) -> CachedEmbedder:
    """Build the configured embedder, cached (:class:`CachedEmbedder`).

    Args:
        config: the ``analytics.embeddings`` section.
        fit_texts: the texts the ``tfidf`` backend is fitted on (the gold questions and the
            corpus passages); ignored by the other backends.

    Returns:
        A :class:`CachedEmbedder` whose ``name`` records backend, model and mix (e.g.
        ``"wordllama:l2_supercat:256+char3-5:512@0.35"``) and whose ``dim`` is the model's
        plus ``char_dim`` when the mix is on.

    Raises:
        ValueError: ``tfidf`` without (enough) ``fit_texts``.
        EmbeddingModelError: the model cannot be loaded (missing optional package, not a model
            folder); the message names ``analytics.embeddings.model_path`` or
            ``analytics.embeddings.backend``, whichever is at fault.

    >>> build_embedder(EmbeddingConfig()).name
    'wordllama:l2_supercat:256+char3-5:512@0.35'
    >>> build_embedder(EmbeddingConfig(backend="tfidf"))
    Traceback (most recent call last):
    ...
    ValueError: backend 'tfidf' is fitted on the gold set and corpus: pass fit_texts
    """
    from service.embeddings import backends

    inner: Embedder
    if config.backend == "tfidf":
        if not fit_texts:
            raise ValueError("backend 'tfidf' is fitted on the gold set and corpus: pass fit_texts")
        inner = backends.TfidfLsaEmbedder(fit_texts, components=config.tfidf_components)
        return CachedEmbedder(inner, capacity=config.cache_size)
    if config.backend == "sentence-transformers":
        if config.model_path is None:  # a config built without validation
            raise ValueError("backend 'sentence-transformers' needs 'model_path'")
        inner = backends.SentenceTransformerEmbedder(config.model_path)
    elif config.backend == "minilm":
        inner = backends.minilm_embedder()
    else:
        inner = WordLlamaEmbedder()
    if config.char_weight > 0:
        chars = backends.CharNgramEmbedder(dim=config.char_dim)
        inner = backends.MixedEmbedder(inner, chars, config.char_weight)
    return CachedEmbedder(inner, capacity=config.cache_size)


_SHARED: dict[tuple[EmbeddingConfig, tuple[str, ...]], CachedEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedder(
    config: EmbeddingConfig, fit_texts: Sequence[str] | None = None
) -> CachedEmbedder:
    """The process-wide embedder for ``config``: built by :func:`build_embedder` on first
    use, then the same object (one model load, one question cache) for every stage that asks
    with an equal config — topics, novelty, out-of-scope and the ``dense`` retriever alike.

    Args:
        config: the ``analytics.embeddings`` section (frozen, so usable as a key).
        fit_texts: as :func:`build_embedder`; only the ``tfidf`` backend reads them, and its
            embedders are shared per equal list of fit texts.

    Raises:
        As :func:`build_embedder`.

    >>> shared_embedder(EmbeddingConfig()) is shared_embedder(EmbeddingConfig())
    True
    """
    texts = tuple(fit_texts) if config.backend == "tfidf" and fit_texts else ()
    key = (config, texts)
    with _SHARED_LOCK:
        embedder = _SHARED.get(key)
        if embedder is None:
            embedder = _SHARED[key] = build_embedder(config, fit_texts)
        return embedder
