"""The share of questions on documents no gold row asks about (trial 24, MEDIUM 5).

From hour 48, 45 % of the trial's questions asked about ~150 articles no gold row covers,
each under 1 % of the traffic: no single document had a coverage gap, so nothing said "new
articles". :meth:`CoverageTracker.uncovered` is the aggregate (all-time, over the window and
before it, with 95 % Wilson intervals). The gold set's share is 0 by construction, so the
test is the rise against earlier traffic: ``harvest.min_uncovered_rise`` is the floor of the
95 % lower bound of recent share − earlier share (Newcombe 1998, method 10), from which
each question on an uncovered document takes that bound as its ``document`` gap
(``coverage_gap`` from ``min_gap``).

The scenario: a window of 10, twenty questions on the covered document "a", then one on
each of ten uncovered ones. Hand-worked bounds (z = 1.959964, z² = 3.841459):

* Wilson of 0 of m: [0, z²/(m + z²)]: 0 of 14 → 0.215311, 0 of 15 → 0.203883, 0 of 20 →
  0.161125; of m of m: [m/(m + z²), 1]: 10 of 10 → 0.722467;
* Wilson lower of 4 of 10: centre 0.4 + z²/20 = 0.592073, half z √(0.024 + z²/400) =
  0.359287, scale 1.384146 → 0.168180; of 5 of 10: 0.236593; of 1 of 10 (one uncovered
  document's own gap, gold share 0): 0.017876;
* the rise's lower bound d − √((p1 − l1)² + (u2 − p2)²): 4 of 10 against 0 of 14:
  0.4 − √(0.231820² + 0.215311²) = 0.083616 (under the 0.1 floor); 5 of 10 against 0 of
  15: 0.5 − √(0.263407² + 0.203883²) = 0.166906; 10 of 10 against 0 of 20:
  1 − √(0.277533² + 0.161125²) = 0.679086;
* all time 10 of 30: Wilson [0.192305, 0.512199].
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from service.coverage import rise_lower_bound
from service.document_groups import uncovered_note
from service.harvest import HarvestStage
from service.harvest.config import HarvestConfig
from service.harvest.signals import (
    DOCUMENT,
    CoverageTracker,
    judged_out_of_scope,
    production_documents,
)
from service.html.extras import document_gap_table
from service.jobs.replay import document_gap_lines
from tests.service.harvest.helpers import batch, event

R_4, R_5, R_10 = 0.083616, 0.166906, 0.679086
L_1_OF_10 = 0.017876
L_10_OF_30, U_10_OF_30, U_0_OF_20, L_10_OF_10 = 0.192305, 0.512199, 0.161125, 0.722467
NOTES = {"language": "en", "topic": "fees"}
UNCOVERED = list("bcdefghijk")
DOCS = ["a"] * 20 + UNCOVERED


def _tracker(floor: float | None = 0.1) -> CoverageTracker:
    return CoverageTracker({DOCUMENT: {"a": 1}, "language": {"en": 1}}, min_live_events=1,
                           window=10, min_uncovered_rise=floor)  # fmt: skip


def _push(tracker: CoverageTracker, docs: list[str]) -> list[float]:
    return tracker.update_each([dict(NOTES) for _ in docs], list(docs))[DOCUMENT]


def test_the_rise_bound_is_newcombe_s() -> None:
    assert rise_lower_bound(56, 70, 48, 80) == pytest.approx(0.0524, abs=1e-4)  # his (a)
    assert rise_lower_bound(4, 10, 0, 14) == pytest.approx(R_4, abs=1e-6)
    assert rise_lower_bound(10, 10, 0, 20) == pytest.approx(R_10, abs=1e-6)
    assert rise_lower_bound(1, 0, 1, 1) == -1.0


def test_an_uncovered_document_takes_the_rise_s_bound_once_it_reaches_the_floor() -> None:
    gaps = _push(_tracker(), DOCS)
    assert gaps[:20] == [0.0] * 20  # the covered document: its share is its gold share's
    assert R_4 < 0.1 <= R_5
    assert gaps[23] == pytest.approx(L_1_OF_10, abs=1e-6)  # "e": 4 of 10, its own gap
    assert gaps[24] == pytest.approx(R_5, abs=1e-6)  # "f": 5 of 10 against 0 of 15
    assert gaps[29] == pytest.approx(R_10, abs=1e-6)
    alone = _push(_tracker(None), DOCS)  # no floor: each document's own gap only
    assert alone[24] == pytest.approx(L_1_OF_10, abs=1e-6)
    assert alone[29] == pytest.approx(L_1_OF_10, abs=1e-6)


def test_the_share_all_time_recent_and_before_with_intervals() -> None:
    tracker = _tracker()
    _push(tracker, DOCS)
    share = tracker.uncovered()
    assert share is not None
    assert (share["live"], share["live_total"]) == (10, 30)
    assert share["low"] == pytest.approx(L_10_OF_30, abs=1e-6)
    assert share["high"] == pytest.approx(U_10_OF_30, abs=1e-6)
    assert (share["recent"]["live"], share["recent"]["live_total"]) == (10, 10)
    assert share["recent"]["low"] == pytest.approx(L_10_OF_10, abs=1e-6)
    assert (share["earlier"]["live"], share["earlier"]["live_total"]) == (0, 20)
    assert share["earlier"]["high"] == pytest.approx(U_0_OF_20, abs=1e-6)
    assert share["rise_low"] == pytest.approx(R_10, abs=1e-6)
    assert share["gap"] is True and share["min_rise"] == 0.1
    # ten more on "a": the window holds none uncovered, the ten before it all
    assert _push(tracker, ["a"] * 10) == [0.0] * 10
    share = tracker.uncovered()
    assert share is not None
    assert (share["recent"]["live"], share["earlier"]["live"], share["earlier"]["live_total"]) == (
        0, 10, 30)  # fmt: skip
    assert share["rise_low"] < 0 and share["gap"] is False
    fresh = _tracker()
    _push(fresh, ["b"] * 10)  # nothing before the window yet: not tested
    first = fresh.uncovered()
    assert first is not None and first["rise_low"] is None and first["gap"] is False
    assert CoverageTracker({"language": {"en": 1}}).uncovered() is None  # no gold documents


def test_the_counts_follow_gold_refreshes_and_restores() -> None:
    tracker = _tracker()
    _push(tracker, DOCS)
    tracker.set_gold({DOCUMENT: {"a": 1, "b": 1}})  # a new gold row asks about "b"
    share = tracker.uncovered()
    assert share is not None
    assert (share["recent"]["live"], share["earlier"]["live"], share["live"]) == (9, 0, 9)
    assert share["earlier"]["live_total"] == 20
    restored = _tracker()
    restored.set_gold({DOCUMENT: {"a": 1, "b": 1}})
    restored.load(tracker.state())
    again = restored.uncovered()
    assert again is not None
    assert (again["recent"], again["earlier"]) == (share["recent"], share["earlier"])


def test_forgotten_uncovered_documents_stay_uncovered_after_a_refresh_or_restore() -> None:
    """Earlier traffic half on the covered "a", half on 200 uncovered documents seen once
    each, most forgotten past max_documents = 10: the earlier share stays 50 % (175 of 350)
    after a gold refresh (same gold) and a restore; counting the forgotten events as
    covered made it 0 % and the rise's bound 0.37, a gap from nothing (review s39)."""

    def make() -> CoverageTracker:
        return CoverageTracker({DOCUMENT: {"a": 1}, "language": {"en": 1}}, min_live_events=20,
                               window=50, max_documents=10, min_uncovered_rise=0.1)  # fmt: skip

    tracker = make()
    _push(tracker, [doc for i in range(200) for doc in ("a", f"u{i}")])
    assert tracker.documents_uncounted_uncovered > 0
    running = tracker.uncovered()
    assert running is not None and not running["gap"]
    assert (running["earlier"]["live"], running["earlier"]["live_total"]) == (175, 350)
    tracker.set_gold({DOCUMENT: {"a": 1}})
    assert tracker.uncovered() == running
    restored = make()
    restored.load(tracker.state())
    assert restored.uncovered() == running
    assert _push(restored, ["u999"]) == _push(tracker, ["u999"])
    assert running["live"] == 200  # all time: the forgotten uncovered events too


