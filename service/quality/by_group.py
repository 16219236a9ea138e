"""Live quality on known questions per gold-row group (``kind``, ``topic``), and the shadow's
paired comparison by distinct question.

**By group** (trial 39: a degradation hit the temporal questions only — known temporal hit@10
0.87 → 0.42 — while the overall known-question figures, broken down by language only, showed
it as a 10-point fall): production's known-question aggregates are kept per gold row
(:class:`~service.quality.stage.LiveQualityStage`), so grouping them by a field of the matched
gold row costs nothing more. Per group: the known and scored events, the distinct gold rows
scored (``questions``), the hit rate@k with its Wilson 95 % interval, recall@k and MRR@k
(means over the scored events). A question asked again is not new evidence, so the interval
over events is too narrow when a few questions are repeated: ``questions`` says how many
distinct ones the figures rest on, and a group is ``few`` when fewer than ``min_n``
(``analytics.quality_min_class``) distinct questions were scored. Groups are bounded: the
``max_groups`` with the most known events are shown (ties by name), the others summed in one
``rest`` row; a gold row without the field is in group ``none``.

**Paired by question** (trial 39: "production hit@10 0.876 vs hybrid 0.958 on the 331 known
questions both were scored on" had no uncertainty, and the 331 events were repeats of ~40 gold
questions): each gold question's mean per retriever over the events both were scored on, then
the gold-set run's paired test on those per-question means
(:func:`service.evaluation.compare.paired_comparison`: the sign-flip randomization test and
the percentile bootstrap over questions, seeded, so a report is reproducible). Each question
weighs once, however often it was asked.

>>> rows = group_rows({"g1": [4, 4, 4.0, 4.0, 4.0], "g2": [3, 2, 1.0, 1.0, 0.5]},
...                   {"g1": "temporal", "g2": "inference"}.get, min_n=2)
>>> [(r["group"], r["n_scored"], r["questions"], r["hit_rate"], r["few"]) for r in rows]
[('temporal', 4, 1, 1.0, True), ('inference', 2, 1, 0.5, True)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from service.evaluation.compare import paired_comparison
from service.quality.by_language import FEW, wilson

__all__ = [
    "GROUP_FIELDS",
    "LANGUAGE_FIELD",
    "REPORTED_FIELDS",
    "MAX_GROUPS",
    "group_lines",
    "group_text_lines",
    "lowest_group_text",
    "group_rows",
    "paired_by_question",
    "paired_by_question_text",
]

#: The gold-row fields live quality is broken down by.
GROUP_FIELDS = ("kind", "topic")
#: Broken down too when the gold set's rows are in two or more languages (trial 43, H1: a
#: German-only collapse of known-question hit@10, 0.92 -> 0.31, was in no windowed figure).
LANGUAGE_FIELD = "language"
#: Every field a report may hold rows of (:data:`GROUP_FIELDS`, then :data:`LANGUAGE_FIELD`).
REPORTED_FIELDS = (*GROUP_FIELDS, LANGUAGE_FIELD)
#: Groups shown apart per field (the most known events); the others are one ``rest`` row.
MAX_GROUPS = 8
#: The group of a gold row without the field, and of the others beyond ``max_groups``.
NO_VALUE, REST = "none", "rest"
#: Metrics of the paired comparison: (label, index of the sum in a paired cell's halves).
_PAIRED_METRICS = (("hit@{k}", 1), ("recall@{k}", 0), ("MRR@{k}", 2))


def group_rows(
    cells: Mapping[str, Sequence[float]],
    value_of: Callable[[str], str | None],
    *,
    min_n: int = FEW,
    max_groups: int = MAX_GROUPS,
) -> list[dict[str, Any]]:
    """Production's known-question figures per group of gold rows.

    Args:
        cells: gold id → ``[n_known, n_scored, Σrecall, Σhit, Σrr]`` (the stage's per-row
            aggregates).
        value_of: gold id → the row's group (``None`` or ``""``: :data:`NO_VALUE`).
        min_n: a group with fewer distinct scored questions is ``few``.
        max_groups: groups shown apart, >= 1; the others are summed as :data:`REST`.

    Returns:
        ``[{"group", "n_known", "n_scored", "questions", "hit_rate", "hit_low", "hit_high",
        "recall", "mrr", "few", "groups"}]`` — means over the scored events (``None`` when
        none), the hit rate's Wilson 95 % interval over the scored events (``None`` without
        one), ``questions`` the distinct gold rows scored, ``groups`` the groups a row sums
        (1, more for ``rest``); the most known events first, then by name, ``rest`` last.
    """
    sums: dict[str, list[float]] = {}
    for gold_id, cell in cells.items():
        group = value_of(gold_id) or NO_VALUE
        total = sums.setdefault(group, [0, 0, 0.0, 0.0, 0.0, 0, 1])
        for j in range(5):
            total[j] += cell[j]
        total[5] += cell[1] > 0
    order = sorted(sums.items(), key=lambda item: (-item[1][0], item[0]))
    shown, others = order[:max_groups], order[max_groups:]
    if others:
        rest = [0, 0, 0.0, 0.0, 0.0, 0, 0]
        for _, total in others:
            for j in range(6):
                rest[j] += total[j]
            rest[6] += 1
        shown.append((REST, rest))
    rows = []
    for group, (n_known, n_scored, recall, hit, rr, questions, groups) in shown:
        scored = int(n_scored)
        low, high = wilson(hit, scored) if scored else (None, None)
        rows.append({"group": group, "n_known": int(n_known), "n_scored": scored,
                     "questions": int(questions),
                     "hit_rate": hit / scored if scored else None, "hit_low": low,
                     "hit_high": high, "recall": recall / scored if scored else None,
                     "mrr": rr / scored if scored else None, "few": questions < min_n,
                     "groups": int(groups)})  # fmt: skip
    return rows


def group_lines(rows: Sequence[Mapping[str, Any]], field: str, k: Any, min_n: int = FEW
                ) -> list[str]:  # fmt: skip
    """:func:`group_rows` in words, one line per group: ``"topic temporal: 59 scored of 12
    questions; hit rate 0.424 [0.304, 0.553], recall@10 0.301, MRR 0.280"``; a ``few`` group
    says "too few" instead of its figures' interval being read as a verdict.

    >>> rows = group_rows({"g1": [6, 5, 2.0, 3.0, 1.5]}, {"g1": "temporal"}.get, min_n=10)
    >>> print(group_lines(rows, "topic", 10, 10)[0])  # doctest: +NORMALIZE_WHITESPACE
    topic temporal: 5 scored (of 6 known) on 1 question: too few (< 10 distinct questions);
    hit rate 0.600 [0.231, 0.882], recall@10 0.400, MRR 0.300
    """
    lines = []
    for r in rows:
        name = (
            f"rest ({r['groups']} groups)" if r["group"] == REST and r["groups"] > 1 else r["group"]
        )
        plural = "question" if r["questions"] == 1 else "questions"
        line = f"{field} {name}: {r['n_scored']} scored (of {r['n_known']} known) on " \
               f"{r['questions']} {plural}"  # fmt: skip
        if not r["n_scored"]:
            line += ": none scored (unanswerable for their askers, or not scored)"
        elif r["few"]:
            line += f": too few (< {min_n} distinct questions)"
        if r["n_scored"]:
            line += (f"; hit rate {r['hit_rate']:.3f} [{r['hit_low']:.3f}, {r['hit_high']:.3f}], "
                     f"recall@{k} {r['recall']:.3f}, MRR {r['mrr']:.3f}")  # fmt: skip
        lines.append(line)
    return lines


def paired_by_question(
    cells: Mapping[str, Sequence[float]],
    candidate: str,
    k: int,
    production: str = "production",
    contents: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The paired comparison of production and ``candidate`` by distinct gold question.

    Args:
        cells: gold id → ``[n, production's Σrecall, Σhit, Σrr, the candidate's Σrecall,
            Σhit, Σrr]`` over the events both were scored on (the stage's paired cells).
        candidate, production: the retrievers' labels.
        k: the cutoff the scores were taken at.
        contents: gold id → the row's content without its id
            (:func:`service.data.goldset.row_content`). The questions are resampled (and
            their means summed) in the order of (content, cell), so the interval, a
            Monte-Carlo p-value and the means' last digits are a function of the gold rows'
            content and their cells, the same after a renumbering or a reordering of the gold
            set; ``None`` (or an id missing from it): that id's content counts as ``""``, so
            without ``contents`` the order is by cell, then id.

    Returns:
        ``None`` without a question both were scored on, else ``{"questions": distinct gold
        questions, "events": events, "comparisons": [{"metric", "a", "b", "n", "mean_a",
        "mean_b", "mean_diff", "wins", "losses", "ties", "p_value", "ci_low", "ci_high",
        "confidence", "disagreement"}]}`` — ``b − a`` = candidate − production on each
        question's mean over its events; hit@k, recall@k, MRR@k in that order
        (:func:`service.evaluation.compare.paired_comparison`, per-question deltas left out).

    >>> out = paired_by_question({"q1": [2, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0],
    ...                           "q2": [1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}, "hybrid", 10)
    >>> hit = out["comparisons"][0]
    >>> out["questions"], out["events"], hit["metric"], hit["mean_diff"], hit["p_value"]
    (2, 3, 'hit@10', 0.5, 1.0)
    """
    cells = {g: cell for g, cell in cells.items() if cell[0] > 0}
    if not cells:
        return None
    contents = contents or {}

    def order(gold_id: str) -> tuple[str, tuple[float, ...]]:
        # rows alike in content and cell contribute alike: their relative order is moot
        return contents.get(gold_id, ""), tuple(float(x) for x in cells[gold_id])

    comparisons = []
    for label, j in _PAIRED_METRICS:
        metric = label.format(k=k)
        a = {g: {metric: cell[1 + j] / cell[0]} for g, cell in cells.items()}
        b = {g: {metric: cell[4 + j] / cell[0]} for g, cell in cells.items()}
        found = paired_comparison(production, a, candidate, b, metric, order=order).to_json()
        del found["deltas"]
        comparisons.append(found)
    return {"questions": len(cells), "events": int(sum(cell[0] for cell in cells.values())),
            "comparisons": comparisons}  # fmt: skip


