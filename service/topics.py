"""Question topics: a scikit-learn topic model fitted on the gold set, applied to live traffic.

Pipeline (one ``transform`` per micro-batch)::

    text ─ TF-IDF (word 1-2 grams ⊕ char_wb 3-5 grams, sublinear tf) ─ TruncatedSVD (LSA)
         ─ L2 normalise ─ cosine to each topic centroid ─ nearest topic, or ``"novel"``

* **Unsupervised** (default): KMeans over the LSA vectors; ``n_topics`` defaults to
  ``min(max_topics, round(sqrt(n)))``. Topics are named ``topic-<k>`` unless ``names`` maps
  ``k`` to a name; :attr:`TopicModel.topics` lists the top terms of each.
* **Supervised** (``labels`` given, e.g. the gold rows' ``topic`` field): one centroid per label
  (nearest-centroid classifier); the labels are the topic names.
* **Novelty**: a question whose cosine similarity to its nearest *training text* (in LSA
  space) is below ``threshold`` is ``"novel"``; ``threshold`` is the ``novelty_percentile``-th
  percentile of the training texts' leave-one-out nearest-neighbour similarities, so about that
  share of new in-distribution questions is flagged. Nearest-neighbour similarity separates
  CLINC150's out-of-scope questions far better than similarity to the nearest centroid (ROC AUC
  ~0.8 vs ~0.6, measured in ``benchmarks/bench_topics.py``'s set-up). At most
  ``max_reference`` training vectors are kept (a seeded sample beyond that).

Artefacts (:meth:`TopicModel.save`) are one file: a JSON header line (format, version,
scikit-learn version) then a joblib pickle, so an incompatible artefact is refused before
anything is unpickled. Sources: Deerwester et al. 1990 (LSA); scikit-learn's "Clustering text
documents using k-means" example (TF-IDF → SVD → Normalizer → KMeans).

>>> model = TopicModel.fit(["fee due date", "hostel fee amount", "exam timetable", "exam hall"],
...                        TopicConfig(n_topics=2, svd_components=3))
>>> [a.topic for a in model.assign_many(["when is the exam", "fee for the hostel"])][0] != ""
True
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import joblib
import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.cluster import KMeans
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import Normalizer
from threadpoolctl import ThreadpoolController

from service.batch_cache import BatchCache
from service.known import HashTable
from service.pipeline import Batch, StatelessStage
from service.regular_files import open_regular
from service.topic_config import N_TOPICS_MAX, N_TOPICS_MIN, TopicConfig

#: Topic name given to a question far from every topic.
NOVEL = "novel"
#: Word tokens: letters/digits plus combining marks of Indic, Thai and Arabic scripts.
TOKEN_PATTERN = r"(?u)(?:[^\W_]|[\u0300-\u036f\u064b-\u065f\u0900-\u0dff\u0e00-\u0eff])+"
_FORMAT = "goldwatch-artefact/1"
_ASCII_TOKENS = re.compile(r"[a-z0-9]+")


class ArtefactError(ValueError):
    """A saved model can't be loaded: wrong kind, bad header, incompatible scikit-learn."""


def save_artefact(path: Path | str, kind: str, version: str, payload: Any) -> None:
    """Write ``{"format", "kind", "version", "sklearn"}`` as a JSON line, then ``payload``."""
    header = {"format": _FORMAT, "kind": kind, "version": version, "sklearn": sklearn.__version__}
    with Path(path).open("wb") as handle:
        handle.write(json.dumps(header).encode() + b"\n")
        joblib.dump(payload, handle)


