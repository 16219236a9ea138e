"""Rising terms: a topic-free drift test of the words questions use, stratified by language.

Topics are a closed set (the gold set's labels) and novelty needs calibration, so questions on
an article no gold row covers can leave both quiet (trial 14: 205 of 600 questions of a day on
two such articles, silence). The words of the questions need neither: a term (a content-word
stem, :func:`question_terms`) whose share of questions rises against the baseline of earlier
traffic says what changed, by name ("doctor 0.2 % → 13.7 % of questions").

**Test** (per term, :func:`cmh_test`): the one-sided Cochran–Mantel–Haenszel test of the 2 × 2
tables "question contains the term" × (current window, baseline), one table per language
(stratum ``k``: ``a_k`` current questions with the term of ``n1_k``, ``c_k`` baseline ones of
``n2_k``, ``m_k = a_k + c_k``, ``N_k = n1_k + n2_k``)::

    E_k = n1_k m_k / N_k,   V_k = n1_k n2_k m_k (N_k − m_k) / (N_k² (N_k − 1))
    Z = (Σ a_k − Σ E_k − ½) / √(Σ V_k),     p = 1 − Φ(Z)   (continuity-corrected, one-sided)
    CMH = (|Σ a_k − Σ E_k| − ½)² / Σ V_k    (χ², 1 df; Z² when Σ a_k > Σ E_k)
    OR_MH = Σ (a_k d_k / N_k) / Σ (b_k c_k / N_k),  b_k = n1_k − a_k, d_k = n2_k − c_k

(Mantel & Haenszel 1959, J. Natl Cancer Inst. 22:719–748; Agresti, *Categorical Data
Analysis*, 3rd ed., §6.4). Stratifying by language, a term that rises only because its
language's share rose (trial 14's day 3: Spanish 24 % → 56 %, the same articles) does not
alarm: within each language its share did not move. A language absent from one of the two
windows adds nothing (``V_k = 0``; the ``language`` dimension reports it).

**Alarm rule** (:class:`TermsDriftDetector`), for some term, all of:

1. the term is in at least ``min_term_questions`` (default 10) distinct questions of the
   current window — the terms *tested*; also the privacy floor: a term in fewer is never
   reported;
2. ``p < alpha_test / m``: ``alpha_test`` is the comparison's per-test level (the drift
   family's budget per day split by Bonferroni, :meth:`alpha_per_test`; the stage gives
   ``terms`` its own share, the same as each other dimension's, so the other four keep their
   levels; with ``known_refusal``'s and ``known_miss``'s own shares too the family's budget
   per day is 7/4 of ``alpha``, 8/4 while ``known_miss`` is tested per language too), ``m``
   the terms tested;
3. effect: ``OR_MH ≥ min_odds_ratio`` (2) and the pooled share (over languages) up by at least
   ``min_share_up`` (the stage: half of ``min_share_change``, 2.5 points: a term is one word
   of a topic's questions, so it covers a part of the topic's rise; trial 14's "doctor" rose
   13.5 points with its article at 34 % of the questions).

Hysteresis: ``drift`` clears when no tested term keeps ``OR_MH ≥ clear_odds_ratio`` (1.5)
with its share up by ``clear_share_up`` (half of ``min_share_up``); the count floor has its
own: a term the open alarm reported is judged by the clear rule while it is in at least half
of ``min_term_questions`` questions of the current window (it can hold the alarm, never raise
one, and is shown with its count while it holds it: its name was reported at the floor).

**Windows**: those of :class:`~service.drift.windows.ComparisonWindows` (event time, watermark,
late/future/ahead, frozen or previous baseline, ``test_every_s``), counting each question under
its language; beside the counts, each bucket keeps per language the questions each term is in.
Compared with the baseline only (a gold set of 50 rows has too few words to be a reference).

**Memory** is bounded by ``max_terms`` (K): each minute bucket of the current window keeps,
per language, a summary of at most 2K terms (:class:`_Tally`: the Space-Saving bounds of
Metwally, Agrawal & El Abbadi 2005, truncated to the K most counted in batches), and the frozen
baseline one such summary per language for its whole span (a bucket's summary would make
every checkpoint write the 6 h span's terms). Every kept count is an upper bound of the true
one, ``count − error`` a lower bound, and a term not kept was counted at most the summary's
*floor*. The baseline takes each term's upper bound (the floor when not kept, capped at the
questions), the current window its lower bound (0 when not kept): truncation can only make a
rise harder to show, never invent one. A frozen span that moves back to an earlier event of a
later-read stream keeps what it counted (more in the baseline: a rise only harder to show).
"""

from __future__ import annotations

import functools
import itertools
import math
import re

# (collections.Counter's C counting loop: ``mapping[x] = mapping.get(x, 0) + 1`` for each x)
from collections import _count_elements  # type: ignore[attr-defined]
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, NamedTuple, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from service.drift.detectors import _INSUFFICIENT, State, TestLog, _WindowedDetector
from service.drift.distances import Counts
from service.drift.windows import Now, Watermarks, WindowConfig
from service.records import PLACEHOLDERS
from service.text import normalise
from service.text.wording import content_words

__all__ = [
    "CmhResult",
    "TermChange",
    "TermsDriftDetector",
    "TermsDriftReport",
    "cmh_test",
    "question_terms",
]

#: Terms reported at most per test (the most significant first).
TOP_TERMS = 10
#: Shortest stem kept as a term (characters).
MIN_TERM_LENGTH = 3
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS.values()), re.IGNORECASE)
_DEFAULT_WINDOWS = WindowConfig()


