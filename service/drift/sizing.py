"""The smallest change a drift comparison can detect, as the detectors decide it.

Pure domain code, no I/O. The answer is the detectors' own decision (the code path that
raises alarms, :meth:`~service.drift.detectors.CategoricalDriftDetector.decide` and
:meth:`~service.drift.detectors.RateDriftDetector.decide`: ``n ≥ min_count``, the chi-square
of homogeneity or the two-proportion test with ``p`` below the comparison's alpha, and the
95 % Newcombe bound nearest zero of the change — Wilson score intervals combined by
Newcombe's method 10, Newcombe 1998 — at least ``min_share_change`` / ``min_rate_change``),
run on *expected* counts: a current window of ``n`` events holding ``x`` of the category
(or positives), the other categories in the reference's proportions, against the reference's
counts (``m`` events). No textbook power formula: a formula could disagree with the
decision (pooling, Monte-Carlo floors, the JSD bound, Bonferroni levels), this cannot.
``benchmarks/drift_sizing.py`` builds its sizing table on it.

Expected counts say what a window at exactly those shares would give: a real window's noise
moves its p-value either way, so a change at the stated size alarms about half the time at
its first test and reliably a little above it (docs/drift.md).

>>> from service.drift.detectors import RateDriftDetector, WindowConfig
>>> det = RateDriftDetector(None, min_count=200, windows=WindowConfig(baseline="previous"))
>>> found = smallest_rate_rise(det, "baseline", 0.05, n=400, m=400)
>>> found.rate_from, round(found.rate_to, 4), found.n_current, found.n_reference
(0.05, 0.1425, 400, 400)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from service.drift.detectors import (
    CategoricalDriftDetector,
    RateDriftDetector,
    RateDriftReport,
)
from service.drift.distances import Counts

__all__ = [
    "Decision",
    "Detectable",
    "decide",
    "expected_counts",
    "hardest_share_rise",
    "smallest_count",
    "smallest_rate_rise",
    "smallest_share_rise",
    "watched_category",
]


@dataclass(frozen=True)
class Decision:
    """A detector's decision on one pair of windows: ``alarm``, the test's ``p_value`` (NaN
    when too small to test), the comparison's ``alpha`` and the Newcombe bound nearest 0 of
    the change (``bound``, a share or rate in [0, 1]; NaN when too small to test)."""

    alarm: bool
    p_value: float
    alpha: float
    bound: float


def decide(
    detector: CategoricalDriftDetector | RateDriftDetector,
    comparison: str,
    reference: Counts,
    current: Counts,
    category: str | None = None,
) -> Decision:
    """The detector's own decision on ``current`` against ``reference`` (counts; a rate's
    ``{"1": positives, "0": negatives}``) as its first test after ``ok`` (its state is left
    alone). ``bound``: a rate's Newcombe bound nearest 0, or ``category``'s rise bound (0
    when it did not rise; NaN for ``None``)."""
    alpha = detector.alpha_per_test(comparison)
    report = detector.decide(comparison, reference, current)
    if report.state == "insufficient_data":
        return Decision(False, math.nan, alpha, math.nan)
    if isinstance(report, RateDriftReport):
        bound = max(report.ci_low, -report.ci_high, 0.0)
    elif category is None:
        bound = math.nan
    else:
        bound = max([s.ci_low for s in report.rising if s.category == category], default=0.0)
    return Decision(report.state == "drift", report.p_value, alpha, bound)


def smallest_count(alarms: Callable[[int], bool], low: int, high: int) -> int | None:
    """The smallest ``x`` in ``(low, high]`` with ``alarms(x)`` by bisection (``None`` when
    ``alarms(high)`` is false), taking ``alarms`` as monotone in ``x`` (a larger share of
    the category gives a larger statistic and a larger Newcombe bound); ``low`` is taken as
    not alarming. ``⌈log2(high − low)⌉ + 1`` decisions."""
    if high <= low or not alarms(high):
        return None
    while high - low > 1:
        mid = (low + high) // 2
        if alarms(mid):
            high = mid
        else:
            low = mid
    return high


def expected_counts(shares: Mapping[str, float], n: int) -> dict[str, int]:
    """``n`` events split in proportion to ``shares`` (any non-negative weights, not all
    0) in whole counts summing to ``n`` (largest remainder; ties to the earlier key), the
    keys in ``shares``' order."""
    total = float(sum(shares.values()))
    raw = {key: n * float(value) / total for key, value in shares.items()}
    out = {key: math.floor(value) for key, value in raw.items()}
    left = n - sum(out.values())
    order = sorted(raw, key=lambda key: (-(raw[key] - out[key]), list(raw).index(key)))
    for key in order[:left]:
        out[key] += 1
    return out


def watched_category(reference: Counts) -> tuple[str | None, float]:
    """The category whose rise the sizing states and its share of ``reference``: the
    largest share not above 50 % (the hardest such rise to see: a share's sampling variance
    ``p (1 − p)`` grows up to 50 %, so a smaller share's rise of the same size is seen
    sooner; a share above 50 % rising is the others falling). Ties go to the first in
    sorted order. ``(None, 0.0)`` when every event is of one category (the rise is then of
    a category new to the reference, from 0 %)."""
    total = sum(reference.values())
    eligible = sorted((c for c, v in reference.items() if 0 < v and 2 * v <= total),
                      key=lambda c: (-reference[c], c))  # fmt: skip
    if not eligible:
        return None, 0.0
    return eligible[0], reference[eligible[0]] / total


