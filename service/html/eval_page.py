"""``goldwatch eval --html``: one self-contained page per evaluation.

Sections (each a ``<section id=…>``): ``overall`` (one row per metric, one column per
retriever, so it fits the page however many cut-offs; what the means average over; the
questions ranked by trec_eval's tie order, their passages all scored alike, and those whose
gold passage's rank a tie set; the gates that failed), ``curves`` (recall@k and hit rate@k
against k, one line per retriever, SVG), ``breakdown`` (per field — kind, doc type, source,
language, role, topic — a bar chart of recall at the breakdown cut-off,
:func:`service.evaluation.report.breakdown_k`, and a table),
``misses`` (per retriever, what came back instead of the gold passages), ``unanswerable``
(the questions with no gold passage and what each retriever ranked first for them),
``comparison`` (paired B − A differences with their bootstrap intervals) and, with
``--answers``, ``answers``. The header says how deep each retriever was asked
(``eval.depth``) and, per retriever, what rests on the tie order
(:meth:`~service.evaluation.evaluate.RetrieverReport.tie_note`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from markupsafe import Markup

from service.evaluation.report import (
    COMPARISON_COLUMNS,
    breakdown_k,
    comparison_rows,
    depth_line,
    gold_set_line,
    max_k,
    text_measures,
)
from service.html import plots
from service.html.page import document, esc, figure, ident, num, para, pct, section, table
from service.pii.scrub import scrub
from service.records import BREAKDOWN_FIELDS

if TYPE_CHECKING:
    from service.evaluation.compare import PairedComparison
    from service.evaluation.evaluate import Miss, RetrieverReport
    from service.evaluation.job import EvalOutcome

#: Misses listed per retriever (the misses JSONL file has them all).
MAX_MISSES = 100


def render_eval_html(outcome: EvalOutcome, *, max_misses: int = MAX_MISSES) -> str:
    """Render an :class:`~service.evaluation.job.EvalOutcome` as a self-contained HTML page.

    Args:
        outcome: what :func:`service.evaluation.job.run_eval` returned (at least one report).
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
    header = [
        Markup("<h1>goldwatch — retrieval evaluation</h1>"),
        para(
            f"{gold_set_line(outcome.gold_set_summary())}. "
            f"Cut-offs k = {', '.join(map(str, outcome.ks))}; {depth_line(outcome.depth)}.",
            "meta",
        ),
    ]
    k = outcome.breakdown_k or breakdown_k(outcome.ks)
    warnings = [para(w, "notice") for r in outcome.reports if (w := r.order_warning())]
    warnings += [para(f"{w}.", "notice") for r in outcome.reports if (w := r.tie_note())]
    body = [
        *header,
        *warnings,
        _overall(outcome),
        _curves(outcome.ks, outcome.reports),
        _breakdown(outcome.reports, k),
        _misses(outcome.reports, max_misses),
        _unanswerable(outcome, max_misses),
        _comparison(outcome.comparisons),
    ]
    if outcome.answers is not None:
        body.append(_answers(outcome.answers.to_json()))
    return document("goldwatch eval report", body)


def _overall(outcome: EvalOutcome) -> Markup:
    reports = outcome.reports
    columns = text_measures(reports[0].measures)
    defined = [r.defined_overall() for r in reports]  # None ("–"): a mean over no question
    rows: list[list[object]] = [[m, *(d.get(m) for d in defined)] for m in columns]
    rows += [
        [f"misses (a gold passage outside the top {max_k(reports[0].measures)})",
         *(len(r.misses) for r in reports)],
        ["questions averaged over", *(r.n_averaged for r in reports)],
        ["missing from the run (scored 0)", *(r.n_missing for r in reports)],
        ["passages all scored alike (ranked by tie order)", *(len(r.all_tied) for r in reports)],
        ["a gold passage's rank set by a tie", *(len(r.gold_tied) for r in reports)],
    ]  # fmt: skip
    unjudged = outcome.n_unjudged
    skipped = (f" The {unjudged} topics not in the qrels are in no mean, as in trec_eval."
               if unjudged else "")  # fmt: skip
    if any(r.mean == "trec_eval -c" for r in reports):
        note = ("Means as trec_eval -c (--trec-mean): over every judged question; those with "
                "no relevant passage score 0, as do questions missing from a run; the "
                "breakdowns stay over answerable questions." + skipped)  # fmt: skip
    elif all(r.n_averaged == 0 for r in reports):
        note = ("No answerable question: every mean is undefined (–), not 0; the "
                f"{reports[0].n_unanswerable} questions with no gold passage have their own "
                "section below." + skipped)  # fmt: skip
    else:
        judged = reports[0].n_unanswerable - unjudged
        judged_text = f"{judged} judged" if outcome.from_qrels else str(judged)
        note = (f"Means over answerable questions only: the {judged_text} with no gold "
                "passage have their own section below (--trec-mean counts them as 0, as "
                "trec_eval -c does). A question missing from a run scores 0."
                + skipped)  # fmt: skip
    parts: list[str] = [
        table(["metric", *(r.retriever for r in reports)], rows),
        para(note, "muted"),
    ]
    if outcome.failed_gates:
        gates = [
            [g["retriever"], g["metric"], g["value"], g["threshold"]] for g in outcome.failed_gates
        ]
        parts += [
            Markup("<h3>Failed gates (--fail-under)</h3>"),
            table(["retriever", "metric", "value", "threshold"], gates),
        ]
    if outcome.warnings:
        items = "".join(f"<li>{esc(w)}</li>" for w in outcome.warnings)
        parts.append(Markup(f'<h3>Warnings</h3><ul class="notes">{items}</ul>'))
    return section("overall", "Overall", *parts)


