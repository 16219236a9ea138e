"""Known questions on live traffic: which live questions near-duplicate a gold question.

A live question whose answer the gold set already knows is a free, real evaluation: its
production ranking can be scored against the gold passages (recall@k, hit, reciprocal rank)
exactly like an offline gold-set run, on live traffic and for every retriever that saw it.

**Normalisation** (:func:`service.text.normalise`, ``separators="punctuation"``): Unicode
NFKC, ``casefold``, every punctuation character (Unicode category ``P*``) replaced by a space,
runs of whitespace collapsed and the ends stripped. Combining marks (Devanagari vowel signs)
are kept.

**Similarity**: cosine of TF-IDF vectors of character n-grams, n = 3..5, taken inside word
boundaries — exactly the n-grams of scikit-learn's ``analyzer="char_wb"``
(``sklearn.feature_extraction.text._VectorizerMixin._char_wb_ngrams``): each whitespace-split
word is padded with one space each side and yields all its n-grams for every n of the range;
a padded word of length ``L <= n`` yields itself once and no longer n-grams (so "a" gives only
" a ", "ab" gives " ab", "ab " and " ab "). No n-gram spans two words. Character n-grams
survive the typos, inflections and code-mixing of real traffic ("anual tution fee" keeps most
of "annual tuition fee"'s n-grams), where word tokens would not. A vector holds raw counts
times IDF, L2-normalised. The IDF comes from the gold questions (smooth IDF,
``ln((1 + n) / (1 + df)) + 1``, scikit-learn's default) so n-grams shared by every question
("what", "the ") weigh little. A live question's n-grams that no gold question has keep their
weight — ``df = 0``, the largest IDF ``ln(1 + n) + 1`` — in its norm, so they count against
the match: a vocabulary fitted on the gold set would drop them, shrink the norm and inflate
the cosine of a long question that merely *contains* a gold question. The result is the
cosine of scikit-learn's ``CountVectorizer(analyzer="char_wb", lowercase=False)`` counts over
the union of both vocabularies, weighted as above.

**Computation** (per batch, numpy and scipy, no per-question or per-n-gram Python): every
n-gram is identified by a 64-bit polynomial hash of its code points. The batch's distinct
words are hashed at once (:meth:`KnownQuestionIndex._word_grams`: the padded words are
concatenated, a rolling hash per n gives every window, and a window counts if it fits in its
word); each hash is looked up among the gold n-grams' (a direct-mapped table, binary search
for the few keys not in their home slot), the others are numbered with ``np.unique``. A
text's counts are its bag of words times its words' n-gram counts, and its similarities are
``(texts × words) @ ((words × gold n-grams) @ (gold n-grams × gold))``: each distinct word
meets the gold set once; when matching, only the texts that can reach the threshold meet it
(a unit gold vector weighs only gold n-grams, so a text's cosine is at most the norm of its
part on the gold vocabulary over its whole norm; most live questions fall below: 69 % of the
production-shaped benchmark's; of the rest, a bound per cluster of 16 gold rows, by each
n-gram's largest weight in the cluster, leaves 11 %). Distinct n-grams sharing a 64-bit hash
would be merged; the probability is about 1e-10 per batch, far below anything a similarity
rounded to 6 decimals shows. A live question equal to a gold one after normalisation matches
with similarity exactly 1.0 (first such gold row in the index's row order: the service's
indexes hold the rows in the out-of-scope stage's canonical order,
:func:`service.runtime.analytics.scope_gold`, so ties do not depend on the file's order).

**Same question**: a non-exact match must also ask the same question
(:func:`service.text.wording.known_disagreement`: the rule harvest merges by, the same numbers,
negation, content words and question word, or the gold question with a detail left out and
nothing written in its place): "2nd year" is not "1st year", "did Khanbaliq not become" is not
"did Khanbaliq become", "more access" is not "less access", though nearly all their n-grams
agree (trial 13: SQuAD 2.0's unanswerable twins of answerable gold questions scored 0.94 and
0.97); "when do exams start" is "... start in 2026?". A row it turns down gives way to the
next-best row at or above the threshold, or none; the lookup keeps the best row turned down and
why (:class:`KnownLookup`), so a report can say how many near-matches the rule rejected. The
rule costs set comparisons per text that reaches the threshold and is not exact (a few per cent
of live traffic), once per distinct question (cached).

>>> from service.records import GoldQuestion
>>> from service.data.goldset import GoldSet
>>> gold = GoldSet((GoldQuestion("q-1", "What is the annual tuition fee for MCA?", ("p-2",)),
...                 GoldQuestion("q-2", "When does the library close?", ("p-9",))))
>>> index = KnownQuestionIndex(gold, threshold=0.6)
>>> [m and m.gold_id for m in index.match_many(["what is the ANNUAL tuition fee for MCA",
...                                             "what is the anual tution fee for mca?",
...                                             "Is there a bus to Nagpur station?"])]
['q-1', 'q-1', None]
>>> index.match_many(["What is the annual tuition fee for MCA ???"])[0].similarity
1.0
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from scipy import sparse

from service.data.goldset import GoldSet
from service.evaluation.ir_metrics import hit_rate_at_k, recall_at_k, reciprocal_rank
from service.pipeline.batch_cache import BatchCache
from service.records import GoldQuestion
from service.text import normalise
from service.text import wording as wording_rule
from service.text.wording import Disagreement, Wording, known_disagreement

__all__ = ["KnownLookup", "KnownMatch", "KnownQuestionIndex", "KnownRejection", "live_scores"]

#: Seed and odd multiplier of the polynomial n-gram hash (golden-ratio constant), and the odd
#: multiplier that spreads a hash's low bits into its top bits (table slots, sort keys).
_SEED = np.uint64(0x2545F4914F6CDD1D)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
#: Largest gold set whose weights are kept dense as well (a faster product).
_DENSE_GOLD_ROWS = 256
#: Most entries of a dense (words × gold) similarity block (16 MB).
_BLOCK = 2**21
_SPREAD = np.uint64(0xD6E8FEB86659FD93)
#: Gold rows per cluster of the tighter pruning bound (:meth:`KnownQuestionIndex._scored`):
#: consecutive rows in file order, whose per-n-gram largest weight bounds every row of them.
_CLUSTER_ROWS = 16
#: Most entries (float64) of the pruning bound's maxima kept dense as well (8 MB): the
#: bound's product is then a sparse-times-dense one (see :meth:`KnownQuestionIndex._scored`).
_DENSE_CLUSTER_CELLS = 2**20


class KnownMatch(NamedTuple):
    """A live question's best gold question: its id and cosine similarity in [0, 1]."""

    gold_id: str
    similarity: float


