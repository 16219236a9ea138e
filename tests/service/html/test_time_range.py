"""The charts over time plot the traffic's time range, not an outlier's (a fourth trial: one
event stamped 1970-01-01 in a three-day log stretched every chart to 56 years, ~3,000 tick
labels each, and the report from 182 KB to 9.5 MB).

The tiny log of these tests: 20 events, one every 6 minutes from 2026-11-18 11:00 UTC (hourly
buckets 11:00 and 12:00, ten events each), plus one stamped 1970-01-01T00:00:01Z. By hand:
the events' quartiles fall in the 11:00 and 12:00 buckets, so the core is one hour wide and
the range reaches 3 hours past it; the 1970 bucket lies 56 years away and is left out. The
plotted range is 11:00-13:00, one event of 21 is not drawn; the share and refusal charts
(buckets 11:00 and 12:00) tick 11:00 and 12:00, the alarm time line (11:00-13:00) 11:00,
12:00 and 13:00.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from service.html import render_replay_html
from service.html.plots import time_ticks
from service.html.time_range import outside_note, plotted
from service.jobs.series import TimeSeries
from tests.service.html.samples import replay_report

ELEVEN = datetime(2026, 11, 18, 11, tzinfo=UTC).timestamp()
ANCIENT = 1.0  # 1970-01-01T00:00:01Z


def _series(*extra: float) -> dict[str, Any]:
    series = TimeSeries()
    for i in range(20):
        series.add(ELEVEN + 360 * i, "en" if i % 4 else "hi-Latn", "fees", refused=i % 5 == 0)
    for stamp in extra:
        series.add(stamp, "en", "fees", refused=False)
    return series.report()


def _page(series: dict[str, Any]) -> str:
    report = replay_report()
    report["analytics"]["series"] = series
    return render_replay_html(report)


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, re.DOTALL)


def _tick_labels(svg: str) -> list[str]:
    """The x tick labels of a chart (matplotlib's ``xtick_N`` groups)."""
    chunks = svg.split('<g id="xtick_')[1:]  # each tick's group opens with its line
    return [re.findall(r">([^<>]+)</text>", chunk)[0] for chunk in chunks]


def test_one_ancient_event_leaves_the_range_to_the_traffic() -> None:
    series = _series(ANCIENT)
    assert series["bucket_s"] == 3600  # one outlier is one bucket: no coarsening
    assert [b["start"] for b in series["buckets"]] == [0.0, ELEVEN, ELEVEN + 3600]
    shown = plotted(series)
    assert shown is not None
    assert (shown.start, shown.end) == (ELEVEN, ELEVEN + 7200)
    assert (shown.before, shown.after, shown.total) == (1, 0, 21)
    assert [b["start"] for b in shown.buckets] == [ELEVEN, ELEVEN + 3600]
    assert outside_note(shown) == (
        "Not drawn: 1 of 21 events, stamped far from the rest of the traffic (1 before the "
        "plotted range, the earliest in the bucket of 1970-01-01 00:00 UTC); the shares and "
        "tables count it as usual."
    )


def test_report_with_an_ancient_event_plots_the_traffic() -> None:
    clean, ancient = _page(_series()), _page(_series(ANCIENT))
    charts = [svg for svg in _svgs(ancient) if "over time" in svg or "Drift alarms" in svg]
    titles = ["Languages: share over time", "Topics: share over time", "Drift alarms",
              "Refusal rate over time"]  # fmt: skip
    assert [next(t for t in titles if t in svg) for svg in charts] == titles
    ticks = [_tick_labels(svg) for svg in charts]
    assert ticks == [["11:00", "12:00"], ["11:00", "12:00"], ["11:00", "12:00", "13:00"],
                     ["11:00", "12:00"]]  # fmt: skip
    assert ancient.count("Not drawn: 1 of 21 events") == 4  # under each chart over time
    assert "Not drawn" not in clean
    # the same charts as without the outlier: only the four notes are added (was 9.5 MB)
    assert len(ancient.encode()) - len(clean.encode()) < 4 * 300
    assert "1970" not in "".join(charts)


def test_a_clean_log_is_drawn_whole() -> None:
    """Quiet hours and a slow start stay in: 1 event a day for 5 days, then 200 in a day."""
    series = TimeSeries()
    start = ELEVEN - 5 * 86400
    for day in range(5):
        series.add(start + day * 86400, "en", "fees", refused=None)
    for i in range(200):
        series.add(ELEVEN + 432 * i, "en", "fees", refused=None)
    shown = plotted(series.report())
    assert shown is not None and shown.outside == 0 and outside_note(shown) == ""
    assert shown.start == start


def test_outliers_on_both_sides_are_named() -> None:
    far = datetime(2030, 1, 1, 0, 30, tzinfo=UTC).timestamp()
    shown = plotted(_series(ANCIENT, ANCIENT + 60, far))
    assert shown is not None and (shown.before, shown.after, shown.total) == (2, 1, 23)
    assert (
        "2 before the plotted range, the earliest in the bucket of 1970-01-01 00:00 UTC; "
        "1 after it, the latest in the bucket of 2030-01-01 00:00 UTC"
    ) in outside_note(shown)


@pytest.mark.parametrize("max_ticks", [3, 6, 8, 12])
def test_time_ticks_are_bounded_whatever_the_range(max_ticks: int) -> None:
    ticks = time_ticks(ANCIENT, ELEVEN, max_ticks=max_ticks)
    assert 1 <= len(ticks) <= max_ticks
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", label) for _, label in ticks)
