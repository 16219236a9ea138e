"""Render evaluation reports: aligned text tables for people, a stable JSON schema for machines.

JSON schema (``schema_version`` 1)::

    {"schema_version": 1,
     "gold_set": {"path", "version", "n_questions", "n_unanswerable",
                  "n_unjudged",             # topics not in the qrels: in no mean
                  "from_qrels", "mean"},    # mean: "answerable" | "trec_eval -c"
     "k": [1, 5, 10, 20],
     "depth": 100 | None,                   # results asked of each retriever (eval.depth);
                                            # None: TREC run files, scored as given
     "retrievers": {name: {"overall": {metric: value},
                           "by": {field: {value: {metric: value, "n": count}}},
                           "n_questions": int, "n_unanswerable": int,
                           "unanswerable": {"n", "mean_top_score"},
                           "n_misses": int, "n_duplicates": int,
                           "n_missing_from_run": int,    # answerable, absent: scored 0
                           "mean": "answerable" | "trec_eval -c",  # what overall averages
                           "n_averaged": int,                      # over, and how many
                           "ascending_lists": [rising, ordered],   # lists in ascending
                           "order_warning": str | None,            # score order: distances?
                           "ties": {"all_tied": [question_id],     # lists scored all alike
                                    "gold_tied": [question_id],    # a gold passage tied
                                    "groups": {"field=value": n},  # all_tied per group
                                    "mrr_all_tied": float | None,  # their uncut MRR
                                    "note": str | None}}},         # what rests on tie order
     "comparison": [{"metric", "a", "b", "n", "mean_a", "mean_b", "mean_diff", "wins",
                     "losses", "ties", "p_value", "ci_low", "ci_high", "confidence",
                     "deltas": {question_id: b - a},
                     "disagreement": str}],   # only with --compare; "" or why CI and p differ
     "answers": {...},                                       # only with --answers
     "fail_under": [{"retriever", "metric", "value", "threshold"}]}  # failed gates
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict

from service.evaluation.compare import PairedComparison
from service.evaluation.evaluate import RetrieverReport

SCHEMA_VERSION = 1


class GoldSetSummary(TypedDict):
    """The ``gold_set`` block (module docstring): the file (``None``: the embedded demo),
    its version hash, questions (or topics), those with no relevant passage, topics not in
    the qrels (``n_unjudged``), whether it came from qrels, and what the means average
    over."""

    path: str | None
    version: str
    n_questions: int
    n_unanswerable: int
    n_unjudged: int
    from_qrels: bool
    mean: Literal["answerable", "trec_eval -c"]


class FailedGate(TypedDict):
    """A ``--fail-under`` gate a retriever failed: its overall ``value`` of ``metric``
    (e.g. ``recall@10``, in [0, 1]) below ``threshold``."""

    retriever: str
    metric: str
    value: float
    threshold: float


class EvalReport(TypedDict):
    """:func:`render_json`'s document, ``schema_version`` 1 (module docstring):
    ``retrievers`` maps a name to :meth:`RetrieverReport.to_json`, ``comparison`` holds
    :meth:`PairedComparison.to_json` rows (only with ``--compare``), ``answers`` the answer
    checks (only with ``--answers``)."""

    schema_version: int
    gold_set: GoldSetSummary
    k: list[int]
    depth: int | None
    retrievers: dict[str, dict[str, Any]]
    fail_under: list[FailedGate]
    comparison: NotRequired[list[dict[str, Any]]]
    answers: NotRequired[dict[str, Any]]


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Return an aligned plain-text table (first column left-aligned, the rest right)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]

    def fmt(row: Sequence[str]) -> str:
        first = row[0].ljust(widths[0])
        return "  ".join([first, *(v.rjust(w) for v, w in zip(row[1:], widths[1:], strict=True))])

    lines = [fmt([str(h) for h in header]), "  ".join("-" * w for w in widths)]
    lines.extend(fmt(r) for r in cells)
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if value is None:  # a mean over no question
        return "n/a"
    return str(value)


def max_k(measures: Sequence[str]) -> int:
    """The largest cut-off among ``measures`` (0 when none has one)."""
    return max((int(m.split("@")[1]) for m in measures if "@" in m), default=0)


def breakdown_k(ks: Sequence[int], gate_metrics: Sequence[str] = ()) -> int:
    """The cut-off the breakdowns are charted at: the k of the first ``--fail-under`` metric
    that has one and is among ``ks``, else the largest k ≤ 10 (the cut-off of the text
    table's nDCG column), else the smallest k.

    Raises:
        ValueError: ``ks`` is empty.

    >>> breakdown_k([1, 5, 10, 20]), breakdown_k([1, 5, 10, 20], ["mrr", "recall@5"])
    (10, 5)
    >>> breakdown_k([20, 50])
    20
    """
    if not ks:
        raise ValueError("no cut-off")
    for metric in gate_metrics:
        _, at, k = metric.partition("@")
        if at and k.isdigit() and int(k) in ks:
            return int(k)
    return max((k for k in ks if k <= 10), default=min(ks))


def text_measures(measures: Sequence[str]) -> list[str]:
    """Pick the columns of the text table: recall@k and hit_rate@k for every k, MRR, nDCG at
    the largest k ≤ 10 (else the smallest k) and MAP. JSON output carries every measure."""
    ks = sorted({int(m.split("@")[1]) for m in measures if m.startswith("recall@")})
    ndcg_k = max((k for k in ks if k <= 10), default=ks[0] if ks else None)
    chosen = [f"recall@{k}" for k in ks] + [f"hit_rate@{k}" for k in ks]
    chosen += ["mrr", f"ndcg@{ndcg_k}", "map"]
    return [m for m in chosen if m in measures]


def render_text(reports: Sequence[RetrieverReport], comparisons: Sequence[PairedComparison]) -> str:
    """Render one table per retriever (overall, then every breakdown group), then the
    paired comparisons. Unanswerable questions are counted apart, never in the means.
    The text table shows recall@k, hit rate@k, MRR, nDCG and MAP; ``--format json`` also
    carries precision@k, MRR@k, every nDCG@k and the uncut nDCG."""
    if not reports:
        return "no retriever evaluated"
    columns = text_measures(reports[0].measures)
    out: list[str] = []
    for r in reports:
        mean_top = r.unanswerable["mean_top_score"]
        unanswerable = f"{r.n_unanswerable} unanswerable" + (
            f" (mean best score {mean_top:.3f})" if mean_top is not None else ""
        )
        misses = f"{len(r.misses)} miss" + ("" if len(r.misses) == 1 else "es")
        duplicates = f", {r.n_duplicates} duplicate ids in result lists" if r.n_duplicates else ""
        out.append(
            f"== {r.retriever}: {r.n_questions} answerable questions, {unanswerable}, "
            f"{misses} (a gold passage outside the top {max_k(r.measures)}){duplicates} =="
        )
        out.append(mean_note(r))
        if warning := r.order_warning():
            out.append(f"WARNING: {warning}")
        overall = r.defined_overall()
        rows: list[list[object]] = [["all", r.n_averaged, *(overall[m] for m in columns)]]
        for field, groups in r.by.items():
            rows.extend(
                [f"{field}={value}", int(g["n"]), *(g[m] for m in columns)]
                for value, g in groups.items()
            )
        out.append(table(["questions", "n", *columns], rows))
        if few := few_groups_line(r.by):
            out.append(few)
        if ties := r.tie_note():
            out.append(f"ties: {ties}")
        out.append("")
    if comparisons:
        out.append("Paired comparison (B - A; randomization test, bootstrap CI)")
        out.append(table(list(COMPARISON_COLUMNS), comparison_rows(comparisons)))
        out.extend(f"note: {c.disagreement}" for c in comparisons if c.disagreement)
    return "\n".join(out).rstrip()


#: A breakdown group on fewer answerable questions than this is named under its table: one
#: question moves its means by 1/n (the live quality figures' "too few" bound,
#: ``analytics.quality_min_class``'s default, :data:`service.quality.by_language.FEW`).
FEW_QUESTIONS = 10


def few_groups_line(by: Mapping[str, Mapping[str, Mapping[str, Any]]],
                    min_n: int = FEW_QUESTIONS) -> str | None:  # fmt: skip
    """The breakdown groups on fewer than ``min_n`` answerable questions, named in one line
    under the table (trial 40: at 30 gold rows most ``topic=`` rows held 1–6 questions and
    read like any other, ``topic=Black_Death n 1 recall@1 0.0000``); ``None`` when none is.

    Args:
        by: field → value → the group's measures with its ``n`` (a report's ``by``).
        min_n: the smallest group not named, ≥ 1.

    >>> print(few_groups_line({"kind": {"plain": {"n": 18}, "expert": {"n": 5}},
    ...                        "topic": {"Oxygen": {"n": 1}}}))  # doctest: +NORMALIZE_WHITESPACE
    too few to read alone (< 10 answerable questions: one question moves a mean by 1/n):
    kind=expert (5), topic=Oxygen (1)
    """
    few = [f"{field}={value} ({int(g['n'])})" for field, groups in by.items()
           for value, g in groups.items() if int(g["n"]) < min_n]  # fmt: skip
    if not few:
        return None
    return (f"too few to read alone (< {min_n} answerable questions: one question moves a "
            f"mean by 1/n): {', '.join(few)}")  # fmt: skip


def gold_set_line(summary: GoldSetSummary) -> str:
    """One line on what was scored: the gold set (or qrels), how many of its questions
    have no relevant passage and whether the means count them (as 0, ``--trec-mean``: the
    summary's ``mean`` is ``"trec_eval -c"``) or leave them out; with qrels, the topics with
    no judgment at all are in no mean, as in trec_eval (``summary``: the ``gold_set`` block
    of the JSON report).

    >>> gold_set_line({"path": "q.qrels", "version": "v1", "n_questions": 4,
    ...                "n_unanswerable": 2, "n_unjudged": 1, "from_qrels": True,
    ...                "mean": "trec_eval -c"})[26:]
    '4 topics, 3 judged, 1 of them with no relevant document (scored 0 in the means: \
--trec-mean, as trec_eval -c); 1 not in the qrels (in no mean, as in trec_eval)'
    """
    n, none = summary["n_questions"], summary["n_unanswerable"]
    trec_mean = summary.get("mean") == "trec_eval -c"
    if summary.get("from_qrels"):
        unjudged = int(summary.get("n_unjudged") or 0)
        counted = ("scored 0 in the means: --trec-mean, as trec_eval -c" if trec_mean
                   else "left out of the means; --trec-mean counts them as 0")  # fmt: skip
        text = (
            f"qrels {summary['path']} version {summary['version']}: {n} topics, "
            f"{n - unjudged} judged, {none - unjudged} of them with no relevant document "
            f"({counted})"
        )
        if unjudged:
            text += f"; {unjudged} not in the qrels (in no mean, as in trec_eval)"
        return text
    counted = ("scored 0 in the means: --trec-mean, as trec_eval -c" if trec_mean
               else "scored apart, left out of the means")  # fmt: skip
    return (
        f"gold set {summary['path']} version {summary['version']}: {n} questions, {none} "
        f"unanswerable (no gold passage: {counted})"
    )


def depth_line(depth: int | None) -> str:
    """How deep each retriever's result list went: what the uncut MRR, nDCG and MAP (and
    the misses' gold ranks) are over, ``eval.depth`` in the configuration (trial 45: the
    100 an entrypoint is asked for was in neither ``--help`` nor the README); ``None``:
    TREC run files, scored as given.

    >>> depth_line(100)  # doctest: +ELLIPSIS
    'each retriever was asked for its top 100 passages (eval.depth): the uncut MRR, ...'
    """
    if depth is None:
        return ("run files scored as given: the uncut MRR, nDCG and MAP are over each list "
                "as long as the file has it")  # fmt: skip
    return (f"each retriever was asked for its top {depth} passages (eval.depth): the uncut "
            "MRR, nDCG and MAP are over those, ranked by score descending with ties by "
            "passage id descending (trec_eval)")  # fmt: skip


def mean_note(report: RetrieverReport) -> str:
    """What a retriever's means average over, and how many questions the run did not hold
    (scored 0), e.g. ``"means over 2 answerable questions; 1 missing from the run (scored
    0)"``; with ``--trec-mean``, also that the breakdowns stay over answerable questions."""
    if report.mean == "trec_eval -c":
        text = (
            f"means over all {report.n_averaged} judged questions (trec_eval -c: "
            f"{report.n_averaged - report.n_questions} with no relevant passage scored 0; "
            f"breakdowns over the {report.n_questions} answerable)"
        )
    elif report.n_averaged == 0:
        return (
            "no answerable question: recall, hit rate, MRR, nDCG and MAP are undefined "
            "(n/a); the unanswerable questions are scored apart (their best scores above)"
        )
    else:
        text = f"means over {report.n_averaged} answerable questions"
    return f"{text}; {report.n_missing} missing from the run (scored 0)"