def load_artefact(path: Path | str, kind: str) -> tuple[dict[str, Any], Any]:
    """Return ``(header, payload)`` of a file written by :func:`save_artefact`.

    Raises:
        ArtefactError: not a goldwatch artefact, another ``kind``, or saved with another
            scikit-learn major version (checked before unpickling).
        OSError: the file can't be read.
    """
    with open_regular(path) as handle:  # a FIFO or device: a plain error, not a hang
        try:
            header = json.loads(handle.readline())
        except ValueError:
            raise ArtefactError(f"{path}: not a goldwatch model artefact") from None
        if not isinstance(header, dict) or header.get("format") != _FORMAT:
            raise ArtefactError(f"{path}: not a goldwatch model artefact")
        if header.get("kind") != kind:
            raise ArtefactError(f"{path}: holds a {header.get('kind')!r} model, not {kind!r}")
        saved = str(header.get("sklearn", "?"))
        if saved.split(".")[0] != sklearn.__version__.split(".")[0]:
            raise ArtefactError(
                f"{path}: saved with scikit-learn {saved}, running {sklearn.__version__} "
                "(different major version); refit the model"
            )
        payload = joblib.load(io.BytesIO(handle.read()))
    return header, payload


def data_version(texts: Sequence[str], labels: Sequence[Any] | None, params: Any) -> str:
    """First 12 hex chars of sha256 over the training data, params and scikit-learn version."""
    blob = json.dumps([list(texts), labels and list(labels), params, sklearn.__version__])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


class TopicInfo(NamedTuple):
    """One topic: ``name``, its ``top_terms`` (highest centroid weight first), training ``size``."""

    name: str
    top_terms: tuple[str, ...]
    size: int


class TopicAssignment(NamedTuple):
    """A question's topic.

    Attributes:
        topic: the topic name, or :data:`NOVEL` when far from every training text.
        nearest: the nearest topic's name (also when novel).
        similarity: cosine similarity to that topic's centroid, in [-1, 1].
        neighbour: cosine similarity to the nearest training text (the novelty score).
    """

    topic: str
    nearest: str
    similarity: float
    neighbour: float

    @property
    def novel(self) -> bool:
        """True when the question is far from every training text."""
        return self.topic == NOVEL


class _State(NamedTuple):
    pipeline: Any  # text -> unit LSA vector, (n,) -> (n, d)
    centroids: np.ndarray  # (topics, d), unit rows
    reference: np.ndarray  # (m, d) float32 unit rows, training sample
    topics: tuple[TopicInfo, ...]
    threshold: float
    supervised: bool


def _vectoriser() -> Any:
    words = TfidfVectorizer(
        token_pattern=TOKEN_PATTERN, ngram_range=(1, 2), sublinear_tf=True, stop_words="english"
    )
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2)
    return FeatureUnion([("words", words), ("chars", chars)])


