"""Production's retrieval on known questions as a drift dimension (trial 38, HIGH 2): a
12-hour collapse of hit rate@10 to 0 on known questions raised nothing on the live service
(only the replay's over-time verdict saw it). ``known_miss`` (1 - live hit rate@k of
production's logged ranking) is tested against its frozen baseline on the known-question
windows, with its own Bonferroni share; ``/v1/quality`` and the status page give the latest
window's hit rate beside the all-time one."""

from __future__ import annotations

import types
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from service.drift.stage import KNOWN_MISS, DriftStage
from service.drift.windows import WindowConfig
from service.html.status import moved_section
from service.pipeline import Batch
from service.quality.by_language import wilson
from service.quality.stage import recent_known_hits, recent_known_text
from tests.service.test_quality import EVENTS, build

START = datetime(2026, 11, 28, tzinfo=UTC)


def _stage() -> DriftStage:
    """Drift windows of 1 h, the known-question windows of 6 h (baseline: the first 6 h),
    20 scored known questions a window."""
    known = WindowConfig(window_s=6 * 3600, warmup_s=6 * 3600, test_every_s=1800)
    return DriftStage({}, windows=WindowConfig(test_every_s=1800), min_count=50,
                      terms=False, known_windows=known, known_min_count=20,
                      clock=lambda: (START + timedelta(days=30)).timestamp())  # fmt: skip


def _feed(drift: DriftStage, hours: int, note: Callable[[int], dict[str, Any]],
          offset: int = 0) -> None:  # fmt: skip
    """60 events an hour from ``offset`` (events)."""
    for start in range(offset, offset + hours * 60, 50):
        idx = range(start, min(offset + hours * 60, start + 50))
        events = [types.SimpleNamespace(timestamp=START + timedelta(minutes=i)) for i in idx]
        drift.process(types.SimpleNamespace(events=events, annotations=[note(i) for i in idx],
                                            streams=None))  # fmt: skip


def _notes(missed_every: int) -> Callable[[int], dict[str, Any]]:
    """Every 6th event a scored known question (10 an hour), missed when its own count is a
    multiple of ``missed_every`` (1: every one)."""

    def note(i: int) -> dict[str, Any]:
        notes: dict[str, Any] = {"language": "en", "topic": "t", "refused": False}
        if i % 6 == 0:
            notes["known_missed"] = (i // 6) % missed_every == 0
        return notes

    return note


def test_the_quality_stage_marks_scored_known_questions_missed_or_not() -> None:
    """tests/service/test_quality.py's hand-worked events: e-1 and e-2 scored with hit 1
    (not missed), e-3 known but unanswerable (not scored), e-4 and e-5 not known: none."""
    stage = build()
    batch = Batch.of(EVENTS, source="test")
    stage.process(batch)
    assert [notes.get("known_missed") for notes in batch.annotations] == [
        False, False, None, None, None]  # fmt: skip
    assert "known_missed" not in batch.annotations[2]


def test_a_collapse_of_the_hit_rate_alarms_and_the_recent_figure_shows_it() -> None:
    """12 h with 1 in 20 known questions missed (baseline: the first 6 h, 3 of 60), then 6 h
    with every one missed: the 6 h window's miss rate rises far past the baseline's and the
    rate test alarms; the recent hit rate is the window's, 1 - its miss rate."""
    drift = _stage()
    _feed(drift, 12, _notes(20))
    assert drift.report()[KNOWN_MISS]["state"] == "ok"
    assert drift.take_alarms() == {}
    _feed(drift, 6, _notes(1), offset=12 * 60)
    report = drift.report(detectable=True)
    body = report[KNOWN_MISS]
    test = body["comparisons"]["baseline"]
    assert body["state"] == "drift" and "reference" not in body["comparisons"]
    assert (test["n_reference"], test["rate_reference"]) == (60, pytest.approx(3 / 60))
    # the last test at 17:30: its 6 h window (11:30, 17:30] holds 4 known questions of the
    # old regime (k 116..119, none a multiple of 20) and 56 of the new one, all missed
    assert (test["n_current"], test["rate_current"]) == (60, pytest.approx(56 / 60))
    assert [a["state"] for a in report["alarms"] if a["dimension"] == KNOWN_MISS] == ["drift"]
    assert drift.take_alarms() == {(KNOWN_MISS, "baseline"): 1}
    assert test["detectable"]["text"].startswith(
        "known_miss vs baseline: with ~60 scored known questions a 6 h window"
    )
    # its level: its own share, as known_refusal's (alpha / 4 / 4 six-hour windows a day),
    # and the 1 h refusal windows keep the level four shared dimensions give them
    assert test["alpha"] == pytest.approx(0.001 / 4 / 4)
    assert report["refusal"]["comparisons"]["baseline"]["alpha"] == pytest.approx(0.001 / 4 / 24)
    got, state, window_s = drift.recent_known()
    assert (state, window_s) == ("drift", 6 * 3600)
    recent = recent_known_hits(got, window_s, 10, state)
    assert recent is not None
    low, high = wilson(4, 60)
    assert recent == {"window_s": 21600.0, "k": 10, "n": 60,
                      "hit_rate": pytest.approx(4 / 60), "low": pytest.approx(low),
                      "high": pytest.approx(high), "baseline_n": 60,
                      "baseline_hit_rate": pytest.approx(57 / 60), "state": "drift",
                      "timestamp": test["timestamp"]}  # fmt: skip
    assert recent_known_text(recent) == (
        "last 6 h: production hit rate@10 on known questions 0.067 [0.026, 0.159] of 60 "
        "(baseline 0.950 of 60; known_miss drift)")  # fmt: skip


def test_no_test_yet_gives_no_recent_figure() -> None:
    drift = _stage()
    got, state, _ = drift.recent_known()
    assert got is None and state == "insufficient_data"
    assert recent_known_hits(got, 3600.0, 10) is None and recent_known_text(None) is None
    empty = recent_known_hits(
        {
            "n_current": 0,
            "rate_current": float("nan"),
            "n_reference": 0,
            "state": "insufficient_data",
        },
        3600.0,
        10,
    )
    assert empty is not None and empty["hit_rate"] is None and recent_known_text(empty) is None


def test_the_status_page_shows_production_all_time_and_recent() -> None:
    quality = {
        "k": 10,
        "known": {"production": {"n_scored": 954, "hit_rate": 0.873}},
        "recent_text": "last 24 h: production hit rate@10 on known questions 0.500 "
        "[0.40, 0.60] of 100 (baseline 0.970 of 250; known_miss drift)",
    }
    html = str(moved_section({"drift": {}, "refusals": {}}, {"quality": quality}))
    assert "production hit rate@10 on known questions: all time 0.873 of 954" in html
    assert "last 24 h: production hit rate@10 on known questions 0.500" in html
