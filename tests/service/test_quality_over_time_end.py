"""Where a sustained drop ends (trial 49, M2): a drop lasting to the end of the log was
reported as ending a day early, because the lowest p of the runs, all saturated, belonged to
a shorter one by noise. Small series of daily points worked out by hand: 10 questions ``a``
that lose their passage from day 2, 10 ``b`` that always hit, and one ``c`` that misses on
day 3 only (its mean over days 2-4 is 2/3, over days 2-5 3/4, so the shorter run has the
lower p: p 0.00022 against 0.00025).

The run found is then extended point by point, each point alone against the points before
the run, and stops at the first point not lower (the first fix tested the whole remainder as
one block, which carried a drop recovered near the end "to the end"). Before points stepped
over join the run, they are tested together against the run: together a recovery, the walk
stops there (review of trial 49: points each too small to judge, then one low point, carried
a recovered drop "to the end")."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from scipy import stats

from service.quality.over_time import known_line, over_time

DAY = 86400.0


def _series(table: dict[str, list[int | None]]) -> dict[str, Any]:
    """Daily buckets, each question asked once a day (``None``: not asked), 1 = hit."""
    buckets = []
    for d in range(len(next(iter(table.values())))):
        asked = {q: [1, hit] for q, v in table.items() if (hit := v[d]) is not None}
        hits = sum(cell[1] for cell in asked.values())
        buckets.append({"start": d * DAY, "agreement": {}, "known_questions": asked,
                        "known": {"n": len(asked), "recall": hits, "hit": hits, "rr": hits,
                                  "recall_sq": hits, "rr_sq": hits}})  # fmt: skip
    return {"bucket_s": DAY, "buckets": buckets}


def _table(a_day5: int | None, asked_day5: int = 21, d: int = 0) -> dict[str, list[int | None]]:
    table: dict[str, list[int | None]] = {f"d{i}": [1, 1, None, None, None, 1] for i in range(d)}
    for i in range(10):
        table[f"a{i}"] = [1, 1, 0, 0, 0, a_day5]
        table[f"b{i}"] = [1, 1, 1, 1, 1, 1]
    table["c"] = [1, 1, 1, 0, 1, 1]
    for q in sorted(table)[asked_day5:] if not d else ():  # the last day's few questions
        table[q][5] = None
    return table


def test_a_drop_that_lasts_is_reported_to_the_end() -> None:
    report = over_time(_series(_table(a_day5=0)))
    run = report["known"]["sustained"]
    assert run["beyond_noise"] and run["start"] == 2 * DAY
    assert run["to_end"] and run["end"] == 6 * DAY and run["points"] == 4
    # in it: a 0, b 1, c 3/4 over 21 questions; before it: all 1
    assert run["questions"] == 21
    assert abs(run["question_hit_rate"] - (10 + 0.75) / 21) < 1e-12
    assert run["before_question_hit_rate"] == 1.0
    assert "after" not in run
    assert "from 1970-01-03 00:00 UTC to the end (4 points)" in str(known_line(report, 10))


def test_a_real_recovery_still_ends_the_run_and_says_so() -> None:
    # day 5: every question hits again, and 3 questions ``d`` asked on days 0, 1 and 5 only
    # (hit) pair with the runs that reach day 5 only (without them every run from day 2 has
    # the same p, and the longest is reported: the paired t's blindness to dilution, left)
    report = over_time(_series(_table(a_day5=1, d=3)))
    run = report["known"]["sustained"]
    assert run["beyond_noise"] and run["start"] == 2 * DAY and run["end"] == 5 * DAY
    assert not run["to_end"]
    # in it (days 2-4): a 0, b 1, c 2/3
    assert abs(run["question_hit_rate"] - (10 + 2 / 3) / 21) < 1e-12
    # after it (day 5): all 24 hit, as before: differences all 0, p 1
    assert run["after"] == {"start": 5 * DAY, "points": 1, "at": 5 * DAY, "questions": 24,
                            "judged": True,
                            "question_hit_rate": 1.0, "before_question_hit_rate": 1.0,
                            "p_value": 1.0, "lower": False, "recovered": True,
                            "together": 1}  # fmt: skip
    line = str(known_line(report, 10))
    assert ("to 1970-01-06 00:00 UTC (3 points), hit rate LOWER beyond noise" in line
            and "then from 1970-01-06 00:00 UTC (1 point) not lower beyond noise: 1.000 "
                "against 1.000 before it, 24 questions, p 1" in line)  # fmt: skip


def test_a_last_point_too_small_to_judge_is_named() -> None:
    # day 5: only a0, a1 and a2 asked (3 < min_n 10), all missing: not a point to test
    report = over_time(_series(_table(a_day5=0, asked_day5=3)))
    run = report["known"]["sustained"]
    assert run["beyond_noise"] and run["start"] == 2 * DAY and run["end"] == 5 * DAY
    assert not run["to_end"]
    assert run["after"]["points"] == 1 and run["after"]["questions"] == 3
    assert not run["after"]["judged"] and not run["after"]["lower"]
    assert ("then from 1970-01-06 00:00 UTC (1 point) too few questions to judge"
            in str(known_line(report, 10)))  # fmt: skip


def test_a_recovery_near_the_end_is_not_carried_to_the_end() -> None:
    # 7 days: ``a`` lose their passage on days 2-5 and hit again on day 6 (the last), ``b``
    # always hit, ``c`` misses on day 3 only. The scan's lowest p is the run of days 2-4
    # (above); day 5 alone is lower than days 0-1 (a: -1 each), so the run reaches day 5;
    # day 6 alone is not (every question hits, as before: differences all 0, p 1), so it
    # stops there. The first fix tested days 5-6 as one block (a: 1/2 against 1, lower)
    # and reported "to the end".
    table: dict[str, list[int | None]] = {}
    for i in range(10):
        table[f"a{i}"] = [1, 1, 0, 0, 0, 0, 1]
        table[f"b{i}"] = [1] * 7
    table["c"] = [1, 1, 1, 0, 1, 1, 1]
    report = over_time(_series(table))
    run = report["known"]["sustained"]
    assert run["beyond_noise"] and run["start"] == 2 * DAY and run["end"] == 6 * DAY
    assert not run["to_end"] and run["points"] == 4 and run["questions"] == 21
    # in it (days 2-5): a 0, b 1, c 3/4; its own paired t over the 21 differences
    assert abs(run["question_hit_rate"] - (10 + 0.75) / 21) < 1e-12
    expected = stats.ttest_1samp([-1.0] * 10 + [0.0] * 10 + [-0.25], 0.0).pvalue
    assert abs(run["p_value"] - expected) < 1e-9 * expected
    assert run["after"] == {"start": 6 * DAY, "points": 1, "at": 6 * DAY, "questions": 21,
                            "judged": True, "question_hit_rate": 1.0,
                            "before_question_hit_rate": 1.0, "p_value": 1.0, "lower": False,
                            "recovered": True, "together": 1}  # fmt: skip
    line = str(known_line(report, 10))
    assert ("to 1970-01-07 00:00 UTC (4 points), hit rate LOWER beyond noise" in line
            and "then from 1970-01-07 00:00 UTC (1 point) not lower beyond noise: 1.000 "
                "against 1.000 before it, 21 questions, p 1" in line)  # fmt: skip


def test_a_short_point_is_stepped_over_and_the_run_goes_on() -> None:
    # as above, but the drop lasts to day 7, and day 5 holds only a0-a2 (3 < min_n 10: not
    # judged, stepped over): day 6 alone is lower, then day 7 too, so the run reaches the
    # end, its short point included
    table: dict[str, list[int | None]] = {}
    for i in range(10):
        table[f"a{i}"] = [1, 1, 0, 0, 0, 0 if i < 3 else None, 0, 0]
        table[f"b{i}"] = [1, 1, 1, 1, 1, None, 1, 1]
    table["c"] = [1, 1, 1, 0, 1, None, 1, 1]
    run = over_time(_series(table))["known"]["sustained"]
    assert run["beyond_noise"] and run["start"] == 2 * DAY
    assert run["to_end"] and run["end"] == 8 * DAY and "after" not in run
    # in it (days 2-7; day 5 untested, so 5 tested points): a 0, b 1, c 4/5
    assert run["points"] == 5 and abs(run["question_hit_rate"] - (10 + 0.8) / 21) < 1e-12


def _recovered_in_small_points(
    day9_misses: int, day_sets: Sequence[Collection[int]]
) -> dict[str, list[int | None]]:
    """40 questions over 10 days: all hit on days 0-1; q00-q19 miss on days 2-5 (q20-q39
    hit); on days 6-8 only the questions of ``day_sets`` are asked, and all hit; on day 9
    all 40 are asked and q00 .. q(day9_misses - 1) miss."""
    table: dict[str, list[int | None]] = {}
    for q in range(40):
        row: list[int | None] = [1, 1]
        row += [0 if q < 20 else 1] * 4
        row += [1 if q in asked else None for asked in day_sets]
        table[f"q{q:02d}"] = row + [0 if q < day9_misses else 1]
    return table


def _run_days_2_to_5(run: dict[str, Any]) -> None:
    # in it (days 2-5): q00-q19 0, q20-q39 1; before it all 1: 20 differences -1, 20 of 0
    assert run["beyond_noise"] and run["start"] == 2 * DAY and run["end"] == 6 * DAY
    assert not run["to_end"] and run["points"] == 4 and run["questions"] == 40
    assert run["question_hit_rate"] == 0.5 and run["before_question_hit_rate"] == 1.0
    expected = stats.ttest_1samp([-1.0] * 20 + [0.0] * 20, 0.0).pvalue
    assert abs(run["p_value"] - expected) < 1e-9 * expected


def test_a_recovery_in_points_too_small_to_judge_stops_the_run() -> None:
    # days 6-8: 6 questions each (q00-q05, q06-q11, q12-q17: under min_n 10, none judged
    # alone), all hit again; day 9: q00-q05 miss, alone lower than days 0-1 (6 of 40
    # differences -1: p 0.012). Stepped over one by one, the three small points joined the
    # run through day 9: "to the end". Together they are 18 questions, each 1 against 0 in
    # the run (differences all +1: p 0) and 1 against 1 before it (p 1): a recovery, so the
    # run ends at day 6.
    assert stats.ttest_1samp([-1.0] * 6 + [0.0] * 34, 0.0).pvalue < 0.05
    table = _recovered_in_small_points(6, [range(0, 6), range(6, 12), range(12, 18)])
    report = over_time(_series(table))
    run = report["known"]["sustained"]
    _run_days_2_to_5(run)
    assert run["after"] == {"start": 6 * DAY, "points": 4, "at": 6 * DAY, "questions": 18,
                            "judged": True, "question_hit_rate": 1.0,
                            "before_question_hit_rate": 1.0, "p_value": 1.0, "lower": False,
                            "recovered": True, "together": 3}  # fmt: skip
    assert ("then from 1970-01-07 00:00 UTC (4 points; judged on its first 3 points together)"
            " not lower beyond noise: 1.000 against 1.000 before it, 18 questions, p 1; higher"
            " than in the run beyond noise" in str(known_line(report, 10)))  # fmt: skip


def test_a_recovery_in_points_each_within_noise_stops_the_run() -> None:
    # days 6-7: 12 questions each (3 of the dropped, q00-q02 then q03-q05, and 9 others),
    # all hit: alone, 3 differences +1 and 9 of 0 against the run (p 0.08: not above it
    # beyond noise) and all 0 against days 0-1 (not lower): within noise both ways; day 8:
    # q06-q08, q38, q39 (5: too few); day 9: q00-q04 miss, alone lower (p 0.023). Together
    # days 6-8 are 29 questions, 9 differences +1 and 20 of 0 against the run: a recovery.
    alone = stats.ttest_1samp([1.0] * 3 + [0.0] * 9, 0.0).pvalue
    assert 0.05 < alone < 0.1
    assert stats.ttest_1samp([-1.0] * 5 + [0.0] * 35, 0.0).pvalue < 0.05
    assert stats.ttest_1samp([1.0] * 9 + [0.0] * 20, 0.0).pvalue < 0.05
    sets = [{0, 1, 2, *range(20, 29)}, {3, 4, 5, *range(29, 38)}, {6, 7, 8, 38, 39}]
    run = over_time(_series(_recovered_in_small_points(5, sets)))["known"]["sustained"]
    _run_days_2_to_5(run)
    assert run["after"] == {"start": 6 * DAY, "points": 4, "at": 6 * DAY, "questions": 29,
                            "judged": True, "question_hit_rate": 1.0,
                            "before_question_hit_rate": 1.0, "p_value": 1.0, "lower": False,
                            "recovered": True, "together": 3}  # fmt: skip
