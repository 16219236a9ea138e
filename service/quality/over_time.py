"""Live quality and shadow agreement over event time: points wide enough to mean something,
and the worst one tested against the rest of the run.

The replay's time series (:mod:`service.jobs.series`) keeps, per event-time bucket (an hour
to start with), the sums of production's scores on known questions and of each shadow
candidate's agreement with production. An hour rarely holds enough known questions to say
anything (a team at 40 questions an hour scores about one), so :func:`over_time` regroups
the buckets, per measure, into the narrowest width of :data:`WIDTHS_S` (a multiple of the
series' own width; UTC-aligned, so a day is a calendar day) at which points of at least
``min_n`` results, two or more of them, hold :data:`COVER` (80 %) of the results (a night's
few questions do not make the day's hours too narrow); failing that, the width at which such
points hold the most. Points over fewer than ``min_n`` results are not drawn (their results
still count in the run's figure, and how many there were is said). Each point carries a 95 %
band: Wilson's interval for the hit rate (a proportion), the normal interval of the mean
(``mean ± 1.96 s / √n``, ``s`` the sample standard deviation) for recall and RBO.

The worst point is tested against the rest of the run (every other result, the small
points' included) with the *question* as the unit. A fixed retriever always hits or always
misses a given question and gives it the same RBO, so one user retrying one question twelve
times is one observation, not twelve: a test over events (the two-proportion test, Welch's
z over results) flagged such an hour at p 7e-59, and a simulated steady run with trial 15's
repeats raised 54 false alarms in 400 over 5 days. So the series keeps, per bucket, each
question's events and sum (known: by gold row id; agreement: by
:func:`service.jobs.series.question_key`), and here each point's distinct questions count
once, with their mean (equal weights: the cluster-level analysis of clustered data, Donner &
Klar 2000, *Design and Analysis of Cluster Randomization Trials*, ch. 6):

* a point is *tested* when it holds at least ``min_n`` distinct questions; the worst tested
  point is the one with the lowest mean over its questions of the per-question hit rate@k
  (production) or mean RBO (a candidate);
* its per-question means are compared with the per-question means of the rest of the run by
  Welch's t-test (Welch 1947; unequal variances, Welch–Satterthwaite degrees of freedom). A
  question asked both inside and outside the point appears on both sides, which makes the
  test conservative, not liberal.

Picking the worst of ``m`` tested points is ``m`` tests, so it differs *beyond noise* only
when ``p < level / m`` (Bonferroni; ``level`` 0.05 by default). Same input, same result.
Production's verdict is on the hit rate only (recall and MRR are shown, not tested).

A sustained change (trial 41, M3: from 11-05 00:00 half the known questions lost their
passage for the two days left; the worst 2 h point, against a rest of the run already ~30 %
degraded and Bonferroni over 51 points, read "within noise"). Each run of consecutive tested
points is compared with *the points before it* (a prefix baseline, which a change that lasts
cannot dilute), question by question: the questions asked both in the run and before it,
each one's mean inside minus its mean before, by the paired t-test (Student 1908; the
question as the unit, as above: a fixed retriever gives a question the same value on both
sides, so a steady stream gives differences of 0 whatever the mix of questions each side
happens to hold, which an unpaired test of short against long spans does not: with
one-off questions and repeated ones, the distinct questions of a long span hold more
one-off ones). A run is tested when ``min_n`` questions pair; the lowest p of the runs lower
than their prefix is beyond noise when ``p < level / runs tested`` (Bonferroni over every
run, the scan's family-wise bound: Worsley 1982, *Biometrika* 69, for the maximum of
change-point statistics). Measured (``python -m benchmarks.over_time_alarms``, 200 seeded
runs each, 5 days of ~8 scored known questions an hour over 40 Zipf-asked rows, a third of
them flipping at random, with a user's 12 repeats a day): stationary, 0 alarms in 200 (95 %
upper bound 1.9 %); the trial's 50 % hit loss from day 3, found in 199 of 200 (the worst
point alone: 92). Trial 41's log: from 2026-11-05 00:00 UTC to the end, 0.503 against 1.000,
p 5.7e-19 (the truth: 11-05 00:00, 176 of 353 hits).

Known limits: the 95 % bands are per event (``mean ± 1.96 s / √n`` collapses to [1, 1] when
every value is 1.0, and repeats narrow them); only the chosen width is tested, so with hourly
points a whole-day drop spreads over many points (review 3, MEDIUM 2 and 3). The sustained
test sees only questions asked before the run too (a drop on new questions is the worst
point's to find), and the paired t is blind to dilution: the reported start is the largest
drop's of the runs beyond noise ending where the lowest p ends, but that end can run past a
recovery.

Where it ends (trial 49, M2): on a lasting drop the paired t saturates (a question that lost
its passage gives −1 whatever the run's length), so the lowest p can belong, by 1e-7, to a
run that ends early (the trial: a drop from 12-03 00:00 to the end of the log reported as
ending 12-04 00:00). So the run beyond noise is then walked on, point by point, each point
alone tested against the points before the run (paired t, at ``level`` each: the drop is
already found, the walk only asks where it stops): a point lower extends the run to it; a
point not lower but above the run itself stops it (a recovery); any other (too few
questions, or within noise both ways) is stepped over and joins the run only if a later
point is lower and the points stepped over, tested together against the run, are not a
recovery (:func:`_extend`, :func:`_block`). What came after a run that stops is said:
``after`` (``{"start", "points", "at", "questions", "judged", question_<measure>,
before_question_<measure>, "p_value", "lower", "recovered", "together"}``): not lower beyond
noise (and whether above the run), or too few questions paired to judge. Simulated (40 questions, 20
hit 0.9 normally and 0.1 in the drop, 10 daily points, 200 seeds): a drop on days 2–8
recovered on day 9 is reported to the end in 18 of 199 runs found (main 17; testing the
whole remainder as one block, 140), a lasting one in 199 of 199 (main 59).

>>> day = 86400.0
>>> def bucket(i, hits):  # 20 gold questions asked once each, ``hits`` of them hit
...     return {"start": i * day, "known": {"n": 20, "recall": hits, "hit": hits, "rr": hits,
...             "recall_sq": hits, "rr_sq": hits}, "agreement": {},
...             "known_questions": {f"g{j}": [1, int(j < hits)] for j in range(20)}}
>>> buckets = [bucket(0, 19), bucket(1, 19), bucket(2, 6), bucket(3, 19)]
>>> track = over_time({"bucket_s": day, "buckets": buckets})["known"]
>>> track["bucket_s"] / day, len(track["points"]), track["worst"]["start"] / day
(1.0, 4, 2.0)
>>> track["worst"]["hit_rate"], track["worst"]["rest_question_hit_rate"]
(0.3, 0.95)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from service.drift.stats_tests import wilson_interval

__all__ = [
    "AGREEMENT_FIELDS",
    "COVER",
    "KNOWN_FIELDS",
    "LEVEL",
    "MIN_N",
    "WIDTHS_S",
    "agreement_line",
    "known_line",
    "over_time",
    "paired_lower",
    "regroup",
    "question_key",
    "question_means",
    "sustained_agreement",
    "welch_t_test",
    "width_text",
]

#: A series bucket's ``known`` sums, in order: production's scored known questions, then the
#: sums of recall@k, hit@k (0/1) and reciprocal rank@k, then the sums of squares of recall and
#: RR (:mod:`service.jobs.series` keeps them).
KNOWN_FIELDS = ("n", "recall", "hit", "rr", "recall_sq", "rr_sq")
#: A series bucket's ``agreement[candidate]`` sums, in order: results with an RBO, the sums of
#: RBO and its square, then results with an overlap@k, the sums of overlap and its square.
AGREEMENT_FIELDS = ("n", "rbo", "rbo_sq", "n_overlap", "overlap", "overlap_sq")
#: Fewest results a point is drawn and tested on (the shadow report's "few" mark, too).
MIN_N = 10
#: The family-wise false-alarm rate of "the worst point differs beyond noise".
LEVEL = 0.05
#: Point widths tried, narrowest first (seconds); only multiples of the series' width.
WIDTHS_S = (3600.0, 7200.0, 3 * 3600.0, 6 * 3600.0, 12 * 3600.0, 86400.0, 2 * 86400.0,
            7 * 86400.0)  # fmt: skip
#: Most run starts, and most run ends, the sustained-change scan tests (:func:`_sustained`):
#: past it, evenly spaced tested points (the first and last kept), so the scan costs at most
#: ``MAX_RUN_EDGES`` ² runs × the questions asked at two points or more, whatever the series'
#: length (the review of session 41: 500 points × 7,800 questions took 61 s and 408 MB).
MAX_RUN_EDGES = 64
#: Share of the results the drawn points (of ``min_n`` or more) should hold.
COVER = 0.8
#: What the worst point's test compares, per question, by measure.
_MEASURES = {"hit_rate": "hit rates", "rbo": "mean RBOs"}
#: z of a two-sided 95 % interval.
Z95 = 1.959963984540054


def question_key(question: str) -> str:
    """A stable key of a question for counting it once per point: the first 12 hex digits of
    the SHA-1 of its casefolded words joined by single spaces (so a retry that differs only in
    case or spacing is the same question).

    >>> question_key("Fee  deadline?") == question_key("fee deadline?")
    True
    """
    words = " ".join(question.casefold().split())
    return hashlib.sha1(words.encode("utf-8"), usedforsecurity=False).hexdigest()[:12]


def regroup(
    buckets: Sequence[Mapping[str, Any]],
    width: float,
    sums: Callable[[Mapping[str, Any]], Sequence[float] | None],
) -> list[tuple[float, list[float]]]:
    """Add the buckets' ``sums(bucket)`` (``None``: nothing there) into points ``width``
    seconds wide, aligned to multiples of ``width`` since the epoch: ``[(start, sums)]`` in
    time order, empty points left out. ``width`` must be a multiple of the buckets' width."""
    points: dict[float, list[float]] = {}
    for bucket in buckets:
        values = sums(bucket)
        if values is None or not values[0]:
            continue
        start = math.floor(float(bucket["start"]) / width) * width
        target = points.setdefault(start, [0.0] * len(values))
        for i, value in enumerate(values):
            target[i] += value
    return sorted(points.items())


