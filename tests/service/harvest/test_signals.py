"""Reasons of one event, coverage gaps and the score window, hand-worked."""

from __future__ import annotations

import pytest

from service.harvest.config import HarvestConfig
from service.harvest.signals import CoverageTracker, ScoreWindow, event_reasons, production_score
from tests.service.harvest.helpers import event

CONFIG = HarvestConfig()


def test_plain_event_has_no_reason() -> None:
    assert event_reasons(event("e", "q"), {"topic": "fees", "refused": False}, CONFIG) == ()


@pytest.mark.parametrize(
    ("kwargs", "notes", "expected"),
    [
        ({}, {"topic": "novel"}, ("novel",)),
        ({}, {"refused": True}, ("refused",)),
        ({}, {"under_refusal": True}, ("answered_out_of_scope",)),
        # the out-of-scope detector is below the quality floor: its verdict is no reason
        ({}, {"under_refusal": True, "scope_calibrated": False}, ()),
        # nor is the novelty detector's, below the floor; calibrated, it is
        ({}, {"topic": "novel", "novelty_calibrated": False}, ()),
        ({}, {"topic": "novel", "novelty_calibrated": True}, ("novel",)),
        ({"rating": -1.0}, {}, ("negative_feedback",)),
        ({"rating": 0.0}, {}, ()),
        ({"citations": ["p-1", "p-9"]}, {}, ("cited_not_retrieved",)),
        ({"citations": ["p-1"]}, {}, ()),
        ({}, {"acl_leaks": ["p-7"]}, ("acl_violation",)),
        ({}, {"acl_violations": ["p-7"]}, ()),  # retrieved but not cited: see /v1/quality
        ({}, {"acl_leaks": []}, ()),
    ],
)
def test_each_reason(kwargs: dict, notes: dict, expected: tuple[str, ...]) -> None:
    assert event_reasons(event("e", "q", **kwargs), notes, CONFIG) == expected


def test_gap_and_low_confidence_come_from_the_caller_and_order_is_fixed() -> None:
    reasons = event_reasons(
        event("e", "q", rating=-1.0), {"refused": True}, CONFIG, gap=0.05, low_confidence=True
    )
    assert reasons == ("coverage_gap", "refused", "low_confidence", "negative_feedback")
    assert "coverage_gap" not in event_reasons(event("e", "q"), {}, CONFIG, gap=0.049)


def test_weight_zero_turns_a_reason_off() -> None:
    config = HarvestConfig(weights={"refused": 0.0})
    assert event_reasons(event("e", "q"), {"refused": True}, config) == ()


def test_coverage_gap_hand_worked() -> None:
    # gold: fees 6, hostel 2, exams 2 (shares .6 .2 .2); live: 5 exams, 4 fees, 1 novel
    tracker = CoverageTracker({"topic": {"fees": 6, "hostel": 2, "exams": 2}}, min_live_events=10)
    notes = [{"topic": "exams"}] * 5 + [{"topic": "fees"}] * 4
    tracker.update(notes)
    assert tracker.gap("topic", "exams") == 0.0  # 9 events < min_live_events
    tracker.update([{"topic": "novel"}])
    assert tracker.gap("topic", "exams") == pytest.approx(0.5 - 0.2)
    assert tracker.gap("topic", "fees") == 0.0  # 0.4 < 0.6
    assert tracker.gap("topic", "novel") == pytest.approx(0.1)
    assert tracker.gaps()["topic"] == {"exams": pytest.approx(0.3), "novel": pytest.approx(0.1)}
    assert tracker.gap("language", "en") == 0.0  # no gold reference


def test_coverage_state_round_trip() -> None:
    tracker = CoverageTracker({"language": {"en": 1}}, min_live_events=1)
    tracker.update([{"language": "hi"}, {}])
    copy = CoverageTracker({"language": {"en": 1}}, min_live_events=1)
    copy.load(tracker.state())
    assert copy.gap("language", "hi") == tracker.gap("language", "hi") == 0.5
    assert copy.live["language"]["und"] == 1


def test_score_window_quantile() -> None:
    window = ScoreWindow(size=10, min_count=10)
    verdicts = [window.is_low("r", float(s), 0.2) for s in range(1, 11)]
    assert verdicts == [False] * 10  # warming up
    # window 1..10: 1.5 has 1 score below it (< 0.2 * 10): low; 2.5 has 2: not low
    assert window.is_low("r", 1.5, 0.2) is True
    assert window.is_low("r", 2.5, 0.2) is False
    assert window.is_low("other", 0.0, 0.2) is False  # another retriever: its own window


def test_score_window_ties_at_the_quantile_are_not_low() -> None:
    """Strictly below the quantile (trial: every top score was 10.0 and 1,321 of 1,611
    events were flagged low_confidence)."""
    window = ScoreWindow(size=2_000, min_count=200)
    assert not any(window.is_low("r", 10.0, 0.1) for _ in range(1_611))
    # 8 scores 1, 2, 2, 2, 3, 4, 5, 6; the 0.25-quantile is x[ceil(0.25 * 8) - 1] = x[1] = 2
    tied = ScoreWindow(size=100, min_count=8)
    for score in (1.0, 2.0, 2.0, 2.0, 3.0, 4.0, 5.0, 6.0):
        tied.is_low("r", score, 0.25)
    assert tied.is_low("r", 2.0, 0.25) is False  # tied with the quantile: not below it
    # window now 1, 2, 2, 2, 2, 3, 4, 5, 6 (n = 9): x[ceil(2.25) - 1] = x[2] = 2
    assert tied.is_low("r", 1.5, 0.25) is True
    # window 1, 1.5, 2, 2, 2, 2, 3, 4, 5, 6 (n = 10): x[ceil(2.5) - 1] = x[2] = 2
    assert tied.is_low("r", 1.999, 0.25) is True
    # n = 11: x[ceil(2.75) - 1] = x[2] = 1.999, not below itself; n = 12: x[2] = 1.999 again
    assert tied.is_low("r", 1.999, 0.25) is False
    assert tied.is_low("r", 1.998, 0.25) is True


def test_production_score() -> None:
    assert production_score(event("e", "q", results=[("p", 2.0), ("r", 7.5)])) == ("prod", 7.5)
    assert production_score(event("e", "q", results=[])) == ("prod", None)
    assert production_score(event("e", "q", retrieval=False)) is None