class KnownRejection(NamedTuple):
    """A gold question at or above the threshold that does not ask the live question: its
    id, cosine similarity in [threshold, 1] and why (:data:`service.text.wording.Disagreement`:
    ``"numbers"``, ``"negation"``, ``"words"`` or ``"question"``)."""

    gold_id: str
    similarity: float
    reason: Disagreement


class KnownLookup(NamedTuple):
    """What :meth:`KnownQuestionIndex.lookup_many` found for one live question: the match
    (``None``: none) and the best gold row at or above the threshold the wording rule turned
    down before it (``None``: none was; with a match, the match is a next-best row)."""

    match: KnownMatch | None
    rejected: KnownRejection | None


_NOTHING = KnownLookup(None, None)
#: :func:`service.text.wording.wording` without its cache: the index caches its lookups, and
#: its texts must not evict harvest's wordings from that cache (the module, not the cached
#: function, is imported here: the cache keeps one name, ``wording.wording``).
_uncached_wording: Callable[[str], Wording] = wording_rule.wording.__wrapped__


def _slots(keys: np.ndarray, bits: int) -> np.ndarray:
    """Slot of each key in a table of ``2**bits`` slots: the top bits of the spread key."""
    return ((keys * _SPREAD) >> np.uint64(64 - bits)).astype(np.int64)