@functools.lru_cache(maxsize=16_384)
def question_terms(question: str) -> Mapping[str, str]:
    """The terms of a (scrubbed) question: ``{stem: surface}``, the content-word stems
    (:func:`service.text.wording.content_words` of the ``non_word`` normal form, the words of
    :func:`~service.text.wording.wording`: function words of
    the languages handled and numbers left out) of at least :data:`MIN_TERM_LENGTH`
    characters, each with the token it was stemmed from (``Wording.raw``: the smallest in
    sorted order). Personal-data placeholders (``<EMAIL>``...) are dropped first; tokens with
    a digit are no terms. Cached (16,384 questions; the mapping returned is shared: read it,
    don't change it).

    >>> sorted(question_terms("Who played the Doctors in 1963? mail <EMAIL>").items())
    [('doctor', 'doctors'), ('mail', 'mail'), ('play', 'played')]
    """
    text = _PLACEHOLDER.sub(" ", question) if "<" in question else question
    found = content_words(normalise(text, separators="non_word"))
    return {stem: found[stem] for stem in sorted(found)
            if len(stem) >= MIN_TERM_LENGTH
            and (stem.isalpha() or not any(c.isdigit() for c in stem))}  # fmt: skip


class CmhResult(NamedTuple):
    """One term's stratified test (:func:`cmh_test`); shares in [0, 1]."""

    statistic: float  # CMH χ² (1 df), continuity-corrected; 0 when no stratum informs
    p_value: float  # one-sided (a rise), in [0, 1]
    odds_ratio: float  # Mantel–Haenszel common odds ratio, [0, inf] (nan: undefined)
    share_current: float  # pooled over the strata: Σ a_k / Σ n1_k
    share_reference: float  # Σ c_k / Σ n2_k
    count_current: int  # Σ a_k
    count_reference: int  # Σ c_k


def cmh_test(
    strata: Iterable[tuple[int, int, int, int]], totals: tuple[int, int] | None = None
) -> CmhResult:
    """One-sided, continuity-corrected Cochran–Mantel–Haenszel test of a rise (formula and
    sources: module docstring). ``strata``: ``(a, n1, c, n2)`` per stratum — current
    questions with the term ``a`` of ``n1``, reference ones ``c`` of ``n2`` (``0 ≤ a ≤ n1``,
    ``0 ≤ c ≤ n2``). A stratum with ``N < 2`` or one side empty adds nothing to the test (it
    still counts in the pooled shares), nor does one with ``a = c = 0`` but its questions:
    ``totals`` (``(Σ n1_k, Σ n2_k)`` over every stratum, those left out of ``strata`` for
    having no question with the term included; ``None``: the sums over ``strata``) are what
    the pooled shares divide by. No informative stratum: statistic 0, p 1.

    Raises:
        ValueError: a count is negative or above its total.

    >>> r = cmh_test([(10, 100, 2, 100)])
    >>> round(r.odds_ratio, 3), round(r.p_value, 4)
    (5.444, 0.0188)
    >>> cmh_test([(10, 100, 2, 100), (0, 50, 0, 50)]) == cmh_test([(10, 100, 2, 100)], (150, 150))
    True
    """
    num = var = or_num = or_den = 0.0
    a_sum = c_sum = n1_sum = n2_sum = 0
    for a, n1, c, n2 in strata:
        if not (0 <= a <= n1 and 0 <= c <= n2):
            raise ValueError(f"need 0 <= a <= n1 and 0 <= c <= n2, got {(a, n1, c, n2)}")
        a_sum, c_sum, n1_sum, n2_sum = a_sum + a, c_sum + c, n1_sum + n1, n2_sum + n2
        total = n1 + n2
        if total < 2 or n1 == 0 or n2 == 0:
            continue
        m = a + c
        num += a - n1 * m / total
        var += n1 * n2 * m * (total - m) / (total * total * (total - 1))
        or_num += a * (n2 - c) / total
        or_den += (n1 - a) * c / total
    if totals is not None:
        n1_sum, n2_sum = totals
    share_cur = a_sum / n1_sum if n1_sum else math.nan
    share_ref = c_sum / n2_sum if n2_sum else math.nan
    odds = or_num / or_den if or_den > 0 else math.inf if or_num > 0 else math.nan
    if var <= 0:
        return CmhResult(0.0, 1.0, odds, share_cur, share_ref, a_sum, c_sum)
    z = (num - 0.5) / math.sqrt(var)
    statistic = max(abs(num) - 0.5, 0.0) ** 2 / var
    p = 0.5 * math.erfc(z / math.sqrt(2.0))
    return CmhResult(statistic, min(1.0, max(0.0, p)), odds, share_cur, share_ref, a_sum, c_sum)


def exact_rise_p(strata: Iterable[tuple[int, int, int, int]]) -> float:
    """One-sided exact conditional p of a rise: ``P(Σ A_k ≥ Σ a_k)`` with the ``A_k``
    independent hypergeometric given each stratum's margins (``A_k ~ H(N_k, m_k, n1_k)``,
    ``m_k = a_k + c_k``) — the exact counterpart of :func:`cmh_test`'s normal approximation
    (Birch 1964; Agresti, *Categorical Data Analysis*, 3rd ed., §7.3.5: the conditional
    distribution of ``Σ a_k`` is the convolution of the strata's hypergeometrics). A stratum
    with ``N < 2`` or one side empty is left out, as in :func:`cmh_test`. In [0, 1].

    Why (a review of the rising-terms test): at its sizes (rare terms, levels of 1e-5 to
    1e-7) the normal approximation is far too small — (10, 120, 2, 480): 1.2e-7 against the
    exact 3.4e-6 — and at trial 14's window sizes false alarms ran at ~13× the stated budget.

    >>> round(exact_rise_p([(10, 120, 2, 480)]), 8)  # scipy.stats.hypergeom.sf(9, 600, 12, 120)
    3.42e-06
    """
    from scipy.stats import hypergeom  # here: importing scipy.stats costs ~0.5 s of start-up

    dist = np.ones(1)
    lowest = observed = 0
    for a, n1, c, n2 in strata:
        total, m = n1 + n2, a + c
        if total < 2 or n1 == 0 or n2 == 0:
            continue
        low, high = max(0, m - n2), min(m, n1)
        pmf = hypergeom.pmf(np.arange(low, high + 1), total, m, n1)
        dist = np.convolve(dist, pmf)
        lowest += low
        observed += a
    at = observed - lowest
    if at <= 0:
        return 1.0
    return float(min(1.0, max(0.0, dist[at:].sum())))


