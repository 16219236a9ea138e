"""``goldwatch eval --html``: one self-contained page per evaluation.

Sections (each a ``<section id=…>``): ``overall`` (a table per retriever with the gates that
failed), ``curves`` (recall@k and hit rate@k against k, one line per retriever, SVG),
``breakdown`` (per field — kind, doc type, source, language, role, topic — a bar chart of
recall at the largest k and a table), ``misses`` (per retriever, what came back instead of
the gold passages), ``comparison`` (paired B − A differences with their bootstrap intervals)
and, with ``--answers``, ``answers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from service.html import plots
from service.html.page import Safe, document, esc, figure, num, para, pct, section, table
from service.records import BREAKDOWN_FIELDS
from service.report import COMPARISON_COLUMNS, comparison_rows, max_k, text_measures

if TYPE_CHECKING:
    from service.compare import PairedComparison
    from service.eval_job import EvalOutcome
    from service.evaluation import Miss, RetrieverReport

#: Misses listed per retriever (the misses JSONL file has them all).
MAX_MISSES = 100


def render_eval_html(outcome: EvalOutcome, *, max_misses: int = MAX_MISSES) -> str:
    """Render an :class:`~service.eval_job.EvalOutcome` as a self-contained HTML page.

    Args:
        outcome: what :func:`service.eval_job.run_eval` returned (at least one report).
        max_misses: misses listed per retriever (≥ 0); the count of the rest is stated.

    Returns:
        The page (UTF-8 text; no script, no external resource).

    Raises:
        ValueError: ``outcome`` has no retriever report, or ``max_misses`` < 0.
    """
    if not outcome.reports:
        raise ValueError("no retriever was evaluated: nothing to render")
    if max_misses < 0:
        raise ValueError("max_misses must be >= 0")
    summary = outcome.gold_set_summary()
    header = [
        Safe("<h1>goldwatch — retrieval evaluation</h1>"),
        para(
            f"gold set {summary['path'] or '(TREC qrels)'}, version {summary['version']}: "
            f"{summary['n_questions']} questions, {summary['n_unanswerable']} unanswerable "
            f"(scored apart). Cut-offs k = {', '.join(map(str, outcome.ks))}.",
            "meta",
        ),
    ]
    body = [
        *header,
        _overall(outcome),
        _curves(outcome.ks, outcome.reports),
        _breakdown(outcome.reports),
        _misses(outcome.reports, max_misses),
        _comparison(outcome.comparisons),
    ]
    if outcome.answers is not None:
        body.append(_answers(outcome.answers.to_json()))
    return document("goldwatch eval report", body)


def _overall(outcome: EvalOutcome) -> Safe:
    reports = outcome.reports
    columns = text_measures(reports[0].measures)
    rows = [
        [
            r.retriever,
            r.n_questions,
            *(r.overall.get(m) for m in columns),
            len(r.misses),
            r.n_unanswerable,
            r.unanswerable.get("mean_top_score"),
        ]
        for r in reports
    ]
    header = ["retriever", "n", *columns, "misses", "unanswerable", "unans. top score"]
    parts: list[str] = [table(header, rows)]
    if outcome.failed_gates:
        gates = [
            [g["retriever"], g["metric"], g["value"], g["threshold"]] for g in outcome.failed_gates
        ]
        parts += [
            Safe("<h3>Failed gates (--fail-under)</h3>"),
            table(["retriever", "metric", "value", "threshold"], gates),
        ]
    if outcome.warnings:
        items = "".join(f"<li>{esc(w)}</li>" for w in outcome.warnings)
        parts.append(Safe(f'<h3>Warnings</h3><ul class="notes">{items}</ul>'))
    return section("overall", "Overall", *parts)


def _curves(ks: Sequence[int], reports: Sequence[RetrieverReport]) -> Safe:
    panels = {
        metric: {r.retriever: [r.overall.get(f"{metric}@{k}", 0.0) for k in ks] for r in reports}
        for metric in ("recall", "hit_rate")
    }
    svg = plots.k_curves(list(ks), panels)
    caption = (
        "Recall@k: share of a question's gold passages in the top k, averaged over "
        "answerable questions. Hit rate@k: share of questions with any gold passage "
        "in the top k."
    )
    return section("curves", "Recall@k curves", figure(svg, caption))


def _breakdown(reports: Sequence[RetrieverReport]) -> Safe:
    k = max_k(reports[0].measures)
    metric, columns = f"recall@{k}", [f"recall@{k}", f"hit_rate@{k}", "mrr"]
    parts: list[str] = []
    for field in BREAKDOWN_FIELDS:
        groups = [r.by.get(field, {}) for r in reports]
        values = sorted({v for g in groups for v in g})
        if not values:
            continue
        series = {
            r.retriever: [g.get(v, {}).get(metric, 0.0) for v in values]
            for r, g in zip(reports, groups, strict=True)
        }
        svg = plots.grouped_bars(values, series, title=f"{metric} by {field}", xlabel=metric)
        rows = [
            [
                v,
                int(next((g[v]["n"] for g in groups if v in g), 0)),
                *(g.get(v, {}).get(c) for g in groups for c in columns),
            ]
            for v in values
        ]
        header = [field, "n", *(f"{r.retriever} {c}" for r in reports for c in columns)]
        parts += [
            Safe(f"<h3>By {esc(field)}</h3>"),
            figure(svg, f"{metric} per {field}"),
            table(header, rows),
        ]
    if not parts:
        parts.append(para("The gold set sets none of the breakdown fields.", "muted"))
    return section("breakdown", "Breakdown", *parts)


def _misses(reports: Sequence[RetrieverReport], limit: int) -> Safe:
    parts: list[str] = [
        para(
            "Answerable questions whose gold passages were not all in the top k, with the "
            "passages that came back instead (rank, id, score)."
        )
    ]
    for r in reports:
        shown = r.misses[:limit]
        rest = len(r.misses) - len(shown)
        rows = [_miss_row(m) for m in shown]
        inner = (
            table(
                ["id", "question", "kind", "gold (rank)", "came back instead"],
                rows,
                text_columns=(1, 4),
            )
            if rows
            else para("No misses.")
        )
        more = para(f"{rest} more in the misses JSONL (--misses).", "muted") if rest else ""
        parts.append(
            Safe(
                f"<details{' open' if len(reports) == 1 else ''}><summary>{esc(r.retriever)}: "
                f"{len(r.misses)} misses</summary>{inner}{more}</details>"
            )
        )
    return section("misses", "Misses", *parts)


def _miss_row(miss: Miss) -> list[object]:
    gold = ", ".join(
        f"{g} ({'not retrieved' if rank is None else rank})" for g, rank in miss.gold_ranks.items()
    )
    instead = "; ".join(f"{rank}. {doc} ({score:.3g})" for rank, doc, score in miss.instead)
    return [miss.question_id, miss.question, miss.kind, gold, instead or "–"]


def _comparison(comparisons: Sequence[PairedComparison]) -> Safe:
    if not comparisons:
        return section(
            "comparison",
            "Paired comparison",
            para("No paired comparison: run with --compare A B.", "muted"),
        )
    first = comparisons[0]
    svg = plots.intervals(
        [c.metric for c in comparisons],
        [c.mean_diff for c in comparisons],
        [c.ci_low for c in comparisons],
        [c.ci_high for c in comparisons],
        title=f"{first.b} − {first.a}: mean difference with {first.confidence:.0%} interval",
        xlabel="mean difference (B − A)",
    )
    rows = comparison_rows(comparisons)
    header = ["B − A" if column == "diff" else column for column in COMPARISON_COLUMNS]
    note = para(
        "Paired over the same questions: randomization test for p, bootstrap interval "
        "of the mean difference. Wins: questions where B scores higher.",
        "muted",
    )
    return section(
        "comparison",
        "Paired comparison",
        figure(svg, "B − A per metric"),
        table(header, rows),
        note,
    )


def _answers(doc: dict[str, object]) -> Safe:
    rows = [
        ["answers checked", num(doc.get("n_answers"))],
        ["answer_contains hit", pct(doc.get("contains_rate"))],  # type: ignore[arg-type]
        ["unanswerable refused", pct(doc.get("unanswerable_refusal_rate"))],  # type: ignore[arg-type]
        ["answerable refused (over-refusal)", pct(doc.get("over_refusal_rate"))],  # type: ignore[arg-type]
    ]
    return section("answers", "Answer checks", table(["check", "value"], rows))
