"""Production's over-time line does not read as "no regression" while ``known_miss`` alarms
on the same data (trial 50 L3: "hit rate within noise … 0.758 against 1.000" beside an open
``known_miss`` DRIFT, for a real drop of the business topic's hit rate). Its statistics are
unchanged; the line says within noise is no finding of no drop, names the alarm, and the
drop its sustained test can tell at this n.

The figures are the trial's (33 questions paired, 0.758 against 1.000, p 0.0031, Bonferroni
over 56 runs; known_miss vs baseline 0 of 55 against 9 of 44).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from scipy import stats

from service.quality.over_time import detectable_drop, known_line, known_miss_alarm_text

RUN: dict[str, Any] = {
    "found": True, "start": 1796256000.0, "end": 1796580000.0, "points": 5, "questions": 33,
    "question_hit_rate": 25 / 33, "before_question_hit_rate": 1.0, "to_end": True,
    "test": "paired t-test on per-question hit rates", "p_value": 0.003096517478,
    "tests": 56, "threshold": 0.05 / 56, "beyond_noise": False,
}  # fmt: skip
WORST: dict[str, Any] = {
    "start": 1796256000.0, "end": 1796277600.0, "questions": 11,
    "question_hit_rate": 7 / 11, "rest_questions": 35, "rest_question_hit_rate": 0.8728,
    "test": "Welch t-test on per-question hit rates", "p_value": 0.1618, "tests": 12,
    "threshold": 0.05 / 12, "beyond_noise": False, "n": 15, "hit_rate": 8 / 15,
    "recall": 0.4833, "mrr": 0.4556,
}  # fmt: skip
KNOWN_MISS: dict[str, Any] = {
    "state": "drift",
    "comparisons": {"baseline": {"state": "drift", "rate_reference": 0.0, "n_reference": 55,
                                 "rate_current": 9 / 44, "n_current": 44}},
}  # fmt: skip


def _report(run: dict[str, Any], worst: dict[str, Any]) -> dict[str, Any]:
    return {"min_n": 10, "known": {
        "bucket_s": 21600.0, "points": [{}] * 19, "small": {"points": 0, "n": 0},
        "tested": 12, "worst": worst, "sustained": run,
        "all": {"n": 272, "recall": 0.8137, "hit_rate": 0.8676, "mrr": 0.81, "questions": 35},
    }}  # fmt: skip


def test_the_detectable_drop_is_the_fewest_questions_turning_from_hit_to_miss_called() -> None:
    """By hand: k of n questions from hit to miss, the rest unchanged, is a paired t of
    √(k (n − 1) / (n − k)) at n − 1 df. At n 33, Bonferroni 0.05/56 = 0.000893: k 8, t 3.20,
    p 0.0031 (the trial's own run); k 9, t √12 = 3.46, p 0.0015; k 10, t √(320/23) = 3.73,
    p 0.00074, the first below. (Holding the run's spread fixed said 0.278, between 9 and
    10 of 33: with 0/1 hit rates the spread grows with the drop.)"""
    found = detectable_drop(RUN)
    assert found is not None
    assert (found["flipped"], found["hits"], found["questions"]) == (10, 33, 33)
    assert found["drop"] == pytest.approx(10 / 33)
    assert found["p"] == pytest.approx(2 * stats.t.sf(math.sqrt(10 * 32 / 23), 32), rel=1e-9)
    assert found["p"] == pytest.approx(0.00074, abs=1e-5)
    # the steps either side, by the library's own paired test
    for k, p in ((8, 0.0031), (9, 0.0015), (10, 0.00074)):
        after, before = [0.0] * k + [1.0] * (33 - k), [1.0] * 33
        assert stats.ttest_rel(after, before).pvalue == pytest.approx(p, abs=5e-5)
    assert stats.ttest_rel([0.0] * 9 + [1.0] * 24, [1.0] * 33).pvalue >= 0.05 / 56
    # only the questions that hit before can turn: n 10 at 0.7 before has 7; all 7 turning
    # is t √(7 · 9 / 3) = √21 = 4.58 at 9 df, p 0.0013 >= 0.05/300: no drop can be called
    none = detectable_drop({**RUN, "questions": 10, "before_question_hit_rate": 0.7,
                            "threshold": 0.05 / 300})  # fmt: skip
    assert none is not None
    assert (none["flipped"], none["drop"], none["hits"]) == (None, None, 7)
    assert none["p"] == pytest.approx(2 * stats.t.sf(math.sqrt(21), 9), rel=1e-9)
    assert none["p"] == pytest.approx(0.0013, abs=5e-5)
    # every question turning is a constant difference: p 0, called at any level
    small = detectable_drop({**RUN, "questions": 3, "threshold": 1e-12})
    assert small is not None and small["flipped"] == 3 and small["p"] == 0.0
    assert detectable_drop({**RUN, "before_question_hit_rate": 0.0}) is None  # nothing to drop
    assert detectable_drop({**RUN, "questions": 1}) is None


def test_within_noise_beside_an_open_known_miss_alarm_is_not_read_as_no_drop() -> None:
    line = known_line(_report(RUN, WORST), 10, KNOWN_MISS)
    assert line is not None
    # the statistics as before
    assert ("hit rate within noise (paired t-test on per-question hit rates, 33 questions "
            "asked in it and before it: 0.758 in it against 1.000 before it: p 0.0031 >= "
            "0.05/56") in line  # fmt: skip
    assert (
        'Within noise here is not "no drop": the known_miss drift alarm is open (vs baseline: '
        "known-miss rate 0.0% of 55 -> 20.5% of 44); at 33 questions the sustained paired "
        "test calls a drop beyond noise from 10 of them turning from hit to miss, the rest "
        "unchanged (a drop of 0.303: p 0.00074 < 0.05/56); the drop seen is 0.242. Different "
        "tests from the known_miss drift alarm"
    ) in line
    # no alarm: the line as before
    quiet = known_line(_report(RUN, WORST), 10, {**KNOWN_MISS, "state": "ok"})
    assert quiet == known_line(_report(RUN, WORST), 10)
    assert quiet is not None and "Within noise here" not in quiet
    assert quiet == line.replace(line[line.index(". Within noise") : line.index(". Different")], "")
    # a verdict beyond noise already says there is a drop: nothing added
    lower = known_line(_report({**RUN, "beyond_noise": True}, WORST), 10, KNOWN_MISS)
    assert lower is not None and "Within noise here" not in lower


def test_a_small_run_where_no_drop_can_be_called_says_so() -> None:
    """The review's case: 10 questions, 0.600 against 0.700, Bonferroni over 300 runs. Holding
    the run's spread fixed named an impossible drop ("from about 1.706"); only 7 questions hit
    before it, and all 7 turning gives p 0.0013 >= 0.05/300."""
    run = {**RUN, "questions": 10, "question_hit_rate": 0.6, "before_question_hit_rate": 0.7,
           "p_value": 0.7263, "tests": 300, "threshold": 0.05 / 300}  # fmt: skip
    line = known_line(_report(run, WORST), 10, KNOWN_MISS)
    assert line is not None
    assert (
        "; at 10 questions the sustained paired test cannot call any drop beyond noise: even "
        "all 7 questions that hit before it turning to misses would give p 0.0013 >= 0.05/300 "
        "(the drop seen is 0.100). Different tests"
    ) in line
    assert "1.706" not in line and "calls a drop" not in line


def test_the_alarm_in_words() -> None:
    assert known_miss_alarm_text(None) is None
    assert known_miss_alarm_text({"state": "insufficient_data", "comparisons": {}}) is None
    assert known_miss_alarm_text(KNOWN_MISS) == (
        "the known_miss drift alarm is open (vs baseline: known-miss rate 0.0% of 55 -> "
        "20.5% of 44)"
    )
