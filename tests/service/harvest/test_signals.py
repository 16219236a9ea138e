"""Reasons of one event, coverage gaps and the score window, hand-worked."""

from __future__ import annotations

import dataclasses
import json
import math

import msgspec
import pytest

from service.coverage import wilson_bounds
from service.coverage import wilson_lower as coverage_wilson_lower
from service.drift.stats_tests import coverage_gaps, wilson_interval
from service.harvest.config import HarvestConfig
from service.harvest.signals import (
    CoverageTracker,
    ScoreWindow,
    event_reasons,
    production_score,
)
from tests.service.harvest.helpers import event

CONFIG = HarvestConfig()
THREE = [("p-1", 5.0), ("p-2", 4.0), ("p-3", 1.0)]  # results


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
        # nor is a verdict the off-corpus cutoff's bootstrap range moves (review s38-rev-oos)
        ({}, {"under_refusal": True, "scope_unstable": True}, ()),
        ({}, {"under_refusal": True, "scope_unstable": False}, ("answered_out_of_scope",)),
        # nor is the novelty detector's, below the floor; calibrated, it is
        ({}, {"topic": "novel", "novelty_calibrated": False}, ()),
        ({}, {"topic": "novel", "novelty_calibrated": True}, ("novel",)),
        ({"rating": -1.0}, {}, ("negative_feedback",)),
        ({"rating": 0.0}, {}, ()),
        ({"citations": ["p-1", "p-9"]}, {}, ("cited_not_retrieved",)),
        ({"citations": ["p-1"]}, {}, ()),
        # every citation is looked for among all the results, whatever their order
        ({"citations": ["p-9", "p-1"]}, {}, ("cited_not_retrieved",)),
        ({"citations": ["p-2", "p-1", "p-2"]}, {}, ()),
        ({"citations": ["p-3"], "results": THREE}, {}, ()),
        ({"citations": ["p-1", "p-4"], "results": THREE}, {}, ("cited_not_retrieved",)),
        ({"citations": ["p-1"], "results": []}, {}, ("cited_not_retrieved",)),
        ({"citations": ["p-1"], "retrieval": False}, {}, ()),  # nothing logged: no reason
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
    assert "coverage_gap" not in event_reasons(event("e", "q"), {}, CONFIG, gap=0.019)


def test_weight_zero_turns_a_reason_off() -> None:
    config = HarvestConfig(weights={"refused": 0.0})
    assert event_reasons(event("e", "q"), {"refused": True}, config) == ()


Z = 1.959963984540054  # the standard normal's 97.5 % quantile


def wilson_lower(x: int, n: int) -> float:
    """The 95 % Wilson lower bound of x / n, written out for the hand-worked tests."""
    p = x / n
    return (p + Z**2 / (2 * n) - Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))) / (
        1 + Z**2 / n
    )


def trial_tracker(window: int = 1_000) -> CoverageTracker:
    # the trial's gold set: 50 rows, en 38 (76 %), hi 6 (12 %), es 6; no German row
    gold = {"language": {"en": 38, "hi": 6, "es": 6}}
    return CoverageTracker(gold, min_live_events=200, window=window, min_ratio=2.0)


def languages(**counts: int) -> list[dict[str, str]]:
    return [{"language": lang} for lang, k in counts.items() for _ in range(k)]


def test_coverage_gap_the_trials_case() -> None:
    """Days 1–2 (en 86 %) then day 3 (hi 25 %, de 8 %), 1,000 events each, window 1,000.
    The former rule (live − gold over all events) flagged en (.86 − .76 = .10) on days 1–2
    and, after day 3, nothing: en .765, hi .15 (+.03), de .04 (+.04), all < .05."""
    tracker = trial_tracker()
    tracker.update(languages(en=860, hi=50, es=90))
    # en .86 < 2 × .76: a majority label a few points over its gold share is no gap
    assert tracker.gap("language", "en") == 0.0
    assert tracker.gap("language", "hi") == 0.0  # .05 < 2 × .12
    tracker.update(languages(en=670, hi=250, de=80))  # day 3 replaces days 1–2
    assert tracker.gap("language", "en") == 0.0  # .67 < 1.52
    # hi: .25 ≥ .24; L(250 / 1,000) = (.25 + .001921 − 1.96 √(.0001875 + 9.6e-7)) / 1.003841
    # = .22415, minus the gold share .12: .10415 ≥ min_gap .02
    hi = tracker.gap("language", "hi")
    assert hi == pytest.approx(wilson_lower(250, 1_000) - 0.12) == pytest.approx(0.10415, abs=1e-5)
    # de: no gold row, so any live share qualifies; L(80 / 1,000) = .06475 ≥ .02
    de = tracker.gap("language", "de")
    assert de == pytest.approx(wilson_lower(80, 1_000)) == pytest.approx(0.06475, abs=1e-5)
    assert event_reasons(event("e", "q"), {}, CONFIG, gap=hi) == ("coverage_gap",)
    assert event_reasons(event("e", "q"), {}, CONFIG, gap=de) == ("coverage_gap",)
    assert tracker.gaps()["language"] == {"de": de, "hi": hi}


