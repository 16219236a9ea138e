"""The busiest window over the events' times counts the same events however they are batched.

Trial 41 fix: on three Kafka partitions (two lagging) fed to the drift stage at once the
busiest 30 min window held 1,148 events, fed in 100-event chunks 1,126. A lagging
partition's event is accepted up to ``retention_s`` behind the watermark, and the windows
back from it reach up to one span further: history the window's own ring had already let
go when an earlier chunk moved the watermark on, but still read (from before the update)
when the same events came in one batch. The busiest count now keeps its own ring of totals
covering both, so it counts every accepted event in its bucket whatever the batching.
"""

from __future__ import annotations

from service.drift.windows import ComparisonWindows, WindowConfig

T0 = 1_790_000_040.0  # the start of a 1 min bucket (29,833,334 · 60)
NOW = T0 + 86_400.0  # the wall clock: no event is in the future
# 10 min windows of 1 min buckets, history kept 10 min (the window; a 10 min warm-up), a
# partition may lag 10 min behind its own watermark; no test inside (one a year)
CONFIG = WindowConfig(window_s=600, bucket_s=60, warmup_s=600, allowed_lateness_s=600,
                      test_every_s=365 * 86_400.0)  # fmt: skip
# partition a: 4 events in minute 1 and one in minute 12 (its slot in the window's ring of
# 11 buckets is minute 1's); partition b, lagging: one in minute 10 (590 s behind the
# watermark, under retention_s 600: accepted)
EVENTS = [(T0 + 70 + k, "a") for k in range(4)] + [(T0 + 730, "a"), (T0 + 610, "b")]


def _busiest(parts: list[list[tuple[float, str]]]) -> tuple[int, float]:
    windows = ComparisonWindows(CONFIG, min_count=1, has_reference=False)
    for part in parts:
        windows.ingest(["x"] * len(part), [t for t, _ in part], NOW, lambda after: None,
                       [s for _, s in part])  # fmt: skip
    return windows.busiest_held[600], windows.mean_held(600)


def test_busiest_window_is_the_same_at_once_and_in_parts() -> None:
    # by hand, the 10 min windows (10 buckets) over the events' times: ending at minute 10,
    # minutes 1-10 hold a's 4 and b's 1: 5; ending at 12, minutes 3-12 hold b's and a's last:
    # 2; none holds more. The mean: 6 events over minutes 1-12 (12 buckets), times 10: 5.0
    at_once = _busiest([EVENTS])
    in_parts = _busiest([EVENTS[:4], EVENTS[4:5], EVENTS[5:]])  # minute 12 came before b's
    assert at_once == (5, 5.0)
    assert in_parts == (5, 5.0)  # before the fix: 4 (minute 1 forgotten when b's came)


def _minutes(first: int, last: int, per_minute: int) -> list[float]:
    return [T0 + 60 * m + k for m in range(first, last + 1) for k in range(per_minute)]


def _windows() -> ComparisonWindows:
    return ComparisonWindows(CONFIG, min_count=1, has_reference=False)


def _feed(windows: ComparisonWindows, stamps: list[float]) -> None:
    windows.ingest(["x"] * len(stamps), stamps, NOW, lambda after: None)


def test_the_mean_is_the_same_however_restored() -> None:
    # 10 events a minute in minutes 0-9, then one a minute in minutes 20-29: 110 events over
    # buckets 0-29 (30), times the 10-bucket window: 110 * 10 / 30 = 36.67; the busiest
    # window, minutes 0-9, holds 100
    early, late = _minutes(0, 9, 10), _minutes(20, 29, 1)
    whole = _windows()
    _feed(whole, early + late)
    assert (whole.mean_held(600), whole.busiest_held[600]) == (110 * 10 / 30, 100)
    split = _windows()
    _feed(split, early)
    restored = _windows()
    restored.restore(split.snapshot())
    _feed(restored, late)
    assert (restored.mean_held(600), restored.busiest_held[600]) == (110 * 10 / 30, 100)


def test_a_snapshot_from_before_the_first_bucket_keeps_no_mean_of_its_own() -> None:
    """A snapshot written before session 41 keeps no first bucket, while its window counted
    every event taken: a first bucket set by the next events would put the 100 events of
    minutes 0-9 in minutes 20-29 (110 * 10 / 10 = 110, three times the truth's 36.67). The
    windows keep none, so the detectors size their advice by the windows they tested."""
    old = _windows()
    _feed(old, _minutes(0, 9, 10))
    state = old.snapshot()
    for key in ("busiest_held", "first_bucket", "busiest_buckets"):  # (not kept before s41)
        del state[key]
    restored = _windows()
    restored.restore(state)
    _feed(restored, _minutes(20, 29, 1))
    assert restored.first_bucket is None
    assert restored.mean_held(600) == 0.0
    again = _windows()  # written since that restore, and restored: still none
    again.restore(restored.snapshot())
    _feed(again, _minutes(30, 39, 1))
    assert again.first_bucket is None and again.mean_held(600) == 0.0
