"""Trial 51 H1 and L5: an open alarm through a lull in traffic.

H1: an open refusal alarm, then two days without events, then a few: the alarm ends for lack
of data (its windows stayed under ``min_count`` longer than an open alarm is held untested,
:meth:`service.drift.stage.DriftStage.held`). The history recorded that end as an alarm row
with the empty test's figures (``rate_current``/``rate_compared`` NaN in the state, ``null``
in JSON), and the HTML "what moved" formatted them: ``replay --html`` exited 1 and the
status page answered 500, for good (the row lives in the state). Now such a row is its own
kind (:func:`service.drift.stage.alarm_kind` ``untested``) that carries ``untested`` (the
window's count against what a test needs), never figures; rows kept by main are upgraded
on load (:func:`service.drift.stage.upgraded_alarm`).

L5: every report says the alarm ended because too few events came, not that the drift ended
(text, HTML, status page, ``goldwatch_drift_alarm_ended_untested``).

The stream (by hand): one event every 10 s from 2026-01-01 00:00, the stage's default windows
(1 h current window, 6 h frozen baseline, a test every 5 min, 200 events to test): 3,000
events with 1 in 20 refused (5.0 %), 720 with 1 in 3 (33.3 %), the last at index 3,719,
10:19:50; two days later 5 more, 10 s apart, 10:19:50 to 10:20:30 on 2026-01-03. The latest
test with enough events is the last 5-min mark of the rise, 10:15; the first test of the
lull's events (over 24 h after it) ends the alarm with 5 answers in the 1 h window.
"""

from __future__ import annotations

import json
import math
import types
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.drift.stage import (
    ALARM_KINDS,
    DriftStage,
    alarm_kind,
    ended_untested,
    upgraded_alarm,
)
from service.html import render_replay_html, render_status_page
from service.html.drift_section import drift_section
from service.jobs.demo import planted_findings
from service.jobs.replay import render_text
from service.telemetry import build_analytics_metrics
from tests.service.html.samples import replay_report

START = datetime(2026, 1, 1, tzinfo=UTC)
STATUS = {"version": "test", "ready": True, "not_ready_reasons": [], "uptime_s": 5.0,
          "source_kind": "file", "source": {"path": "q.jsonl", "at_eof": True},
          "input_finished": True, "totals": {"consumed": 1, "processed": 1},
          "last_error": None}  # fmt: skip
#: 2026-01-01 10:15 UTC: the last 5-min mark at or before the rise's last event (10:19:50).
LAST_TEST = (START + timedelta(hours=10, minutes=15)).timestamp()
#: 2026-01-03 10:20:30 UTC: the lull's last event, whose batch's test ends the alarm.
ENDED = (START + timedelta(days=2, seconds=3719 * 10 + 40)).timestamp()
UNTESTED = {"n_current": 5, "min_count": 200, "unit": "answers", "window_s": 3600.0,
            "hold_untested_s": 86400.0, "last_test": LAST_TEST}  # fmt: skip
SAID = (
    "for lack of data, not cleared (the drift was not seen to end): the current 1 h window "
    "held 5 answers, fewer than the 200 a test needs, and no test had enough for 48 h 5 min "
    "(the latest at 2026-01-01 10:15 UTC; an open alarm is held untested for 24 h)"
)  # fmt: skip  (ENDED - LAST_TEST: 2 days 5 min 30 s, whole minutes)
#: A kept row of main's code for such an end, as its state file holds it (the scenario of
#: tests/cli/test_replay_lull.py replayed by main 7be42b94 with --state: NaN rates, p 1).
MAIN_ROW = {"dimension": "refusal", "comparison": "baseline", "state": "insufficient_data",
            "after_events": 1205, "timestamp": 1796291974.0, "rate_current": math.nan,
            "rate_compared": math.nan, "p_value": 1.0}  # fmt: skip
#: The walk's end row, at 00:07 (420 s) with its latest test 24 h 19 min before
#: (1969-12-30 23:48 UTC): the gap said is the row's timestamp minus that test's (review NIT 5).
UNTESTED_0007 = {**UNTESTED, "last_test": 420.0 - 87_540.0}
SAID_0007 = SAID.replace(
    "48 h 5 min (the latest at 2026-01-01 10:15 UTC",
    "24 h 19 min (the latest at 1969-12-30 23:48 UTC",
)
LEGACY_SAID = ("ended for lack of data, not cleared (the drift was not seen to end): too few "
               "events came to test it")  # fmt: skip


def _feed(drift: DriftStage, first: int, count: int, every: int, t0: datetime) -> None:
    """``count`` events one every 10 s from ``t0``, index ``first`` on; each ``every``-th
    (by index from ``first``) refused."""
    for start in range(0, count, 100):
        n = min(100, count - start)
        events = [types.SimpleNamespace(timestamp=t0 + timedelta(seconds=10 * (start + k)))
                  for k in range(n)]  # fmt: skip
        notes = [{"language": "en", "topic": "a", "refused": (start + k) % every == 0}
                 for k in range(n)]  # fmt: skip
        drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))


