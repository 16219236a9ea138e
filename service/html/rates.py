"""The ``refusals`` section: refusal and out-of-scope rates against their baseline windows.

Reads :func:`service.jobs.replay.analytics_report`'s ``refusals``, ``out_of_scope`` and the
``refusal`` / ``out_of_scope`` entries of its drift report; with a ``series`` (see
:mod:`service.html.replay_page`) it also draws the refusal rate per time bucket.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from service.evaluation.detector_quality import (
    apart_text,
    operating_point_summary,
    over_refusals_explained_text,
    under_refusals_explained_text,
)
from service.html import plots
from service.html.page import badge, esc, figure, num, para, pct, section, table
from service.language.gold import gold_keys_by_label
from service.refusals.languages import language_rows_html
from service.refusals.recall import recall_lines
from service.refusals.scope import (
    calibration_limit,
    live_before_by_language,
    rate_interval,
    support_by_language_text,
    unstable_text,
)

RATES = (
    ("refusal", "refusals", "rate", "refused answers"),
    ("out_of_scope", "out_of_scope", "share", "out-of-scope questions"),
)


#: Why a rate has no value (its chart draws no bar, its row says it): nothing counted yet.
NO_RATE_YET = {"refusal": "no answers yet", "out_of_scope": "no question scored yet"}


def refusals_section(analytics: Mapping[str, Any], series: Mapping[str, Any] | None) -> Markup:
    """Build the section.

    Args:
        analytics: the analytics report (keys ``refusals``, ``out_of_scope``, ``drift``).
        series: the optional time series (``buckets`` with ``answers`` and ``refused``).
    """
    drift = analytics["drift"]
    labels: list[str] = []
    overall: list[float | None] = []
    baseline, current, rows = [], [], []
    notes: dict[str, str] = {}  # chart label → why it has no bar
    stable_note = ""  # (said when the out-of-scope windows count the stable verdicts only)
    off = analytics["out_of_scope"].get("off")
    shown_rates = [rates for rates in RATES if not (rates[0] == "out_of_scope" and off)]
    for dim, key, field, label in shown_rates:  # (no detector: no rate, said below, with why)
        test = drift[dim]["comparisons"].get("baseline") or {}
        rate = analytics[key][field]
        mark = " (uncalibrated)" if analytics[key].get("uncalibrated") else ""
        unstable = analytics[key].get("unstable") if dim == "out_of_scope" else None
        bar = label
        shown = pct(rate)
        if unstable:  # the windows count the stable verdicts only: both shares, named
            bar = f"{label} (stable verdicts)"
            label, rate, every = _stable_row(label, rate, unstable, mark)
            rows.append(every)
            stable_note = (" The out-of-scope windows and bars count only the stable "
                           "verdicts (those the off-corpus cutoff's range does not move); "
                           "the share of every verdict is in the table.")  # fmt: skip
            shown = pct(rate)
            if rate is None:  # no share under the range now in use: said, not a 0 bar
                notes[bar + mark] = reason = no_stable_share(unstable)
                shown = f"– ({reason})"
        if rate is None and bar + mark not in notes:  # nothing counted yet: said, no 0 bar
            notes[bar + mark] = NO_RATE_YET[dim]
            shown = f"– ({NO_RATE_YET[dim]})"
        label += mark
        labels.append(bar + mark)
        overall.append(rate if bar + mark in notes else rate or 0.0)
        baseline.append(test.get("rate_reference"))
        current.append(test.get("rate_current"))
        change = (
            f"{test['ci_low']:+.1%} … {test['ci_high']:+.1%}"
            if test.get("ci_low") is not None
            else "–"
        )
        rows.append(
            [
                label,
                shown,
                pct(test.get("rate_reference")),
                pct(test.get("rate_current")),
                change,
                test.get("p_value"),
                badge(drift[dim]["state"]),
            ]
        )
    parts: list[str] = []
    buckets = (series or {}).get("buckets") or []
    if buckets:
        parts.append(_over_time(buckets, baseline[0], drift,
                                (series or {}).get("outside_note", ""),
                                (series or {}).get("bucket_s")))  # fmt: skip
    # a window never tested has no rate: no bars and no legend entry for it (not zeros)
    windows = {"baseline window": baseline, "current window": current}
    bars: dict[str, list[float | None]] = {"all events": overall}
    bars |= {name: [None if v is None and at in notes else v or 0.0
                    for at, v in zip(labels, values, strict=True)]
             for name, values in windows.items() if any(v is not None for v in values)}  # fmt: skip
    svg = plots.grouped_bars(
        labels,
        bars,
        title="Refusal rate" if off else "Refusal and out-of-scope rates",
        xlabel="rate",
        notes=notes,
    )
    caption = ("The current window is tested against the baseline window of earlier traffic "
               f"(two-proportion test).{stable_note}")  # fmt: skip
    if len(bars) == 1:  # no window tested yet: say why instead of drawing empty bars
        why = (drift["refusal"]["comparisons"].get("baseline") or {}).get("insufficient")
        caption += f" No window has been tested yet{f': {why}' if why else ''}."
    if all(at in notes and NO_RATE_YET.get(dim) == notes[at]
           for at, (dim, *_) in zip(labels, shown_rates, strict=True)):  # fmt: skip
        # session 41: an empty log drew an axis with an invisible 0 bar and a legend
        parts.append(para(f"No chart yet: {'; '.join(notes[at] for at in labels)}.", "muted"))
    else:
        parts.append(figure(svg, caption))
    parts.append(
        table(
            [
                "rate",
                "all events",
                "baseline window",
                "current window",
                "change (interval)",
                "p",
                "state",
            ],
            rows,
        )
    )
    recall = analytics["refusals"].get("text_recall") or {}
    lower = " (a lower bound)" if recall.get("lower_bound") else ""
    if recall.get("lower_bound"):  # the text reader measured to miss refusals: 4 short lines
        said = [esc(line[0].upper() + line[1:] + ".") for line in recall_lines(recall)]
        parts.append(Markup(f'<p class="warn">{Markup("<br>").join(said)}</p>'))
    parts.append(para(f"Refused answers{lower}: {analytics['refusals']['method']}."))
    parts += _by_language(analytics)
    parts.append(_both_directions(analytics))
    return section("refusals", "Refusals", *parts)


def _stable_row(
    label: str, share: float | None, unstable: Mapping[str, Any], mark: str
) -> tuple[str, float | None, list[object]]:
    """With the off-corpus cutoff's range (``unstable``: the report's
    ``out_of_scope.unstable``), the out-of-scope drift windows count the stable verdicts
    only, and the share of every verdict is no figure to set beside them (session 39): the
    table row of every verdict (``share``, no window of its own) and the label and share of
    the stable verdicts (``stable_share``, under the range now in use) for the windows' row
    and the chart, ``(label, share, row)``.

    >>> label, share, row = _stable_row("out-of-scope questions", 0.2,
    ...     {"stable_share": 0.12, "since_scored": 0}, "")
    >>> print(label, share)
    out-of-scope questions, stable verdicts only (the off-corpus cutoff's range moves none) 0.12
    >>> print(row[0], "|", row[1], "|", row[2])
    out-of-scope questions, every verdict | 20.0% | – (the windows count the stable verdicts only)
    """
    since = " since the range now in use" if unstable.get("since_scored") else ""
    every: list[object] = [f"{label}, every verdict{mark}", pct(share),
                           "– (the windows count the stable verdicts only)", "–", "–", "–",
                           "–"]  # fmt: skip
    stable = (f"{label}, stable verdicts only (the off-corpus cutoff's range moves none)"
              f"{since}")  # fmt: skip
    return stable, unstable.get("stable_share"), every


def no_stable_share(unstable: Mapping[str, Any]) -> str:
    """Why the out-of-scope share of the stable verdicts has no value (``unstable``: the
    report's ``out_of_scope.unstable``, whose ``stable_share`` is ``None``): no batch counted
    under the off-corpus cutoff's range now in use (``since`` unset: at the first start, or
    after a refresh or restart moved the range), none of its questions scored, or every
    verdict under it one the range moves.

    >>> no_stable_share({"since": None, "scored": 0})
    'no batch yet under this range'
    >>> no_stable_share({"since": "2026-12-03T01:00:00", "scored": 4, "out": 1, "in": 3})
    'no stable verdict yet under this range (all 4 scored lie in it)'
    """
    if not unstable.get("since"):
        return "no batch yet under this range"
    scored = int(unstable.get("scored") or 0)
    if not scored:
        return "no question scored yet under this range"
    return f"no stable verdict yet under this range (all {scored} scored lie in it)"


def _by_language(analytics: Mapping[str, Any]) -> list[Markup]:
    """The refusal rate per language (the question's language label; most answers first,
    Wilson 95 % intervals, rows of fewer than ``quality_min_class`` answers marked few:
    :func:`~service.quality.by_language.rate_rows`) and the refusal rate of known answerable
    gold questions (each an over-refusal, no detector needed), when there are some."""
    refusals = analytics["refusals"]
    parts: list[Markup] = []
    rows = refusals.get("by_language") or []
    if rows:
        min_n = analytics.get("quality_min_class", 10)
        parts.append(table(
            ["language", "answers", "refused", "rate", "95 % interval (Wilson)", "note"],
            [[r["language"], r["n"], r["x"], pct(r["rate"]),
              f"{pct(r['low'])} … {pct(r['high'])}",
              f"few (fewer than {min_n} answers)" if r["few"] else ""] for r in rows],
        ))  # fmt: skip
        covered = refusals.get("by_language_answers")
        if covered is not None and covered < refusals.get("answers", 0):
            parts.append(para(f"The languages cover {covered} of {refusals['answers']} "
                              "answers: those counted before refusals were counted per "
                              "language are in none.", "muted"))  # fmt: skip
    against = refusals.get("against_flag_text")
    if against:
        parts.append(para(against[0].upper() + against[1:] + "."))
    known = refusals.get("known_over_refusal") or {}
    if known.get("text"):
        parts.append(para(known["text"][0].upper() + known["text"][1:] + "."))
    return parts


def _quality_cell(quality: Mapping[str, Any] | None) -> str:
    """``"0.912 (0.880 … 0.941) on 12 unanswerable / 48 answerable gold questions"``: a
    detector's ROC AUC, its bootstrap interval and what it is measured on."""
    if not quality or quality.get("auc") is None:
        return "not measured"
    low, high = quality.get("auc_low"), quality.get("auc_high")
    interval = f" ({low:.3f} … {high:.3f})" if low is not None and high is not None else ""
    on = f" on {quality['measured_on']}" if quality.get("measured_on") else ""
    return f"{quality['auc']:.3f}{interval}{on}"


def _operating_point_cell(quality: Mapping[str, Any] | None) -> str | None:
    """``"answerable kept in scope 40 of 42 (TPR 0.952); unanswerable judged in scope 47 of
    60 (FPR 0.783); balanced accuracy 0.584"``: the out-of-scope detector at its threshold
    (:func:`~service.evaluation.detector_quality.operating_point_summary`), or ``None`` when
    it reports none."""
    if not quality or quality.get("balanced_accuracy") is None:
        return None
    return operating_point_summary(quality, "out_of_scope")


def _both_directions(analytics: Mapping[str, Any]) -> Markup:
    refusals, scope = analytics["refusals"], analytics["out_of_scope"]
    rows: list[list[object]]
    recall = refusals.get("text_recall") or {}
    refused: list[list[object]] = [["refused", refusals["refused"]]]
    if recall.get("lower_bound"):  # detected refusals: a lower bound (text_recall)
        refused = [["refused (detected: a lower bound)", refusals["refused"]]]
        if estimate := recall.get("estimate"):
            refused.append(["refused, ESTIMATED (not a count; 95 % jointly)",
                            f"{estimate['refused']:.0f} ({estimate['low']:.0f} … "
                            f"{estimate['high']:.0f})"])  # fmt: skip
    if scope.get("off"):  # a detector that is off has no counts, not zeros
        rows = [
            ["answers seen", refusals["answers"]],
            *refused,
            ["out-of-scope, over- and under-refusals", f"off: {scope['off']}"],
        ]
        note = para("Over- and under-refusals are judged with the out-of-scope detector, "
                    "which is off: they are not measured (not zero).", "muted")  # fmt: skip
        return Markup(f"{table(['refusals in both directions', 'value'], rows)}{note}")
    why = scope.get("uncalibrated")
    mark = " (uncalibrated)" if why else ""
    rows = [
        ["answers seen", refusals["answers"]],
        *refused,
        ["questions scored for scope", scope["scored"]],
        [f"judged out of scope{mark}", scope["out_of_scope"]],
    ]
    lacking = scope.get("no_gold_rows_by_language") or {}
    if lacking:  # given no verdict: not in the scored count above
        rows.append(["not judged: no gold row in their language",
                     f"{sum(lacking.values())} ("
                     + ", ".join(f"{k} {n}" for k, n in lacking.items()) + ")"])  # fmt: skip
    covered = scope.get("no_gold_rows_covered_now") or {}
    if covered:  # counted by an earlier gold set or rule: the current one judges them
        rows.append(["not judged earlier, when the gold set had no row in their language "
                     "(it has now: judged from then on)",
                     f"{sum(covered.values())} ("
                     + ", ".join(f"{k} {n}" for k, n in covered.items()) + ")"])  # fmt: skip
    support = scope.get("support")
    but = (
        " but the lowest the cutoff leaves out"
        if support and float(support.get("trim") or 0.0) > 0
        else ""
    )  # (robust_cutoff)
    if support and support.get("by_language"):  # per language: one row each, below
        rows.append([f"of which farther from the corpus than any answerable gold question of "
                     f"their script's measured languages{but}{mark}",
                     scope.get("off_corpus", 0)])  # fmt: skip
    elif support:  # the embedding detector's off-corpus rule (SupportCheck)
        rows += [
            [f"of which farther from the corpus than any answerable gold question{but}{mark}",
             scope.get("off_corpus", 0)],
            ["off-corpus rule: held-out false-positive rate on gold answerables",
             f"{support['held_out_fpr']:.1%} of {support['n_answerable']}"
             f"{rate_interval(float(support['held_out_fpr']), int(support['n_answerable']))} "
             f"(support similarity below {support['cutoff']:.3f})"],
        ]  # fmt: skip
    if support:
        off_by = scope.get("off_corpus_by_language") or {}
        unjudged = scope.get("not_judged_by_language") or {}
        # one wording with the text report: the held-out rate of a measured language, the
        # leave-one-out share of a language with too few rows, or why neither was measured
        texts = support_by_language_text(support)
        for (key, _row), line in zip(sorted((support.get("by_language") or {}).items()), texts,
                                     strict=False):  # fmt: skip
            rule = line.removeprefix(f"{key}: ")
            rows.append([f"off-corpus rule, language {key}: off-corpus {off_by.get(key, 0)}, "
                         f"not judged {unjudged.get(key, 0)}{mark}", rule])  # fmt: skip
        if support.get("by_language"):
            limit = support_by_language_text(support)[-1]
            rows.append(["off-corpus rule limit", limit.removeprefix("off-corpus rule limit: ")])
        if unstable := unstable_text(scope):  # verdicts the cutoff's range moves
            rows.append([f"verdicts the off-corpus cutoff's range moves{mark}", unstable])
        if (before := live_before_by_language(scope)) > 0:  # totals kept before the counts
            rows.append([f"off-corpus, counted before the counts by language were kept{mark}",
                         before])  # fmt: skip
        # a live language the gold rows judge under another key (rows tagged en-Latn judge
        # the live en questions: service.language.gold) is no language the gold set lacks
        gold_rows = support.get("by_language") or {}
        judged_by = gold_keys_by_label(gold_rows)
        live = sorted(set(off_by) | set(unjudged))
        for key in (k for k in live if k in judged_by and k not in gold_rows):
            rows.append([f"off-corpus rule, live language {key} (judged by the gold rows of "
                         f"{', '.join(judged_by[key])}): off-corpus {off_by.get(key, 0)}, not "
                         f"judged {unjudged.get(key, 0)}{mark}",
                         "their script's cutoff, as those rows'"])  # fmt: skip
        others = [k for k in live if k not in gold_rows and k not in judged_by]
        if others:
            rows.append([f"off-corpus rule, languages not in the gold set{mark}",
                         "; ".join(f"{k}: off-corpus {off_by.get(k, 0)}, not judged "
                                   f"{unjudged.get(k, 0)}" for k in others)])  # fmt: skip
    rows += [
        [f"over-refusals (refused while in scope){mark}", scope["over_refusals"]],
        [f"under-refusals (answered while out of scope){mark}", scope["under_refusals"]],
    ]
    explained = over_refusals_explained_text(scope).strip().removeprefix("(").removesuffix(")")
    if explained:  # what the detector's own error on unanswerable questions accounts for
        rows.append(["over-refusals the detector's own error explains", explained])
    explained = under_refusals_explained_text(scope).strip().removeprefix("(").removesuffix(")")
    if explained:  # what the detector's own error on answerable questions accounts for
        rows.append(["under-refusals the detector's own error explains", explained])
    rows += family_rows_html(scope.get("by_family"), mark)
    rows += language_rows_html(scope.get("verdicts_by_language"), mark)
    rows += [
        ["out-of-scope detector ROC AUC (95 % interval)", _quality_cell(scope.get("quality"))],
    ]
    point = _operating_point_cell(scope.get("quality"))
    if point is not None:  # the rates behind the counts above, next to the AUC
        rows.append(["out-of-scope detector at its threshold", point])
    versions = scope.get("gold_set_versions") or []
    if len(versions) > 1:  # cumulative counts judged by detectors of several gold sets
        label = ("counts cumulative over gold-set versions (the detector refitted on each; "
                 "its AUC and rates are the current one's)")  # fmt: skip
        rows.append([label, " → ".join(versions)])
    calibration = scope.get("calibration") or {}
    for key in ("threshold", "retriever"):  # its AUC and rates are the detector's, above
        if calibration.get(key) is not None:
            value = calibration[key]
            rows.append([f"scope calibration: {key}", num(value) if key != "retriever" else value])
    if (scope.get("quality") or {}).get("method"):  # how it was fitted: which rows hid which
        rows.append(["scope calibration: fit", scope["quality"]["method"]])
    measured = (" The detector's ROC AUC and its rates at the threshold are measured on the "
                "gold set it was calibrated on (cross-validated scores); its counts are facts "
                "only when both reach their floors and each class holds at least "
                f"{analytics.get('quality_min_class', 0)} gold questions. Its limit: "
                f"{calibration_limit(scope.get('quality'))}."
                + (f" The {apart}." if (apart := apart_text(scope.get("quality"))) else "")
                if scope.get("quality") else "")  # fmt: skip
    note = para(
        "Refusals are judged in both directions: out-of-scope questions should be "
        f"refused, in-scope questions answered.{measured}",
        "muted",
    )
    warning = Markup("")
    if why:
        warning = para(
            f"Out-of-scope, over- and under-refusal counts are UNCALIBRATED and not facts "
            f"({why}); "
            + (
                "the out-of-scope drift raises no alarm."
                if (scope.get("quality") or {}).get("uncalibrated") or not scope.get("quality")
                # (its out-of-scope drift windows start afresh at a refit: no alarm before
                # its baseline has warmed up again, as the accept's warning says; RC NIT 1)
                else "the detector now counting is calibrated: its out-of-scope drift may "
                "alarm once its baseline has warmed up."
            )  # fmt: skip
            + (
                f" To calibrate it: {advice}."
                if (advice := (scope.get("quality") or {}).get("to_calibrate"))
                else ""
            ),
            "warn",
        )
    return Markup(f"{warning}{table(['refusals in both directions', 'value'], rows)}{note}")


def _over_time(buckets: Any, baseline: float | None, drift: Mapping[str, Any],
               outside: str = "", bucket_s: float | None = None) -> Markup:  # fmt: skip
    times, rates = [], []
    for bucket in buckets:
        answers = bucket.get("answers") or 0
        times.append(float(bucket["start"]))
        rates.append((bucket.get("refused") or 0) / answers if answers else 0.0)
    alarms = [
        a["timestamp"]
        for a in drift.get("alarms", ())
        if a["dimension"] == "refusal" and a["state"] == "drift"
    ]
    svg = plots.shares_over_time(
        times,
        {"refusal rate": rates},
        title="Refusal rate over time",
        gold=None if baseline is None else {"refusal rate": baseline},
        alarms=alarms,
        bucket_s=bucket_s,
    )
    dashed = "" if baseline is None else "dashed: the baseline window's rate; "
    return figure(
        svg,
        f"Solid: refusal rate per time bucket; {dashed}red lines: drift "
        f"declared.{' ' + outside if outside else ''}",
    )


def family_rows_html(families: Mapping[str, Any] | None, mark: str = "") -> list[list[Any]]:
    """The out-of-scope table's rows of ``out_of_scope.by_family``
    (:func:`~service.runtime.reports.families_report`): the families whose verdicts the
    calibration did not measure (the warning, and their under-refusals and
    ``answered_out_of_scope`` events), then the largest families and the flagged ones
    (:func:`~service.refusals.families.shown_families`) with their verdicts and gold rows, what the
    counts cover, and the rule; ``[]`` without families.

    >>> for label, value in family_rows_html({"text": "W", "rule": "R", "min_events": 5,
    ...         "rows": [{"family": "news", "scored": 10, "out_of_scope": 1, "share": 0.1,
    ...                   "answerable_gold": 26, "kept_held_out": 25, "unmeasured": False}]}):
    ...     print(f"{label} | {value}")
    NOT MEASURED | W
    out of scope, family news | 1 of 10 (10.0%); 26 answerable gold rows, 25 kept in scope held out
    out-of-scope families: rule | R
    """
    from service.refusals.families import shown_families

    if not families:
        return []
    rows: list[list[Any]] = []
    if families.get("text"):
        rows.append(["NOT MEASURED", families["text"]])
    for key, label in (
        ("under_refusals_text", "under-refusals in unmeasured families"),
        ("harvest_text", "answered_out_of_scope events in them"),
    ):
        if families.get(key):
            rows.append([label, families[key]])
    shown, more = shown_families(families.get("rows") or [])
    min_events = int(families.get("min_events", 0))
    for row in shown:
        share = "-" if row["share"] is None else f"{row['share']:.1%}"
        flag = "; not measured" if row["unmeasured"] else ""
        if row.get("too_few"):
            flag = f"; too few events to judge (n < {min_events})"
        rows.append([f"out of scope, family {row['family']}{mark}",
                     f"{row['out_of_scope']:,} of {row['scored']:,} ({share}); "
                     f"{row['answerable_gold']} answerable gold rows, {row['kept_held_out']} "
                     f"kept in scope held out{flag}"])  # fmt: skip
    if more:
        rows.append(["out of scope, other families", f"{more} more (JSON out_of_scope.by_family)"])
    if families.get("since_text"):
        rows.append(["out-of-scope family counts", families["since_text"]])
    rows.append(["out-of-scope families: rule", families["rule"]])
    return rows
