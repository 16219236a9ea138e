"""The ``drift`` section: each comparison's latest test and the alarm history, with the
alarms marked on a time line.

Reads the ``drift`` block of :func:`service.jobs.replay.analytics_report` (the shape of
:meth:`service.drift.stage.DriftStage.report`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from service.drift.stage import (
    adjusted_note,
    alarm_kind,
    ended_untested,
    language_moves,
    rate_moves,
    restart_text,
    silenced_verb,
    untested_text,
)
from service.html import plots
from service.html.page import badge, esc, figure, num, para, pct, section, table, when
from service.refusals.scope import windows_count

DIMENSIONS = (
    "language",
    "topic",
    "refusal",
    "out_of_scope",
    "known_refusal",
    "known_miss",
    "terms",
)
#: The dimensions a report may leave out (``terms``: off, or a report from before it;
#: ``known_refusal``: no live-quality stage, or a report from before session 37;
#: ``known_miss``: the same, or a report from before session 38).
OPTIONAL = ("known_refusal", "known_miss", "terms")
#: Said under the table when a row's drift is held by hysteresis.
HELD_NOTE = (
    "Held by hysteresis: this test alone would not raise an alarm (its effect is below the "
    "alarm threshold, or its p-value not below alpha), but drift clears only once the effect "
    "falls below the clear thresholds (JSD 0.025 and every share change 2.5 points; a rate "
    "change 2.5 points) at every test for one current window (analytics.drift.window_s, or "
    "the comparison's window when shorter), so the drift declared earlier stands."
)


def drift_section(
    drift: Mapping[str, Any],
    series: Mapping[str, Any] | None = None,
    off: Mapping[str, str | None] | None = None,
) -> Markup:
    """Build the section from a drift report (keys: the four dimensions, ``alarms``,
    ``events_seen``, ``event_time``); with the analytics' time ``series``, the alarm time
    line spans the traffic's whole time range. A dimension whose detector is ``off``
    (``{dimension: why}``, e.g. out-of-scope without a gold set) gets one row saying so.

    Raises:
        KeyError: a dimension other than :data:`OPTIONAL` is missing from ``drift``.
    """
    rows = []
    held = False
    ended_at = {(a["dimension"], a["comparison"]): a["timestamp"] for a in ended_untested(drift)}
    for dim in DIMENSIONS:
        why_off = (off or {}).get(dim)
        if why_off:
            rows.append([dim, "–", badge("off"), "–", "–", "–", "–", "–", "–", f"off: {why_off}"])
            continue
        if dim in OPTIONAL and dim not in drift:
            continue
        silenced = drift[dim].get("suppressed_categories") or {}
        for name, test in drift[dim]["comparisons"].items():
            row, by_hysteresis = _comparison_row(dim, name, test, drift[dim], silenced)
            if (dim, name) in ended_at:  # its alarm ended for lack of data (trial 51 L5)
                row[9] = (f"its alarm ended for lack of data at {when(ended_at[dim, name])}, "
                          f"not cleared (the alarms below); {row[9]}")  # fmt: skip
            held = held or by_hysteresis
            rows.append(row)
    parts: list[str] = [
        table(
            [
                "dimension",
                "compared with",
                "state",
                "tested at",
                "n compared",
                "n current",
                "effect",
                "p",
                "alpha",
                "what moved",
            ],
            rows,
            text_columns=(9,),
        ),
    ]
    detectable = [
        test["detectable"]
        for dim in DIMENSIONS
        if dim in drift and not (off or {}).get(dim)
        for test in drift[dim]["comparisons"].values()
        if (test.get("detectable") or {}).get("text")
    ]
    if detectable:  # the smallest change each comparison can alarm on (docs/drift.md)
        parts.append(para("Smallest change that can alarm, at these window and gold-set "
                          "sizes (the detectors' own decision on expected counts):"))  # fmt: skip
        parts += [para(found["text"], "warn" if found.get("cannot_alarm") else "muted")
                  for found in detectable]  # fmt: skip
    parts += [
        para(f"{dim}: {silenced_verb(dim)} — {why}", "warn")
        for dim, why in sorted((drift.get("suppressed_dimensions") or {}).items())
    ]
    # windows started afresh under a new labeller (trial 48 H1: a recalibrated detector)
    parts += [para(restart_text(dim, drift[dim]["windows_restarted"]), "warn")
              for dim in DIMENSIONS
              if (drift.get(dim) or {}).get("windows_restarted")]  # fmt: skip
    if held:
        parts.append(para(HELD_NOTE, "muted"))
    alarms = drift.get("alarms") or []
    if alarms:
        # a drift kept quiet (tested_state: the other dimension drifted) is no alarm: in the
        # table below, not on the time line
        marks = [(a["dimension"], float(a["timestamp"]), a["state"] == "drift")
                 for a in alarms if "tested_state" not in a and not a.get("widened")]  # fmt: skip
        buckets = (series or {}).get("buckets") or []
        span = None
        if buckets:
            last = float(buckets[-1]["start"]) + float((series or {}).get("bucket_s", 0))
            times = [t for _, t, _ in marks]
            span = (min([float(buckets[0]["start"]), *times]), max([last, *times]))
        if marks:  # only quiet entries: no alarm to draw (the table lists them)
            svg = plots.timeline(list(DIMENSIONS), marks, title="Drift alarms", span=span)
            outside = (series or {}).get("outside_note", "") if buckets else ""
            why = [said for kind, said in (
                ("suppressed", "its dimension stopped alarming"),
                ("untested", "it ended because too few events came to test it"),
                ("restarted", "its windows started afresh"),
            ) if any(alarm_kind(a) == kind for a in alarms)]  # fmt: skip
            ended = f" (or {', or '.join(why)}: the table says why)" if why else ""
            parts.append(figure(svg, f"Filled: a comparison entered drift; hollow: it left{ended}."
                                + (f" {outside}" if outside else "")))  # fmt: skip
        parts.append(
            table(
                ["time", "dimension", "compared with", "state", "after events", "what moved"],
                [
                    [
                        when(a["timestamp"]),
                        a["dimension"],
                        a["comparison"],
                        badge(a["state"]),
                        a["after_events"],
                        _moved_alarm(
                            a, drift.get(a["dimension"], {}).get("suppressed_categories") or {}
                        ),
                    ]
                    for a in alarms
                ],
                text_columns=(5,),
            )
        )
    else:
        parts.append(para("No drift alarm so far.", "muted"))
    seen = drift.get("events_seen")
    timing = drift.get("event_time") or {}
    parts.append(
        para(
            f"{seen} events seen; kept out of the windows: {timing.get('late', 0)} "
            f"late, {timing.get('future', 0)} stamped in the future, "
            f"{timing.get('ahead', 0)} too far ahead of the others.{_recent(timing)}",
            "muted",
        )
    )
    if timing.get("starved"):
        parts.append(para(f"Starved: {timing['starved']}.", "warn"))
    return section("drift", "Drift", *parts)


def _recent(timing: Mapping[str, Any]) -> str:
    """`` Of the latest 5000 events, 12% were kept out.`` (what ``starved`` is decided on),
    or ``""`` when none of them were or the report predates the field."""
    share, events = timing.get("recent_kept_out_share"), timing.get("recent_events")
    if not share or not events:
        return ""
    return f" Of the latest {events} events, {share:.0%} were kept out."


#: The state cell's words beside ``drift`` for a held row, by its ``held_because``
#: (:data:`service.drift.stage.HELD_BECAUSE`; a row with ``held_by_hysteresis`` alone:
#: ``hysteresis``). Only ``hysteresis`` is the detector's hysteresis (review s40: a strong
#: test whose only rising category was the uncalibrated ``novel`` read "held by hysteresis");
#: ``quiet_hold`` is held by it too, but no alarm is open, so :data:`HELD_NOTE` ("the drift
#: declared earlier stands") is not said of it (trial 46 F3).
HELD_LABELS = {
    "hysteresis": "held by hysteresis",
    "suppressed_categories": "held open: only a suppressed category rises",
    "confounded": "held open: confounded",
    "not_tested": "held open, not tested",
    # no alarm open (beside uncalibrated): a drift that opened none, held by hysteresis
    "quiet_hold": "held quiet: opened no alarm",
}


def _comparison_row(
    dim: str, name: str, test: Mapping[str, Any], body: Mapping[str, Any],
    silenced: Mapping[str, str],
) -> tuple[list[Any], bool]:  # fmt: skip
    """One comparison's row of the drift table and whether hysteresis holds it
    (:data:`HELD_NOTE` then goes under the table). A test that did not run (too few events)
    shows no figures (its report's defaults, JSD ``nan`` and p ``1.0``, measure nothing);
    an open alarm held through it shows its latest test's (``last_test``) with that test's
    time, and says in "what moved" that no test ran now, and why (review s40)."""
    because = test.get("held_because") or ("hysteresis" if test.get("held_by_hysteresis")
                                           else None)  # fmt: skip
    shown: Mapping[str, Any] = test
    if because == "not_tested":
        shown = test.get("last_test") or {}
    untested = test["state"] == "insufficient_data" or (because == "not_tested" and not shown)
    moved = category_moves(shown, silenced) if shown else "–"
    if test["state"] == "insufficient_data" and test.get("insufficient"):
        moved = f"not tested: {test['insufficient']}"
    if test.get("cannot_alarm"):
        moved = f"{moved}; cannot alarm: {test['cannot_alarm']}"
    if untested:
        effect = "no test"
    elif "js_divergence" in shown:
        effect = f"JSD {num(shown.get('js_divergence'))}"
    elif "terms_tested" in shown:
        effect = f"{shown['terms_tested']} terms tested"
    else:
        effect = rate_move(shown) + windows_count(dim, body)
    state = badge(test["state"])
    if because is not None:
        label = HELD_LABELS[because]
        rising = test.get("rising") if because == "suppressed_categories" else None
        quiet = [str(r["category"]) for r in rising or () if r.get("category") in silenced]
        if quiet:
            label = f"held open: only {', '.join(quiet)} rises"
        state = Markup(f'{state} <span class="muted">{esc(label)}</span>')
    if test.get("held") and because == "not_tested":
        moved = (f"held: {test['held']}" if not shown
                 else f"held: {test['held']}. Shown: that test; it moved: {moved}")  # fmt: skip
    elif test.get("held"):  # an open alarm this test alone would not open (or none): why
        moved = f"held: {test['held']}" if moved == "–" else f"{moved}; held: {test['held']}"
    row = [
        dim,
        name,
        state,
        when(shown.get("timestamp")),
        (shown or test).get("n_reference"),  # (no test known: the untested window's)
        (shown or test).get("n_current"),
        effect,
        None if untested else shown.get("p_value"),
        (shown or test).get("alpha"),
        moved,
    ]
    return row, because == "hysteresis"


def category_moves(test: Mapping[str, Any], silenced: Mapping[str, str] | None = None) -> str:
    """What moved in a categorical drift test: ``"rising: hi-Latn 8%→37%; falling: en
    92%→59%; new: hi"`` (``–`` when nothing did). A category in ``silenced`` (``{category:
    why}``, e.g. an uncalibrated ``novel``) is listed apart, as raising no alarm, with why,
    whichever way it moved: its share is not a fact. A test whose reference was
    standardised to the current window's language mix says so after it (" (adjusted for the
    language mix)", :func:`~service.drift.stage.adjusted_note`)."""
    if "terms_tested" in test:
        return term_moves(test.get("rising") or ())
    silenced = silenced or {}

    def moves(rows: Any, quiet: bool) -> list[str]:
        return [
            f"{r['category']} {r['reference_share']:.0%}→{r['current_share']:.0%}"
            + (f" ({silenced[r['category']]})" if quiet else "")
            for r in rows or ()
            if (r["category"] in silenced) is quiet
        ]

    new = test.get("new_categories") or []
    heard = [
        (label, moves(test.get(key), quiet))
        for quiet in (False, True)
        for label, key in (("rising", "rising"), ("falling", "falling"))
    ]
    loud_new = [c for c in new if c not in silenced]
    quiet_new = [f"{c} ({silenced[c]})" for c in new if c in silenced]
    parts = (
        [f"{label}: {', '.join(cats)}" for label, cats in heard[:2] if cats]
        + ([f"new: {', '.join(loud_new)}"] if loud_new else [])
        + [f"{label}, raises no alarm: {', '.join(cats)}" for label, cats in heard[2:] if cats]
        + ([f"new, raises no alarm: {', '.join(quiet_new)}"] if quiet_new else [])
    )
    return ("; ".join(parts) or "–") + adjusted_note(test)


