"""Score retrievers on the gold set: overall, per breakdown field, with the misses.

The maths lives in :mod:`service.evaluation.ir_metrics`; this module joins a gold set with runs,
splits
answerable from unanswerable questions (``gold: []`` rows never enter recall or MRR), groups
per-question scores by every breakdown field present in the gold set (kind, doc_type, source,
language, role, topic) and extracts the misses — what came back instead of the gold passage.

No I/O here beyond calling the retriever objects it is given.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import fmean

from service.evaluation.ir_metrics import evaluate, rank_run
from service.pii.scrub import scrub
from service.records import BREAKDOWN_FIELDS, GoldQuestion, Qrels, Run, ScoredDoc
from service.retrievers.base import Retriever

#: Label used in breakdowns for rows that do not set the field.
MISSING = "(none)"


def report_measures(ks: Sequence[int]) -> list[str]:
    """Return the measures ``goldwatch eval`` reports for cut-offs ``ks``.

    For every k: ``recall@k``, ``hit_rate@k``, ``precision@k``, ``mrr@k``, ``ndcg@k``; then
    the uncut ``mrr``, ``ndcg`` and ``map``.

    >>> report_measures([5, 1])
    ['recall@1', 'recall@5', 'hit_rate@1', 'hit_rate@5', 'precision@1', 'precision@5', \
'mrr@1', 'mrr@5', 'ndcg@1', 'ndcg@5', 'mrr', 'ndcg', 'map']
    """
    cut = ("recall", "hit_rate", "precision", "mrr", "ndcg")
    return [f"{name}@{k}" for name in cut for k in sorted(set(ks))] + ["mrr", "ndcg", "map"]


@dataclass(frozen=True, slots=True)
class Miss:
    """One answerable question whose gold passages were not all in the top ``k``.

    Attributes:
        question_id, question, kind: from the gold set (the question scrubbed of personal
            data: :func:`service.pii.scrub.scrub`, as every question goldwatch writes).
        gold: the gold passage ids.
        gold_ranks: 1-based rank of each gold id in the retrieved list (``None``: not retrieved).
        instead: what came back in the top ``k`` instead: ``(rank, doc_id, score)`` triples.
        k: the cut-off the miss is judged at (the largest configured k).
    """

    retriever: str
    question_id: str
    question: str
    kind: str
    gold: tuple[str, ...]
    gold_ranks: dict[str, int | None]
    instead: tuple[tuple[int, str, float], ...]
    k: int

    def to_json(self) -> dict[str, object]:
        """Return the JSONL row written to the misses file."""
        return {
            "retriever": self.retriever,
            "id": self.question_id,
            "question": self.question,
            "kind": self.kind,
            "gold": list(self.gold),
            "gold_ranks": self.gold_ranks,
            "k": self.k,
            "instead": [{"rank": r, "id": d, "score": s} for r, d, s in self.instead],
        }


@dataclass(frozen=True)
class RetrieverReport:
    """Evaluation of one retriever on one gold set.

    Attributes:
        overall: metric label → mean over answerable questions (values in [0, 1]).
        by: field → value → metric label → mean, plus ``"n"`` (question count) per group.
        per_query: question id → metric label → value (answerable questions only).
        unanswerable: summary of the unanswerable questions: ``n`` and ``mean_top_score``
            (the best score returned, the raw material of an out-of-scope threshold;
            ``None`` when there are none).
        misses: answerable questions not fully found in the top ``max(k)``.
        n_duplicates: duplicate ids removed from result lists (trec_eval keeps the best rank).
        n_missing: answerable questions the run has no entry for (scored 0 in every
            metric, as trec_eval ``-c`` scores them); 0 for a built-in retriever.
        mean: what ``overall`` averages over: ``"answerable"`` (the default: questions with
            at least one relevant passage) or ``"trec_eval -c"`` (every judged question,
            those with no relevant passage scoring 0; :func:`trec_complete_means`).
        n_averaged: how many questions ``overall`` averages over (``n_questions`` for
            ``"answerable"``).
        unanswerable_best: unanswerable question id → the passage ranked first for it and
            its score (``None``: nothing returned); the right answer is a refusal, so a high
            score here is a confident match for a question the corpus cannot answer.
        ascending: ``(lists returned in ascending score order, lists whose scores are not
            all equal)``: :func:`ascending_lists`; when most are ascending the scores look
            like distances (:meth:`order_warning`).
        all_tied: answerable question ids whose result list holds two or more passages, all
            scored alike (:func:`tie_decided` ``"all"``): their ranking is trec_eval's tie
            order (passage id descending), not the retriever's, e.g. every passage scored 0.
        gold_tied: the other answerable question ids where a gold passage shares its score
            with a passage that is not gold (:func:`tie_decided` ``"gold"``): its rank among
            them is set by passage id.
        tied_groups: ``{"field=value": count}`` of the ``all_tied`` questions per breakdown
            group (only the fields of ``by``).
    """

    retriever: str
    overall: dict[str, float]
    by: dict[str, dict[str, dict[str, float]]]
    per_query: dict[str, dict[str, float]]
    n_questions: int
    n_unanswerable: int
    unanswerable: dict[str, float | None]
    misses: tuple[Miss, ...]
    n_duplicates: int
    measures: tuple[str, ...] = field(default=())
    n_missing: int = 0
    mean: str = "answerable"
    n_averaged: int = -1
    unanswerable_best: Mapping[str, tuple[str, float] | None] = field(default_factory=dict)
    ascending: tuple[int, int] = (0, 0)
    all_tied: tuple[str, ...] = ()
    gold_tied: tuple[str, ...] = ()
    tied_groups: Mapping[str, int] = field(default_factory=dict)

    def tied_mrr(self) -> float | None:
        """The uncut MRR of the :attr:`all_tied` questions (mean over them, in [0, 1]);
        ``None`` when there are none."""
        if not self.all_tied or "mrr" not in self.measures:
            return None
        return fmean(self.per_query[q]["mrr"] for q in self.all_tied)

    def tie_note(self) -> str | None:
        """What rests on trec_eval's tie order rather than on the retriever, or ``None``
        when nothing does: the questions whose result list was scored all alike
        (:attr:`all_tied`, with their breakdown groups, their uncut MRR and its share of the
        overall MRR) and those whose gold passage's rank was set by a tie at its score
        (:attr:`gold_tied`). Trial 45: an entrypoint that matched no word of two Hindi
        questions scored every passage 0; ranked by id descending at depth 100, their gold
        passages came 46th and 21st, so ``language=hi`` read MRR 0.0347 against the
        built-in BM25's 0.0000 for the same "found nothing".

        >>> r = RetrieverReport("r", {"mrr": 0.75}, {}, {"q1": {"mrr": 0.25},
        ...     "q2": {"mrr": 1.0}, "q3": {"mrr": 1.0}}, 3, 0, {}, (), 0, measures=("mrr",),
        ...     all_tied=("q1", "q2"), tied_groups={"language=hi": 2})
        >>> print(r.tie_note())  # doctest: +NORMALIZE_WHITESPACE
        r: 2 of 3 answerable questions got passages all scored alike (q1, q2; language=hi
        2): their ranks and their uncut MRR 0.6250 (0.4167 of the overall 0.7500) rest on
        trec_eval's tie order (passage id descending), not on the retriever
        """
        if not self.all_tied and not self.gold_tied:
            return None
        parts: list[str] = []
        if self.all_tied:
            named = _first(self.all_tied)
            if self.tied_groups:
                named += "; " + ", ".join(f"{g} {n}" for g, n in self.tied_groups.items())
            mrr = self.tied_mrr()
            part = (sum(self.per_query[q]["mrr"] for q in self.all_tied) / self.n_averaged
                    if self.n_averaged else 0.0)  # fmt: skip
            share = (f" ({part:.4f} of the overall {self.overall['mrr']:.4f})"
                     if mrr is not None and self.n_averaged else "")  # fmt: skip
            figure = f" and their uncut MRR {mrr:.4f}{share}" if mrr is not None else ""
            parts.append(
                f"{len(self.all_tied)} of {self.n_questions} answerable questions got passages "
                f"all scored alike ({named}): their ranks{figure} rest on trec_eval's tie "
                "order (passage id descending), not on the retriever"
            )
        if self.gold_tied:
            more = " more" if self.all_tied else ""
            parts.append(
                f"{len(self.gold_tied)}{more} had a gold passage tied at its score with "
                f"another passage ({_first(self.gold_tied)}): its rank among them is "
                "trec_eval's tie order, not the retriever's"
            )
        return f"{self.retriever}: " + "; ".join(parts)

    def order_warning(self) -> str | None:
        """A warning when at least :data:`MIN_ORDERED_LISTS` lists had scores that are not
        all equal and at least :data:`ASCENDING_SHARE` of them came in ascending score order,
        the order of distances (FAISS L2, Chroma, pgvector ``<->``: lower is better) returned
        best first: ranked by score descending, as trec_eval ranks, each is reversed (a
        trial's perfect retriever scored recall@10 0.000). ``None`` otherwise."""
        rising, ordered = self.ascending
        if ordered < MIN_ORDERED_LISTS or rising < ASCENDING_SHARE * ordered:
            return None
        return (f"{self.retriever}: {rising} of {ordered} result lists came in ascending score "
                "order; goldwatch ranks by score descending (trec_eval), so if these scores are "
                "distances (lower is better) every list was scored reversed: return "
                "similarities or negated distances")  # fmt: skip

    def __post_init__(self) -> None:
        if self.n_averaged < 0:
            object.__setattr__(self, "n_averaged", self.n_questions)

    def defined_overall(self) -> dict[str, float | None]:
        """``overall``, or every measure ``None`` when the means are over no question (a gold
        set with no answerable question): a mean over nothing is undefined, not 0 — a report
        of 0.0000 reads as a retriever that finds nothing (trial finding 3 of the sixteenth
        session)."""
        if self.n_averaged == 0:
            return dict.fromkeys(self.overall)
        return dict(self.overall)

    def to_json(self) -> dict[str, object]:
        """Return the documented machine-readable form (``--format json``); ``overall``
        values are ``null`` when the means are over no question (:meth:`defined_overall`)."""
        return {
            "overall": self.defined_overall(),
            "by": self.by,
            "n_questions": self.n_questions,
            "n_unanswerable": self.n_unanswerable,
            "unanswerable": self.unanswerable,
            "n_misses": len(self.misses),
            "n_duplicates": self.n_duplicates,
            "n_missing_from_run": self.n_missing,
            "mean": self.mean,
            "n_averaged": self.n_averaged,
            "ascending_lists": list(self.ascending),
            "order_warning": self.order_warning(),
            "ties": {
                "all_tied": list(self.all_tied),
                "gold_tied": list(self.gold_tied),
                "groups": dict(self.tied_groups),
                "mrr_all_tied": self.tied_mrr(),
                "note": self.tie_note(),
            },
        }


def _first(ids: Sequence[str], show: int = 5) -> str:
    """The first ``show`` ids, then how many more."""
    text = ", ".join(ids[:show])
    return text + (f" and {len(ids) - show} more" if len(ids) > show else "")


def tie_decided(gold: Iterable[str], docs: Iterable[ScoredDoc]) -> str | None:
    """Whether trec_eval's tie order (score descending, then passage id descending), not
    the scores, ranked a question's result list: ``"all"`` when it holds two or more
    distinct passages, every one at the same (best) score, a gold passage among them and
    one that is not (all gold or none gold: no order changes a figure); ``"gold"`` when a
    gold passage shares its score with a passage that is not gold (its rank among them set
    by id); ``None`` otherwise (an empty list, one passage, or no tie touching a gold
    passage).

    >>> tie_decided(["d2"], [ScoredDoc("d1", 0.0), ScoredDoc("d2", 0.0), ScoredDoc("d3", 0.0)])
    'all'
    >>> tie_decided(["d2"], [ScoredDoc("d1", 2.0), ScoredDoc("d2", 1.0), ScoredDoc("d3", 1.0)])
    'gold'
    >>> tie_decided(["d2"], [ScoredDoc("d1", 1.0), ScoredDoc("d3", 1.0), ScoredDoc("d2", 2.0)])
    >>> tie_decided(["d2"], [ScoredDoc("d2", 0.0)])
    >>> tie_decided(["d9"], [ScoredDoc("d1", 0.0), ScoredDoc("d2", 0.0)])
    """
    best = _best_scores(docs)
    gold = set(gold)
    if len(best) >= 2 and len(set(best.values())) == 1:
        # the order decides a figure only between a gold passage and one that is not
        kept = sum(doc in gold for doc in best)
        return "all" if 0 < kept < len(best) else None
    scores = {best[g] for g in gold if g in best}
    if any(doc not in gold and score in scores for doc, score in best.items()):
        return "gold"
    return None


def trec_complete_means(report: RetrieverReport, n_judged: int) -> RetrieverReport:
    """Return ``report`` with ``overall`` as trec_eval ``-c`` averages it: the sum of the
    answerable questions' scores over ``n_judged``, every judged question (topic), those
    with no relevant passage included. Such a question scores 0 in every reported measure
    (recall, hit rate, precision, MRR, nDCG and AP are 0 without a relevant passage:
    trec_eval's ``m_*.c``), and questions missing from the run already score 0.

    Breakdowns stay over answerable questions. Source: trec_eval ``-c``, "average over the
    complete set of queries in the relevance judgements" (``trec_eval.c``).

    Raises:
        ValueError: ``n_judged`` is smaller than the answerable questions counted.
    """
    if n_judged < report.n_questions:
        raise ValueError(f"n_judged ({n_judged}) < answerable questions ({report.n_questions})")
    overall = {
        m: (sum(v[m] for v in report.per_query.values()) / n_judged if n_judged else 0.0)
        for m in report.measures
    }
    return replace(report, overall=overall, mean="trec_eval -c", n_averaged=n_judged)


def retrieve_run(
    retriever: Retriever,
    questions: Sequence[GoldQuestion],
    depth: int,
    batch_size: int = 256,
    progress: Callable[[int], None] | None = None,
) -> Run:
    """Ask ``retriever`` for the top ``depth`` passages of every question, in batches.

    Args:
        retriever: any :class:`~service.retrievers.base.Retriever`.
        questions: the gold questions (answerable and unanswerable alike).
        depth: results per question (≥ 1).
        batch_size: questions per ``search_batch`` call (≥ 1).
        progress: called with the number of questions done after each batch.

    Returns:
        ``{question_id: [ScoredDoc, ...]}`` in the retriever's order.

    Raises:
        ValueError: ``depth`` or ``batch_size`` < 1.
        service.retrievers.base.RetrieverError: the retriever failed.
    """
    if depth < 1 or batch_size < 1:
        raise ValueError("depth and batch_size must be >= 1")
    run: Run = {}
    for start in range(0, len(questions), batch_size):
        batch = questions[start : start + batch_size]
        results = retriever.search_batch([q.question for q in batch], depth)
        for question, docs in zip(batch, results, strict=True):
            run[question.id] = list(docs)
        if progress is not None:
            progress(len(batch))
    return run


def _group_means(
    questions: Iterable[GoldQuestion],
    per_query: Mapping[str, Mapping[str, float]],
    measures: Sequence[str],
) -> dict[str, dict[str, dict[str, float]]]:
    questions = list(questions)
    by: dict[str, dict[str, dict[str, float]]] = {}
    for name in BREAKDOWN_FIELDS:
        if not any(getattr(q, name) is not None for q in questions):
            continue
        groups: dict[str, list[str]] = defaultdict(list)
        for q in questions:
            value = getattr(q, name)
            groups[MISSING if value is None else str(value)].append(q.id)
        if name == "kind" and set(groups) == {"plain"}:
            # "plain" for every scored row is the loader's default (a TREC qrels file has no
            # kinds at all), not a label anyone gave, and its means are the overall ones: no
            # breakdown (trial 13: "kind=plain" on 32 qrels topics). One kind a user gave
            # every row ("multi-passage") is shown, as one source or language is (trial 19).
            continue
        by[name] = {
            value: _mean_of(ids, per_query, measures) for value, ids in sorted(groups.items())
        }
    return by


def _mean_of(
    ids: Sequence[str], per_query: Mapping[str, Mapping[str, float]], measures: Sequence[str]
) -> dict[str, float]:
    summary: dict[str, float] = {m: fmean(per_query[i][m] for i in ids) for m in measures}
    summary["n"] = len(ids)
    return summary


def _find_misses(
    retriever: str, questions: Iterable[GoldQuestion], run: Run, k: int, show: int = 5
) -> tuple[Miss, ...]:
    misses = []
    for q in questions:
        ranking, _ = rank_run(run.get(q.id, []))
        ranks = {doc_id: i + 1 for i, doc_id in enumerate(ranking)}
        gold_ranks = {g: ranks.get(g) for g in q.gold}
        if all(r is not None and r <= k for r in gold_ranks.values()):
            continue
        best = _best_scores(run.get(q.id, []))
        instead = tuple(
            (i + 1, doc_id, best[doc_id])
            for i, doc_id in enumerate(ranking[:show])
            if doc_id not in q.gold
        )
        misses.append(Miss(retriever, q.id, scrub(q.question).text, q.kind, q.gold, gold_ranks,
                           instead, k))  # fmt: skip
    return tuple(misses)


#: :meth:`RetrieverReport.order_warning`: the least lists with unequal scores it judges on,
#: and the share of them in ascending order that warns.
MIN_ORDERED_LISTS = 5
ASCENDING_SHARE = 0.9


def ascending_lists(run: Run) -> tuple[int, int]:
    """``(rising, ordered)`` over the run's lists as returned: ``ordered`` lists whose
    scores are not all equal, ``rising`` of them never falling from one entry to the next
    (ascending score order: distances, best first).

    >>> ascending_lists({"q1": [ScoredDoc("a", 0.1), ScoredDoc("b", 0.2)],
    ...                  "q2": [ScoredDoc("a", 0.9), ScoredDoc("b", 0.2)],
    ...                  "q3": [ScoredDoc("a", 1.0), ScoredDoc("b", 1.0)]})
    (1, 2)
    """
    rising = ordered = 0
    for docs in run.values():
        scores = [doc.score for doc in docs]
        if len(set(scores)) < 2:
            continue
        ordered += 1
        rising += all(a <= b for a, b in zip(scores, scores[1:], strict=False))
    return rising, ordered


def _best_scores(docs: Iterable[ScoredDoc]) -> dict[str, float]:
    best: dict[str, float] = {}
    for doc_id, score in docs:
        if doc_id not in best or score > best[doc_id]:
            best[doc_id] = score
    return best


def evaluate_run(
    retriever: str,
    questions: Sequence[GoldQuestion],
    run: Run,
    ks: Sequence[int],
    relevance_level: int = 1,
    ascending: tuple[int, int] | None = None,
) -> RetrieverReport:
    """Score one run against the gold questions.

    Args:
        retriever: name used in the report.
        questions: gold questions; unanswerable ones (``gold == ()``) are summarised apart.
        run: ``{question_id: [ScoredDoc, ...]}``; a question with no entry scores 0 (trec_eval
            ``-c``).
        ks: cut-offs (each ≥ 1).
        relevance_level: minimum graded relevance counted as relevant (trec_eval ``-l``).
        ascending: ``(rising, ordered)`` of the lists as the retriever returned them, when
            ``run`` holds them sorted (:class:`~service.retrievers.base.ReturnedOrder`);
            ``None``: counted on ``run``'s own order (:func:`ascending_lists`; a run file's).

    Returns:
        A :class:`RetrieverReport`.

    Raises:
        ValueError: ``ks`` is empty or holds a value < 1.
    """
    if not ks or min(ks) < 1:
        raise ValueError("ks must hold at least one cut-off, each >= 1")
    answerable = [q for q in questions if q.answerable]
    unanswerable = [q for q in questions if not q.answerable]
    measures = tuple(report_measures(ks))
    qrels: Qrels = {q.id: q.qrels_row() for q in answerable}
    result = evaluate(qrels, run, list(measures), relevance_level=relevance_level, complete=True)
    per_query = {q.id: result.per_query[q.id] for q in answerable}
    overall = (
        {m: fmean(v[m] for v in per_query.values()) for m in measures}
        if per_query
        else dict.fromkeys(measures, 0.0)
    )
    top_scores = [max((d.score for d in run.get(q.id, [])), default=0.0) for q in unanswerable]
    best: dict[str, tuple[str, float] | None] = {}
    for q in unanswerable:
        ranking, _ = rank_run(run.get(q.id, []))
        scores = _best_scores(run.get(q.id, []))
        best[q.id] = (ranking[0], scores[ranking[0]]) if ranking else None
    by = _group_means(answerable, per_query, measures)
    decided = {q.id: tie_decided(q.gold, run.get(q.id, [])) for q in answerable}
    all_tied = tuple(q.id for q in answerable if decided[q.id] == "all")
    tied_groups: Counter[str] = Counter()
    for q in answerable:
        if decided[q.id] == "all":
            for name in by:
                value = getattr(q, name)
                tied_groups[f"{name}={MISSING if value is None else value}"] += 1
    return RetrieverReport(
        retriever=retriever,
        overall=overall,
        by=by,
        per_query=per_query,
        n_questions=len(answerable),
        n_unanswerable=len(unanswerable),
        unanswerable={
            "n": len(unanswerable),
            "mean_top_score": fmean(top_scores) if top_scores else None,
        },
        misses=_find_misses(retriever, answerable, run, max(ks)),
        n_duplicates=result.n_duplicates,
        measures=measures,
        n_missing=sum(1 for q in answerable if q.id not in run),
        unanswerable_best=best,
        ascending=(
            ascending
            if ascending is not None
            else ascending_lists({q.id: run[q.id] for q in questions if q.id in run})
        ),
        all_tied=all_tied,
        gold_tied=tuple(q.id for q in answerable if decided[q.id] == "gold"),
        tied_groups=dict(tied_groups),
    )