class _FastLSA:
    """``pipeline.transform`` of :func:`_vectoriser` → SVD → Normalizer, same numbers, cheaper.

    scikit-learn's ``char_wb`` analysis and ``_count_vocab`` run per n-gram in Python (with a
    ``KeyError`` per n-gram unseen in training, most of them); this counts the char n-grams
    of a whole batch with numpy (64-bit hashes, see :meth:`_char_block`) and looks the word
    n-grams of scikit-learn's own analyzer up in the vocabulary, then applies the
    fitted idf weights, sublinear tf and L2 norms itself and projects both blocks with the SVD
    components. Built from a fitted pipeline; :meth:`build` returns ``None`` for
    any other structure (the caller then uses the pipeline as it is).
    """

    def __init__(self, words: Any, chars: Any, components: np.ndarray) -> None:
        self._word_vocab = dict(words.vocabulary_)
        self._word_idf = np.asarray(words.idf_, dtype=np.float64)
        hashes = np.array([_hash(gram) for gram in chars.vocabulary_], dtype=np.uint64)
        self._char_hashes = np.unique(hashes)
        self._char_table = HashTable(hashes)  # hash -> position in vocabulary_
        self._char_columns = np.fromiter(chars.vocabulary_.values(), dtype=np.int64)
        self._word_tokens = words.build_tokenizer()
        # on lower-cased ASCII text TOKEN_PATTERN's tokens are the runs of [a-z0-9] (its
        # combining marks are not ASCII), which a plain class finds ~2.5x faster
        self._ascii_tokens = _ASCII_TOKENS.findall if words.token_pattern == TOKEN_PATTERN else None
        self._word_stop = words.get_stop_words() or frozenset()
        # bigram columns by (token id, token id) over the tokens the fitted bigrams use
        pairs = [(gram.split(" "), col) for gram, col in self._word_vocab.items() if " " in gram]
        self._pair_token = {t: i for i, t in enumerate(dict.fromkeys(
            t for (first, second), _ in pairs for t in (first, second)))}  # fmt: skip
        keys = np.array([self._pair_token[a] * len(self._pair_token) + self._pair_token[b]
                         for (a, b), _ in pairs], dtype=np.int64)  # fmt: skip
        order = np.argsort(keys)
        self._pair_keys = keys[order]
        self._pair_cols = np.array([col for _, col in pairs], dtype=np.int64)[order]
        self._char_idf = np.asarray(chars.idf_, dtype=np.float64)
        self._white = chars._white_spaces
        self._char_lo, self._char_hi = chars.ngram_range
        n_words = len(self._word_vocab)
        self._word_proj = np.ascontiguousarray(components[:, :n_words].T)
        self._char_proj = np.ascontiguousarray(components[:, n_words:].T)

    @classmethod
    def build(cls, pipeline: Any) -> _FastLSA | None:
        try:
            union, lsa = (step for _, step in pipeline.steps)
            (wname, words), (cname, chars) = union.transformer_list
            svd, normalizer = (step for _, step in lsa.steps)
        except (AttributeError, TypeError, ValueError):
            return None
        expected = (
            wname == "words" and cname == "chars"
            and isinstance(words, TfidfVectorizer) and isinstance(chars, TfidfVectorizer)
            and isinstance(svd, TruncatedSVD) and isinstance(normalizer, Normalizer)
            and chars.analyzer == "char_wb" and chars.lowercase and chars.strip_accents is None
            and chars.preprocessor is None and chars.binary is False
            and words.binary is False and union.transformer_weights is None
            and words.analyzer == "word" and words.preprocessor is None
            and words.strip_accents is None and words.tokenizer is None
            and words.input == "content" and words.ngram_range == (1, 2)
            and words.lowercase
            and all(v.sublinear_tf and v.use_idf and v.norm == "l2" and v.dtype == np.float64
                    for v in (words, chars))
            and normalizer.norm == "l2"
            and svd.components_.shape[1] == len(words.vocabulary_) + len(chars.vocabulary_)
        )  # fmt: skip
        if not expected:
            return None
        fast = cls(words, chars, svd.components_)
        if len(fast._char_hashes) != len(chars.vocabulary_):
            return None  # two fitted n-grams share a hash (never seen): stay exact
        return fast

    def _char_block(self, lowered: Sequence[str]) -> sp.csr_matrix:
        """Counts of the fitted char n-grams of each lower-cased text, all texts at once.

        ``char_wb`` n-grams never cross a word, so they are found once per distinct word of
        the batch (questions share most of their words): the distinct words, each padded with
        a space either side, are joined with one more space (a gram spanning two words holds
        two spaces in a row, which no fitted n-gram does, so it never counts); every n-gram
        of that string is hashed to 64 bits and looked up among the fitted n-grams' hashes
        in a hash table. A padded word shorter than ``n`` has no ``n``-gram, and one of
        exactly ``n`` characters counts once, as in sklearn's ``_char_wb_ngrams`` (exact for
        the fitted ``min_n`` of 3 or less, where no padded word is shorter than ``min_n``).
        A text's counts are then its word counts times its words' n-gram counts (a sparse
        product).
        """
        # sklearn's char_wb splits the text with its white-space runs made one space, then
        # ``str.split``: the same words as ``str.split`` alone (both split on str.isspace)
        text_words, words = _bag_of_words([text.split() for text in lowered])
        pieces = [f" {word}  " for word in words]
        sizes = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        starts = np.cumsum(sizes) - sizes
        codes = np.frombuffer("".join(pieces).encode("utf-32-le", "surrogatepass"),
                              dtype=np.uint32).astype(np.uint64)  # fmt: skip
        found_words = [np.zeros(0, dtype=np.int64)]
        found_cols = [np.zeros(0, dtype=np.int64)]
        # h_n(i) = n * M**n + sum_k codes[i + k] * M**(n - 1 - k) (mod 2**64): _hash's value,
        # built up one character at a time from the (n - 1)-gram sums
        sums = np.zeros(len(codes), dtype=np.uint64)
        for n in range(1, self._char_hi + 1):
            count = len(codes) - n + 1
            if count <= 0:
                break
            sums = sums[:count] * _HASH_MULTIPLIER + codes[n - 1 : n - 1 + count]
            if n < self._char_lo:
                continue
            hashes = sums + np.uint64(n * pow(int(_HASH_MULTIPLIER), n, 1 << 64) & _MASK)
            where = self._char_table.lookup(hashes)
            hit = np.flatnonzero(where >= 0)
            found_cols.append(self._char_columns.take(where.take(hit)))
            found_words.append(np.searchsorted(starts, hit, side="right") - 1)
        rows, cols = np.concatenate(found_words), np.concatenate(found_cols)
        width = len(self._char_idf)
        word_grams = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(words), width))
        counts = (text_words @ word_grams).tocsr()
        counts.sort_indices()
        return _weighted(counts.indptr, counts.indices, counts.data, self._char_idf)

    def _word_block(self, lowered: Sequence[str]) -> sp.csr_matrix:
        """Counts of the fitted word 1-2 grams of each lower-cased text: sklearn's word
        analyzer (its tokenizer, stop words dropped, bigrams of the remaining tokens) done
        for the whole batch with numpy. Each distinct token is looked up once (unigram column,
        stop word, id among the tokens of fitted bigrams); a bigram is a pair of consecutive
        kept tokens of one text, found by its two ids among the fitted bigrams."""
        tokenize, ascii_tokens = self._word_tokens, self._ascii_tokens
        if ascii_tokens is not None:
            split = [ascii_tokens(text) if text.isascii() else tokenize(text) for text in lowered]
        else:
            split = [tokenize(text) for text in lowered]
        flat = list(itertools.chain.from_iterable(split))
        distinct = list(dict.fromkeys(flat))
        index = dict(zip(distinct, range(len(distinct)), strict=True))
        ids = np.fromiter(map(index.__getitem__, flat), dtype=np.int64, count=len(flat))
        sizes = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
        docs = np.repeat(np.arange(len(lowered)), sizes)
        vocab, stop, pair = self._word_vocab, self._word_stop, self._pair_token
        count = len(distinct)
        kept = ~np.fromiter((t in stop for t in distinct), dtype=bool, count=count)[ids]
        ids, docs = ids[kept], docs[kept]
        unigram = np.fromiter((vocab.get(t, -1) for t in distinct), dtype=np.int64, count=count)
        token = np.fromiter((pair.get(t, -1) for t in distinct), dtype=np.int64, count=count)
        columns = unigram.take(ids)
        found = columns >= 0
        first, second = token.take(ids[:-1]), token.take(ids[1:])
        pairs = np.flatnonzero((docs[:-1] == docs[1:]) & (first >= 0) & (second >= 0))
        keys = first.take(pairs) * len(pair) + second.take(pairs)
        where = np.minimum(np.searchsorted(self._pair_keys, keys), len(self._pair_keys) - 1)
        hit = self._pair_keys.take(where) == keys if len(self._pair_keys) else keys < 0
        all_docs = np.concatenate([docs[found], docs.take(pairs[hit])])
        all_cols = np.concatenate([columns[found], self._pair_cols.take(where[hit])])
        return _counted(all_docs, all_cols, len(lowered), self._word_idf)

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        """Unit LSA vectors of ``texts``, (n,) → (n, d)."""
        lowered = [text.lower() for text in texts]
        words = self._word_block(lowered)
        chars = self._char_block(lowered)
        vectors = np.asarray(words @ self._word_proj) + np.asarray(chars @ self._char_proj)
        return _unit_rows(vectors)


