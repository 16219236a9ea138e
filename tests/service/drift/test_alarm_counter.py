"""Every drift alarm raised reaches ``goldwatch_drift_alarms_total`` once (trial 38, MEDIUM
3): alarms raised and cleared within a log read faster than real time never held the drift
state for DriftDetected's 15 minutes and never became an alert. The counter counts each move
into ``drift`` (not a widening, not a clearing), raised and cleared alike, and a restored
state adds nothing (the process that raised an alarm counted it)."""

from __future__ import annotations

import copy
import types
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry

from service.drift.stage import DriftStage
from service.telemetry import build_analytics_metrics

START = datetime(2026, 11, 27, tzinfo=UTC)
PER_HOUR = 600  # one event every 6 s
ALARMS = "goldwatch_drift_alarms_total"


def _language(i: int) -> str:
    """Hours 0-8 English only (the frozen baseline is hours 0-6); hours 8-11, 4 in 10
    German; from hour 11 English only again (the alarm clears); from hour 14, 4 in 10
    German again (a second alarm)."""
    hour, k = i // PER_HOUR, i % 10
    return "de" if (8 <= hour < 11 or hour >= 14) and k < 4 else "en"


def _feed(drift: DriftStage, start: int, end: int) -> None:
    for first in range(start, end, 100):
        events = [types.SimpleNamespace(timestamp=START + timedelta(seconds=6 * i))
                  for i in range(first, first + 100)]  # fmt: skip
        notes = [{"language": _language(i), "topic": "fees"} for i in range(first, first + 100)]
        drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))


def _drift() -> DriftStage:
    return DriftStage({}, clock=lambda: (START + timedelta(days=30)).timestamp())


def _raised(drift: DriftStage) -> dict[tuple[str, str], int]:
    """The alarm entries that moved a comparison into drift, counted per comparison."""
    out: dict[tuple[str, str], int] = {}
    for entry in drift.alarms:
        if entry["state"] == "drift" and "widened" not in entry:
            key = (entry["dimension"], entry["comparison"])
            out[key] = out.get(key, 0) + 1
    return out


def test_each_raised_alarm_is_taken_once_cleared_or_not() -> None:
    drift = _drift()
    _feed(drift, 0, 18 * PER_HOUR)  # taken once, at the end: raised and cleared in between
    taken = drift.take_alarms()
    assert taken == _raised(drift)
    assert taken[("language", "baseline")] == 2  # hours 8 and 14; cleared in between
    assert [a["state"] for a in drift.alarms if a["dimension"] == "language"
            and a["comparison"] == "baseline"] == ["drift", "ok", "drift"]  # fmt: skip
    assert drift.take_alarms() == {}  # taken: none pending


def test_the_counter_adds_the_taken_alarms_and_a_restore_adds_none() -> None:
    first = _drift()
    _feed(first, 0, 9 * PER_HOUR)  # the first alarm is open
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    labels = {"dimension": "language", "comparison": "baseline"}
    assert registry.get_sample_value(ALARMS, labels) == 0.0  # pre-initialised for increase()
    metrics.count_alarms(first.take_alarms())
    assert registry.get_sample_value(ALARMS, labels) == 1.0
    again = _drift()
    again.restore(copy.deepcopy(first.state_snapshot()))
    assert again.take_alarms() == {}
    _feed(again, 9 * PER_HOUR, 18 * PER_HOUR)
    metrics.count_alarms(again.take_alarms())
    assert registry.get_sample_value(ALARMS, labels) == 2.0  # the second alarm only
    metrics.count_alarms({("sideways", "baseline"): 1})
    assert registry.get_sample_value(ALARMS, {"dimension": "other",
                                              "comparison": "baseline"}) == 1.0  # fmt: skip
