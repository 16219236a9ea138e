"""Live quality and shadow agreement over event time (a fifteenth trial: production's recall
on known questions was 0.965 / 0.965 / 0.371 / 0.973 / 0.949 per day, and the reports showed
only the run's 0.812). Expected values are worked out by hand or with scipy from the raw
results, not from the sums the code keeps."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from scipy import stats

from service.html.over_time import agreement_over_time, quality_over_time
from service.jobs.series import TimeSeries, question_key
from service.quality.over_time import (
    KNOWN_MISS_NOT_THIS,
    agreement_line,
    known_line,
    over_time,
    welch_t_test,
)
from service.shadow.agreement import Agreement
from service.shadow.runner import ShadowResult

HOUR, DAY = 3600.0, 86400.0
START = datetime(2026, 11, 30, tzinfo=UTC).timestamp()  # a UTC midnight


def _result(t: float, candidate: str, rbo: float | None, overlap: float | None,
            error: str | None = None, question: str = "q") -> ShadowResult:  # fmt: skip
    agreement = None if error else Agreement(depth=10, shared=0, overlap=overlap, jaccard=None,
                                             rbo=rbo, kendall_tau=None, top1=None,
                                             citation_recall=None)  # fmt: skip
    return ShadowResult(candidate=candidate, event_id=f"e-{t}", timestamp=datetime.fromtimestamp(
        t, UTC), question=question, language=None, topic=None, channel=None, role=None,
        production=("p",), ranking=("p",), agreement=agreement, latency_s=0.0, queue_s=0.0,
        attempts=1, error=error)  # fmt: skip


def _known(recall: float, hit: int, rr: float) -> dict[str, Any]:
    return {"known": {"gold_id": "q", "similarity": 1.0,
                      "scores": {"recall": recall, "hit": hit, "rr": rr}}}  # fmt: skip


def test_series_sums_known_scores_and_agreement_by_bucket_and_keeps_them() -> None:
    series = TimeSeries(bucket_s=HOUR)
    series.add_batch(
        [START + 60, START + 120, START + 180, START + HOUR],
        [_known(1.0, 1, 0.5), _known(0.5, 1, 1.0), {"known": None},  # not known: no score
         {"known": {"gold_id": "q", "similarity": 1.0, "scores": None}}],  # known, not scored
    )  # fmt: skip
    series.observe_shadow(_result(START + 10, "mine", 0.9, 0.8))
    series.observe_shadow(_result(START + 20, "mine", None, 0.6))  # RBO undefined
    series.observe_shadow(_result(START + 30, "mine", None, None, error="timeout"))  # ignored
    first, second = series.report()["buckets"]
    assert first["known"] == {"n": 2, "recall": 1.5, "hit": 2, "rr": 1.5, "recall_sq": 1.25,
                              "rr_sq": 1.25}  # fmt: skip
    assert first["agreement"] == {"mine": {"n": 1, "rbo": 0.9, "rbo_sq": pytest.approx(0.81),
                                           "n_overlap": 2, "overlap": pytest.approx(1.4),
                                           "overlap_sq": pytest.approx(1.0)}}  # fmt: skip
    assert second["known"]["n"] == 0 and second["agreement"] == {}
    # per question too: gold row "q" twice, both hit; the question "q" once, RBO 0.9
    assert first["known_questions"] == {"q": [2, 2]}
    assert first["agreement_questions"] == {"mine": {question_key("q"): [1, 0.9]}}
    assert second["known_questions"] == {} and second["agreement_questions"] == {}
    # a checkpoint keeps them; coarsening adds them up
    again = TimeSeries(bucket_s=HOUR, max_buckets=2)
    again.restore(series.state_snapshot())
    assert again.report() == series.report()
    again.add(START + 3 * HOUR, "en", None, None)  # a third bucket: 2 h wide
    merged = again.report()["buckets"][0]
    assert merged["known"]["n"] == 2 and merged["agreement"]["mine"]["n_overlap"] == 2
    assert merged["known_questions"] == {"q": [2, 2]}
    # a version-1 snapshot (before quality was kept) restores its counts, with no results
    old = series.state_snapshot()
    old = {**old, "version": 1, "buckets": [row[:5] for row in old["buckets"]]}
    v1 = TimeSeries(bucket_s=HOUR)
    v1.restore(old)
    assert [b["answers"] for b in v1.report()["buckets"]] == [0, 0]
    assert all(b["known"]["n"] == 0 and b["agreement"] == {} for b in v1.report()["buckets"])
    assert v1.report()["quality_partial"] is True and series.report()["quality_partial"] is False
    # a version-2 snapshot (sums, no questions) drops its quality too, and says so
    old = series.state_snapshot()
    old = {**old, "version": 2, "buckets": [row[:7] for row in old["buckets"]]}
    v2 = TimeSeries(bucket_s=HOUR)
    v2.restore(old)
    assert all(b["known"]["n"] == 0 and b["agreement"] == {} for b in v2.report()["buckets"])
    assert v2.report()["quality_partial"] is True
    line = known_line(over_time({**v2.report(), "buckets": series.report()["buckets"]}), 10)
    assert (line or "").startswith("  production over time (only the runs since the state's "
                                   "upgrade")  # fmt: skip


def _trial_days() -> tuple[TimeSeries, list[list[tuple[float, int]]]]:
    """Production's scored known questions over 5 days, each day's in its 10:00 hour: per day
    (recall, hit) rows, the trial's counts; day 3 degraded."""
    days = [
        [(1.0, 1)] * 17 + [(0.5, 1)] * 2,  # recall 18/19
        [(1.0, 1)] * 19,
        [(1.0, 1)] * 13 + [(0.0, 0)] * 22,  # 13 of 35 hit
        [(1.0, 1)] * 25,
        [(1.0, 1)] * 38 + [(0.5, 1)] * 2,
    ]
    series = TimeSeries(bucket_s=HOUR)
    for d, rows in enumerate(days):
        for i, (recall, hit) in enumerate(rows):
            t = START + d * DAY + 10 * HOUR + i
            series.add_known(t, {"recall": recall, "hit": hit, "rr": recall}, f"g{i}")
    return series, days


