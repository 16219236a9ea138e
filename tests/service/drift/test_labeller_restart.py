"""A drift dimension whose labeller changes starts its windows afresh (trial 48 H1): 17
accepted gold rows recalibrated the out-of-scope detector (Deva cutoff 0.668 → 0.515), and a
frozen baseline judged by the old detector (13.3 %) alarmed against unchanged traffic judged
by the new one (4.5 %). Live (:meth:`DriftStage.set_labeller`) and across a restart
(:meth:`DriftStage.restore`); an unchanged labeller keeps the windows.

The traffic: one event every 6 s (600 an hour, the default 1 h window holds 600 ≥ the
default ``min_count`` 200; the default frozen baseline is the first 6 h). Under labeller A,
2 of every 10 scored questions are out of scope (20 %); the same questions under labeller B:
1 of 10 (10 %). Against a 20 % baseline a 10 % window of 600 is a fall of 10 points (above
the 5-point ``min_rate_change``), z ≈ 5.5 for 3,600 baseline events: an alarm at its first
test when nothing restarts."""

from __future__ import annotations

import json
import types
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from service.drift.stage import DriftStage, Labeller, restart_text

START = datetime(2026, 1, 1, tzinfo=UTC)
A = Labeller("key-a", "embedding, threshold 0.3458, off-corpus cutoff Deva 0.6683")
B = Labeller("key-b", "embedding, threshold 0.2343, off-corpus cutoff Deva 0.5146")


def _drift(labeller: Labeller | None) -> DriftStage:
    return DriftStage({"language": {"en": 10}, "topic": {"sports": 5, "places": 5}},
                      clock=lambda: (START + timedelta(days=30)).timestamp(),
                      labellers=None if labeller is None else {"out_of_scope": labeller},
                      )  # fmt: skip


def _at(i: int) -> datetime:
    return START + timedelta(seconds=6 * i)


def _feed(drift: DriftStage, first: int, last: int, out_of_ten: int) -> None:
    """Events ``first`` to ``last - 1``, one every 6 s; of every ten, ``out_of_ten`` are
    out of scope (a verdict the off-corpus range does not move)."""
    for start in range(first, last, 100):
        events, notes = [], []
        for i in range(start, min(start + 100, last)):
            events.append(types.SimpleNamespace(timestamp=_at(i)))
            out = i % 10 < out_of_ten
            notes.append({"language": "en", "topic": "sports", "refused": i % 10 == 9,
                          "out_of_scope": out, "out_of_scope_stable": out})  # fmt: skip
        drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))


def _opened(drift: DriftStage, dimension: str = "out_of_scope") -> list[dict[str, Any]]:
    return [a for a in drift.alarms if a["dimension"] == dimension and a["state"] == "drift"]


def _snap(detector: Any) -> str:
    return json.dumps(detector.snapshot(), sort_keys=True)


def test_without_a_restart_the_changed_labeller_alarms_on_unchanged_traffic() -> None:
    """The finding as it was: the windows keep A's 20 % baseline and B's 10 % is compared."""
    drift = _drift(None)
    _feed(drift, 0, 6_000, out_of_ten=2)  # 10 h under A
    _feed(drift, 6_000, 7_200, out_of_ten=1)  # 2 h of the same traffic under B
    alarm = _opened(drift)[0]
    # (its 1 h window, tested every 5 min, holds B's 10 % and some of A's 20 % at first)
    assert (alarm["comparison"], alarm["rate_compared"]) == ("baseline", pytest.approx(0.2))
    assert alarm["rate_current"] < 0.15 and alarm["after_events"] < 7_200