#: What live known-question quality measures, against the gold-set run (the reports' words).
LIVE_VS_GOLD = (
    "live known-question quality measures production as it served (a degraded production "
    "scores low here) against the candidate on the same live questions; the gold-set run "
    "compares the retrievers themselves on the whole gold set"
)


def paired_by_question_text(paired: Mapping[str, Any] | None) -> str | None:
    """:func:`paired_by_question` in one sentence, ``None`` without it.

    >>> out = paired_by_question({"q1": [2, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0],
    ...                           "q2": [1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}, "hybrid", 10)
    >>> print(paired_by_question_text(out))  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    by distinct question (2 gold questions, 3 events; each question's mean once; hybrid −
    production, 95% bootstrap interval, randomization test): hit@10 +0.500 [0.000, 1.000] p
    1, recall@10 +0.500 [0.000, 1.000] p 1, MRR@10 +0.500 [0.000, 1.000] p 1
    """
    if not paired or not paired.get("comparisons"):
        return None
    first = paired["comparisons"][0]
    parts = [f"{c['metric']} {c['mean_diff']:+.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] "
             f"p {c['p_value']:.3g}" for c in paired["comparisons"]]  # fmt: skip
    notes = [c["disagreement"] for c in paired["comparisons"] if c.get("disagreement")]
    return (f"by distinct question ({paired['questions']} gold questions, {paired['events']} "
            f"events; each question's mean once; {first['b']} − {first['a']}, "
            f"{first['confidence']:.0%} bootstrap interval, randomization test): "
            + ", ".join(parts) + "".join(f" ({note})" for note in notes))  # fmt: skip


