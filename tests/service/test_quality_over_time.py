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
from service.jobs.series import TimeSeries
from service.quality.over_time import agreement_line, known_line, over_time, welch_z_test
from service.shadow.agreement import Agreement
from service.shadow.runner import ShadowResult

HOUR, DAY = 3600.0, 86400.0
START = datetime(2026, 11, 30, tzinfo=UTC).timestamp()  # a UTC midnight


def _result(t: float, candidate: str, rbo: float | None, overlap: float | None,
            error: str | None = None) -> ShadowResult:  # fmt: skip
    agreement = None if error else Agreement(depth=10, shared=0, overlap=overlap, jaccard=None,
                                             rbo=rbo, kendall_tau=None, top1=None,
                                             citation_recall=None)  # fmt: skip
    return ShadowResult(candidate=candidate, event_id=f"e-{t}", timestamp=datetime.fromtimestamp(
        t, UTC), question="q", language=None, topic=None, channel=None, role=None,
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
    # a checkpoint keeps them; coarsening adds them up
    again = TimeSeries(bucket_s=HOUR, max_buckets=2)
    again.restore(series.state_snapshot())
    assert again.report() == series.report()
    again.add(START + 3 * HOUR, "en", None, None)  # a third bucket: 2 h wide
    merged = again.report()["buckets"][0]
    assert merged["known"]["n"] == 2 and merged["agreement"]["mine"]["n_overlap"] == 2
    # a version-1 snapshot (before quality was kept) restores its counts, with no results
    old = series.state_snapshot()
    old = {**old, "version": 1, "buckets": [row[:5] for row in old["buckets"]]}
    v1 = TimeSeries(bucket_s=HOUR)
    v1.restore(old)
    assert [b["answers"] for b in v1.report()["buckets"]] == [0, 0]
    assert all(b["known"]["n"] == 0 and b["agreement"] == {} for b in v1.report()["buckets"])


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
            series.add_known(t, {"recall": recall, "hit": hit, "rr": recall})
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
                            "mrr": pytest.approx((18 + 19 + 13 + 25 + 39) / 138)}  # fmt: skip
    worst = track["worst"]
    assert (worst["start"], worst["n"], worst["rest_n"]) == (START + 2 * DAY + 10 * HOUR, 35, 103)
    assert worst["hit_rate"] == pytest.approx(13 / 35) and worst["rest_hit_rate"] == 1.0
    # the pooled z-test is the uncorrected chi-square of the 2 x 2 table (expected cells >= 5)
    chi2 = stats.chi2_contingency([[13, 22], [103, 0]], correction=False)
    assert worst["test"] == "two-proportion z-test"
    assert worst["p_value"] == pytest.approx(chi2.pvalue, rel=1e-9)
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
    assert known_line(report, 10) == (
        "  production over time (1 h points of >= 10 scored, 5 drawn): worst 2026-12-02 "
        "10:00 UTC + 1 h: hit rate 0.371, recall@10 0.371, MRR 0.371 (n 35) vs 0.841, "
        "0.826, 0.826 over the run: LOWER beyond noise (two-proportion z-test against the "
        f"rest, hit rate 1.000 of 103: p {chi2.pvalue:.2g} < 0.05/5, Bonferroni over the "
        "points drawn)"
    )


def test_a_steady_run_stays_within_noise() -> None:
    series = TimeSeries(bucket_s=HOUR)
    hits = [18, 17, 19, 18, 16]  # of 20 a day: 16/20 against 72/80 is chance
    for d, n_hit in enumerate(hits):
        for i in range(20):
            hit = int(i < n_hit)
            series.add_known(START + d * DAY + i * HOUR, {"recall": hit, "hit": hit, "rr": hit})
    report = over_time(series.report())
    worst = report["known"]["worst"]
    # one an hour, 00:00-19:00: 12 h points hold 12 and 8, so points of >= 10 hold 60 % of
    # the results (< 80 %); days hold all
    assert report["known"]["bucket_s"] == DAY
    assert (worst["start"], worst["n"]) == (START + 4 * DAY, 20)
    # an expected cell under 5 (12 misses in all): Fisher's exact test
    fisher = stats.fisher_exact([[16, 4], [72, 8]])
    assert worst["test"] == "two-proportion Fisher exact test"
    assert worst["p_value"] == pytest.approx(fisher.pvalue, rel=1e-9)
    assert worst["beyond_noise"] is False
    assert "within noise" in (known_line(report, 10) or "")