def rate_move(test: Mapping[str, Any]) -> str:
    """A rate test's movement, ``"12.0% → 21.1%"``, with the 95 % interval of the change in
    points where the test has one (``ci_low``/``ci_high``: the Newcombe interval its alarm
    rule reads): ``"12.0% → 21.1% (change 95 % [+1.2, +16.9] points)"`` — so an ``ok``
    beside a large point change says why (trial 19: "ok 12.0% → 21.1%" read as a missed
    alarm; its interval's low end was under the half-threshold that clears one).

    >>> rate_move({"rate_reference": 0.12, "rate_current": 0.211, "ci_low": 0.012,
    ...            "ci_high": 0.169})
    '12.0% → 21.1% (change 95 % [+1.2, +16.9] points)'
    >>> rate_move({"rate_reference": 0.12, "rate_current": None})
    '12.0% → –'

    A ``known_miss`` test's languages whose own test drifts follow (a language alarm
    otherwise reads as an unexplained pooled move):

    >>> rate_move({"rate_reference": 0.033, "rate_current": 0.117, "languages": [
    ...     {"language": "de", "rate_reference": 0.077, "n_reference": 39, "rate_current": 0.69,
    ...      "n_current": 42, "state": "drift"}, {"language": "en", "rate_reference": 0.03,
    ...      "n_reference": 300, "rate_current": 0.04, "n_current": 310, "state": "ok"}]})
    '3.3% → 11.7%; rising in de: 7.7% of 39 → 69.0% of 42'
    """
    moved = f"{pct(test.get('rate_reference'))} → {pct(test.get('rate_current'))}"
    low, high = test.get("ci_low"), test.get("ci_high")
    if (isinstance(low, int | float) and isinstance(high, int | float)
            and math.isfinite(low) and math.isfinite(high)):  # fmt: skip
        moved += f" (change 95 % [{low * 100:+.1f}, {high * 100:+.1f}] points)"
    # known_miss tested per language: the languages whose own test drifts (trial 43 H1)
    drifting = [row for row in test.get("languages") or () if row.get("state") == "drift"]
    return moved + language_moves(drifting, "→")