def test_the_degraded_day_stands_out_beyond_noise() -> None:
    series, days = _trial_days()
    report = over_time(series.report())
    track = report["known"]
    # every hour of traffic holds at least 10: hourly points (the width choice: below)
    assert track["bucket_s"] == HOUR
    assert [p["n"] for p in track["points"]] == [len(rows) for rows in days]
    assert [p["start"] for p in track["points"]] == [START + d * DAY + 10 * HOUR
                                                     for d in range(5)]  # fmt: skip
    assert [round(p["recall"], 4) for p in track["points"]] == [
        round(18 / 19, 4), 1.0, round(13 / 35, 4), 1.0, round(39 / 40, 4)]  # fmt: skip
    assert track["all"] == {"n": 138, "recall": pytest.approx((18 + 19 + 13 + 25 + 39) / 138),
                            "hit_rate": pytest.approx(116 / 138),
                            "mrr": pytest.approx((18 + 19 + 13 + 25 + 39) / 138),
                            "questions": 40}  # fmt: skip
    worst = track["worst"]
    assert (worst["start"], worst["n"]) == (START + 2 * DAY + 10 * HOUR, 35)
    assert worst["hit_rate"] == pytest.approx(13 / 35)
    # the question is the unit: day 3 asked g0-g34 once each (g0-g12 hit); the rest of the run
    # asked g0-g39, every one hit on every other day: 40 questions of hit rate 1
    inside, rest = [1.0] * 13 + [0.0] * 22, [1.0] * 40
    assert (worst["questions"], worst["rest_questions"]) == (35, 40)
    assert worst["question_hit_rate"] == pytest.approx(13 / 35)
    assert worst["rest_question_hit_rate"] == 1.0
    welch = stats.ttest_ind(inside, rest, equal_var=False)
    assert worst["test"] == "Welch t-test on per-question hit rates"
    assert worst["p_value"] == pytest.approx(welch.pvalue, rel=1e-9)
    assert track["tested"] == 5
    assert worst["tests"] == 5 and worst["threshold"] == pytest.approx(0.01)
    assert worst["beyond_noise"] is True
    # the Wilson band of 13 of 35
    wilson = stats.binomtest(13, 35).proportion_ci(method="wilson")
    third = track["points"][2]
    assert (third["hit_low"], third["hit_high"]) == pytest.approx((wilson.low, wilson.high))
    # the normal band of the mean recall: s with n - 1
    values = [r for r, _ in days[0]]
    half = 1.959963984540054 * np.std(values, ddof=1) / math.sqrt(len(values))
    first = track["points"][0]
    assert (first["recall_low"], first["recall_high"]) == pytest.approx(
        (np.mean(values) - half, min(np.mean(values) + half, 1.0)))  # fmt: skip

    # the sustained test, by brute force with scipy over every run of days i..j (i >= 2):
    # each row's hit rate in the run against its rate before, rows asked on both sides
    def rates(first: int, last: int) -> dict[int, float]:
        asked: dict[int, list[int]] = {}
        for rows in days[first:last]:
            for q, (_, hit) in enumerate(rows):
                asked.setdefault(q, []).append(hit)
        return {q: sum(v) / len(v) for q, v in asked.items()}

    found = []
    for i in range(1, 5):
        for j in range(i, 5):
            inside, before = rates(i, j + 1), rates(0, i)
            both = sorted(set(inside) & set(before))
            diffs = [inside[q] - before[q] for q in both]
            if len(both) >= 10 and np.mean(diffs) < 0:
                p = stats.ttest_rel([inside[q] for q in both], [before[q] for q in both]).pvalue
                found.append((p, i, -j, np.mean(diffs)))
    assert len(found) == 6  # of the 10 runs tested, those below their prefix
    p, i, j, _ = min(found)
    if p < 0.05 / 10:  # the largest drop of the runs beyond noise ending there
        p, i, j, _ = min((r for r in found if r[2] == j and r[0] < 0.05 / 10),
                         key=lambda r: (r[3], r[1]))  # fmt: skip
    run = track["sustained"]
    assert (run["start"], run["points"], run["tests"]) == (START + i * DAY + 10 * HOUR,
                                                           -j - i + 1, 10)  # fmt: skip
    # not beyond noise (no run is: day 3 alone against days 1-2 pairs only g0-g18, 6 of
    # them missed on day 3, p 0.0099, not below 0.05/10); the worst point's test (below)
    # finds the day
    assert run["p_value"] == pytest.approx(p, rel=1e-9) and run["beyond_noise"] is False
    assert p > 0.05 / 10 and stats.ttest_rel([1.0] * 13 + [0.0] * 6, [1.0] * 19).pvalue > 0.005
    end = "the end" if -j == 4 else f"2026-12-0{-j} 11:00 UTC"  # day 0 is 11-30
    assert known_line(report, 10) == (  # then what it is not (trial 39)
        "  production over time (1 h points of >= 10 scored, 5 drawn): sustained: from "
        f"2026-12-0{i} 10:00 UTC to {end} ({-j - i + 1} points), hit rate within noise "
        f"(paired t-test on per-question hit rates, {run['questions']} questions asked in it "
        f"and before it: {run['question_hit_rate']:.3f} in it against "
        f"{run['before_question_hit_rate']:.3f} before it: p {p:.2g} >= 0.05/10, "
        "Bonferroni over the 10 runs of consecutive points tested against the points before "
        "them); worst 2026-12-02 "
        "10:00 UTC + 1 h: hit rate 0.371, recall@10 0.371, MRR 0.371 (n 35) vs 0.841, "
        "0.826, 0.826 over the run: hit rate LOWER beyond noise (Welch t-test on per-question "
        "hit rates, 0.371 of 35 questions against 1.000 of 40 in the rest of the run: p "
        f"{welch.pvalue:.2g} < 0.05/5, Bonferroni over the points tested)"
        + ". "
        + KNOWN_MISS_NOT_THIS
    )