def question_means(
    buckets: Sequence[Mapping[str, Any]],
    keep: Callable[[float], bool],
    cells: Callable[[Mapping[str, Any]], Mapping[str, Sequence[float]]],
) -> dict[str, float]:
    """Each question's mean over the buckets whose ``start`` ``keep`` accepts: ``cells(bucket)``
    maps a question key to ``[events, sum]``; the result maps each key seen to ``sum /
    events`` (a question asked 12 times counts once, with its mean)."""
    totals: dict[str, list[float]] = {}
    for bucket in buckets:
        if not keep(float(bucket["start"])):
            continue
        for key, (n, total) in cells(bucket).items():
            cell = totals.setdefault(key, [0.0, 0.0])
            cell[0] += float(n)
            cell[1] += float(total)
    return {key: total / n for key, (n, total) in totals.items() if n}


def welch_t_test(sample1: Sequence[float], sample2: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t-test that two samples' means are equal (unequal
    variances, Welch–Satterthwaite degrees of freedom; Welch 1947: ``t = (m1 − m2) /
    √(s1²/n1 + s2²/n2)``, as ``scipy.stats.ttest_ind(equal_var=False)``). Both samples
    constant: p is 1 for equal means, else 0.

    Raises:
        ValueError: a sample of fewer than 2 values.

    >>> welch_t_test([0.0, 1.0, 1.0], [0.0, 1.0, 1.0])
    1.0
    """
    if len(sample1) < 2 or len(sample2) < 2:
        raise ValueError("need at least 2 values in each sample")
    (m1, v1), (m2, v2) = _mean_var(sample1), _mean_var(sample2)
    a1, a2 = v1 / len(sample1), v2 / len(sample2)
    if a1 + a2 <= 1e-12 * max(abs(m1), abs(m2), 1.0) ** 2:  # both constant (to rounding)
        return 1.0 if math.isclose(m1, m2, rel_tol=1e-9, abs_tol=1e-12) else 0.0
    t = (m1 - m2) / math.sqrt(a1 + a2)
    df = (a1 + a2) ** 2 / (a1**2 / (len(sample1) - 1) + a2**2 / (len(sample2) - 1))
    from scipy import stats  # here: importing scipy.stats costs ~0.5 s of start-up

    return float(2.0 * stats.t.sf(abs(t), df))


def _mean_var(sample: Sequence[float]) -> tuple[float, float]:
    """The mean and the sample variance (``n - 1``) of at least 2 values."""
    mean = math.fsum(sample) / len(sample)
    return mean, math.fsum((x - mean) ** 2 for x in sample) / (len(sample) - 1)


def _question_test(
    buckets: Sequence[Mapping[str, Any]],
    points: list[dict[str, Any]],
    width: float,
    cells: Callable[[Mapping[str, Any]], Mapping[str, Sequence[float]]],
    measure: str,
    min_n: int,
    level: float,
) -> tuple[int, dict[str, Any] | None]:
    """Adds ``questions`` and ``question_{measure}`` (the mean over its distinct questions,
    each once) to each point; returns how many points hold ``min_n`` distinct questions and,
    when 2 or more do, the lowest of them tested against the rest of the run by
    :func:`welch_t_test` on per-question means (module docstring)."""
    by_point: dict[float, list[Mapping[str, Any]]] = {}
    for bucket in buckets:
        by_point.setdefault(math.floor(float(bucket["start"]) / width) * width, []).append(bucket)
    for point in points:
        means = question_means(by_point.get(point["start"], []), lambda _: True, cells)
        point["questions"] = len(means)
        point[f"question_{measure}"] = sum(means.values()) / len(means) if means else None
    tested = [p for p in points if p["questions"] >= min_n]
    if len(tested) < 2:
        return len(tested), None
    worst = min(tested, key=lambda p: (p[f"question_{measure}"], p["start"]))
    start = worst["start"]
    inside = question_means(by_point[start], lambda _: True, cells)
    rest = question_means(buckets, lambda t: math.floor(t / width) * width != start, cells)
    if len(rest) < 2:
        return len(tested), None
    p_value = welch_t_test(list(inside.values()), list(rest.values()))
    return len(tested), {
        "start": start, "end": start + width, "questions": len(inside),
        f"question_{measure}": sum(inside.values()) / len(inside),
        "rest_questions": len(rest), f"rest_question_{measure}": sum(rest.values()) / len(rest),
        "test": f"Welch t-test on per-question {_MEASURES[measure]}",
        **_verdict(p_value, len(tested), level),
    }  # fmt: skip


def _paired_many(
    diffs: NDArray[np.float64], paired: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per row: the number of pairs, the mean of the row's ``diffs`` where ``paired`` and
    the two-sided p-value of the paired t-test that it is 0 (Student 1908: ``t = d̄ /
    (s_d / √n)``, ``n − 1`` degrees of freedom, as ``scipy.stats.ttest_rel``). A row whose
    differences are constant (to rounding) has p 1 when they are 0, else 0 (as
    :func:`welch_t_test`). Rows need 2 or more pairs."""
    n = paired.sum(axis=1).astype(float)
    mean = np.where(paired, diffs, 0.0).sum(axis=1) / n
    var = (np.where(paired, diffs - mean[:, None], 0.0) ** 2).sum(axis=1) / (n - 1)
    constant = var / n <= 1e-24
    t = mean / np.sqrt(np.where(constant, 1.0, var / n))
    from scipy import stats  # here: importing scipy.stats costs ~0.5 s of start-up

    p = 2.0 * stats.t.sf(np.abs(t), n - 1)
    zero = np.isclose(mean, 0.0, rtol=0.0, atol=1e-12)
    return n, mean, np.where(constant, np.where(zero, 1.0, 0.0), p)


