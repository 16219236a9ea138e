"""Trial 41 L1: a gold-set ("vs reference") alarm on a stationary stream is a standing gap
found once enough traffic was seen, not a change at that time; every surface that prints it
says so (JSON ``reads``, text report, HTML alarms table, the status page's "What moved")."""

from __future__ import annotations

import copy
import html
import types
from datetime import UTC, datetime, timedelta

from service.drift.stage import REFERENCE_GAP, DriftStage
from service.html.drift_section import drift_section
from service.html.status import moved_section
from service.jobs.replay import render_text
from tests.service.html import samples

START = datetime(2026, 11, 2, tzinfo=UTC)


def _stationary() -> DriftStage:
    """Gold set 55 % en, 45 % hi (100 rows); traffic 77 % en, 23 % hi at every hour (23 of
    each 100 consecutive questions Hindi), one question every 10 s for 12 h: nothing in
    the traffic changes, so the baseline never alarms; the gap to the gold set (45 % → 23 %)
    is there from the first question and the gold-set test finds it once its window holds
    200 questions."""
    drift = DriftStage({"language": {"en": 55, "hi": 45}},
                       clock=lambda: (START + timedelta(days=30)).timestamp())  # fmt: skip
    n = 12 * 360
    events = [types.SimpleNamespace(timestamp=START + timedelta(seconds=10 * i)) for i in range(n)]
    notes = [{"language": "hi" if i % 100 < 23 else "en", "topic": "und", "refused": False}
             for i in range(n)]  # fmt: skip
    for start in range(0, n, 500):
        drift.process(types.SimpleNamespace(events=events[start:start + 500],
                                            annotations=notes[start:start + 500],
                                            streams=None))  # fmt: skip
    return drift


def test_a_gold_set_alarm_reads_as_a_standing_gap_everywhere() -> None:
    drift = _stationary()
    report = drift.report()
    alarms = [a for a in report["alarms"] if a["dimension"] == "language"]
    assert [(a["comparison"], a["state"]) for a in alarms] == [("reference", "drift")]
    reads = alarms[0]["reads"]
    assert reads.startswith("a standing gap between the traffic of the last 24 h and the gold "
                            "set, found once enough traffic was seen")  # fmt: skip
    assert "which need not be when the traffic changed" in reads
    # the stored history is left as it was (a state saved before keeps reading the same)
    assert all("reads" not in a for a in drift.alarms)
    # text report: a line under the alarm
    doc = samples.replay_report()
    doc = {**doc, "gold_candidates": None}
    doc["analytics"] = copy.deepcopy(doc["analytics"])
    doc["analytics"]["drift"]["alarms"] = alarms
    lines = render_text(doc).splitlines()
    at = next(i for i, line in enumerate(lines) if "DRIFT  language vs reference" in line)
    assert lines[at + 1].strip() == f"({reads})"
    # HTML report and status page: the alarms table
    page = html.unescape(str(drift_section(doc["analytics"]["drift"])))
    assert f"Reads: {reads}" in page
    # the status page's "What moved": a reference comparison in drift (the sample's) is named so
    moved = html.unescape(str(moved_section(doc["analytics"])))
    assert "language (reference): " in moved and f"({REFERENCE_GAP})" in moved
    assert "refusal (baseline)" in moved and moved.count(REFERENCE_GAP) == 1


def test_baseline_alarms_and_ends_for_too_few_events_carry_no_reading() -> None:
    from service.drift.stage import reference_reading

    assert "reads" not in reference_reading({"comparison": "baseline", "state": "drift"}, 3600)
    assert "reads" not in reference_reading(
        {"comparison": "reference", "state": "insufficient_data"}, 86400
    )
    cleared = reference_reading({"comparison": "reference", "state": "ok"}, 43200)["reads"]
    assert cleared.startswith("the gap to the gold set closed: the traffic of the last 12 h")
    assert "traffic changing toward the gold set closes it too" in cleared