def test_document_counts_saved_before_out_of_scope_questions_were_left_out_start_afresh() -> None:
    """A state saved before questions judged out of scope were left out of the document
    counts (no ``document_rule``) restores none of them: mixed with today's, its all-time
    counts kept the earlier share at the old rule's (trial 24 upgraded after 2,000 events:
    the rise's bound 15 points instead of 29). The other windows are restored."""
    tracker = _tracker()
    _push(tracker, DOCS)
    saved = tracker.state()
    assert saved["document_rule"] == "in_scope_questions"
    same = _tracker()
    same.load(saved)
    assert same.uncovered() == tracker.uncovered() and not same.documents_reset
    before = _tracker()
    before.load({k: v for k, v in saved.items() if k != "document_rule"})
    assert before.documents_reset
    assert (len(before.document_totals), before.live[DOCUMENT], before.events) == (0, {}, 10)
    share = before.uncovered()
    assert share is not None and (share["live_total"], share["earlier"]["live_total"]) == (0, 0)
    assert before.state()["document_rule"] == "in_scope_questions"


def test_a_refresh_covering_forgotten_documents_keeps_the_earlier_share_a_share() -> None:
    """Uncovered "c", "d", "e" forgotten past max_documents = 1 while still in the window,
    then a gold refresh covers them: their events count as uncovered by the gold of when
    they were forgotten (3), the window's by today's (0), so 3 uncovered of the 1 event
    before the window — a share of 3, whose Wilson bound raised ValueError in
    ``uncovered()`` and in the next uncovered event's rise (review s40). Clamped to the
    earlier events: over-stated there, the rise under-stated, no gap from it."""
    tracker = CoverageTracker({DOCUMENT: {"a": 1}}, min_live_events=1, window=4,
                              max_documents=1, min_uncovered_rise=0.1)  # fmt: skip
    _push(tracker, ["a", "c", "d", "e"])  # "c", "d", "e": forgotten, uncovered then
    _push(tracker, ["a"])  # the first "a" leaves the window
    assert tracker.documents_uncounted_uncovered == 3
    tracker.set_gold({DOCUMENT: {"a": 1, "c": 1, "d": 1, "e": 1}})
    share = tracker.uncovered()
    assert share is not None
    assert (share["earlier"]["live"], share["earlier"]["live_total"]) == (1, 1)
    assert (share["recent"]["live"], share["recent"]["live_total"]) == (0, 4)
    # "c" leaves: 1 uncovered of 4 against 1 of 2 before; "b" keeps its own gap, the
    # Wilson lower bound of 1 of 4 (centre 0.730182, half 0.640816, scale 1.960365)
    [gap] = _push(tracker, ["b"])
    assert gap == pytest.approx(0.045587, abs=1e-6)
    share = tracker.uncovered()
    assert share is not None and share["earlier"]["live"] <= share["earlier"]["live_total"]
    assert share["gap"] is False


