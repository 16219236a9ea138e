"""Trial 41 M1: the sizing advice of a comparison left at ``insufficient_data`` measures the
busiest and the mean window over the events' times, whatever ``test_every_s``, and names
``test_every_s`` when it is longer than the window it tests (the trial: 999999 s over 46 h of
events said "the busiest had 5: raise window_s to about 40 h"; truth 64 and 5 h)."""

from __future__ import annotations

import types
from datetime import UTC, datetime, timedelta

from service.drift.stage import DriftStage
from service.drift.windows import WindowConfig
from service.settings.sections import DriftSettings
from tests.service.drift.test_insufficient_reason import feed_one_day

START = datetime(2026, 11, 20, tzinfo=UTC)  # a multiple of 999,999 s? no: 1,795,132,800 s

# 1,000 answers one every 86.4 s (t = 0 ... 86,313.6 s). A 1 h window is 60 one-minute
# buckets: 42 gaps of 86.4 s are 3,628.8 s > 3,600 s, so at most 42 events; the bucket of
# the event at 25 × 86.4 = 2,160 s starts at 2,160 s exactly, and events 25 ... 66 (42 of them,
# the last at 5,702.4 s) lie in buckets 36 ... 95 (60 buckets): the busiest holds 42. The
# events span buckets 0 ... 1,438 (86,313.6 / 60 = 1,438.56): 1,439 buckets, so the mean
# 60-bucket window holds 1,000 × 60 / 1,439 = 41.695... = "41.7"; 200 at that rate need
# 200 / 41.695 = 4.8 h: "about 5 h".
FIGURES = ("no 1 h window reached 200 answers; the busiest had 42, 41.7 on average: raise "
           "analytics.drift.window_s to about 5 h (at the mean; or lower "
           "analytics.drift.min_count)")  # fmt: skip


def _day(test_every_s: float) -> DriftStage:
    config = WindowConfig(test_every_s=test_every_s)
    drift = DriftStage({}, windows=config, known_windows=config,
                       clock=lambda: (START + timedelta(days=30)).timestamp())  # fmt: skip
    return feed_one_day(drift)


def test_the_advice_is_the_same_whatever_the_test_cadence() -> None:
    dense = _day(300)
    assert dense.report()["refusal"]["comparisons"]["baseline"]["insufficient"] == FIGURES
    # tests every 999,999 s: the first at the first events (the first 5 are held until they
    # confirm the watermark), the next at the next multiple of 999,999 s, after the log
    sparse = _day(999_999)
    why = sparse.report()["refusal"]["comparisons"]["baseline"]["insufficient"]
    assert why.startswith(FIGURES), why  # before: "the busiest had 5 ... about 40 h"
    # the setting at fault is named: 1,439 buckets are 86,340 s = 23.98 h of events
    assert ("; and analytics.drift.test_every_s (999999 s, about 11.6 days) is longer than "
            "the 1 h window it tests: tested once in 24.0 h of events, at their start (no "
            "test fell inside them): lower analytics.drift.test_every_s to at most 1 h "
            "(default 5 min)") in why  # fmt: skip


def test_a_window_full_enough_but_never_tested_names_test_every_s() -> None:
    """The same day against min_count 30: the 42-answer windows hold enough, but with tests
    every 999,999 s only the first events' window (5 answers) was tested: the reason is the
    cadence, not traffic that fell nor a window too short."""
    config = WindowConfig(test_every_s=999_999)
    drift = DriftStage({}, windows=config, min_count=30,
                       clock=lambda: (START + timedelta(days=30)).timestamp())  # fmt: skip
    events = [types.SimpleNamespace(timestamp=START + timedelta(seconds=86.4 * i))
              for i in range(1000)]  # fmt: skip
    notes = [{"language": "en", "topic": "fees", "refused": False}] * 1000
    drift.process(types.SimpleNamespace(events=events, annotations=notes, streams=None))
    why = drift.report()["refusal"]["comparisons"]["baseline"]["insufficient"]
    assert why.startswith(
        "no 1 h window tested reached 30 answers, though one held 42 between tests: "
        "analytics.drift.test_every_s (999999 s, about 11.6 days) is longer than the 1 h "
        "window it tests"
    ), why
    assert "traffic fell" not in why and "raise analytics.drift.window_s" not in why


def test_config_check_names_test_every_s_longer_than_a_window() -> None:
    # trial 41's bad2.yaml: window_s 3600, reference_window_s 600, test_every_s 999999
    settings = DriftSettings(window_s=3600, reference_window_s=600, warmup_s=60,
                             test_every_s=999_999)  # fmt: skip
    notice = settings.cadence_notice(has_reference=True)
    assert notice is not None
    assert notice.startswith("analytics.drift.test_every_s (999999 s) is longer than windows "
                             "it tests, analytics.drift.window_s (3600 s), "
                             "analytics.drift.reference_window_s (600 s), "
                             "analytics.drift.known_window_s (86400 s)")  # fmt: skip
    assert notice.endswith("set analytics.drift.test_every_s to at most 600 s (default 300 s)")
    # without a gold set only window_s is tested; equal to a window is fine
    assert DriftSettings(test_every_s=3600).cadence_notice(has_reference=False) is None
    assert "known_window_s" not in (
        DriftSettings(test_every_s=7200).cadence_notice(has_reference=False) or "known_window_s"
    )
    assert DriftSettings(test_every_s=7200, baseline="none").cadence_notice(False) is None
