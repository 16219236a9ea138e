"""The time range the "over time" charts plot: the traffic's, not its outliers'.

One event stamped 1970-01-01 in a three-day log (a fourth trial) stretched every chart over
time to 56 years: the three days collapsed into one vertical line, and the report grew from
182 KB to 9.5 MB of tick labels. The drift stage already keeps such an event out of its
windows (``late``), but the time series (:mod:`service.jobs.series`) counts every event by
its stamp, as it should: the shares and totals still count it. So the charts choose their
own range, here, from the series' buckets:

* the core: the buckets from the first to the third quartile of the events (each bucket
  weighted by its event count);
* the range grows from the core outward, one occupied bucket at a time, while the gap to the
  next occupied bucket is at most :data:`REACH` times the core's width (at least
  :data:`REACH` buckets): quiet hours, a weekend, a slow start all stay in; a stamp decades
  (or days, against hours of traffic) away from the rest is left out;
* what is left out is named under the chart (:func:`outside_note`): how many events, when.

The quantiles count events, not buckets, so a single outlier never moves the core, however
far it is; and a rule on gaps, not on quantiles alone, keeps every event of a clean log,
however small or uneven, in the chart.

>>> series = {"bucket_s": 3600, "buckets": [
...     {"start": 0, "languages": {"en": 1}},
...     {"start": 1772431200, "languages": {"en": 10}},
...     {"start": 1772434800, "languages": {"en": 10}}]}
>>> shown = plotted(series)
>>> (shown.start, shown.end, shown.before, shown.after, shown.total)
(1772431200.0, 1772438400.0, 1, 0, 21)
>>> outside_note(shown)[:70]
'Not drawn: 1 of 21 events, stamped far from the rest of the traffic (1'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["REACH", "Plotted", "outside_note", "plotted"]

#: How far (in core widths, or buckets when the core is narrower) the range reaches past an
#: occupied bucket to the next one.
REACH = 3.0


@dataclass(frozen=True, slots=True)
class Plotted:
    """The buckets to draw and what was left out.

    Attributes:
        buckets: the series' buckets in the range, in time order.
        start, end: the range (Unix seconds): first bucket's start, last bucket's end.
        total: events in all buckets.
        before, after: events in the buckets left out before / after the range.
        earliest: start of the first bucket left out before the range (``None``: none).
        latest: start of the last bucket left out after the range (``None``: none).
    """

    buckets: Sequence[Mapping[str, Any]]
    start: float
    end: float
    total: int
    before: int = 0
    after: int = 0
    earliest: float | None = None
    latest: float | None = None

    @property
    def outside(self) -> int:
        """Events not drawn."""
        return self.before + self.after


def _events(bucket: Mapping[str, Any]) -> int:
    """Events counted in a bucket (each event counts once under ``languages``)."""
    return int(sum((bucket.get("languages") or bucket.get("topics") or {}).values()))


def plotted(series: Mapping[str, Any] | None) -> Plotted | None:
    """The range the charts over time draw (see the module docstring), or ``None`` without
    buckets."""
    buckets = sorted((series or {}).get("buckets") or [], key=lambda b: float(b["start"]))
    if not buckets:
        return None
    width = float((series or {}).get("bucket_s") or 3600.0)
    starts = [float(b["start"]) for b in buckets]
    counts = [max(_events(b), 0) for b in buckets]
    weights = counts if sum(counts) else [1] * len(buckets)  # no event counted: alike

    def quantile(q: float) -> int:
        """Index of the bucket holding the ``q`` quantile of the events."""
        need, seen = q * sum(weights), 0
        for i, w in enumerate(weights):
            seen += w
            if w and seen >= need:
                return i
        return len(weights) - 1

    low, high = quantile(0.25), quantile(0.75)
    reach = REACH * max(starts[high] - starts[low], width)
    while low > 0 and starts[low] - starts[low - 1] <= reach:
        low -= 1
    while high < len(starts) - 1 and starts[high + 1] - starts[high] <= reach:
        high += 1
    return Plotted(
        buckets=buckets[low : high + 1],
        start=starts[low],
        end=starts[high] + width,
        total=sum(counts),
        before=sum(counts[:low]),
        after=sum(counts[high + 1 :]),
        earliest=starts[0] if low > 0 else None,
        latest=starts[-1] if high < len(starts) - 1 else None,
    )


def _when(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%d %H:%M UTC")


def outside_note(shown: Plotted | None) -> str:
    """``"Not drawn: 1 of 21 events, stamped far from the rest of the traffic (1 before the
    plotted range, the earliest in the bucket of 1970-01-01 00:00 UTC); …"`` (a bucket named
    by its start), or ``""`` when every event is drawn."""
    if shown is None or shown.earliest is None and shown.latest is None:
        return ""
    where = []
    if shown.earliest is not None:
        where.append(f"{shown.before} before the plotted range, the earliest in the bucket of "
                     f"{_when(shown.earliest)}")  # fmt: skip
    if shown.latest is not None:
        where.append(f"{shown.after} after it, the latest in the bucket of {_when(shown.latest)}")
    them = "it" if shown.outside == 1 else "them"
    return (
        f"Not drawn: {shown.outside} of {shown.total} events, stamped far from the rest of "
        f"the traffic ({'; '.join(where)}); the shares and tables count {them} as usual."
    )