#: Columns of a paired-comparison table, text and HTML alike.
COMPARISON_COLUMNS: tuple[str, ...] = (
    "metric", "A", "B", "n", "mean A", "mean B", "diff", "CI low", "CI high", "wins", "losses",
    "ties", "p",
)  # fmt: skip


#: A mean difference (or interval end) smaller than this is float noise of equal means
#: (trial 9: "1.63e-18" for two retrievers' identical means) and is shown as 0.
NOISE = 1e-12


def _denoised(x: float) -> float:
    return 0.0 if abs(x) < NOISE else x


def comparison_rows(comparisons: Sequence[PairedComparison]) -> list[list[object]]:
    """One row per paired comparison, in :data:`COMPARISON_COLUMNS` order, for display: the
    difference and its interval ends below :data:`NOISE` in magnitude as 0 (the JSON report
    keeps the values computed)."""
    return [
        [c.metric, c.a, c.b, c.n, c.mean_a, c.mean_b, _denoised(c.mean_diff),
         _denoised(c.ci_low), _denoised(c.ci_high), c.wins, c.losses, c.ties, c.p_value]
        for c in comparisons
    ]  # fmt: skip


def render_json(
    reports: Sequence[RetrieverReport],
    comparisons: Sequence[PairedComparison],
    *,
    gold_set: GoldSetSummary,
    ks: Sequence[int],
    answers: dict[str, Any] | None = None,
    failed_gates: Sequence[FailedGate] = (),
    depth: int | None = None,
) -> EvalReport:
    """Return the documented JSON report (see the module docstring); ``depth``: the results
    asked of each retriever (``eval.depth``), ``None`` for TREC run files."""
    doc: EvalReport = {
        "schema_version": SCHEMA_VERSION,
        "gold_set": gold_set,
        "k": list(ks),
        "depth": depth,
        "retrievers": {r.retriever: r.to_json() for r in reports},
        "fail_under": list(failed_gates),
    }
    if comparisons:
        doc["comparison"] = [c.to_json() for c in comparisons]
    if answers is not None:
        doc["answers"] = answers
    return doc