def test_a_steady_run_stays_within_noise() -> None:
    series = TimeSeries(bucket_s=HOUR)
    hits = [18, 17, 19, 18, 16]  # of 20 a day: 16/20 against 72/80 is chance
    for d, n_hit in enumerate(hits):
        for i in range(20):
            hit = int(i < n_hit)
            series.add_known(START + d * DAY + i * HOUR, {"recall": hit, "hit": hit, "rr": hit},
                             f"d{d}-{i}")  # 100 different questions  # fmt: skip
    report = over_time(series.report())
    worst = report["known"]["worst"]
    # one an hour, 00:00-19:00: 12 h points hold 12 and 8, so points of >= 10 hold 60 % of
    # the results (< 80 %); days hold all
    assert report["known"]["bucket_s"] == DAY
    assert (worst["start"], worst["n"]) == (START + 4 * DAY, 20)
    welch = stats.ttest_ind([1.0] * 16 + [0.0] * 4, [1.0] * 72 + [0.0] * 8, equal_var=False)
    assert worst["p_value"] == pytest.approx(welch.pvalue, rel=1e-9)
    assert worst["beyond_noise"] is False
    assert "hit rate within noise" in (known_line(report, 10) or "")


def test_agreement_worst_hour_by_welch_z_test_on_the_raw_results() -> None:
    series = TimeSeries(bucket_s=HOUR)
    rng = np.random.default_rng(7)
    raw: dict[int, list[float]] = {}
    for h in range(10):
        centre = 0.6 if h == 6 else 0.92
        raw[h] = [float(v) for v in np.clip(rng.normal(centre, 0.05, 30), 0, 1)]
        for i, v in enumerate(raw[h]):
            series.observe_shadow(_result(START + h * HOUR + i, "mine", v, v,
                                          question=f"q {h} {i}"))  # fmt: skip
    report = over_time(series.report())
    track = report["agreement"]["mine"]
    assert track["bucket_s"] == HOUR and len(track["points"]) == 10
    worst = track["worst"]
    assert worst["start"] == START + 6 * HOUR and worst["rbo"] == pytest.approx(np.mean(raw[6]))
    rest = [v for h, values in raw.items() if h != 6 for v in values]
    # 300 different questions, each once: the per-question means are the results themselves
    welch = stats.ttest_ind(raw[6], rest, equal_var=False)
    assert (worst["questions"], worst["rest_questions"]) == (30, 270)
    assert worst["p_value"] == pytest.approx(welch.pvalue, rel=1e-6)
    assert worst["beyond_noise"] is True and worst["threshold"] == pytest.approx(0.005)
    line = agreement_line(report, "mine") or ""
    assert line.startswith("  mine over time (1 h points of >= 10 results, 10 drawn): worst "
                           "2026-11-30 06:00 UTC + 1 h: RBO ")  # fmt: skip
    assert "RBO LOWER beyond noise (Welch t-test on per-question mean RBOs, " in line