def term_moves(rows: Any) -> str:
    """Rising terms (rows with ``surface``, ``reference_share``, ``current_share``):
    ``"rising: doctor 0.2%→13.7%, apollo 0.0%→6.1%"`` (``–`` when none)."""
    moved = [f"{r['surface']} {r['reference_share']:.1%}→{r['current_share']:.1%}"
             for r in rows]  # fmt: skip
    return f"rising: {', '.join(moved)}" if moved else "–"


def _moved_alarm(alarm: Mapping[str, Any], silenced: Mapping[str, str]) -> str:
    moved = _moved(alarm, silenced)
    # a gold-set comparison's opening or clearing: what its time means (trial 41)
    return f"{moved}. Reads: {alarm['reads']}" if alarm.get("reads") else moved


def _moved(alarm: Mapping[str, Any], silenced: Mapping[str, str]) -> str:
    if alarm.get("widened"):  # an open alarm widened: what rose since it opened, then all
        rest = _moved({k: v for k, v in alarm.items() if k != "widened"}, silenced)
        return f"now also rising: {', '.join(alarm['widened'])}; {rest}"
    if alarm.get("restarted"):  # ended: its windows started afresh under a new labeller
        return f"ended: its windows started afresh ({alarm['restarted']})"
    if alarm.get("suppressed"):  # ended by the whole dimension's suppression: not cleared
        said = f"ended: the dimension raises no alarm now ({alarm['suppressed']})"
        if "rate_current" in alarm and alarm["rate_current"] is None:  # (its test measured
            return said  # nothing: no "– → –")
        rest = _moved({k: v for k, v in alarm.items() if k != "suppressed"}, silenced)
        return f"{said}; {rest}"
    if alarm_kind(alarm) == "untested":  # ended for lack of data: nothing moved (trial 51)
        return untested_text(alarm)
    if "rising_terms" in alarm:
        return term_moves(alarm["rising_terms"])
    if "rate_current" in alarm:
        return rate_moves(alarm, "→")
    rising, falling = alarm.get("rising") or [], alarm.get("falling") or []
    quiet = [f"{c} ({silenced[c]})" for c in rising if c in silenced]
    rising = [c for c in rising if c not in silenced]
    kept = alarm.get("tested_state") == "drift"  # a drift kept quiet by a confound
    return (
        "; ".join(
            (
                [f"tested drift, no alarm while {alarm.get('confounded_by')} drifts"]
                if kept
                else []
            )  # fmt: skip
            + ([f"rising: {', '.join(rising)}"] if rising else [])
            + ([f"falling: {', '.join(falling)}"] if falling else [])
            + ([f"rising, raises no alarm: {', '.join(quiet)}"] if quiet else [])
        )
        or "–"
    ) + adjusted_note(alarm)