def test_the_floor_is_a_setting() -> None:
    assert HarvestConfig().min_uncovered_rise == 0.1
    assert HarvestConfig(min_uncovered_rise=None).min_uncovered_rise is None
    with pytest.raises(ValueError, match="min_uncovered_rise"):
        HarvestConfig(min_uncovered_rise=1.5)


def _stage(floor: float | None, corpus: dict[str, str]) -> HarvestStage:
    config = HarvestConfig(flush_interval_s=0.0, min_live_events=1, gap_window=10,
                           min_uncovered_rise=floor)  # fmt: skip
    gold = {"language": {"en": 4}, "topic": {"fees": 4}, DOCUMENT: {"a": 1}}
    return HarvestStage(config, gold_counts=gold, documents=corpus)


CORPUS = {f"p-{doc}": doc for doc in ["a", *UNCOVERED]}


def _question(i: int) -> str:
    """Thirty questions no two alike (the harvest merges near-duplicates)."""
    return " ".join(hashlib.sha256(f"{i}-{k}".encode()).hexdigest()[:7] for k in range(6))


def _run(stage: HarvestStage) -> dict[str, dict[str, Any]]:
    """The questions of DOCS, production's first passage on their document."""
    events = [event(f"e{i}", _question(i), results=[(f"p-{doc}", 2.0)])
              for i, doc in enumerate(DOCS)]  # fmt: skip
    stage.process(batch(events, [dict(NOTES) for _ in events]))
    return {row["question"]: dict(row) for row in stage.records()}