#: Odd 64-bit multiplier of the n-gram hash (the golden-ratio constant).
_HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_MASK = (1 << 64) - 1


def _hash(gram: str) -> int:
    """The 64-bit hash :meth:`_FastLSA._char_block` computes with numpy, for one n-gram."""
    value = len(gram)
    for char in gram:
        value = (value * int(_HASH_MULTIPLIER) + ord(char)) & _MASK
    return value


def _counted(docs: np.ndarray, cols: np.ndarray, n_docs: int, idf: np.ndarray) -> sp.csr_matrix:
    """TfidfVectorizer's rows from one ``(doc, column)`` pair per occurrence."""
    width = len(idf)
    keys, counts = np.unique(docs * width + cols, return_counts=True)  # sorted by doc, column
    rows, columns = np.divmod(keys, width)
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n_docs))]
    return _weighted(indptr, columns, counts, idf)


def _bag_of_words(split: Sequence[list[str]]) -> tuple[sp.csr_matrix, list[str]]:
    """Word counts of already split texts (texts × distinct words, float64) and the distinct
    words, in order of first appearance (the matrix's columns)."""
    flat = list(itertools.chain.from_iterable(split))
    words = list(dict.fromkeys(flat))
    column = dict(zip(words, range(len(words)), strict=True))
    sizes = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
    indices = np.fromiter(map(column.__getitem__, flat), dtype=np.int64, count=len(flat))
    indptr = np.r_[0, np.cumsum(sizes)]
    matrix = sp.csr_matrix((np.ones(len(flat)), indices, indptr), shape=(len(split), len(words)))
    return matrix, words


