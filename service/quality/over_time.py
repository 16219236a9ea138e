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

The worst point (production's lowest hit rate@k; a candidate's lowest mean RBO) is tested
against the rest of the run (every other result, the small points' included):

* hits: the two-proportion test of :func:`service.drift.stats_tests.two_proportion_test`
  (pooled z-test, Fisher's exact test when an expected cell is under 5);
* RBO: Welch's z-test of two means, ``z = (m1 − m2) / √(s1²/n1 + s2²/n2)``, two-sided normal
  p-value (Welch 1947, with the normal in place of Student's t: both sides hold at least
  ``min_n`` results, and the rest of the run usually hundreds).

Picking the worst of ``m`` points is ``m`` tests, so it differs *beyond noise* only when
``p < level / m`` (Bonferroni; ``level`` 0.05 by default). Same input, same result.

>>> day = 86400.0
>>> buckets = [{"start": i * day, "known": {"n": 20, "recall": 19.0, "hit": 19, "rr": 18.0,
...             "recall_sq": 19.0, "rr_sq": 18.0}, "agreement": {}} for i in range(4)]
>>> buckets[2]["known"] = {"n": 20, "recall": 6.0, "hit": 6, "rr": 5.0, "recall_sq": 6.0,
...                        "rr_sq": 5.0}
>>> track = over_time({"bucket_s": day, "buckets": buckets})["known"]
>>> track["bucket_s"] / day, len(track["points"]), track["worst"]["start"] / day
(1.0, 4, 2.0)
>>> track["worst"]["hit_rate"], track["worst"]["rest_hit_rate"], track["worst"]["beyond_noise"]
(0.3, 0.95, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from scipy import special

from service.drift.stats_tests import two_proportion_test, wilson_interval

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
    "regroup",
    "welch_z_test",
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
#: Share of the results the drawn points (of ``min_n`` or more) should hold.
COVER = 0.8
#: z of a two-sided 95 % interval.
Z95 = 1.959963984540054


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


def welch_z_test(n1: float, sum1: float, sq1: float, n2: float, sum2: float, sq2: float
                 ) -> float:  # fmt: skip
    """Two-sided p-value that two means are equal, from each side's count, sum and sum of
    squares: ``z = (m1 − m2) / √(s1²/n1 + s2²/n2)`` (Welch's statistic, read on the normal:
    both samples large), ``p = 2 Φ(−|z|)``. Both variances 0: p is 1 for equal means, else 0.

    Raises:
        ValueError: a side with fewer than 2 results.

    >>> round(welch_z_test(4, 2.0, 1.5, 4, 2.0, 1.5), 6)
    1.0
    """
    if n1 < 2 or n2 < 2:
        raise ValueError("need at least 2 results on each side")
    m1, _, _, v1 = _mean_band(n1, sum1, sq1)
    m2, _, _, v2 = _mean_band(n2, sum2, sq2)
    se = math.sqrt(v1 / n1 + v2 / n2)
    if se == 0.0:
        return 1.0 if m1 == m2 else 0.0
    return float(2.0 * special.ndtr(-abs(m1 - m2) / se))


def _known_sums(bucket: Mapping[str, Any]) -> list[float] | None:
    known = bucket.get("known") or {}
    return [float(known[f]) for f in KNOWN_FIELDS] if known.get("n") else None


def _agreement_sums(name: str) -> Callable[[Mapping[str, Any]], list[float] | None]:
    def sums(bucket: Mapping[str, Any]) -> list[float] | None:
        cell = (bucket.get("agreement") or {}).get(name) or {}
        return [float(cell[f]) for f in AGREEMENT_FIELDS] if cell.get("n") else None

    return sums


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
    if len(points) >= 2:
        worst = min(points, key=lambda p: (p["hit_rate"], p["recall"], p["start"]))
        n, hits = worst["n"], round(worst["hit_rate"] * worst["n"])
        test = two_proportion_test(hits, n, round(hit_all) - hits, round(n_all) - n)
        track["worst"] = {
            "start": worst["start"], "end": worst["start"] + width, "n": n,
            "hit_rate": worst["hit_rate"], "recall": worst["recall"], "mrr": worst["mrr"],
            "rest_n": round(n_all) - n, "rest_hit_rate": test.rate_reference,
            "test": f"two-proportion {'z-test' if test.method == 'z' else 'Fisher exact test'}",
            **_verdict(test.p_value, len(points), level),
        }  # fmt: skip
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
    by_start = dict(grouped)
    if len(points) >= 2:
        worst = min(points, key=lambda p: (p["rbo"], p["start"]))
        n, rbo, rbo_sq = by_start[worst["start"]][:3]
        rest = (n_all - n, rbo_all - rbo, sq_all - rbo_sq)
        track["worst"] = {
            "start": worst["start"], "end": worst["start"] + width, "n": int(n),
            "rbo": worst["rbo"], "rest_n": int(rest[0]), "rest_rbo": rest[1] / rest[0],
            "test": "Welch z-test",
            **_verdict(welch_z_test(n, rbo, rbo_sq, *rest), len(points), level),
        }  # fmt: skip
    return track


def over_time(
    series: Mapping[str, Any], min_n: int = MIN_N, level: float = LEVEL
) -> dict[str, Any]:
    """Production's live quality on known questions and each candidate's agreement, over
    time (module docstring).

    Args:
        series: :meth:`service.jobs.series.TimeSeries.report`'s dict (``bucket_s``,
            ``buckets`` with ``known`` and ``agreement`` sums).
        min_n: fewest results a point is drawn and tested on (>= 2).
        level: family-wise false-alarm rate of the worst point's test, in (0, 1).

    Returns:
        ``{"min_n", "level", "known": track | None, "agreement": {candidate: track}}``, a
        track ``{"bucket_s": point width (s), "all": the run's figures with their ``n``,
        "points": [{"start" (Unix s), "n", means and 95 % bands}], "small": {"points",
        "n"} (points under ``min_n``, not drawn), "worst": {"start", "end", "n", its
        figures, "rest_n", the rest's figure, "test", "p_value", "tests", "threshold",
        "beyond_noise"} | None}`` (``worst`` ``None`` under 2 points drawn). Known points:
        ``recall`` (``recall_low``/``_high``), ``hit_rate`` (Wilson ``hit_low``/``_high``),
        ``mrr``; agreement points: ``rbo`` (``rbo_low``/``_high``), ``overlap`` over
        ``n_overlap``.

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
        "known": _known_track(buckets, bucket_s, min_n, level),
        "agreement": {
            name: _agreement_track(buckets, bucket_s, name, min_n, level) for name in names
        },  # fmt: skip
    }


def width_text(seconds: float) -> str:
    """``"1 h"``, ``"12 h"``, ``"1 d"``, ``"7 d"``: a point width in hours under a day,
    else in days.

    >>> width_text(3600.0), width_text(86400.0 * 2)
    ('1 h', '2 d')
    """
    if seconds < 86400.0:
        return f"{seconds / 3600.0:g} h"
    return f"{seconds / 86400.0:g} d"


def _start_text(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _header(track: Mapping[str, Any], min_n: int, what: str) -> str:
    small = track["small"]
    left = (f", {small['n']} {what} in {small['points']} smaller points not drawn"
            if small["points"] else "")  # fmt: skip
    return (
        f"{width_text(track['bucket_s'])} points of >= {min_n} {what}, "
        f"{len(track['points'])} drawn{left}"
    )


def _too_few(track: Mapping[str, Any], min_n: int, what: str) -> str:
    """Why no point is compared: ``"not compared, too few scored (17 in all; at least 2
    points of >= 10 are needed)"``."""
    return (
        f"not compared, too few {what} ({track['all']['n']} in all; at least 2 points of "
        f">= {min_n} are needed)"
    )


def _verdict_text(worst: Mapping[str, Any], rest: str) -> str:
    """``"LOWER beyond noise (two-proportion z-test against the rest, hit rate 1.000 of
    103: p 1.7e-18 < 0.05/5)"`` or ``"within noise (…: p 0.21 >= 0.05/5)"``."""
    word, sign = ("LOWER beyond noise", "<") if worst["beyond_noise"] else ("within noise", ">=")
    level = worst["threshold"] * worst["tests"]
    return (
        f"{word} ({worst['test']} against the rest, {rest}: p {worst['p_value']:.2g} "
        f"{sign} {level:g}/{worst['tests']}, Bonferroni over the points drawn)"
    )


def known_line(report: Mapping[str, Any] | None, k: object) -> str | None:
    """The text report's line on production's known-question quality over time, from
    :func:`over_time`'s dict: the worst point against the run, beyond noise or within it;
    ``None`` without a scored known question."""
    track = (report or {}).get("known")
    if not track:
        return None
    min_n = int((report or {}).get("min_n", MIN_N))
    worst = track.get("worst")
    if worst is None:
        return f"  production over time: {_too_few(track, min_n, 'scored')}"
    head = f"  production over time ({_header(track, min_n, 'scored')})"
    run = track["all"]
    return (
        f"{head}: worst {_start_text(worst['start'])} + {width_text(track['bucket_s'])}: "
        f"hit rate {worst['hit_rate']:.3f}, recall@{k} {worst['recall']:.3f}, MRR "
        f"{worst['mrr']:.3f} (n {worst['n']}) vs {run['hit_rate']:.3f}, {run['recall']:.3f}, "
        f"{run['mrr']:.3f} over the run: "
        + _verdict_text(worst, f"hit rate {worst['rest_hit_rate']:.3f} of {worst['rest_n']}")
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
        return f"  {name} over time: {_too_few(track, min_n, 'results')}"
    head = f"  {name} over time ({_header(track, min_n, 'results')})"
    return (
        f"{head}: worst {_start_text(worst['start'])} + {width_text(track['bucket_s'])}: RBO "
        f"{worst['rbo']:.3f} (n {worst['n']}) vs {track['all']['rbo']:.3f} over the run: "
        + _verdict_text(worst, f"RBO {worst['rest_rbo']:.3f} of {worst['rest_n']}")
    )