class TermChange(NamedTuple):
    """A rising term: its stem, a surface form, pooled shares and counts, OR and p."""

    term: str
    surface: str
    current_share: float
    reference_share: float
    current_count: int
    reference_count: int
    odds_ratio: float
    p_value: float


@dataclass(frozen=True)
class TermsDriftReport:
    """One comparison's latest test of the terms. ``alpha``: the level each term's p-value
    is held to (the comparison's per-test level divided by ``terms_tested``);
    ``alpha_per_day``: the dimension's false-alarm budget per ``alpha_period_s``."""

    comparison: str
    state: State
    timestamp: float
    n_reference: int
    n_current: int
    p_value: float = 1.0  # the smallest of the terms tested
    alpha: float = 0.0
    method: str = "none"
    terms_tested: int = 0
    alpha_per_day: float = 0.0
    rising: tuple[TermChange, ...] = ()
    held_by_hysteresis: bool = False
    clearing_since: float = 0.0  # as CategoricalDriftReport's (left out of to_dict when 0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``TermChange`` rows become dicts; an infinite odds ratio — a
        term absent from the baseline — is written ``1e308``: JSON has no infinity)."""
        skip = ("rising",) + (() if self.clearing_since else ("clearing_since",))
        out = {k: v for k, v in self.__dict__.items() if k not in skip}
        out["rising"] = [{**row._asdict(), "odds_ratio": _finite(row.odds_ratio)}
                         for row in self.rising]  # fmt: skip
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TermsDriftReport:
        """The report back from :meth:`to_dict`.

        Raises:
            TypeError: a field is missing or unknown.
        """
        rising = tuple(TermChange(**row) for row in data.get("rising", ()))
        return cls(**{**data, "rising": rising})


def _finite(x: float) -> float:
    """``x`` with ``inf`` as 1e308 (JSON has no infinity)."""
    return 1e308 if x == math.inf else x


class _Tally:
    """A bounded summary of the terms of some questions (module docstring): term →
    ``[count, error]``, at most ``2 × size`` terms. A term not kept starts at ``floor + 1``
    with error ``floor``; once more than ``2 × size`` are kept, only the ``size`` most
    counted stay (smallest term first on ties) and ``floor`` rises to the largest count
    dropped. So a kept count is an upper bound of the true one, ``count − error`` a lower
    bound, and a term not kept was counted at most ``floor`` (the Space-Saving bounds,
    truncating in batches: a sort every ``size`` new terms instead of a scan for the least
    counted at each)."""

    __slots__ = ("_text", "counts", "errors", "floor", "holders", "size", "version")

    def __init__(self, size: int, counts: dict[str, int] | None = None,
                 errors: dict[str, int] | None = None, floor: int = 0) -> None:  # fmt: skip
        # (two dicts of str → int, not one of [count, error] lists: the garbage collector
        # tracks no such dict, and would scan every list of every bucket at each collection)
        self.size, self.floor = size, floor
        self.counts: dict[str, int] = counts if counts is not None else {}
        self.errors: dict[str, int] = errors if errors is not None else {}  # only those > 0
        self._text: str | None = None  # :meth:`text`, until the next add
        self.version = 0  # :meth:`add` calls so far (a change :class:`_RangeCounts` reads)
        # term -> how many tallies hold it, shared by the tallies of one store (None: not
        # kept): :meth:`add` counts the terms it keeps and drops
        self.holders: dict[str, int] | None = None

    @property
    def cells(self) -> dict[str, tuple[int, int]]:
        """``{term: (count, error)}``, a new dict."""
        errors = self.errors
        return {t: (c, errors.get(t, 0)) for t, c in self.counts.items()}

    def lower(self) -> dict[str, int]:
        """``{term: count − error}`` of the terms whose lower bound is above 0."""
        errors = self.errors
        if not errors:
            return self.counts
        return {t: c - errors.get(t, 0) for t, c in self.counts.items() if c > errors.get(t, 0)}

    def text(self) -> str:
        """``"floor term count error term count error ..."`` (terms hold no whitespace):
        what a snapshot writes (one string a tally, kept until it changes: a checkpoint
        writes every bucket, most of them unchanged since the last one)."""
        if self._text is None:
            errors = self.errors
            cells = " ".join(f"{t} {c} {errors.get(t, 0)}" for t, c in self.counts.items())
            self._text = f"{self.floor} {cells}" if cells else str(self.floor)
        return self._text

    @classmethod
    def from_text(cls, size: int, text: str) -> _Tally:
        """The tally back from :meth:`text`.

        Raises:
            ValueError: a malformed text.
        """
        parts = text.split()
        if not parts or (len(parts) - 1) % 3:
            raise ValueError("a malformed term tally in the snapshot")
        counts = {parts[i]: int(parts[i + 1]) for i in range(1, len(parts), 3)}
        errors = {parts[i]: int(parts[i + 2]) for i in range(1, len(parts), 3)
                  if parts[i + 2] != "0"}  # fmt: skip
        return cls(size, counts, errors, int(parts[0]))

    def add(self, terms: Collection[str]) -> None:
        """Count one question's (distinct) terms."""
        self.add_many((terms,))

    def add_many(self, questions: Iterable[Collection[str]]) -> None:
        """Count some questions' (distinct) terms, one question after the other (the same as
        :meth:`add` for each in turn: a truncation follows the question that overflows)."""
        self._text = None
        holders, errors, limit = self.holders, self.errors, 2 * self.size
        held = holders.get if holders is not None else None
        if not isinstance(questions, list):
            questions = list(questions)
        if len(self.counts) + sum(map(len, questions)) <= limit:
            self._add_all(questions)  # no question can overflow: counted all at once
            return
        for terms in questions:
            self.version += 1
            counts, floor = self.counts, self.floor
            get = counts.get
            if held is not None:
                for term in terms:
                    n = get(term)
                    if n is None:
                        counts[term] = floor + 1
                        holders[term] = held(term, 0) + 1  # type: ignore[index]
                        if floor:
                            errors[term] = floor
                    else:
                        counts[term] = n + 1
            elif not floor:
                for term in terms:
                    counts[term] = get(term, 0) + 1
            else:
                for term in terms:
                    n = get(term)
                    if n is None:
                        counts[term] = floor + 1
                        errors[term] = floor
                    else:
                        counts[term] = n + 1
            if len(counts) > limit:
                ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
                self.floor = max(floor, ranked[self.size][1])
                self.counts = dict(ranked[: self.size])
                self.errors = errors = {t: e for t, e in errors.items() if t in self.counts}
                if holders is not None:
                    _release(holders, (term for term, _ in ranked[self.size :]))

    def _add_all(self, questions: list[Collection[str]]) -> None:
        """:meth:`add_many` of questions none of which can make the tally overflow (their
        terms fit under ``2 · size`` whatever they are): every term counted at once, at C
        speed (``collections.Counter``'s own counting loop), then each term new to the tally
        given the floor as its error and counted in :attr:`holders` — the same counts,
        errors and holders, in the same insertion order, as one question after the other
        (a new term is added to each dict at its first occurrence either way)."""
        counts, floor, holders = self.counts, self.floor, self.holders
        before = len(counts)
        _count_elements(counts, itertools.chain.from_iterable(questions))
        self.version += len(questions)
        if len(counts) > before and (floor or holders is not None):
            errors = self.errors
            held = holders.get if holders is not None else None
            for term in itertools.islice(counts, before, None):
                if floor:
                    counts[term] += floor
                    errors[term] = floor
                if held is not None:
                    holders[term] = held(term, 0) + 1  # type: ignore[index]


