"""Known questions on live traffic: which live questions near-duplicate a gold question.

A live question whose answer the gold set already knows is a free, real evaluation: its
production ranking can be scored against the gold passages (recall@k, hit, reciprocal rank)
exactly like an offline gold-set run, on live traffic and for every retriever that saw it.

**Normalisation** (:func:`normalize`): Unicode NFKC, ``casefold``, every punctuation
character (Unicode category ``P*``) replaced by a space, runs of whitespace collapsed and the
ends stripped. Combining marks (Devanagari vowel signs) are kept.

**Similarity**: cosine of TF-IDF vectors of character n-grams, n = 3..5, taken inside word
boundaries (scikit-learn ``analyzer="char_wb"``). Character n-grams survive the typos,
inflections and code-mixing of real traffic ("anual tution fee" keeps most of "annual tuition
fee"'s n-grams), where word tokens would not. The IDF comes from the gold questions (smooth
IDF, ``ln((1 + n) / (1 + df)) + 1``, scikit-learn's default) so n-grams shared by every
question ("what", "the ") weigh little. The n-grams are *hashed* (``HashingVectorizer``,
2^20 columns) rather than looked up in a vocabulary fitted on the gold set: a vocabulary drops
a live question's unseen n-grams, which shrinks its norm and inflates the cosine of a long
question that merely *contains* a gold question; hashed, an unseen n-gram keeps the largest
IDF and counts against the match. Collisions at 2^20 columns are negligible for short texts.

Per batch :meth:`KnownQuestionIndex.match_many` makes one hashing transform and one sparse
product ``live × goldᵀ``, never a per-question call. A live question equal to a gold one after
normalisation matches with similarity exactly 1.0 (first such gold row in file order). A
non-exact match must not write other numbers than its gold question ("2nd year" is not
"1st year", though nearly all their n-grams agree).

>>> from service.records import GoldQuestion
>>> from service.goldset import GoldSet
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

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.preprocessing import normalize as l2_normalize

from service.batch_cache import BatchCache
from service.goldset import GoldSet
from service.ir_metrics import hit_rate_at_k, recall_at_k, reciprocal_rank
from service.records import GoldQuestion

__all__ = ["KnownMatch", "KnownQuestionIndex", "live_scores", "normalize"]

_SPACES = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")
_N_FEATURES = 2**20


def normalize(text: str) -> str:
    """Return ``text`` NFKC-normalised, casefolded, punctuation → space, whitespace collapsed.

    >>> normalize("  Hostel  KA fee—semester wise?? ")
    'hostel ka fee semester wise'
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    spaced = "".join(" " if unicodedata.category(c).startswith("P") else c for c in folded)
    return _SPACES.sub(" ", spaced).strip()


def _numbers(text: str) -> tuple[str, ...]:
    """The numbers written in ``text`` (any script's decimal digits), as sorted decimal strings.

    >>> _numbers("room 07 on floor १")
    ('1', '7')
    """
    return tuple(sorted(str(int(run)) for run in _DIGITS.findall(text)))


def _same_numbers(live: tuple[str, ...], gold: tuple[str, ...]) -> bool:
    """True unless both texts write numbers and not the same ones (an omitted number, as in
    "when do exams start" for "... start in 2026?", is no conflict)."""
    return live == gold or not live or not gold


class KnownMatch(NamedTuple):
    """A live question's best gold question: its id and cosine similarity in [0, 1]."""

    gold_id: str
    similarity: float


class KnownQuestionIndex:
    """Finds the gold question a live question near-duplicates (method in the module docstring).

    Args:
        gold: the gold set (every row, answerable or not, can be matched).
        threshold: smallest cosine similarity, in (0, 1], that counts as a match.
        ngram_range: character n-gram sizes ``(min_n, max_n)``, ``1 <= min_n <= max_n``.
        cache_size: normalised questions whose match is remembered (live traffic repeats
            itself; the n-gram transform is the stage's main cost), ``0``: none.

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
        self._ids = tuple(q.id for q in gold)
        self._hasher = HashingVectorizer(
            analyzer="char_wb",
            ngram_range=ngram_range,
            n_features=_N_FEATURES,
            alternate_sign=False,
            norm=None,
            lowercase=False,
        )
        texts = [normalize(q.question) for q in gold]
        self._numbers = tuple(_numbers(text) for text in texts)
        counts = self._hasher.transform(texts).tocsr()
        df = np.bincount(counts.indices, minlength=_N_FEATURES)
        idf = np.log((1.0 + len(gold)) / (1.0 + df)) + 1.0
        self._idf = idf
        self._gold_t = self._weigh(counts).T.tocsr()
        self._exact: dict[str, int] = {}
        for i, text in enumerate(texts):
            self._exact.setdefault(text, i)
        self._cache: BatchCache[KnownMatch | None] = BatchCache(cache_size)

    def _weigh(self, counts: sparse.csr_matrix) -> sparse.csr_matrix:
        """Return ``counts`` × IDF, each row scaled to unit L2 norm (in place)."""
        counts = counts.astype(np.float64)
        counts.data *= self._idf[counts.indices]
        weighted: sparse.csr_matrix = l2_normalize(counts, norm="l2", copy=False)
        return weighted

    def match_many(self, questions: Sequence[str]) -> list[KnownMatch | None]:
        """Return, per live question, its best gold match at or above the threshold, or None.

        One hashing transform and one sparse product for the whole batch. Ties between gold
        questions go to the first in file order. Similarities are rounded to 6 decimals and
        clipped to [0, 1].

        Numbers guard: a match that is not exact must not write other numbers (digit runs,
        as a multiset) than the gold question — "fees for 2nd year" is not "fees for 1st
        year", though their n-grams nearly agree; a side with no number never conflicts.
        Letter-level near-misses ("MBA" for "MCA") are not caught; raise ``threshold`` if
        they matter.

        Memory: the similarity block is dense, ``len(questions) × len(gold)`` float64 (500 ×
        2,000 gold questions = 8 MB); char n-grams overlap so widely that it is dense anyway.
        """
        if not questions:
            return []
        return self._cache.get_many([normalize(q) for q in questions], self._match_normalised)

    def _match_normalised(self, texts: list[str]) -> list[KnownMatch | None]:
        """:meth:`match_many` on distinct normalised texts not in the cache."""
        sims = (self._weigh(self._hasher.transform(texts).tocsr()) @ self._gold_t).toarray()
        best = sims.argmax(axis=1)
        out: list[KnownMatch | None] = []
        for row, text in enumerate(texts):
            exact = self._exact.get(text)
            if exact is not None:
                out.append(KnownMatch(self._ids[exact], 1.0))
                continue
            gold = int(best[row])
            score = min(1.0, max(0.0, round(float(sims[row, gold]), 6)))
            close = score >= self.threshold and _same_numbers(_numbers(text), self._numbers[gold])
            out.append(KnownMatch(self._ids[gold], score) if close else None)
        return out


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
        ``success_k`` and ``recip_rank`` cut at ``k`` (MRR@k), via :mod:`service.ir_metrics`.

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