def _sustained(
    buckets: Sequence[Mapping[str, Any]],
    points: Sequence[Mapping[str, Any]],
    width: float,
    cells: Callable[[Mapping[str, Any]], Mapping[str, Sequence[float]]],
    measure: str,
    min_n: int,
    level: float,
    latest: bool = False,
) -> dict[str, Any] | None:
    """The run of consecutive tested points most clearly *lower* than the points before it
    (module docstring, "A sustained change"), ``None`` when no run has ``min_n`` questions
    asked both inside it and before it.

    With ``latest`` (serve's hourly look, :class:`service.shadow.trend.AgreementTrend`) the
    result carries ``"latest"`` too: the same choice made among the runs ending at the last
    tested point only (``{"start", "end", "points", "questions", question_<measure>,
    before_question_<measure>, "p_value", "tests", "threshold", "beyond_noise"}``, the same
    Bonferroni ``tests``; ``None`` when no such run is lower). A drop that lasts can lose
    the lowest p to a run ending a little earlier, by noise, when the paired t saturates (a
    drop on some questions only: the differences' spread grows with the drop, and every run
    over it has about the same t), and then not reach the end of the data.

    Every run ``[i, j]`` of tested points (``i <= j``; the untested points between them
    included) is compared with its prefix (every bucket before point ``i``) on the questions
    asked on both sides: each question's mean inside the run minus its mean before, by the
    paired t-test (:func:`_paired_many`). A run is tested when ``min_n`` questions pair.
    The lowest p among the tested runs whose mean difference is below 0 is beyond noise when
    ``p < level / tests`` (Bonferroni over every run tested, whichever way it moved; past
    :data:`MAX_RUN_EDGES` tested points, runs start and end only at that many evenly spaced
    ones, :func:`_edges`, so a reported start or end may be off by the spacing; ties:
    the earliest start, then the longest run). The paired t is blind to dilution (a run
    that starts before the change has proportionally smaller differences and can have the
    same t), so the run reported when beyond noise is, of the runs beyond noise that end
    where the lowest-p one ends, the one of the largest mean drop (ties: the earliest): a
    run starting before the change is diluted by the points before it, one starting after
    it compares with a prefix that holds part of the change."""
    tested = [float(p["start"]) for p in points if p["questions"] >= min_n]
    if len(tested) < 2:
        return None
    starts = sorted({math.floor(float(b["start"]) / width) * width for b in buckets})
    row = {start: i for i, start in enumerate(starts)}
    firsts = lasts = set(_edges(tested))
    rows_of: dict[str, set[int]] = {}
    for bucket in buckets:
        r = row[math.floor(float(bucket["start"]) / width) * width]
        for key in cells(bucket):
            rows_of.setdefault(key, set()).add(r)
    # a question asked at one point only can never pair (it needs a point before and one in)
    keys = sorted(key for key, rows in rows_of.items() if len(rows) > 1)
    column = {key: i for i, key in enumerate(keys)}
    events = np.zeros((len(starts) + 1, len(keys)))
    sums = np.zeros((len(starts) + 1, len(keys)))
    for bucket in buckets:
        r = row[math.floor(float(bucket["start"]) / width) * width] + 1
        for key, (n, total) in cells(bucket).items():
            if key in column:
                events[r, column[key]] += float(n)
                sums[r, column[key]] += float(total)
    events, sums = np.cumsum(events, axis=0), np.cumsum(sums, axis=0)  # row r: points < r
    tests, lower = 0, []  # lower: (p, start, -end row, mean difference, the run's figures)
    for i, first in enumerate(tested):
        if first not in firsts:
            continue
        before_n, before_sum = events[row[first]], sums[row[first]]
        seen = before_n > 0
        if int(seen.sum()) < min_n:
            continue
        before = np.where(seen, before_sum / np.where(seen, before_n, 1.0), 0.0)
        ends = np.array([row[last] + 1 for last in tested[i:] if last in lasts])
        if not len(ends):
            continue
        run_n, run_sum = events[ends] - before_n, sums[ends] - before_sum
        paired = (run_n > 0) & seen
        inside = np.where(paired, run_sum / np.where(paired, run_n, 1.0), 0.0)
        eligible = paired.sum(axis=1) >= min_n
        if not eligible.any():
            continue
        inside, paired, ends = inside[eligible], paired[eligible], ends[eligible]
        points_to = np.array([tested.index(last) - i + 1 for last in tested[i:] if last in lasts])
        runs = points_to[eligible]  # tested points in each run
        n_pairs, mean, p_values = _paired_many(inside - before, paired)
        tests += len(ends)
        for j in np.flatnonzero(mean < 0):
            pairs = paired[j]
            lower.append((_rounded(float(p_values[j])), first, -int(ends[j]), float(mean[j]), {
                "start": first, "end": starts[ends[j] - 1] + width, "points": int(runs[j]),
                "questions": int(n_pairs[j]), f"question_{measure}": float(inside[j][pairs].mean()),
                f"before_question_{measure}": float(before[pairs].mean()),
            }))  # fmt: skip
    if not tests:
        return None
    if not lower:  # no run below the points before it
        return {"found": False, "beyond_noise": False, "tests": tests, "threshold": level / tests}
    best = min(lower, key=lambda run: run[:3])
    if best[0] < level / tests:  # where it began: the largest drop of those ending there
        best = min((run for run in lower if run[2] == best[2] and run[0] < level / tests),
                   key=lambda run: (_rounded(run[3]), run[1]))  # fmt: skip
    best, after = _extend(best, events, sums, starts, row, tested, width, measure, min_n,
                          level, tests)  # fmt: skip
    figures = best[4]
    figures["to_end"] = figures["end"] >= starts[-1] + width
    if not figures["to_end"]:
        figures["after"] = after
    found = {"found": True, **figures,
             "test": f"paired t-test on per-question {_MEASURES[measure]}",
             **_verdict(best[0], tests, level)}  # fmt: skip
    if latest:
        last = -(row[tested[-1]] + 1)
        runs = [run for run in lower if run[2] == last]
        found["latest"] = None
        if runs:
            pick = min(runs, key=lambda run: run[:3])
            if pick[0] < level / tests:
                pick = min((run for run in runs if run[0] < level / tests),
                           key=lambda run: (_rounded(run[3]), run[1]))  # fmt: skip
            found["latest"] = {**pick[4], **_verdict(pick[0], tests, level)}
            found["latest"].pop("to_end", None)
            found["latest"].pop("after", None)
    return found