def group_text_lines(quality: Mapping[str, Any], k: Any) -> list[str]:
    """The text report's lines on production's known-question quality per gold-row field
    (``by_group`` and ``by_group_recent`` of the live-quality report), indented for the
    "live quality" block; ``[]`` without scored groups."""
    min_n = int(quality.get("by_group_min_n", FEW))
    lines: list[str] = []
    blocks = [("all time", quality.get("by_group") or {})]
    recent = quality.get("by_group_recent")
    if recent:
        span = (f"from {recent['since'][:16].replace('T', ' ')} to "
                f"{recent['until'][:16].replace('T', ' ')} UTC")  # fmt: skip
        blocks.append((f"latest {window_text(recent['window_s'])} of event time ({span})", recent))
    for when, groups in blocks:
        for field in REPORTED_FIELDS:
            rows = groups.get(field) or []
            if not any(r["n_scored"] for r in rows):
                continue
            lines.append(f"  production by gold {field}, {when} (Wilson 95 % intervals over "
                         f"events; too few: under {min_n} distinct questions scored):")  # fmt: skip
            lines += [f"    {line}" for line in group_lines(rows, field, k, min_n)]
    return lines


def window_text(seconds: float) -> str:
    """``"24 h"``, ``"30 min"``: a window's span in words.

    >>> window_text(86400.0), window_text(1800.0)
    ('24 h', '30 min')
    """
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"


def lowest_group_text(quality: Mapping[str, Any]) -> str | None:
    """The group with the lowest hit rate in the latest window (``by_group_recent``), over
    every field, among the groups not ``few`` and not ``rest``: ``"lowest in the latest 24
    h: topic temporal hit rate 0.442 [0.304, 0.589] of 43 (12 questions)"``; ``None``
    without such a group, or when every group's hit rate is the same.

    >>> recent = {"window_s": 86400.0, "topic": group_rows(
    ...     {"a": [4, 4, 4.0, 4.0, 4.0], "b": [4, 4, 1.0, 1.0, 1.0]},
    ...     {"a": "inference", "b": "temporal"}.get, min_n=1)}
    >>> print(lowest_group_text({"by_group_recent": recent}))
    lowest in the latest 24 h: topic temporal hit rate 0.250 [0.046, 0.699] of 4 (1 question)
    """
    recent = quality.get("by_group_recent") or {}
    rows = [(r["hit_rate"], field, r) for field in REPORTED_FIELDS for r in recent.get(field) or []
            if r["n_scored"] and not r["few"] and r["group"] != REST]  # fmt: skip
    if len({rate for rate, _, _ in rows}) < 2:
        return None
    rate, field, r = min(rows, key=lambda item: item[0])
    plural = "question" if r["questions"] == 1 else "questions"
    return (f"lowest in the latest {window_text(recent['window_s'])}: {field} {r['group']} hit "
            f"rate {rate:.3f} [{r['hit_low']:.3f}, {r['hit_high']:.3f}] of {r['n_scored']} "
            f"({r['questions']} {plural})")  # fmt: skip
