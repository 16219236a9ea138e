"""Retrieval metrics with trec_eval's exact semantics (recall, hit rate, P, MRR, nDCG, MAP).

Conventions (trec_eval 9/10, ``form_res_rels.c``):

* **Ordering.** The rank column of a run is ignored. Each result list is sorted by score
  descending, ties broken by doc id descending (``strcmp``; Python ``str`` order is the same
  for UTF-8 text). Ranks are 1-based.
* **Duplicates.** trec_eval aborts on a duplicate doc id; we keep its first occurrence after
  ordering (its best rank), drop the rest and count them (:func:`rank_run`,
  :attr:`EvalResult.n_duplicates`).
* **Relevance.** A judged doc is relevant when ``rel >= relevance_level`` (trec_eval ``-l``,
  default 1); unjudged docs are non-relevant. ``num_rel`` counts relevant docs in the qrels.
* **nDCG ignores relevance_level**, like trec_eval ``-l2``: every ``rel > 0`` gives gain ``rel``
  (negative → 0) and the ideal ranking holds every judged doc with ``rel > 0``.
* **No NaN.** Whatever the denominator (``num_rel = 0``, ideal DCG 0, empty run), the value is 0.
  trec_eval evaluates a qrels query with no relevant doc the same way: 0 on every measure here,
  and it counts in the mean. (goldwatch drops unanswerable questions before :func:`evaluate`.)
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import eq, itemgetter
from typing import NamedTuple

from service.records import Qrels, Run, ScoredDoc

__all__ = [
    "EvalResult",
    "Measure",
    "average_precision",
    "default_measures",
    "evaluate",
    "first_relevant_rank",
    "hit_rate_at_k",
    "ndcg_at_k",
    "parse_measure",
    "precision_at_k",
    "rank_run",
    "recall_at_k",
    "reciprocal_rank",
]

_SCORE = itemgetter(1)
_SCORE_THEN_ID = itemgetter(1, 0)
_DOC_ID = itemgetter(0)

#: ``_DISCOUNT[r] = 1 / log2(r + 1)`` for rank ``r >= 1`` (index 0 unused); grown on demand.
_DISCOUNT: list[float] = [0.0] + [1.0 / math.log2(r + 1) for r in range(1, 1025)]


def _ensure_discounts(max_rank: int) -> None:
    """Grow :data:`_DISCOUNT` so that ``_DISCOUNT[max_rank]`` exists."""
    for r in range(len(_DISCOUNT), max_rank + 1):
        _DISCOUNT.append(1.0 / math.log2(r + 1))


def _ordered(docs: Iterable[ScoredDoc]) -> list[ScoredDoc]:
    """Sort by score descending, ties by doc id descending (trec_eval ``comp_sim_docno``)."""
    ordered = sorted(docs, key=_SCORE, reverse=True)  # float keys: the fast path
    scores = list(map(_SCORE, ordered))
    if any(map(eq, scores, scores[1:])):  # ties (or duplicates): break them by doc id
        ordered.sort(key=_SCORE_THEN_ID, reverse=True)
    return ordered


def rank_run(docs: Iterable[ScoredDoc]) -> tuple[list[str], int]:
    """Order one result list the trec_eval way and drop duplicate ids.

    Args:
        docs: ``(doc_id, score)`` pairs in any order; scores must not be NaN.

    Returns:
        ``(ranking, n_duplicates)``: the doc ids by score descending, ties by id descending,
        each id once at its best rank; and how many duplicate entries were dropped.

    >>> rank_run([ScoredDoc("a", 1.0), ScoredDoc("b", 2.0), ScoredDoc("c", 1.0),
    ...           ScoredDoc("a", 0.5)])
    (['b', 'c', 'a'], 1)
    """
    ordered = _ordered(docs)
    unique = list(dict.fromkeys(map(_DOC_ID, ordered)))
    return unique, len(ordered) - len(unique)


def _rank_map(docs: Iterable[ScoredDoc]) -> tuple[dict[str, int], int]:
    """``({doc_id: rank}, n_duplicates)`` for one result list; same rule as :func:`rank_run`."""
    ids = list(map(_DOC_ID, _ordered(docs)))
    n = len(ids)
    rank_of = dict(zip(reversed(ids), range(n, 0, -1), strict=True))  # first occurrence wins
    n_duplicates = n - len(rank_of)
    if n_duplicates:  # positions after a dropped duplicate move up
        rank_of = dict(zip(dict.fromkeys(ids), range(1, len(rank_of) + 1), strict=True))
    return rank_of, n_duplicates


class _Judged(NamedTuple):
    """What every measure needs from one query, taken in one pass over its judged docs."""

    rel_ranks: list[int]  # ascending ranks of retrieved docs with rel >= relevance_level
    gains: list[tuple[int, int]]  # (rank, rel) of retrieved docs with rel > 0, by rank
    num_rel: int  # judged docs with rel >= relevance_level
    ideal: list[int]  # every rel > 0 of the qrels, descending (only if asked for)


def _judge(
    qrel: Mapping[str, int], rank_of: Mapping[str, int], level: int, ideal: bool = True
) -> _Judged:
    rel_ranks: list[int] = []
    gains: list[tuple[int, int]] = []
    num_rel = 0
    for doc_id, rel in qrel.items():
        if rel > 0:
            rank = rank_of.get(doc_id)
            if rel >= level:
                num_rel += 1
                if rank is not None:
                    rel_ranks.append(rank)
            if rank is not None:
                gains.append((rank, rel))
    rel_ranks.sort()
    gains.sort()
    gold = sorted((rel for rel in qrel.values() if rel > 0), reverse=True) if ideal else []
    return _Judged(rel_ranks, gains, num_rel, gold)


def _judge_ranking(qrel: Mapping[str, int], ranking: Sequence[str], level: int) -> _Judged:
    _check_level(level)
    unique = dict.fromkeys(ranking)
    return _judge(qrel, dict(zip(unique, range(1, len(unique) + 1), strict=True)), level)


def _check_level(level: int) -> None:
    if level < 1:
        raise ValueError(f"relevance_level must be >= 1, got {level}")


def _check_k(k: int | None) -> None:
    if k is not None and k < 1:
        raise ValueError(f"cutoff k must be >= 1, got {k}")


# Kernels: one measure from a _Judged, cutoff k (None = whole list). Shared by the public
# per-query functions and by evaluate(), so both give identical numbers.


def _recall(j: _Judged, k: int | None) -> float:
    if not j.num_rel:
        return 0.0
    found = len(j.rel_ranks) if k is None else bisect_right(j.rel_ranks, k)
    return found / j.num_rel


def _hit_rate(j: _Judged, k: int | None) -> float:
    return 1.0 if j.rel_ranks and (k is None or j.rel_ranks[0] <= k) else 0.0


def _precision(j: _Judged, k: int | None) -> float:
    if k is None:
        raise ValueError("precision needs a cutoff k")
    return bisect_right(j.rel_ranks, k) / k


def _reciprocal_rank(j: _Judged, k: int | None) -> float:
    if j.rel_ranks and (k is None or j.rel_ranks[0] <= k):
        return 1.0 / j.rel_ranks[0]
    return 0.0


def _average_precision(j: _Judged, k: int | None) -> float:
    if not j.num_rel:
        return 0.0
    ranks = j.rel_ranks if k is None else j.rel_ranks[: bisect_right(j.rel_ranks, k)]
    return sum(i / rank for i, rank in enumerate(ranks, 1)) / j.num_rel


def _ndcg(j: _Judged, k: int | None) -> float:
    ideal = j.ideal if k is None else j.ideal[:k]
    if not ideal:
        return 0.0
    disc = _DISCOUNT
    if len(disc) <= len(ideal) or (j.gains and len(disc) <= j.gains[-1][0]):
        _ensure_discounts(max(len(ideal), j.gains[-1][0] if j.gains else 0))
    idcg = sum(gain * disc[i] for i, gain in enumerate(ideal, 1))
    dcg = sum(gain * disc[rank] for rank, gain in j.gains if k is None or rank <= k)
    return dcg / idcg


_KERNELS: dict[str, Callable[[_Judged, int | None], float]] = {
    "recall": _recall,
    "hit_rate": _hit_rate,
    "precision": _precision,
    "mrr": _reciprocal_rank,
    "ndcg": _ndcg,
    "map": _average_precision,
}


def recall_at_k(
    qrel: Mapping[str, int], ranking: Sequence[str], k: int, *, relevance_level: int = 1
) -> float:
    """Recall@k: the share of the relevant docs that appear in the top ``k``.

    ``|relevant ∩ top-k| / num_rel`` in [0, 1]; 0 when ``num_rel == 0`` (trec_eval
    ``recall_k``, ``m_recall.c``).

    Args:
        qrel: ``{doc_id: rel}`` judgments of one query; ``rel >= relevance_level`` is relevant.
        ranking: doc ids best first (see :func:`rank_run`); a repeated id keeps its first rank.
        k: cutoff >= 1; may exceed ``len(ranking)``.
        relevance_level: smallest relevant ``rel`` (trec_eval ``-l``), >= 1.

    Raises:
        ValueError: ``k < 1`` or ``relevance_level < 1``.

    >>> recall_at_k({"p1": 1, "p2": 1, "p9": 0}, ["p1", "p3", "p9"], k=3)
    0.5
    """
    _check_k(k)
    return _recall(_judge_ranking(qrel, ranking, relevance_level), k)


def hit_rate_at_k(
    qrel: Mapping[str, int], ranking: Sequence[str], k: int, *, relevance_level: int = 1
) -> float:
    """Hit rate@k: 1.0 if any relevant doc is in the top ``k``, else 0.0.

    trec_eval ``success_k`` (``m_success.c``); not recall@k. Args and errors as
    :func:`recall_at_k`.
    """
    _check_k(k)
    return _hit_rate(_judge_ranking(qrel, ranking, relevance_level), k)


def precision_at_k(
    qrel: Mapping[str, int], ranking: Sequence[str], k: int, *, relevance_level: int = 1
) -> float:
    """Precision@k: relevant docs in the top ``k`` divided by ``k``, in [0, 1].

    The divisor is ``k`` even when fewer than ``k`` docs were retrieved (trec_eval ``P_k``,
    ``m_P.c``). Args and errors as :func:`recall_at_k`.
    """
    _check_k(k)
    return _precision(_judge_ranking(qrel, ranking, relevance_level), k)


def reciprocal_rank(
    qrel: Mapping[str, int],
    ranking: Sequence[str],
    k: int | None = None,
    *,
    relevance_level: int = 1,
) -> float:
    """Reciprocal rank: ``1 / rank`` of the first relevant doc, 0 if none, in [0, 1].

    Uncut it is trec_eval ``recip_rank`` (``m_recip_rank.c``); its mean is MRR. With ``k`` a
    first hit below rank ``k`` scores 0 (MRR@k). Args and errors as :func:`recall_at_k`.

    >>> reciprocal_rank({"p2": 1}, ["p1", "p2"]), reciprocal_rank({"p2": 1}, ["p1", "p2"], k=1)
    (0.5, 0.0)
    """
    _check_k(k)
    return _reciprocal_rank(_judge_ranking(qrel, ranking, relevance_level), k)


def ndcg_at_k(
    qrel: Mapping[str, int],
    ranking: Sequence[str],
    k: int | None = None,
    *,
    relevance_level: int = 1,
) -> float:
    """Normalised discounted cumulative gain (Järvelin & Kekäläinen, ACM TOIS 20(4), 2002).

    ``DCG@k = Σ_{r<=k} gain(r) / log2(r + 1)`` with ``gain = rel`` for ``rel > 0`` (else 0);
    ``nDCG@k = DCG@k / IDCG@k``, the ideal ranking being every judged doc with ``rel > 0``
    sorted by ``rel``; 0 when IDCG is 0. In [0, 1]. Uncut (``k=None``) it is trec_eval
    ``ndcg`` (``m_ndcg.c``), cut it is ``ndcg_cut_k`` (``m_ndcg_cut.c``); both use the
    ``log2(rank + 1)`` discount of trec_eval 9+ (Burges et al. 2005), not J&K's ``log_b``
    with no discount before rank ``b``. ``relevance_level`` is checked but, as in trec_eval
    ``-l``, does not change gains or the ideal.

    >>> # DCG = 3/log2(2) + 1/log2(4) = 3.5; IDCG = 3 + 2/log2(3) + 1/log2(4) = 4.7619
    >>> round(ndcg_at_k({"a": 3, "b": 2, "c": 1}, ["a", "x", "c"]), 4)
    0.735
    """
    _check_k(k)
    return _ndcg(_judge_ranking(qrel, ranking, relevance_level), k)


def average_precision(
    qrel: Mapping[str, int],
    ranking: Sequence[str],
    k: int | None = None,
    *,
    relevance_level: int = 1,
) -> float:
    """Average precision: mean over the relevant docs of precision at their rank, in [0, 1].

    ``AP@k = Σ_{relevant r<=k} P@r / num_rel`` (unretrieved relevant docs add 0); 0 when
    ``num_rel == 0``. Uncut it is trec_eval ``map`` (``m_map.c``), cut ``map_cut_k``
    (``m_map_cut.c``). Args and errors as :func:`recall_at_k`.
    """
    _check_k(k)
    return _average_precision(_judge_ranking(qrel, ranking, relevance_level), k)


def first_relevant_rank(
    qrel: Mapping[str, int], ranking: Sequence[str], *, relevance_level: int = 1
) -> int | None:
    """1-based rank of the first relevant doc in ``ranking``; ``None`` if none is retrieved.

    >>> first_relevant_rank({"p2": 1}, ["p1", "p2"]) is None, first_relevant_rank({}, ["p1"])
    (False, None)
    """
    ranks = _judge_ranking(qrel, ranking, relevance_level).rel_ranks
    return ranks[0] if ranks else None


class Measure(NamedTuple):
    """A parsed measure: canonical ``name`` and cutoff ``k`` (``None`` = whole list)."""

    name: str
    k: int | None

    @property
    def label(self) -> str:
        """Canonical label, e.g. ``recall@10``, ``mrr``, ``ndcg@10``."""
        return self.name if self.k is None else f"{self.name}@{self.k}"


_ALIASES = {
    "recall": "recall",
    "hit_rate": "hit_rate",
    "hitrate": "hit_rate",
    "success": "hit_rate",
    "precision": "precision",
    "p": "precision",
    "mrr": "mrr",
    "recip_rank": "mrr",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "map": "map",
    "map_cut": "map",
}
_NEEDS_K = frozenset({"recall", "hit_rate", "precision"})
_MEASURE_RE = re.compile(r"^(?P<base>[a-z_]+?)(?:[@_](?P<k>\d+))?$")


def parse_measure(name: str) -> Measure:
    """Parse a goldwatch label (``recall@10``, ``P@5``, ``mrr@10``, ``ndcg``, ``map@100``) or
    a trec_eval name (``recall_10``, ``P_10``, ``success_10``, ``recip_rank``, ``ndcg_cut_10``,
    ``map_cut_100``) into a :class:`Measure`. Case-insensitive.

    Raises:
        ValueError: unknown measure, missing cutoff for recall / hit rate / precision, or
            a cutoff < 1.

    >>> parse_measure("P_5"), parse_measure("ndcg_cut_10").label, parse_measure("mrr").label
    (Measure(name='precision', k=5), 'ndcg@10', 'mrr')
    """
    match = _MEASURE_RE.match(name.strip().lower())
    base = _ALIASES.get(match["base"]) if match else None
    if match is None or base is None:
        known = ", ".join(sorted(_ALIASES))
        raise ValueError(f"unknown measure {name!r}; expected one of {known}, e.g. 'ndcg@10'")
    k = int(match["k"]) if match["k"] is not None else None
    if k is None and base in _NEEDS_K:
        raise ValueError(f"measure {name!r} needs a cutoff, e.g. '{base}@10'")
    if k is not None and k < 1:
        raise ValueError(f"measure {name!r}: cutoff must be >= 1")
    return Measure(base, k)


def default_measures(ks: Sequence[int]) -> list[str]:
    """Labels goldwatch reports by default: recall, hit rate and nDCG at each ``k``, MRR, MAP.

    Raises:
        ValueError: a ``k < 1``.

    >>> default_measures([10, 1])
    ['recall@1', 'recall@10', 'hit_rate@1', 'hit_rate@10', 'ndcg@1', 'ndcg@10', 'mrr', 'map']
    """
    cutoffs = sorted(set(ks))
    for k in cutoffs:
        _check_k(k)
    per_k = [f"{name}@{k}" for name in ("recall", "hit_rate", "ndcg") for k in cutoffs]
    return [*per_k, "mrr", "map"]


@dataclass(frozen=True, slots=True)
class EvalResult:
    """Scores of one run against qrels.

    Attributes:
        per_query: query id → canonical label (e.g. ``ndcg@10``) → value in [0, 1].
        mean: label → mean over the evaluated queries (trec_eval's ``all``); 0 if none.
        n_queries: number of evaluated queries.
        n_duplicates: duplicate doc ids dropped from result lists, summed over queries.
    """

    per_query: dict[str, dict[str, float]]
    mean: dict[str, float]
    n_queries: int
    n_duplicates: int


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Sequence[str],
    *,
    relevance_level: int = 1,
    complete: bool = True,
) -> EvalResult:
    """Score ``run`` against ``qrels`` with trec_eval semantics (see the module docstring).

    Queries of ``run`` absent from ``qrels`` are ignored. With ``complete=True`` (trec_eval
    ``-c``) a qrels query missing from ``run`` is evaluated as an empty list (0 everywhere);
    with ``False`` it is skipped. Each result list is ordered once; all measures come from the
    ranks of its relevant docs.

    Args:
        qrels: query id → ``{doc_id: rel}``.
        run: query id → ``ScoredDoc`` list in any order.
        measures: labels accepted by :func:`parse_measure` (or one label as a ``str``);
            duplicates are scored once.
        relevance_level: smallest relevant ``rel`` (trec_eval ``-l``), >= 1.
        complete: evaluate qrels queries missing from the run (trec_eval ``-c``).

    Raises:
        ValueError: no measures, an unknown measure, or ``relevance_level < 1``.

    >>> result = evaluate({"q1": {"p1": 1, "p2": 1}}, {"q1": [ScoredDoc("p2", 0.9)]},
    ...                   ["recall@5", "mrr"])
    >>> result.mean, result.n_queries
    ({'recall@5': 0.5, 'mrr': 1.0}, 1)
    """
    _check_level(relevance_level)
    names = [measures] if isinstance(measures, str) else measures
    parsed = list(dict.fromkeys(parse_measure(m) for m in names))
    if not parsed:
        raise ValueError("evaluate needs at least one measure")
    plan = [(m.label, _KERNELS[m.name], m.k) for m in parsed]
    want_ideal = any(m.name == "ndcg" for m in parsed)
    per_query: dict[str, dict[str, float]] = {}
    n_duplicates = 0
    for qid, qrel in qrels.items():
        docs = run.get(qid)
        if docs is None and not complete:
            continue
        rank_of, n_dup = _rank_map(docs or ())
        n_duplicates += n_dup
        judged = _judge(qrel, rank_of, relevance_level, want_ideal)
        per_query[qid] = {label: kernel(judged, k) for label, kernel, k in plan}
    n = len(per_query)
    mean = {
        label: (math.fsum(v[label] for v in per_query.values()) / n if n else 0.0)
        for label, _, _ in plan
    }
    return EvalResult(per_query, mean, n, n_duplicates)