def _clock() -> float:
    return (START + timedelta(days=30)).timestamp()


def _lull() -> DriftStage:
    drift = DriftStage({"language": {"en": 1}}, clock=_clock)
    _feed(drift, 0, 3000, 20, START)
    _feed(drift, 3000, 720, 3, START + timedelta(seconds=30_000))
    assert [a["state"] for a in drift.alarms if a["dimension"] == "refusal"] == ["drift"]
    _feed(drift, 3720, 5, 10**9, START + timedelta(days=2, seconds=3719 * 10))
    return drift


def test_the_lull_ends_the_open_alarm_untested_with_its_counts() -> None:
    drift = _lull()
    opened, ended = [a for a in drift.alarms if a["dimension"] == "refusal"]
    assert alarm_kind(opened) == "opened" and opened["rate_compared"] == pytest.approx(0.05)
    assert ended == {"dimension": "refusal", "comparison": "baseline",
                     "state": "insufficient_data", "after_events": 3725, "timestamp": ENDED,
                     "untested": UNTESTED}  # fmt: skip
    report = drift.report()
    assert report["refusal"]["comparisons"]["baseline"]["state"] == "insufficient_data"
    assert [(a["dimension"], a["comparison"]) for a in ended_untested(report)] == [
        ("refusal", "baseline")]  # fmt: skip
    json.dumps(report["alarms"], allow_nan=False)  # no NaN left in the history


def test_every_surface_says_the_alarm_ended_for_lack_of_data() -> None:
    drift = _lull()
    doc = replay_report(extras=False)
    doc["analytics"]["drift"] = drift.report()
    text = render_text(doc).splitlines()
    assert ("  ended  refusal vs baseline at 2026-01-03 10:20 UTC (after 3725 events): "
            f"{SAID}") in text  # fmt: skip
    page = render_replay_html(doc)
    assert f"ended {SAID}" in page
    # the comparison's own row in the table above the alarms says it too
    assert ("its alarm ended for lack of data at 2026-01-03 10:20 UTC, not cleared (the alarms "
            "below); not tested: ") in page  # fmt: skip
    assert "hollow: it left (or it ended because too few events came to test it" in page
    status = render_status_page(STATUS, doc["analytics"], refresh_s=0)
    assert f"refusal (baseline): alarm ended at 2026-01-03 10:20 UTC {SAID}" in status
    registry = CollectorRegistry()
    build_analytics_metrics(registry).observe_drift(doc["analytics"]["drift"])
    value = registry.get_sample_value
    labels = {"dimension": "refusal", "comparison": "baseline"}
    assert value("goldwatch_drift_alarm_ended_untested", labels) == 1.0
    assert value("goldwatch_drift_alarm_ended_untested",
                 {**labels, "dimension": "language"}) == 0.0  # fmt: skip
    assert value("goldwatch_drift_state", {**labels, "state": "insufficient_data"}) == 1.0


def test_a_test_with_enough_events_after_the_lull_ends_the_untested_mark() -> None:
    """Traffic back at the baseline's rate for 2 h: the test reads ok; the history keeps the
    end (no new row: insufficient_data to ok is no alarm), the gauge and status line go."""
    drift = _lull()
    _feed(drift, 3725, 720, 20, START + timedelta(days=2, seconds=3725 * 10))
    report = drift.report()
    assert report["refusal"]["comparisons"]["baseline"]["state"] == "ok"
    assert alarm_kind(report["alarms"][-1]) == "untested"
    assert ended_untested(report) == []


def test_a_state_kept_by_main_resumes_and_renders() -> None:
    """The kept history ends with main's row (NaN rates): the restore upgrades it, every
    surface renders it, and the history keeps no NaN."""
    drift = _lull()
    kept = json.loads(json.dumps(drift.state_snapshot()))
    kept["alarms"][-1] = dict(MAIN_ROW)
    resumed = DriftStage({"language": {"en": 1}}, clock=_clock)
    resumed.restore(kept)
    row = resumed.alarms[-1]
    assert row == {"dimension": "refusal", "comparison": "baseline",
                   "state": "insufficient_data", "after_events": 1205,
                   "timestamp": 1796291974.0, "untested": {}}  # fmt: skip
    doc = replay_report(extras=False)
    doc["analytics"]["drift"] = resumed.report()
    json.dumps(doc["analytics"]["drift"]["alarms"], allow_nan=False)
    assert ("  ended  refusal vs baseline at 2026-12-03 09:59 UTC (after 1205 events): "
            f"{LEGACY_SAID.removeprefix('ended ')}") in render_text(doc).splitlines()  # fmt: skip
    assert LEGACY_SAID in render_replay_html(doc)
    render_status_page(STATUS, doc["analytics"], refresh_s=0)