def test_too_few_results_are_not_compared_and_small_points_not_drawn() -> None:
    series = TimeSeries(bucket_s=HOUR)
    for i in range(12):  # 12 scored over 12 days: no width has two points of 10
        series.add_known(START + i * DAY, {"recall": 1.0, "hit": 1, "rr": 1.0}, f"g{i}")
    report = over_time(series.report())
    assert report["known"]["worst"] is None
    assert known_line(report, 5) == (
        "  production over time: not compared: 12 scored of 12 distinct questions in all, 0 "
        "points of >= 10 distinct questions (2 are needed: one question asked again is not new "
        "evidence)")  # fmt: skip
    assert over_time({"bucket_s": HOUR, "buckets": []}) == {
        "min_n": 10, "level": 0.05, "quality_partial": False, "known": None,
        "agreement": {}}  # fmt: skip
    with pytest.raises(ValueError):
        over_time({"buckets": []}, min_n=1)


def test_welch_t_test_by_hand() -> None:
    # means 0.45 and 0.75, sample variances 0.35 / 3 and 0.05 / 5; Welch-Satterthwaite df
    a, b = [0.1, 0.5, 0.9, 0.3], [0.7, 0.8, 0.9, 0.6, 0.75, 0.75]
    va, vb = 0.35 / 3, 0.05 / 5  # sums of squared deviations over n - 1
    se2 = va / 4 + vb / 6
    df = se2**2 / ((va / 4) ** 2 / 3 + (vb / 6) ** 2 / 5)
    expected = 2 * stats.t.sf(0.3 / math.sqrt(se2), df)
    assert welch_t_test(a, b) == pytest.approx(expected, rel=1e-9)
    assert welch_t_test([1.0, 1.0], [0.0, 0.0]) == 0.0
    assert welch_t_test([1.0, 1.0], [1.0] * 3) == 1.0
    with pytest.raises(ValueError):
        welch_t_test([0.5], b)