def _point_test(
    events: NDArray[np.float64],
    sums: NDArray[np.float64],
    base: tuple[int, int],
    rows: tuple[int, int],
) -> tuple[int, float, float, float, float]:
    """The paired t-test of rows ``rows`` (``[begin, end)``) against rows ``base`` (the
    cumulative ``events`` and ``sums`` of :func:`_sustained`, row ``r``: points before
    ``r``), on the questions asked on both sides, each question's mean on each side:
    ``(pairs, mean difference rows − base, two-sided p, mean over rows, mean over base)``
    (``p`` 1.0 and the means nan under 2 pairs)."""
    base_n = events[base[1]] - events[base[0]]
    base_sum = sums[base[1]] - sums[base[0]]
    inside_n = events[rows[1]] - events[rows[0]]
    inside_sum = sums[rows[1]] - sums[rows[0]]
    paired = (base_n > 0) & (inside_n > 0)
    pairs = int(paired.sum())
    if pairs < 2:
        return pairs, 0.0, 1.0, math.nan, math.nan
    before = np.where(paired, base_sum / np.where(paired, base_n, 1.0), 0.0)
    inside = np.where(paired, inside_sum / np.where(paired, inside_n, 1.0), 0.0)
    _, mean, p = _paired_many((inside - before)[None, :], paired[None, :])
    return (pairs, float(mean[0]), float(p[0]), float(inside[paired].mean()),
            float(before[paired].mean()))  # fmt: skip


def _extend(
    best: tuple[float, float, int, float, dict[str, Any]],
    events: NDArray[np.float64],
    sums: NDArray[np.float64],
    starts: Sequence[float],
    row: Mapping[float, int],
    tested: Sequence[float],
    width: float,
    measure: str,
    min_n: int,
    level: float,
    tests: int,
) -> tuple[tuple[float, float, int, float, dict[str, Any]], dict[str, Any]]:
    """Where a run beyond noise ``best`` really ends, and what came after it (trial 49, M2).

    The points after the run are walked one by one, each *alone* (:func:`_point_test`, the
    paired t-test on the questions asked at that point and on the other side):

    * *lower*: below the points before the run (mean difference < 0, ``p < level``): the run
      is extended to it (the points stepped over included) while the longer run stays
      beyond noise (``p < level / tests``);
    * else *recovered*: above the run itself (mean difference > 0, ``p < level``): the walk
      stops; the drop ended before this point (lower is asked first: inside a lasting drop
      a point reads above the run by chance as often as 0.025, and it is still lower than
      the points before the run);
    * neither (too few questions, ``min_n``, on a side; or within noise both ways: a point
      of 11 questions at 0.73 against 1.00 before and 0.47 in the run): stepped over; it
      joins the run only if a later point is lower, and only if the points stepped over,
      tested *together* as one point (:func:`_block`), are not a recovery (above the run
      and not lower than before it): if they are, the walk stops at the first of them.

    Returns the run (its figures recomputed when extended) and ``after``: ``{"start",
    "points"}`` (from the run's end, the points left), ``"at"``: the point that stopped the
    walk (the recovered one, else the first point stepped over and never joined), its test
    against the points before the run (``"questions", "judged", question_<measure>,
    before_question_<measure>, "p_value", "lower"``), ``"recovered"`` (above the run) and
    ``"together"``: the points tested as one (1 for a point alone, more when the points
    stepped over together stopped the walk, ``at`` their first, 0 when none judged);
    ``judged`` false and ``at`` None when no point left paired ``min_n`` questions with the
    points before the run (``questions`` then the most any did). A run within noise is not
    extended; its ``after`` is the first judged point's.

    Why point by point: the paired t saturates on a lasting drop (every question that lost
    its passage gives −1 whatever the run's length), so the lowest p can end where noise puts
    it (the trial: a drop from 12-03 00:00 to the end of the log reported as ending 12-04
    00:00). Testing the whole remainder as one block instead (the first fix) mixes the rest
    of a drop with its recovery, and the rest of the drop carried a recovered drop "to the
    end" (review: a drop on days 2–8 of 10, recovered on day 9: 140 of 199 runs). Stopping at
    the first point not lower beyond noise instead stops inside a lasting drop at a small
    point (the trial's 2 h point of 11 questions at 12-04 18:00, 0.727 against 1.000, p 0.08):
    hence the recovery test, against the run.

    The level: each point at ``level`` (0.05, two-sided: 0.025 each way), no Bonferroni over
    the points walked. The drop is already found beyond noise (the scan's Bonferroni); the
    walk asks only where it stops. A recovered point reads lower with chance at most 0.025,
    so a recovered drop is extended past its end only by such a read before a recovered
    point reads above the run (review's simulation: to the end 18 of 199 against main's 17);
    a stricter level would cost power inside a lasting drop, where a point read recovered
    by chance ends the run early (the trial's complaint)."""
    first, end = row[best[1]], -best[2]
    extend = best[0] < level / tests
    empty: dict[str, Any] = {"at": None, "questions": 0, "judged": False,
                             f"question_{measure}": None, f"before_question_{measure}": None,
                             "p_value": None, "lower": False, "recovered": False,
                             "together": 0}  # fmt: skip
    after = {"start": starts[end] if end < len(starts) else None,
             "points": len(starts) - end, **empty}  # fmt: skip
    for r in range(end, len(starts)):
        pairs, mean, p, inside, before = _point_test(events, sums, (0, first), (r, r + 1))
        if pairs < min_n:
            if not after["judged"]:
                after["questions"] = max(after["questions"], pairs)
            continue
        lower = mean < 0 and p < level
        run_pairs, run_mean, run_p, _, _ = _point_test(events, sums, (first, end), (r, r + 1))
        recovered = run_pairs >= min_n and run_mean > 0 and run_p < level
        figures = {"at": starts[r], "questions": pairs, "judged": True,
                   f"question_{measure}": inside, f"before_question_{measure}": before,
                   "p_value": _rounded(p), "lower": bool(lower),
                   "recovered": bool(recovered), "together": 1}  # fmt: skip
        if not extend or (recovered and not lower):  # the point that stopped the walk
            after.update(figures)
            break
        if not lower:
            if not after["judged"]:
                after.update(figures)
            continue
        if r > end:  # the points stepped over, together: a recovery? (review of trial 49)
            block = _block(events, sums, first, end, r, min_n, level, measure)
            if block is not None and block["recovered"] and not block["lower"]:
                after.update({**block, "at": starts[end], "together": r - end})
                break
        n_run, mean_run, p_run, inside_run, before_run = _point_test(
            events, sums, (0, first), (first, r + 1)
        )
        if not (mean_run < 0 and _rounded(p_run) < level / tests):
            if not after["judged"]:
                after.update(figures)
            break
        best = (_rounded(p_run), best[1], -(r + 1), mean_run, {
            **best[4], "end": starts[r] + width,
            "points": sum(1 for t in tested if best[1] <= t <= starts[r]),
            "questions": n_run, f"question_{measure}": inside_run,
            f"before_question_{measure}": before_run})  # fmt: skip
        end = r + 1
        after = {"start": starts[end] if end < len(starts) else None,
                 "points": len(starts) - end, **empty}  # fmt: skip
    return best, after