class HashTable:
    """Map from distinct 64-bit keys to ``0..len(keys)-1`` (their order), looked up for a
    whole array of keys at once.

    Direct-mapped: each key has one home slot (a quarter or less of the slots are used); a
    key whose home holds another key is found by binary search among the keys (few are).

    >>> table = HashTable(np.array([7, 2**63 + 5, 42, 0], dtype=np.uint64))
    >>> table.lookup(np.array([42, 8, 7, 2**63 + 5, 0, 1], dtype=np.uint64)).tolist()
    [2, -1, 0, 1, 3, -1]
    """

    def __init__(self, keys: np.ndarray) -> None:
        self._order = np.argsort(keys)
        self._sorted = keys[self._order]
        self._bits = max(4, (4 * len(keys) - 1).bit_length())
        self._keys = np.zeros(1 << self._bits, dtype=np.uint64)
        self._values = np.full(1 << self._bits, -1, dtype=np.int64)
        slots = _slots(keys, self._bits)
        self._values[slots] = np.arange(len(keys))  # one of the keys sharing a home wins
        self._keys[slots] = keys[self._values[slots]]

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The value of each key, ``-1`` for keys not in the table."""
        slots = _slots(keys, self._bits)
        out = self._values.take(slots)  # -1: empty home, so not a key
        elsewhere = np.flatnonzero((out >= 0) & (self._keys.take(slots) != keys))
        if len(elsewhere) and len(self._sorted):
            wanted = keys[elsewhere]
            where = np.minimum(np.searchsorted(self._sorted, wanted), len(self._sorted) - 1)
            found = self._sorted[where] == wanted
            out[elsewhere] = np.where(found, self._order[where], -1)
        return out


def _bag_of_words(texts: Sequence[str]) -> tuple[sparse.csr_matrix, list[str]]:
    """Word counts of ``texts`` (whitespace-split, as scikit-learn's char_wb analyzer) and
    the distinct words, in order of first appearance (the matrix's columns)."""
    split = [text.split() for text in texts]
    flat = list(itertools.chain.from_iterable(split))
    words = list(dict.fromkeys(flat))
    column = dict(zip(words, range(len(words)), strict=True))
    sizes = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
    indices = np.fromiter(map(column.__getitem__, flat), dtype=np.int64, count=len(flat))
    return sparse.csr_matrix(
        (np.ones(len(flat)), indices, np.r_[0, np.cumsum(sizes)]), shape=(len(texts), len(words))
    ), words


def _csr_counts(rows: np.ndarray, columns: np.ndarray, height: int, width: int
                ) -> sparse.csr_matrix:  # fmt: skip
    """A count matrix from one ``(row, column)`` pair per occurrence, rows ascending
    (repeated pairs stay separate entries, which sparse products add up)."""
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=height))]
    return sparse.csr_matrix((np.ones(len(rows)), columns, indptr), shape=(height, width))


def _rows(matrix: sparse.csr_matrix) -> np.ndarray:
    """The row of each stored entry of ``matrix``."""
    return np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))


def _cluster_maxima(gold_t: sparse.csr_matrix, size: int) -> sparse.csr_matrix:
    """Per n-gram (row of ``gold_t``, n-grams × gold) and cluster of ``size`` consecutive
    gold columns, the largest weight any gold question of the cluster gives it: shape
    (n-grams × ⌈gold / size⌉), sparse (an n-gram no question of a cluster has is absent)."""
    by_gold = gold_t.tocsc()
    edges = range(0, by_gold.shape[1], size)
    return sparse.csr_matrix(sparse.hstack(
        [by_gold[:, start : start + size].max(axis=1) for start in edges], format="csr"
    ))  # fmt: skip


def _row_sums(matrix: sparse.csr_matrix, values: np.ndarray) -> np.ndarray:
    """Per row of ``matrix``, the sum of ``values`` (one per stored entry)."""
    sums = np.bincount(_rows(matrix), weights=values, minlength=matrix.shape[0])
    return sums.astype(np.float64, copy=False)  # bincount of nothing is int