def test_one_question_asked_again_is_not_new_evidence() -> None:
    """Review 3, HIGH 1: a steady day of 40 different questions an hour, and one user asking
    one question 12 times at 03:00 (RBO 0.85 each, the run's mean about 0.94): the events'
    test said p 7e-59. Counted by question, 03:00 holds one question: not tested."""
    rng = np.random.default_rng(0)
    series = TimeSeries(bucket_s=HOUR)
    for h in range(8, 20):
        for i, v in enumerate(np.where(rng.random(40) < 0.8, 1.0, rng.uniform(0.5, 0.95, 40))):
            series.add_agreement(START + h * HOUR + i, "mine", float(v), float(v), f"q{h}-{i}")
    for i in range(12):
        series.add_agreement(START + 3 * HOUR + i, "mine", 0.85, 0.85, " Same  QUESTION ")
    track = over_time(series.report())["agreement"]["mine"]
    assert track["points"][0]["start"] == START + 3 * HOUR and track["points"][0]["n"] == 12
    assert track["points"][0]["questions"] == 1  # case and spacing do not make it new
    assert track["tested"] == 12 and track["worst"]["start"] != START + 3 * HOUR
    assert track["worst"]["beyond_noise"] is False
    # hits: a gold row production always misses, asked 10 times in one hour
    known = TimeSeries(bucket_s=HOUR)
    for h in range(8, 20):
        for i in range(10):
            hit = int(i < 9)
            known.add_known(START + h * HOUR + i, {"recall": hit, "hit": hit, "rr": hit},
                            f"g{h}-{i}")  # fmt: skip
    again = TimeSeries(bucket_s=HOUR)
    again.restore(known.state_snapshot())
    for i in range(10):
        known.add_known(START + 3 * HOUR + i, {"recall": 0.0, "hit": 0, "rr": 0.0}, "missed")
        # the same misses as 10 different questions are 10 observations: that hour stands out
        again.add_known(START + 3 * HOUR + i, {"recall": 0.0, "hit": 0, "rr": 0.0}, f"m{i}")
    one = over_time(known.report())["known"]
    assert one["worst"]["start"] != START + 3 * HOUR and one["worst"]["beyond_noise"] is False
    many = over_time(again.report())["known"]["worst"]
    rest = [1.0] * 108 + [0.0] * 12  # 120 questions of 08:00-19:00, 9 of 10 an hour hit
    welch = stats.ttest_ind([0.0] * 10, rest, equal_var=False)
    assert many["start"] == START + 3 * HOUR and many["p_value"] == pytest.approx(welch.pvalue)
    assert many["beyond_noise"] is True