def test_coverage_gap_over_a_window_longer_than_the_change() -> None:
    """The same days in a 5,000-event window, which still holds all 2,000 events: hi
    (50 + 250) / 2,000 = .15 < .24 (no gap, where the 1,000-event window has one); de .04
    has the bound L(80 / 2,000) = .0322, a gap ≥ min_gap .02 but a third smaller than the
    window of day 3 alone gives (.0648). Why the default window is 1,000: a day of a small
    deployment's traffic (the trials' logs: about 3,000 events over three days)."""
    tracker = trial_tracker(window=5_000)
    tracker.update(languages(en=860, hi=50, es=90))
    tracker.update(languages(en=670, hi=250, de=80))
    assert tracker.gap("language", "hi") == 0.0
    assert tracker.gap("language", "de") == pytest.approx(wilson_lower(80, 2_000))
    assert tracker.gap("language", "de") == pytest.approx(0.0322, abs=1e-4)


def test_min_gap_default_flags_a_language_the_gold_set_lacks_at_6_percent() -> None:
    """A new user's trial: German 62 of the last 1,000 events (6.2 %), no German gold row.
    The 95 % Wilson lower bound, z = 1.959964, p = x / n:

        L = (p + z²/2n − z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n)

    62 / 1,000: p = .062, z² = 3.841459, z²/2n = .0019207, z²/4n² = 9.6036e-7,
    p(1−p)/n = 5.8156e-5, √(5.8156e-5 + 9.6036e-7) = .0076887, z × it = .0150696,
    1 + z²/n = 1.0038415: L = (.062 + .0019207 − .0150696) / 1.0038415 = .048664.
    Gap .0487 − 0 ≥ min_gap .02: flagged (the former default .05 flagged nothing).
    28 / 1,000: p = .028, p(1−p)/n = 2.7216e-5, √(2.7216e-5 + 9.6036e-7) = .0053081,
    z × it = .0104037: L = (.028 + .0019207 − .0104037) / 1.0038415 = .019442 < .02: not
    flagged (29 / 1,000 gives .020266, flagged)."""
    tracker = trial_tracker()  # gold: en 76 %, hi 12 %, es 12 %
    tracker.update(languages(en=760, hi=120, es=58, de=62))
    de = tracker.gap("language", "de")
    assert de == pytest.approx(wilson_lower(62, 1_000)) == pytest.approx(0.048664, abs=1e-6)
    assert event_reasons(event("e", "q"), {"language": "de"}, CONFIG, gap=de) == ("coverage_gap",)
    tracker = trial_tracker()
    tracker.update(languages(en=760, hi=120, es=92, de=28))
    de = tracker.gap("language", "de")
    assert de == pytest.approx(wilson_lower(28, 1_000)) == pytest.approx(0.019442, abs=1e-6)
    assert event_reasons(event("e", "q"), {"language": "de"}, CONFIG, gap=de) == ()
    tracker.update(languages(de=1))  # the oldest (en) leaves: de 29 of 1,000
    gap = tracker.gap("language", "de")
    assert gap == pytest.approx(wilson_lower(29, 1_000)) == pytest.approx(0.020266, abs=1e-6)
    assert event_reasons(event("e", "q"), {}, CONFIG, gap=gap) == ("coverage_gap",)
    assert CONFIG.min_gap == 0.02  # the drift view's floor (min_difference)


def test_min_gap_ratio_keeps_a_label_under_twice_its_gold_share_unflagged() -> None:
    """Hindi at 1.87 × its gold share (.224 live against .12) is no gap although its bound
    is far above the gold share (L(224 / 1,000) = .1992, .079 over): the ratio test comes
    first, as in the drift view; at 2 × (240 of 1,000) it is one."""
    tracker = trial_tracker()
    tracker.update(languages(en=700, hi=224, es=76))
    assert wilson_lower(224, 1_000) - 0.12 > CONFIG.min_gap
    assert tracker.gap("language", "hi") == 0.0
    tracker.update(languages(hi=16))  # 16 en leave: hi 240 of 1,000 = 2 × .12
    assert tracker.gap("language", "hi") == pytest.approx(wilson_lower(240, 1_000) - 0.12)


