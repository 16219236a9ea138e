"""Production's over-time line does not read as "no regression" while ``known_miss`` alarms
on the same data (trial 50 L3: "hit rate within noise … 0.758 against 1.000" beside an open
``known_miss`` DRIFT, for a real drop of the business topic's hit rate). Its statistics are
unchanged; the line says within noise is no finding of no drop, names the alarm, and the
drop its sustained test can tell at this n.

The figures are the trial's (33 questions paired, 0.758 against 1.000, p 0.0031, Bonferroni
over 56 runs; known_miss vs baseline 0 of 55 against 9 of 44).
"""

from __future__ import annotations

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


def test_the_detectable_drop_is_the_drop_whose_p_is_the_bonferroni_level() -> None:
    drop = detectable_drop(RUN, "hit_rate")
    assert drop is not None
    # by hand: t of p 0.0031 at 32 df is 3.1996, so se = (1 - 25/33) / 3.1996 = 0.07577;
    # the two-sided quantile of 0.05/56 at 32 df is 3.6632: 3.6632 * 0.07577 = 0.2775
    assert drop == pytest.approx(0.2775, abs=5e-4)
    # its defining property: that drop at the same standard error has p = 0.05/56 exactly
    se = (1 - 25 / 33) / stats.t.isf(RUN["p_value"] / 2, 32)
    assert 2 * stats.t.sf(drop / se, 32) == pytest.approx(0.05 / 56, rel=1e-9)
    assert detectable_drop({**RUN, "question_hit_rate": 1.0}, "hit_rate") is None  # no drop
    assert detectable_drop({**RUN, "p_value": 0.0}, "hit_rate") is None


def test_within_noise_beside_an_open_known_miss_alarm_is_not_read_as_no_drop() -> None:
    line = known_line(_report(RUN, WORST), 10, KNOWN_MISS)
    assert line is not None
    # the statistics as before
    assert ("hit rate within noise (paired t-test on per-question hit rates, 33 questions "
            "asked in it and before it: 0.758 in it against 1.000 before it: p 0.0031 >= "
            "0.05/56") in line  # fmt: skip
    assert (
        'Within noise here is not "no drop": the known_miss drift alarm is open (vs baseline: '
        "known-miss rate 0.0% of 55 -> 20.5% of 44); at the sustained run's spread over its "
        "33 questions this test calls a drop beyond noise from about 0.278, the drop seen is "
        "0.242. Different tests from the known_miss drift alarm"
    ) in line
    # no alarm: the line as before
    quiet = known_line(_report(RUN, WORST), 10, {**KNOWN_MISS, "state": "ok"})
    assert quiet == known_line(_report(RUN, WORST), 10)
    assert quiet is not None and "Within noise here" not in quiet
    assert quiet == line.replace(line[line.index(". Within noise") : line.index(". Different")], "")
    # a verdict beyond noise already says there is a drop: nothing added
    lower = known_line(_report({**RUN, "beyond_noise": True}, WORST), 10, KNOWN_MISS)
    assert lower is not None and "Within noise here" not in lower


def test_the_alarm_in_words() -> None:
    assert known_miss_alarm_text(None) is None
    assert known_miss_alarm_text({"state": "insufficient_data", "comparisons": {}}) is None
    assert known_miss_alarm_text(KNOWN_MISS) == (
        "the known_miss drift alarm is open (vs baseline: known-miss rate 0.0% of 55 -> "
        "20.5% of 44)"
    )
