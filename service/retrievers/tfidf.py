"""TF-IDF cosine over word n-grams and character n-grams (scikit-learn).

Two ``TfidfVectorizer`` views of each text, both with ``sublinear_tf`` (``1 + ln tf``), smooth
idf and L2-normalised rows:

* **word** — :func:`.text.tokenize` tokens, n-grams ``word_ngrams`` (default 1-2);
* **char** — ``char_wb`` n-grams ``char_ngrams`` (default 3-5) of the NFKC, case-folded text,
  so misspellings ("scholarshp"), inflections and cross-lingual overlap (names, numbers,
  cognates) still share features.

Combination: the two unit vectors are scaled by ``√w`` and ``√(1-w)`` and concatenated
(``hstack``), so the result is still a unit vector and one sparse product gives::

    score(q, d) = w · cos_word(q, d) + (1 - w) · cos_char(q, d)        (w = word_weight, 0.3)

a number in [0, 1]. Zero scores are never returned.

The default ``w = 0.3`` was measured on XQuAD (240 English paragraphs; MRR@20 of English /
Spanish questions): w = 0.5 → 0.957 / 0.558, w = 0.3 → 0.952 / 0.658, w = 0.2 → 0.950 / 0.686.
Leaning on characters costs English almost nothing and helps cross-lingual questions a lot.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
import scipy.sparse as sp

from service.records import Passage, ScoredDoc
from service.retrievers.text import check_k, corpus_ids, tokenize
from service.text import normalise


def top_k_rows(scores: sp.csr_matrix, k: int, ids: Sequence[str]) -> list[list[ScoredDoc]]:
    """Return the top ``k`` stored positive entries of each row of a sparse score matrix.

    Args:
        scores: ``(n_questions, n_docs)`` CSR matrix; absent entries mean score 0.
        k: how many to keep per row, ≥ 1.
        ids: ``n_docs`` passage ids, column order.

    Returns:
        One list per row, score descending, equal scores by column ascending.
    """
    results: list[list[ScoredDoc]] = []
    for row in range(scores.shape[0]):
        start, end = scores.indptr[row], scores.indptr[row + 1]
        cols, vals = scores.indices[start:end], scores.data[start:end]
        keep = vals > 0
        cols, vals = cols[keep], vals[keep]
        if len(vals) > k:  # a cut at the k-th value, then every tie of it, then exact order
            kth = np.partition(vals, len(vals) - k)[len(vals) - k]
            keep = vals >= kth
            cols, vals = cols[keep], vals[keep]
        order = np.lexsort((cols, -vals))[:k]
        results.append([ScoredDoc(ids[int(cols[i])], float(vals[i])) for i in order])
    return results


class TfidfRetriever:
    """Cosine similarity of word + character TF-IDF vectors (see the module docstring).

    Args:
        corpus: the passages to index (non-empty, unique ids).
        name: the retriever's name.
        word_weight: ``w`` in the formula above, in [0, 1].
        word_ngrams: ``(min_n, max_n)`` of word n-grams.
        char_ngrams: ``(min_n, max_n)`` of ``char_wb`` n-grams.

    Raises:
        ValueError: empty corpus, duplicate ids, or ``word_weight`` out of [0, 1].

    >>> tfidf = TfidfRetriever([Passage("a", "scholarship fund"), Passage("b", "dog park")])
    >>> tfidf.search("scholarshp", 5)[0].doc_id
    'a'
    """

    def __init__(
        self,
        corpus: Sequence[Passage],
        *,
        name: str = "tfidf",
        word_weight: float = 0.3,
        word_ngrams: tuple[int, int] = (1, 2),
        char_ngrams: tuple[int, int] = (3, 5),
    ) -> None:
        if not 0 <= word_weight <= 1:
            raise ValueError(f"word_weight must be in [0, 1], got {word_weight}")
        self.name = name
        self.ids = corpus_ids(corpus)
        self._weights = (np.sqrt(word_weight), np.sqrt(1 - word_weight))
        common = {"sublinear_tf": True, "lowercase": False, "dtype": np.float32}
        from sklearn.feature_extraction.text import TfidfVectorizer  # here: costs start-up

        self._word = TfidfVectorizer(
            analyzer="word",
            tokenizer=tokenize,
            token_pattern=None,
            ngram_range=tuple(word_ngrams),
            **common,
        )
        self._char = TfidfVectorizer(
            analyzer="char_wb",
            preprocessor=partial(normalise, separators="keep"),  # char_wb splits on whitespace
            ngram_range=tuple(char_ngrams),
            **common,
        )
        texts = [passage.text for passage in corpus]
        words = self._word.fit_transform(texts)
        chars = self._char.fit_transform(texts)
        self._docs_t = self._combine(words, chars).T.tocsr()  # (n_features, n_docs)

    def _combine(self, words: sp.spmatrix, chars: sp.spmatrix) -> sp.csr_matrix:
        word_w, char_w = self._weights
        return sp.hstack([words * word_w, chars * char_w], format="csr")

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        """Return at most ``k`` passages with a positive score, best first."""
        return self.search_batch([question], k)[0]

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """Return at most ``k`` passages per question: one transform, one sparse product."""
        check_k(k)
        if not questions:
            return []
        texts = list(questions)
        queries = self._combine(self._word.transform(texts), self._char.transform(texts))
        scores = (queries @ self._docs_t).tocsr()
        return top_k_rows(scores, k, self.ids)
