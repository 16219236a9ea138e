"""Optional sections: shadow agreement and harvested gold-question suggestions.

Both are rendered only when the report carries them (``shadow``: the shape of
:meth:`service.shadow.stage.ShadowStage.report`; ``gold_candidates``: a list of suggestion
dicts, the replay report's summary (:func:`service.jobs.replay.harvest_summary`: the list under
``top``, with ``n_suggestions``, ``by_reason``, ``shed`` and ``max_new_per_batch``), the status
page's (:mod:`service.api.status_page`: the list under ``suggestions``, with ``n_suggestions``,
``by_status``, ``shed`` and ``max_new_per_batch``), or a dict holding the list under
``candidates`` or ``questions``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from service.coverage import OUT_OF_SCOPE_COUNTED
from service.document_groups import all_tied_note, grouped_note, uncovered_note
from service.harvest.shed_note import not_compared_note, shed_note
from service.html import plots
from service.html.over_time import agreement_over_time
from service.html.page import esc, figure, ids, minute, num, para, section, table
from service.shadow.stage import (
    FEW_RESULTS,
    NOT_DETECTED,
    UNJUDGED_LANGUAGE,
    disagreements_by_question,
    with_n,
)

#: Agreement measures, in the shadow stage's report order.
AGREEMENT = ("overlap", "jaccard", "rbo", "kendall_tau", "top1", "citation_recall")
#: Disagreements listed per candidate, and suggestions listed.
MAX_DISAGREEMENTS = 10
MAX_SUGGESTIONS = 20
#: Keys of ``gold_candidates`` dicts that hold the suggestion list (``top``: the replay
#: report's summary).
LIST_KEYS = ("top", "suggestions", "candidates", "questions")
#: Suggestion fields shown (in this order) when present, after the question (``gap`` with its
#: ``gap_dimension``: :func:`_gap_cell`).
SUGGESTION_FIELDS = (
    "count",
    "n",
    "priority",
    "reason_counts",
    "reasons",
    "reason",
    "language",
    "topic",
    "role",
    "gap",
    "score",
    "first_seen",
    "last_seen",
    "status",
)


#: Column headers of the suggestion table that are not the field's name: a suggestion's
#: language, topic and role are goldwatch's guesses (the labelling API keeps them under
#: ``suggested``), never labels a person confirmed.
GUESS_HEADERS = {"language": "language (guess)", "topic": "topic (guess)",
                 "role": "role (guess)", "last_seen": "last seen"}  # fmt: skip


def _with_guesses(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """A suggestion row with its guesses as fields to show: the labelling API's items keep
    them under ``suggested`` (:class:`~service.harvest.labelling.CandidateItem`), a replay
    report's records as fields of their own.

    >>> _with_guesses({"id": "c-1", "suggested": {"topic": "exams"}})
    {'id': 'c-1', 'topic': 'exams'}
    """
    guesses = row.get("suggested")
    if not isinstance(guesses, Mapping):
        return row
    return {**{k: v for k, v in row.items() if k != "suggested"}, **guesses}


def find_extra(key: str, *docs: Mapping[str, Any] | None) -> Any:
    """The first non-``None`` ``key`` among ``docs`` (``None`` when none has it).

    >>> find_extra("shadow", None, {"shadow": {"candidates": {}}})
    {'candidates': {}}
    """
    for doc in docs:
        if doc is not None and doc.get(key) is not None:
            return doc[key]
    return None


#: How the shadow section names the topic buckets of questions given no topic
#: (:func:`service.shadow.stage.breakdown_label`).
NO_TOPIC_NAMES: dict[str, str] = {
    UNJUDGED_LANGUAGE: "no topic: no gold row in its language",
    NOT_DETECTED: "no topic (not detected)",
}


def shadow_section(
    shadow: Mapping[str, Any],
    min_n: int = FEW_RESULTS,
    topic_labels: Mapping[str, str] | None = None,
    over: Mapping[str, Any] | None = None,
    nearest: str | None = None,
) -> Markup:
    """Agreement of each shadow candidate with production: means, per language and topic,
    over time when ``over`` (a replay series' ``over_time``) has it
    (:func:`service.html.over_time.agreement_over_time`), and the questions where they
    disagreed most (lowest RBO). Every agreement figure is shown with
    the number of results it is over, marked "few" under ``min_n`` (:func:`with_n`; the
    replay page passes ``analytics.quality_min_class``); a per-label mean over fewer than
    ``min_n`` results is drawn as no bar. Topics are named by ``topic_labels`` (``{id:
    "topic-1: warsaw"}``, the analytics report's) where known, as on the rest of the page.
    ``nearest``: the topic drift's ``categories_are`` when the topics are each question's
    nearest gold topic (the novelty detector untrusted): the per-topic table and the
    disagreements' topic column say so, as the topic section does."""
    candidates: Mapping[str, Mapping[str, Any]] = shadow.get("candidates") or {}
    if not candidates:
        return section("shadow", "Shadow agreement", para("No shadow candidate.", "muted"))
    coverage, agreement = [], []
    for name, c in candidates.items():
        latency = (c.get("latency_seconds") or {}).get("mean")
        coverage.append(
            [
                name,
                c.get("offered"),
                c.get("completed"),
                _by_reason(c.get("skipped")),
                _by_reason(c.get("errors")),
                c.get("in_flight", 0),
                None if latency is None else latency * 1000.0,
            ]
        )
        means, counts = c.get("agreement") or {}, c.get("counts") or {}
        agreement.append(
            [name, *(_n_whole(with_n(means.get(m), counts.get(m), min_n)) for m in AGREEMENT)]
        )

    # each measure named with the results its means are over ("kendall_tau (n 55)" beside
    # "rbo (n 2600)": a second trial read tau 0.78 as agreement RBO 0.18 denied), and a
    # measure over fewer than min_n results drawn as no bar
    def n_of(c: Mapping[str, Any], m: str) -> int:
        return int((c.get("counts") or {}).get(m) or 0)

    names = [f"{m} (n {'/'.join(str(n_of(c, m)) for c in candidates.values())})"
             for m in AGREEMENT]  # fmt: skip
    parts: list[str] = [
        figure(
            plots.grouped_bars(
                names,
                {
                    n: [
                        (c.get("agreement") or {}).get(m) or 0.0 if n_of(c, m) >= min_n else 0.0
                        for m in AGREEMENT
                    ]
                    for n, c in candidates.items()
                },
                title="Agreement with production (means)",
                xlabel="agreement",
            ),
            f"Rank-biased overlap with p = {shadow.get('rbo_p', '–')}; top1: same first passage. "
            "n: the results each mean is over (one per candidate); a mean over fewer than "
            f"{min_n} is drawn as no bar.",
        ),
        para(
            "Coverage: every offered event is compared, skipped (by reason), failed (by "
            "error) or still in flight; the four add up to offered. Each agreement figure is "
            "a mean over the results that have one (n; Kendall's tau needs at least 2 "
            f'passages in both rankings); "few": fewer than {min_n} '
            "(analytics.quality_min_class), too few to read.",
            "muted",
        ),
        # Two tables: as one (13 columns, the reasons in 14em-wide text cells) it needed
        # about 1,500 px, and scrolled sideways in a 1,400 px window.
        table(
            [
                "candidate",
                "offered",
                "compared",
                "skipped",
                "errors",
                "in flight",
                "mean latency ms",
            ],
            coverage,
            nowrap_columns=(3, 4),  # one reason a line, never broken from its count
        ),
        table(["candidate", *AGREEMENT], agreement),
    ]
    parts += agreement_over_time(over)
    names_of = dict(topic_labels or {})
    # the buckets of questions without a label say why they have none (review s35)
    topic_names = {**names_of, **NO_TOPIC_NAMES}
    parts.append(_by_label(candidates, "by_language", "language", min_n,
                           {NOT_DETECTED: "no language (not detected)"}))  # fmt: skip
    parts.append(_by_label(candidates, "by_topic", "topic", min_n, topic_names, nearest))
    parts += gold_run_tables(shadow)
    for name, c in candidates.items():
        parts.append(_disagreements(name, c.get("disagreements") or [], names_of,
                                    nearest=nearest is not None))  # fmt: skip
    return section("shadow", "Shadow agreement", *parts)


def gold_run_tables(shadow: Mapping[str, Any]) -> list[Markup]:
    """The latest gold-set run's paired comparison of each candidate with production
    (``shadow["gold"]["latest"]["comparisons"]``: ``{candidate: [PairedComparison JSON]}``,
    as ``goldwatch eval --compare``): per metric the difference, its bootstrap interval and
    the randomization test's p, and what the run measures against the live known-question
    figures; ``[]`` without a run (trial 39: the page showed "hybrid finds more live" and not
    this test, which said "no difference")."""
    latest = (shadow.get("gold") or {}).get("latest") or {}
    comparisons = latest.get("comparisons") or {}
    parts: list[Markup] = []
    for rows in comparisons.values():
        if not rows:
            continue
        first = rows[0]
        version = (latest.get("gold_set") or {}).get("version")
        parts.append(para(
            f"Gold-set run ({latest.get('trigger', 'run')}, gold set {version}): {first['b']} − "
            f"{first['a']} on {first['n']} answerable gold questions, paired by question "
            f"({first['confidence']:.0%} bootstrap interval, randomization test p). It compares "
            "the retrievers themselves on the gold set; Live quality (its section) measures "
            "production as it served, on the known questions asked.", "muted"))  # fmt: skip
        parts.append(table(
            ["metric", first["a"], first["b"], "difference", "95 % interval", "p",
             "wins/losses/ties"],
            [[c["metric"], c["mean_a"], c["mean_b"], f"{c['mean_diff']:+.3f}",
              f"{c['ci_low']:.3f} … {c['ci_high']:.3f}", f"{c['p_value']:.3g}",
              f"{c['wins']}/{c['losses']}/{c['ties']}"] for c in rows],
        ))  # fmt: skip
        parts += [para(c["disagreement"], "muted") for c in rows if c.get("disagreement")]
    return parts


def gold_run_text(shadow: Mapping[str, Any], k: int = 10) -> str | None:
    """The latest gold-set run's paired test at ``recall@k`` per candidate in one line
    (``"gold-set run: hybrid − prod recall@10 -0.006 [-0.046, 0.033] p 0.906 (n 40)"``),
    ``None`` without one."""
    latest = (shadow.get("gold") or {}).get("latest") or {}
    texts = []
    for rows in (latest.get("comparisons") or {}).values():
        for c in rows or []:
            if c.get("metric") == f"recall@{k}":
                texts.append(f"{c['b']} − {c['a']} recall@{k} {c['mean_diff']:+.3f} "
                             f"[{c['ci_low']:.3f}, {c['ci_high']:.3f}] p {c['p_value']:.3g} "
                             f"(n {c['n']})")  # fmt: skip
    return "gold-set run: " + "; ".join(texts) if texts else None


def _by_reason(counts: Mapping[str, int] | None) -> Markup | str:
    """Skip or error counts by reason, one ``reason n`` a line (``none`` without any)."""
    if not counts:
        return "none"
    return Markup("<br>".join(esc(f"{reason} {n}") for reason, n in counts.items()))


def _n_whole(shown: str) -> Markup | str:
    """:func:`with_n`'s ``0.596 (n 132)`` for a cell that may break before ``(n 132)`` (a
    narrow window: the value above its n), never inside it."""
    value, sep, n = shown.partition(" (")
    if not sep:
        return shown
    return Markup(f'{esc(value)} <span class="nowrap">({esc(n)}</span>')


#: Agreement measures shown per label, each with its own n.
LABEL_AGREEMENT = ("rbo", "kendall_tau", "overlap", "top1")


def _by_label(candidates: Mapping[str, Mapping[str, Any]], key: str, label: str,
              min_n: int, names: Mapping[str, str] | None = None,
              nearest: str | None = None) -> Markup:  # fmt: skip
    """The chart and table of each candidate's agreement per ``label`` value (language or
    topic, shown by ``names`` where given); a mean RBO over fewer than ``min_n`` results is
    drawn as no bar (trial 9: a language with n = 1 had one). ``nearest``: why the labels
    are each question's NEAREST gold topic (the topic drift's ``categories_are``), said
    above the chart and in its title and column."""
    tables = {name: c.get(key) or {} for name, c in candidates.items()}
    values = sorted({v for t in tables.values() for v in t})
    if not values:
        return Markup("")
    shown = [(names or {}).get(v, v) for v in values]
    by = f"{label} (NEAREST gold topic)" if nearest else label
    svg = plots.grouped_bars(
        shown,
        {n: [_bar_rbo(t.get(v) or {}, min_n) for v in values] for n, t in tables.items()},
        title=f"RBO with production by {by}",
        xlabel="RBO",
    )
    rows = [
        [s, *(x for t in tables.values() for x in _label_cells(t.get(v) or {}, min_n))]
        for v, s in zip(values, shown, strict=True)
    ]
    header = [by, *(f"{n} {c}" for n in tables for c in ("n", *LABEL_AGREEMENT))]
    chart = figure(svg, f"Mean RBO per {label}; a mean over fewer than {min_n} is drawn as no bar.")
    warn = (para(f"These topics are by NEAREST gold topic, not facts: {nearest}.",
                 "warn") if nearest else "")  # fmt: skip
    return Markup(f"<h3>By {by}</h3>{warn}{chart}{table(header, rows)}")


def _bar_rbo(cell: Mapping[str, Any], min_n: int) -> float:
    """A label's mean RBO as a bar: 0 (no bar) when over fewer than ``min_n`` results (its
    RBO count, else the label's results) or missing."""
    n = (cell.get("counts") or {}).get("rbo", cell.get("n"))
    return float(cell.get("rbo") or 0.0) if isinstance(n, int) and n >= min_n else 0.0


def _label_cells(cell: Mapping[str, Any], min_n: int) -> list[object]:
    """A label's results and its agreement figures with their n (a report without
    per-measure counts: each over the label's results, except Kendall's tau: unknown)."""
    n, counts = cell.get("n"), cell.get("counts")
    return [n, *(with_n(cell.get(m), (counts or {}).get(m) if counts is not None
                        else (None if m == "kendall_tau" else n), min_n)
                 for m in LABEL_AGREEMENT)]  # fmt: skip


def _disagreements(name: str, rows: Sequence[Mapping[str, Any]],
                   names: Mapping[str, str] | None = None, *, nearest: bool = False,
                   ) -> Markup:  # fmt: skip
    """The questions where ``name`` disagreed most with production (lowest RBO), one row a
    question; ``nearest``: the topics are nearest gold topics (the column says so)."""
    if not rows:
        return Markup("")
    # one row per question (its lowest RBO), with how many of the kept events asked it
    distinct = disagreements_by_question(rows)  # type: ignore[arg-type]
    body = [
        [
            r.get("question", ""),
            r.get("repeats"),
            r.get("language"),
            (names or {}).get(r.get("topic") or "", r.get("topic")),
            r.get("rbo"),
            r.get("overlap"),
            _ids(r.get("production")),
            _ids(r.get("candidate")),
            r.get("event_id"),
        ]
        for r in distinct[:MAX_DISAGREEMENTS]
    ]
    header = [
        "question",
        "events",
        "language",
        "topic (nearest gold topic)" if nearest else "topic",
        "rbo",
        "overlap",
        "production top",
        "candidate top",
        "event",
    ]
    rows_html = table(header, body, text_columns=(0, 6, 7))
    return Markup(
        f"<details><summary>Largest disagreements: {esc(name)}</summary>{rows_html}</details>"
    )


def _ids(ranking: Any, show: int = 5) -> Markup:
    """The first ``show`` passage ids of a ranking (ids, or ``[id, score]`` pairs), each
    kept whole (:func:`~service.html.page.ids`)."""
    return ids(d[0] if isinstance(d, list | tuple) else d for d in list(ranking or ())[:show])


def suggestion_rows(candidates: Any) -> list[Mapping[str, Any]]:
    """Normalise ``gold_candidates`` to a list of dicts (strings become ``{"question": s}``).

    >>> suggestion_rows({"suggestions": ["Hostel ka fee?", {"question": "Exam date?"}]})
    [{'question': 'Hostel ka fee?'}, {'question': 'Exam date?'}]
    >>> suggestion_rows({"n_suggestions": 1, "top": [{"question": "Exam date?"}]})
    [{'question': 'Exam date?'}]
    """
    if isinstance(candidates, Mapping):
        for key in LIST_KEYS:
            if isinstance(candidates.get(key), list):
                candidates = candidates[key]
                break
        else:
            return []
    if not isinstance(candidates, list):
        return []
    return [c if isinstance(c, Mapping) else {"question": str(c)} for c in candidates]


def candidates_section(candidates: Any) -> Markup:
    """The top suggested gold questions (real production questions worth adding), after the
    replay summary's totals (suggestions by reason, picked events shed) when it has them."""
    rows = suggestion_rows(candidates)
    summary = _summary(candidates) if isinstance(candidates, Mapping) else []
    documents = document_gap_table(candidates.get("documents")) if isinstance(
        candidates, Mapping) else []  # fmt: skip
    if not rows:
        return section(
            "gold-candidates",
            "Suggested gold questions",
            *summary,
            para("No suggestion yet.", "muted"),
            *documents,
        )
    shown = [_with_guesses(r) for r in rows[:MAX_SUGGESTIONS]]
    fields = [f for f in SUGGESTION_FIELDS if any(f in r for r in shown)]
    if "reason_counts" in fields and "reasons" in fields:
        fields.remove("reasons")  # the labelling API's ordered list repeats the counts' keys
    # the id first and never wrapped at a laptop's width (a labeller copies it into the
    # accept URL; page.CSS lets it wrap under 1,200 px rather than scroll sideways), the
    # question next to it, wrapped at word boundaries only; times to the minute
    fields = [f for f in fields if f != "first_seen"]  # the last time matters for triage
    # the status page lists the undecided ones only (its summary says so): a column saying
    # "suggested" on every row took the width the table needed at 1,400 px (trial 24)
    statuses = {r.get("status") for r in shown}
    status = statuses.pop() if "status" in fields and len(statuses) == 1 else None
    if status is not None:
        fields.remove("status")
    # labels such as answered_out_of_scope=6 or comparison_query may break after an
    # underscore, so the table fits a 1,400 px window with its last column in view
    body = [
        [r.get("id") or "–", r.get("question") or r.get("text") or "",
         *(minute(r.get(f)) if f == "last_seen" else _gap_cell(r) if f == "gap"
           else _breakable(_cell(r.get(f))) for f in fields)]
        for r in shown
    ]  # fmt: skip
    header = ["id", "question", *(GUESS_HEADERS.get(f, f) for f in fields)]
    nowrap = [2 + fields.index("last_seen")] if "last_seen" in fields else []
    table_html = table(header, body, text_columns=(1,), nowrap_columns=(0, *nowrap))
    parts: list[str] = [*summary, table_html]
    total = candidates.get("n_suggestions") if isinstance(candidates, Mapping) else None
    hidden = (total if isinstance(total, int) else len(rows)) - len(shown)
    if status is not None:
        parts.append(para(f"Status of every suggestion listed: {status}.", "muted"))
    if hidden > 0:
        parts.append(para(f"{hidden} more suggestions not shown.", "muted"))
    if isinstance(candidates, Mapping):
        parts.extend(_gap_tables(candidates.get("in_gaps"), candidates.get("n_gaps")))
    parts.extend(documents)
    return section("gold-candidates", "Suggested gold questions", *parts)


def document_gap_table(documents: Any) -> list[Markup]:
    """The documents the gold set under-covers (a harvest summary's ``documents``,
    :meth:`~service.harvest.stage.HarvestStage.document_gaps`): a heading line and one row
    per document (its scrubbed label, live questions of all, gold references of all, the
    gap's lower bound); a line saying none is; empty without ``documents`` (the corpus names
    no document)."""
    if not isinstance(documents, Mapping):
        return []
    gaps = [g for g in documents.get("gaps") or () if isinstance(g, Mapping)]
    n_gaps = documents.get("n_gaps")
    more = n_gaps - len(gaps) if isinstance(n_gaps, int) else 0
    asked = (f"the gold set asks about {documents.get('gold_documents', 0)} of the corpus's "
             f"{documents.get('documents', 0)} documents{grouped_note(documents)}"
             f"{all_tied_note(documents)}")  # fmt: skip
    share = _uncovered_para(documents.get("uncovered"))
    if not gaps:
        return [para(f"No document is under-covered by the gold set ({asked}).", "meta"),
                *share]  # fmt: skip
    body = [[str(g.get("document", "")), f"{g.get('live', 0):,} of {g.get('live_total', 0):,}",
             f"{g.get('gold', 0)} of {g.get('gold_total', 0)}", g.get("gap")]
            for g in gaps]  # fmt: skip
    return [
        para("Documents the gold set under-covers, over all the traffic (a question's "
             "document: the one production ranked first; live share ≥ 2 × gold share, its "
             f"95 % lower bound ≥ gold share + 2 points; {asked})"
             + (f"; the {len(gaps)} largest of {n_gaps}." if more > 0 else "."), "meta"),
        table(["document", "questions (live)", "gold references", "gap"], body,
              text_columns=(0,)),
        *share,
    ]  # fmt: skip


def _uncovered_para(uncovered: Any) -> list[Markup]:
    """The share of questions on documents no gold row asks about (a document summary's
    ``uncovered``: :func:`service.jobs.replay.uncovered_lines`' line, "warn" styled when it
    is a gap); empty without it."""
    if not isinstance(uncovered, Mapping):
        return []
    lines = uncovered_note(uncovered)
    if not lines:
        return []
    text = lines[0].strip()
    return [para(text[0].upper() + text[1:] + ".", "warn" if uncovered.get("gap") else "meta")]


def _gap_tables(groups: Any, n_gaps: Any = None) -> list[Markup]:
    """The suggestions held per coverage gap (the summary's ``in_gaps``, the largest of
    ``n_gaps``): a heading line and one row per gap — the gap, how many suggestions it
    holds, its first ones in the labellers' queue (id and question, one per line;
    ``GET /v1/gold-candidates?language=…`` or ``?topic=…`` lists them in that order). The
    top table ranks across all of them, so a gap's own suggestions can all fall below it;
    empty without gaps."""
    if not isinstance(groups, list) or not groups:
        return []
    more = n_gaps - len(groups) if isinstance(n_gaps, int) else 0
    body = []
    for group in groups:
        if not isinstance(group, Mapping):
            continue
        lines = [
            f"{esc(r.get('id') or '–')} {esc(r.get('question') or '')}"
            for r in group.get("top") or ()
            if isinstance(r, Mapping)
        ]
        body.append([f"{group.get('dimension', '')} {group.get('value', '')}",
                     group.get("gap"), group.get("n", 0), Markup("<br>".join(lines))])  # fmt: skip
    return [
        para("In the coverage gaps of the recent events (harvest.gap_window: a language or "
             "topic asked far more than the gold set holds; the drift section judges gaps over "
             "all the traffic): the suggestions of each gap's language or topic and its "
             "first ones in the labellers' queue"
             + (f"; the {len(groups)} largest of {n_gaps} gaps" if more > 0 else "")
             + f" ({OUT_OF_SCOPE_COUNTED}).", "meta"),
        table(["coverage gap", "gap", "suggestions", "first in the queue"], body,
              text_columns=(3,)),
    ]  # fmt: skip


def _summary(summary: Mapping[str, Any]) -> list[Markup]:
    """The replay summary's totals: suggestions in all and by reason, then the shed note."""
    parts: list[Markup] = []
    total, by_reason = summary.get("n_suggestions"), summary.get("by_reason") or {}
    if total is not None:
        reasons = ", ".join(
            f"{reason} {n}" for reason, n in sorted(by_reason.items(), key=lambda kv: -kv[1])
        )
        decided = ", ".join(
            f"{n} {status}"
            for status, n in (summary.get("by_status") or {}).items()
            if status != "suggested"
        )
        parts.append(para(f"{total} suggestions" + (f" (by reason: {reasons})" if reasons else "")
                          + (f" undecided; decided: {decided}" if decided else "")
                          + "; the first ones in the labellers' queue below (by priority, "
                          "alternating topics and languages: the order of GET "
                          "/v1/gold-candidates and candidates export).", "meta"))  # fmt: skip
    for note in (shed_note(summary), not_compared_note(summary)):
        if note is not None:
            parts.append(para(note[0].upper() + note[1:] + ".", "muted"))
    return parts


def _breakable(value: object) -> object:
    """A text cell that may break after each underscore (``<wbr>``), escaped; other values
    as they are.

    >>> str(_breakable("acl_violation=1, <x>")), _breakable(0.5)
    ('acl_<wbr>violation=1, &lt;x&gt;', 0.5)
    """
    if not isinstance(value, str) or "_" not in value:
        return value
    return Markup("_<wbr>").join(esc(part) for part in value.split("_"))


def _gap_cell(row: Mapping[str, Any]) -> object:
    """A suggestion's ``gap`` with the dimension it is of, when the row says (a record from
    before ``gap_dimension`` does not), e.g. ``0.185 (language)``.

    >>> _gap_cell({"gap": 0.18351, "gap_dimension": "language"}), _gap_cell({"gap": 0.0})
    ('0.184 (language)', 0.0)
    """
    gap, dimension = row.get("gap"), row.get("gap_dimension")
    if not isinstance(dimension, str) or not isinstance(gap, int | float):
        return gap
    return f"{num(float(gap))} ({dimension})"


def _cell(value: Any) -> object:
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={num(v)}" for k, v in value.items())
    return value