def test_agreement_worst_hour_by_welch_z_test_on_the_raw_results() -> None:
    series = TimeSeries(bucket_s=HOUR)
    rng = np.random.default_rng(7)
    raw: dict[int, list[float]] = {}
    for h in range(10):
        centre = 0.6 if h == 6 else 0.92
        raw[h] = [float(v) for v in np.clip(rng.normal(centre, 0.05, 30), 0, 1)]
        for i, v in enumerate(raw[h]):
            series.observe_shadow(_result(START + h * HOUR + i, "mine", v, v))
    report = over_time(series.report())
    track = report["agreement"]["mine"]
    assert track["bucket_s"] == HOUR and len(track["points"]) == 10
    worst = track["worst"]
    assert worst["start"] == START + 6 * HOUR and worst["rbo"] == pytest.approx(np.mean(raw[6]))
    rest = [v for h, values in raw.items() if h != 6 for v in values]
    z = (np.mean(raw[6]) - np.mean(rest)) / math.sqrt(
        np.var(raw[6], ddof=1) / 30 + np.var(rest, ddof=1) / 270)  # fmt: skip
    assert worst["p_value"] == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-6)
    assert worst["beyond_noise"] is True and worst["threshold"] == pytest.approx(0.005)
    line = agreement_line(report, "mine") or ""
    assert line.startswith("  mine over time (1 h points of >= 10 results, 10 drawn): worst "
                           "2026-11-30 06:00 UTC + 1 h: RBO ")  # fmt: skip
    assert "LOWER beyond noise (Welch z-test against the rest" in line


def test_too_few_results_are_not_compared_and_small_points_not_drawn() -> None:
    series = TimeSeries(bucket_s=HOUR)
    for i in range(12):  # 12 scored over 12 days: no width has two points of 10
        series.add_known(START + i * DAY, {"recall": 1.0, "hit": 1, "rr": 1.0})
    report = over_time(series.report())
    assert report["known"]["worst"] is None
    assert known_line(report, 5) == ("  production over time: not compared, too few scored (12 "
                                     "in all; at least 2 points of >= 10 are needed)")  # fmt: skip
    assert over_time({"bucket_s": HOUR, "buckets": []}) == {
        "min_n": 10, "level": 0.05, "known": None, "agreement": {}}  # fmt: skip
    with pytest.raises(ValueError):
        over_time({"buckets": []}, min_n=1)


def test_welch_z_test_by_hand() -> None:
    # means 0.5 and 0.7, sample variances 0.02 and 0.03, n 10 and 20: z = -0.2 / sqrt(0.0035)
    sq1, sq2 = 0.02 * 9 + 10 * 0.25, 0.03 * 19 + 20 * 0.49
    p = welch_z_test(10, 5.0, sq1, 20, 14.0, sq2)
    assert p == pytest.approx(2 * stats.norm.sf(0.2 / math.sqrt(0.0035)), rel=1e-9)
    with pytest.raises(ValueError):
        welch_z_test(1, 0.5, 0.25, 20, 14.0, sq2)


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
    agreement = "".join(agreement_over_time(report))
    assert agreement.count("<svg") == 1 and '<p class="muted">mine over time' in agreement
    assert quality_over_time(None, 10) == [] and agreement_over_time({"agreement": {}}) == []
