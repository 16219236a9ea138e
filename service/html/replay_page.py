"""``goldwatch replay --html``: the replay report (see :mod:`service.jobs.replay`) as a page.

Sections: ``ingest`` (consumed, blank lines if any, processed, dead letters), then the
analytics sections shared with the status page (:func:`analytics_sections`): ``languages``
and ``topics`` (live shares against the gold set's, over time when the report carries a
``series``), ``drift`` (each
comparison's latest test and the alarm history, with alarm marks on a time line),
``refusals`` (refusal and out-of-scope rates against their baseline windows), ``quality``
(live quality: :mod:`service.html.quality_section`), ``shadow`` and ``gold-candidates``
(these three only when the report has them).

Optional time series, read from ``analytics["series"]`` when present::

    {"bucket_s": 3600,
     "buckets": [{"start": unix_s, "languages": {lang: n}, "topics": {topic: n},
                  "answers": n, "refused": n, "known": {...}, "agreement": {...}}, ...],
     "over_time": {...}}

whose ``over_time`` (:func:`service.quality.over_time.over_time`) adds production's live
quality on known questions and each candidate's agreement over time to the ``quality`` and
``shadow`` sections (:mod:`service.html.over_time`).

The charts over time draw the buckets of :func:`service.html.time_range.plotted` (the
traffic's range: an event stamped decades away is not drawn, and a caption says so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from service.coverage import OUT_OF_SCOPE_COUNTED
from service.html import plots, time_range
from service.html.drift_section import drift_section
from service.html.extras import candidates_section, find_extra, shadow_section
from service.html.page import (
    badge,
    document,
    esc,
    figure,
    para,
    pct,
    section,
    table,
)
from service.html.quality_section import quality_section
from service.html.rates import refusals_section
from service.language.excluded import excluded_text
from service.language.quality import agreement_text
from service.shadow.stage import FEW_RESULTS
from service.topics.model import NOVEL
from service.topics.quality import DEFAULT_MIN_KAPPA, by_topic_text, kappa_text, near_chance_text
from service.topics.quality import agreement_text as topic_agreement_text
from service.topics.quality import no_gold_rows_text as topic_no_gold_rows_text

#: Categories drawn per dimension; the rest are summed under ``other``.
TOP_CATEGORIES = 12


def render_replay_html(report: Mapping[str, Any]) -> str:
    """Render :func:`service.jobs.replay.run_replay`'s report as a self-contained page.

    Args:
        report: the replay report (``analytics`` may be ``None`` when analytics are off;
            ``shadow`` and ``gold_candidates`` are read at the top level or in
            ``analytics``, and skipped when absent).

    Returns:
        The page (UTF-8 text; no script, no external resource).

    Raises:
        KeyError: a required key of the documented report shape is missing.
    """
    body: list[str] = [
        Markup("<h1>goldwatch — query-log replay</h1>"),
        *notices(report.get("notices") or ()),
        para(
            f"{report['file']}: {report['consumed']} events consumed"
            + _blank_lines(report)
            + (" in this run." if report.get("resumed") else "."),
            "meta",
        ),  # fmt: skip
        *_resumed(report.get("resumed")),
        _ingest(report),
    ]
    body += analytics_sections(report.get("analytics"), report)
    return document("goldwatch replay report", body)


def _resumed(resumed: Mapping[str, Any] | None) -> list[Markup]:
    """A replay resumed from ``--state``: what the page covers (every run on that state)."""
    if not resumed:
        return []
    return [para(f"Resumed from {resumed['state']}: the sections below cover every run on it "
                 f"({resumed['processed_in_all']} events processed in all); the ingest "
                 "counts, this run.", "meta")]  # fmt: skip


def notices(texts: Sequence[str]) -> list[Markup]:
    """What the numbers below do not cover (e.g. gold-set comparisons off), one emphasised
    paragraph each, for the top of a page; escaped."""
    return [Markup(f'<p class="notice"><strong>Note:</strong> {esc(text)}</p>') for text in texts]


def analytics_sections(
    analytics: Mapping[str, Any] | None, outer: Mapping[str, Any] | None = None
) -> list[Markup]:
    """The analytics sections, shared by the replay report and the status page.

    Args:
        analytics: :func:`service.jobs.replay.analytics_report`'s dict, or ``None``.
        outer: a containing document that may carry ``shadow`` / ``gold_candidates``.
    """
    shadow = find_extra("shadow", analytics, outer)
    candidates = find_extra("gold_candidates", analytics, outer)
    quality = find_extra("quality", analytics, outer)
    parts: list[Markup] = []
    if analytics is None:
        parts.append(section("analytics", "Analytics", para("Analytics are disabled.", "muted")))
    else:
        drift = analytics["drift"]
        # the charts over time draw the traffic's range, not an outlier's (time_range)
        shown = time_range.plotted(analytics.get("series"))
        series = (
            None
            if shown is None
            else {
                **analytics["series"],
                "buckets": shown.buckets,
                "outside_note": time_range.outside_note(shown),
            }
        )
        agreement = analytics.get("language_quality")
        live = analytics.get("languages") or {}
        min_rows = analytics.get("quality_min_class", FEW_RESULTS)
        note = agreement_text(agreement, live, min_rows) + "." if agreement is not None else None
        left_out = analytics.get("language_candidates")
        parts += [
            _shares(
                "languages",
                "Languages",
                drift["language"],
                series,
                "languages",
                drift,
                note=note,
                left_out=left_out,
                unlabelled=analytics.get("language_labels"),
                scope_on=not (analytics.get("out_of_scope") or {}).get("off"),
            ),
            _shares(
                "topics",
                "Topics",
                drift["topic"],
                series,
                "topics",
                drift,
                analytics.get("topic_labels"),
                analytics.get("novelty"),
                note=topic_note(
                    analytics.get("topic_quality"),
                    analytics.get("topic_no_gold_rows_by_language"),
                    analytics.get("quality_min_class", FEW_RESULTS),
                    analytics.get("topic_no_gold_rows_covered_now"),
                ),
                uncalibrated=(analytics.get("topic_quality") or {}).get("uncalibrated"),
                scope_on=not (analytics.get("out_of_scope") or {}).get("off"),
            ),
            drift_section(
                drift,
                series,
                {
                    "out_of_scope": (analytics.get("out_of_scope") or {}).get("off"),
                    "known_refusal": _known_off(analytics),
                    "known_miss": _known_off(analytics, "to score"),
                },
            ),
            refusals_section(analytics, series),
        ]
    over = ((analytics or {}).get("series") or {}).get("over_time")  # a replay's only
    if quality is not None:
        known_miss = ((analytics or {}).get("drift") or {}).get("known_miss") or {}
        parts.append(quality_section(quality, over, known_miss.get("state") == "drift"))
    if shadow is not None:
        min_n = (analytics or {}).get("quality_min_class", FEW_RESULTS)
        nearest = (((analytics or {}).get("drift") or {}).get("topic") or {}).get(
            "categories_are"
        )  # the novelty detector untrusted: nearest gold topics
        parts.append(shadow_section(shadow, min_n, (analytics or {}).get("topic_labels"), over,
                                    nearest))  # fmt: skip
    if candidates is not None:
        parts.append(candidates_section(candidates))
    return parts


def topic_note(quality: Mapping[str, Any] | None,
               no_gold_rows: Mapping[str, int] | None = None,
               min_rows: int = 10,
               covered_now: Mapping[str, int] | None = None) -> str | None:  # fmt: skip
    """The topics section's note: the topic assignment's held-out agreement with the gold
    labels per language (:func:`service.topics.quality.agreement_text` of
    :func:`service.runtime.reports.topic_quality_report`) and per topic
    (:func:`service.topics.quality.by_topic_text`), then the live questions given no
    topic as no gold row is written in their language (after the notice that the topics follow
    language, when they do: ``quality["language_split"]``; ``no_gold_rows``; ``covered_now``:
    those counted so earlier in a language the current gold set judges,
    :func:`service.topics.quality.no_gold_rows_text`); ``min_rows``:
    ``analytics.quality_min_class``, below which a language has too few labelled rows to
    measure the assignment in; ``None`` without a topic model."""
    if quality is None:
        return None
    supervised = bool(quality.get("supervised"))
    note = topic_agreement_text(quality.get("agreement"), supervised, min_rows)
    kappa = kappa_text(quality.get("kappa"), quality.get("chance"),
                       quality.get("min_kappa", DEFAULT_MIN_KAPPA),
                       (quality.get("agreement") or {}).get("n"))  # fmt: skip
    note += (f"; {kappa}" if kappa else "") + "."
    near = near_chance_text(quality.get("agreement"), quality.get("chance"), min_rows)
    if near and not quality.get("uncalibrated"):
        note += f" {near[0].upper()}{near[1:]}."
    if by_topic := by_topic_text(quality.get("agreement")):
        note += f" {by_topic[0].upper()}{by_topic[1:]}."
    if split := (quality.get("language_split") or {}).get("text"):
        note += f" {split[0].upper()}{split[1:]}."
    if lacking := topic_no_gold_rows_text(no_gold_rows or {}, covered_now):
        note += f" {lacking[0].upper()}{lacking[1:]}."
    return note


def share_rows(
    live: Mapping[str, int], gold: Mapping[str, int], top: int = TOP_CATEGORIES
) -> list[tuple[str, int, float, int, float]]:
    """``(category, live n, live share, gold n, gold share)`` rows, largest first.

    Categories are ranked by the larger of their two shares; past ``top`` they are summed
    into one ``other`` row. Shares are 0.0 when a side is empty.

    >>> share_rows({"en": 3, "hi": 1}, {"en": 1, "fr": 1}, top=2)
    [('en', 3, 0.75, 1, 0.5), ('fr', 0, 0.0, 1, 0.5), ('other', 1, 0.25, 0, 0.0)]
    """
    n_live, n_gold = sum(live.values()), sum(gold.values())

    def share(n: int, total: int) -> float:
        return n / total if total else 0.0

    cats = sorted(
        set(live) | set(gold),
        key=lambda c: (-max(share(live.get(c, 0), n_live), share(gold.get(c, 0), n_gold)), c),
    )
    rows = [
        (
            c,
            live.get(c, 0),
            share(live.get(c, 0), n_live),
            gold.get(c, 0),
            share(gold.get(c, 0), n_gold),
        )
        for c in cats[:top]
    ]
    rest = cats[top:]
    if rest:
        rest_live, rest_gold = sum(live.get(c, 0) for c in rest), sum(gold.get(c, 0) for c in rest)
        rows.append(
            ("other", rest_live, share(rest_live, n_live), rest_gold, share(rest_gold, n_gold))
        )
    return rows


def _blank_lines(report: Mapping[str, Any]) -> str:
    """``", 2 blank lines (no data)"`` when the replayed log had blank lines, else ``""``."""
    n = int(report.get("blank_lines") or 0)
    return f", {n} blank line{'' if n == 1 else 's'} (no data)" if n else ""


def _ingest(report: Mapping[str, Any]) -> Markup:
    rows = [
        ["consumed", report["consumed"]],
        ["processed", report["processed"]],
        ["duplicates", report["duplicates"]],
        ["dead-lettered", report["dead_lettered_total"]],
        ["batches", report.get("batches", 0)],
    ]
    if report.get("blank_lines"):  # lines read = consumed + blank lines
        rows.insert(1, ["blank lines (no data)", report["blank_lines"]])
    rows += [
        [f"dead-lettered: {reason}", n] for reason, n in sorted(report["dead_lettered"].items())
    ]
    dropped = report.get("dropped") or {}
    rows += [[f"dropped: {reason}", n] for reason, n in sorted(dict(dropped).items())]
    parts: list[str] = [table(["events", "n"], rows)]
    if report["dead_lettered_total"]:
        parts.append(para(f"Dead letters (with their reasons) in {report['dlq_path']}.", "muted"))
    scrubbed = (report.get("analytics") or {}).get("pii_scrubbed") or {}
    if any(scrubbed.values()):
        parts.append(
            table(["personal data scrubbed", "n"], [[k, v] for k, v in scrubbed.items() if v])
        )
    return section("ingest", "Ingest", *parts)


def _shares(
    anchor: str,
    title: str,
    dim: Mapping[str, Any],
    series: Mapping[str, Any] | None,
    series_key: str,
    drift: Mapping[str, Any],
    labels: Mapping[str, str] | None = None,
    novelty: Mapping[str, Any] | None = None,
    note: str | None = None,
    left_out: Mapping[str, Any] | None = None,
    unlabelled: Mapping[str, Any] | None = None,
    uncalibrated: str | None = None,
    scope_on: bool = True,
) -> Markup:
    """One dimension's shares; ``labels`` names categories (a topic's top terms);
    ``novelty`` (topics: :func:`service.jobs.replay.novelty_report`) labels the ``novel``
    share uncalibrated, or says why novelty is off; ``note`` (languages: the language id's
    agreement with the gold set's labels) is shown under the drift state, and so is
    ``left_out`` (languages: :func:`service.language.excluded.excluded_report`, the
    questions reading as a language the candidates leave out; a warning when it calls the
    language figures unreliable), and ``unlabelled`` (languages:
    :func:`service.runtime.reports.language_labels_report`; a warning naming the live
    languages /metrics exports as ``other``, with the fix, and a mark on their coverage
    gaps), and ``uncalibrated`` (topics: why the assignment is too poor to act on,
    :func:`service.runtime.reports.topic_quality_report`; a warning that the shares are the
    model's reading). Without gold counts (no gold set) only the live shares are shown.
    ``scope_on``: the out-of-scope detector is on, so the coverage gaps' rule says they
    count the questions it judges out of scope (the document shares do not)."""
    rows = share_rows(dim.get("live_counts", {}), dim.get("gold_counts", {}))
    names = dict(labels or {})
    if not rows:
        return section(anchor, title, para("No events yet.", "muted"))
    name = anchor.rstrip("s")
    parts: list[str] = [Markup(f"<p>Drift state: {badge(dim['state'])}</p>")]
    if left_out is not None and left_out.get("unreliable"):
        text = str(left_out["unreliable"])
        parts.append(para(f"These language shares are UNRELIABLE and not facts: "
                          f"{text.removeprefix('the language figures are unreliable: ')}.",
                          "warn"))  # fmt: skip
    if unlabelled and unlabelled.get("notice"):
        parts.append(para(f"{unlabelled['notice']}.", "warn"))
    if uncalibrated:
        parts.append(para(f"These shares are the topic model's reading, UNCALIBRATED and not "
                          f"facts: {uncalibrated}. The topic comparisons (against the gold set "
                          "and earlier traffic) and the topic coverage gaps raise no alarm.",
                          "warn"))  # fmt: skip
    if dim.get("categories_are"):  # novelty uncalibrated: topics are nearest topics
        parts.append(para(f"These shares are by NEAREST gold topic, not facts: "
                          f"{dim['categories_are']}. The topic comparisons still alarm on a "
                          "change of this distribution (a change of the traffic); a rising "
                          "topic is the nearest one to what rose.", "warn"))  # fmt: skip
    if note:
        parts.append(para(note, "muted"))
    if left_out is not None and not left_out.get("unreliable"):
        parts.append(para(f"{excluded_text(left_out)}.", "muted"))
    novelty = novelty or {}
    if novelty.get("uncalibrated") and dim.get("categories_are"):
        # below its floor the detector labels nothing (trial 49 L4): say why it is quiet
        on = (novelty.get("quality") or {}).get("measured_on")
        parts.append(para(f"No question is labelled novel: the novelty detector is "
                          f"uncalibrated ({novelty['uncalibrated']}"
                          f"{f'; measured on {on}' if on else ''}).", "muted"))  # fmt: skip
    elif novelty.get("uncalibrated"):
        names[NOVEL] = f"{names.get(NOVEL, NOVEL)} (uncalibrated)"
        on = (novelty.get("quality") or {}).get("measured_on")
        parts.append(para(f"The novel share is UNCALIBRATED and not facts "
                          f"({novelty['uncalibrated']}{f'; measured on {on}' if on else ''}); "
                          f"a rise of it alone raises no alarm.", "warn"))  # fmt: skip
    elif novelty.get("off"):
        parts.append(para(f"No question is called novel: {novelty['off']}.", "muted"))
    elif (quality := novelty.get("quality") or {}).get("auc") is not None:
        low, high = quality.get("auc_low"), quality.get("auc_high")
        interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
        parts.append(para(f"The novel share comes from a detector of ROC AUC "
                          f"{quality['auc']:.3f}{interval} ({quality.get('method') or 'measured'}"
                          f" on the gold set).", "muted"))  # fmt: skip
    has_gold = bool(dim.get("gold_counts"))
    # (a widening, an open alarm naming one more category, declares no drift: as on the
    # drift section's time line)
    alarms = [
        a["timestamp"]
        for a in drift.get("alarms", ())
        if a["dimension"] == name and a["state"] == "drift" and not a.get("widened")
    ]
    buckets = (series or {}).get("buckets") or []
    if buckets:
        parts.append(_shares_over_time(title, buckets, series_key, rows, alarms, names,
                                       (series or {}).get("outside_note", ""),
                                       (series or {}).get("bucket_s")))  # fmt: skip
    bars = {"live traffic (all time)": [r[2] for r in rows]}
    if has_gold:
        bars["gold set"] = [r[4] for r in rows]
    svg = plots.grouped_bars(
        [names.get(r[0], r[0]) for r in rows],
        bars,
        xlabel="share",
        title=f"{title}: live share against the gold set" if has_gold else f"{title}: live share",
        colours={"gold set": plots.GOLD_COLOUR},
    )
    caption = ("Share of live questions (all time) and of gold-set questions per category."
               if has_gold else "Share of live questions (all time) per category.")  # fmt: skip
    parts.append(figure(svg, caption))
    if has_gold and anchor == "topics":
        parts.append(para(GOLD_TOPIC_COUNTS, "muted"))
    if has_gold:
        parts.append(
            table(
                [name, "live n", "live share", "gold n", "gold share", "live − gold"],
                [
                    [names.get(c, c), ln, pct(ls), gn, pct(gs), f"{ls - gs:+.1%}"]
                    for c, ln, ls, gn, gs in rows
                ],  # fmt: skip
            )
        )
    else:
        live_rows = [[names.get(c, c), ln, pct(ls)] for c, ln, ls, _, _ in rows]
        parts.append(table([name, "live n", "live share"], live_rows))
    gaps = dim.get("coverage_gaps") or []
    left_out = dim.get("coverage_gaps_left_out") or {}
    if gaps or left_out:
        parts.append(Markup(f"<h3>{esc(UNDER_COVERED_TITLE)}</h3>"))
        scope = f" {OUT_OF_SCOPE_COUNTED[0].upper()}{OUT_OF_SCOPE_COUNTED[1:]}." if scope_on else ""
        parts.append(para(UNDER_COVERED_RULE + scope, "muted"))
    if gaps:
        parts.append(table(
            [name, "live share", "gold share", "live ÷ gold", "live − gold",
             "live − gold, 95 % interval"],
            [[names.get(g["category"], g["category"]) + _on_metrics(g["category"], unlabelled),
              pct(g["live_share"]),
              pct(g["gold_share"]), _ratio(g["ratio"]), f"{g['difference']:+.1%}",
              f"{g['ci_low']:+.1%} … {g['ci_high']:+.1%}"] for g in gaps],
        ))  # fmt: skip
    elif left_out:
        parts.append(para("None.", "muted"))
    parts += [para(f"Left out: {c} ({why}); its share is not a fact.", "warn")
              for c, why in sorted(left_out.items())]  # fmt: skip
    return section(anchor, title, *parts)


def _on_metrics(category: str, unlabelled: Mapping[str, Any] | None) -> str:
    """``' (language="other" on /metrics)'`` for a language of ``unlabelled``'s ``unlabelled``
    (:func:`service.runtime.reports.language_labels_report`), else ``""``."""
    named = {u["language"] for u in (unlabelled or {}).get("unlabelled") or ()}
    return ' (language="other" on /metrics)' if category in named else ""


#: How the topics' gold column is counted (:meth:`service.topics.model.TopicModel.gold_counts`).
GOLD_TOPIC_COUNTS = (
    "Gold n counts the gold set's questions the way live questions are counted, not by their "
    "topic labels: each row gets the topic the model assigns it (a labelled row: the model "
    "fitted without it, cross-validated; rows of small labels: the model's own prediction) and "
    "is novel when far from the other gold rows (only while the novelty detector is "
    "calibrated, as live questions). Both columns thus carry the same assignment "
    "errors, and a drift alarm compares like with like."
)


#: The drift view's list of under-covered categories (harvest's ``coverage_gap`` rule,
#: :func:`service.coverage.gap_lower_bound`, over all live traffic rather than the last
#: ``harvest.gap_window`` events): heading and rule, as shown.
UNDER_COVERED_TITLE = "Under-covered by the gold set (drift view's coverage gaps)"
UNDER_COVERED_RULE = (
    "A category is listed when its live share is at least twice its gold-set share and the "
    "live share's 95 % lower bound (Wilson) minus the gold share is at least 2 points, over "
    "all live traffic so far; the gold share is taken as exact, since the gold set is the set "
    "being completed (goldwatch_coverage_gap_ratio exports that lower bound). Harvesting's "
    "coverage_gap reason uses the same rule over the last harvest.gap_window events, against "
    "harvest.min_gap. An undetermined language or topic (und) is never listed."
)


def _ratio(value: Any) -> str:
    """``live ÷ gold`` as ``"10.2×"``; ``"new"`` when the gold set lacks the category
    (``inf``, or ``None`` once made JSON-safe)."""
    if value is None or value == float("inf"):
        return "new (not in the gold set)"
    return f"{float(value):.1f}×"


def _shares_over_time(
    title: str,
    buckets: Sequence[Mapping[str, Any]],
    key: str,
    rows: Sequence[tuple[str, int, float, int, float]],
    alarms: Sequence[float],
    names: Mapping[str, str] | None = None,
    outside: str = "",
    bucket_s: float | None = None,
) -> Markup:
    cats = [r[0] for r in rows if r[0] != "other"][:6]
    names = names or {}
    times = [float(b["start"]) for b in buckets]
    shares: dict[str, list[float]] = {c: [] for c in cats}
    for bucket in buckets:
        counts = bucket.get(key) or {}
        total = sum(counts.values())
        for c in cats:
            shares[c].append(counts.get(c, 0) / total if total else 0.0)
    gold = {names.get(r[0], r[0]): r[4] for r in rows if r[3]}
    shares = {names.get(c, c): v for c, v in shares.items()}
    svg = plots.shares_over_time(
        times,
        shares,
        title=f"{title}: share over time",
        gold=gold,
        alarms=alarms,
        bucket_s=bucket_s,
    )
    dashed = "dashed: the gold set's share; " if gold else ""
    return figure(
        svg,
        f"Solid: live share per time bucket; {dashed}red lines: drift "
        f"declared.{' ' + outside if outside else ''}",
    )


def _known_off(analytics: Mapping[str, Any], what: str = "to refuse") -> str | None:
    """Why the ``known_refusal`` (or, ``what`` "to score", ``known_miss``) drift dimension
    is off (no live-quality stage: no gold set, so no known question to refuse or score), or
    ``None``: the analytics' refusals carry ``known_over_refusal`` whenever there is one."""
    if "known_over_refusal" in (analytics.get("refusals") or {}):
        return None
    return f"no gold set: no known question {what}"