def _weighted(indptr: np.ndarray, cols: np.ndarray, counts: np.ndarray, idf: np.ndarray
              ) -> sp.csr_matrix:  # fmt: skip
    """TfidfVectorizer's rows from raw counts: sublinear tf times idf, L2-normalised."""
    data = (np.log(counts.astype(np.float64)) + 1.0) * idf[cols]
    matrix = sp.csr_matrix((data, cols, indptr), shape=(len(indptr) - 1, len(idf)))
    if len(data):
        lengths = np.diff(matrix.indptr)
        sq = np.add.reduceat(np.r_[data * data, 0.0], matrix.indptr[:-1])
        norms = np.sqrt(np.where(lengths > 0, sq, 1.0))
        matrix.data /= np.repeat(norms, lengths)
    return matrix


@functools.cache
def _blas() -> Any:
    return ThreadpoolController()


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class TopicModel:
    """A fitted topic model; build it with :meth:`fit` or :meth:`load`.

    Attributes:
        topics: one :class:`TopicInfo` per topic, index = topic id.
        threshold: novelty cut-off on nearest-neighbour similarity (``-inf``: disabled).
        version: hash of training texts, labels, config and scikit-learn version.
        supervised: True when topics came from user labels.
    """

    def __init__(self, state: _State, version: str) -> None:
        self._state = state
        self.topics = state.topics
        self.threshold = state.threshold
        self.supervised = state.supervised
        self.version = version
        self._fast = _FastLSA.build(state.pipeline)

    @classmethod
    def fit(
        cls,
        texts: Sequence[str],
        config: TopicConfig | None = None,
        labels: Sequence[str] | None = None,
    ) -> TopicModel:
        """Fit on ``texts`` (gold questions, optionally plus passages); ``labels`` → supervised.

        Raises:
            ValueError: fewer than 3 texts, ``labels`` not as long as ``texts``, fewer than
                2 distinct labels, more clusters than texts, or a name equal to ``"novel"``.
        """
        config = config or TopicConfig()
        texts = list(texts)
        if len(texts) < 3:
            raise ValueError(f"need at least 3 texts to fit topics, got {len(texts)}")
        if labels is not None:
            _check_labels(texts, labels)
        vectoriser = _vectoriser()
        tfidf = vectoriser.fit_transform(texts)
        dims = max(1, min(config.svd_components, tfidf.shape[1] - 1, len(texts) - 1))
        svd = TruncatedSVD(dims, random_state=config.seed)
        lsa = make_pipeline(svd, Normalizer(copy=False))
        vectors = lsa.fit_transform(tfidf)
        if labels is None:
            names, assigned, centroids = _cluster(vectors, config)
        else:
            names, assigned, centroids = _by_label(vectors, labels)
        reference = _sample(vectors, config.max_reference, config.seed)
        terms = _top_terms(vectoriser, svd, centroids, config.n_terms)
        sizes = np.bincount(assigned, minlength=len(names))
        topics = tuple(TopicInfo(n, t, int(c)) for n, t, c in zip(names, terms, sizes, strict=True))
        threshold = _novelty_threshold(reference, config.novelty_percentile)
        state = _State(
            make_pipeline(vectoriser, lsa), centroids, reference, topics, threshold, bool(labels)
        )
        return cls(state, data_version(texts, labels, config.model_dump(mode="json")))

    @property
    def names(self) -> tuple[str, ...]:
        """Topic names, index = topic id (without :data:`NOVEL`)."""
        return tuple(topic.name for topic in self.topics)

    def assign_many(self, texts: Sequence[str]) -> list[TopicAssignment]:
        """Assign each text its nearest topic, or :data:`NOVEL`; one ``transform`` call.

        Shapes: ``texts`` n strings → n assignments, in order. An empty list gives ``[]``.
        """
        if not texts:
            return []
        texts = list(texts)
        if self._fast is not None:
            vectors = self._fast.transform(texts)  # (n, d)
        else:
            vectors = self._state.pipeline.transform(texts)
        # Small products: OpenBLAS threads only contend with the process's other work.
        with _blas().limit(limits=1, user_api="blas"):
            sims = vectors @ self._state.centroids.T  # (n, topics)
            best = sims.argmax(axis=1)
            top = sims[np.arange(len(best)), best]
            neighbour = (vectors.astype(np.float32) @ self._state.reference.T).max(axis=1)
        names = self.names
        rows = zip(best.tolist(), top.tolist(), neighbour.tolist(), strict=True)
        return [
            TopicAssignment(NOVEL if nn < self.threshold else names[k], names[k], sim, nn)
            for k, sim, nn in rows
        ]

    def assign(self, text: str) -> TopicAssignment:
        """Assign one text (prefer :meth:`assign_many`: far cheaper per question)."""
        return self.assign_many([text])[0]

    def save(self, path: Path | str) -> None:
        """Write the model as a versioned artefact (see module docstring)."""
        save_artefact(path, "topics", self.version, self._state._asdict())

    @classmethod
    def load(cls, path: Path | str) -> TopicModel:
        """Read a model written by :meth:`save`.

        Raises:
            ArtefactError: not a topic-model artefact, or incompatible scikit-learn version.
        """
        header, state = load_artefact(path, "topics")
        return cls(_State(**state), str(header["version"]))