def test_coverage_gap_hand_worked() -> None:
    # gold: fees 6, hostel 2, exams 2 (shares .6 .2 .2); live: 5 exams, 4 fees, 1 novel
    tracker = CoverageTracker({"topic": {"fees": 6, "hostel": 2, "exams": 2}}, min_live_events=10)
    notes = [{"topic": "exams"}] * 5 + [{"topic": "fees"}] * 4
    tracker.update(notes)
    assert tracker.gap("topic", "exams") == 0.0  # 9 events < min_live_events
    tracker.update([{"topic": "novel"}])
    # exams .5 ≥ 2 × .2; L(5 / 10) = (.5 + .19207 − .36459) / 1.38415 = .23659: gap .03659
    assert tracker.gap("topic", "exams") == pytest.approx(0.03659, abs=1e-5)
    assert tracker.gap("topic", "fees") == 0.0  # 0.4 < 2 × 0.6
    # novel: no gold row; L(1 / 10) = (.1 + .19207 − .26733) / 1.38415 = .01788
    assert tracker.gap("topic", "novel") == pytest.approx(0.01788, abs=1e-5)
    assert set(tracker.gaps()["topic"]) == {"exams", "novel"}
    assert tracker.gap("language", "en") == 0.0  # no gold reference


def test_coverage_gap_ratio_is_inclusive_and_configurable() -> None:
    # gold hi 1 of 4 (.25); live hi 100 of 200 = .5 = 2 × .25 exactly: a gap
    tracker = CoverageTracker({"language": {"en": 3, "hi": 1}}, min_live_events=1)
    tracker.update(languages(hi=100, en=100))
    assert tracker.gap("language", "hi") == pytest.approx(wilson_lower(100, 200) - 0.25)
    strict = CoverageTracker({"language": {"en": 3, "hi": 1}}, min_live_events=1, min_ratio=2.5)
    strict.update(languages(hi=100, en=100))
    assert strict.gap("language", "hi") == 0.0


def test_wilson_bound_is_the_drift_views() -> None:
    for x, n in [(0, 1), (1, 1), (1, 10), (5, 10), (250, 1_000), (80, 1_000), (999, 1_000)]:
        low, high = wilson_interval(x, n)
        assert wilson_bounds(x, n) == pytest.approx((float(low), float(high)), abs=1e-12)
        assert coverage_wilson_lower(x, n) == pytest.approx(wilson_lower(x, n), abs=1e-12)


def test_the_drift_views_gaps_are_the_trackers() -> None:
    # one rule in both views: the same counts give the same gaps and bounds
    gold = {"en": 33, "hi": 3}
    live = {"en": 600, "hi": 250, "de": 80, "fr": 21, "und": 49}
    tracker = CoverageTracker({"language": gold}, min_live_events=1)
    tracker.update([{"language": lang} for lang, k in live.items() for _ in range(k)])
    tracked = {lab: g for lab, g in tracker.gaps()["language"].items() if g >= CONFIG.min_gap}
    drift = {g.category: g.ci_low for g in coverage_gaps(live, gold)}
    assert drift == pytest.approx(tracked)
    # hi: 250 of 1,000 ≥ 2 × 3/36; de: 80 of 1,000 against none; fr 21: bound below 0.02
    assert sorted(drift) == ["de", "hi"]


def test_the_window_slides_old_events_leave() -> None:
    tracker = CoverageTracker({"language": {"en": 1}}, min_live_events=2, window=4)
    tracker.update(languages(hi=2, en=2))
    assert tracker.events == 4 and tracker.live["language"] == {"hi": 2, "en": 2}
    # L(2 / 4) = .15004; hi has no gold row
    assert tracker.gap("language", "hi") == pytest.approx(wilson_lower(2, 4))
    tracker.update(languages(en=2))  # the two hi events, the oldest, leave
    assert tracker.events == 4 and tracker.live["language"] == {"en": 4}
    assert "hi" not in tracker.live["language"]  # no zero count is kept
    assert tracker.gap("language", "hi") == 0.0
    tracker.update(languages(de=6))  # a batch larger than the window: its last 4 stay
    assert tracker.live["language"] == {"de": 4} and tracker.live["topic"] == {"und": 4}


def test_min_live_events_counts_the_window() -> None:
    tracker = CoverageTracker({"language": {"en": 1}}, min_live_events=3, window=10)
    tracker.update(languages(hi=2))
    assert tracker.gap("language", "hi") == 0.0  # 2 < 3 events
    tracker.update(languages(hi=1))
    assert tracker.gap("language", "hi") == pytest.approx(wilson_lower(3, 3))