def test_the_html_draws_the_points_and_emphasises_a_bad_day() -> None:
    series, _ = _trial_days()
    for h in range(3):
        for i in range(12):
            series.observe_shadow(_result(START + h * HOUR + i, "mine", 0.9, 0.9))
    report = over_time(series.report())
    quality = "".join(quality_over_time(report, 10))
    assert quality.count("<svg") == 1 and "Points of 1 h (UTC)" in quality
    assert '<p class="warn">production over time (1 h points' in quality
    assert "production: 5 points" in quality  # the table of points, with every n
    assert "distinct questions" in quality and [p["questions"] for p in report["known"]["points"]
                                                ] == [19, 19, 35, 25, 40]  # fmt: skip
    agreement = "".join(agreement_over_time(report))
    assert agreement.count("<svg") == 1 and '<p class="muted">mine over time' in agreement
    assert quality_over_time(None, 10) == [] and agreement_over_time({"agreement": {}}) == []


def _daily(days: list[list[int]]) -> TimeSeries:
    """One 1 h point a day (10:00), gold rows ``g0``... asked once each: ``days[d][q]`` the
    hit (0/1) of row ``q`` on day ``d``."""
    series = TimeSeries(bucket_s=HOUR)
    for d, hits in enumerate(days):
        for q, hit in enumerate(hits):
            series.add_known(START + d * DAY + 10 * HOUR + q, {"recall": hit, "hit": hit,
                                                                "rr": hit}, f"g{q}")  # fmt: skip
    return series


def test_a_sustained_drop_is_found_against_the_points_before_it() -> None:
    """Trial 41, M3: a drop lasting many points also lowers "the rest", so the worst point
    alone read "within noise". Six days of 20 gold rows asked once a day, all hit; from day
    4 to the end rows g0-g9 miss. By hand: the run days 4-6 against days 1-3, the 20 rows
    asked on both sides: per-row differences 10 × -1 and 10 × 0, mean -0.5, s² = 20 · 0.25
    / 19, t = -0.5 / √(5/19 / 20) = -√19, 19 df."""
    days = [[1] * 20] * 3 + [[0] * 10 + [1] * 10] * 3
    track = over_time(_daily(days).report())["known"]
    run = track["sustained"]
    t = -math.sqrt(19.0)
    assert stats.ttest_rel([0.0] * 10 + [1.0] * 10, [1.0] * 20).statistic == pytest.approx(t)
    # runs: a prefix needs 10 rows, so every run starting on days 2-6 is tested: 5+4+3+2+1
    assert run["tests"] == 15 and run["threshold"] == pytest.approx(0.05 / 15)
    # days 2-6 against day 1 (g0-g9 0.4 against 1) has the same t (differences in
    # proportion): the reported run is the one of the largest drop, days 4-6
    assert (run["start"], run["end"], run["points"]) == (
        START + 3 * DAY + 10 * HOUR,
        START + 5 * DAY + 11 * HOUR,
        3,
    )
    assert run["to_end"] is True and run["questions"] == 20
    assert run["question_hit_rate"] == 0.5 and run["before_question_hit_rate"] == 1.0
    assert run["p_value"] == pytest.approx(2 * stats.t.sf(math.sqrt(19.0), 19), rel=1e-9)
    assert run["beyond_noise"] is True
    assert run["test"] == "paired t-test on per-question hit rates"
    line = known_line(over_time(_daily(days).report()), 10) or ""
    assert (
        "sustained: from 2026-12-03 10:00 UTC to the end (3 points), hit rate LOWER beyond "
        "noise (paired t-test on per-question hit rates, 20 questions asked in it and before "
        f"it: 0.500 in it against 1.000 before it: p {run['p_value']:.2g} < 0.05/15, "
        "Bonferroni over the 15 runs of consecutive points tested against the points before "
        "them); worst "
    ) in line
    # the worst point against the rest: day 4 (g0-g9 0 of 1) against days 1-3, 5, 6
    # (g0-g9 3 of 5): rows' rates 0.6 against a point's 0
    worst = track["worst"]
    welch = stats.ttest_ind([0.0] * 10 + [1.0] * 10, [0.6] * 10 + [1.0] * 10, equal_var=False)
    assert worst["p_value"] == pytest.approx(welch.pvalue, rel=1e-9)
    assert welch.pvalue > 0.05 / 6 and worst["beyond_noise"] is False  # the trial's reading