def test_the_harvest_gives_coverage_gap_by_document_when_the_share_rose() -> None:
    rows = _run(_stage(0.1, CORPUS))
    last = rows[_question(29)]
    assert "coverage_gap" in last["reasons"] and last["gap_dimension"] == DOCUMENT
    assert last["gap"] == pytest.approx(R_10, abs=1e-6)
    assert rows[_question(24)]["gap"] == pytest.approx(R_5, abs=1e-6)
    # "e" keeps its own gap, 0.017876, under min_gap 0.02: no reason, no suggestion
    assert _question(23) not in rows
    assert sorted(rows) == sorted(_question(i) for i in range(24, 30))
    assert _run(_stage(None, CORPUS)) == {}


def test_the_reports_show_the_share_when_some_document_has_no_gold_row() -> None:
    stage = _stage(0.1, CORPUS)
    _run(stage)
    report = stage.document_gaps(10)
    assert report is not None
    share = report["uncovered"]
    assert (share["live"], share["live_total"], share["gap"]) == (10, 30, True)
    [line] = uncovered_note(share)
    assert line == (
        "documents the gold set does not cover (questions judged out of scope left out): "
        "100.0% of the recent questions (10 of 10) "
        "[72.2%, 100.0%] against 0.0% before (0 of 20) [0.0%, 16.1%], 33.3% of all (10 of 30) "
        "[19.2%, 51.2%]: a coverage gap (the rise's 95 % lower bound 67.9 points ≥ 10, "
        "harvest.min_uncovered_rise)")  # fmt: skip
    assert document_gap_lines(report)[-1] == "  " + line
    html = "".join(document_gap_table(report))
    assert (
        "Documents the gold set does not cover (questions judged out of scope left out): "
        "100.0% of the recent questions"
    ) in html
    covered = _stage(0.1, {"p-a": "a"})  # every corpus document has a gold row: no share
    _run(covered)
    report = covered.document_gaps(10)
    assert report is not None and "uncovered" not in report
    assert uncovered_note(None) == []
    assert uncovered_note({**share, "gap": False, "rise_low": 0.05})[0].endswith(
        "no gap (the rise's 95 % lower bound 5.0 points < 10, harvest.min_uncovered_rise)"
    )
    assert uncovered_note({**share, "min_rise": None})[0].endswith(
        "never a gap (harvest.min_uncovered_rise: null)"
    )
    assert uncovered_note({**share, "rise_low": None, "earlier": {"live_total": 0}})[0] == (
        "documents the gold set does not cover (questions judged out of scope left out): "
        "100.0% of the recent questions (10 of 10) "
        "[72.2%, 100.0%] against none yet before, 33.3% of all (10 of 30) [19.2%, 51.2%]: "
        "not tested yet (too few questions before the recent ones)")  # fmt: skip


# -- out-of-scope questions are no coverage gap (trial 24: 99 CLINC150 chit-chat questions
# judged out of scope took coverage_gap from the uncovered share) ---------------------------

#: the scope stage's annotations (service.refusals.stage.annotate_scope) of an answered
#: question judged out of scope: stable and calibrated, unstable, uncalibrated
OUT = {"out_of_scope": True, "out_of_scope_stable": True, "scope_calibrated": True,
       "refused": False, "under_refusal": True}  # fmt: skip
UNSTABLE = {**OUT, "out_of_scope_stable": None, "scope_unstable": True}
UNCALIBRATED = {**OUT, "scope_calibrated": False}
#: the DOCS questions judged so: a covered one (0), three uncovered ones ("b", "c", "d"),
#: "e" unstably and "f" by an uncalibrated detector
SCOPE = {0: OUT, 20: OUT, 21: OUT, 22: OUT, 23: UNSTABLE, 24: UNCALIBRATED}
#: Hand-worked (window 10, the bounds as in the module docstring): the document stream
#: leaves out events 0, 20, 21, 22: 19 × "a", then "e" … "k" (7 uncovered, 26 in all). At
#: "e" … "k" the window holds u = 1 … 7 uncovered of 10 against 0 of 10 … 16 before it;
#: the rise's bound is d − √((p1 − l1)² + (u2 − p2)²): 4 of 10 against 0 of 13: 0.4 −
#: √(0.231820² + (3.841459 / 16.841459)²) = 0.074780 (under the 0.1 floor); 5 of 10 against
#: 0 of 14: 0.5 − √(0.263407² + 0.215311²) = 0.159791; 6 of 10 against 0 of 15 (Wilson
#: lower of 6 of 10 = 1 − upper of 4 of 10 = 1 − 0.687326): 0.6 − √(0.287326² +
#: 0.203883²) = 0.247687; 7 of 10 against 0 of 16 (lower of 7 of 10: 0.396778, upper of 0 of
#: 16: 3.841459 / 19.841459 = 0.193608): 0.7 − √(0.303222² + 0.193608²) = 0.340239. All
#: time 7 of 26: Wilson [0.137044, 0.460830]. (Without the scope verdicts: 10 of 10 against
#: 0 of 20, the module's R_10.)
R_OUT = {27: 0.159791, 28: 0.247687, 29: 0.340239}


