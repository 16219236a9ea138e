"""An ``out_of_scope`` drift baseline counted before the dimension tested the stable verdicts
only (review s38-rev-oos): restored by the code that tests them, it compared a window of the
stable verdicts with a baseline of all of them and alarmed on unchanged traffic."""

from __future__ import annotations

import json
import types
from datetime import UTC, datetime, timedelta
from typing import Any

from service.drift.stage import DriftStage, alarm_kind

START = datetime(2026, 1, 1, tzinfo=UTC)


def _drift() -> DriftStage:
    return DriftStage({"language": {"en": 10}, "topic": {"sports": 5, "places": 5}},
                      clock=lambda: (START + timedelta(days=30)).timestamp())  # fmt: skip


def _steady(drift: DriftStage, first: int, last: int, stable_only: bool) -> None:
    """Events ``first`` to ``last``, one every 6 s, the same mix all along: of every ten
    scored questions two are out of scope with a verdict the off-corpus cutoff's range does
    not move, two out of scope and one in scope with one it moves (``scope_unstable``).
    ``stable_only``: annotated as the stage does now (``out_of_scope_stable`` ``None`` on
    the moved verdicts); else as the code before saw them (every verdict)."""
    for start in range(first, last, 100):
        events, notes = [], []
        for i in range(start, start + 100):
            events.append(types.SimpleNamespace(timestamp=START + timedelta(seconds=6 * i)))
            out, unstable = i % 10 < 4, i % 10 in (2, 3, 4)
            stable = None if (unstable and stable_only) else out
            notes.append({"language": "en", "topic": "sports", "scope_score": 0.5,
                          "out_of_scope": out, "out_of_scope_stable": stable})  # fmt: skip
        drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))


def _alarms(drift: DriftStage, dimension: str) -> list[dict[str, Any]]:
    return [a for a in drift.alarms if a["dimension"] == dimension and a["state"] == "drift"]


def test_a_baseline_of_every_verdict_is_not_restored_against_the_stable_ones() -> None:
    """The old code's baseline: 40 % out of scope (every verdict); the stable verdicts of the
    same traffic: 2 of 7 (28.6 %). A state without ``scope_rule`` restores no
    ``out_of_scope`` detector: it warms up afresh; a state with it is restored whole."""
    old = _drift()
    _steady(old, 0, 6_000, stable_only=False)  # 10 h: the frozen baseline is the first 6 h
    state = json.loads(json.dumps(old.state_snapshot()))
    state.pop("scope_rule", None)  # what the code before the rule saved
    new = _drift()
    new.restore(state)
    _steady(new, 6_000, 9_000, stable_only=True)
    assert _alarms(new, "out_of_scope") == []
    baseline = new.report()["out_of_scope"]["comparisons"]["baseline"]
    assert (baseline["state"], baseline["n_reference"]) == ("insufficient_data", 0)
    assert new.report()["refusal"] is not None  # the other dimensions are restored
    again = _drift()
    again.restore(json.loads(json.dumps(new.state_snapshot())))
    assert json.dumps(again.rates["out_of_scope"].snapshot(), sort_keys=True) == json.dumps(
        new.rates["out_of_scope"].snapshot(), sort_keys=True
    )


def test_an_open_alarm_of_a_dimension_not_restored_ends_restarted_not_untested() -> None:
    """Review B1 of s51-lull: a state kept before ``scope_rule`` with an ``out_of_scope``
    alarm open. Its windows are not restored, so the alarm ends at the restore, as for a new
    labeller: one ``insufficient_data`` row with ``restarted`` (kind ``restarted``) after the
    6000 events the state had seen, at the watermark of event 5999 (6 s apart from START),
    and the report says the windows started afresh. Before the fix the stage kept the alarm
    open, and the next test, short of events in the fresh windows, ended it ``untested``
    ("no test had enough for 24 h") although its windows had only just started."""
    old = _drift()
    _steady(old, 0, 6_000, stable_only=False)
    state = json.loads(json.dumps(old.state_snapshot()))
    state.pop("scope_rule")
    state["last_state"]["out_of_scope/baseline"] = "drift"  # an alarm open at the snapshot
    new = _drift()
    new.restore(state)
    _steady(new, 6_000, 6_300, stable_only=True)
    ended = [a for a in new.alarms if a["dimension"] == "out_of_scope"]
    assert len(ended) == 1
    assert alarm_kind(ended[0]) == "restarted"
    assert (ended[0]["comparison"], ended[0]["state"], ended[0]["after_events"]) == (
        "baseline", "insufficient_data", 6_000)  # fmt: skip
    at = (START + timedelta(seconds=6 * 5_999)).timestamp()
    assert ended[0]["timestamp"] == at
    assert "earlier rule" in ended[0]["restarted"]
    restarted = new.report()["out_of_scope"]["windows_restarted"]
    assert (restarted["after_events"], restarted["timestamp"]) == (6_000, at)
    assert not [a for a in new.alarms if alarm_kind(a) == "untested"]
