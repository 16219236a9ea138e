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
import json
import os
import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from service.embeddings.config import EmbeddingConfig
from service.embeddings.nearest import NearestMemo
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
        #: the last batch's nearest similarities to the gold vectors, shared by the stages
        #: that embed through this object (:mod:`service.embeddings.nearest`)
        self.nearest = NearestMemo()

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
        if (len(fresh) == len(texts) and isinstance(vectors, np.ndarray)
                and vectors.shape == out.shape and vectors.dtype == np.float32
                and vectors.flags.writeable):  # fmt: skip
            # every text a distinct miss, in order: the rows are ``out`` (a new array the
            # caller owns, per :meth:`Embedder.embed`; the cache keeps copies, below)
            out = vectors
        else:  # one scatter for the whole batch: a per-text ``out[positions] = vector`` ~3 µs
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


#: SentencePiece's word mark: the Llama tokenizer's normalizer prepends it and writes it for
#: every space, so each word of a normalised text starts with it.
_WORD_MARK: Final = "\u2581"
#: A normalised text's words: a run of marks and the characters up to the next mark.
_WORDS = re.compile(f"{_WORD_MARK}+[^{_WORD_MARK}]*|[^{_WORD_MARK}]+")
#: Longest word :class:`WordTokens` remembers: a text without spaces (Chinese, Japanese, a
#: URL, base64) is one word, and remembering those bounded the memo by count, not bytes
#: (300-character Chinese questions: ~170 MiB at capacity).
_MEMO_WORD_CHARS: Final = 48
#: Whether the ``array`` module's ``"i"`` items are int32 (:func:`_int32_bytes`).
_ARRAY_INT32: Final = array("i").itemsize == 4
#: The normaliser :class:`WordTokens` reproduces (the ``tokenizer.json`` of Llama 2 models).
_LLAMA_NORMALIZER: Final = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": _WORD_MARK},
        {"type": "Replace", "pattern": {"String": " "}, "content": _WORD_MARK},
    ],
}


