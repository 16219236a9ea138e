"""A rate alarm whose window holds two rates says the newest part's first (trial 41, M3:
``known_miss 0.0% -> 9.7%`` over a 24 h window that held 5 h of a ~50 % miss rate). Expected
values worked out by hand (the binomial log-likelihoods in the docstrings)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from service.drift.detectors import RateDriftDetector, WindowConfig, newest_part
from service.drift.stage import rate_moves
from service.drift.windows import CategoryWindow

HOUR = 3600.0


def _window(rates: list[tuple[int, int]]) -> CategoryWindow:
    """A 24 h window of 1 min buckets: per hour ``(events, ones)``, the ones first."""
    window = CategoryWindow(window_s=24 * HOUR, bucket_s=60.0)
    for h, (n, ones) in enumerate(rates):
        for i in range(n):
            window.update("1" if i < ones else "0", h * HOUR + i * 60.0)
    return window


def test_the_split_is_where_the_rate_changed() -> None:
    """19 h of 10 events at 0, then 5 h of 10 events with 5 ones. Split 5 h: the older part's
    log-likelihood is 0 and the newer's 50 ln 0.5 = -34.66; split 4 h: newer 20 of 40, -27.73,
    older 5 of 200, 5 ln(5/200) + 195 ln(195/200) = -23.38: -51.1; split 6 h: newer 25 of 60,
    25 ln(25/60) + 35 ln(35/60) = -40.75. The window, 25 of 240: 25 ln(25/240) + 215
    ln(215/240) = -56.54 - 23.65 = -80.19, so G = 2 (80.19 - 34.66) = 91.07, far beyond the
    chi-square(1) bound at 0.05 / 23 splits."""
    window = _window([(10, 0)] * 19 + [(10, 5)] * 5)
    assert newest_part(window, 24 * HOUR, 0.0) == (5 * HOUR, 50, 0.5)
    g = 2 * (50 * math.log(0.5) - (25 * math.log(25 / 240) + 215 * math.log(215 / 240)))
    assert g == pytest.approx(91.07, abs=0.01) and stats.chi2.sf(g, 1) < 0.05 / 23


def test_one_rate_or_a_fading_change_has_no_newest_part() -> None:
    # 3 ones of 10 every hour: every split's G is 0
    assert newest_part(_window([(10, 3)] * 24), 24 * HOUR, 0.0) is None
    # the older part is the further from the compared rate: not a dilution of the newest
    assert newest_part(_window([(10, 5)] * 19 + [(10, 0)] * 5), 24 * HOUR, 0.0) is None
    # fewer than 10 events on each side: no split
    assert newest_part(_window([(0, 0)] * 23 + [(15, 5)]), 24 * HOUR, 0.0) is None
    assert newest_part(CategoryWindow(window_s=24 * HOUR), 24 * HOUR, 0.0) is None


def test_the_alarm_reads_the_newest_part_first() -> None:
    detector = RateDriftDetector(
        reference=(0, 200), min_count=100,
        windows=WindowConfig(window_s=HOUR, reference_window_s=24 * HOUR, test_every_s=HOUR,
                             baseline="none", max_ahead_s=math.inf, ahead_confirm=1),
    )  # fmt: skip
    times, values = [], []
    for h in range(25):
        for i in range(10):
            times.append(h * HOUR + i * 60.0)
            values.append(h >= 19 and h < 24 and i < 6)  # 6 of 10 from 19:00 to 23:59
    detector.update_many(values, times)
    report = detector.reports["reference"]
    assert report.state == "drift"
    # the latest test, at 24:00, reads the 1 min buckets ending in the watermark's: the
    # window 00:01 … 24:00 (240 events: 00:00's 0 out, 24:00's in; the 30 ones), the
    # newest 5 h 19:01 … 24:00 (hour 19's 9 events after 19:00, hours 20-23's 40 and
    # 24:00's 1): 29 of 50
    data = report.to_dict()
    assert (data["recent_s"], data["window_s"]) == (5 * HOUR, 24 * HOUR)
    assert (data["n_recent"], data["rate_recent"]) == (50, 29 / 50)
    assert (report.n_current, report.rate_current) == (240, 30 / 240)
    alarm = {
        "rate_compared": 0.0,
        **{k: data[k] for k in ("rate_current", "recent_s", "window_s", "n_recent", "rate_recent")},
    }
    text = rate_moves(alarm)
    assert text == "0.0% -> 58.0% in the newest 5 h (50 events), 12.5% over the whole 24 h window"
    # a report without a newest part keeps its former fields only
    quiet = RateDriftDetector(
        reference=(0, 200),
        min_count=100,
        windows=WindowConfig(
            window_s=HOUR, reference_window_s=24 * HOUR, test_every_s=HOUR, baseline="none"
        ),
    )
    quiet.update_many([False] * 250, [h * 360.0 for h in range(250)])
    assert quiet.reports["reference"].state == "ok"
    assert "recent_s" not in quiet.reports["reference"].to_dict()