def _release(holders: dict[str, int], terms: Iterable[str]) -> None:
    """One holder fewer for each of ``terms`` (a term no tally holds is dropped)."""
    for term in terms:
        left = holders[term] - 1
        if left:
            holders[term] = left
        else:
            del holders[term]


_Store = dict[int, dict[str, _Tally]]  # bucket -> language -> tally


class _RangeCounts:
    """Per language, the lower bounds (``count − error``, :meth:`_Tally.lower`) of the
    terms' counts summed over the buckets ``first..last`` of a store, kept between calls:
    each call adds the buckets that came into the range or changed since (a tally's
    :attr:`~_Tally.version`) and takes out those that left or changed, so a test every 5
    minutes of a 60-bucket window re-reads ~5 buckets, not 60 (the sums are integers: the
    same as summing every bucket afresh; a term whose sum falls to 0 is dropped).

    What a bucket added is kept (a copy) only while the bucket may still change (its events
    within the window's allowed lateness: ``keep_from``); an older bucket's is read back from
    its tally, unchanged, when it leaves — so the copies cost a few buckets' memory, not the
    window's. Should an older bucket change all the same, the sums are made afresh."""

    __slots__ = ("parts", "pooled", "sums", "touched")

    def __init__(self) -> None:
        # (bucket, language) -> (its tally, the tally's version, what it added: a copy, or
        # None once the bucket is older than keep_from: then the tally's lower bounds)
        self.parts: dict[tuple[int, str], tuple[_Tally, int, dict[str, int] | None]] = {}
        self.sums: dict[str, dict[str, int]] = {}  # language -> term -> summed lower bound
        self.pooled: dict[str, int] = {}  # term -> the sums over the languages
        # the terms whose pooled sum may have changed since the caller last emptied this
        self.touched: set[str] = set()

    def update(
        self, store: _Store, first: int, last: int, keep_from: int | None = None
    ) -> dict[str, dict[str, int]]:
        """The sums over the buckets ``first..last`` of ``store`` (language → term → count;
        no language without a term; :attr:`pooled` holds them summed over the languages). The
        dicts returned are this object's: read them before the next call, don't change
        them. ``keep_from``: the oldest bucket that may still change (``None``: any may)."""
        if not self._update(store, first, last):
            self.touched.update(self.pooled)  # made afresh: every term may have changed
            self.parts, self.sums, self.pooled = {}, {}, {}
            self._update(store, first, last)
        if keep_from is not None:
            parts = self.parts
            for key in [key for key, part in parts.items()
                        if key[0] < keep_from and part[2] is not None]:  # fmt: skip
                tally, version, _ = parts[key]
                parts[key] = (tally, version, None)
        return self.sums

    def _update(self, store: _Store, first: int, last: int) -> bool:
        """:meth:`update`'s sums; False (the sums left half done) when a bucket whose copy
        was let go changed since."""
        parts, sums, pooled, touched = self.parts, self.sums, self.pooled, self.touched
        seen: set[tuple[int, str]] = set()
        for bucket, by_language in store.items():
            if not first <= bucket <= last:
                continue
            for language, tally in by_language.items():
                key = (bucket, language)
                seen.add(key)
                part = parts.get(key)
                if part is not None and part[0] is tally and part[1] == tally.version:
                    continue
                into = sums.setdefault(language, {})
                if part is not None:
                    if part[2] is None:
                        return False
                    _subtract(into, part[2])
                    _subtract(pooled, part[2])
                    touched.update(part[2])
                added = dict(tally.lower())
                touched.update(added)
                get, pooled_get = into.get, pooled.get
                for term, n in added.items():
                    into[term] = get(term, 0) + n
                    pooled[term] = pooled_get(term, 0) + n
                parts[key] = (tally, tally.version, added)
        for key in [key for key in parts if key not in seen]:
            tally, version, copy = parts.pop(key)
            if copy is None:
                if tally.version != version:
                    return False
                gone = tally.lower()
            else:
                gone = copy
            if gone:  # (a language whose sums fell to nothing was dropped)
                _subtract(sums[key[1]], gone)
                _subtract(pooled, gone)
                touched.update(gone)
        for language in [language for language, counts in sums.items() if not counts]:
            del sums[language]
        return True