def _block(
    events: NDArray[np.float64],
    sums: NDArray[np.float64],
    first: int,
    end: int,
    stop: int,
    min_n: int,
    level: float,
    measure: str,
) -> dict[str, Any] | None:
    """The points stepped over by :func:`_extend` (rows ``[end, stop)``) tested *together*,
    as one point: against the points before the run (rows ``[0, first)``, paired t on each
    question's mean on each side) and against the run (rows ``[first, end)``). ``None`` when
    fewer than ``min_n`` questions pair with the points before the run (not judged, as a
    point alone); else ``{"questions", "judged", question_<measure>,
    before_question_<measure>, "p_value", "lower", "recovered"}`` as a point's figures
    (``lower``: below the points before it at ``level``; ``recovered``: ``min_n`` questions
    paired with the run and above it at ``level``).

    Why (review of trial 49, blocker a): points each too small to judge, or each within noise
    both ways, can together be a recovery (3 days of 6 questions, all hit again, after a
    drop on them); stepped over one by one, a single low point after them carried the run
    across the recovery "to the end"."""
    pairs, mean, p, inside, before = _point_test(events, sums, (0, first), (end, stop))
    if pairs < min_n:
        return None
    run_pairs, run_mean, run_p, _, _ = _point_test(events, sums, (first, end), (end, stop))
    return {"questions": pairs, "judged": True,
            f"question_{measure}": inside, f"before_question_{measure}": before,
            "p_value": _rounded(p), "lower": bool(mean < 0 and p < level),
            "recovered": bool(run_pairs >= min_n and run_mean > 0 and run_p < level)}  # fmt: skip


def _edges(tested: Sequence[float]) -> list[float]:
    """The tested points a run may start (or end) at: all of them up to
    :data:`MAX_RUN_EDGES`, else that many evenly spaced (the first and last kept; indices
    rounded half to even by NumPy), in order. Bonferroni counts only the runs tested."""
    if len(tested) <= MAX_RUN_EDGES:
        return list(tested)
    picked = np.unique(np.rint(np.linspace(0, len(tested) - 1, MAX_RUN_EDGES)).astype(int))
    return [tested[int(i)] for i in picked]


def _rounded(value: float) -> float:
    """``value`` to 10 significant digits: runs whose p-values (or drops) differ only by
    rounding are ties, broken by the stated rule, not by the last bits of a sum."""
    return float(f"{value:.10g}")


def _widths(bucket_s: float) -> list[float]:
    """``bucket_s``, the wider :data:`WIDTHS_S` that are whole multiples of it, then
    doublings of the widest up to a year."""
    widths = [bucket_s] + [
        w for w in WIDTHS_S if w > bucket_s and abs(w / bucket_s - round(w / bucket_s)) < 1e-9
    ]
    while widths[-1] < 366 * 86400.0:
        widths.append(widths[-1] * 2)
    return widths


def _choose(
    buckets: Sequence[Mapping[str, Any]],
    bucket_s: float,
    sums: Callable[[Mapping[str, Any]], Sequence[float] | None],
    min_n: int,
) -> tuple[float, list[tuple[float, list[float]]]]:
    """The narrowest width whose points of at least ``min_n`` results (at least 2 such
    points) hold :data:`COVER` of all results, else the one whose such points hold the most
    (narrowest on ties), else the narrowest; and its points."""
    best: tuple[float, float, list[tuple[float, list[float]]]] | None = None
    for width in _widths(bucket_s):
        points = regroup(buckets, width, sums)
        if not points:
            break
        total = sum(p[0] for _, p in points)
        drawn = [p[0] for _, p in points if p[0] >= min_n]
        if len(drawn) >= 2:
            if sum(drawn) >= COVER * total:
                return width, points
            if best is None or sum(drawn) > best[0]:
                best = (sum(drawn), width, points)
        if best is None and width == bucket_s:
            best = (0.0, width, points)
        if len(points) == 1:
            break
    return (best[1], best[2]) if best else (bucket_s, [])


def _mean_band(n: float, total: float, squares: float) -> tuple[float, float, float, float]:
    """``(mean, low, high, sample variance)``: the normal 95 % interval of the mean, clipped
    to [0, 1]; the variance 0 under two results."""
    mean = total / n
    var = max(squares - total * total / n, 0.0) / (n - 1) if n > 1 else 0.0
    half = Z95 * math.sqrt(var / n)
    return mean, max(mean - half, 0.0), min(mean + half, 1.0), var


def _known_sums(bucket: Mapping[str, Any]) -> list[float] | None:
    known = bucket.get("known") or {}
    return [float(known[f]) for f in KNOWN_FIELDS] if known.get("n") else None


def _agreement_sums(name: str) -> Callable[[Mapping[str, Any]], list[float] | None]:
    def sums(bucket: Mapping[str, Any]) -> list[float] | None:
        cell = (bucket.get("agreement") or {}).get(name) or {}
        return [float(cell[f]) for f in AGREEMENT_FIELDS] if cell.get("n") else None

    return sums


def _known_questions(bucket: Mapping[str, Any]) -> Mapping[str, Sequence[float]]:
    return bucket.get("known_questions") or {}


def _agreement_questions(name: str) -> Callable[[Mapping[str, Any]], Mapping[str, Sequence[float]]]:
    def cells(bucket: Mapping[str, Any]) -> Mapping[str, Sequence[float]]:
        return (bucket.get("agreement_questions") or {}).get(name) or {}

    return cells


def _verdict(p_value: float, tests: int, level: float) -> dict[str, Any]:
    threshold = level / tests
    return {"p_value": p_value, "tests": tests, "threshold": threshold,
            "beyond_noise": p_value < threshold}  # fmt: skip


def _known_track(buckets: Sequence[Mapping[str, Any]], bucket_s: float, min_n: int,
                 level: float) -> dict[str, Any] | None:  # fmt: skip
    """Production's known-question quality over time (module docstring), ``None`` when no
    known question was scored."""
    width, grouped = _choose(buckets, bucket_s, _known_sums, min_n)
    if not grouped:
        return None
    total = [sum(p[i] for _, p in grouped) for i in range(len(KNOWN_FIELDS))]
    n_all, recall_all, hit_all, rr_all = total[:4]
    points: list[dict[str, Any]] = []
    for start, (n, recall, hit, rr, recall_sq, _rr_sq) in grouped:
        if n < min_n:
            continue
        mean, low, high, _ = _mean_band(n, recall, recall_sq)
        hit_low, hit_high = wilson_interval(hit, n)
        points.append({"start": start, "n": int(n), "recall": mean, "recall_low": low,
                       "recall_high": high, "hit_rate": hit / n, "hit_low": float(hit_low),
                       "hit_high": float(hit_high), "mrr": rr / n})  # fmt: skip
    track: dict[str, Any] = {
        "bucket_s": width,
        "all": {"n": int(n_all), "recall": recall_all / n_all, "hit_rate": hit_all / n_all,
                "mrr": rr_all / n_all},
        "points": points,
        "small": {"points": len(grouped) - len(points),
                  "n": int(sum(p[0] for _, p in grouped if p[0] < min_n))},
        "worst": None,
    }  # fmt: skip
    track["all"]["questions"] = len(question_means(buckets, lambda _: True, _known_questions))
    track["tested"], worst = _question_test(buckets, points, width, _known_questions,
                                            "hit_rate", min_n, level)  # fmt: skip
    track["sustained"] = _sustained(buckets, points, width, _known_questions, "hit_rate",
                                    min_n, level)  # fmt: skip
    if worst is not None:
        point = next(p for p in points if p["start"] == worst["start"])
        worst.update(n=point["n"], hit_rate=point["hit_rate"], recall=point["recall"],
                     mrr=point["mrr"])  # fmt: skip
    track["worst"] = worst
    return track