class KnownQuestionIndex:
    """Finds the gold question a live question near-duplicates (method in the module docstring).

    Args:
        gold: the gold set (every row, answerable or not, can be matched).
        threshold: smallest cosine similarity, in (0, 1], that counts as a match.
        ngram_range: character n-gram sizes ``(min_n, max_n)``, ``1 <= min_n <= max_n``.
        cache_size: questions whose match is remembered (live traffic repeats itself), in
            each of two caches: by the question as asked and by its normalised text; ``0``:
            none.

    Raises:
        ValueError: ``threshold`` outside (0, 1], a bad ``ngram_range``, an empty gold set or
            ``cache_size < 0``.
    """

    def __init__(
        self,
        gold: GoldSet,
        threshold: float = 0.9,
        ngram_range: tuple[int, int] = (3, 5),
        cache_size: int = 65_536,
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        low, high = ngram_range
        if not 1 <= low <= high:
            raise ValueError(f"ngram_range must satisfy 1 <= min_n <= max_n, got {ngram_range}")
        if not len(gold):
            raise ValueError("the gold set has no questions")
        self.threshold = threshold
        self.gold = gold
        self._ngram_range = (low, high)
        self._ids = tuple(q.id for q in gold)
        texts = [normalise(q.question, separators="punctuation") for q in gold]
        # an unanswerable row's detail is often its point: only the symmetric rule for it
        self._less_detail = tuple(q.answerable for q in gold)
        self._wordings = tuple(
            _uncached_wording(normalise(text, separators="non_word")) for text in texts
        )
        text_words, words = _bag_of_words(texts)
        word_rows, hashes = self._word_grams(words)
        self._vocabulary, columns = np.unique(hashes, return_inverse=True)
        counts = text_words @ _csr_counts(word_rows, columns, len(words), len(self._vocabulary))
        df = np.bincount(counts.indices, minlength=len(self._vocabulary))
        self._idf = np.log((1.0 + len(texts)) / (1.0 + df)) + 1.0
        self._unseen_idf = float(np.log(1.0 + len(texts)) + 1.0)  # df = 0
        self._table = HashTable(self._vocabulary)
        self._gold_t = sparse.csr_matrix(self._weigh(counts, self._idf).T)
        small = len(texts) <= _DENSE_GOLD_ROWS and self._gold_t.shape[0] * len(texts) <= 2**22
        # a small gold set's dense block makes the product a plain row-times-matrix sum
        self._gold_dense = self._gold_t.toarray() if small else None
        # the pruning bound's per-cluster largest weights (memory: at most the gold vectors')
        self._cluster_max = _cluster_maxima(self._gold_t, _CLUSTER_ROWS)
        cells = self._cluster_max.shape[0] * self._cluster_max.shape[1]
        self._cluster_dense = self._cluster_max.toarray() if cells <= _DENSE_CLUSTER_CELLS else None
        self._exact: dict[str, int] = {}
        for i, text in enumerate(texts):
            self._exact.setdefault(text, i)
        self._cache: BatchCache[KnownLookup] = BatchCache(cache_size)
        # the same matches by the question as asked: the scope and live-quality stages both
        # ask for each batch's questions, so the second finds them without normalising (a
        # miss goes through the normalised cache above, which keeps each batch computed as
        # before: the same distinct normalised texts together)
        self._asked: BatchCache[KnownLookup] = BatchCache(cache_size)

    def _word_grams(self, words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Word index and 64-bit hash of every char_wb n-gram occurrence of distinct
        ``words`` (no whitespace in them), all at once, words in order.

        The words, each padded with a space each side, are concatenated (``" what  is "``)
        and converted to code points; per n, a rolling polynomial hash gives the hash of the
        n code points starting at each position, and a position counts if its word has at
        least n characters left (no n-gram spans two words). A padded word shorter than
        ``min_n`` yields its whole self once, as in scikit-learn.
        """
        low, high = self._ngram_range
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words)) + 2
        codes = np.frombuffer(
            f" {'  '.join(words)} ".encode("utf-32-le", "surrogatepass"), dtype=np.uint32
        ).astype(np.uint64)[: int(lengths.sum())]  # no words: no code
        total = len(codes)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        word_of = np.repeat(np.arange(len(words), dtype=np.int64), lengths)
        room = ends.take(word_of) - np.arange(total)  # characters left in the word
        short = int(low > 3)  # a layer for padded words (>= 3 characters) shorter than min_n
        layers = high - low + 1 + short
        grams = np.empty((layers, total), dtype=np.uint64)
        valid = np.zeros((layers, total), dtype=bool)
        hashes = np.full(total, _SEED, dtype=np.uint64)
        for n in range(1, high + 1):
            count = total - n + 1
            if count <= 0:
                break
            hashes = hashes[:count] * _MULTIPLIER + codes[n - 1 : n - 1 + count]
            if n >= low:
                grams[n - low + short, :count] = hashes
                valid[n - low + short, :count] = room[:count] >= n
            elif short:
                at = starts[lengths == n]  # the whole short word, once
                grams[0, at] = hashes[at]
                valid[0, at] = True
        position, layer = np.nonzero(valid.T)  # position-major: words in order
        return word_of.take(position), grams[layer, position]

    def _word_counts(
        self, texts: Sequence[str]
    ) -> tuple[sparse.csr_matrix, sparse.csr_matrix, sparse.csr_matrix, np.ndarray]:
        """The bag of words of ``texts`` (texts × distinct words) and the raw char_wb n-gram
        counts of those words: over the gold vocabulary's columns, over the batch's n-grams
        no gold question has, and the latter's hashes (their columns).

        The n-grams of each distinct word are found once (:meth:`_word_grams`); a text's
        counts are its word counts times its words' n-gram counts (a sparse product, which
        also adds up an n-gram shared by two words of a text).
        """
        text_words, words = _bag_of_words(texts)
        word_rows, hashes = self._word_grams(words)
        columns = self._table.lookup(hashes)
        seen = columns >= 0
        unseen = ~seen
        extra, inverse = np.unique(hashes[unseen], return_inverse=True)
        known = _csr_counts(word_rows[seen], columns[seen], len(words), len(self._vocabulary))
        other = _csr_counts(word_rows[unseen], inverse.ravel(), len(words), len(extra))
        return text_words, known, other, extra

    def _term_counts(
        self, texts: Sequence[str]
    ) -> tuple[sparse.csr_matrix, sparse.csr_matrix, np.ndarray]:
        """Raw char_wb n-gram counts of ``texts``: over the gold vocabulary's columns, over
        the batch's n-grams no gold question has, and the latter's hashes (their columns)."""
        text_words, known, other, extra = self._word_counts(texts)
        return text_words @ known, text_words @ other, extra

    @staticmethod
    def _weigh(counts: sparse.csr_matrix, idf: np.ndarray) -> sparse.csr_matrix:
        """``counts`` × ``idf`` per column, each row scaled to unit L2 norm (zero rows stay)."""
        weighted = sparse.csr_matrix(counts, dtype=np.float64, copy=True)
        weighted.data *= idf.take(weighted.indices)
        weighted.data /= np.sqrt(_row_sums(weighted, weighted.data**2)).take(_rows(weighted))
        return weighted

    def _similarities(self, texts: Sequence[str]) -> np.ndarray:
        """Cosine similarities of normalised ``texts`` to every gold question, (n, len(gold)).

        The product needs only the n-grams the gold set has; the norm also counts the others
        (``df = 0``). A text without n-grams has similarity 0 to everything.
        """
        return self._scored(texts)[1]

    def _scored(
        self, texts: Sequence[str], floor: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The texts that may reach cosine ``floor`` (indices into ``texts``, ascending) and
        their cosine similarities to every gold question, ``(len(rows), len(gold))``;
        ``floor=None``: every text.

        Pruning (Cauchy–Schwarz): a gold vector ``g`` has unit norm and weighs only gold
        n-grams, so ``cos(a, g) = a_gold · g / |a| <= |a_gold| / |a|``, where ``a_gold`` is the
        part of ``a`` on the gold vocabulary. A text whose bound is below ``floor`` (most of
        live traffic: n-grams no gold question has weigh the most) cannot match and meets no
        gold question. A text that passes meets a second bound: the weights are
        non-negative, so for the gold rows of a cluster (:data:`_CLUSTER_ROWS` consecutive
        rows) ``a_gold · g <= Σ_k a_k · m_k``, ``m_k`` the largest weight any row of the
        cluster gives n-gram ``k``; a text below the floor for every cluster cannot match
        either (one sparse product of the first bound's survivors by the (n-grams ×
        clusters) maxima; on the production-shaped benchmark it leaves 912 of the 8,253
        texts the first bound keeps, of 25,638; the same matches). The kept rows'
        similarities are the same bits as without pruning: each is its own words' rows of
        ``(words × gold)`` summed in the same order (the kept words keep their relative
        column order; the blocked path keeps every word, so its blocks are unchanged).
        """
        text_words, word_known, word_unseen, _ = self._word_counts(texts)
        word_known.data *= self._idf.take(word_known.indices)  # now weights
        known = text_words @ word_known
        unseen = text_words @ word_unseen
        squares = _row_sums(known, known.data**2)
        on_gold = squares.copy()
        squares += _row_sums(unseen, unseen.data**2) * self._unseen_idf**2
        norms = np.sqrt(squares)
        rows = np.arange(len(texts))
        step = max(1, _BLOCK // self._gold_t.shape[1])
        if floor is not None:
            rows = np.flatnonzero(np.sqrt(on_gold) >= floor * norms)
            if len(rows):  # the tighter bound, on the texts the first one keeps
                reach = self._reach(known[rows])
                rows = rows[reach >= floor * norms[rows]]
            text_words = text_words[rows]
            if self._gold_dense is not None or word_known.shape[0] <= step:
                used = np.unique(text_words.indices)  # ascending: the columns keep their order
                text_words = sparse.csr_matrix(
                    (text_words.data, np.searchsorted(used, text_words.indices),
                     text_words.indptr), shape=(len(rows), len(used)),
                )  # fmt: skip
                word_known = word_known[used]
        # (texts × words) @ (words × gold): each distinct word's n-grams meet the gold once
        sims: np.ndarray
        if self._gold_dense is not None:
            sims = np.asarray(text_words @ (word_known @ self._gold_dense))
        elif word_known.shape[0] <= step:  # one block
            text_words.sort_indices()  # words in column order, as the blocked csc product
            sims = text_words @ (word_known @ self._gold_t).toarray()
        else:  # the (words × gold) block is dense: a few thousand words at a time
            sims = np.zeros((len(rows), self._gold_t.shape[1]))
            by_word = text_words.tocsc()
            for start in range(0, word_known.shape[0], step):
                block = (word_known[start : start + step] @ self._gold_t).toarray()
                sims += by_word[:, start : start + step] @ block
        norms = norms[rows]
        sims /= np.where(norms > 0, norms, 1.0)[:, np.newaxis]
        return rows, sims

    def _reach(self, known: sparse.csr_matrix) -> np.ndarray:
        """The cluster bound of :meth:`_scored`: per row of ``known`` (texts × gold n-grams,
        weights), ``max over clusters of Σ_k a_k · m_k``, shape ``(n,)``.

        Against the dense maxima when the index keeps them (:data:`_DENSE_CLUSTER_CELLS`): a
        sparse-times-dense product, about half the time of the sparse-times-sparse one on the
        production-shaped benchmark, where every text meets nearly every cluster. Either
        is only a bound, compared with the floor less its margin; the two gave the same bits
        on the benchmark's 25,646 distinct questions.
        """
        if self._cluster_dense is not None:
            dense: np.ndarray = np.asarray(known @ self._cluster_dense)
            reach: np.ndarray = dense.max(axis=1, initial=0.0)
            return reach
        return np.asarray((known @ self._cluster_max).max(axis=1).toarray()).ravel()

    def match_many(self, questions: Sequence[str]) -> list[KnownMatch | None]:
        """Return, per live question, its best gold match at or above the threshold that
        asks the same question, or None (:meth:`lookup_many`'s ``match``)."""
        return [found.match for found in self.lookup_many(questions)]

    def lookup_many(self, questions: Sequence[str]) -> list[KnownLookup]:
        """Return, per live question, its best gold match at or above the threshold that
        asks the same question, and the best gold row at or above the threshold the wording rule
        turned down (:class:`KnownLookup`).

        One n-gram transform and one product for the whole batch's distinct questions not in
        the cache. Ties between gold questions go to the first in the index's row order
        (``gold``'s: the service gives the canonical order of its out-of-scope stage,
        :func:`service.runtime.analytics.scope_gold`). Similarities
        are rounded to 6 decimals and clipped to [0, 1].

        Wording rule (:func:`service.text.wording.known_disagreement`: harvest's merge rule,
        or the gold question with a detail left out): a match that is not exact must agree
        with the gold question on its numbers ("fees for 2nd year" is not "fees for 1st
        year", though their n-grams nearly agree; "when do exams start" may leave out "...
        in 2026"), its negation ("did Khanbaliq not become" is not "did Khanbaliq become"),
        its content words ("more access" is not "less access": "less" has no counterpart and
        "more" stands in its place; a typing slip or an inflection is a counterpart; a gold
        content word left out, with nothing but courtesy added, is no difference) and its
        question word. A gold row it turns down is skipped
        for the next-best row at or above the threshold (one it accepts is the match), or
        none. Letter-level near-misses of short words ("MBA" for "MCA") are not caught; raise
        ``threshold`` if they matter.

        Memory: the similarity block is dense, ``len(questions) × len(gold)`` float64 (500 ×
        2,000 gold questions = 8 MB); char n-grams overlap so widely that it is dense anyway.
        The intermediate (distinct words × gold) blocks are at most 16 MB each.
        """
        if not questions:
            return []
        return self._asked.get_many(questions, self._match_asked)

    def _match_asked(self, questions: list[str]) -> list[KnownLookup]:
        """:meth:`lookup_many` of distinct questions not in the cache of asked questions."""
        normal = [normalise(q, separators="punctuation") for q in questions]
        return self._cache.get_many(normal, self._match_normalised)

    def _match_normalised(self, texts: list[str]) -> list[KnownLookup]:
        """:meth:`lookup_many` on distinct normalised texts not in the cache."""
        # rounding to 6 decimals lifts a score by at most 5e-7: the rest cannot match (the
        # bound's own margin, 1e-9, covers its rounding: a few ulp)
        rows, sims = self._scored(texts, floor=self.threshold - 1e-6 - 1e-9)
        out = [_NOTHING] * len(texts)
        for i in np.flatnonzero(sims.max(axis=1, initial=0.0) >= self.threshold - 1e-6).tolist():
            row = int(rows[i])
            if texts[row] not in self._exact:
                out[row] = self._ruled(texts[row], sims[i])
        for row, text in enumerate(texts):
            exact = self._exact.get(text)
            if exact is not None:
                out[row] = KnownLookup(KnownMatch(self._ids[exact], 1.0), None)
        return out

    def _ruled(self, text: str, sims: np.ndarray) -> KnownLookup:
        """The best gold row of one text (its similarities ``sims``, one per gold row) at or
        above the threshold that the wording rule accepts, and the best it turned down."""
        close = np.flatnonzero(sims >= self.threshold - 1e-6)
        # best first, ties in the index's row order (the order argmax gives)
        order = close[np.argsort(-sims[close], kind="stable")]
        mine: Wording | None = None
        rejected: KnownRejection | None = None
        for gold in order.tolist():
            score = min(1.0, max(0.0, round(float(sims[gold]), 6)))
            if score < self.threshold:
                break
            if mine is None:  # not lru-cached: harvest's cache of its wordings stays its own
                mine = _uncached_wording(normalise(text, separators="non_word"))
            why = known_disagreement(mine, self._wordings[gold], self._less_detail[gold])
            if why is None:
                return KnownLookup(KnownMatch(self._ids[gold], score), rejected)
            if rejected is None:
                rejected = KnownRejection(self._ids[gold], score, why)
        return KnownLookup(None, rejected)


def live_scores(
    question: GoldQuestion,
    ranking: Sequence[str],
    k: int,
    *,
    readable: Callable[[str], bool] | None = None,
) -> dict[str, float]:
    """Score one live ranking of a known question against its gold passages.

    Args:
        question: the matched gold question; its ``relevance`` levels are the qrels.
        ranking: passage ids best first (a repeated id keeps its first place).
        k: cutoff >= 1.
        readable: if given, gold passages for which it returns False are dropped first (the
            asker may not read them, so they are not "relevant" to this asker).

    Returns:
        ``{"recall": r, "hit": h, "rr": rr}``, each in [0, 1]: trec_eval ``recall_k``,
        ``success_k`` and ``recip_rank`` cut at ``k`` (MRR@k), via
        :mod:`service.evaluation.ir_metrics`.

    Raises:
        ValueError: the question is unanswerable (``gold == ()``) or none of its gold passages
            is readable — such rows are not scored for recall — or ``k < 1``.

    >>> q = GoldQuestion("q-1", "?", ("p-1", "p-2"))
    >>> live_scores(q, ["p-9", "p-2", "p-3"], k=10)
    {'recall': 0.5, 'hit': 1.0, 'rr': 0.5}
    """
    qrel = question.qrels_row()
    if readable is not None:
        qrel = {pid: rel for pid, rel in qrel.items() if readable(pid)}
    if not qrel:
        raise ValueError(f"gold question {question.id!r} has no (readable) gold passage")
    return {
        "recall": recall_at_k(qrel, ranking, k),
        "hit": hit_rate_at_k(qrel, ranking, k),
        "rr": reciprocal_rank(qrel, ranking, k),
    }