def test_a_new_labeller_restarts_the_out_of_scope_windows_only() -> None:
    drift = _drift(A)
    _feed(drift, 0, 6_000, out_of_ten=2)
    language, refusal = drift.categorical["language"], drift.rates["refusal"]
    before = _snap(drift.rates["out_of_scope"])
    assert drift.set_labeller("out_of_scope", A, "unchanged") is False  # same key: kept
    assert _snap(drift.rates["out_of_scope"]) == before
    assert "windows_restarted" not in drift.report()["out_of_scope"]
    assert drift.set_labeller("out_of_scope", B, "recalibrated") is True
    assert _snap(drift.rates["out_of_scope"]) == _snap(_drift(B).rates["out_of_scope"])
    assert drift.categorical["language"] is language and drift.rates["refusal"] is refusal
    # when: after the 6,000 events seen, at the watermark, the last event's time (5,999 · 6 s)
    assert drift.report()["out_of_scope"]["windows_restarted"] == {
        "after_events": 6_000,
        "timestamp": _at(5_999).timestamp(),
        "why": "recalibrated",
    }
    assert drift.labellers["out_of_scope"] == B
    # the same traffic under B: no alarm, the baseline warms up again (6 h from 10:00)
    _feed(drift, 6_000, 9_000, out_of_ten=1)  # 10:00 to 15:00: still warming up
    assert _opened(drift) == []
    baseline = drift.report()["out_of_scope"]["comparisons"]["baseline"]
    assert (baseline["state"], baseline["n_reference"]) == ("insufficient_data", 0)
    _feed(drift, 9_000, 12_000, out_of_ten=1)  # to 20:00: frozen at 16:00 (3,600 events)
    baseline = drift.report()["out_of_scope"]["comparisons"]["baseline"]
    assert (baseline["state"], baseline["n_reference"]) == ("ok", 3_600)
    assert baseline["rate_reference"] == pytest.approx(0.1)
    assert _opened(drift) == []
    # a real rise under B is still seen: 10 % → 30 % (at a test while the window fills)
    _feed(drift, 12_000, 13_200, out_of_ten=3)
    (alarm,) = _opened(drift)
    assert alarm["rate_compared"] == pytest.approx(0.1) and alarm["rate_current"] > 0.15


def test_an_open_alarm_ends_with_the_windows_it_was_tested_on() -> None:
    drift = _drift(A)
    _feed(drift, 0, 3_600, out_of_ten=2)  # the 6 h baseline at 20 %
    _feed(drift, 3_600, 4_800, out_of_ten=4)  # 2 h at 40 %: an alarm
    assert len(_opened(drift)) == 1 and drift.states()["out_of_scope"] == "drift"
    drift.set_labeller("out_of_scope", B, "recalibrated")
    ended = drift.alarms[-1]
    assert ended == {"dimension": "out_of_scope", "comparison": "baseline",
                     "state": "insufficient_data", "after_events": 4_800,
                     "timestamp": _at(4_799).timestamp(), "restarted": "recalibrated"}  # fmt: skip
    assert drift.states()["out_of_scope"] == "insufficient_data"
    _feed(drift, 4_800, 5_400, out_of_ten=4)  # the fresh windows: no second entry
    assert drift.alarms[-1] == ended


def test_a_snapshot_under_another_labeller_restores_no_out_of_scope_windows() -> None:
    first = _drift(A)
    _feed(first, 0, 6_000, out_of_ten=2)
    snapshot = json.loads(json.dumps(first.state_snapshot()))
    assert snapshot["labellers"] == {"out_of_scope": {"key": A.key, "name": A.name}}
    same = _drift(A)
    same.restore(snapshot)
    assert _snap(same.rates["out_of_scope"]) == _snap(first.rates["out_of_scope"])
    assert same.restarts == {}
    other = _drift(B)
    other.restore(snapshot)
    assert _snap(other.rates["out_of_scope"]) == _snap(_drift(B).rates["out_of_scope"])
    assert _snap(other.rates["refusal"]) == _snap(first.rates["refusal"])
    restarted = other.report()["out_of_scope"]["windows_restarted"]
    assert restarted == {
        "after_events": 6_000, "timestamp": _at(5_999).timestamp(),
        "why": f"the out-of-scope detector changed while the service was stopped ({A.name} → "
               f"{B.name}): counts made under the two are not comparable"}  # fmt: skip
    _feed(other, 6_000, 7_200, out_of_ten=1)
    assert _opened(other) == []
    # kept across the next restart under the same labeller, said again
    again = _drift(B)
    again.restore(json.loads(json.dumps(other.state_snapshot())))
    assert again.report()["out_of_scope"]["windows_restarted"] == restarted
    # a snapshot kept before labellers were saved: restored whole, the labeller adopted
    older = {k: v for k, v in snapshot.items() if k not in ("labellers", "restarts")}
    upgraded = _drift(B)
    upgraded.restore(older)
    assert _snap(upgraded.rates["out_of_scope"]) == _snap(first.rates["out_of_scope"])
    assert upgraded.restarts == {}


