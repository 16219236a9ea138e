"""An open drift alarm names what rises later too (trial 17, HIGH/MEDIUM 2): "language vs
reference: rising de" stayed open for two days, and the day Spanish rose as well was never
named (without the German day, "rising es" fired). Now a category (or rising term) the open
alarm did not name is recorded as a widening: one entry, ``widened`` the new ones, once per
open alarm."""

from __future__ import annotations

import copy
import types
from datetime import UTC, datetime, timedelta
from typing import Any

from service.drift.stage import DriftStage
from service.html.drift_section import drift_section
from service.jobs.replay import render_text
from tests.service.html import samples

START = datetime(2026, 11, 27, tzinfo=UTC)
PER_HOUR = 600  # one event every 6 s


def _language(i: int) -> str:
    """Hours 0-8 English only (the frozen baseline is hours 0-6); from hour 8, 3 in 10 German;
    from hour 10, 3 in 10 Spanish as well."""
    hour, k = i // PER_HOUR, i % 10
    if hour >= 8 and k < 3:
        return "de"
    if hour >= 10 and k < 6:
        return "es"
    return "en"


def _feed(drift: DriftStage, start: int, end: int) -> None:
    for first in range(start, end, 100):
        events = [types.SimpleNamespace(timestamp=START + timedelta(seconds=6 * i))
                  for i in range(first, first + 100)]  # fmt: skip
        notes = [{"language": _language(i), "topic": "fees"} for i in range(first, first + 100)]
        drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))


def _drift() -> DriftStage:
    return DriftStage({}, clock=lambda: (START + timedelta(days=30)).timestamp())


def _language_entries(drift: DriftStage) -> list[dict[str, Any]]:
    return [a for a in drift.alarms if a["dimension"] == "language"]


def test_a_category_rising_while_the_alarm_is_open_is_named_once() -> None:
    drift = _drift()
    _feed(drift, 0, 14 * PER_HOUR)
    entries = _language_entries(drift)
    # entered drift on German's rise, widened once on Spanish's; no other entry while open
    assert [(a["state"], a.get("widened")) for a in entries] == [("drift", None),
                                                                  ("drift", ["es"])]  # fmt: skip
    opened, widened = entries
    assert opened["rising"] == ["de"] and opened["falling"] == ["en"]
    assert set(widened["rising"]) == {"de", "es"} and widened["falling"] == ["en"]
    # German first rose in hour 8 (t >= 28,800 s), Spanish in hour 10 (t >= 36,000 s)
    assert 8 * 3600 <= opened["timestamp"] - START.timestamp() < 9 * 3600
    assert 10 * 3600 <= widened["timestamp"] - START.timestamp() < 11 * 3600


def test_the_widening_survives_a_restart_and_an_old_state_adds_no_entry() -> None:
    whole = _drift()
    _feed(whole, 0, 14 * PER_HOUR)
    for keep_named in (True, False):
        first = _drift()
        _feed(first, 0, 9 * PER_HOUR)  # the alarm is open, German named
        state = copy.deepcopy(first.state_snapshot())
        if not keep_named:
            del state["named"]  # a state written before the field existed
        again = _drift()
        again.restore(state)
        _feed(again, 9 * PER_HOUR, 14 * PER_HOUR)
        assert _language_entries(again) == _language_entries(whole), keep_named


def test_the_reports_say_what_rose_since_the_alarm_opened() -> None:
    drift = _drift()
    _feed(drift, 0, 14 * PER_HOUR)
    doc = copy.deepcopy(samples.replay_report(series=True))
    doc["analytics"]["drift"] = drift.report()
    doc["gold_candidates"] = None  # (the sample's is the HTML page's list form)
    lines = [line for line in render_text(doc).splitlines() if "language vs baseline" in line]
    assert lines[0].startswith("  DRIFT  language vs baseline at 2026-11-27 08:")
    assert lines[0].endswith(": rising de, falling en")
    assert lines[1].startswith("  DRIFT+ language vs baseline at 2026-11-27 10:")
    assert lines[1].endswith(": now also rising es (rising de, es, falling en)") or \
        lines[1].endswith(": now also rising es (rising es, de, falling en)")  # fmt: skip
    page = drift_section(doc["analytics"]["drift"], doc["analytics"].get("series"))
    assert "now also rising: es; rising: " in page