def words_never_merge(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` (a Hugging Face ``tokenizers.Tokenizer``) gives every text the
    concatenation of its words' tokens, so a word's tokens may be remembered.

    True for a Llama-2-style SentencePiece BPE: the normaliser only prepends ``▁`` and writes
    ``▁`` for each space (:data:`_LLAMA_NORMALIZER`), no pre-tokenizer (the BPE runs over the
    whole text), no dropout, truncation or word prefix/suffix, ``▁`` in the vocabulary and no
    token in which ``▁`` follows another character. A BPE merge joins two adjacent symbols
    into a token of the vocabulary; where a word (``▁`` run + other characters) meets the
    next, the left symbol ends with a character that is not ``▁`` and the right one starts
    with ``▁``, so no merge rule can join them, and each word is merged exactly as alone
    (byte fallback is per character). WordLlama's ``l2_supercat`` tokenizer qualifies.
    """
    try:
        config = json.loads(tokenizer.to_str())
        model = config["model"]
        vocab = model["vocab"]
    except (AttributeError, KeyError, TypeError, ValueError):
        return False
    return (
        config.get("normalizer") == _LLAMA_NORMALIZER
        and config.get("pre_tokenizer") is None
        and config.get("truncation") is None
        and model.get("type") == "BPE"
        and model.get("dropout") is None
        and not model.get("ignore_merges")  # a whole-vocabulary word would skip its merges
        and not model.get("continuing_subword_prefix")
        and not model.get("end_of_word_suffix")
        and _WORD_MARK in vocab
        and not any(re.search(f"[^{_WORD_MARK}]{_WORD_MARK}", token) for token in vocab)
    )


def _int32_bytes(ids: list[int]) -> bytes:
    """``ids`` as native int32 bytes (the standard ``array`` module where its C ``int`` is 4
    bytes, as on every platform goldwatch runs on: ~3x faster than a numpy array per word).

    >>> np.frombuffer(_int32_bytes([1, 31999]), dtype=np.int32).tolist()
    [1, 31999]
    """
    if _ARRAY_INT32:
        return array("i", ids).tobytes()
    return np.asarray(ids, dtype=np.int32).tobytes()  # pragma: no cover - 4-byte int above


class WordTokens:
    """Token ids of texts (``add_special_tokens=False``), each word's ids remembered.

    The Llama tokenizer runs its BPE over a whole text as one word (no pre-tokenizer), so the
    library's own cache never hits and a question costs ~28 µs; where
    :func:`words_never_merge` holds, a text's ids are its words' ids in order, and a word seen
    before costs a look-up (~2.5 µs a question with the words known, measured on the
    production-shaped benchmark's questions; ~12 µs with none). The ids
    are the library's, bit for bit (checked against ``encode_batch`` on 25,000 real questions in
    ``tests/service/test_embeddings.py``). A text holding ``▁`` itself or an added token's
    content (``<s>``, ``</s>``, ``<unk>``: split out before normalisation), and every text of
    a tokenizer that does not qualify, is encoded by the library.

    Args:
        tokenizer: a ``tokenizers.Tokenizer``, its padding off.
        capacity: most words remembered (≥ 0; 0: none; a word over 48 characters, such as
            a whole question without spaces, is tokenized each time); when full, the memo
            starts afresh (a word and its ids, kept as int32 bytes: ~0.15 KB, measured, so
            ≤ ~5 MiB at the default).

    Raises:
        ValueError: ``capacity`` below 0.
    """

    def __init__(self, tokenizer: Any, capacity: int = 32_768) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self._encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        self._model = tokenizer.model
        self.capacity = capacity
        self.by_word = capacity > 0 and words_never_merge(tokenizer)
        specials = [token.content for token in tokenizer.get_added_tokens_decoder().values()]
        self._special = re.compile("|".join(map(re.escape, [_WORD_MARK, *specials])))
        #: word (without its first mark) -> its ids as native int32 bytes
        self._memo: dict[str, bytes] = {}

    def __call__(self, texts: list[str]) -> list[list[int]]:
        """The token ids of each text, in order (:meth:`flat`, one list per text)."""
        flat, lengths = self.flat(texts)
        ids = flat.tolist()
        ends = np.cumsum(lengths).tolist()
        return [ids[end - length : end] for end, length in zip(ends, lengths.tolist(), strict=True)]

    def flat(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The token ids of ``texts`` one after another, shape ``(total,)`` int32, and each
        text's number of ids, shape ``(len(texts),)`` int64.

        A text's words are its space-separated pieces, each after one mark; the memo is
        keyed by a word without that first mark (a piece itself, where the text has no
        leading, trailing or repeated space: no regular expression, no marked copy of the
        text). A run of spaces gives a word of several marks (its key starts with ``▁``, so
        it is no piece's key), a trailing space a word of marks alone. The batch's words are
        looked up with one ``map`` and their ids joined as bytes (no loop per word in
        Python: ~2.5 against ~3.2 µs a question with its words known).
        """
        if not self.by_word:
            encoded = [e.ids for e in self._encode(texts, add_special_tokens=False)]
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=np.int32,
                               count=int(lengths.sum()))  # fmt: skip
            return flat, lengths
        memo, mark = self._memo, _WORD_MARK
        keys = [text.split(" ") for text in texts]
        # a leading, trailing or repeated space (or an empty text): marks run together
        for i in [i for i, pieces in enumerate(keys) if "" in pieces]:
            text = texts[i]
            keys[i] = [word[1:] for word in _WORDS.findall(mark + text.replace(" ", mark))
                       ] if text else []  # fmt: skip  # the normaliser: "" stays empty
        aside: list[int] = []  # texts for the library (none match the batch joined: one search)
        if self._special.search("\0".join(texts)):  # no special content spans a NUL
            aside = [i for i, text in enumerate(texts) if self._special.search(text)]
            for i in aside:
                keys[i] = []
        words = list(itertools.chain.from_iterable(keys))
        found: list[bytes | None] = list(map(memo.get, words))
        at = -1
        while True:  # the words not remembered (C-level scans from one to the next)
            try:
                at = found.index(None, at + 1)
            except ValueError:
                break
            known = memo.get(words[at])  # a word new twice in the batch: tokenized once
            found[at] = known if known is not None else self._tokenize(words[at])
        counts = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        if aside:  # their ids in their place, as one word each (positions from the last)
            encoded = self._encode([texts[i] for i in aside], add_special_tokens=False)
            starts = np.cumsum(counts) - counts
            for i, encoding in reversed(list(zip(aside, encoded, strict=True))):
                found.insert(int(starts[i]), np.asarray(encoding.ids, dtype=np.int32).tobytes())
                counts[i] = 1
        blobs: list[bytes] = found  # type: ignore[assignment]  # no None is left
        per_word = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)) // 4
        before = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(per_word, out=before[1:])
        ends = np.cumsum(counts)
        flat = np.frombuffer(b"".join(blobs), dtype=np.int32).copy()
        return flat, before[ends] - before[ends - counts]

    def _tokenize(self, key: str) -> bytes:
        """The ids of the word ``▁`` + ``key`` (int32 bytes), remembered unless the word is
        over :data:`_MEMO_WORD_CHARS` characters (the memo starts afresh when full)."""
        word = _WORD_MARK + key
        known = _int32_bytes([token.id for token in self._model.tokenize(word)])
        if len(word) <= _MEMO_WORD_CHARS:  # a text without spaces is one word
            if len(self._memo) >= self.capacity:
                self._memo.clear()
            self._memo[key] = known
        return known


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
        self._tokens: WordTokens | None = None
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
                    self._tokens = WordTokens(self._model.tokenizer)
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """As :meth:`Embedder.embed` (loads the model on first use, ~0.2 s)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        if model.binary:  # pragma: no cover - the shipped model is not binarised
            vectors = model.embed(list(texts), norm=False, return_np=True)
        else:
            vectors = _mean_token_vectors(model, list(texts), self._tokens)
        return l2_normalise(np.asarray(vectors, dtype=np.float32))


def _mean_token_vectors(
    model: Any, texts: list[str], tokens: WordTokens | None = None
) -> np.ndarray:
    """WordLlama's average pooling of ``texts``, shape ``(len(texts), dim)``, float32: the
    same bits as ``model.embed(texts, norm=False)`` (wordllama 0.4: tokens without special
    tokens, ids clipped to the table, the float32 sum of the token rows over the token axis
    divided by the token count; no token: a zero row), at ~0.35x its CPU time.

    WordLlama pads every 64-text chunk to its longest text and gathers, masks and sums the
    padded positions too (their products are zeros, which leave the sum unchanged); here the
    tokenizer pads nothing (``no_padding``, set at load) and the sums are one sparse product,
    ``(texts × vocabulary, a 1 per token occurrence in text order) @ table``: scipy's CSR-dense
    product adds each occurrence's row into its text's row of zeros in the text's token
    order, in float32 (``1 · x`` is ``x``), which is numpy's sum over the token axis (the
    rows added one after another from the first) — the same bits (a sum from ``0.0`` and one
    from the first row differ only in the sign of a zero, and the shipped table holds no
    ``-0.0``: a sum of non-zero values is never ``-0.0``). No token array is built, no text
    sorted by token count (~1.0 against ~1.9 µs a question on the production-shaped
    benchmark's questions, the tokens given). Checked bit for bit against ``model.embed`` in
    ``tests/service/test_embeddings.py``. ``tokens``: the ids of the texts
    (:class:`WordTokens`, each word's remembered); ``None``: the tokenizer's own.
    """
    from scipy import sparse

    table = model.embedding
    if tokens is None:
        tokens = WordTokens(model.tokenizer, capacity=0)
    flat, lengths = tokens.flat(texts)
    np.clip(flat, 0, table.shape[0] - 1, out=flat)
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    occurrences = sparse.csr_matrix((np.ones(len(flat), dtype=np.float32), flat, starts),
                                    shape=(len(texts), table.shape[0]))  # fmt: skip
    sums = np.asarray(occurrences @ table, dtype=np.float32)
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    np.divide(sums, lengths.astype(np.float32)[:, np.newaxis], out=out,
              where=lengths[:, np.newaxis] > 0)  # fmt: skip
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