def _sample(vectors: np.ndarray, limit: int, seed: int) -> np.ndarray:
    if len(vectors) > limit:
        keep = np.random.default_rng(seed).choice(len(vectors), limit, replace=False)
        vectors = vectors[np.sort(keep)]
    return np.ascontiguousarray(vectors, dtype=np.float32)


def _novelty_threshold(reference: np.ndarray, percentile: float, chunk: int = 2048) -> float:
    """Percentile of leave-one-out nearest-neighbour cosine similarities of ``reference``."""
    if percentile <= 0:
        return -math.inf
    best = np.empty(len(reference), dtype=np.float32)
    for start in range(0, len(reference), chunk):
        sims = reference[start : start + chunk] @ reference.T  # (chunk, m)
        rows = np.arange(len(sims))
        sims[rows, rows + start] = -np.inf  # leave the text itself out
        best[start : start + chunk] = sims.max(axis=1)
    return float(np.percentile(best, percentile))


def _check_labels(texts: Sequence[str], labels: Sequence[str]) -> None:
    if len(labels) != len(texts):
        raise ValueError(f"{len(labels)} labels for {len(texts)} texts")
    if len(set(labels)) < 2:
        raise ValueError("supervised topics need at least 2 distinct labels")
    if NOVEL in labels:
        raise ValueError(f"{NOVEL!r} is reserved for questions far from every topic")