def test_a_drop_that_ends_starts_where_it_began() -> None:
    # days 3-4 of 7 lose g0-g9: every run from day 3 has differences 10 × -1 (or in
    # proportion) and 10 × 0: the same t, -√19, for days 3-4 … 3-7 and for days 2-… against
    # day 1; the largest drop, -0.5, starts on day 3. The end is the lowest p's (ties: the
    # longest run): the paired t is blind to the dilution of the recovered days 5-7
    # (module docstring, known limits)
    days = [[1] * 20] * 2 + [[0] * 10 + [1] * 10] * 2 + [[1] * 20] * 3
    run = over_time(_daily(days).report())["known"]["sustained"]
    assert run["start"] == START + 2 * DAY + 10 * HOUR and run["beyond_noise"] is True
    assert run["p_value"] == pytest.approx(2 * stats.t.sf(math.sqrt(19.0), 19), rel=1e-9)
    assert (run["points"], run["to_end"]) == (5, True)
    assert (run["question_hit_rate"], run["before_question_hit_rate"]) == (0.8, 1.0)
    # a rise is no sustained drop: nothing below the points before it
    rise = [[0] * 10 + [1] * 10] * 3 + [[1] * 20] * 3
    up = over_time(_daily(rise).report())["known"]["sustained"]
    assert up == {"found": False, "beyond_noise": False, "tests": 15,
                  "threshold": pytest.approx(0.05 / 15)}  # fmt: skip
    assert (
        "sustained: no run of points below the points before it (Bonferroni over the 15 "
        "runs" in (known_line(over_time(_daily(rise).report()), 10) or "")
    )


def test_a_stationary_stream_stays_quiet_and_a_planted_drop_is_found() -> None:
    """The false-alarm rate on stationary simulations (benchmarks.over_time_alarms: 5 days,
    ~8 scored known questions an hour over 40 Zipf-asked rows, fixed retrievers with 30 %
    of rows flipping at random, one user's 12 repeats a day): the sustained test's family
    level is 0.05, so 40 stationary runs should hold about 2 or fewer alarms (binomial
    (40, 0.05): P(>= 6) < 1.5 %); the trial's 50 % hit loss from day 3 is found in each."""
    from benchmarks.over_time_alarms import count

    assert count(40, drop=False, agreement=False)["sustained"] <= 5
    assert count(10, drop=True, agreement=False)["sustained"] >= 9


def test_run_edges_are_capped_evenly_with_the_ends_kept() -> None:
    """Session 41's review: the sustained scan tested every run of up to 500 points (61 s,
    408 MB on a shadow candidate). Past MAX_RUN_EDGES tested points, runs start and end only at
    that many evenly spaced ones: 100 points -> 64 edges, 0 and 99 kept, steps of 99/63 ~ 1.57
    rounded, so every gap is 1 or 2 points; at or under the cap, every point."""
    from service.quality.over_time import MAX_RUN_EDGES, _edges

    assert MAX_RUN_EDGES == 64
    few = [float(i) for i in range(64)]
    assert _edges(few) == few
    edges = _edges([float(i) for i in range(100)])
    assert len(edges) == 64 and edges[0] == 0.0 and edges[-1] == 99.0
    assert {b - a for a, b in zip(edges, edges[1:], strict=False)} == {1.0, 2.0}
