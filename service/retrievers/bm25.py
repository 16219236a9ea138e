"""Okapi BM25 over an in-memory corpus, backed by ``bm25s``.

Scoring is bm25s's default "lucene" variant (Robertson & Zaragoza 2009, "The Probabilistic
Relevance Framework: BM25 and Beyond"; Lù 2024, "BM25S", arXiv:2407.03618)::

    score(q, d) = Σ_{t ∈ q} idf(t) · tf(t,d) / (tf(t,d) + k1 · (1 - b + b · |d| / avgdl))
    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))          (always > 0)

with ``k1 = 1.5``, ``b = 0.75`` by default. Like Lucene ≥ 8 it drops the classic ``(k1 + 1)``
numerator factor (a constant per query, so rankings are unchanged; scores are smaller).
Tokens come from :func:`.text.tokenize`; a question token repeated counts once per occurrence.

Why bm25s and not rank-bm25 — measured with ``benchmarks/bench_retrievers.py`` on XQuAD
English (240 paragraphs, 1190 questions, k = 10, both libraries fed the same token lists, no
stop words, medians of 3-7 runs on a shared 2-CPU machine, load ~2.8, so ±50 % noise):

=============  ==============  ===================
library        index time      questions / second
=============  ==============  ===================
bm25s 0.3.16   14-39 ms        10,000-23,000
rank-bm25 0.2  8 ms            1,200-2,900
=============  ==============  ===================

rank-bm25 builds its index a few milliseconds faster, but scores every document in Python for
each question; bm25s precomputes per-(token, doc) scores into a sparse matrix, so a question is
a sum of a few sparse rows — about 8x more questions per second, which is what a monitor that
replays gold sets and live traffic spends its time on. Recall@10 is the same (0.992 vs 0.991).
With stop words removed recall@10 is 0.990, so stop words stay in by default.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from service.records import Passage, ScoredDoc
from service.retrievers.text import check_k, corpus_ids, tokenize


def _import_bm25s_without_numba() -> None:
    """Import bm25s without letting it import numba (issue 22, start-up).

    bm25s imports numba whenever it is installed (0.4 s of ``serve``'s start-up here, and
    numba in turn imports ``coverage`` when that is installed), but goldwatch always runs
    bm25s with ``backend="numpy"``, which never calls numba. A ``None`` entry in
    :data:`sys.modules` makes bm25s's guarded ``import numba`` fail, so it takes its own
    no-numba path (the one it takes where numba is not installed); the entry is removed
    after, so code that wants numba later still imports it. When numba is already imported
    nothing is blocked: bm25s uses it as before (scores are the numpy backend's either way).
    """
    if "bm25s" in sys.modules or "numba" in sys.modules:
        import bm25s  # noqa: F401

        return
    sys.modules["numba"] = None  # type: ignore[assignment]
    try:
        import bm25s  # noqa: F401
    finally:
        if sys.modules.get("numba", 0) is None:
            del sys.modules["numba"]


_import_bm25s_without_numba()
import bm25s  # noqa: E402  (imported above without numba; this binds the name)

#: Largest dense block :meth:`BM25Retriever.best_scores` builds, in cells (16 MiB at float32):
#: a batch's distinct tokens × the corpus's documents, and its questions × the documents.
DENSE_BLOCK_CELLS = 1 << 22

# bm25s sets its logger to DEBUG on import; leave the level to the application.
logging.getLogger("bm25s").setLevel(logging.NOTSET)


class BM25Retriever:
    """BM25 ranking of ``corpus`` passages.

    Only passages sharing at least one token with the question are returned (score > 0), so a
    question whose tokens are all unknown gets ``[]``. Equal scores inside the returned list are
    ordered by corpus position; which of several passages tied at place ``k`` make the cut is
    bm25s's (deterministic) choice.

    Args:
        corpus: the passages to index (non-empty, unique ids).
        name: the retriever's name (reports, metric labels).
        k1: term-frequency saturation, ≥ 0.
        b: length normalisation, in [0, 1].
        stopwords: drop English stop words from passages and questions.

    Raises:
        ValueError: empty corpus, duplicate ids, or ``k1``/``b`` out of range.

    >>> bm25 = BM25Retriever([Passage("a", "cats purr"), Passage("b", "dogs bark")])
    >>> [doc.doc_id for doc in bm25.search("why do dogs bark", 5)]
    ['b']
    """

    def __init__(
        self,
        corpus: Sequence[Passage],
        *,
        name: str = "bm25",
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: bool = False,
    ) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.name = name
        self.ids = corpus_ids(corpus)
        self.stopwords = stopwords
        self._index = bm25s.BM25(k1=k1, b=b, backend="numpy")
        tokens = [tokenize(passage.text, stopwords=stopwords) for passage in corpus]
        self._index.index(tokens, show_progress=False)
        self._derive()

    def fitted_state(self) -> dict[str, Any]:
        """The built index as plain picklable data (passage ids, stop-word flag and bm25s's
        index object), for :meth:`from_fitted` — e.g. kept by the start-up fit cache
        (:mod:`service.files.fit_cache`), since tokenising and indexing a corpus is most of a
        large corpus's start-up (~8 s CPU for 20,317 passages here; reading it back ~0.2 s)."""
        return {"ids": list(self.ids), "stopwords": self.stopwords, "index": self._index}

    @classmethod
    def from_fitted(cls, state: dict[str, Any], *, name: str = "bm25") -> BM25Retriever:
        """The retriever :meth:`fitted_state` returned ``state`` for, named ``name``: the
        same index, so the same rankings and scores.

        Raises:
            KeyError, TypeError: ``state`` is not :meth:`fitted_state` output.
        """
        if not isinstance(state["index"], bm25s.BM25):
            raise TypeError(f"not a bm25s index: {type(state['index']).__name__}")
        built = cls.__new__(cls)
        built.name = name
        built.ids = [str(doc_id) for doc_id in state["ids"]]
        built.stopwords = bool(state["stopwords"])
        built._index = state["index"]
        built._derive()
        return built

    def _derive(self) -> None:
        """The vocabulary, score matrix and dtype read from the bm25s index."""
        scores = self._index.scores
        self._vocab: dict[str, int] = dict(self._index.vocab_dict)
        # bm25s's precomputed (token, doc) scores as a CSR matrix, one row per token.
        self._scores = sp.csr_matrix(
            (scores["data"], scores["indices"], scores["indptr"]),
            shape=(len(scores["indptr"]) - 1, scores["num_docs"]),
        )
        self._dtype = np.dtype(self._index.dtype)

    def best_scores(self, questions: Sequence[str]) -> list[float | None]:
        """The score of each question's best passage (``None``: no passage shares a token),
        i.e. the first score of :meth:`search_batch`, for all questions in one product.

        Each question is a row with a 1 per occurrence of a known token, in question order,
        multiplied by the (token, doc) score matrix: the per-document sums are accumulated in
        the same order and precision as bm25s's, so the scores are the same. Where the
        batch's distinct known tokens times the documents, and its questions times the
        documents, are at most :data:`DENSE_BLOCK_CELLS`, those tokens' rows of the score
        matrix are taken dense and each question's row of sums is accumulated into a dense
        row (:meth:`_dense_best`; the scoring alone ~2.8 against ~4.5 µs a question on the
        production-shaped benchmark's 317 passages, the whole call with its tokenizing 5.9
        against 7.5); else the sparse product (:meth:`_sparse_best`). Both add
        each document's token scores in the question's token order, from 0, in the score
        matrix's float type (a document no token scores adds exact zeros), so they give the
        same bits (checked on both paths in ``tests/service/retrievers``).
        """
        if not questions:
            return []
        vocab = self._vocab.get
        indices: list[int] = []
        indptr = [0]
        for question in questions:
            indices.extend([i for i in map(vocab, tokenize(question, stopwords=self.stopwords))
                            if i is not None])  # fmt: skip
            indptr.append(len(indices))
        found = np.asarray(indices, dtype=np.int64)
        starts = np.asarray(indptr, dtype=np.int64)
        docs = self._scores.shape[1]
        if len(questions) * docs <= DENSE_BLOCK_CELLS:
            tokens, local = np.unique(found, return_inverse=True)
            if len(tokens) * docs <= DENSE_BLOCK_CELLS:
                best = self._dense_best(tokens, local.reshape(-1), starts)
                return [float(score) if score > 0 else None for score in best.tolist()]
        best = self._sparse_best(found, starts)
        return [float(score) if score > 0 else None for score in best.tolist()]

    def _dense_best(self, tokens: np.ndarray, local: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Each question's largest document sum, shape ``(questions,)``, in the score
        matrix's dtype (0 where it has no known token): ``tokens`` the batch's distinct
        token ids (sorted), ``local`` each occurrence's position among them (question order),
        ``starts`` each question's first occurrence (CSR ``indptr``). The sums are
        ``(questions × tokens) @ (tokens × docs)`` with the second dense: scipy's CSR-dense
        product adds ``1 · score`` of each occurrence into the question's row in order."""
        n = len(starts) - 1
        if not len(tokens) or not self._scores.shape[1]:  # nothing to sum, or no document
            return np.zeros(n, dtype=self._dtype)
        block = self._scores[tokens].toarray()
        rows = sp.csr_matrix((np.ones(len(local), dtype=self._dtype), local, starts),
                             shape=(n, len(tokens)))  # fmt: skip
        sums = np.asarray(rows @ block)
        return np.asarray(sums.max(axis=1), dtype=self._dtype)

    def _sparse_best(self, found: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """As :meth:`_dense_best`, by a sparse product (any corpus size): ``found`` the
        occurrences' token ids, ``starts`` as there."""
        n = len(starts) - 1
        rows = sp.csr_matrix((np.ones(len(found), dtype=self._dtype), found, starts),
                             shape=(n, self._scores.shape[0]))  # fmt: skip
        product = rows @ self._scores  # (questions, docs), only each row's scored docs stored
        # the largest stored score of each row (a row with none: 0), straight from the CSR
        # arrays: ``product.max(axis=1)`` first sorts and de-duplicates every row's indices,
        # which cost as much as the product; a maximum does not depend on their order, and a
        # product's row holds each doc once. Scores <= 0 are "no passage" either way.
        firsts = product.indptr[:-1]
        filled = np.flatnonzero(np.diff(product.indptr))
        best = np.zeros(n, dtype=product.dtype)
        if len(filled):
            best[filled] = np.maximum.reduceat(product.data[: product.indptr[-1]],
                                               firsts[filled])  # fmt: skip
        return best

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        """Return at most ``k`` passages for ``question``, best first (see the class doc)."""
        return self.search_batch([question], k)[0]

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """Return at most ``k`` passages per question, in input order; one bm25s call."""
        check_k(k)
        if not questions:
            return []
        tokens = [tokenize(question, stopwords=self.stopwords) for question in questions]
        depth = min(k, len(self.ids))
        docs, scores = self._index.retrieve(tokens, k=depth, show_progress=False)
        return [
            self._row(row_docs, row_scores)
            for row_docs, row_scores in zip(docs, scores, strict=True)
        ]

    def _row(self, docs: np.ndarray, scores: np.ndarray) -> list[ScoredDoc]:
        """Drop zero scores and order by (score desc, corpus position asc)."""
        keep = scores > 0
        docs, scores = docs[keep], scores[keep]
        order = np.lexsort((docs, -scores))
        return [ScoredDoc(self.ids[int(docs[i])], float(scores[i])) for i in order]