def test_only_dimensions_with_a_labeller_can_restart() -> None:
    drift = _drift(None)
    assert drift.set_labeller("out_of_scope", A, "first told") is False  # told, nothing kept
    for dim in ("language", "refusal", "known_miss", "known_refusal", "terms"):
        with pytest.raises(ValueError, match="no labeller"):
            drift.set_labeller(dim, A, "x")


def test_restart_text_says_when_and_why() -> None:
    text = restart_text("out_of_scope", {"after_events": 3_000,
                                         "timestamp": _at(0).timestamp(), "why": "w"})  # fmt: skip
    assert text == ("out_of_scope windows started afresh at 2026-01-01 00:00 UTC (after 3000 "
                    "events): w; its baseline warms up again, and no count from before is "
                    "compared with one from after")  # fmt: skip


def test_the_reports_say_the_restart_and_the_alarm_it_ended() -> None:
    """The HTML drift section (replay page and status page) and the status page's *What
    moved* row say the restart; the alarm table says why the open alarm ended."""
    from service.html.drift_section import drift_section
    from service.html.status import moved_section

    drift = _drift(A)
    _feed(drift, 0, 3_600, out_of_ten=2)
    _feed(drift, 3_600, 4_800, out_of_ten=4)  # an open alarm
    drift.set_labeller("out_of_scope", B, "the detector was recalibrated")
    report = drift.report()
    said = restart_text("out_of_scope", report["out_of_scope"]["windows_restarted"])
    assert said.startswith("out_of_scope windows started afresh at 2026-01-01 07:59 UTC "
                           "(after 4800 events): the detector was recalibrated")  # fmt: skip
    html = str(drift_section(report))
    assert said in html
    assert "ended: its windows started afresh (the detector was recalibrated)" in html
    moved = str(moved_section({"drift": report}))
    assert said in moved and "no dimension in drift" in moved


def test_the_drift_series_of_restarted_windows_read_untested() -> None:
    """A ``drift`` state series kept from before a restart would page on windows that no
    longer exist (``DriftDetected``): after it, the untested comparisons read
    ``insufficient_data`` and p 1."""
    from prometheus_client import CollectorRegistry

    from service.telemetry import build_analytics_metrics

    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    drift = _drift(A)
    _feed(drift, 0, 3_600, out_of_ten=2)
    _feed(drift, 3_600, 4_800, out_of_ten=4)
    metrics.observe_drift(drift.report())
    labels = {"dimension": "out_of_scope", "comparison": "baseline"}

    def state(name: str) -> float | None:
        return registry.get_sample_value("goldwatch_drift_state", {**labels, "state": name})

    assert state("drift") == 1.0
    drift.set_labeller("out_of_scope", B, "recalibrated")
    metrics.observe_drift(drift.report())
    assert (state("drift"), state("insufficient_data")) == (0.0, 1.0)
    assert registry.get_sample_value("goldwatch_drift_p_value", labels) == 1.0
    # only the comparisons it had: out_of_scope has no gold-set one, and gets no p-value of
    # it, nor an insufficient_data state (its state series stay at the 0 they are made with)
    never = {**labels, "comparison": "reference"}
    assert registry.get_sample_value("goldwatch_drift_p_value", never) is None
    assert registry.get_sample_value("goldwatch_drift_state",
                                     {**never, "state": "insufficient_data"}) == 0.0  # fmt: skip
    other = {"dimension": "refusal", "comparison": "baseline", "state": "ok"}
    assert registry.get_sample_value("goldwatch_drift_state", other) == 1.0  # kept