#: One row of every kind the history holds (and main's rows for an end for lack of data, as
#: its JSON report, its state and a terms test wrote them), each with what the text report's
#: line for it must say.
ROWS: list[tuple[dict[str, Any], str]] = [
    (
        {
            "dimension": "refusal",
            "comparison": "baseline",
            "state": "drift",
            "after_events": 10,
            "timestamp": 0.0,
            "rate_current": 0.168,
            "rate_compared": 0.05,
            "p_value": 1e-6,
            "recent_s": 1620.0,
            "window_s": 3600.0,
            "n_recent": 53,
            "rate_recent": 0.321,
        },
        "DRIFT  refusal vs baseline at 1970-01-01 00:00 UTC (after 10 events): 5.0% -> 32.1% in "
        "the newest 27 min (53 events), 16.8% over the whole 1 h window",
    ),
    (
        {
            "dimension": "language",
            "comparison": "baseline",
            "state": "drift",
            "after_events": 11,
            "timestamp": 60.0,
            "rising": ["hi"],
            "falling": [],
            "js_divergence": 0.1,
            "p_value": 1e-9,
        },
        "DRIFT  language vs baseline at 1970-01-01 00:01 UTC (after 11 events): rising hi (no "
        "category fell beyond noise)",
    ),
    (
        {
            "dimension": "terms",
            "comparison": "baseline",
            "state": "drift",
            "after_events": 12,
            "timestamp": 120.0,
            "rising_terms": [
                {
                    "term": "visa",
                    "surface": "visa",
                    "current_share": 0.2,
                    "reference_share": 0.01,
                    "current_count": 40,
                    "reference_count": 2,
                }
            ],
            "terms_tested": 30,
            "p_value": 1e-5,
            "alpha": 1e-3,
        },
        "DRIFT  terms vs baseline at 1970-01-01 00:02 UTC (after 12 events): rising visa (1.0% → "
        "20.0% of questions, 40 vs 2) (Bonferroni over 30 terms, exact conditional p)",
    ),
    (
        {
            "dimension": "language",
            "comparison": "baseline",
            "state": "drift",
            "after_events": 13,
            "timestamp": 180.0,
            "widened": ["ru"],
            "rising": ["hi", "ru"],
            "falling": [],
            "js_divergence": 0.2,
            "p_value": 1e-12,
        },
        "DRIFT+ language vs baseline at 1970-01-01 00:03 UTC (after 13 events): now also rising "
        "ru (rising hi, ru (no category fell beyond noise))",
    ),
    (
        {
            "dimension": "topic",
            "comparison": "baseline",
            "state": "uncalibrated",
            "after_events": 14,
            "timestamp": 240.0,
            "tested_state": "drift",
            "confounded_by": "language",
            "rising": ["fees"],
            "falling": [],
            "js_divergence": 0.1,
            "p_value": 1e-6,
        },
        "quiet  topic vs baseline at 1970-01-01 00:04 UTC (after 14 events): tested drift: rising "
        "fees (no category fell beyond noise); no alarm while language drifts",
    ),
    (
        {
            "dimension": "out_of_scope",
            "comparison": "baseline",
            "state": "uncalibrated",
            "after_events": 15,
            "timestamp": 300.0,
            "suppressed": "scope AUC 0.6 < 0.75",
            "rate_current": None,
            "rate_compared": None,
            "p_value": 1.0,
        },
        "ended  out_of_scope vs baseline at 1970-01-01 00:05 UTC (after 15 events): the dimension "
        "raises no alarm now (scope AUC 0.6 < 0.75)",
    ),
    (
        {
            "dimension": "topic",
            "comparison": "reference",
            "state": "insufficient_data",
            "after_events": 16,
            "timestamp": 360.0,
            "restarted": "a new topic model",
        },
        "ended  topic vs reference at 1970-01-01 00:06 UTC (after 16 events): its windows started "
        "afresh (a new topic model)",
    ),
    (
        {
            "dimension": "refusal",
            "comparison": "baseline",
            "state": "insufficient_data",
            "after_events": 17,
            "timestamp": 420.0,
            "untested": UNTESTED_0007,
        },
        f"ended  refusal vs baseline at 1970-01-01 00:07 UTC (after 17 events): {SAID_0007}",
    ),
    (
        {**MAIN_ROW, "rate_current": None, "rate_compared": None, "timestamp": 480.0},
        f"ended  refusal vs baseline at 1970-01-01 00:08 UTC (after 1205 events): "
        f"{LEGACY_SAID.removeprefix('ended ')}",
    ),
    (
        {**MAIN_ROW, "timestamp": 540.0},
        f"ended  refusal vs baseline at 1970-01-01 00:09 UTC (after 1205 events): "
        f"{LEGACY_SAID.removeprefix('ended ')}",
    ),
    (
        {
            "dimension": "language",
            "comparison": "baseline",
            "state": "insufficient_data",
            "after_events": 18,
            "timestamp": 600.0,
            "rising": [],
            "falling": [],
            "js_divergence": None,
            "p_value": 1.0,
        },
        f"ended  language vs baseline at 1970-01-01 00:10 UTC (after 18 events): "
        f"{LEGACY_SAID.removeprefix('ended ')}",
    ),
    (
        {
            "dimension": "terms",
            "comparison": "baseline",
            "state": "insufficient_data",
            "after_events": 19,
            "timestamp": 660.0,
            "rising_terms": [],
            "terms_tested": 0,
            "p_value": 1.0,
            "alpha": 1e-3,
        },
        f"ended  terms vs baseline at 1970-01-01 00:11 UTC (after 19 events): "
        f"{LEGACY_SAID.removeprefix('ended ')}",
    ),
    (
        {
            "dimension": "refusal",
            "comparison": "baseline",
            "state": "ok",
            "after_events": 20,
            "timestamp": 720.0,
            "rate_current": 0.05,
            "rate_compared": 0.05,
            "p_value": 0.5,
        },
        "ended  refusal vs baseline at 1970-01-01 00:12 UTC (after 20 events): cleared",
    ),
    (
        {
            "dimension": "language",
            "comparison": "baseline",
            "state": "starved",
            "after_events": 21,
            "timestamp": 780.0,
            "rising": [],
            "falling": [],
            "js_divergence": 0.001,
            "p_value": 0.9,
        },
        "ended  language vs baseline at 1970-01-01 00:13 UTC (after 21 events): cleared",
    ),
]