#: The name of a category new to the reference, when the reference holds one category only.
NEW_CATEGORY = "a new category"


@dataclass(frozen=True)
class Detectable:
    """The smallest rise that alarms: ``category`` (``None`` for a rate) from
    ``share_from`` to ``share_to`` (shares or rates in [0, 1]; ``x_current`` of
    ``n_current`` events against ``n_reference``), with the decision there."""

    category: str | None
    share_from: float
    share_to: float
    x_current: int
    n_current: int
    n_reference: int
    p_value: float
    alpha: float
    bound: float

    @property
    def rate_from(self) -> float:
        """``share_from`` of a rate."""
        return self.share_from

    @property
    def rate_to(self) -> float:
        """``share_to`` of a rate."""
        return self.share_to

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (shares rounded to 4 places, p and alpha to 4 significant
        digits)."""
        return {"category": self.category, "share_from": round(self.share_from, 4),
                "share_to": round(self.share_to, 4), "n_current": self.n_current,
                "n_reference": self.n_reference, "p_value": float(f"{self.p_value:.4g}"),
                "alpha": float(f"{self.alpha:.4g}"), "bound": round(self.bound, 4)}  # fmt: skip


def smallest_share_rise(
    detector: CategoricalDriftDetector,
    comparison: str,
    reference: Counts,
    n: int,
    category: str | None = None,
) -> Detectable | None:
    """The smallest share of ``category`` (default :func:`watched_category`) in a current
    window of ``n`` events that alarms against ``reference`` (counts), the other categories
    keeping the reference's proportions (:func:`expected_counts`); ``None`` when not even a
    window of only that category would, or the reference is empty or ``n`` 0."""
    m = int(sum(reference.values()))
    if category is None:
        category, share = watched_category(reference)
        category = category or NEW_CATEGORY
    else:
        share = reference.get(category, 0) / m if m else 0.0
    others = {c: float(v) for c, v in reference.items() if c != category and v > 0}
    if not m or n < 1 or not others:
        return None

    def current(x: int) -> dict[str, int]:
        return {category: x, **expected_counts(others, n - x)}

    def alarms(x: int) -> bool:
        return decide(detector, comparison, reference, current(x), category).alarm

    x = smallest_count(alarms, round(share * n), n)
    if x is None:
        return None
    d = decide(detector, comparison, reference, current(x), category)
    return Detectable(category, share, x / n, x, n, m, d.p_value, d.alpha, d.bound)


def hardest_share_rise(
    detector: CategoricalDriftDetector, comparison: str, reference: Counts, n: int
) -> tuple[str, Detectable | None]:
    """Of the categories up to 50 % of ``reference`` (counts), the one whose smallest
    alarming rise (:func:`smallest_share_rise`, in share points) is the largest, and that
    rise: ``(category, found)``, ``found`` ``None`` when some category cannot alarm even at
    100 % (that category). A category above 50 % rising is the others falling; with one
    category only, the rise of :data:`NEW_CATEGORY` from 0 %.

    The largest share up to 50 % is not always the hardest (a share's sampling variance
    ``p (1 − p)`` argument): against a small gold set the small categories' own noise and
    the chi-square's pooling make them need larger rises (a 60-row gold set en 40 / hi 8 /
    hi-Latn 5 / ta 3 / te 2 / bn 1 / mr 1 and 1,248-question windows: hi 13.3 % needs
    +27.5 points, hi-Latn 8.3 % +30.8). Cost: one search for the largest share, then one
    decision per other category (a rise of the hardest size so far that alarms settles
    it), a search only for those that need more.
    """
    total = sum(reference.values())
    eligible = sorted((c for c, v in reference.items() if 0 < v and 2 * v <= total),
                      key=lambda c: (-reference[c], c))  # fmt: skip
    if not eligible:
        return NEW_CATEGORY, smallest_share_rise(detector, comparison, reference, n)
    worst: Detectable | None = None
    others_of = {c: {k: float(v) for k, v in reference.items() if k != c and v > 0}
                 for c in eligible}  # fmt: skip
    for category in eligible:
        share = reference[category] / total
        if worst is not None:
            x = math.ceil(round((share + worst.share_to - worst.share_from) * n, 9))
            current = {category: x, **expected_counts(others_of[category], n - x)}
            if x <= n and decide(detector, comparison, reference, current, category).alarm:
                continue  # (monotone above the share: a rise at least this size alarms)
        found = smallest_share_rise(detector, comparison, reference, n, category)
        if found is None:
            return category, None
        if worst is None or found.share_to - found.share_from > worst.share_to - worst.share_from:
            worst = found
    assert worst is not None  # (eligible is not empty)
    return str(worst.category), worst


def smallest_rate_rise(
    detector: RateDriftDetector, comparison: str, rate: float, n: int, m: int
) -> Detectable | None:
    """The smallest rate of a current window of ``n`` events that alarms against a
    reference of ``m`` events at ``rate`` (``round(rate · m)`` positives); ``None`` when not
    even a window of only positives would."""
    x_ref = round(rate * m)
    reference = {"1": x_ref, "0": m - x_ref}

    def alarms(x: int) -> bool:
        return decide(detector, comparison, reference, {"1": x, "0": n - x}).alarm

    x = smallest_count(alarms, round(rate * n), n)
    if x is None:
        return None
    d = decide(detector, comparison, reference, {"1": x, "0": n - x})
    return Detectable(None, rate, x / n, x, n, m, d.p_value, d.alpha, d.bound)