def _cluster(vectors: np.ndarray, config: TopicConfig) -> tuple[list[str], np.ndarray, np.ndarray]:
    n = len(vectors)
    if config.n_topics is None:
        k = max(N_TOPICS_MIN, min(config.max_topics, round(math.sqrt(n))))
    else:  # a config built with model_copy(update=...) skipped validation: check again
        k = config.n_topics
        if not N_TOPICS_MIN <= k <= N_TOPICS_MAX:
            raise ValueError(f"n_topics must be in [{N_TOPICS_MIN}, {N_TOPICS_MAX}], got {k}")
    if k > n:
        raise ValueError(f"n_topics={k} is more than the {n} training texts")
    kmeans = KMeans(k, n_init=3, random_state=config.seed).fit(vectors)
    names = [config.names.get(i, f"topic-{i}") for i in range(k)]
    if NOVEL in names:
        raise ValueError(f"{NOVEL!r} is reserved for questions far from every topic")
    return names, kmeans.labels_, _unit_rows(kmeans.cluster_centers_)


def _by_label(
    vectors: np.ndarray, labels: Sequence[str]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    names = sorted(set(labels))
    index = {name: i for i, name in enumerate(names)}
    assigned = np.array([index[label] for label in labels])
    sums = np.zeros((len(names), vectors.shape[1]))
    np.add.at(sums, assigned, vectors)
    return names, assigned, _unit_rows(sums)


def _top_terms(
    vectoriser: Any, svd: TruncatedSVD, centroids: np.ndarray, n_terms: int
) -> list[tuple[str, ...]]:
    """Project centroids back to term space; keep the ``n_terms`` heaviest word features."""
    features = vectoriser.get_feature_names_out()
    is_word = np.char.startswith(features.astype(str), "words__")
    weights = (centroids @ svd.components_)[:, is_word]  # (topics, word features)
    words = np.char.replace(features[is_word].astype(str), "words__", "")
    order = np.argsort(-weights, axis=1)[:, :n_terms]
    return [tuple(words[row].tolist()) for row in order]


class TopicStage(StatelessStage):
    """Pipeline stage writing ``annotations[i]["topic"]`` (a name or ``"novel"``) and
    ``annotations[i]["topic_similarity"]`` (float), one :meth:`TopicModel.assign_many` per batch.
    """

    name = "topic"

    def __init__(self, model: TopicModel, cache_size: int = 65_536) -> None:
        self.model = model
        self.cache: BatchCache[TopicAssignment] = BatchCache(cache_size)

    def process(self, batch: Batch) -> None:
        questions = [event.question for event in batch.events]
        assignments = self.cache.get_many(questions, self.model.assign_many)
        for notes, found in zip(batch.annotations, assignments, strict=True):
            notes["topic"] = found.topic
            notes["topic_similarity"] = found.similarity