def _curves(ks: Sequence[int], reports: Sequence[RetrieverReport]) -> Markup:
    scored = [r for r in reports if r.n_averaged > 0]  # a mean over no question: no curve
    if not scored:
        return section("curves", "Recall@k curves",
                       Markup('<p class="notes">No answerable question: no curve to draw (the '
                              "means are undefined).</p>"))  # fmt: skip
    panels = {
        metric: {r.retriever: [r.overall.get(f"{metric}@{k}", 0.0) for k in ks] for r in scored}
        for metric in ("recall", "hit_rate")
    }
    svg = plots.k_curves(list(ks), panels)
    caption = (
        "Recall@k: share of a question's gold passages in the top k, averaged over "
        "answerable questions. Hit rate@k: share of questions with any gold passage "
        "in the top k."
    )
    return section("curves", "Recall@k curves", figure(svg, caption))


def _breakdown(reports: Sequence[RetrieverReport], k: int) -> Markup:
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
            Markup(f"<h3>By {esc(field)}</h3>"),
            figure(svg, f"{metric} per {field}"),
            table(header, rows),
        ]
    if not parts and all(r.n_averaged == 0 for r in reports):
        parts.append(para("No answerable question to break down (the breakdowns are over "
                          "answerable questions).", "muted"))  # fmt: skip
    elif not parts:
        parts.append(para("The gold set sets none of the breakdown fields.", "muted"))
    else:
        parts.insert(0, para(
            f"Answerable questions only, at k = {k}: the cut-off of the first --fail-under "
            "metric that has one, else the largest k up to 10.", "muted"))  # fmt: skip
    return section("breakdown", "Breakdown", *parts)


def _misses(reports: Sequence[RetrieverReport], limit: int) -> Markup:
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
                nowrap_columns=(0,),
            )
            if rows
            else para("No misses.")
        )
        more = para(f"{rest} more in the misses JSONL (--misses).", "muted") if rest else ""
        parts.append(
            Markup(
                f"<details{' open' if len(reports) == 1 else ''}><summary>{esc(r.retriever)}: "
                f"{len(r.misses)} misses</summary>{inner}{more}</details>"
            )
        )
    return section("misses", "Misses", *parts)


def _unanswerable(outcome: EvalOutcome, limit: int) -> Markup:
    reports = outcome.reports
    questions = outcome.gold_set.unanswerable()
    if not questions:
        none = para("The gold set has no unanswerable question (gold: []).", "muted")
        return section("unanswerable", "Unanswerable questions", none)
    intro = para(
        f"{len(questions)} questions with no gold passage: they never enter the means above; "
        "the right behaviour is a refusal. Below, what each retriever ranked first for them, "
        "with its score: a high score is a confident match the answer step must not trust."
    )
    means = table(
        ["retriever", "questions", "mean best score"],
        [[r.retriever, r.n_unanswerable, r.unanswerable.get("mean_top_score")] for r in reports],
    )
    shown = questions[:limit]
    rows = [
        [
            q.id,
            scrub(q.question).text,
            q.kind,
            *(_best(r.unanswerable_best.get(q.id)) for r in reports),
        ]
        for q in shown
    ]
    header = ["id", "question", "kind", *(f"{r.retriever}: ranked first" for r in reports)]
    more = len(questions) - len(shown)
    rest = para(f"{more} more not listed.", "muted") if more else ""
    listed = table(header, rows, text_columns=(1,), nowrap_columns=(0, 2))
    return section("unanswerable", "Unanswerable questions", intro, means, listed, rest)


def _best(best: tuple[str, float] | None) -> str:
    return "nothing returned" if best is None else f"{best[0]} ({best[1]:.3g})"


def _miss_row(miss: Miss) -> list[object]:
    """A miss's cells; each passage id is kept whole with its rank (:func:`ids`: a narrow
    column breaks between passages, never at an id's hyphen)."""
    gold = Markup(", ").join(
        Markup(f"{ident(g)} ({'not retrieved' if rank is None else rank})")
        for g, rank in miss.gold_ranks.items()
    )
    instead = Markup("; ").join(
        Markup(f"{rank}. {ident(doc)} ({score:.3g})") for rank, doc, score in miss.instead
    )
    return [miss.question_id, miss.question, miss.kind, gold or "–", instead or "–"]


def _comparison(comparisons: Sequence[PairedComparison]) -> Markup:
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
    disagreements = [para(c.disagreement, "warn") for c in comparisons if c.disagreement]
    return section(
        "comparison",
        "Paired comparison",
        figure(svg, "B − A per metric"),
        table(header, rows),
        note,
        *disagreements,
    )


def _answers(doc: dict[str, object]) -> Markup:
    rows = [
        ["answers checked", num(doc.get("n_answers"))],
        ["answer_contains hit", pct(doc.get("contains_rate"))],  # type: ignore[arg-type]
        ["unanswerable refused", pct(doc.get("unanswerable_refusal_rate"))],  # type: ignore[arg-type]
        ["answerable refused (over-refusal)", pct(doc.get("over_refusal_rate"))],  # type: ignore[arg-type]
        ["gold questions without an answer", num(len(doc.get("missing") or ()))],  # type: ignore[arg-type]
        ["answers for ids not in the gold set (ignored)", num(len(doc.get("unknown") or ()))],  # type: ignore[arg-type]
    ]
    return section("answers", "Answer checks", table(["check", "value"], rows))