def test_coverage_state_round_trip() -> None:
    tracker = CoverageTracker({"language": {"en": 1}}, min_live_events=1, window=3)
    tracker.update([{"language": "hi"}, {}, {"language": "en"}, {"language": "hi"}])
    state = tracker.state()
    assert state["window"]["language"] == {"labels": ["und", "en", "hi"], "at": [0, 1, 2]}
    # what a snapshot before the window held, now of the window: older code reads it
    assert state["events"] == 3 and state["live"]["language"] == {"und": 1, "en": 1, "hi": 1}
    copy = CoverageTracker({"language": {"en": 1}}, min_live_events=1, window=3)
    copy.load(json.loads(json.dumps(state)))
    assert copy.gap("language", "hi") == tracker.gap("language", "hi") > 0
    assert copy.live == tracker.live
    copy.update([{"language": "de"}])  # the oldest restored event (und) leaves first
    assert copy.live["language"] == {"en": 1, "hi": 1, "de": 1}


def test_coverage_restores_an_old_all_time_state() -> None:
    """A snapshot before the window: all-time counts, 10 events (en 7, hi 3). A window of 4
    is seeded with their mix: 2.8 en and 1.2 hi -> 2 and 1, the one left to the larger
    remainder (en .8): en 3, hi 1, spread evenly (en at 1/6, 1/2, 5/6; hi at 1/2)."""
    old = {"events": 10, "live": {"language": {"en": 7, "hi": 3}, "topic": {"und": 10}}}
    tracker = CoverageTracker({"language": {"en": 1}}, min_live_events=1, window=4)
    tracker.load(old)
    assert tracker.events == 4 and tracker.live["language"] == {"en": 3, "hi": 1}
    assert tracker.live["topic"] == {"und": 4}
    assert list(tracker.state()["window"]["language"]["at"]) == [0, 0, 1, 0]  # en en hi en
    tracker.update(languages(hi=2))  # the two oldest (en, en) leave
    assert tracker.live["language"] == {"hi": 3, "en": 1}
    # fewer all-time events than the window: kept as they were
    small = CoverageTracker({"language": {"en": 1}}, min_live_events=1, window=40)
    small.load(old)
    assert small.events == 10 and small.live["language"] == {"en": 7, "hi": 3}
    empty = CoverageTracker({"language": {"en": 1}}, window=4)
    empty.load({})
    assert empty.events == 0 and empty.gap("language", "hi") == 0.0


def test_gap_window_must_hold_min_live_events() -> None:
    with pytest.raises(ValueError, match="gap_window"):
        HarvestConfig(gap_window=100, min_live_events=200)
    assert HarvestConfig(gap_window=200, min_live_events=200).gap_window == 200


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


def test_production_score_scrubs_the_retriever_name_every_time() -> None:
    """The name keys the persisted score windows: an e-mail address as a name becomes its
    placeholder, also when remembered (the second call), and an unnamed retriever is
    ``production``."""
    named = event("e", "q", results=[("p", 2.0), ("r", None)])  # type: ignore[list-item]
    data = named.retrieval
    assert data is not None
    leaky = dataclasses.replace(named, retrieval=msgspec.structs.replace(
        data, retriever="ret-7-oscar@example.com"))  # fmt: skip
    assert production_score(leaky) == ("<EMAIL>", 2.0)
    assert production_score(leaky) == ("<EMAIL>", 2.0)
    unnamed = dataclasses.replace(named, retrieval=msgspec.structs.replace(data, retriever=None))
    assert production_score(unnamed) == ("production", 2.0)
    # left unset, it grows to min_live_events: a configuration from before gap_window
    # existed still starts (a review: min_live_events 2,000 failed against the default 1,000)
    assert HarvestConfig(min_live_events=2_000).gap_window == 2_000
    assert HarvestConfig(min_live_events=500).gap_window == 1_000
    with pytest.raises(ValueError, match="less than or equal to 100000"):
        HarvestConfig(gap_window=100_001)


@pytest.mark.parametrize("at", [[0, 3], [-1], ["x"]])
def test_a_damaged_coverage_window_is_a_value_error(at: list[object]) -> None:
    """An index outside the snapshot's labels (or not a number) is a ValueError, which the
    engine's restore reports as a damaged state file naming no content; a negative index
    was read from the end of the list before (a review)."""
    tracker = CoverageTracker({"language": {"en": 1}}, min_live_events=1, window=4)
    state = {"window": {"language": {"labels": ["en", "hi", "und"], "at": at}}}
    with pytest.raises(ValueError):
        tracker.load(state)


def test_an_undetermined_language_is_no_coverage_gap() -> None:
    """``und`` (the language could not be told: "ok??", a number) is absent from gold sets,
    so 62 of 1,000 would have the same gap as German above (.048664): it has none, and
    neither has an event whose topic or language is missing (counted as ``und``)."""
    tracker = trial_tracker()
    tracker.update(languages(en=760, hi=120, es=58, und=62))
    assert tracker.gap("language", "und") == 0.0
    assert tracker.gap("language", None) == 0.0
    tracker.update(languages(de=62))  # the same count of a real language the gold set lacks
    assert tracker.gap("language", "de") == pytest.approx(0.048664, abs=1e-6)