def _agreement_track(buckets: Sequence[Mapping[str, Any]], bucket_s: float, name: str,
                     min_n: int, level: float) -> dict[str, Any]:  # fmt: skip
    """One candidate's mean RBO (and overlap@k) over time (module docstring)."""
    sums = _agreement_sums(name)
    width, grouped = _choose(buckets, bucket_s, sums, min_n)
    total = [sum(p[i] for _, p in grouped) for i in range(len(AGREEMENT_FIELDS))]
    n_all, rbo_all, sq_all, n_overlap_all, overlap_all, _ = total
    points: list[dict[str, Any]] = []
    for start, (n, rbo, rbo_sq, n_overlap, overlap, _overlap_sq) in grouped:
        if n < min_n:
            continue
        mean, low, high, _ = _mean_band(n, rbo, rbo_sq)
        points.append({"start": start, "n": int(n), "rbo": mean, "rbo_low": low,
                       "rbo_high": high, "n_overlap": int(n_overlap),
                       "overlap": overlap / n_overlap if n_overlap else None})  # fmt: skip
    track: dict[str, Any] = {
        "bucket_s": width,
        "all": {"n": int(n_all), "rbo": rbo_all / n_all if n_all else None,
                "overlap": overlap_all / n_overlap_all if n_overlap_all else None},
        "points": points,
        "small": {"points": len(grouped) - len(points),
                  "n": int(sum(p[0] for _, p in grouped if p[0] < min_n))},
        "worst": None,
    }  # fmt: skip
    cells = _agreement_questions(name)
    track["all"]["questions"] = len(question_means(buckets, lambda _: True, cells))
    track["tested"], worst = _question_test(buckets, points, width, cells, "rbo", min_n,
                                            level)  # fmt: skip
    track["sustained"] = _sustained(buckets, points, width, cells, "rbo", min_n, level)
    if worst is not None:
        point = next(p for p in points if p["start"] == worst["start"])
        worst.update(n=point["n"], rbo=point["rbo"])
    track["worst"] = worst
    return track


def sustained_agreement(
    series: Mapping[str, Any],
    name: str,
    min_n: int = MIN_N,
    level: float = LEVEL,
    latest: bool = False,
) -> tuple[float, dict[str, Any] | None]:
    """``(width, sustained)``: candidate ``name``'s point width (s) and sustained verdict,
    ``over_time(series, min_n, level)["agreement"][name]``'s ``bucket_s`` and
    ``sustained`` (equal, value for value), without the rest of its track: no bands, no
    worst point and its Welch test against the rest of the run (serve's hourly re-judge,
    :class:`service.shadow.trend.AgreementTrend`, reads only these two; at its bound, 500
    hourly buckets × 200 questions, the worst point's per-point question means were most of
    a look's cost: ``python -m benchmarks.bench_shadow_trend``). A point is tested when it
    holds ``min_n`` distinct questions (the keys of its buckets' ``agreement_questions``,
    each holding one result or more, as :func:`question_means` counts them). With
    ``latest``, a found verdict carries ``"latest"``: the run chosen among those reaching the
    last tested point (:func:`_sustained`).

    Raises:
        ValueError: ``min_n`` < 2 or ``level`` outside (0, 1).
    """
    if min_n < 2 or not 0.0 < level < 1.0:
        raise ValueError("need min_n >= 2 and 0 < level < 1")
    buckets = series.get("buckets") or []
    bucket_s = float(series.get("bucket_s") or 3600.0)
    width, grouped = _choose(buckets, bucket_s, _agreement_sums(name), min_n)
    cells = _agreement_questions(name)
    keys: dict[float, set[str]] = {}
    for bucket in buckets:
        start = math.floor(float(bucket["start"]) / width) * width
        keys.setdefault(start, set()).update(k for k, v in cells(bucket).items() if v[0])
    points = [{"start": start, "questions": len(keys.get(start, ()))}
              for start, values in grouped if values[0] >= min_n]  # fmt: skip
    return width, _sustained(buckets, points, width, cells, "rbo", min_n, level, latest)


def paired_lower(
    before: Mapping[str, float], after: Mapping[str, float]
) -> tuple[int, float, float]:
    """The paired t-test (Student 1908, as :func:`_sustained`'s) of the questions in both
    ``before`` and ``after`` (question key → its mean): ``(pairs, mean of after − before,
    two-sided p)``; ``(pairs, nan, 1.0)`` under 2 pairs. Constant differences: p 1 when
    they are 0, else 0."""
    keys = sorted(before.keys() & after.keys())
    if len(keys) < 2:
        return len(keys), math.nan, 1.0
    diffs = np.array([[after[k] - before[k] for k in keys]])
    n, mean, p = _paired_many(diffs, np.ones_like(diffs, dtype=bool))
    return int(n[0]), float(mean[0]), float(p[0])


def over_time(
    series: Mapping[str, Any], min_n: int = MIN_N, level: float = LEVEL
) -> dict[str, Any]:
    """Production's live quality on known questions and each candidate's agreement, over
    time (module docstring).

    Args:
        series: :meth:`service.jobs.series.TimeSeries.report`'s dict (``bucket_s``,
            ``quality_partial``, ``buckets`` with ``known`` and ``agreement`` sums and
            ``known_questions`` / ``agreement_questions`` per question).
        min_n: fewest results a point is drawn on, and fewest distinct questions a point is
            tested on (>= 2).
        level: family-wise false-alarm rate of the worst point's test, in (0, 1).

    Returns:
        ``{"min_n", "level", "quality_partial", "known": track | None, "agreement":
        {candidate: track}}``, a track ``{"bucket_s": point width (s), "all": the run's
        figures with their ``n`` and distinct ``questions``, "points": [{"start" (Unix s),
        "n", "questions", means and 95 % bands, the mean over questions}], "small":
        {"points", "n"} (points under ``min_n``, not drawn), "tested": points of ``min_n``
        distinct questions or more, "worst": {"start", "end", "n", its figures,
        "questions", ``question_<measure>``, "rest_questions",
        ``rest_question_<measure>``, "test", "p_value", "tests", "threshold",
        "beyond_noise"} | None}`` (``worst`` ``None`` under 2 points tested; measure
        ``hit_rate`` or ``rbo``). Known points: ``recall`` (``recall_low``/``_high``),
        ``hit_rate`` (Wilson ``hit_low``/``_high``), ``mrr``, ``question_hit_rate``;
        agreement points: ``rbo`` (``rbo_low``/``_high``), ``overlap`` over ``n_overlap``,
        ``question_rbo``.

    Raises:
        ValueError: ``min_n`` < 2 or ``level`` outside (0, 1).
    """
    if min_n < 2 or not 0.0 < level < 1.0:
        raise ValueError("need min_n >= 2 and 0 < level < 1")
    buckets = series.get("buckets") or []
    bucket_s = float(series.get("bucket_s") or 3600.0)
    names = sorted({name for b in buckets for name in (b.get("agreement") or {})})
    return {
        "min_n": min_n,
        "level": level,
        "quality_partial": bool(series.get("quality_partial")),
        "known": _known_track(buckets, bucket_s, min_n, level),
        "agreement": {
            name: _agreement_track(buckets, bucket_s, name, min_n, level) for name in names
        },  # fmt: skip
    }