def _upgraded(now: Labeller, recorded: str | None) -> tuple[DriftStage, DriftStage]:
    """``(first, upgraded)``: a state kept by a version before labellers were saved (session
    47: its drift snapshot has no ``labellers``, the annotation totals' ``counted_under``
    names the detector the counts were made under, ``recorded``), with an open
    ``out_of_scope`` alarm (20 % → 40 %), restored into a pipeline wired as
    :func:`~service.runtime.analytics.build_analytics` wires it, whose detector is ``now``."""
    import functools

    from service.pipeline import Pipeline
    from service.pipeline.totals import AnnotationTotals
    from service.runtime.analytics import last_counted_under

    first = _drift(None)
    _feed(first, 0, 3_600, out_of_ten=2)
    _feed(first, 3_600, 4_800, out_of_ten=4)
    assert len(_opened(first)) == 1
    older = {k: v for k, v in json.loads(json.dumps(first.state_snapshot())).items()
             if k not in ("labellers", "restarts")}  # fmt: skip
    under = [] if recorded is None else [{"detector": recorded, "from_scored": 0}]
    upgraded, totals = _drift(now), AnnotationTotals()
    upgraded.recorded_labellers["out_of_scope"] = functools.partial(last_counted_under, totals)
    Pipeline([upgraded, totals]).restore(  # (drift before the totals, as built)
        {"stage/drift": older, "stage/annotation_totals": {"counted_under": under}}
    )
    return first, upgraded


def test_an_older_state_counted_under_another_detector_restarts_the_out_of_scope_windows() -> None:
    """The review of trial 48 H1: a state kept by main under the original gold set (no
    ``labellers``), run on the grown one, was restored whole and alarmed (13.3 % → 4.5 %)."""
    first, upgraded = _upgraded(B, recorded=A.name)
    assert _snap(upgraded.rates["out_of_scope"]) == _snap(_drift(B).rates["out_of_scope"])
    assert _snap(upgraded.rates["refusal"]) == _snap(first.rates["refusal"])
    why = (f"the out-of-scope detector differs from the one the stored counts were made under "
           f"({A.name} → {B.name}): counts made under the two are not comparable")  # fmt: skip
    assert upgraded.report()["out_of_scope"]["windows_restarted"] == {
        "after_events": 4_800, "timestamp": _at(4_799).timestamp(), "why": why}  # fmt: skip
    assert upgraded.alarms[-1] == {
        "dimension": "out_of_scope", "comparison": "baseline", "state": "insufficient_data",
        "after_events": 4_800, "timestamp": _at(4_799).timestamp(), "restarted": why}  # fmt: skip
    _feed(upgraded, 4_800, 7_200, out_of_ten=1)  # the same traffic judged by B: no alarm
    assert _opened(upgraded) == _opened(first)  # (only the one ended at the restart)
    assert upgraded.labellers["out_of_scope"] == B  # the next snapshot keeps it
    assert upgraded.state_snapshot()["labellers"]["out_of_scope"] == {"key": B.key, "name": B.name}


def test_an_older_state_counted_under_the_same_detector_is_restored_whole() -> None:
    for recorded in (A.name, None):  # the same detector, or none recorded
        first, upgraded = _upgraded(A, recorded=recorded)
        assert _snap(upgraded.rates["out_of_scope"]) == _snap(first.rates["out_of_scope"])
        assert upgraded.restarts == {} and upgraded.alarms == first.alarms
        assert upgraded.states()["out_of_scope"] == "drift"  # the open alarm kept