def _scoped_notes() -> list[dict[str, Any]]:
    return [dict(NOTES) | SCOPE.get(i, {}) for i in range(len(DOCS))]


def test_questions_judged_out_of_scope_join_no_document_share() -> None:
    events = [event(f"e{i}", _question(i), results=[(f"p-{doc}", 2.0)])
              for i, doc in enumerate(DOCS)]  # fmt: skip
    notes = _scoped_notes()
    documents = production_documents(events, CORPUS, notes)
    assert [i for i, doc in enumerate(documents) if doc is None] == [0, 20, 21, 22]
    assert production_documents(events, CORPUS) == DOCS  # no annotations: every question
    assert [judged_out_of_scope(n) for n in (OUT, UNSTABLE, UNCALIBRATED, NOTES)] == [
        True, False, False, False]  # fmt: skip
    tracker = _tracker()
    gaps = tracker.update_each(notes, documents)[DOCUMENT]
    assert [gaps[i] for i in (0, 20, 21, 22)] == [0.0] * 4  # out of scope: no document gap
    assert 0.07478 < 0.1  # "h": 4 of 10 against 0 of 13, its own gap only
    for i in (23, 24, 25, 26):  # "e" (unstable), "f" (uncalibrated): counted as in scope
        assert gaps[i] == pytest.approx(L_1_OF_10, abs=1e-6)
    for i, bound in R_OUT.items():
        assert gaps[i] == pytest.approx(bound, abs=1e-6)
    share = tracker.uncovered()
    assert share is not None
    assert (share["live"], share["live_total"]) == (7, 26)  # in-scope questions only
    assert share["counts"] == "questions given a document, not judged out of scope"
    assert (share["low"], share["high"]) == pytest.approx((0.137044, 0.460830), abs=1e-6)
    assert (share["recent"]["live"], share["recent"]["live_total"]) == (7, 10)
    assert (share["earlier"]["live"], share["earlier"]["live_total"]) == (0, 16)
    assert share["rise_low"] == pytest.approx(R_OUT[29], abs=1e-6) and share["gap"] is True


def test_the_harvest_gives_an_out_of_scope_question_its_own_reason_not_coverage_gap() -> None:
    stage = _stage(0.1, CORPUS)
    events = [event(f"e{i}", _question(i), results=[(f"p-{doc}", 2.0)])
              for i, doc in enumerate(DOCS)]  # fmt: skip
    stage.process(batch(events, _scoped_notes()))
    rows = {row["question"]: dict(row) for row in stage.records()}
    reasons = {i: list(rows[_question(i)]["reasons"]) for i in range(30) if _question(i) in rows}
    # the covered "a" (0) and "b", "c", "d": answered out of scope, no gap; "e" … "h" have
    # their own gap 0.017876 < min_gap 0.02 and no other reason ("e" and "f": their verdicts
    # are no fact); "i", "j", "k" take the rise's bound
    out, gap = ["answered_out_of_scope"], ["coverage_gap"]
    assert reasons == {0: out, 20: out, 21: out, 22: out, 27: gap, 28: gap, 29: gap}
    for i, bound in R_OUT.items():
        assert rows[_question(i)]["gap"] == pytest.approx(bound, abs=1e-6)
    assert rows[_question(20)]["gap_dimension"] is None
    report = stage.document_gaps(10)
    assert report is not None
    assert (report["uncovered"]["live"], report["uncovered"]["live_total"]) == (7, 26)