def width_text(seconds: float) -> str:
    """``"1 h"``, ``"12 h"``, ``"32 h"``, ``"1 d"``, ``"7 d"``: a point width in days when it
    is a whole number of them, else in hours.

    >>> width_text(3600.0), width_text(86400.0 * 2), width_text(32 * 3600.0)
    ('1 h', '2 d', '32 h')
    """
    if seconds < 86400.0 or seconds % 86400.0:
        return f"{seconds / 3600.0:g} h"
    return f"{seconds / 86400.0:g} d"


def _start_text(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _plural(n: int, word: str) -> str:
    """``"1 point"``, ``"2 points"`` (``word`` singular, plural by an ``s``)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _header(track: Mapping[str, Any], min_n: int, what: str) -> str:
    small = track["small"]
    left = (f", {small['n']} {what} in {_plural(small['points'], 'smaller point')} not drawn"
            if small["points"] else "")  # fmt: skip
    return (
        f"{width_text(track['bucket_s'])} points of >= {min_n} {what}, "
        f"{len(track['points'])} drawn{left}"
    )


def _too_few(track: Mapping[str, Any], min_n: int, what: str) -> str:
    """Why no point is compared: ``"not compared: 64 scored of 9 distinct questions in all,
    0 points of >= 10 distinct questions (2 are needed: one question asked again is not new
    evidence)"``."""
    run = track["all"]
    questions = _plural(run.get("questions", 0), "distinct question")
    return (
        f"not compared: {run['n']} {what} of {questions}"
        f" in all, {_plural(int(track.get('tested', 0)), 'point')} of >= {min_n} distinct "
        "questions (2 are needed: one question asked again is not new evidence)"
    )


def _verdict_text(worst: Mapping[str, Any], what: str, measure: str) -> str:
    """``"hit rate LOWER beyond noise (Welch t-test on per-question hit rates, 0.400 of 12
    questions against 0.950 of 44 in the rest of the run: p 1.7e-05 < 0.05/5, Bonferroni over
    the points tested)"`` or ``"hit rate within noise (…: p 0.21 >= 0.05/5, …)"``."""
    word, sign = ("LOWER beyond noise", "<") if worst["beyond_noise"] else ("within noise", ">=")
    level = worst["threshold"] * worst["tests"]
    return (
        f"{what} {word} ({worst['test']}, {worst[f'question_{measure}']:.3f} of "
        f"{worst['questions']} questions against {worst[f'rest_question_{measure}']:.3f} of "
        f"{worst['rest_questions']} in the rest of the run: p {worst['p_value']:.2g} {sign} "
        f"{level:g}/{worst['tests']}, Bonferroni over the points tested)"
    )


def _sustained_text(track: Mapping[str, Any], what: str, measure: str) -> str:
    """The sustained-change verdict and ``"; "``, ``""`` when no run was tested: ``"sustained:
    from 2026-11-05 00:00 UTC to the end (22 points), hit rate LOWER beyond noise (paired
    t-test on per-question hit rates, 40 questions asked in it and before it: 0.503 in it
    against 1.000 before it: p 5.7e-19 < 0.05/1273, Bonferroni over the runs of consecutive
    points tested against the points before them); "`` (module docstring, "A sustained
    change")."""
    run = track.get("sustained")
    if not run:
        return ""
    family = (f"Bonferroni over the {run['tests']} runs of consecutive points tested against "
              "the points before them")  # fmt: skip
    if not run["found"]:
        return f"sustained: no run of points below the points before it ({family}); "
    end = "the end" if run["to_end"] else _start_text(run["end"])
    word, sign = ("LOWER beyond noise", "<") if run["beyond_noise"] else ("within noise", ">=")
    level = run["threshold"] * run["tests"]
    return (
        f"sustained: from {_start_text(run['start'])} to {end} "
        f"({_plural(run['points'], 'point')}), {what} {word} ({run['test']}, "
        f"{_plural(run['questions'], 'question')} asked in it and before it: "
        f"{run[f'question_{measure}']:.3f} in it against "
        f"{run[f'before_question_{measure}']:.3f} before it: p {run['p_value']:.2g} {sign} "
        f"{level:g}/{run['tests']}, {family}){after_text(run, measure)}; "
    )


def after_text(run: Mapping[str, Any], measure: str) -> str:
    """What came after a sustained run that does not reach the end (its ``after``,
    :func:`_extend`), ``""`` for a run to the end: ``", then from 2026-12-04 00:00 UTC (6
    points) not lower beyond noise: 0.950 against 1.000 before it, 20 questions, p 0.33;
    higher than in the run beyond noise"`` (the point that stopped the walk, alone, against
    the points before the run; the last clause when it is above the run: a recovery),
    ``", then from … (6 points; judged on its point 2026-12-04 06:00 UTC) …"`` when that
    point is not the first after the run, ``", then from … (4 points; judged on its first 3
    points together) …"`` when points stepped over, together, were a recovery
    (:func:`_block`), or ``", then from … (1
    point) too few questions to judge (3 asked before it too)"``. "lower" occurs in a
    verdict within noise (not extended), or when the longer run would no longer be beyond
    noise."""
    after = run.get("after") if not run.get("to_end") else None
    if not after or after.get("start") is None:
        return ""
    head = f", then from {_start_text(after['start'])} ({_plural(after['points'], 'point')}"
    if not after["judged"]:
        return (f"{head}) too few questions to judge ({after['questions']} asked before it "
                "too)")  # fmt: skip
    if after.get("together", 1) > 1:
        head += f"; judged on its first {after['together']} points together"
    elif after["at"] != after["start"]:
        head += f"; judged on its point {_start_text(after['at'])}"
    word = "lower" if after["lower"] else "not lower beyond noise"
    return (
        f"{head}) {word}: {after[f'question_{measure}']:.3f} against "
        f"{after[f'before_question_{measure}']:.3f} before it, "
        f"{_plural(after['questions'], 'question')}, p {after['p_value']:.2g}"
        + ("; higher than in the run beyond noise" if after.get("recovered") else "")
    )


def _partial(report: Mapping[str, Any] | None) -> str:
    return (" (only the runs since the state's upgrade: older runs kept no quality)"
            if (report or {}).get("quality_partial") else "")  # fmt: skip


#: What the over-time test is not (trial 39: the worst 3 h point read "within noise" while the
#: ``known_miss`` drift alarm said DRIFT, which looked like a contradiction).
KNOWN_MISS_NOT_THIS = (
    "Different tests from the known_miss drift alarm: these ask whether a run of points is "
    "worse than every point before it (Bonferroni over the runs) and whether one point is "
    "worse than the rest of the run (Bonferroni over the points; a change lasting many "
    "points also lowers the rest), each question once; known_miss asks whether the latest "
    "window's miss rate, over events, is above its baseline's"
)


def known_miss_alarm_text(known_miss: Mapping[str, Any] | None) -> str | None:
    """The ``known_miss`` drift dimension's open alarm in words (its report's dict:
    ``state``, ``comparisons``), or ``None`` while it is not in DRIFT.

    >>> known_miss_alarm_text({"state": "drift", "comparisons": {"baseline": {
    ...     "state": "drift", "rate_reference": 0.0, "rate_current": 9 / 44,
    ...     "n_reference": 55, "n_current": 44}}})
    'the known_miss drift alarm is open (vs baseline: known-miss rate 0.0% of 55 -> 20.5% of 44)'
    >>> known_miss_alarm_text({"state": "ok", "comparisons": {}}) is None
    True
    """
    if not known_miss or known_miss.get("state") != "drift":
        return None
    moves = [f"vs {name}: known-miss rate {c['rate_reference']:.1%} of {c['n_reference']} -> "
             f"{c['rate_current']:.1%} of {c['n_current']}"
             for name, c in (known_miss.get("comparisons") or {}).items()
             if c.get("state") == "drift" and c.get("rate_current") is not None]  # fmt: skip
    return "the known_miss drift alarm is open" + (f" ({'; '.join(moves)})" if moves else "")


def detectable_drop(run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The smallest drop of a sustained run's hit rate its paired t-test would call beyond
    noise at the run's number of questions ``n``: the smallest ``k`` such that ``k`` of the
    ``n`` questions turning from hit to miss, the rest unchanged (per-question differences
    ``k`` × −1 and ``n − k`` × 0), gives ``p < threshold`` (its Bonferroni level) by the
    run's own test (:func:`_paired_many`: Student 1908, ``t = √(k (n − 1) / (n − k))``).
    With 0/1 hit rates the differences' spread grows with the drop, so the run's own
    standard error held fixed would understate it. ``k`` goes up to the questions that
    could turn, ``hits`` (``⌊before rate × n⌋``); when none of those is called, this test
    can call no drop at this ``n``. No statistic changes: this restates what the test can
    tell.

    Returns ``{"questions": n, "hits": …, "flipped": k | None, "drop": k / n | None, "p":
    the p of ``k`` (of ``hits`` when none is called), "threshold"}``; ``None`` under 2
    questions or no hit before.

    >>> found = detectable_drop({"questions": 33, "before_question_hit_rate": 1.0,
    ...                          "threshold": 0.05 / 56})
    >>> found["flipped"], round(found["drop"], 3), round(found["p"], 5)
    (10, 0.303, 0.00074)
    >>> none = detectable_drop({"questions": 10, "before_question_hit_rate": 0.7,
    ...                         "threshold": 0.05 / 300})
    >>> none["flipped"], none["hits"], round(none["p"], 4)
    (None, 7, 0.0013)
    """
    n = int(run.get("questions", 0))
    hits = min(n, math.floor(float(run.get("before_question_hit_rate") or 0.0) * n + 1e-9))
    if n < 2 or hits < 1:
        return None
    flipped = np.arange(hits)[:, None] >= np.arange(n)[None, :]  # row r: r + 1 questions
    _, _, p = _paired_many(np.where(flipped, -1.0, 0.0), np.ones((hits, n), dtype=bool))
    called = np.flatnonzero(p < run["threshold"])
    k = int(called[0]) + 1 if len(called) else None
    return {"questions": n, "hits": hits, "flipped": k, "drop": k / n if k else None,
            "p": float(p[k - 1] if k else p[-1]), "threshold": run["threshold"]}  # fmt: skip


def _can_tell(run: Mapping[str, Any]) -> str:
    """What the sustained paired test can call at the run's ``n`` (:func:`detectable_drop`),
    beside the drop seen; ``""`` when there is nothing to restate."""
    found = detectable_drop(run)
    if found is None:
        return ""
    seen = run["before_question_hit_rate"] - run["question_hit_rate"]
    level = f"{run['threshold'] * run['tests']:g}/{run['tests']}"
    n = found["questions"]
    if found["flipped"] is None:
        return (f"; at {n} questions the sustained paired test cannot call any drop beyond "
                f"noise: even all {found['hits']} questions that hit before it turning to "
                f"misses would give p {found['p']:.2g} >= {level} (the drop seen is "
                f"{seen:.3f})")  # fmt: skip
    return (f"; at {n} questions the sustained paired test calls a drop beyond noise from "
            f"{found['flipped']} of them turning from hit to miss, the rest unchanged (a drop "
            f"of {found['drop']:.3f}: p {found['p']:.2g} < {level}); the drop seen is "
            f"{seen:.3f}")  # fmt: skip


def _not_a_finding(track: Mapping[str, Any], alarm: str | None) -> str:
    """What the within-noise verdicts are not, while another test on the same data alarms
    (trial 50 L3: "hit rate within noise … 0.758 against 1.000" beside an open
    ``known_miss`` alarm read as "no regression"): ``""`` without an open ``known_miss``
    alarm, or when a verdict is beyond noise already."""
    run, worst = track.get("sustained") or {}, track.get("worst") or {}
    if alarm is None or run.get("beyond_noise") or worst.get("beyond_noise"):
        return ""
    can = _can_tell(run) if run.get("found") else ""
    return f'. Within noise here is not "no drop": {alarm}{can}'


def known_line(report: Mapping[str, Any] | None, k: object,
               known_miss: Mapping[str, Any] | None = None) -> str | None:  # fmt: skip
    """The text report's line on production's known-question quality over time, from
    :func:`over_time`'s dict: the worst point's hit rate against the run's, beyond noise or
    within it (the test is on the hit rate, each question once; recall and MRR are shown,
    not tested); ``None`` without a scored known question. ``known_miss``: the drift
    report's ``known_miss`` dimension; while it alarms and no verdict here is beyond noise,
    the line says that within noise is no finding of no drop, names the alarm and the drop
    the sustained test can call at its n (:func:`detectable_drop`)."""
    track = (report or {}).get("known")
    if not track:
        return None
    min_n = int((report or {}).get("min_n", MIN_N))
    worst = track.get("worst")
    if worst is None:
        return f"  production over time{_partial(report)}: {_too_few(track, min_n, 'scored')}"
    head = f"  production over time{_partial(report)} ({_header(track, min_n, 'scored')})"
    run = track["all"]
    return (
        f"{head}: {_sustained_text(track, 'hit rate', 'hit_rate')}"
        f"worst {_start_text(worst['start'])} + {width_text(track['bucket_s'])}: "
        f"hit rate {worst['hit_rate']:.3f}, recall@{k} {worst['recall']:.3f}, MRR "
        f"{worst['mrr']:.3f} (n {worst['n']}) vs {run['hit_rate']:.3f}, {run['recall']:.3f}, "
        f"{run['mrr']:.3f} over the run: "
        + _verdict_text(worst, "hit rate", "hit_rate")
        + _not_a_finding(track, known_miss_alarm_text(known_miss))
        + f". {KNOWN_MISS_NOT_THIS}"
    )


def agreement_line(report: Mapping[str, Any] | None, name: str) -> str | None:
    """The text report's line on candidate ``name``'s RBO over time (as :func:`known_line`);
    ``None`` without its results."""
    track = ((report or {}).get("agreement") or {}).get(name)
    if not track or not track["all"]["n"]:
        return None
    min_n = int((report or {}).get("min_n", MIN_N))
    worst = track.get("worst")
    if worst is None:
        return f"  {name} over time{_partial(report)}: {_too_few(track, min_n, 'results')}"
    head = f"  {name} over time{_partial(report)} ({_header(track, min_n, 'results')})"
    return (
        f"{head}: {_sustained_text(track, 'RBO', 'rbo')}"
        f"worst {_start_text(worst['start'])} + {width_text(track['bucket_s'])}: RBO "
        f"{worst['rbo']:.3f} (n {worst['n']}) vs {track['all']['rbo']:.3f} over the run: "
        + _verdict_text(worst, "RBO", "rbo")
    )