def _subtract(into: dict[str, int], counts: Mapping[str, int]) -> None:
    """``into −= counts`` (each term of ``counts`` is in ``into`` with at least its count),
    dropping the terms that fall to 0."""
    for term, n in counts.items():
        left = into[term] - n
        if left:
            into[term] = left
        else:
            del into[term]


class TermsDriftDetector(_WindowedDetector):
    """Rising terms against the baseline (module docstring).

    Feed it ``(language, terms)`` per question (:meth:`update_many`); it keeps the windows of
    :class:`~service.drift.windows.ComparisonWindows` over the languages and, beside them,
    each bucket's term counts per language.

    Args:
        windows: windowing (its ``baseline`` must not be ``"none"``).
        min_count: questions the current window and the baseline need (≥ 1).
        min_reference_count: questions the baseline needs (≥ 1).
        alpha: false-alarm budget per ``alpha_period_s``, (0, 1); n_dimensions: family size.
        min_term_questions: questions of the current window a term must be in to be tested
            and reported (≥ 1).
        min_odds_ratio, clear_odds_ratio: OR_MH alarm and clear thresholds (≥ 1).
        min_share_up, clear_share_up: pooled share rise alarm and clear thresholds, [0, 1].
        max_terms: terms kept per bucket and language (≥ 1; Space-Saving).

    Raises:
        ValueError: an argument is out of range, or a ``clear_*`` exceeds its ``min_*``.
    """

    def __init__(
        self,
        *,
        windows: WindowConfig = _DEFAULT_WINDOWS,
        min_count: int = 100,
        min_reference_count: int = 100,
        alpha: float = 0.001,
        n_dimensions: int = 1,
        min_term_questions: int = 10,
        min_odds_ratio: float = 2.0,
        clear_odds_ratio: float = 1.5,
        min_share_up: float = 0.025,
        clear_share_up: float = 0.0125,
        max_terms: int = 2000,
    ) -> None:
        if windows.baseline == "none":
            raise ValueError("the terms are compared with a baseline: baseline must not be none")
        if not (1 <= clear_odds_ratio <= min_odds_ratio and 0 <= clear_share_up <= min_share_up
                <= 1):  # fmt: skip
            raise ValueError("need 1 <= clear_odds_ratio <= min_odds_ratio, "
                             "0 <= clear_share_up <= min_share_up <= 1")  # fmt: skip
        if min(min_term_questions, max_terms) < 1:
            raise ValueError("min_term_questions and max_terms must be >= 1")
        super().__init__(False, windows, min_count, min_reference_count, alpha, n_dimensions,
                         0.95)  # fmt: skip
        self._reference = None
        self.min_term_questions, self.max_terms = min_term_questions, max_terms
        self.min_odds_ratio, self.clear_odds_ratio = min_odds_ratio, clear_odds_ratio
        self.min_share_up, self.clear_share_up = min_share_up, clear_share_up
        self._recent: _Store = {}  # the buckets the window retains
        self._holders: dict[str, int] = {}  # term -> the tallies of _recent that hold it
        self._current = _RangeCounts()  # the current window's sums (derived, not snapshotted)
        self._reference_cache: tuple[Any, ...] | None = None  # (:meth:`_frozen_reference`)
        # (the reference totals they were counted against, the terms tested, the terms of
        # the family below min_term_questions in the baseline alone): kept between tests
        self._family_state: tuple[dict[str, int], set[str], set[str]] | None = None
        # the frozen baseline's span: one summary per language (its questions' terms), and
        # the span's first bucket they were counted from
        self._base: dict[str, _Tally] = {}
        self._base_first: int | None = None
        # stem -> the smallest surface seen since it came into the current window
        self._surfaces: dict[str, str] = {}
        self._held: list[tuple[float, str, tuple[str, ...]]] = []  # (t, language, terms)
        # the update being ingested (read by _added): its terms, languages, timestamps
        self._batch: list[tuple[str, ...]] = []
        self._languages: list[str] = []
        self._stamps: NDArray[np.float64] = np.zeros(0, dtype=np.float64)

    @property
    def reports(self) -> dict[str, TermsDriftReport]:
        """The latest report per comparison (``baseline``)."""
        return dict(self._reports)

    def update_many(
        self,
        questions: Sequence[tuple[str, Mapping[str, str]]],
        timestamps: ArrayLike,
        now: Now = None,
        streams: Sequence[str] | None = None,
        *,
        watermarks: Watermarks | None = None,
        tests: TestLog | None = None,
        checks: Sequence[int] = (),
    ) -> Self:
        """Add a micro-batch: ``questions[i] = (language, {stem: surface})`` asked at
        ``timestamps[i]`` (Unix seconds); the rest as
        :meth:`~service.drift.detectors.CategoricalDriftDetector.update_many`.

        Raises:
            ValueError: lengths differ or a timestamp is not finite.
        """
        languages = [language for language, _ in questions]
        self._languages = languages
        self._stamps = np.asarray(timestamps, dtype=np.float64).reshape(-1)
        self._batch = [tuple(terms) for _, terms in questions]
        surfaces = self._surfaces
        for _, terms in questions:
            for stem, surface in terms.items():
                known = surfaces.get(stem)
                if known is None or surface < known:
                    surfaces[stem] = surface
        self._windows_ingest(languages, timestamps, now, streams, watermarks, tests, checks)
        self._batch = []
        return self

    def _windows_ingest(
        self, languages: list[str], timestamps: ArrayLike, now: Now,
        streams: Sequence[str] | None, watermarks: Watermarks | None, tests: TestLog | None,
        checks: Sequence[int],
    ) -> None:  # fmt: skip
        def on_tick(after: int) -> None:
            self._evaluate()
            if tests is not None:
                tests.append((after, dict(self._reports)))

        self._windows.ingest(languages, timestamps, now, on_tick, streams, watermarks=watermarks,
                             checks=checks, on_added=self._added)  # fmt: skip

    def finish(self) -> bool:
        """See :meth:`_WindowedDetector.finish`; the released questions' terms are counted."""
        return self._windows.finish(lambda _: self._evaluate(), on_added=self._added)

    def _added(self, start: int, end: int) -> None:
        """Count the terms of the questions the window just took (events ``start:end`` of the
        update, :attr:`~service.drift.windows.CategoryWindow.last_ok`, and those released),
        remember those it holds, and add those of the frozen baseline's span.

        The usual update (the window took every event, none held or released) goes without
        the matching of held events; the tallies are added to a group of questions at a time
        (:meth:`_Tally.add_many`: the same counts as one question after the other)."""
        w = self._windows.window
        bucket_s = self.windows.bucket_s
        languages = self._languages[start:end]
        batch = self._batch[start:end]
        stamps = self._stamps[start:end].tolist()
        ok_mask = w.last_ok
        added: list[tuple[float, str, tuple[str, ...]]]
        if (len(ok_mask) and not w.last_released and not w.held and not self._held
                and ok_mask.all()):  # fmt: skip
            added = list(zip(stamps, languages, batch, strict=True))
            self._held = []
        else:
            added = self._taken(languages, batch, stamps)
        old = w.last_too_old_mask
        too_old = ([(stamps[k], languages[k], batch[k]) for k in np.flatnonzero(old).tolist()]
                   if len(old) else [])  # fmt: skip
        floor = math.floor
        groups: dict[tuple[int, str], list[tuple[str, ...]]] = {}  # (in order of first use)
        buckets: list[int] = []
        for t, language, terms in added:
            bucket = floor(t / bucket_s)
            buckets.append(bucket)
            group = groups.get((bucket, language))
            if group is None:
                groups[bucket, language] = [terms]
            else:
                group.append(terms)
        for (bucket, language), many in groups.items():
            self._tally(self._recent, bucket, language).add_many(many)
        span = self._windows.warmup_buckets()
        if span is not None:
            first, last = span
            spanned: dict[str, list[tuple[str, ...]]] = {}  # language -> its questions' terms
            for bucket, (_, language, terms) in zip(buckets, added, strict=True):
                if first <= bucket <= last:
                    spanned.setdefault(language, []).append(terms)
            for t, language, terms in too_old:
                if first <= floor(t / bucket_s) <= last:
                    spanned.setdefault(language, []).append(terms)
            for language, many in spanned.items():
                tally = self._base.get(language)
                if tally is None:
                    tally = self._base[language] = _Tally(self.max_terms)
                tally.add_many(many)
        self._prune(span)

    def _taken(
        self, languages: list[str], batch: list[tuple[str, ...]], stamps: list[float]
    ) -> list[tuple[float, str, tuple[str, ...]]]:
        """:meth:`_added`'s questions the window took, ``(timestamp, language, terms)`` in
        order: those of the update it accepted, then those it released (matched to the
        held ones by timestamp and language); what it still holds is kept in
        :attr:`_held`, in its order."""
        w = self._windows.window
        ok = w.last_ok.tolist() if len(w.last_ok) else [False] * len(batch)
        late, future = w.last_late.tolist(), w.last_future.tolist()
        # released earlier-held events: matched to theirs by (timestamp, language)
        pool = list(self._held)
        added: list[tuple[float, str, tuple[str, ...]]] = []
        for k, terms in enumerate(batch):
            if ok[k]:
                added.append((stamps[k], languages[k], terms))
            elif not (late[k] or future[k]):  # held ahead
                pool.append((stamps[k], languages[k], terms))
        for t, language in w.last_released:  # (not found: held before a restore without
            found = _find(pool, t, language)  # terms; released without them)
            added.append(pool.pop(found) if found is not None else (t, language, ()))
        held: list[tuple[float, str, tuple[str, ...]]] = []
        for t, language in w.held:  # keep those the window still holds, in its order
            found = _find(pool, t, language)
            if found is not None:
                held.append(pool.pop(found))
        self._held = held
        return added

    def _tally(self, store: _Store, bucket: int, language: str) -> _Tally:
        by_language = store.setdefault(bucket, {})
        tally = by_language.get(language)
        if tally is None:
            tally = by_language[language] = _Tally(self.max_terms)
            if store is self._recent:
                tally.holders = self._holders
        return tally

    def _prune(self, span: tuple[int, int] | None) -> None:
        """Forget the buckets older than the current window (and, with a ``previous``
        baseline, the one before) and those out of the frozen baseline's span."""
        w = self._windows.window
        if w.watermark is not None:
            cfg = self.windows
            spans = 2 if cfg.baseline == "previous" else 1
            oldest = math.floor(w.watermark / cfg.bucket_s) - spans * math.ceil(
                cfg.window_s / cfg.bucket_s
            )
            if any(b <= oldest for b in self._recent):
                for bucket in [b for b in self._recent if b <= oldest]:
                    for tally in self._recent.pop(bucket).values():
                        _release(self._holders, tally.counts)
        # a new warm-up (its span starts later, or none yet) starts from nothing; a span that
        # moved back (an earlier event of a later-read stream) keeps what it counted: the
        # buckets that left it stay counted, an upper bound still (a rise only harder)
        first = None if span is None else span[0]
        if first is None or (self._base_first is not None and first > self._base_first):
            self._base.clear()
        self._base_first = first

    def _counts(
        self, store: _Store, first: int, last: int
    ) -> tuple[dict[str, dict[str, int]], dict[str, list[tuple[int, frozenset[str]]]]]:
        """Per language, the terms' counts (upper bounds) over the buckets ``first..last`` of
        ``store``, and the full tallies' floors with the terms they kept."""
        counts: dict[str, dict[str, int]] = {}
        full: dict[str, list[tuple[int, frozenset[str]]]] = {}
        for bucket, by_language in store.items():
            if not first <= bucket <= last:
                continue
            for language, tally in by_language.items():
                into = counts.setdefault(language, {})
                get = into.get
                for term, n in tally.counts.items():
                    into[term] = get(term, 0) + n
                floor = tally.floor
                if floor:
                    full.setdefault(language, []).append((floor, frozenset(tally.counts)))
        return counts, full

    def _assess(
        self, name: str, ref: Counts, cur: Counts, before: State, t: float, alpha: float
    ) -> TermsDriftReport:
        w = self._windows.window
        n_ref, n_cur = int(sum(ref.values())), int(sum(cur.values()))
        current_range = w.bucket_range(self.windows.window_s)
        base_range = self._windows.baseline_buckets()
        if current_range is None or base_range is None:  # (a restored legacy baseline)
            return self._empty_report(name, t, n_ref, n_cur)
        # the buckets a late event may still reach (the allowed lateness behind the newest)
        lateness = math.ceil(self.windows.allowed_lateness_s / self.windows.bucket_s)
        current = self._current.update(
            self._recent, *current_range, current_range[1] - lateness - 1
        )
        reference: Mapping[str, Mapping[str, int]]
        if self.windows.baseline == "frozen":
            reference, full, ref_total, ref_family = self._frozen_reference()
        else:
            reference, full = self._counts(self._recent, *base_range)
            ref_total, ref_family = _totals(reference, self.min_term_questions)
        pooled = self._current.pooled
        # The family: every term in at least min_term_questions questions of the two windows
        # together (the total says nothing of a rise under the null; choosing by the current
        # count alone picked the tests by their outcome); tested are those of them with that
        # many questions in the current window (the reporting floor), the others cannot alarm.
        least, get = self.min_term_questions, ref_total.get
        kept = self._family_state
        touched = self._current.touched
        if kept is None or kept[0] is not ref_total:  # (a new baseline: counted afresh)
            tested_set = {term for term, n in pooled.items() if n >= least}
            extra = {term for term, n in pooled.items()
                     if term not in ref_family and n + get(term, 0) >= least}  # fmt: skip
        else:  # only the terms whose current count changed since the last test
            tested_set, extra = kept[1], kept[2]
            for term in touched:
                n = pooled.get(term, 0)
                if n >= least:
                    tested_set.add(term)
                else:
                    tested_set.discard(term)
                if term not in ref_family and n + get(term, 0) >= least:
                    extra.add(term)
                else:
                    extra.discard(term)
        touched.clear()
        self._family_state = (ref_total, tested_set, extra)
        family = len(ref_family) + len(extra)
        tested = sorted(tested_set)
        held_terms = self._held_terms(name, before, pooled, tested_set)
        if held_terms:
            tested = sorted(tested_set | held_terms)
        # per language (sorted): its questions in each window, and per tested term its
        # questions in each (the reference's with the full tallies' floors of the terms they
        # did not keep: an upper bound); a stratum where no question of either window has
        # the term adds nothing to cmh_test but its questions, which the pooled shares count
        # through ``totals`` (the exact p, rarely needed, is taken over every stratum)
        empty: dict[str, int] = {}
        languages = sorted(set(cur) | set(ref))
        sizes = [(int(cur.get(language, 0)), int(ref.get(language, 0))) for language in languages]
        totals = (sum(n1 for n1, _ in sizes), sum(n2 for _, n2 in sizes))
        a_columns = [
            [counts.get(term, 0) for term in tested]
            for counts in (current.get(language, empty) for language in languages)
        ]
        c_columns = []
        for language in languages:
            counts = reference.get(language, empty)
            column = [counts.get(term, 0) for term in tested]
            floors = full.get(language)
            if floors:
                column = [c + sum(floor for floor, kept in floors if term not in kept)
                          for c, term in zip(column, tested, strict=True)]  # fmt: skip
            c_columns.append(column)
        a_rows = zip(*a_columns, strict=True) if languages else repeat((), len(tested))
        c_rows = zip(*c_columns, strict=True) if languages else repeat((), len(tested))
        level = alpha / max(1, family)
        rows: list[tuple[TermChange, bool, bool]] = []
        for term, a_row, c_row in zip(tested, a_rows, c_rows, strict=True):
            strata = [
                (min(a, n1), n1, min(c, n2), n2)
                for (n1, n2), a, c in zip(sizes, a_row, c_row, strict=True)
                if a or c
            ]
            test = cmh_test(strata, totals)
            up = test.share_current - test.share_reference
            holds = test.odds_ratio >= self.clear_odds_ratio and up >= self.clear_share_up
            if test.p_value < level or holds:  # the normal p is too small here: the exact one
                # over every stratum: scipy's pmf of a stratum with a = c = 0 is not always
                # exactly 1 (hypergeom.pmf(0, 10, 0, 1) = 1 − 2⁻⁵³), so leaving those out
                # would move the p in its last bits
                every = [(min(a, n1), n1, min(c, n2), n2)
                         for (n1, n2), a, c in zip(sizes, a_row, c_row, strict=True)]  # fmt: skip
                test = test._replace(p_value=exact_rise_p(every))
            alarm = (test.p_value < level and test.odds_ratio >= self.min_odds_ratio
                     and up >= self.min_share_up and term in tested_set)  # fmt: skip
            change = TermChange(term, self._surfaces.get(term, term), test.share_current,
                                test.share_reference, test.count_current, test.count_reference,
                                test.odds_ratio, test.p_value)  # fmt: skip
            rows.append((change, alarm, holds))
        alarmed = any(alarm for _, alarm, _ in rows)
        if before == "drift":
            state: State = "drift" if any(holds for _, _, holds in rows) else "ok"
        else:
            state = "drift" if alarmed else "ok"
        held = state == "drift" and not alarmed
        shown = [change for change, alarm, holds in rows if (holds if held else alarm)]
        shown.sort(key=lambda c: (c.p_value, -c.current_share, c.term))
        self._forget_surfaces()
        return TermsDriftReport(
            name, state, t, n_ref, n_cur, min((c.p_value for c, _, _ in rows), default=1.0),
            level, "cmh", family, self.budget_per_day, tuple(shown[:TOP_TERMS]),
            held_by_hysteresis=held,
        )  # fmt: skip

    def _held_terms(
        self, name: str, before: State, pooled: Mapping[str, int], tested: set[str]
    ) -> set[str]:
        """The terms of ``name``'s open alarm (its latest report's, while ``before`` is
        ``drift``) that fell under ``min_term_questions`` questions of the current window but
        are in at least half as many (:attr:`hold_min_questions`): they can no longer raise
        an alarm, but can hold the open one (the clear rule judges them), as the count floor
        has its own hysteresis. Without it a surge at the floor flapped: trial 40's "harvard"
        and "warsaw", 10–11 questions a window against none before, raised and cleared the
        alarm 7 times in 27 h of one continuous surge. Empty otherwise."""
        if before != "drift":
            return set()
        report = self._reports.get(name)
        if not isinstance(report, TermsDriftReport):
            return set()
        least = self.hold_min_questions
        return {change.term for change in report.rising
                if change.term not in tested and pooled.get(change.term, 0) >= least}  # fmt: skip

    @property
    def hold_min_questions(self) -> int:
        """Questions of the current window a term of an open alarm must still be in to hold
        it: half of ``min_term_questions``, rounded up (:meth:`_held_terms`)."""
        return max(1, -(-self.min_term_questions // 2))

    def _frozen_reference(
        self,
    ) -> tuple[
        dict[str, dict[str, int]],
        dict[str, list[tuple[int, frozenset[str]]]],
        dict[str, int],
        frozenset[str],
    ]:
        """The frozen baseline's counts per language, its full tallies' floors with the terms
        they kept, each term's count over the languages and the terms counted at least
        ``min_term_questions`` times: made again only when a baseline tally changed (during
        the warm-up; never once the baseline is frozen)."""
        key = tuple((language, tally, tally.version) for language, tally in self._base.items())
        cached = self._reference_cache
        if cached is None or cached[0] != key:
            reference = {language: tally.counts for language, tally in self._base.items()}
            full = {language: [(tally.floor, frozenset(tally.counts))]
                    for language, tally in self._base.items() if tally.floor}  # fmt: skip
            cached = (key, reference, full, *_totals(reference, self.min_term_questions))
            self._reference_cache = cached
        return cached[1], cached[2], cached[3], cached[4]

    def _forget_surfaces(self) -> None:
        """Keep the surface forms of the terms the current window's buckets (or the held
        questions) hold only: the terms a test can report (bounded memory)."""
        holders = self._holders
        held = {term for _, _, terms in self._held for term in terms if term not in holders}
        if len(holders) + len(held) < len(self._surfaces):
            self._surfaces = {t: s for t, s in self._surfaces.items()
                              if t in holders or t in held}  # fmt: skip

    def _empty_report(self, name: str, t: float, n_ref: int, n_cur: int) -> TermsDriftReport:
        alpha = self.alpha_per_test(name)
        return TermsDriftReport(name, _INSUFFICIENT, t, n_ref, n_cur, alpha=alpha,
                                alpha_per_day=self.budget_per_day)  # fmt: skip

    @property
    def budget_per_day(self) -> float:
        """This detector's own false-alarm budget per ``alpha_period_s``: its share of the
        family's ``alpha`` (the stage gives it one dimension's: ``alpha / 4``), split over
        its comparisons' windows by :meth:`alpha_per_test`."""
        return self.alpha * len(self._states) / self._family

    def _report_from_dict(self, data: dict[str, Any]) -> TermsDriftReport:
        return TermsDriftReport.from_dict(data)

    def snapshot(self) -> dict[str, Any]:
        """:meth:`~service.drift.detectors._WindowedDetector.snapshot` and the term counts,
        surface forms and held questions' terms."""
        out = super().snapshot()
        out["terms"] = {
            "recent": _store_json(self._recent),
            "base": {language: tally.text() for language, tally in sorted(self._base.items())},
            "base_first": self._base_first,
            "surfaces": self._surfaces,  # (in the order seen: the same after a restore)
            "held": [[t, language, list(terms)] for t, language, terms in self._held],
        }
        return out

    def restore(self, state: dict[str, Any] | None) -> Self:
        """Take back a :meth:`snapshot` (``None``: keep the fresh state).

        Raises:
            ValueError: another version, or a malformed snapshot.
        """
        if state is None:
            return self
        super().restore(state)
        terms = state.get("terms") or {}
        self._recent = _store_from_json(terms.get("recent") or {}, self.max_terms)
        self._holders = {}
        for by_language in self._recent.values():
            for tally in by_language.values():
                tally.holders = self._holders
                for term in tally.counts:
                    self._holders[term] = self._holders.get(term, 0) + 1
        self._current = _RangeCounts()
        self._base = {str(language): _Tally.from_text(self.max_terms, str(text))
                      for language, text in (terms.get("base") or {}).items()}  # fmt: skip
        first = terms.get("base_first")
        self._base_first = None if first is None else int(first)
        self._surfaces = {str(k): str(v) for k, v in (terms.get("surfaces") or {}).items()}
        self._held = [(float(t), str(language), tuple(map(str, words)))
                      for t, language, words in terms.get("held") or ()]  # fmt: skip
        return self


def _totals(
    reference: Mapping[str, Mapping[str, int]], least: int
) -> tuple[dict[str, int], frozenset[str]]:
    """``({term: its count summed over the languages}, the terms counted at least least
    times)``."""
    total: dict[str, int] = {}
    for counts in reference.values():
        get = total.get
        for term, n in counts.items():
            total[term] = get(term, 0) + n
    return total, frozenset(term for term, n in total.items() if n >= least)


def _find(items: list[tuple[float, str, tuple[str, ...]]], t: float, language: str) -> int | None:
    """The index of the first of ``items`` stamped ``t`` in ``language`` (``None``: none)."""
    return next((n for n, item in enumerate(items) if item[0] == t and item[1] == language), None)


def _store_json(store: _Store) -> dict[str, dict[str, str]]:
    return {str(bucket): {language: tally.text() for language, tally in by_language.items()}
            for bucket, by_language in sorted(store.items())}  # fmt: skip


def _store_from_json(data: Mapping[str, Any], size: int) -> _Store:
    return {int(bucket): {str(language): _Tally.from_text(size, str(text))
                          for language, text in by_language.items()}
            for bucket, by_language in data.items()}  # fmt: skip