def test_the_rows_cover_every_kind() -> None:
    assert {alarm_kind(row) for row, _ in ROWS} == set(ALARM_KINDS)


def test_every_row_kind_through_every_renderer() -> None:
    """The same class of bug as H1 in any other reader: every kind of row, main's null and
    NaN rows among them, through the text report, the HTML drift section and page, the
    status page, the demo's findings, the Prometheus gauges, the JSON (upgraded) and
    :func:`ended_untested`."""
    doc = replay_report(extras=False)
    drift = doc["analytics"]["drift"]
    drift["refusal"]["comparisons"]["baseline"]["state"] = "insufficient_data"
    drift["terms"] = {"state": "ok", "comparisons": {}}
    drift["alarms"] = [dict(row) for row, _ in ROWS]
    text = render_text(doc).splitlines()
    for _, said in ROWS:
        assert any(line.startswith(f"  {said}") for line in text), said
    html_section = str(drift_section(drift))
    page = render_replay_html(doc)
    status = render_status_page(STATUS, doc["analytics"], refresh_s=0)
    for out in (html_section, page, status):
        assert "nan%" not in out and "None" not in out
    assert html_section.count(LEGACY_SAID) == 4 and html_section.count(f"ended {SAID_0007}") == 1
    assert "ended: the dimension raises no alarm now (scope AUC 0.6 &lt; 0.75)</td>" in html_section
    # the status page's line: the latest refusal baseline row is an end, still untested
    assert "refusal (baseline): alarm ended at" not in status  # (a cleared row is later)
    assert ended_untested(drift) == []
    drift["alarms"] = drift["alarms"][:8]
    assert [a["timestamp"] for a in ended_untested(drift)] == [420.0]
    assert f"refusal (baseline): alarm ended at 1970-01-01 00:07 UTC {SAID_0007}" in (
        render_status_page(STATUS, doc["analytics"], refresh_s=0))  # fmt: skip
    drift["alarms"] = [dict(row) for row, _ in ROWS]
    assert planted_findings(doc)  # (the demo's reading: opened rows only)
    registry = CollectorRegistry()
    build_analytics_metrics(registry).observe_drift(drift)
    upgraded = [upgraded_alarm(row) for row, _ in ROWS]
    json.dumps(upgraded, allow_nan=False)
    assert [a for a in upgraded if alarm_kind(a) == "untested"] == [
        {"dimension": "refusal", "comparison": "baseline", "state": "insufficient_data",
         "after_events": 17, "timestamp": 420.0, "untested": UNTESTED_0007},
        *({"dimension": dim, "comparison": "baseline", "state": "insufficient_data",
           "after_events": n, "timestamp": t, "untested": {}}
          for dim, n, t in (("refusal", 1205, 480.0), ("refusal", 1205, 540.0),
                            ("language", 18, 600.0), ("terms", 19, 660.0))),
    ]  # fmt: skip
