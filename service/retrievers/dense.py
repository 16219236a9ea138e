"""Dense retrieval: cosine similarity of sentence embeddings (the embedding layer).

The corpus is embedded once, at construction, into an ``(n_docs, dim)`` float32 matrix of
unit rows; a batch of questions is embedded (through the layer's per-question cache) and
scored against the corpus matrix, ``scores = D · q`` per question (cosine, in [-1, 1]). Only
positive scores are returned, best first, equal scores by corpus order.

Passages are embedded with the cache bypassed (they are not questions, and would push the
live questions out of it).

>>> from service.records import Passage
>>> from service.embeddings.model import CachedEmbedder
>>> from service.embeddings.backends import CharNgramEmbedder
>>> dense = DenseRetriever([Passage("a", "hostel fee per semester"), Passage("b", "exam dates")],
...                        embedder=CachedEmbedder(CharNgramEmbedder(dim=256)))
>>> [doc.doc_id for doc in dense.search("when are the exam dates", 2)][0]
'b'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from service.embeddings.protocol import Embedder
from service.records import Passage, ScoredDoc
from service.retrievers.text import check_k, corpus_ids

#: Passages embedded per call while the corpus matrix is built.
CORPUS_BATCH = 256


def top_k_dense(scores: np.ndarray, k: int, ids: Sequence[str]) -> list[list[ScoredDoc]]:
    """The top ``k`` positive entries of each row of a dense score matrix.

    Args:
        scores: ``(n_questions, n_docs)`` scores.
        k: how many to keep per row, ≥ 1.
        ids: ``n_docs`` passage ids, column order.

    Returns:
        One list per row, score descending, equal scores by column ascending.

    >>> [[(d.doc_id, d.score) for d in row]
    ...  for row in top_k_dense(np.array([[0.2, 0.9, 0.2, -0.1]]), 3, ["a", "b", "c", "d"])]
    [[('b', 0.9), ('a', 0.2), ('c', 0.2)]]
    """
    results: list[list[ScoredDoc]] = []
    n_docs = scores.shape[1]
    for row in scores:
        if k < n_docs:  # every column scoring at least the k-th value, ties included
            kth = np.partition(row, n_docs - k)[n_docs - k]
            cols = np.flatnonzero(row >= kth)
        else:
            cols = np.arange(n_docs)
        cols = cols[row[cols] > 0]
        order = cols[np.lexsort((cols, -row[cols]))][:k]
        results.append([ScoredDoc(ids[int(c)], float(row[c])) for c in order])
    return results


class DenseRetriever:
    """Cosine similarity of embedding vectors (see the module docstring).

    Memory: the corpus matrix is ``n_docs × dim × 4`` bytes (10,000 passages with the default
    768-d layer ≈ 31 MB); building it embeds every passage once (WordLlama: well under a
    millisecond per passage).

    Args:
        corpus: the passages to index (non-empty, unique ids).
        embedder: the embedding layer (:func:`~service.embeddings.model.build_embedder`); default
            :func:`~service.embeddings.model.default_embedder`.
        name: the retriever's name.

    Raises:
        ValueError: empty corpus or duplicate ids.
        RuntimeError: the embedding model cannot be loaded.
    """

    def __init__(
        self,
        corpus: Sequence[Passage],
        *,
        embedder: Embedder | None = None,
        name: str = "dense",
    ) -> None:
        if embedder is None:
            from service.embeddings.model import default_embedder

            embedder = default_embedder()
        self.name = name
        self.ids = corpus_ids(corpus)
        self.embedder = embedder
        uncached: Embedder = getattr(embedder, "inner", embedder)
        texts = [passage.text for passage in corpus]
        self.matrix = np.empty((len(texts), embedder.dim), dtype=np.float32)
        for start in range(0, len(texts), CORPUS_BATCH):
            chunk = texts[start : start + CORPUS_BATCH]
            self.matrix[start : start + len(chunk)] = uncached.embed(chunk)

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        """Return at most ``k`` passages with a positive cosine, best first."""
        return self.search_batch([question], k)[0]

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """Return at most ``k`` passages per question: one embedding batch; equal to
        :meth:`search` one question at a time, bit for bit."""
        check_k(k)
        if not questions:
            return []
        queries = self.embedder.embed(list(questions))
        # one matrix-vector product per question: a question's scores are then bit-identical
        # whatever batch it comes in (a matrix-matrix product may round differently)
        scores = np.stack([self.matrix @ query for query in queries])
        return top_k_dense(scores, k, self.ids)
